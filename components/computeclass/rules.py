"""Cross-field rules of ``compute_classes`` (run with the stack's other rules,
:data:`components.stack.rules.RULES`), each yielding one readable line per problem.

Pure: no Pulumi. The stack model is only a type here (``TYPE_CHECKING``), so
:mod:`components.stack` can import this module.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components import catalog
from components.stack.problems import Problem, at

if TYPE_CHECKING:
    from components.stack.model import StackConfig


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
    from components.nodepools.model import GpuPool, TpuPool

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


def compute_class_pools(cfg: StackConfig) -> Iterable[Problem]:
    """Each class names a declared TPU or GPU pool (a class is per accelerator shape; a CPU
    pool's worker groups select it by ``cloud.google.com/gke-nodepool``, which no fallback node
    carries), class names are unique, and a pool has at most one class (a pod selects one
    ``cloud.google.com/compute-class``,
    https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass)."""
    from components.nodepools.model import GpuPool, TpuPool

    declared = {p.name: p for p in cfg.node_pools}
    for name, n in sorted(Counter(c.name for c in cfg.compute_classes).items()):
        if n > 1:
            yield at(
                "compute_classes",
                f"compute_classes: name {name!r} is used {n} times; names are unique",
            )
    for pool, n in sorted(Counter(c.node_pool for c in cfg.compute_classes).items()):
        if n > 1:
            yield (
                at(
                    "compute_classes",
                    f"compute_classes: node pool {pool!r} has {n} classes; a worker group selects "
                    "one class, so give a pool at most one",
                )
            )
    for c in cfg.compute_classes:
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


def compute_class_shapes_fit_nap(cfg: StackConfig) -> Iterable[Problem]:
    """With Node Auto Provisioning on, every fallback priority's shape fits NAP's cluster-wide
    resource limits: GKE creates the class's fallback node pools within them, so a priority whose
    one slice (or node) needs more ``cpu``, ``memory`` or chips/GPUs than the limit is never
    created (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#resource_limits).
    ``cpu``/``memory`` use the defaults when not given; an accelerator without a limit is set to
    what the declared pools need (:func:`components.stack.nap_needs`), which covers the pool's own
    shape."""
    if not cfg.nap.enabled:
        return
    from components.stack.resolve import nap_needs

    limits = {**nap_needs(cfg), **cfg.nap.effective_limits}
    declared = {p.name: p for p in cfg.node_pools}
    for c in cfg.compute_classes:
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


def compute_class_pools_not_kueue_flavors(cfg: StackConfig) -> Iterable[Problem]:
    """A ComputeClass's pool is neither a ``provisioning: queued`` (DWS) pool nor a flavor of a
    Kueue ClusterQueue: the two place the same pods in ways that cannot both hold.

    * A queued pool's nodes come only from a ProvisioningRequest that Kueue creates for an
      admitted workload ([GKE-DWS-QUEUED], :data:`components.catalog.DWS_QUEUED_DOC`); a class
      on it makes GKE create other nodes (its fallback priorities) for pods that DWS was to
      serve, outside the request and outside Kueue's quota.
    * A pool that is a class's first priority carries the class's node label and taint
      ``cloud.google.com/compute-class=<class>:NoSchedule`` (:mod:`components.nodepools.render`),
      so its ResourceFlavor carries them too (:func:`components.capacity.render.resource_flavor`).
      Kueue admits a pod set on a flavor only when the pods tolerate the flavor's taints
      (kueue v0.19.2 ``pkg/scheduler/flavorassigner/flavorassigner.go``
      ``checkFlavorForPodSets``), and on admission it adds the flavor's ``nodeLabels`` to the
      pods' node selector (``pkg/podset/podset.go`` ``Merge``): the queued pods either never
      fit the flavor (a queued job's own cluster leaves the class out,
      :func:`components.raycrs.render.worker_group_spec` ``compute_class=False``), or, selecting
      the class, are pinned to the declared pool's own labels (``cloud.google.com/gke-nodepool``)
      and never land on the nodes GKE creates for the fallback priorities - while a pod set
      that selects the class but is admitted on another flavor (a DWS pool) waits forever for
      nodes with the class label, which DWS nodes lack
      (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes:
      a pod that selects a class runs only on that class's nodes).

    What to do, in the message: queue through a pool without a class (a ``queued`` pool of the
    same shape), or keep the class for unqueued pods and drop its pool from the queue."""
    from components.nodepools.model import GpuPool, TpuPool

    declared = {p.name: p for p in cfg.node_pools}
    flavors: dict[str, list[str]] = {}
    for q in cfg.capacity.cluster_queues:
        for f in q.flavors:
            flavors.setdefault(f.pool, []).append(q.name)
    for c in cfg.compute_classes:
        pool = declared.get(c.node_pool)
        if not isinstance(pool, TpuPool | GpuPool):
            continue  # compute_class_pools reports it
        if pool.provisioning == "queued":
            yield at(
                f"compute_classes[{c.name}].node_pool",
                f"compute_classes[{c.name}]: node pool {pool.name!r} has provisioning: queued; "
                "its nodes come only from the ProvisioningRequest Kueue creates for an admitted "
                f"job ({catalog.DWS_QUEUED_DOC}), and class {c.name!r} would make GKE create "
                f"other nodes for the same pods: put the class on a pool that is not queued, or "
                "remove it",
            )
        for q in flavors.get(pool.name, []):
            yield at(
                f"capacity.cluster_queues[{q}].flavors",
                f"capacity.cluster_queues[{q}].flavors: pool {pool.name!r} is the node pool of "
                f"ComputeClass {c.name!r}; its ResourceFlavor carries the class's taint "
                f"cloud.google.com/compute-class={c.name}:NoSchedule and the pool's own labels, "
                "so Kueue either never admits queued pods on it or pins them to the pool, where "
                f"the class's fallbacks ({', '.join(c.fallback) or 'none'}) never serve them "
                "(kueue pkg/scheduler/flavorassigner/flavorassigner.go, pkg/podset/podset.go): "
                f"remove {pool.name!r} from the queue's flavors (queued jobs get this shape "
                f"through a provisioning: queued pool), or remove class {c.name!r}",
            )
