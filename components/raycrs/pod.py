"""The pod template every Ray pod of the stack shares (:func:`cluster_pods`: labels, sizing,
GCS FUSE volumes, Pod Security ``restricted``, ``/dev/shm``) and the RayJob submitter's
(:func:`submitter_template`); :mod:`components.raycrs.raycluster` and
:mod:`components.raycrs.rayjob` call them. Ray's ports and labels are :mod:`components.kernel.ray`.
Sources: docs/sources.md#raycrs-pod
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from components import catalog
from components.config.raycrs import WorkerGroupConfig
from components.kernel.ray import PART_OF, SUBMITTER_LABEL
from components.nodepools.render import NodePoolSpec
from components.plan.plan import Plan
from components.storage.fuse import Mount, pod_mounts
from contract.errors import ConfigurationError
from contract.quantity import cpu_quantity, memory_quantity, quantity_float

API_VERSION = "ray.io/v1"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
# Default resources of the GCS FUSE sidecar GKE injects (docs/sources.md#raycrs-pod).
GCSFUSE_SIDECAR = {"cpu": 0.25, "memory": 0.25}  # cores, GiB
# Headroom left on a node for GKE's daemonsets (logging, metrics, CSI, networking) and the GCS
# FUSE sidecar, subtracted from NodePoolSpec.capacity when sizing a worker pod: cores, GiB.
NODE_HEADROOM = {"cpu": 1.0, "memory": 2.0}
MOUNT_ROOT = "/mnt/gcs"
# Pod security (see pod_security_context / container_security_context): the Ray image's user.
RAY_UID = 1000
RAY_GID = 100
SHM_FRACTION = 0.5
DATASET_PATH = "lm-bytes"


class ManifestError(ConfigurationError):
    """A custom resource that cannot be built; the message names the field and value."""


# ------------------------------------------------------------------------------ sizing helpers


def worker_pod_size(
    spec: NodePoolSpec,
    group: WorkerGroupConfig | None = None,
    reserve: Mapping[str, float] | None = None,
) -> tuple[str, str]:
    """CPU and memory (request = limit) of a worker pod filling one node of ``spec``.

    ``NodePoolSpec.capacity`` minus :data:`NODE_HEADROOM` (and ``reserve``: cores and GiB of the
    pod's other containers, the RxDM sidecar of a ``gpudirect`` pool), floored to 100m and to
    256Mi (1Gi from 16Gi up); the worker
    group's ``cpu`` / ``memory`` override wins where given. Nodes of unknown shape get 1 CPU, 4Gi.

    Returns:
        ``(cpu, memory)`` as Kubernetes quantities, e.g. ``("6500m", "26Gi")``.

    Raises:
        ManifestError: the node is too small to leave any room after the headroom.
    """
    cpu_cap, mem_cap = spec.capacity.get("cpu"), spec.capacity.get("memory")
    if cpu_cap is None or mem_cap is None:
        cpu, mem = "1", "4Gi"
    else:
        reserve = reserve or {}
        cpu_left = cpu_cap - NODE_HEADROOM["cpu"] - reserve.get("cpu", 0.0)
        mem_left = mem_cap - NODE_HEADROOM["memory"] - reserve.get("memory", 0.0)
        if cpu_left < 0.1 or mem_left < 0.25:
            raise ManifestError(
                f"node pool {spec.name!r} ({spec.machine_type}) is too small for a Ray worker "
                f"after {NODE_HEADROOM['cpu']} CPU / {NODE_HEADROOM['memory']} GiB headroom"
            )
        cpu, mem = cpu_quantity(cpu_left), memory_quantity(mem_left)
    if group is not None:
        cpu = group.cpu or cpu
        mem = group.memory or mem
    return cpu, mem


def pod_resources(cpu: str, memory: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"requests": dict(amounts), "limits": dict(amounts)}


# ---------------------------------------------------------------------------- volumes (GCS FUSE)


def gcs_fuse_volumes(
    buckets: Mapping[str, str], ms: Sequence[Mount]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """GCS FUSE CSI ephemeral volumes and mounts for the bucket mounts ``ms`` of a workload
    identity (:func:`components.storage.fuse.pod_mounts`; ``buckets``: purpose -> bucket name).

    One volume ``gcs-<purpose>`` per mount, at ``/mnt/gcs/<purpose>``, read-only for ``read``
    access, with the mount options of the bucket's FUSE profile.

    Returns:
        ``(volumes, volumeMounts)``, in the order of ``ms`` (sorted by purpose).
    """
    volumes, mounts = [], []
    for m in ms:
        volumes.append(
            {
                "name": f"gcs-{m.purpose}",
                "csi": {
                    "driver": GCSFUSE_DRIVER,
                    "readOnly": m.read_only,
                    "volumeAttributes": {
                        "bucketName": buckets[m.purpose],
                        "mountOptions": m.options,
                    },
                },
            }
        )
        mounts.append(
            {
                "name": f"gcs-{m.purpose}",
                "mountPath": f"{MOUNT_ROOT}/{m.purpose}",
                "readOnly": m.read_only,
            }
        )
    return volumes, mounts


# ------------------------------------------------------------------------------- pod security


def container_security_context() -> dict[str, Any]:
    """The ``securityContext`` of every container we render (Ray head, workers, submitters, and
    the autoscaler sidecar via ``autoscalerOptions.securityContext``): what the Pod Security
    Standards' ``restricted`` profile requires
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted): no
    privilege escalation (the Ray image's user has passwordless sudo, so escalation would be
    root), all capabilities dropped, non-root, ``RuntimeDefault`` seccomp. The uid/gid are the
    Ray image's ``ray`` user (``useradd ... ray --uid 1000 --gid 100`` in ray-project/ray's
    docker build files, e.g. ``ci/docker/min.allpython.Dockerfile``)."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "runAsUser": RAY_UID,
        "runAsGroup": RAY_GID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security_context() -> dict[str, Any]:
    """The pod-level ``securityContext``: non-root Ray uid/gid, ``fsGroup`` so mounted volumes
    are writable by the Ray user, ``RuntimeDefault`` seccomp for every container, injected
    sidecars included (same source as :func:`container_security_context`)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RAY_UID,
        "runAsGroup": RAY_GID,
        "fsGroup": RAY_GID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def shm_size(memory: str) -> str:
    """``sizeLimit`` of the memory-backed ``/dev/shm`` of a Ray pod with ``memory`` (quantity):
    :data:`SHM_FRACTION` of it, in Mi (rounded up). Ray puts its object store (default 30 % of
    the container's memory, ``DEFAULT_OBJECT_STORE_MEMORY_PROPORTION`` in
    ``ray/_private/ray_constants.py``) in ``/dev/shm`` and refuses to start when a large store
    does not fit there (``ray/_private/services.py`` ``determine_plasma_store_config``), so the
    limit leaves room above 30 %; memory-backed emptyDir pages count against the pod's memory
    limit (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir)."""
    mib = math.ceil(quantity_float(str(memory)) * SHM_FRACTION / 2**20)
    return f"{mib}Mi"


def shm_volume(memory: str) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(memory)}}
    return volume, {"name": "dshm", "mountPath": "/dev/shm"}


# ---------------------------------------------------------------------------- the pod template


@dataclass(frozen=True)
class RayPod:
    """What one Ray pod (the head, or a worker group's) asks of :func:`cluster_pods`.

    ``container``: the Ray container without its resources. Sized by ``size`` (``(cpu,
    memory)``, the head's) or to one node of ``node`` (:func:`worker_pod_size`: ``group``'s
    ``cpu`` / ``memory`` win where set, ``reserve`` is what the pod's other containers take);
    ``devices``: the accelerator requests (``google.com/tpu`` / ``nvidia.com/gpu``).
    ``extra_volumes`` / ``extra_mounts`` come after the GCS FUSE ones. ``account``: the
    Kubernetes service account (default: the identity's workers' account); ``automount_token``:
    mount its token (only the head with the autoscaler calls the Kubernetes API).
    ``annotations``: extra pod annotations (GPU networking's interfaces,
    :func:`components.gpunet.render.worker_pod_extras`). ``sidecars``: containers after the Ray
    container, kept as given (the RxDM sidecar of a ``gpudirect`` pool,
    :func:`components.gpunet.gpudirect.worker_parts`; KubeRay takes the first container as the
    Ray container)."""

    container: dict[str, Any]
    node_selector: dict[str, str]
    size: tuple[str, str] | None = None
    node: NodePoolSpec | None = None
    group: WorkerGroupConfig | None = None
    reserve: Mapping[str, float] | None = None
    devices: Mapping[str, str] | None = None
    tolerations: list[dict[str, str]] | None = None
    extra_volumes: list[dict[str, Any]] | None = None
    extra_mounts: list[dict[str, Any]] | None = None
    account: str | None = None
    automount_token: bool = False
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    sidecars: list[dict[str, Any]] | None = None


class ClusterPods(NamedTuple):
    """:func:`cluster_pods`' answer: ``templates``, one per :class:`RayPod` in order, and
    ``autoscaler_security``, the ``securityContext`` of the autoscaler container KubeRay
    injects into the head pod (``autoscalerOptions.securityContext``)."""

    templates: list[dict[str, Any]]
    autoscaler_security: dict[str, Any]


def cluster_pods(p: Plan, service_account: str, pods: Sequence[RayPod]) -> ClusterPods:
    """The pod templates of one Ray cluster, all running as the workload identity
    ``service_account`` (its records in the plan ``p``: :attr:`Plan.identities`, its accounts
    :attr:`Plan.accounts`): the one call that builds its head's and worker groups' pods
    (:mod:`components.raycrs.raycluster` describes each as a :class:`RayPod`).

    Each template gets its Ray container's ``resources`` (request = limit, see :class:`RayPod`),
    the Pod Security ``restricted`` settings, the identity's GCS FUSE volumes (its buckets,
    :func:`gcs_fuse_volumes`, and the file cache's settings,
    :func:`components.storage.fuse.pod_mounts`; none for an undeclared identity), then
    the pod's ``extra_volumes`` / ``extra_mounts``, then the memory-backed ``/dev/shm`` sized to
    the container's memory (:func:`shm_volume`; Ray's object store, NCCL on GPU nodes).

    Raises:
        ManifestError: a pod's ``node`` is too small for a Ray worker (:func:`worker_pod_size`).
    """
    identity = p.identities.get(service_account)
    access = {} if identity is None else identity.buckets
    ms, settings = pod_mounts(p.context.buckets_config, access, MOUNT_ROOT)
    fuse = (gcs_fuse_volumes(p.context.buckets, ms), settings)
    account = p.accounts[service_account].workers
    templates = [_pod_template(pod, copy.deepcopy(fuse), account) for pod in pods]
    return ClusterPods(templates, container_security_context())


def _pod_template(pod: RayPod, fuse: Any, workers_account: str) -> dict[str, Any]:
    (volumes, mounts), (cache_annotations, cache_volumes, fuse_env) = fuse
    if pod.node is not None:
        cpu, memory = worker_pod_size(pod.node, pod.group, pod.reserve)
    elif pod.size is not None:
        cpu, memory = pod.size
    else:
        raise TypeError("a RayPod needs a size or a node")
    shm, shm_mount = shm_volume(memory)
    volumes = [*volumes, *cache_volumes, *(pod.extra_volumes or []), shm]
    mounts = [*mounts, *(pod.extra_mounts or []), shm_mount]
    devices = dict(pod.devices) if pod.devices else None
    container = {
        **pod.container,
        "resources": pod_resources(cpu, memory, devices),
        "securityContext": container_security_context(),
    }
    if fuse_env:
        container = {**container, "env": [*container.get("env", []), *fuse_env]}
    container = {**container, "volumeMounts": mounts}
    spec: dict[str, Any] = {
        "serviceAccountName": pod.account or workers_account,
        "automountServiceAccountToken": pod.automount_token,
        "securityContext": pod_security_context(),
        "nodeSelector": dict(pod.node_selector),
        "containers": [container, *(pod.sidecars or [])],
    }
    if pod.tolerations:
        spec["tolerations"] = pod.tolerations
    spec["volumes"] = volumes
    labels = {"app.kubernetes.io/part-of": PART_OF, **(pod.labels or {})}
    metadata: dict[str, Any] = {"labels": labels}
    notes = dict(pod.annotations or {})
    if any("csi" in v for v in volumes):
        notes.update({GCSFUSE_ANNOTATION: "true", **cache_annotations})
    if notes:
        metadata["annotations"] = notes
    return {"metadata": metadata, "spec": spec}


def submitter_template(account: str, image: Any, submits_to: str) -> dict[str, Any]:
    """The pod template of a RayJob's submitter (``submitterPodTemplate``): one small container
    (500m, 1Gi) on the system pool, as ``account`` (its identity's workers' account,
    :attr:`components.plan.naming.RunAs.workers`) without a mounted token,
    with the Pod Security ``restricted`` settings, never restarted (KubeRay's submitter Job
    retries), labelled :data:`components.kernel.ray.SUBMITTER_LABEL` ``submits_to`` (the cluster
    it submits to; the head's NetworkPolicy admits it, :mod:`components.kuberay.namespace`)."""
    return {
        "metadata": {"labels": {"app.kubernetes.io/part-of": PART_OF, SUBMITTER_LABEL: submits_to}},
        "spec": {
            "serviceAccountName": account,
            "automountServiceAccountToken": False,
            "securityContext": pod_security_context(),
            "restartPolicy": "Never",
            "nodeSelector": {catalog.NODE_POOL_LABEL: "system"},
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": pod_resources("500m", "1Gi"),
                    "securityContext": container_security_context(),
                }
            ],
        },
    }
