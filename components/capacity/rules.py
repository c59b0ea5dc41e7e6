"""Capacity rules on the stack model: Kueue's rules for queued Ray jobs and the DWS / flex-start
limits, each a one-line problem. :func:`stack_rules` is run by :mod:`components.stack.rules`
with the other rules; the rules on the rendered objects are :mod:`components.capacity.checks`.
The rules and their sources:
docs/sources.md#capacity-rules
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from components import catalog
from components.kernel.base import repeated
from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.capacity import CapacityConfig
    from components.config.cluster import ClusterConfig
    from components.config.computeclass import ComputeClassConfig
    from components.config.kuberay import KubeRayConfig
    from components.config.nodepools import NodePool
    from components.config.raycrs import JobConfig, RayClusterConfig
    from components.plan.plan import Plan

KUEUE_RAYJOB_WEBHOOK = "kueue pkg/controller/jobs/rayjob/rayjob_webhook.go"


# ------------------------------------------------------------------------------- stack rules


def _older(have: str | None, need: str) -> bool:
    return bool(have) and catalog.parse_gke_version(have) < catalog.parse_gke_version(need)  # type: ignore[arg-type]


def pool_problems(node_pools: list[NodePool], cluster: ClusterConfig) -> Iterable[Problem | str]:
    """The ``queued`` / ``flex-start`` limits of each pool (sources in the module docstring), and
    whether its machine series is offered its ``provisioning`` at all: the per-series table
    :mod:`components.catalog.capabilities` (flex-start and queued provisioning exclude A4X and
    G4; flex-start without queueing takes single-host TPU slices only), the table ComputeClass
    fallbacks read too (:func:`components.computeclass.rules.compute_class_fallback_capabilities`)."""
    from components.config.nodepools import GpuPool, TpuPool

    have = cluster.min_master_version
    for pool in node_pools:
        where = f"node_pools[{pool.name}]"
        need_cap = catalog.PROVISIONING_CAPABILITY.get(pool.provisioning)
        if need_cap and isinstance(pool, (TpuPool, GpuPool)):
            multi = isinstance(pool, TpuPool) and pool.slice.multi_host
            why = catalog.capability_problem(pool.machine_type, need_cap, multi)
            if why:
                yield at(
                    f"{where}.provisioning",
                    f"{where}: provisioning {pool.provisioning} on {pool.machine_type}: {why}",
                )
        if pool.provisioning not in ("queued", "flex-start"):
            continue
        kind = "tpu" if isinstance(pool, TpuPool) else "gpu" if isinstance(pool, GpuPool) else None
        if kind is None:
            yield (
                at(
                    f"{where}.provisioning",
                    f"{where}: provisioning {pool.provisioning} is for TPU and GPU pools (Dynamic "
                    f"Workload Scheduler, {catalog.DWS_QUEUED_DOC}); use on-demand or spot for CPUs",
                )
            )
            continue
        if pool.provisioning == "queued":
            need, doc = catalog.QUEUED_MIN_GKE_VERSION[kind], catalog.DWS_QUEUED_DOC
            low = pool.min_slices if isinstance(pool, TpuPool) else pool.min_nodes
            if low:
                yield (
                    at(
                        f"{where}.provisioning",
                        f"{where}: provisioning queued scales from 0 (DWS creates the nodes for an "
                        f"admitted job, {doc}); set {'min_slices' if kind == 'tpu' else 'min_nodes'}: 0",
                    )
                )
        else:  # multi-host TPU slices: the capability table above (catalog.capabilities)
            need, doc = catalog.FLEX_START_MIN_GKE_VERSION[kind], catalog.DWS_FLEX_DOC
        if _older(have, need):
            yield (
                at(
                    f"{where}.provisioning",
                    f"{where}: provisioning {pool.provisioning} needs GKE {need} or later for "
                    f"{kind.upper()}s ({doc}); cluster.min_master_version is {have}",
                )
            )


def queue_reference_problems(
    capacity: CapacityConfig, node_pools: list[NodePool]
) -> Iterable[Problem | str]:
    """Queues, cluster queues, priorities and flavor pools (``node_pools``, and ``system``) name
    declared things; names unique."""
    cap = capacity
    pools = {"system", *(n.name for n in node_pools)}
    cqs = [q.name for q in cap.cluster_queues]
    for kind, names in (
        ("cluster_queues", cqs),
        ("local_queues", [q.name for q in cap.local_queues]),
        ("priority_classes", [p.name for p in cap.priority_classes]),
    ):
        for n in sorted(repeated(names)):
            yield at(f"capacity.{kind}", f"capacity.{kind}: {n!r} is declared twice")
    for q in cap.cluster_queues:
        for f in q.flavors:
            if f.pool not in pools:
                yield (
                    at(
                        f"capacity.cluster_queues[{q.name}].flavors",
                        f"capacity.cluster_queues[{q.name}].flavors: pool {f.pool!r} is not a "
                        f"declared node pool; valid: {', '.join(sorted(pools))}",
                    )
                )
    for lq in cap.local_queues:
        if lq.cluster_queue not in cqs:
            yield (
                at(
                    f"capacity.local_queues[{lq.name}].cluster_queue",
                    f"capacity.local_queues[{lq.name}].cluster_queue {lq.cluster_queue!r} is not "
                    f"declared; declared: {', '.join(cqs) or 'none'}",
                )
            )
    if cap.local_queues and not cap.enabled:
        yield at(
            "capacity.local_queues",
            "capacity.local_queues: declared without cluster_queues (Kueue is not installed)",
        )


def _queue_references(
    where: str, queue: str | None, priority: str | None, local: set[str], prios: set[str]
) -> Iterable[Problem]:
    """The references of a queued object (a job or RayCluster at ``where``): its ``priority`` a
    declared WorkloadPriorityClass and only with a queue, its ``queue`` a declared LocalQueue."""
    if priority and not queue:
        yield at(
            f"{where}.priority",
            f"{where}.priority {priority!r} needs queue: <local queue> (Kueue reads it)",
        )
    elif priority and priority not in prios:
        yield at(
            f"{where}.priority",
            f"{where}.priority {priority!r} is not a capacity.priority_classes entry; "
            f"declared: {', '.join(sorted(prios)) or 'none'}",
        )
    if queue and queue not in local:
        yield at(
            f"{where}.queue",
            f"{where}.queue {queue!r} is not a capacity.local_queues entry; declared: "
            f"{', '.join(sorted(local)) or 'none'}",
        )


def job_problems(
    capacity: CapacityConfig, node_pools: list[NodePool], jobs: list[JobConfig]
) -> Iterable[Problem | str]:
    """Kueue's rules for a queued RayJob and the queue a job on a queued pool needs."""
    cap = capacity
    local = {q.name for q in cap.local_queues}
    prios = {p.name for p in cap.priority_classes}
    queued = {p.name for p in node_pools if p.provisioning == "queued"}
    for job in jobs:
        where = f"jobs[{job.name}]"
        yield from _queue_references(where, job.queue, job.priority, local, prios)
        if not job.queue:
            if job.node_pool in queued:
                yield (
                    at(
                        f"{where}.node_pool",
                        f"{where}: node pool {job.node_pool!r} has provisioning: queued; its nodes "
                        "come only through a ProvisioningRequest that Kueue creates for an admitted "
                        f"job ({catalog.DWS_QUEUED_DOC}): set queue: <local queue>",
                    )
                )
            continue
        if job.cluster:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: queue {job.queue!r} with cluster: {job.cluster}; Kueue refuses a queued "
                    "RayJob on an existing cluster ('a kueue managed job should not use an existing "
                    f"cluster', {KUEUE_RAYJOB_WEBHOOK}): use node_pool: so it brings its own",
                )
            )
        elif not job.shuts_down:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: queue {job.queue!r} with shutdown_after_job_finishes: false; Kueue "
                    "refuses it ('a kueue managed job should delete the cluster after finishing', "
                    f"{KUEUE_RAYJOB_WEBHOOK})",
                )
            )
        if job.suspend:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: suspend: true with queue {job.queue!r}; Kueue owns spec.suspend (it "
                    "suspends the job on create and resumes it on admission, kueue pkg/controller/"
                    "jobframework/defaults.go ApplyDefaultForSuspend): remove suspend",
                )
            )


def flavor_quota_shape_problems(
    p: Plan, capacity: CapacityConfig, compute_classes: list[ComputeClassConfig]
) -> Iterable[Problem]:
    """Each accelerator flavor's quota against the shape and size of the pool behind it.

    Kueue admits on quota alone: it does not look at nodes (kueue v0.19.2
    ``pkg/scheduler/flavorassigner/flavorassigner.go`` fits a pod set to a flavor by the
    ClusterQueue's quota, taints and labels only; https://kueue.sigs.k8s.io/docs/concepts/
    cluster_queue/: "nominalQuota ... the quantity of this resource that is available for
    admission"). So a quota out of step with the pool is one of two silent failures:

    * more ``google.com/tpu`` / ``nvidia.com/gpu`` nominal quota, summed over every cluster queue
      listing the flavor, than the pool can ever hold (``max_slices`` x chips per slice,
      ``max_nodes`` x GPUs per node): Kueue admits workloads whose pods then stay Pending, the
      admitted-but-cannot-fit case;
    * a queue whose nominal plus borrowable quota for the flavor is above 0 but below one
      scaling unit of the pool's shape (a TPU slice's chips: its hosts are admitted together,
      GKE creates them atomically; a GPU node's GPUs): no worker pod set of that pool is ever
      admitted on it, the never-admitted case.

    Every priority of a ComputeClass has its pool's shape (:mod:`components.config.computeclass`),
    so the scaling-unit check of a class flavor covers every priority a pod admitted on it can
    land on. The pool-size check does not apply to a class flavor with fallbacks: past the
    declared pool's ``max_*``, GKE creates nodes for the class's fallback priorities, bounded by
    Node Auto Provisioning's limits (:func:`components.computeclass.rules.
    compute_class_shapes_fit_nap`), not by the pool."""
    from components.capacity.preview import cohort_borrowable
    from components.config.nodepools import GpuPool, TpuPool
    from components.kernel.base import quantity_value

    declared = p.pools
    total: dict[tuple[str, str], float] = {}
    owners: dict[tuple[str, str], list[str]] = {}
    for q in capacity.cluster_queues:
        for f in q.flavors:
            pool = declared.get(f.pool)
            if isinstance(pool, TpuPool):
                res, unit = catalog.TPU_RESOURCE, pool.slice.chips
                shape = f"TPU {pool.slice.generation.name} {pool.slice.topology} slice"
            elif isinstance(pool, GpuPool):
                res, unit = catalog.GPU_RESOURCE, pool.gpu.count
                shape = f"{pool.gpu.count} x {pool.gpu.type} node"
            else:
                continue
            nominal = quantity_value(f.nominal.get(res, "0"))
            total[(f.pool, res)] = total.get((f.pool, res), 0.0) + nominal
            owners.setdefault((f.pool, res), []).append(f"{q.name} {nominal:g}")
            try:
                available = nominal + cohort_borrowable(p, capacity.cluster_queues, q, f.pool, res)
            except KeyError:  # an undeclared flavor pool elsewhere: queue_reference_problems
                continue
            if 0 < available < unit:
                yield at(
                    f"capacity.cluster_queues[{q.name}].flavors[{f.pool}]",
                    f"capacity.cluster_queues[{q.name}].flavors[{f.pool}]: {res} nominal plus "
                    f"borrowable quota is {available:g}, less than one {shape} ({unit}); Kueue "
                    "never admits a worker pod set of this pool on it: give it at least "
                    f"{unit} or 0",
                )
    grows = {c.node_pool for c in compute_classes if c.fallback}
    for (pool_name, res), n in total.items():
        pool = declared[pool_name]
        if pool_name in grows:
            continue  # the class's fallbacks add nodes beyond the pool (docstring)
        if isinstance(pool, TpuPool):
            unit, cap, what = pool.slice.chips, pool.max_slices, "slices"
        else:
            unit, cap, what = pool.gpu.count, pool.max_nodes, "nodes"  # type: ignore[union-attr]
        if n > unit * cap:
            yield at(
                "capacity.cluster_queues",
                f"capacity.cluster_queues: flavor {pool_name!r} has {res} nominal quota "
                f"{n:g} in all ({', '.join(owners[(pool_name, res)])}), more than node pool "
                f"{pool_name!r} can ever hold ({cap} {what} x {unit} = {unit * cap}); Kueue "
                "admits on quota alone, so the jobs admitted beyond it stay Pending: lower "
                f"the quota or raise the pool's max_{what}",
            )


def elastic_problems(
    capacity: CapacityConfig, jobs: list[JobConfig], ray_clusters: list[RayClusterConfig]
) -> Iterable[Problem]:
    """Queued elastic workloads need Kueue's ``ElasticJobsViaWorkloadSlices`` gate
    (``capacity.kueue.elastic_jobs``): a queued job with a ``slices`` range carries the
    elastic-job annotation, and a queued autoscaling RayCluster must be an elastic job (kueue
    v0.19.2 ``pkg/controller/jobs/raycluster/raycluster_webhook.go`` ``validateCreate``); with
    the gate off Kueue refuses the RayCluster and admits the job as one fixed workload, never
    slice by slice (``pkg/workloadslicing/workloadslicing.go`` ``Enabled``).

    An elastic workload on a queued (DWS) flavor is not refused: Kueue v0.19.2 has no such
    check (``pkg/controller/jobframework/validation.go``, the provisioning admission check
    ``pkg/controller/admissionchecks/provisioning/controller.go``, which creates one
    ProvisioningRequest per workload, each slice included), and ``pkg/workloadslicing/
    workloadslicing.go`` ``FindLatestActiveWorkload`` handles a slice whose admission checks
    are still pending."""
    if capacity.kueue.elastic_jobs:
        return
    for job in jobs:
        if job.queue and job.slices is not None and job.slices.elastic:
            yield at(
                f"jobs[{job.name}].slices",
                f"jobs[{job.name}]: slices {{min: {job.slices.min}, max: {job.slices.max}}} "
                f"with queue {job.queue!r} is an elastic Kueue workload, but "
                "capacity.kueue.elastic_jobs is false (Kueue's ElasticJobsViaWorkloadSlices "
                "gate off): set it true, or fixed slices",
            )
    for rc in ray_clusters:
        if rc.queue and rc.autoscaling:
            yield at(
                f"ray_clusters[{rc.name}].queue",
                f"ray_clusters[{rc.name}]: queue {rc.queue!r} with autoscaling; Kueue admits an "
                "autoscaling RayCluster only as an elastic job (kueue pkg/controller/jobs/"
                "raycluster/raycluster_webhook.go), but capacity.kueue.elastic_jobs is false: "
                "set it true, or autoscaling: false",
            )


def ray_cluster_queue_problems(
    capacity: CapacityConfig, node_pools: list[NodePool], ray_clusters: list[RayClusterConfig]
) -> Iterable[Problem]:
    """A queued RayCluster names a declared LocalQueue; its ``priority`` a declared
    WorkloadPriorityClass, and only with a queue; a cluster with a group on a ``queued`` pool
    is queued (only Kueue's ProvisioningRequest gets nodes there, [GKE-DWS-QUEUED])."""
    cap = capacity
    local = {q.name for q in cap.local_queues}
    prios = {p.name for p in cap.priority_classes}
    queued = {p.name for p in node_pools if p.provisioning == "queued"}
    for rc in ray_clusters:
        where = f"ray_clusters[{rc.name}]"
        yield from _queue_references(where, rc.queue, rc.priority, local, prios)
        if not rc.queue:
            for g in rc.worker_groups:
                if g.node_pool in queued:
                    yield at(
                        f"{where}.worker_groups[{g.name}].node_pool",
                        f"{where}.worker_groups[{g.name}]: node pool {g.node_pool!r} has "
                        "provisioning: queued; its nodes come only through a "
                        "ProvisioningRequest that Kueue creates for an admitted workload "
                        f"({catalog.DWS_QUEUED_DOC}): set queue: <local queue> on the cluster",
                    )


def webhook_problems(p: Plan, capacity: CapacityConfig) -> Iterable[Problem]:
    """Kueue's webhooks on the rendered ClusterQueues, Cohorts and ResourceFlavors, each error at
    the stack field behind it (:func:`components.capacity.webhooks.kueue_webhook_problems`)."""
    from components.capacity import webhooks

    yield from webhooks.kueue_webhook_problems(p, capacity)


def kueue_namespace_problems(
    p: Plan, capacity: CapacityConfig, kuberay: KubeRayConfig
) -> Iterable[Problem]:
    """Kueue is not installed in the Ray namespace (``kuberay.namespace``): that namespace has a
    default-deny ingress NetworkPolicy (:func:`components.kuberay.namespace.network_policies`)
    and nothing admits the API server to Kueue's webhook Service (port 9443, v0.19.2
    ``charts/kueue/values.yaml`` ``webhook``), whose validating and mutating webhooks on RayJobs,
    RayClusters and Kueue's own objects have ``failurePolicy: Fail``
    (``pkg/controller/jobs/rayjob/rayjob_webhook.go`` kubebuilder markers), so every create
    would be refused. Refused, as reserved namespaces are (:class:`components.config.capacity.
    KueueConfig`), rather than opened: the KubeRay add-on's model keeps the Ray namespace for Ray
    pods only."""
    cap = capacity
    if cap.enabled and cap.kueue.namespace == kuberay.namespace:
        yield at(
            "capacity.kueue.namespace",
            f"capacity.kueue.namespace {cap.kueue.namespace!r} is the Ray namespace "
            "(kuberay.namespace), whose default-deny ingress policy keeps the API server from "
            "Kueue's webhook (failurePolicy Fail): every RayJob create would be refused; use a "
            "namespace of its own (the default kueue-system)",
        )
    gpudirect = p.context.gpudirect_namespace if cap.enabled else None
    if gpudirect is not None and cap.kueue.namespace == gpudirect:
        yield at(
            "capacity.kueue.namespace",
            f"capacity.kueue.namespace {cap.kueue.namespace!r} is the GPUDirect namespace of the "
            "gpudirect pools' Ray clusters, whose default-deny ingress policy keeps the API "
            "server from Kueue's webhook (failurePolicy Fail) and whose admission policy admits "
            "Ray pods and the RxDM sidecar only; use a namespace of its own (the default "
            "kueue-system)",
            "gpudirect_kueue_namespace",
        )


def stack_rules(
    p: Plan,
    capacity: CapacityConfig,
    node_pools: list[NodePool],
    jobs: list[JobConfig],
    ray_clusters: list[RayClusterConfig],
    compute_classes: list[ComputeClassConfig],
    cluster: ClusterConfig,
    kuberay: KubeRayConfig,
) -> Iterable[Problem]:
    """Every capacity rule on the stack model (Kueue queues, DWS / flex-start pools; each cites
    its Kueue source file or GKE doc in :mod:`components.capacity.rules`): ``p`` the stack's
    Plan, the others its blocks (the stack rule ``capacity_rules``)."""
    yield from pool_problems(node_pools, cluster)
    yield from kueue_namespace_problems(p, capacity, kuberay)
    yield from queue_reference_problems(capacity, node_pools)
    yield from job_problems(capacity, node_pools, jobs)
    yield from ray_cluster_queue_problems(capacity, node_pools, ray_clusters)
    yield from elastic_problems(capacity, jobs, ray_clusters)
    yield from flavor_quota_shape_problems(p, capacity, compute_classes)
    yield from webhook_problems(p, capacity)
