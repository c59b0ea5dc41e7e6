"""Pure node-pool builder: stack config -> the GKE node pools it declares (no Pulumi resources).

One :class:`NodePoolSpec` per GKE node pool. Multi-host TPU slices get one GKE node pool per
slice (``<pool>-0``, ``<pool>-1``, ...) with ``node count = hosts``, COMPACT placement and
``tpu_topology``, scaling atomically between 0 and ``hosts`` nodes; single-host TPU slices get one
pool of 0..``max_slices`` nodes without ``tpu_topology``
(https://cloud.google.com/kubernetes-engine/docs/how-to/tpus). The node labels listed are the ones
GKE itself puts on the nodes, so the scheduling check can match worker groups against them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from components import catalog
from components.spec import CpuPool, GpuPool, StackConfig, SystemPool, TpuPool


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
        tpu_topology / placement_policy: set for multi-host TPU slices only.
        accelerator_type / accelerator_count: GPU ``guest_accelerators`` (GPU pools only).
        capacity: rough allocatable resources per node: ``cpu`` (cores), ``memory`` (GiB),
            ``google.com/tpu``, ``nvidia.com/gpu``.
        spot / reservation: provisioning.
        gvnic: the Google Virtual NIC; on for GPU pools, whose multi-node NCCL traffic GKE's
            GPU networking guidance runs over gVNIC
            (https://cloud.google.com/kubernetes-engine/docs/how-to/using-gvnic,
            https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx).
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
    accelerator_type: str | None = None
    accelerator_count: int = 0
    driver_version: str | None = None
    capacity: dict[str, float] = field(default_factory=dict)
    spot: bool = False
    reservation: str | None = None
    disk_size_gb: int = 100
    gvnic: bool = False
    queued: bool = False
    flex_start: bool = False
    max_run_duration: str | None = None

    @property
    def node_taints(self) -> list[catalog.Taint]:
        """Every taint the nodes carry: :attr:`taints` (set in the node config) plus the
        ``cloud.google.com/gke-queued`` taint GKE itself puts on queued-provisioning nodes
        ([GKE-DWS-QUEUED] in :mod:`components.catalog`)."""
        return [*self.taints, catalog.QUEUED_TAINT] if self.queued else list(self.taints)


def dws_fields(pool: Any) -> dict[str, Any]:
    """The Dynamic Workload Scheduler fields of a spec from the pool's ``provisioning``:
    ``queued`` (flex-start with queued provisioning), ``flex_start`` (both ``queued`` and
    ``flex-start``) and ``max_run_duration`` in seconds (``"86400s"``) as GKE's NodeConfig
    ``maxRunDuration`` wants it ([GKE-DWS-QUEUED], [GKE-FLEX-START] in :mod:`components.catalog`)."""
    provisioning = getattr(pool, "provisioning", "on-demand")
    if provisioning not in ("queued", "flex-start"):
        return {}
    from components.capacity.model import duration_seconds

    run = getattr(pool, "max_run_duration", None)
    return {
        "queued": provisioning == "queued",
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


def _base_labels(cfg: StackConfig, name: str, spot: bool, extra: dict[str, str]) -> dict[str, str]:
    labels = {catalog.NODE_POOL_LABEL: name, **extra}
    if spot:
        labels[catalog.SPOT_LABEL] = "true"
    return labels


def _cpu_like(cfg: StackConfig, pool: CpuPool | SystemPool, name: str, kind: str) -> NodePoolSpec:
    shape = catalog.machine_shape(pool.machine_type)
    capacity = allocatable(shape.vcpus, shape.memory_gb)
    spot = pool.spot
    labels = dict(getattr(pool, "labels", {}))
    return NodePoolSpec(
        name=name,
        pool=name,
        kind=kind,
        machine_type=pool.machine_type,
        zones=list(cfg.zones if isinstance(pool, SystemPool) else cfg.pool_zones(pool)),
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
        labels=_base_labels(cfg, name, spot, labels),
        capacity=capacity,
        spot=spot,
        reservation=getattr(pool, "reservation", None),
        disk_size_gb=pool.disk_size_gb,
        **dws_fields(pool),
    )


def tpu_host_capacity(s: catalog.TpuSlice) -> dict[str, float]:
    """Allocatable ``cpu``/``memory`` and ``google.com/tpu`` chips of one host of slice ``s``."""
    gen = s.generation
    return {
        **allocatable(gen.host_vcpus[s.chips_per_host], gen.host_memory_gb[s.chips_per_host]),
        catalog.TPU_RESOURCE: float(s.chips_per_host),
    }


def _tpu(cfg: StackConfig, pool: TpuPool) -> list[NodePoolSpec]:
    s = pool.slice
    capacity = tpu_host_capacity(s)
    zones = cfg.pool_zones(pool)[:1]  # a slice lives in one zone
    common = {
        "pool": pool.name,
        "kind": "tpu",
        "machine_type": s.machine_type,
        "zones": zones,
        "taints": [s.taint],
        "capacity": capacity,
        "spot": pool.spot,
        "reservation": pool.reservation,
        "disk_size_gb": pool.disk_size_gb,
        **dws_fields(pool),
    }
    if not s.multi_host:
        return [
            NodePoolSpec(
                name=pool.name,
                min_nodes=pool.min_slices,
                max_nodes=pool.max_slices,
                labels=_base_labels(cfg, pool.name, pool.spot, {**pool.labels, **s.node_labels}),
                **common,
            )
        ]
    specs = []
    for i in range(pool.max_slices):
        name = f"{pool.name}-{i}"
        specs.append(
            NodePoolSpec(
                name=name,
                min_nodes=s.hosts if i < pool.min_slices else 0,
                max_nodes=s.hosts,
                labels=_base_labels(cfg, name, pool.spot, {**pool.labels, **s.node_labels}),
                tpu_topology=s.topology,
                placement_policy="COMPACT",
                **common,
            )
        )
    return specs


def gpu_node_labels(gpu: str, driver_version: str | None) -> dict[str, str]:
    """Labels GKE puts on a GPU node: the accelerator type, and the driver version when GKE
    installs the driver (:func:`components.catalog.gpu_driver_label`)."""
    labels = {catalog.GPU_ACCELERATOR_LABEL: gpu}
    driver = catalog.gpu_driver_label(driver_version)
    if driver:
        labels[catalog.GPU_DRIVER_LABEL] = driver
    return labels


def _gpu(cfg: StackConfig, pool: GpuPool) -> NodePoolSpec:
    g = pool.gpu
    shape = catalog.machine_shape(pool.machine_type)  # the override's shape, when given
    vcpus, mem = shape.vcpus, shape.memory_gb
    return NodePoolSpec(
        name=pool.name,
        pool=pool.name,
        kind="gpu",
        machine_type=pool.machine_type,
        zones=cfg.pool_zones(pool),
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
        labels=_base_labels(
            cfg,
            pool.name,
            pool.spot,
            {**pool.labels, **gpu_node_labels(g.type, pool.driver_version)},
        ),
        taints=[catalog.GPU_TAINT],
        accelerator_type=g.type,
        accelerator_count=g.count,
        driver_version=pool.driver_version,
        capacity={**allocatable(vcpus, mem), catalog.GPU_RESOURCE: float(g.count)},
        spot=pool.spot,
        reservation=pool.reservation,
        disk_size_gb=pool.disk_size_gb,
        gvnic=True,
        **dws_fields(pool),
    )


def _pool_specs(cfg: StackConfig, pool: CpuPool | TpuPool | GpuPool) -> list[NodePoolSpec]:
    """The GKE node pools made from one config pool (several for multi-host TPU slices)."""
    if isinstance(pool, TpuPool):
        return _tpu(cfg, pool)
    if isinstance(pool, GpuPool):
        return [_gpu(cfg, pool)]
    return [_cpu_like(cfg, pool, pool.name, "cpu")]


def node_pool_specs(cfg: StackConfig) -> list[NodePoolSpec]:
    """Every GKE node pool of the stack, the system pool first, in config order."""
    specs = [_cpu_like(cfg, cfg.cluster.system_pool, "system", "system")]
    for pool in cfg.node_pools:
        specs.extend(_pool_specs(cfg, pool))
    return specs


def specs_for_pool(cfg: StackConfig, pool_name: str) -> list[NodePoolSpec]:
    """The GKE node pools made from one config pool (several for multi-host TPU slices);
    ``"system"`` gives the system pool, an unknown name ``[]``."""
    if pool_name == "system":
        return [_cpu_like(cfg, cfg.cluster.system_pool, "system", "system")]
    return [s for p in cfg.node_pools if p.name == pool_name for s in _pool_specs(cfg, p)]


RESERVATION_KEY = "compute.googleapis.com/reservation-name"
# Labels under these prefixes are set by GKE itself (node pool, spot, accelerator, topology);
# GKE rejects or overrides them in node_config.labels.
GKE_LABEL_PREFIXES = ("cloud.google.com/", "kubernetes.io/", "k8s.io/")


def config_labels(spec: NodePoolSpec) -> dict[str, str]:
    """The node labels to put in ``node_config.labels``: the spec's labels minus GKE's own."""
    return {k: v for k, v in sorted(spec.labels.items()) if not k.startswith(GKE_LABEL_PREFIXES)}


def autoscaling(spec: NodePoolSpec) -> dict[str, Any]:
    """Autoscaling bounds: per-zone ``min/max_node_count`` for one zone, ``total_*`` for several.

    Spot pools use location policy ``ANY`` (take capacity wherever it is).
    """
    out: dict[str, Any] = (
        {"min_node_count": spec.min_nodes, "max_node_count": spec.max_nodes}
        if len(spec.zones) <= 1
        else {"total_min_node_count": spec.min_nodes, "total_max_node_count": spec.max_nodes}
    )
    if (spec.spot and spec.kind != "tpu") or spec.flex_start:
        out["location_policy"] = "ANY"  # flex-start / queued: [GKE-DWS-QUEUED]
    return out


def initial_node_count(spec: NodePoolSpec) -> int:
    """Nodes per zone at creation: enough to reach ``min_nodes`` in total."""
    return math.ceil(spec.min_nodes / max(1, len(spec.zones)))
