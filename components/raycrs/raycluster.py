"""The ``ray.io/v1`` RayCluster (:func:`ray_cluster_manifest`, :func:`ray_cluster_spec`; also the
RayJob's ``rayClusterSpec`` and the RayService's ``rayClusterConfig``): config in, ``dict`` out.
Every worker group comes from its node pool through the catalog: no slice or GPU shape is
typed here.
Sources: docs/sources.md#raycrs-raycluster
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components import catalog
from components.catalog.gpudirect import RXDM_RESERVE
from components.config.computeclass import class_label, class_taint
from components.config.nodepools import CpuPool, GpuPool, TpuPool
from components.config.raycrs import HeadConfig, RayClusterConfig, WorkerGroupConfig
from components.gpunet.render import worker_pod_extras
from components.images.render import pool_image_kind
from components.kernel.base import quantity_bytes
from components.kernel.ray import (
    HEAD_PORTS,
    MEGASCALE_PORT,
    TPU_METRICS_PORT,
    TPU_RUNTIME_PORT,
    auth_options,
)
from components.nodepools.render import gpu_node_labels
from components.plan.context import object_metadata
from components.plan.plan import Plan
from components.plan.resolve import GroupTarget
from components.raycrs.pod import API_VERSION, ManifestError, RayPod, cluster_pods

# ------------------------------------------------------------------------------------ head group

# Kueue's elastic-job marker (kueue pkg/constants/constants.go ElasticJobAnnotation): the object is
# admitted as workload slices, so it may scale (gate ElasticJobsViaWorkloadSlices).
ELASTIC_JOB = {"kueue.x-k8s.io/elastic-job": "true"}


def head_group_spec(
    head: HeadConfig,
    account: str,
    images: Mapping[str, Any],
    *,
    autoscaling: bool = True,
    labels: dict[str, str] | None = None,
) -> tuple[dict[str, Any], RayPod]:
    """``headGroupSpec`` without its template, and the :class:`~components.raycrs.pod.RayPod`
    its template is made from (:func:`ray_cluster_spec`): the head on the system pool,
    dashboard/client reachable in-cluster only. Its image is the ``cpu`` image (``images``:
    kind -> reference, :func:`components.images.render.pod_images`).

    The head Service is ``ClusterIP`` (never LoadBalancer/NodePort); ``num-cpus: "0"`` keeps Ray
    tasks off the head; ``dashboard-host: 0.0.0.0`` lets the in-cluster Service reach it (the
    NetworkPolicies of :mod:`components.kuberay.namespace` decide who). The head runs as
    ``account``, its identity's own head account (:attr:`components.plan.naming.RunAs.head`),
    to which KubeRay binds the autoscaler's RBAC; its token is mounted only when
    ``autoscaling``.
    """
    container = {
        "name": "ray-head",
        "image": images["cpu"],
        "ports": [{"name": n, "containerPort": p} for n, p in HEAD_PORTS.items()],
    }
    group = {
        "serviceType": "ClusterIP",
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
    }
    pod = RayPod(
        container,
        node_selector={catalog.NODE_POOL_LABEL: "system"},
        size=(head.cpu, head.memory),
        account=account,
        automount_token=autoscaling,
        labels=labels,
    )
    return group, pod


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


@dataclass(frozen=True)
class WorkerGroupInput:
    """One worker group for :func:`ray_cluster_spec` to render (:func:`worker_group_spec`):
    ``target`` the group resolved to its node pool (a record of the stack's plan,
    :meth:`components.plan.plan.Plan.group` / :meth:`~components.plan.plan.Plan.service`, or
    :attr:`components.plan.resolve.JobTarget.group_target`); ``replicas``, ``labels``,
    ``image_kind``, ``autoscaled`` and ``compute_class`` as :func:`worker_group_spec` reads
    them."""

    target: GroupTarget
    replicas: int | None = None
    labels: dict[str, str] | None = None
    image_kind: str | None = None
    autoscaled: bool = False
    compute_class: bool = True


def worker_group_spec(
    p: Plan, w: WorkerGroupInput, images: Mapping[str, Any]
) -> tuple[dict[str, Any], RayPod]:
    """One ``workerGroupSpecs`` item without its template, and the
    :class:`~components.raycrs.pod.RayPod` its template is made from (sized to one node of the
    pool; :func:`ray_cluster_spec` makes the templates), for the worker group ``w.target``
    (:class:`WorkerGroupInput`) of the plan ``p``.

    ``minReplicas``/``maxReplicas`` come from the group (max defaults to the pool's capacity); they
    count slices for TPU pools (each replica is ``numOfHosts`` pods) and pods (= nodes) otherwise.
    ``w.replicas`` defaults to ``minReplicas``; with ``w.autoscaled`` (the cluster has
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
    The per-kind settings and their sources: docs/sources.md#raycrs-raycluster.
    The container image is ``images[w.image_kind]``; ``image_kind`` defaults to the pool's kind
    (:func:`components.images.render.pool_image_kind`: GPU pool -> ``gpu``, TPU -> ``tpu``); a
    job's own cluster passes :func:`components.images.render.job_image_kind` (``gpu-tf`` for a
    TensorFlow job on a GPU pool). ``w.compute_class`` False leaves out the pool's ComputeClass
    selector and toleration (a queued job's own cluster: Kueue's flavor places it).

    Raises:
        ManifestError: the group's node pool has no GKE node pool.
    """
    target, replicas, compute_class = w.target, w.replicas, w.compute_class
    group, pool = target.group, target.pool
    cc = p.compute_classes.get(pool.name)  # the pool's ComputeClass, if one names it
    specs = p.pool_specs.get(pool.name, ())  # with that class's node label and taint
    if not specs:
        raise ManifestError(f"node pool {pool.name!r} renders no GKE node pool")
    spec = specs[0]
    parts = None  # a gpudirect pool's: the RxDM sidecar takes its share of the node
    max_replicas = target.max_replicas
    out: dict[str, Any] = {"groupName": group.name}
    if not w.autoscaled:
        out["replicas"] = group.min_replicas if replicas is None else replicas
    out.update(
        minReplicas=group.min_replicas,
        maxReplicas=max_replicas,
        numOfHosts=1,
        rayStartParams=ray_start_params(group),
    )
    container: dict[str, Any] = {
        "name": "ray-worker",
        "image": images[w.image_kind or pool_image_kind(pool)],
    }
    extra_volumes: list[dict[str, Any]] = []
    extra_mounts: list[dict[str, Any]] = []
    if group.spill_dir:
        extra_volumes.append({"name": SPILL_VOLUME, "emptyDir": {}})
        extra_mounts.append({"name": SPILL_VOLUME, "mountPath": group.spill_dir})
    tolerations: list[dict[str, str]] = []
    annotations: dict[str, str] = {}
    sidecars: list[dict[str, Any]] = []
    devices: dict[str, str] = {}
    if isinstance(pool, TpuPool):
        s = target.slice
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
        devices = {catalog.TPU_RESOURCE: str(s.chips_per_host)}
        container.update(
            env=[{"name": k, "value": v} for k, v in env.items()],
            ports=[{"name": n, "containerPort": p} for n, p in ports.items()],
        )
        node_selector = dict(s.node_labels)
        if pool.super_slicing:  # the slice controller picks the cubes: the accelerator only,
            # as the flavor (components.capacity.render) and GKE's samples select; the cubes'
            # nodes carry 4x4x4, a stitched slice's pods ask for its own topology by annotation
            node_selector = {catalog.TPU_ACCELERATOR_LABEL: s.generation.gke_accelerator}
        tolerations = [s.taint.toleration()]
    elif isinstance(pool, GpuPool):
        g = pool.gpu
        env = {
            "NCCL_DEBUG": "WARN",
            "NCCL_SOCKET_IFNAME": "eth0",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        }
        # GPU networking: the pool's GPU NICs in the pod and NCCL's settings for them
        # (components/gpunet/render.py worker_pod_extras); nothing without it. A gpudirect pool
        # adds the RxDM sidecar after the Ray container, its volumes and the Ray container's
        # mounts of them (components/gpunet/gpudirect.py).
        annotations, nccl, parts = worker_pod_extras(pool, target.facts.gpu_net)
        env.update(nccl)
        if parts is not None:
            sidecars.append(parts.sidecar)
            extra_volumes += parts.volumes
            extra_mounts += parts.mounts
        devices = {catalog.GPU_RESOURCE: str(g.count)}
        container.update(env=[{"name": k, "value": v} for k, v in env.items()])
        # The driver-version label too: a pod that selects it gets a driver on a NAP-created node
        # (NAP installs none otherwise) and matches declared pools whose driver GKE installs.
        node_selector = gpu_node_labels(g.type, pool.driver_version)
        tolerations = [catalog.GPU_TAINT.toleration()]
    else:
        assert isinstance(pool, CpuPool)
        node_selector = {catalog.NODE_POOL_LABEL: pool.name}
    # A queued job's cluster gets its nodes from the Kueue flavor it is admitted to (Kueue adds
    # the flavor's nodeLabels to the pods: kueue pkg/podset/podset.go Merge); the pool's
    # ComputeClass would pin it to the class's nodes and leave a DWS flavor's pods Pending.
    if (
        cc is not None and compute_class
    ):  # the pool's class: its nodes, then its fallbacks (computeclass/render.py)
        node_selector = {**node_selector, **class_label(cc)}
        tolerations = [*tolerations, class_taint(cc).toleration()]
    pod = RayPod(  # sized to one node; /dev/shm: the object store, NCCL
        container,
        node_selector=node_selector,
        node=spec,
        group=group,
        reserve=RXDM_RESERVE if parts is not None else None,
        devices=devices,
        tolerations=tolerations,
        extra_volumes=extra_volumes,
        extra_mounts=extra_mounts,
        labels=w.labels,
        annotations=annotations,
        sidecars=sidecars,
    )
    return out, pod


def ray_cluster_spec(
    p: Plan,
    *,
    head: HeadConfig,
    service_account: str,
    worker_groups: Sequence[WorkerGroupInput],
    autoscaling: bool,
    idle_timeout_seconds: int,
    auth_name: str,
    images: Mapping[str, Any],
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A RayCluster ``spec`` (also the RayJob ``rayClusterSpec`` and, later, the RayService
    ``rayClusterConfig``) with its head (:func:`head_group_spec`) and ``worker_groups``
    (:func:`worker_group_spec`), their pods templated in one call
    (:func:`components.raycrs.pod.cluster_pods`, as ``service_account``): every Ray cluster the
    stack creates gets token authentication (:func:`components.kernel.ray.auth_options` with the
    Secret of ``auth_name``), the pod security of
    :func:`~components.raycrs.pod.container_security_context` on every container, the autoscaler
    sidecar included (``autoscalerOptions.securityContext``; KubeRay injects that container into
    the head pod), and ``labels`` on the head's pod template (the worker groups carry their own).

    Raises:
        ManifestError: a worker group's node pool has no GKE node pool, or too small a node.
    """
    workers = [worker_group_spec(p, w, images) for w in worker_groups]
    head_group, head_pod = head_group_spec(
        head, p.accounts[service_account].head, images, autoscaling=autoscaling, labels=labels
    )
    pods = cluster_pods(p, service_account, [head_pod, *(pod for _, pod in workers)])
    head_group["template"] = pods.templates[0]
    for (group, _), template in zip(workers, pods.templates[1:], strict=True):
        group["template"] = template
    spec: dict[str, Any] = {
        "rayVersion": p.context.ray_version,
        "enableInTreeAutoscaling": autoscaling,
        "authOptions": auth_options(auth_name),
    }
    if autoscaling:
        spec["autoscalerOptions"] = {
            "idleTimeoutSeconds": idle_timeout_seconds,
            "upscalingMode": "Default",
            "securityContext": pods.autoscaler_security,
        }
    spec["headGroupSpec"] = head_group
    spec["workerGroupSpecs"] = [group for group, _ in workers]
    return spec


def ray_cluster_manifest(
    p: Plan, rc: RayClusterConfig, images: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayCluster for ``rc`` (namespace :meth:`Context.namespace_of`), its pods
    on ``images`` (kind -> reference, :func:`components.images.render.pod_images`).

    Its worker groups are the plan's records (:meth:`components.plan.plan.Plan.group`); the pod
    template every Ray pod shares is :mod:`components.raycrs.pod`'s, and
    :mod:`components.raycrs.render` puts every object in order.

    Raises:
        ResolveError: a worker group references an undeclared node pool.
    """
    groups = [
        WorkerGroupInput(
            p.group(rc, g),
            autoscaled=rc.autoscaling,
            compute_class=not rc.queue,  # queued: Kueue's flavor places the pods
        )
        for g in rc.worker_groups
    ]  # KubeRay labels these pods ray.io/cluster=<name> itself
    metadata = object_metadata(p.context, rc.name)
    if rc.queue:  # Kueue admits it (components.capacity.render.queue_labels); it owns suspend
        from components.capacity.render import queue_labels

        metadata["labels"].update(queue_labels(rc))
        if rc.autoscaling:  # an autoscaling queued RayCluster is admitted only as an elastic job
            metadata["annotations"] = {**metadata.get("annotations", {}), **ELASTIC_JOB}
    manifest: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "RayCluster",
        "metadata": metadata,
        "spec": ray_cluster_spec(
            p,
            head=rc.head,
            service_account=rc.service_account,
            worker_groups=groups,
            autoscaling=rc.autoscaling,
            idle_timeout_seconds=rc.idle_timeout_seconds,
            images=images,
            auth_name=rc.name,
        ),
    }
    if rc.queue:  # its worker groups' pod sets ask for a topology level (TAS)
        from components.capacity.topology import annotate_worker_groups

        annotate_worker_groups(
            p.pool_specs,
            p.capacity_topology,
            manifest["spec"],
            {g.name: p.group(rc, g).pool for g in rc.worker_groups},
        )
    if rc.upgrade_strategy is not None:  # KubeRay v1.7.0 RayClusterUpgradeStrategy
        manifest["spec"]["upgradeStrategy"] = {"type": rc.upgrade_strategy}
    return manifest
