"""Pure builders of the KubeRay custom resources (RayCluster, RayJob) a stack declares.

Config in, plain ``dict`` out — no Pulumi resources, no Ray import — so the same objects are
rendered offline (``raygke check``, ``raygke synth``), validated against the KubeRay CRD schemas
(:mod:`components.raycrs.crd`) and created by :class:`components.raycrs.component.RayResources`.

One source of truth (design.md): every worker group is generated from the node pool it references
through :mod:`components.catalog` and :mod:`components.nodepools.render`; nothing about a slice or GPU
shape is typed here.

Facts used (sources):

* RayCluster / RayJob fields (``headGroupSpec``, ``workerGroupSpecs``, ``numOfHosts``,
  ``enableInTreeAutoscaling``, ``autoscalerOptions.idleTimeoutSeconds``, ``serviceType``,
  ``clusterSelector``, ``rayClusterSpec``, ``runtimeEnvYAML``, ``submitterPodTemplate``...):
  the KubeRay v1.7.0 CRDs and https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/config.html,
  https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html.
* TPU worker groups: https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html —
  ``numOfHosts`` = hosts of the slice, ``google.com/tpu`` request = limit = chips per host,
  nodeSelector ``cloud.google.com/gke-tpu-accelerator`` / ``cloud.google.com/gke-tpu-topology``,
  replicas count slices. KubeRay turns the ``google.com/tpu`` limit into the Ray ``TPU`` resource,
  and Ray adds ``TPU-<pod type>-head`` on worker 0 from ``TPU_WORKER_ID``/``TPU_NAME``, which the
  GKE TPU webhook injects together with ``TPU_WORKER_HOSTNAMES``; so ``rayStartParams`` stay empty.
  ``TPU_ACCELERATOR_TYPE`` (pod type, e.g. ``v6e-16``) and ``TPU_TOPOLOGY`` are set from the catalog
  so Ray's detection (``ray/_private/accelerators/tpu.py``) never depends on the node's metadata.
  Ports: 8471 TPU runtime between the hosts of a slice and 8431 TPU runtime metrics
  (https://cloud.google.com/kubernetes-engine/docs/how-to/tpus, multi-host workload example);
  8081 the multi-slice (megascale) coordinator, ``DEFAULT_MEGASCALE_PORT`` in
  ``ray/_private/accelerators/tpu.py``. With more than one multi-host slice (maxReplicas > 1;
  GKE runs Multislice on multi-host slices only, :meth:`components.catalog.TpuSlice.job_slices`)
  ``MEGASCALE_PORT``
  is set; ``MEGASCALE_COORDINATOR_ADDRESS`` / ``MEGASCALE_NUM_SLICES`` / ``MEGASCALE_SLICE_ID`` differ
  per slice and are set at run time by Ray Train's JaxTrainer (``ray/train/v2/jax/config.py`` via
  ``ray.util.tpu.get_tpu_coordinator_env_vars``), which a pod template cannot do.
* GPU worker groups: https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (label
  ``cloud.google.com/gke-accelerator``, taint ``nvidia.com/gpu``); a memory-backed ``/dev/shm``
  for NCCL and PyTorch data loaders (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/gpu.html).
* Security (issue 12): every Ray cluster spec gets ``authOptions`` token mode with a Secret the
  stack creates (:func:`auth_options`); every container the Pod Security Standards'
  ``restricted`` securityContext (:func:`container_security_context`, the Ray image's uid 1000 /
  gid 100); every Ray pod a size-limited memory ``/dev/shm`` (:func:`shm_size`); heads run as
  their identity's ``-head`` account (autoscaler RBAC), workers and submitters as the identity's
  own account without a mounted token.
* GCS FUSE: https://cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/cloud-storage-fuse-csi-driver-ephemeral
  (pod annotation ``gke-gcsfuse/volumes: "true"``, CSI driver ``gcsfuse.csi.storage.gke.io``,
  ``volumeAttributes.bucketName``; the injected sidecar requests 250m CPU and 256Mi memory by default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import yaml

from components import catalog
from components.computeclass.model import class_label, class_taint
from components.images.render import job_image_kind, planned_refs, pool_image_kind
from components.images.render import runtime_env_pip as _runtime_env_pip
from components.nodepools.render import NodePoolSpec, gpu_node_labels, specs_for_pool
from components.raycrs.scaling import peak_flops_per_device, scaling_config_for_job_target
from components.stack import (
    CpuPool,
    GpuPool,
    GroupTarget,
    HeadConfig,
    JobConfig,
    RayClusterConfig,
    StackConfig,
    TpuPool,
    WorkerGroupConfig,
    quantity_bytes,
    resolve_group,
    resolve_job,
)
from components.stack.naming import bucket_name, bucket_url, head_account_id, ksa_name
from contract.args.base import JobContext
from contract.quantity import cpu_quantity, memory_quantity
from contract.registry import bind_job_args, get_workload

API_VERSION = "ray.io/v1"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
# Default resources of the GCS FUSE sidecar GKE injects (see module docstring).
GCSFUSE_SIDECAR = {"cpu": 0.25, "memory": 0.25}  # cores, GiB
# Headroom left on a node for GKE's daemonsets (logging, metrics, CSI, networking) and the GCS
# FUSE sidecar, subtracted from NodePoolSpec.capacity when sizing a worker pod: cores, GiB.
NODE_HEADROOM = {"cpu": 1.0, "memory": 2.0}
HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001, "metrics": 8080}
DASHBOARD_PORT = HEAD_PORTS["dashboard"]
CLIENT_PORT = HEAD_PORTS["client"]
TPU_RUNTIME_PORT = 8471
TPU_METRICS_PORT = 8431
MEGASCALE_PORT = 8081
SERVE_PORT = 8000
MOUNT_ROOT = "/mnt/gcs"
# Pod security (see pod_security_context / container_security_context): the Ray image's user.
RAY_UID = 1000
RAY_GID = 100
SHM_FRACTION = 0.5
# Token authentication (see auth_options).
AUTH_MODE = "token"
AUTH_TOKEN_KEY = "auth_token"
AUTH_MIN_RAY_VERSION = (2, 52, 0)
# Pod label naming the Ray cluster a pod belongs to (own clusters of RayJobs, whose RayCluster
# name KubeRay generates) and the one a submitter submits to; NetworkPolicies select on them.
CLUSTER_LABEL = "ray.io/cluster"
JOB_CLUSTER_LABEL = "ray-gke.io/job-cluster"
SUBMITTER_LABEL = "ray-gke.io/submits-to"
DATASET_PATH = "lm-bytes"
PART_OF = "ray-gke"


class ManifestError(ValueError):
    """A custom resource that cannot be built; the message names the field and value."""


# ------------------------------------------------------------------------------ sizing helpers


def worker_pod_size(spec: NodePoolSpec, group: WorkerGroupConfig | None = None) -> tuple[str, str]:
    """CPU and memory (request = limit) of a worker pod filling one node of ``spec``.

    ``NodePoolSpec.capacity`` minus :data:`NODE_HEADROOM`, floored to 100m and to 256Mi (1Gi from 16Gi up); the worker
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
        cpu_left = cpu_cap - NODE_HEADROOM["cpu"]
        mem_left = mem_cap - NODE_HEADROOM["memory"]
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


def _images(cfg: StackConfig, images: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Kind -> image reference of the pods: ``images`` (what the Pulumi program passes: the pushed
    digests, ``pulumi.Output`` values), else :func:`components.images.render.planned_refs`."""
    return planned_refs(cfg) if images is None else images


def _resources(cpu: str, memory: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"requests": dict(amounts), "limits": dict(amounts)}


# ---------------------------------------------------------------------------- volumes (GCS FUSE)


def _identity_buckets(cfg: StackConfig, service_account: str) -> dict[str, str]:
    for w in cfg.workload_identities:
        if w.name == service_account:
            return dict(w.buckets)
    return {}


def gcs_fuse_volumes(
    cfg: StackConfig, service_account: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """GCS FUSE CSI ephemeral volumes and mounts for the buckets ``service_account`` may use.

    One volume ``gcs-<purpose>`` per bucket the workload identity names, mounted at
    ``/mnt/gcs/<purpose>``, read-only for ``read`` access.

    Returns:
        ``(volumes, volumeMounts)``, sorted by purpose.
    """
    volumes, mounts = [], []
    for purpose, access in sorted(_identity_buckets(cfg, service_account).items()):
        read_only = access == "read"
        volumes.append(
            {
                "name": f"gcs-{purpose}",
                "csi": {
                    "driver": GCSFUSE_DRIVER,
                    "readOnly": read_only,
                    "volumeAttributes": {
                        "bucketName": bucket_name(cfg, purpose),
                        "mountOptions": "implicit-dirs",
                    },
                },
            }
        )
        mounts.append(
            {
                "name": f"gcs-{purpose}",
                "mountPath": f"{MOUNT_ROOT}/{purpose}",
                "readOnly": read_only,
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
    from components.stack.base import quantity_value

    mib = math.ceil(quantity_value(memory) * SHM_FRACTION / 2**20)
    return f"{mib}Mi"


def _shm(memory: str) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(memory)}}
    return volume, {"name": "dshm", "mountPath": "/dev/shm"}


# ------------------------------------------------------------------------- token authentication


def auth_secret_name(cluster: str) -> str:
    """The Kubernetes Secret holding the Ray auth token of one Ray cluster (a long-lived
    RayCluster's name, or a RayJob's name for the cluster it brings): ``<name>-ray-auth``. The
    stack creates it (``pulumi_random.RandomPassword``) with the key ``auth_token``
    (:data:`AUTH_TOKEN_KEY`, KubeRay's ``RAY_AUTH_TOKEN_SECRET_KEY`` in
    ``ray-operator/controllers/ray/utils/constant.go``)."""
    return f"{cluster}-ray-auth"


def auth_options(cluster: str) -> dict[str, Any]:
    """``authOptions`` of a RayCluster spec: ``{mode: token, secretName: <auth_secret_name>}``.

    KubeRay v1.7.0 then sets ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` (``secretKeyRef``
    to that Secret's ``auth_token``) on every Ray container, and on the RayJob submitter
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-auth.html; the
    submitter: ``rayjob_controller`` test "Auth env vars should be injected"), so the pod
    templates do not repeat them. Without ``secretName`` KubeRay would generate a Secret named
    after the RayCluster; we name it ourselves because a RayJob's own RayCluster gets a
    generated name, and in-cluster clients (a Serve gateway, a notebook) need a name known at
    preview time. Needs ``rayVersion`` >= 2.52.0 (validation.go ``ValidateRayClusterSpec``).
    """
    return {"mode": AUTH_MODE, "secretName": auth_secret_name(cluster)}


def auth_client_env(cluster: str) -> list[dict[str, Any]]:
    """Container ``env`` for an in-cluster client of Ray cluster ``cluster`` that KubeRay does not
    inject into (a Serve gateway, a notebook, a CI pod): ``RAY_AUTH_MODE=token`` and
    ``RAY_AUTH_TOKEN`` from the cluster's Secret (:func:`auth_secret_name`, key ``auth_token``);
    Ray's clients read both (https://docs.ray.io/en/latest/ray-security/token-auth.html). The
    client pod must also match the head's NetworkPolicy (label ``ray-gke.io/submits-to:
    <cluster>``, :mod:`components.kuberay.namespace`)."""
    return [
        {"name": "RAY_AUTH_MODE", "value": AUTH_MODE},
        {
            "name": "RAY_AUTH_TOKEN",
            "valueFrom": {
                "secretKeyRef": {"name": auth_secret_name(cluster), "key": AUTH_TOKEN_KEY}
            },
        },
    ]


def _pod_template(
    cfg: StackConfig,
    service_account: str,
    container: dict[str, Any],
    *,
    node_selector: dict[str, str],
    tolerations: list[dict[str, str]] | None = None,
    extra_volumes: list[dict[str, Any]] | None = None,
    extra_mounts: list[dict[str, Any]] | None = None,
    account: str | None = None,
    automount_token: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Ray pod template. ``service_account`` is the workload identity (its buckets are
    mounted); ``account`` the Kubernetes service account the pod runs as (default: the
    identity's workers' account). ``automount_token``: mount the KSA token (only the head with
    the autoscaler calls the Kubernetes API)."""
    volumes, mounts = gcs_fuse_volumes(cfg, service_account)
    volumes = volumes + list(extra_volumes or [])
    mounts = mounts + list(extra_mounts or [])
    container = {**container, "securityContext": container_security_context()}
    if mounts:
        container = {**container, "volumeMounts": mounts}
    spec: dict[str, Any] = {
        "serviceAccountName": account or ksa_name(service_account),
        "automountServiceAccountToken": automount_token,
        "securityContext": pod_security_context(),
        "nodeSelector": dict(node_selector),
        "containers": [container],
    }
    if tolerations:
        spec["tolerations"] = tolerations
    if volumes:
        spec["volumes"] = volumes
    metadata: dict[str, Any] = {"labels": {"app.kubernetes.io/part-of": PART_OF, **(labels or {})}}
    if any("csi" in v for v in volumes):
        metadata["annotations"] = {GCSFUSE_ANNOTATION: "true"}
    return {"metadata": metadata, "spec": spec}


# ------------------------------------------------------------------------------------ head group


def head_group_spec(
    cfg: StackConfig,
    head: HeadConfig,
    service_account: str,
    images: Mapping[str, Any] | None = None,
    *,
    autoscaling: bool = True,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``headGroupSpec``: the head on the system pool, dashboard/client reachable in-cluster only.
    Its image is the ``cpu`` image (``images``: kind -> reference, see :func:`render_manifests`).

    The head Service is ``ClusterIP`` (never LoadBalancer/NodePort); ``num-cpus: "0"`` keeps Ray
    tasks off the head; ``dashboard-host: 0.0.0.0`` lets the in-cluster Service reach it (the
    NetworkPolicies of :mod:`components.kuberay.namespace` decide who). The head runs as the
    identity's own head account (:func:`components.stack.naming.head_account_id`), to which
    KubeRay binds the autoscaler's RBAC; its token is mounted only when ``autoscaling``.
    """
    volume, mount = _shm(head.memory)
    container = {
        "name": "ray-head",
        "image": _images(cfg, images)["cpu"],
        "resources": _resources(head.cpu, head.memory),
        "ports": [{"name": n, "containerPort": p} for n, p in HEAD_PORTS.items()],
    }
    return {
        "serviceType": "ClusterIP",
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
        "template": _pod_template(
            cfg,
            service_account,
            container,
            node_selector={catalog.NODE_POOL_LABEL: "system"},
            extra_volumes=[volume],
            extra_mounts=[mount],
            account=head_account_id(service_account),
            automount_token=autoscaling,
            labels=labels,
        ),
    }


# --------------------------------------------------------------------------------- worker groups


SPILL_VOLUME = "ray-spill"


def ray_start_params(group: WorkerGroupConfig) -> dict[str, str]:
    """``rayStartParams`` of a worker group (KubeRay passes each as ``ray start --<key>=<value>``;
    https://docs.ray.io/en/latest/cluster/cli.html#ray-start):

    * ``object-store-memory``: ``group.object_store_memory`` in bytes (a decimal string);
    * ``object-spilling-directory``: ``group.spill_dir``
      (https://docs.ray.io/en/latest/ray-core/objects/object-spilling.html), backed by the
      ``emptyDir`` volume :data:`SPILL_VOLUME` mounted there (node ephemeral storage).

    Empty when neither is set (Ray's defaults: 30% of the pod's memory, spilling under /tmp).
    """
    params: dict[str, str] = {}
    if group.object_store_memory is not None:
        params["object-store-memory"] = str(quantity_bytes(group.object_store_memory))
    if group.spill_dir:
        params["object-spilling-directory"] = group.spill_dir
    return params


def worker_group_spec(
    cfg: StackConfig,
    target: GroupTarget,
    service_account: str,
    *,
    replicas: int | None = None,
    images: Mapping[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    image_kind: str | None = None,
    autoscaled: bool = False,
    compute_class: bool = True,
) -> dict[str, Any]:
    """One ``workerGroupSpecs`` item for a worker group resolved to its node pool
    (:func:`components.stack.resolve_group`, or :attr:`components.stack.JobTarget.group_target`).

    ``minReplicas``/``maxReplicas`` come from the group (max defaults to the pool's capacity); they
    count slices for TPU pools (each replica is ``numOfHosts`` pods) and pods (= nodes) otherwise.
    ``replicas`` defaults to ``minReplicas``; with ``autoscaled`` (the cluster has
    ``enableInTreeAutoscaling``) it is left out: the Ray autoscaler owns that field
    (kuberay#4149). Under server-side apply a field the stack does not send is not the stack's:
    the API server applies the CRD default (``replicas: 0``, KubeRay v1.7.0
    ``ray.io_rayclusters.yaml``) on create only, the autoscaler's later writes become its own, and
    a ``pulumi up`` neither conflicts with them nor resets them
    (https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts,
    https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/;
    ``pulumi.com/patchForce`` would take the field from the autoscaler, and ``ignore_changes``
    under server-side apply still sends the old value, so neither is used). KubeRay clamps an
    omitted or lower value to ``minReplicas`` (``GetWorkerGroupDesiredReplicas``,
    ray-operator/controllers/ray/utils/util.go), so the group still starts at its minimum.
    See the module docstring for the per-kind settings.
    The container image is ``images[image_kind]``; ``image_kind`` defaults to the pool's kind
    (:func:`components.images.render.pool_image_kind`: GPU pool -> ``gpu``, TPU -> ``tpu``); a
    job's own cluster passes :func:`components.images.render.job_image_kind` (``gpu-tf`` for a
    TensorFlow job on a GPU pool). ``compute_class`` False leaves out the pool's ComputeClass
    selector and toleration (a queued job's own cluster: Kueue's flavor places it).

    Raises:
        ManifestError: the group's node pool has no GKE node pool.
    """
    group, pool = target.group, target.pool
    specs = specs_for_pool(cfg, pool.name)
    if not specs:
        raise ManifestError(f"node pool {pool.name!r} renders no GKE node pool")
    spec = specs[0]
    cpu, memory = worker_pod_size(spec, group)
    max_replicas = target.max_replicas
    out: dict[str, Any] = {"groupName": group.name}
    if not autoscaled:
        out["replicas"] = group.min_replicas if replicas is None else replicas
    out.update(
        minReplicas=group.min_replicas,
        maxReplicas=max_replicas,
        numOfHosts=1,
        rayStartParams=ray_start_params(group),
    )
    container: dict[str, Any] = {
        "name": "ray-worker",
        "image": _images(cfg, images)[image_kind or pool_image_kind(pool)],
    }
    extra_volumes: list[dict[str, Any]] = []
    extra_mounts: list[dict[str, Any]] = []
    if group.spill_dir:
        extra_volumes.append({"name": SPILL_VOLUME, "emptyDir": {}})
        extra_mounts.append({"name": SPILL_VOLUME, "mountPath": group.spill_dir})
    tolerations: list[dict[str, str]] = []
    if isinstance(pool, TpuPool):
        s = pool.slice
        out["numOfHosts"] = s.hosts
        env = {
            "JAX_PLATFORMS": "tpu,cpu",
            "TPU_ACCELERATOR_TYPE": s.pod_type,
            "TPU_TOPOLOGY": s.topology,
        }
        ports = {"tpu-runtime": TPU_RUNTIME_PORT, "tpu-metrics": TPU_METRICS_PORT}
        if s.multi_host and max_replicas > 1:  # Multislice: multi-host slices only
            env["MEGASCALE_PORT"] = str(MEGASCALE_PORT)
            ports["megascale"] = MEGASCALE_PORT
        container.update(
            resources=_resources(cpu, memory, {catalog.TPU_RESOURCE: str(s.chips_per_host)}),
            env=[{"name": k, "value": v} for k, v in env.items()],
            ports=[{"name": n, "containerPort": p} for n, p in ports.items()],
        )
        node_selector = dict(s.node_labels)
        tolerations = [s.taint.toleration()]
    elif isinstance(pool, GpuPool):
        g = pool.gpu
        env = {
            "NCCL_DEBUG": "WARN",
            "NCCL_SOCKET_IFNAME": "eth0",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        }
        container.update(
            resources=_resources(cpu, memory, {catalog.GPU_RESOURCE: str(g.count)}),
            env=[{"name": k, "value": v} for k, v in env.items()],
        )
        # The driver-version label too: a pod that selects it gets a driver on a NAP-created node
        # (NAP installs none otherwise) and matches declared pools whose driver GKE installs.
        node_selector = gpu_node_labels(g.type, pool.driver_version)
        tolerations = [catalog.GPU_TAINT.toleration()]
    else:
        assert isinstance(pool, CpuPool)
        container.update(resources=_resources(cpu, memory))
        node_selector = {catalog.NODE_POOL_LABEL: pool.name}
    # A queued job's cluster gets its nodes from the Kueue flavor it is admitted to (Kueue adds
    # the flavor's nodeLabels to the pods: kueue pkg/podset/podset.go Merge); the pool's
    # ComputeClass would pin it to the class's nodes and leave a DWS flavor's pods Pending.
    cc = next((c for c in cfg.compute_classes if c.node_pool == pool.name), None)
    if (
        cc is not None and compute_class
    ):  # the pool's class: its nodes, then its fallbacks (computeclass/render.py)
        node_selector = {**node_selector, **class_label(cc.name)}
        tolerations = [*tolerations, class_taint(cc.name).toleration()]
    volume, mount = _shm(memory)  # every Ray node's object store; NCCL on GPU nodes too
    out["template"] = _pod_template(
        cfg,
        service_account,
        container,
        node_selector=node_selector,
        tolerations=tolerations,
        extra_volumes=[*extra_volumes, volume],
        extra_mounts=[*extra_mounts, mount],
        labels=labels,
    )
    return out


def ray_cluster_spec(
    cfg: StackConfig,
    *,
    head: HeadConfig,
    service_account: str,
    worker_groups: list[dict[str, Any]],
    autoscaling: bool,
    idle_timeout_seconds: int,
    auth_name: str,
    images: Mapping[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A RayCluster ``spec`` (also the RayJob ``rayClusterSpec`` and, later, the RayService
    ``rayClusterConfig``): every Ray cluster the stack creates gets token authentication
    (:func:`auth_options` with the Secret of ``auth_name``), the pod security of
    :func:`container_security_context` on every container, the autoscaler sidecar included
    (``autoscalerOptions.securityContext``; KubeRay injects that container into the head pod), and
    ``labels`` on the head's pod template (the worker groups carry their own)."""
    spec: dict[str, Any] = {
        "rayVersion": cfg.ray.version,
        "enableInTreeAutoscaling": autoscaling,
        "authOptions": auth_options(auth_name),
    }
    if autoscaling:
        spec["autoscalerOptions"] = {
            "idleTimeoutSeconds": idle_timeout_seconds,
            "upscalingMode": "Default",
            "securityContext": container_security_context(),
        }
    spec["headGroupSpec"] = head_group_spec(
        cfg, head, service_account, images, autoscaling=autoscaling, labels=labels
    )
    spec["workerGroupSpecs"] = worker_groups
    return spec


def _metadata(cfg: StackConfig, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": cfg.kuberay.namespace,
        "labels": {"app.kubernetes.io/part-of": PART_OF, "app.kubernetes.io/managed-by": "pulumi"},
    }


def ray_cluster_manifest(
    cfg: StackConfig, rc: RayClusterConfig, images: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayCluster for ``rc`` (namespace ``cfg.kuberay.namespace``).

    Raises:
        ResolveError: a worker group references an undeclared node pool.
    """
    groups = [
        worker_group_spec(
            cfg,
            resolve_group(cfg, rc, g),
            rc.service_account,
            images=images,
            autoscaled=rc.autoscaling,
        )
        for g in rc.worker_groups
    ]  # KubeRay labels these pods ray.io/cluster=<name> itself
    manifest: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "RayCluster",
        "metadata": _metadata(cfg, rc.name),
        "spec": ray_cluster_spec(
            cfg,
            head=rc.head,
            service_account=rc.service_account,
            worker_groups=groups,
            autoscaling=rc.autoscaling,
            idle_timeout_seconds=rc.idle_timeout_seconds,
            images=images,
            auth_name=rc.name,
        ),
    }
    if rc.upgrade_strategy is not None:  # KubeRay v1.7.0 RayClusterUpgradeStrategy
        manifest["spec"]["upgradeStrategy"] = {"type": rc.upgrade_strategy}
    return manifest


# ----------------------------------------------------------------------------------------- jobs


ELASTIC_JOB = {"kueue.x-k8s.io/elastic-job": "true"}


def job_args(cfg: StackConfig, job: JobConfig) -> dict[str, Any]:
    """The workload arguments of ``job``, bound by :func:`contract.registry.bind_job_args` (the
    one binding ``raygke local run`` uses too): ``job.args`` on top of the platform values the
    workload has an argument for:

    * ``scaling``: the ``ray.train.ScalingConfig`` kwargs (:mod:`components.raycrs.scaling`),
      the same shape for every trainer, with the job's ``placement_strategy`` when set;
    * ``max_failures``: ``job.max_failures``;
    * ``storage_path``: the checkpoints bucket URL;
    * ``name`` (workloads that write checkpoints): the job name, the Ray Train experiment name,
      so each job checkpoints to and resumes from its own folder ``<storage_path>/<job name>``
      (two jobs running the same trainer never share one). A reader such as ``evaluate`` keeps
      its default; set its ``args.name`` to the training job's name;
    * ``dataset``: ``<datasets bucket URL>/lm-bytes``;
    * ``peak_flops_per_device``: the catalog's peak bf16 FLOP/s of one chip / GPU (for MFU).

    Raises:
        KeyError: unknown workload. ResolveError: unresolvable target.
        contract.args.base.ArgError: ``job.args`` do not fit the workload (the stack rules report
            the same problems first).
    """
    workload = get_workload(job.workload)
    target = resolve_job(cfg, job)
    context = JobContext(
        dataset=f"{bucket_url(cfg, 'datasets')}/{DATASET_PATH}",
        storage_path=bucket_url(cfg, "checkpoints"),
        name=job.name if "checkpoints" in workload.writes else None,
        scaling=scaling_config_for_job_target(job, target.pool, target.replicas),
        max_failures=job.max_failures,
        peak_flops_per_device=peak_flops_per_device(target.pool),
    )
    return bind_job_args(job.workload, context, job.args)


def _own_cluster_spec(
    cfg: StackConfig, job: JobConfig, images: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``rayClusterSpec`` of a job bringing its own RayCluster: one fixed-size worker group
    spanning the whole node pool (:func:`components.stack.own_cluster_group`)."""
    target = resolve_job(cfg, job)
    labels = {JOB_CLUSTER_LABEL: job.name}
    return ray_cluster_spec(
        cfg,
        head=HeadConfig(),
        service_account=job.service_account,
        worker_groups=[
            worker_group_spec(
                cfg,
                target.group_target,
                job.service_account,
                replicas=target.replicas,
                images=images,
                labels=labels,
                image_kind=job_image_kind(cfg, job),
                compute_class=not job.queue,
            )
        ],
        autoscaling=False,
        idle_timeout_seconds=0,
        images=images,
        auth_name=job.name,
        labels=labels,
    )


def job_runtime_env(cfg: StackConfig, job: JobConfig, working_dir_uri: str) -> dict[str, Any]:
    """The RayJob's runtime environment: ``working_dir`` (the workloads archive) and, with
    ``runtime_env_pip: true``, ``pip``: the requirement lines of the image kind of the job's
    workers (:func:`components.images.render.job_image_kind`,
    :func:`components.images.render.runtime_env_pip`), installed by Ray for the
    driver and every worker (https://docs.ray.io/en/latest/ray-core/handling-dependencies.html).
    """
    env: dict[str, Any] = {"working_dir": working_dir_uri}
    if job.runtime_env_pip:
        env["pip"] = _runtime_env_pip(job_image_kind(cfg, job))
    return env


def ray_job_manifest(
    cfg: StackConfig,
    job: JobConfig,
    working_dir_uri: str,
    images: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayJob for ``job``.

    ``entrypoint`` from the workload registry with :func:`job_args`; ``runtimeEnvYAML`` sets
    ``working_dir`` to ``working_dir_uri`` (the content-addressed workloads archive);
    ``clusterSelector: {ray.io/cluster: <name>}`` for a job on a long-lived RayCluster, else an own
    ``rayClusterSpec`` whose one worker group spans the whole node pool; the submitter pod runs as
    the job's service account. ``shutdownAfterJobFinishes`` / ``ttlSecondsAfterFinished`` are
    :attr:`JobConfig.shuts_down` / :attr:`JobConfig.ttl_seconds`: false / 0 on a long-lived
    cluster (KubeRay v1.7.0 refuses a TTL without shutdown, validation.go
    ``validateDeletionConfiguration``), true / 60 s by default for a job with its own cluster.

    Raises:
        KeyError: unknown workload. ResolveError: unresolvable target.
    """
    workload = get_workload(job.workload)
    spec: dict[str, Any] = {
        "entrypoint": workload.entrypoint(job_args(cfg, job)),
        "runtimeEnvYAML": yaml.safe_dump(
            job_runtime_env(cfg, job, working_dir_uri), sort_keys=True
        ),
        "backoffLimit": job.backoff_limit,
        "shutdownAfterJobFinishes": job.shuts_down,
        "ttlSecondsAfterFinished": job.ttl_seconds,
    }
    if job.cluster:
        spec["clusterSelector"] = {"ray.io/cluster": job.cluster}
    else:
        spec["rayClusterSpec"] = _own_cluster_spec(cfg, job, images)
    if job.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    if job.suspend:
        spec["suspend"] = True
    spec["submitterPodTemplate"] = {
        "metadata": {
            "labels": {
                "app.kubernetes.io/part-of": PART_OF,
                SUBMITTER_LABEL: job.cluster or job.name,
            }
        },
        "spec": {
            "serviceAccountName": ksa_name(job.service_account),
            "automountServiceAccountToken": False,
            "securityContext": pod_security_context(),
            "restartPolicy": "Never",
            "nodeSelector": {catalog.NODE_POOL_LABEL: "system"},
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": _images(cfg, images)["cpu"],
                    "resources": _resources("500m", "1Gi"),
                    "securityContext": container_security_context(),
                }
            ],
        },
    }
    metadata = _metadata(cfg, job.name)
    if job.slices is not None and job.slices.elastic:
        # Kueue's elastic-job marker (kueue pkg/constants/constants.go ElasticJobAnnotation;
        # RayJob is in supportedElasticJobGVKs, pkg/controller/jobframework/validation.go):
        # honoured with Kueue's ElasticJobsViaWorkloadSlices gate, inert without Kueue.
        metadata = {**metadata, "annotations": {**metadata.get("annotations", {}), **ELASTIC_JOB}}
    if job.queue:  # Kueue admits it (components.capacity.render.queue_labels); it owns suspend
        from components.capacity.render import queue_labels

        metadata["labels"].update(queue_labels(job))
    return {"apiVersion": API_VERSION, "kind": "RayJob", "metadata": metadata, "spec": spec}


def _name(x: Any) -> str:
    return x.name


def head_service_host(cfg: StackConfig, cluster_name: str) -> str:
    """In-cluster DNS name of a RayCluster's head Service (KubeRay names it ``<name>-head-svc``)."""
    return f"{cluster_name}-head-svc.{cfg.kuberay.namespace}.svc.cluster.local"


def cluster_endpoints(cfg: StackConfig, cluster_name: str) -> dict[str, str]:
    """``{"dashboard": "http://<svc>:8265", "client": "ray://<svc>:10001"}`` (in-cluster only)."""
    host = head_service_host(cfg, cluster_name)
    return {"dashboard": f"http://{host}:{DASHBOARD_PORT}", "client": f"ray://{host}:{CLIENT_PORT}"}
