"""The pod template every Ray pod of the stack shares (:func:`pod_template`): labels, sizing of a
worker pod on its node, GCS FUSE volumes, the Pod Security ``restricted`` settings, ``/dev/shm``;
and the RayJob submitter's (:func:`submitter_template`).
:mod:`components.raycrs.raycluster` builds the head and worker groups each with one call of
:func:`pod_template`, :mod:`components.raycrs.rayjob` the submitter with
:func:`submitter_template`.

Facts used (sources):

* Security (issue 12): every Ray cluster spec gets ``authOptions`` token mode with a Secret the
  stack creates (:func:`components.kernel.ray.auth_options`); every container the Pod Security Standards'
  ``restricted`` securityContext (:func:`container_security_context`, the Ray image's uid 1000 /
  gid 100); every Ray pod a size-limited memory ``/dev/shm`` (:func:`shm_size`); heads run as
  their identity's ``-head`` account (autoscaler RBAC), workers and submitters as the identity's
  own account without a mounted token.
* GCS FUSE: https://cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/cloud-storage-fuse-csi-driver-ephemeral
  (pod annotation ``gke-gcsfuse/volumes: "true"``, CSI driver ``gcsfuse.csi.storage.gke.io``,
  ``volumeAttributes.bucketName``; the injected sidecar requests 250m CPU and 256Mi memory by default).

Ray's ports, the Ray pods' labels and Ray's token authentication are :mod:`components.kernel.ray`
(with their sources).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from components import catalog
from components.config.raycrs import WorkerGroupConfig
from components.kernel.ray import PART_OF, SUBMITTER_LABEL
from components.nodepools.render import NodePoolSpec
from components.plan.naming import ksa_name
from components.plan.plan import Plan
from components.storage.fuse import Mount, cache_pod_settings
from components.storage.fuse import mounts as fuse_mounts
from contract.errors import ConfigurationError
from contract.quantity import cpu_quantity, memory_quantity

API_VERSION = "ray.io/v1"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
# Default resources of the GCS FUSE sidecar GKE injects (see module docstring).
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
    p: Plan, service_account: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """GCS FUSE CSI ephemeral volumes and mounts for the buckets ``service_account`` may use
    (the workload identity of that name in the stack's plan, :attr:`Plan.identities`; none for an
    undeclared one).

    One volume ``gcs-<purpose>`` per bucket the workload identity names, mounted at
    ``/mnt/gcs/<purpose>``, read-only for ``read`` access, with the mount options of the bucket's
    FUSE profile (:func:`components.storage.fuse.mounts`).

    Returns:
        ``(volumes, volumeMounts)``, sorted by purpose.
    """
    volumes, mounts = [], []
    for m in _fuse_mounts(p, service_account):
        volumes.append(
            {
                "name": f"gcs-{m.purpose}",
                "csi": {
                    "driver": GCSFUSE_DRIVER,
                    "readOnly": m.read_only,
                    "volumeAttributes": {
                        "bucketName": p.context.buckets[m.purpose],
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


def _fuse_mounts(p: Plan, service_account: str) -> list[Mount]:
    identity = p.identities.get(service_account)
    if identity is None:
        return []
    return fuse_mounts(p.context.buckets_config, identity.buckets)


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
    from components.kernel.base import quantity_value

    mib = math.ceil(quantity_value(memory) * SHM_FRACTION / 2**20)
    return f"{mib}Mi"


def shm_volume(memory: str) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(memory)}}
    return volume, {"name": "dshm", "mountPath": "/dev/shm"}


# ---------------------------------------------------------------------------- the pod template


def pod_template(
    p: Plan,
    service_account: str,
    container: dict[str, Any],
    *,
    node_selector: dict[str, str],
    size: tuple[str, str] | None = None,
    node: NodePoolSpec | None = None,
    group: WorkerGroupConfig | None = None,
    reserve: Mapping[str, float] | None = None,
    devices: Mapping[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    extra_volumes: list[dict[str, Any]] | None = None,
    extra_mounts: list[dict[str, Any]] | None = None,
    account: str | None = None,
    automount_token: bool = False,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    sidecars: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Ray pod template: the one call that builds a head's or a worker group's pod.

    ``container`` is the Ray container without its resources; the template gives it its
    ``resources`` (request = limit): ``size`` (``(cpu, memory)``, the head's) or, for a worker,
    one node of ``node`` (:func:`worker_pod_size`: ``group``'s ``cpu`` / ``memory`` win where
    set, ``reserve`` is what the pod's other containers take), plus ``devices`` (the
    accelerator requests, ``google.com/tpu`` / ``nvidia.com/gpu``); the Pod Security
    ``restricted`` settings; the GCS FUSE volumes of ``service_account`` (the workload
    identity: its buckets are mounted), then ``extra_volumes`` / ``extra_mounts``, then the
    memory-backed ``/dev/shm`` sized to the container's memory (:func:`shm_volume`; Ray's object
    store, NCCL on GPU nodes). ``account`` is the Kubernetes service account the pod runs as
    (default: the identity's workers' account). ``automount_token``: mount the KSA token (only
    the head with the autoscaler calls the Kubernetes API). ``annotations``: extra pod
    annotations (GPU networking's interfaces, :func:`components.gpunet.render.worker_pod_extras`).
    ``sidecars``: containers after the Ray container, kept as given (the RxDM sidecar of a
    ``gpudirect`` pool, :func:`components.gpunet.gpudirect.worker_parts`; KubeRay takes the
    first container as the Ray container).

    Raises:
        ManifestError: ``node`` is too small for a Ray worker (:func:`worker_pod_size`).
    """
    if node is not None:
        cpu, memory = worker_pod_size(node, group, reserve)
    elif size is not None:
        cpu, memory = size
    else:
        raise TypeError("pod_template needs a size or a node")
    shm, shm_mount = shm_volume(memory)
    volumes, mounts = gcs_fuse_volumes(p, service_account)
    cache_annotations, cache_volumes, fuse_env = cache_pod_settings(
        p.context.buckets_config.file_cache_medium, _fuse_mounts(p, service_account), MOUNT_ROOT
    )
    volumes = [*volumes, *cache_volumes, *(extra_volumes or []), shm]
    mounts = [*mounts, *(extra_mounts or []), shm_mount]
    container = {
        **container,
        "resources": pod_resources(cpu, memory, dict(devices) if devices else None),
        "securityContext": container_security_context(),
    }
    if fuse_env:
        container = {**container, "env": [*container.get("env", []), *fuse_env]}
    container = {**container, "volumeMounts": mounts}
    spec: dict[str, Any] = {
        "serviceAccountName": account or ksa_name(service_account),
        "automountServiceAccountToken": automount_token,
        "securityContext": pod_security_context(),
        "nodeSelector": dict(node_selector),
        "containers": [container, *(sidecars or [])],
    }
    if tolerations:
        spec["tolerations"] = tolerations
    spec["volumes"] = volumes
    metadata: dict[str, Any] = {"labels": {"app.kubernetes.io/part-of": PART_OF, **(labels or {})}}
    notes = dict(annotations or {})
    if any("csi" in v for v in volumes):
        notes.update({GCSFUSE_ANNOTATION: "true", **cache_annotations})
    if notes:
        metadata["annotations"] = notes
    return {"metadata": metadata, "spec": spec}


def submitter_template(service_account: str, image: Any, submits_to: str) -> dict[str, Any]:
    """The pod template of a RayJob's submitter (``submitterPodTemplate``): one small container
    (500m, 1Gi) on the system pool, as the identity's workers' account without a mounted token,
    with the Pod Security ``restricted`` settings, never restarted (KubeRay's submitter Job
    retries), labelled :data:`components.kernel.ray.SUBMITTER_LABEL` ``submits_to`` (the cluster
    it submits to; the head's NetworkPolicy admits it, :mod:`components.kuberay.namespace`)."""
    return {
        "metadata": {"labels": {"app.kubernetes.io/part-of": PART_OF, SUBMITTER_LABEL: submits_to}},
        "spec": {
            "serviceAccountName": ksa_name(service_account),
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
