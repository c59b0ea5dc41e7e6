"""The one node-pool spec builder (no Pulumi): a declared pool -> its GKE node pools
(:func:`pool_specs`, one :class:`NodePoolSpec` each), and the shapes NAP may create
(:func:`nap_shapes`). On the plan floor: the plan carries the records
(:attr:`components.plan.plan.Plan.pool_specs`). Sources: docs/sources.md#plan-nodepools
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from components import catalog
from components.config.cluster import NapConfig, SystemPool
from components.config.computeclass import class_label, class_taint
from components.config.nodepools import CpuPool, GpuPool, NodeSettings, TpuPool
from components.plan.context import Context


@dataclass(frozen=True)
class NodePoolSpec:
    """One GKE node pool as the stack declares it.

    Attributes:
        name: GKE node pool name.
        pool: the config pool it comes from (``system`` for the system pool).
        kind: ``cpu`` | ``tpu`` | ``gpu`` | ``system``.
        machine_type: Compute Engine machine type.
        zones: node locations.
        min_nodes / max_nodes: autoscaling bounds, total over ``zones``.
        labels: Kubernetes node labels the nodes carry (GKE's own plus the config's).
        taints: node taints.
        tpu_topology / placement_policy: set for multi-host TPU slices only (no
            ``tpu_topology`` for a workload-policy generation, TPU7x).
        workload_policy: the workload policy of a TPU7x multi-host slice
            (``{"type": "HIGH_THROUGHPUT", "accelerator_topology": "4x4x4"}``, the fields of
            ``gcp.compute.ResourcePolicy(workload_policy=...)``), else None.
        super_slicing: a cube of a TPU7x super-slicing pool (:mod:`components.capacity.superslice`:
            its workload policy provisions only, GKE's slice controller stitches cubes).
        placement_policy_name: name of that resource policy (:func:`workload_policy_name`),
            the node pool's ``placement_policy.policy_name``.
        accelerator_type / accelerator_count: GPU ``guest_accelerators`` (GPU pools only).
        capacity: rough allocatable resources per node: ``cpu`` (cores), ``memory`` (GiB),
            ``google.com/tpu``, ``nvidia.com/gpu``.
        spot / reservation: provisioning.
        config: the declared pool (the system pool's model for ``system``; default settings for
            a NAP shape): what every node pool's nodes share
            (:class:`~components.config.nodepools.NodeSettings`, e.g. ``disk_size_gb``), read by
            the node pool builder as declared, never copied.
        gvnic: the Google Virtual NIC; on for GPU pools, whose multi-node NCCL traffic GKE's
            GPU networking guidance runs over gVNIC
            (https://cloud.google.com/kubernetes-engine/docs/how-to/using-gvnic,
            https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx).
        gpu_networking: the GPUDirect kind of a GPU pool with GPU networking (``tcpx``,
            ``tcpxo``, ``rdma``; :attr:`components.config.nodepools.GpuPool.gpu_net`), else None;
            its extra NICs are :func:`components.gpunet.render.pool_networks`.
    """

    name: str
    pool: str
    kind: str
    machine_type: str
    zones: list[str]
    min_nodes: int
    max_nodes: int
    labels: dict[str, str]
    taints: list[catalog.Taint] = field(default_factory=list)
    tpu_topology: str | None = None
    placement_policy: str | None = None
    workload_policy: dict[str, str] | None = None
    placement_policy_name: str | None = None
    super_slicing: bool = False
    accelerator_type: str | None = None
    accelerator_count: int = 0
    driver_version: str | None = None
    capacity: dict[str, float] = field(default_factory=dict)
    spot: bool = False
    reservation: str | None = None
    config: NodeSettings = field(default_factory=NodeSettings)
    gvnic: bool = False
    queued: bool = False
    flex_start: bool = False
    max_run_duration: str | None = None
    gpu_networking: str | None = None

    @property
    def node_taints(self) -> list[catalog.Taint]:
        """Every taint the nodes carry: :attr:`taints` (set in the node config) plus the
        ``cloud.google.com/gke-queued`` taint GKE itself puts on queued-provisioning nodes
        ([GKE-DWS-QUEUED] in :mod:`components.catalog`)."""
        return [*self.taints, catalog.QUEUED_TAINT] if self.queued else list(self.taints)


def dws_fields(pool: CpuPool | TpuPool | GpuPool | SystemPool) -> dict[str, Any]:
    """The Dynamic Workload Scheduler fields of a spec from the pool's ``provisioning``:
    ``queued`` (flex-start with queued provisioning), ``flex_start`` (both ``queued`` and
    ``flex-start``) and ``max_run_duration`` in seconds (``"86400s"``) as GKE's NodeConfig
    ``maxRunDuration`` wants it ([GKE-DWS-QUEUED], [GKE-FLEX-START] in :mod:`components.catalog`)."""
    if pool.provisioning not in ("queued", "flex-start"):
        return {}
    from components.config.capacity import duration_seconds

    run = pool.max_run_duration
    return {
        "queued": pool.provisioning == "queued",
        "flex_start": True,
        "max_run_duration": f"{duration_seconds(run)}s" if run else None,
    }


def allocatable(vcpus: float, memory_gb: float) -> dict[str, float]:
    """Approximate allocatable CPU (cores) and memory (GiB) of a node after GKE's reservations
    (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes): about 6% of
    CPU for small nodes falling to ~1%, and roughly 10% of memory plus the eviction threshold; we
    use a flat 94% CPU / 88% memory - 0.1 GiB, which under-estimates large nodes (safe side).
    """
    return {"cpu": round(vcpus * 0.94, 2), "memory": round(memory_gb * 0.88 - 0.1, 2)}


def _base_labels(name: str, spot: bool, extra: dict[str, str]) -> dict[str, str]:
    labels = {catalog.NODE_POOL_LABEL: name, **extra}
    if spot:
        labels[catalog.SPOT_LABEL] = "true"
    return labels


def _spec(
    ctx: Context,
    pool: CpuPool | TpuPool | GpuPool | SystemPool,
    *,
    name: str | None = None,
    node_labels: dict[str, str] | None = None,
    zones: list[str] | None = None,
    **shape: Any,
) -> NodePoolSpec:
    """The one builder of a GKE node pool spec from any kind of pool: what every kind shares
    (the pool's name and zones, its labels over GKE's ``node_labels``, Spot, reservation,
    flex-start, :attr:`NodePoolSpec.config`) from ``pool``; the kind's ``shape`` (machine type,
    bounds, taints, capacity, accelerators) from the caller. ``name``: the GKE node pool's name
    (a multi-host TPU slice's ``<pool>-<i>``), default the pool's; ``zones`` default its own, else
    the stack's."""
    name = name or pool.name
    return NodePoolSpec(
        name=name,
        pool=pool.name,
        zones=list(zones or pool.zones or ctx.zones),
        labels=_base_labels(name, pool.spot, {**pool.labels, **(node_labels or {})}),
        spot=pool.spot,
        reservation=pool.reservation,
        config=pool,
        **dws_fields(pool),
        **shape,
    )


def _cpu_like(ctx: Context, pool: CpuPool | SystemPool, kind: str) -> NodePoolSpec:
    shape = catalog.machine_shape(pool.machine_type)
    return _spec(
        ctx,
        pool,
        kind=kind,
        machine_type=pool.machine_type,
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
        capacity=allocatable(shape.vcpus, shape.memory_gb),
    )


def tpu_host_capacity(s: catalog.TpuSlice) -> dict[str, float]:
    """Allocatable ``cpu``/``memory`` and ``google.com/tpu`` chips of one host of slice ``s``."""
    gen = s.generation
    return {
        **allocatable(gen.host_vcpus[s.chips_per_host], gen.host_memory_gb[s.chips_per_host]),
        catalog.TPU_RESOURCE: float(s.chips_per_host),
    }


RESOURCE_POLICY_NAME_MAX = 63  # Compute Engine resource names: RFC 1035, 1-63 characters


# The workload policy mode of a super-slicing cube: provision the cube, GKE's slice controller
# forms the slice (xpk src/xpk/core/nodepool.py --accelerator-topology-mode=PROVISION_ONLY;
# components.capacity.superslice).
PROVISION_ONLY = "PROVISION_ONLY"


def workload_policy_name(cluster: str, gke_pool: str) -> str:
    """Name of the workload-policy resource policy of GKE node pool ``gke_pool``:
    ``<cluster>-<pool>-wp``; a longer one is cut with a stable hash so it stays within 63
    characters (https://cloud.google.com/compute/docs/naming-resources). Resource policies are
    regional and per project, so the cluster name keeps two stacks in one project apart."""
    name = f"{cluster}-{gke_pool}-wp"
    if len(name) > RESOURCE_POLICY_NAME_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: RESOURCE_POLICY_NAME_MAX - 12].rstrip('-')}-{digest}-wp"
    return name


def _tpu(ctx: Context, pool: TpuPool) -> list[NodePoolSpec]:
    s = pool.slice
    common: dict[str, Any] = {
        "kind": "tpu",
        "machine_type": s.machine_type,
        "zones": list(pool.zones or ctx.zones)[:1],  # a slice lives in one zone
        "node_labels": dict(s.node_labels),
        "taints": [s.taint],
        "capacity": tpu_host_capacity(s),
    }
    if not s.multi_host:
        return [_spec(ctx, pool, min_nodes=pool.min_slices, max_nodes=pool.max_slices, **common)]
    specs = []
    for i in range(pool.max_slices):
        name = f"{pool.name}-{i}"
        policy = s.workload_policy
        if policy and pool.super_slicing:  # the cube is provisioned, the slice controller stitches
            policy = {**policy, "accelerator_topology_mode": PROVISION_ONLY}
        specs.append(
            _spec(
                ctx,
                pool,
                name=name,
                min_nodes=s.hosts if i < pool.min_slices else 0,
                max_nodes=s.hosts,
                tpu_topology=None if policy else s.topology,
                placement_policy="COMPACT",
                workload_policy=policy,
                placement_policy_name=workload_policy_name(ctx.cluster, name) if policy else None,
                super_slicing=pool.super_slicing,
                **common,
            )
        )
    return specs


def gpu_node_labels(gpu: str, driver_version: str | None) -> dict[str, str]:
    """Labels GKE puts on a GPU node: the accelerator type, the driver version when GKE
    installs the driver (:func:`components.catalog.gpu_driver_label`), and ``kubernetes.io/arch``
    for a GPU type on Arm hosts (``arm64``, A4X): GKE schedules a pod onto Arm nodes only when it
    selects that label, and then adds the toleration of the ``kubernetes.io/arch=arm64:NoSchedule``
    taint it puts on every Arm node itself
    (https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment)."""
    labels = {catalog.GPU_ACCELERATOR_LABEL: gpu}
    driver = catalog.gpu_driver_label(driver_version)
    if driver:
        labels[catalog.GPU_DRIVER_LABEL] = driver
    arch = catalog.GPU_TYPES[gpu].arch if gpu in catalog.GPU_TYPES else "amd64"
    if arch != "amd64":
        labels[catalog.ARCH_LABEL] = arch
    return labels


def _gpu(ctx: Context, pool: GpuPool) -> NodePoolSpec:
    g = pool.gpu
    shape = catalog.machine_shape(pool.machine_type)  # the override's shape, when given
    return _spec(
        ctx,
        pool,
        kind="gpu",
        machine_type=pool.machine_type,
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
        node_labels=gpu_node_labels(g.type, pool.driver_version),
        taints=[catalog.GPU_TAINT],
        accelerator_type=g.type,
        accelerator_count=g.count,
        driver_version=pool.driver_version,
        capacity={
            **allocatable(shape.vcpus, shape.memory_gb),
            catalog.GPU_RESOURCE: float(g.count),
        },
        gvnic=True,
        gpu_networking=pool.gpu_net.kind if pool.gpu_net else None,
    )


def pool_specs(
    ctx: Context, pool: CpuPool | TpuPool | GpuPool, compute_class: str | None = None
) -> list[NodePoolSpec]:
    """The GKE node pools made from one declared pool (a record of the stack's plan,
    :attr:`components.plan.plan.Plan.pools`; several for multi-host TPU slices) in the stack's
    ``ctx`` (zones, cluster name). The pools of the ``compute_classes`` entry named
    ``compute_class`` (the one whose ``node_pool`` is this pool) carry its node label and taint
    (:mod:`components.computeclass.render`: they are the class's first priority).

    This module stands on the models and the :class:`~components.plan.context.Context` only
    (the plan floor, ``tests/test_imports.py`` ``FLOORS``), so the plan carries these records
    (:attr:`components.plan.plan.Plan.pool_specs`, once per stack) and every render reads them
    there; :mod:`components.nodepools.render` re-exports it with the node-pool render helpers
    (labels, autoscaling, upgrades)."""
    if isinstance(pool, TpuPool):
        specs = _tpu(ctx, pool)
    elif isinstance(pool, GpuPool):
        specs = [_gpu(ctx, pool)]
    else:
        specs = [_cpu_like(ctx, pool, "cpu")]
    if compute_class is None:
        return specs
    return [
        replace(
            s,
            labels={**s.labels, **class_label(compute_class)},
            taints=[*s.taints, class_taint(compute_class)],
        )
        for s in specs
    ]


def system_pool_spec(ctx: Context, pool: SystemPool) -> NodePoolSpec:
    """The GKE node pool of ``cluster.system_pool`` (named ``system``, in the stack's zones)."""
    return _cpu_like(ctx, pool, "system")


def nap_shapes(nap: NapConfig) -> list[NodePoolSpec]:
    """Node shapes NAP may create (``nap``: the stack's ``nap`` section): every TPU slice
    (generation x topology) and GPU shape (type x count) whose accelerator type has a NAP
    resource limit at least one node's worth; none with NAP off. Not node pools of the stack:
    the scheduling check matches worker groups against them beside the declared pools'."""
    if not nap.enabled:
        return []
    limits = nap.resource_limits
    shapes: list[NodePoolSpec] = []
    for gen in catalog.TPU_GENERATIONS.values():
        for topo in gen.topologies:
            s = catalog.tpu_slice(gen.name, topo)
            if limits.get(gen.gke_accelerator, 0) < s.chips:
                continue
            shapes.append(
                NodePoolSpec(
                    name=f"NAP {gen.gke_accelerator} {topo}",
                    pool="nap",
                    kind="tpu",
                    machine_type=s.machine_type,
                    zones=[],
                    min_nodes=0,
                    max_nodes=s.hosts,
                    labels=dict(s.node_labels),
                    taints=[s.taint],
                    tpu_topology=topo if s.multi_host else None,
                    capacity=tpu_host_capacity(s),
                )
            )
    for g, driver in itertools.product(catalog.GPU_TYPES.values(), ("DEFAULT", "LATEST")):
        # NAP installs the driver version the pod selects (catalog.GPU_DRIVER_LABEL).
        for count, machine in g.machine_types.items():
            if limits.get(g.name, 0) < count:
                continue
            cap = allocatable(g.host_vcpus[count], g.host_memory_gb[count])
            shapes.append(
                NodePoolSpec(
                    name=f"NAP {count}x {g.name} ({driver.lower()} driver)",
                    pool="nap",
                    kind="gpu",
                    machine_type=machine,
                    zones=[],
                    min_nodes=0,
                    max_nodes=1,
                    labels=gpu_node_labels(g.name, driver),
                    taints=[catalog.GPU_TAINT],
                    accelerator_type=g.name,
                    accelerator_count=count,
                    capacity={**cap, catalog.GPU_RESOURCE: float(count)},
                )
            )
    return shapes
