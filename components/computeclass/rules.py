"""Cross-field rules of ``compute_classes`` (run with the stack's other rules,
:data:`components.stack.rules.RULES`), each yielding one readable line per problem.

Each rule is handed what it reads, by its parameters' names
(:func:`components.plan.plan.rule_inputs`): ``p`` the stack's Plan, any other name that stack
block. Pure: no Pulumi.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components import catalog
from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig, NapConfig
    from components.config.computeclass import ComputeClassConfig
    from components.plan.plan import Plan
    from components.plan.resolve import Pool


@dataclass(frozen=True)
class Shape:
    """What one scaling unit of a class's shape takes: a TPU slice (``hosts`` nodes) or one GPU
    node, in NAP resource-limit terms (https://cloud.google.com/kubernetes-engine/docs/how-to/
    node-auto-provisioning#resource_limits: ``cpu`` vCPUs, ``memory`` GB, accelerators by type).

    Attributes:
        label: ``v6e 4x4 slice`` / ``8 x nvidia-h100-80gb (a3-highgpu-8g)``.
        needs: NAP resource type -> amount one unit takes.
    """

    label: str
    needs: dict[str, int]


def pool_shape(pool: object) -> Shape | None:
    """The :class:`Shape` of a TPU or GPU pool of the stack model; None for a CPU pool."""
    from components.config.nodepools import GpuPool, TpuPool

    if isinstance(pool, TpuPool):
        s = pool.slice
        m = catalog.machine_shape(s.machine_type)
        return Shape(
            f"TPU {s.generation.name} {s.topology} slice ({s.hosts} x {s.machine_type})",
            {
                "cpu": math.ceil(m.vcpus * s.hosts),
                "memory": math.ceil(m.memory_gb * s.hosts),
                s.generation.gke_accelerator: s.chips,
            },
        )
    if isinstance(pool, GpuPool):
        m = catalog.machine_shape(pool.machine_type)
        return Shape(
            f"{pool.gpu.count} x {pool.gpu.type} ({pool.machine_type})",
            {
                "cpu": math.ceil(m.vcpus),
                "memory": math.ceil(m.memory_gb),
                pool.gpu.type: pool.gpu.count,
            },
        )
    return None


def compute_class_pools(compute_classes: list[ComputeClassConfig], p: Plan) -> Iterable[Problem]:
    """Each class names a declared TPU or GPU pool (a class is per accelerator shape; a CPU
    pool's worker groups select it by ``cloud.google.com/gke-nodepool``, which no fallback node
    carries), class names are unique, and a pool has at most one class (a pod selects one
    ``cloud.google.com/compute-class``,
    https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass)."""
    from components.config.nodepools import GpuPool, TpuPool

    declared = p.pools
    for name, n in sorted(Counter(c.name for c in compute_classes).items()):
        if n > 1:
            yield at(
                "compute_classes",
                f"compute_classes: name {name!r} is used {n} times; names are unique",
            )
    for pool, n in sorted(Counter(c.node_pool for c in compute_classes).items()):
        if n > 1:
            yield (
                at(
                    "compute_classes",
                    f"compute_classes: node pool {pool!r} has {n} classes; a worker group selects "
                    "one class, so give a pool at most one",
                )
            )
    for c in compute_classes:
        pool = declared.get(c.node_pool)
        if pool is None:
            yield (
                at(
                    f"compute_classes[{c.name}].node_pool",
                    f"compute_classes[{c.name}].node_pool {c.node_pool!r} is not a declared node "
                    f"pool; declared: {', '.join(declared) or 'none'}",
                )
            )
        elif not isinstance(pool, TpuPool | GpuPool):
            yield (
                at(
                    f"compute_classes[{c.name}].node_pool",
                    f"compute_classes[{c.name}].node_pool {c.node_pool!r} is a CPU pool; compute "
                    "classes here are per accelerator shape (a tpu: or gpu: pool)",
                )
            )


def compute_class_shapes_fit_nap(
    compute_classes: list[ComputeClassConfig],
    nap: NapConfig,
    cluster: ClusterConfig,
    node_pools: list[Pool],
    p: Plan,
) -> Iterable[Problem]:
    """With Node Auto Provisioning on, every fallback priority's shape fits NAP's cluster-wide
    resource limits: GKE creates the class's fallback node pools within them, so a priority whose
    one slice (or node) needs more ``cpu``, ``memory`` or chips/GPUs than the limit is never
    created (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#resource_limits).
    ``cpu``/``memory`` use the defaults when not given; an accelerator without a limit is set to
    what the declared pools need (:func:`components.plan.resolve.nap_needs`), which covers the pool's own
    shape."""
    if not nap.enabled:
        return
    from components.plan.resolve import nap_needs

    limits = {**nap_needs(cluster.system_pool, node_pools), **nap.effective_limits}
    declared = p.pools
    for c in compute_classes:
        shape = pool_shape(declared.get(c.node_pool))
        if shape is None:
            continue
        for priority in c.fallback:
            for key, need in shape.needs.items():
                have = limits.get(key, 0)
                if need > have:
                    yield (
                        at(
                            f"compute_classes[{c.name}]",
                            f"compute_classes[{c.name}]: the {priority} priority's {shape.label} "
                            f"needs {key} {need}, above nap.resource_limits[{key}] {have}; GKE "
                            f"never creates it: raise the limit to at least {need} or drop the "
                            "priority",
                        )
                    )


def compute_class_pools_not_queued(
    compute_classes: list[ComputeClassConfig], p: Plan
) -> Iterable[Problem]:
    """A ComputeClass's pool is not a ``provisioning: queued`` (DWS queued provisioning) pool.

    A queued pool's nodes come only from a ProvisioningRequest that Kueue creates for an
    admitted workload ([GKE-DWS-QUEUED], :data:`components.catalog.DWS_QUEUED_DOC`: the node
    pool is created with ``--enable-queued-provisioning``, or node auto-provisioning creates one
    for the request); a ComputeClass has no queued-provisioning priority: its ``flexStart``
    priority is flex-start VMs without queueing, node by node
    (https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass,
    ``priorities[].flexStart``). A class on a queued pool would make GKE create other nodes (its
    fallback priorities) for pods that DWS was to serve, outside the request.

    A class's pool may be a Kueue flavor: its ResourceFlavor selects the class
    (``cloud.google.com/compute-class``) instead of the pool
    (:func:`components.capacity.render.resource_flavor`), so pods admitted on it land on the
    pool or on the nodes GKE creates for the class's fallbacks, DWS flex-start VMs included.
    Queued provisioning for the same shape is a separate ``queued`` pool and flavor of the queue."""
    from components.config.nodepools import GpuPool, TpuPool

    for c in compute_classes:
        pool = p.pools.get(c.node_pool)
        if not isinstance(pool, TpuPool | GpuPool):
            continue  # compute_class_pools reports it
        if pool.provisioning == "queued":
            yield at(
                f"compute_classes[{c.name}].node_pool",
                f"compute_classes[{c.name}]: node pool {pool.name!r} has provisioning: queued; "
                "its nodes come only from the ProvisioningRequest Kueue creates for an admitted "
                f"job ({catalog.DWS_QUEUED_DOC}), and a ComputeClass has no queued-provisioning "
                f"priority, so class {c.name!r} would make GKE create other nodes for the same "
                "pods: put the class on the on-demand pool of that shape (a queue may list both), "
                "or remove it",
            )


def compute_class_flex_start_min_gke_version(
    compute_classes: list[ComputeClassConfig], cluster: ClusterConfig, p: Plan
) -> Iterable[Problem]:
    """A class with ``flex-start`` in ``fallback`` needs ``cluster.min_master_version`` at least
    GKE's flex-start minimum for its pool's accelerators (``FLEX_START_MIN_GKE_VERSION`` in
    :mod:`components.catalog`, [GKE-FLEX-START]: GPUs 1.32.2-gke.1652000, TPUs
    1.33.0-gke.1712000). GKE states these as the cluster requirement for flex-start as a whole
    ("To use flex-start in GKE, your cluster must meet the following requirements",
    https://cloud.google.com/kubernetes-engine/docs/concepts/provisioning-model), and names
    custom ComputeClasses as one of the ways a workload requests flex-start capacity ("directly
    through the workload specification, or through an orchestration tool such as custom compute
    classes or Kueue", https://cloud.google.com/kubernetes-engine/docs/concepts/dws, zh-CN copy
    read in this session); no page gives a separate minimum for the ComputeClass
    ``priorities[].flexStart`` field, so the flex-start minimum applies to it. Custom
    ComputeClasses themselves need GKE Standard 1.30.3-gke.1451000 or later
    (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes),
    below every version GKE offers (``GKE_OFFERED_MINORS``), so that is not checked. Unset
    ``min_master_version``: the release channel's default, not checked."""
    from components.config.nodepools import GpuPool, TpuPool

    have = cluster.min_master_version
    if not have:
        return
    for c in compute_classes:
        if "flex-start" not in c.fallback:
            continue
        pool = p.pools.get(c.node_pool)
        kind = "tpu" if isinstance(pool, TpuPool) else "gpu" if isinstance(pool, GpuPool) else None
        if kind is None:
            continue  # compute_class_pools reports it
        need = catalog.FLEX_START_MIN_GKE_VERSION[kind]
        if catalog.parse_gke_version(have) < catalog.parse_gke_version(need):
            yield at(
                "cluster.min_master_version",
                f"compute_classes[{c.name}]: the flex-start priority needs GKE {need} or later "
                f"for {kind.upper()}s ({catalog.DWS_FLEX_DOC}); cluster.min_master_version is "
                f"{have}: raise it or drop flex-start from fallback",
            )


# A ComputeClass fallback priority -> the capability of catalog.capabilities it needs.
FALLBACK_CAPABILITY = {
    "flex-start": "flex-start",
    "spot": "spot",
    "reservation": "reservations",
}


def compute_class_fallback_capabilities(
    compute_classes: list[ComputeClassConfig], p: Plan
) -> Iterable[Problem]:
    """Each ``fallback`` priority of a class is offered for its pool's machine series, by the
    same table a node pool's ``provisioning`` is checked with
    (:func:`components.catalog.capability_problem`, :mod:`components.catalog.capabilities`): a
    ``flex-start`` fallback on an A4X (GB200) or G4 pool is refused as a flex-start pool of that
    shape is, and on a multi-host TPU slice too (a ``flexStart`` priority is flex-start without
    queueing, single-host TPU slices only: the table's sources)."""
    from components.config.nodepools import GpuPool, TpuPool

    for c in compute_classes:
        pool = p.pools.get(c.node_pool)
        if not isinstance(pool, (TpuPool, GpuPool)):
            continue
        multi = isinstance(pool, TpuPool) and pool.slice.multi_host
        for fb in c.fallback:
            need = FALLBACK_CAPABILITY.get(fb)
            why = need and catalog.capability_problem(pool.machine_type, need, multi)
            if why:
                yield at(
                    f"compute_classes[{c.name}].fallback",
                    f"compute_classes[{c.name}].fallback: {fb} on node pool {pool.name!r} "
                    f"({pool.machine_type}): {why}",
                )
