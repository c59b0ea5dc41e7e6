"""The one resolver from a stack's references to what they land on (node pool, TPU slice or GPU
shape, replicas): :func:`resolve_job`, :func:`resolve_group`, :func:`resolve_service`, called
once per stack by :func:`components.plan.plan.plan`; a broken reference is one
:class:`ResolveError`. Sources: docs/sources.md#plan-resolve
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from components import catalog
from components.config.nodepools import CpuPool, GpuPool, GpuSpec, TpuPool
from components.config.raycrs import JobConfig, RayClusterConfig, WorkerGroupConfig
from components.config.serve import ServiceConfig
from components.config.storage import WorkloadIdentityConfig
from components.kernel.problems import Problem, at, path_colon
from contract.errors import ConfigurationError

if TYPE_CHECKING:
    from components.catalog.gpu_network import GpuNetFamily
    from components.config.cluster import SystemPool
    from components.config.stack import StackConfig

Pool = CpuPool | TpuPool | GpuPool


class ResolveError(ConfigurationError):
    """A reference that names nothing declared, or that is ambiguous.

    ``field`` is the stack-file field (``jobs[train].node_pool``); ``str(error)`` is one line:
    ``<field>: <value> is not <what>; declared: <names>`` (or a sentence saying what to set), the
    line its Problem prints (:func:`components.kernel.problems.path_colon`)::

        jobs[train].node_pool 'x' is not a declared node pool; declared: cpu, tpu-v6e

    A stack is resolved once (:func:`components.plan.plan.plan`) and every layer that follows a
    reference reads the plan's records: the cross-field rules (:mod:`components.stack.rules`),
    the ``ScalingConfig`` (:mod:`components.raycrs.scaling`), the KubeRay manifests
    (:mod:`components.raycrs.render`) and the rendered-stack checks
    (:mod:`components.stack.checks`); so the same mistake is reported once and reads the same
    everywhere.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(path_colon(field.rstrip(":"), f"{field} {message}"))


def reference_problem(e: ResolveError) -> Problem:
    """A broken reference as a :class:`~components.kernel.problems.Problem` of the field that
    names it (the field without a trailing ``:``, the error's line as the message)."""
    return at(e.field.rstrip(":"), str(e))


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_T = TypeVar("_T", bound=_Named)


def _lookup(items: Iterable[_T], name: str, field: str, what: str) -> _T:
    """The item of ``items`` called ``name``, else ResolveError in the one message format."""
    items = list(items)
    for item in items:
        if item.name == name:
            return item
    declared = ", ".join(i.name for i in items) or "none"
    raise ResolveError(field, f"{name!r} is not {what}; declared: {declared}")


# ------------------------------------------------------------------------------------- capacity


def pool_capacity(pool: Pool) -> int:
    """Most replicas a worker group on ``pool`` can have: slices for TPU pools, nodes otherwise."""
    return pool.max_slices if isinstance(pool, TpuPool) else pool.max_nodes


def group_max_replicas(pool: Pool, group: WorkerGroupConfig) -> int:
    """``maxReplicas`` of a worker group: its ``max_replicas``, else the pool's capacity (slices
    for TPU pools, nodes otherwise)."""
    return group.max_replicas if group.max_replicas is not None else pool_capacity(pool)


def nap_needs(system_pool: SystemPool, node_pools: Iterable[Pool]) -> dict[str, int]:
    """Resources the system pool and the declared ``node_pools`` can scale to, keyed by NAP
    resource type.

    TPU and GPU types count chips / GPUs; ``cpu`` counts vCPUs and ``memory`` GB of every node
    the pools (the system pool included) can scale to, from the catalog's machine shapes
    (:func:`components.catalog.machine_shape`; rounded up).
    """
    needs: Counter[str] = Counter()
    nodes: list[tuple[str, int]] = [(system_pool.machine_type, system_pool.max_nodes)]
    for pool in node_pools:
        if isinstance(pool, TpuPool):
            s = pool.slice
            needs[s.generation.gke_accelerator] += s.chips * pool.max_slices
            nodes.append((pool.machine_type, s.hosts * pool.max_slices))
        else:
            if isinstance(pool, GpuPool):
                needs[pool.gpu.type] += pool.gpu.count * pool.max_nodes
            nodes.append((pool.machine_type, pool.max_nodes))
    cpu = memory = 0.0
    for machine_type, count in nodes:
        try:
            shape = catalog.machine_shape(machine_type)
        except catalog.CatalogError:  # refused by the pool's own validator
            continue
        cpu += shape.vcpus * count
        memory += shape.memory_gb * count
    needs["cpu"] += math.ceil(cpu)
    needs["memory"] += math.ceil(memory)
    return dict(needs)


# ------------------------------------------------------------------------------------ lookups


def resolve_pool(cfg: StackConfig, name: str, field: str) -> Pool:
    """The declared node pool ``name``, referenced from stack-file field ``field``.

    Raises:
        ResolveError: ``<field> 'x' is not a declared node pool; declared: a, b``.
    """
    return _lookup(cfg.node_pools, name, field, "a declared node pool")


def resolve_cluster(cfg: StackConfig, name: str, field: str) -> RayClusterConfig:
    """The declared RayCluster ``name``, referenced from ``field``.

    Raises:
        ResolveError: ``<field> 'x' is not a declared ray cluster; declared: a, b``.
    """
    return _lookup(cfg.ray_clusters, name, field, "a declared ray cluster")


def resolve_identity(cfg: StackConfig, name: str, field: str) -> WorkloadIdentityConfig:
    """The declared workload identity ``name``, referenced from ``field``.

    Raises:
        ResolveError: ``<field> 'x' is not a declared workload identity; declared: a, b``.
    """
    return _lookup(cfg.workload_identities, name, field, "a declared workload identity")


# ---------------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class PoolFacts:
    """A node pool's catalog facts, looked up once for a target of the plan (the config models'
    ``slice``, ``gpu.gpu`` and ``gpu_net`` look them up at every read): :func:`pool_facts`.

    Attributes:
        slice: the TPU slice of one replica; None off TPU.
        gpu: the catalog's GPU type (:class:`components.catalog.GpuType`); None off GPU.
        gpu_net: the pool's GPU networking
            (:class:`components.catalog.gpu_network.GpuNetFamily`); None without.
    """

    slice: catalog.TpuSlice | None = None
    gpu: catalog.GpuType | None = None
    gpu_net: GpuNetFamily | None = None


def pool_facts(pool: Pool) -> PoolFacts:
    """The catalog facts of ``pool`` (:class:`PoolFacts`)."""
    if isinstance(pool, TpuPool):
        return PoolFacts(slice=pool.slice)
    if isinstance(pool, GpuPool):
        return PoolFacts(gpu=pool.gpu.gpu, gpu_net=pool.gpu_net)
    return PoolFacts()


class _OnPool:
    """What a target knows from its node pool alone (``pool`` and ``facts`` are set by the
    dataclass; ``facts`` left out is looked up from ``pool``)."""

    pool: Pool
    facts: PoolFacts

    def __post_init__(self) -> None:
        if self.facts is None:
            object.__setattr__(self, "facts", pool_facts(self.pool))

    @property
    def slice(self) -> catalog.TpuSlice | None:
        """The TPU slice of one replica (catalog entry), None for GPU/CPU pools."""
        return self.facts.slice

    @property
    def gpu(self) -> GpuSpec | None:
        """The GPU shape of one node, None for TPU/CPU pools."""
        return self.pool.gpu if isinstance(self.pool, GpuPool) else None


@dataclass(frozen=True)
class GroupTarget(_OnPool):
    """A worker group resolved to its node pool.

    Attributes:
        cluster: the long-lived RayCluster; None for the one group of a job's own RayCluster.
        group: the worker group.
        pool: the declared node pool it runs on.
        field: stack-file path of the group (``ray_clusters[rc].worker_groups[g]``, or
            ``jobs[j]`` for a job's own RayCluster).
        facts: the pool's catalog facts (:func:`pool_facts`).
    """

    cluster: RayClusterConfig | None
    group: WorkerGroupConfig
    pool: Pool
    field: str
    facts: PoolFacts = None  # type: ignore[assignment]  # None: looked up from pool

    @property
    def max_replicas(self) -> int:
        """``maxReplicas``: the group's ``max_replicas``, else the pool's capacity."""
        return group_max_replicas(self.pool, self.group)

    @property
    def capacity(self) -> int:
        """Most replicas the pool holds: slices (TPU) or nodes (GPU/CPU)."""
        return pool_capacity(self.pool)

    @property
    def unit(self) -> str:
        """What one replica is: ``"slices"`` for TPU pools, ``"nodes"`` otherwise."""
        return "slices" if isinstance(self.pool, TpuPool) else "nodes"

    @property
    def hosts(self) -> int:
        """Pods (= hosts) per replica: the slice's hosts for TPU pools, else 1 (``numOfHosts``)."""
        return self.slice.hosts if self.slice is not None else 1


@dataclass(frozen=True)
class JobTarget(_OnPool):
    """Where a job's Ray Train workers run.

    Attributes:
        job: the job.
        cluster: the long-lived RayCluster it is submitted to; None when it brings its own.
        group: the worker group it trains on; for an own RayCluster the one group spanning the
            whole node pool (``min_replicas`` = ``max_replicas`` = the pool's capacity).
        pool: the declared node pool.
        replicas: worker-group replicas the job may use (slices for TPU, nodes otherwise).
        runs_as: the workload identity the job's Ray processes run as: the RayCluster's
            ``service_account`` on a long-lived cluster, else the job's own.
        facts: the pool's catalog facts (:func:`pool_facts`).
    """

    job: JobConfig
    cluster: RayClusterConfig | None
    group: WorkerGroupConfig
    pool: Pool
    replicas: int
    runs_as: str
    facts: PoolFacts = None  # type: ignore[assignment]  # None: looked up from pool

    @property
    def group_target(self) -> GroupTarget:
        """The worker group as a :class:`GroupTarget` (field ``jobs[j]`` for an own RayCluster)."""
        field = (
            f"jobs[{self.job.name}]"
            if self.cluster is None
            else group_field(self.cluster, self.group)
        )
        return GroupTarget(self.cluster, self.group, self.pool, field, self.facts)

    @property
    def own_cluster(self) -> bool:
        """True when the job brings its own RayCluster (``node_pool``)."""
        return self.cluster is None

    @property
    def worker_group(self) -> WorkerGroupConfig | None:
        """The long-lived cluster's worker group; None for an own RayCluster."""
        return None if self.cluster is None else self.group


def group_field(rc: RayClusterConfig, group: WorkerGroupConfig) -> str:
    """Stack-file path of a worker group: ``ray_clusters[rc].worker_groups[g]``."""
    return f"ray_clusters[{rc.name}].worker_groups[{group.name}]"


def resolve_group(cfg: StackConfig, rc: RayClusterConfig, group: WorkerGroupConfig) -> GroupTarget:
    """Resolve a worker group of the long-lived RayCluster ``rc`` to its node pool.

    Raises:
        ResolveError: ``ray_clusters[rc].worker_groups[g].node_pool 'x' is not a declared node
            pool; declared: ...``.
    """
    where = group_field(rc, group)
    pool = resolve_pool(cfg, group.node_pool, f"{where}.node_pool")
    return GroupTarget(cluster=rc, group=group, pool=pool, field=where)


def own_cluster_group(pool: Pool) -> WorkerGroupConfig:
    """The one worker group of a job's own RayCluster: the whole pool, fixed size (no
    autoscaling), named after the pool (cut to the 50-character Kubernetes name limit)."""
    n = pool_capacity(pool)
    return WorkerGroupConfig(
        name=pool.name[:50], node_pool=pool.name, min_replicas=n, max_replicas=n
    )


def resolve_job(cfg: StackConfig, job: JobConfig) -> JobTarget:
    """Resolve the node pool, worker group and replica count a job trains on.

    A job names either ``node_pool`` (it brings its own RayCluster: one group spanning the pool)
    or ``cluster`` (+ ``worker_group``, optional when the cluster has exactly one group).

    Raises:
        ResolveError: naming the field, for an undeclared cluster / worker group / node pool
            (the worker group's own ``node_pool`` included), a cluster job without
            ``worker_group`` on a cluster with several groups, or a job naming neither.
    """
    where = f"jobs[{job.name}]"
    if job.node_pool:
        pool = resolve_pool(cfg, job.node_pool, f"{where}.node_pool")
        if job.super_slice and isinstance(pool, TpuPool):
            # the job's replicas are super-slices of the pool's cubes: every render reads this
            # one slice (an impossible one is the rule's problem: the pool stays as it is)
            pool = pool.stitched(job.super_slice) or pool
        group = own_cluster_group(pool)
        return JobTarget(job, None, group, pool, pool_capacity(pool), job.service_account)
    if not job.cluster:
        raise ResolveError(
            where, "names no target; set cluster (+ worker_group) or node_pool (own RayCluster)"
        )
    rc = resolve_cluster(cfg, job.cluster, f"{where}.cluster")
    if job.worker_group is None:
        if len(rc.worker_groups) != 1:
            names = ", ".join(g.name for g in rc.worker_groups) or "none"
            raise ResolveError(
                f"{where}.worker_group",
                f"is not set and ray cluster {rc.name!r} has {len(rc.worker_groups)} worker "
                f"groups; set one of: {names}",
            )
        group = rc.worker_groups[0]
    else:
        group = _lookup(
            rc.worker_groups,
            job.worker_group,
            f"{where}.worker_group",
            f"a worker group of {rc.name!r}",
        )
    target = resolve_group(cfg, rc, group)
    return JobTarget(
        job, rc, group, target.pool, target.max_replicas, rc.service_account, target.facts
    )


def resolve_service(cfg: StackConfig, svc: ServiceConfig) -> GroupTarget:
    """The one worker group of a service's RayService cluster, resolved to its node pool: named
    after the pool (cut to 50 characters), ``min_workers`` .. ``max_workers`` (default the
    pool's capacity) pods; field ``services[<name>]``.

    Raises:
        ResolveError: ``services[s].node_pool 'x' is not a declared node pool; declared: ...``.
    """
    where = f"services[{svc.name}]"
    pool = resolve_pool(cfg, svc.node_pool, f"{where}.node_pool")
    hi = svc.max_workers if svc.max_workers is not None else pool_capacity(pool)
    group = WorkerGroupConfig(
        name=pool.name[:50],
        node_pool=pool.name,
        min_replicas=min(svc.min_workers, hi),
        max_replicas=hi,
    )
    return GroupTarget(cluster=None, group=group, pool=pool, field=where)
