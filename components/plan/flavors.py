"""The one ResourceFlavor builder (:func:`resource_flavor`): a config pool's GKE node pools (their
:class:`components.plan.nodepools.NodePoolSpec` records) -> its Kueue ResourceFlavor. On the plan
floor, so the plan carries the flavors (:attr:`components.plan.plan.Plan.resource_flavors`, once
per stack); :mod:`components.capacity.render` and :mod:`components.capacity.topology` re-export
its helpers. Sources (Kueue's side): docs/sources.md#capacity-render
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.computeclass import class_label, class_taint

if TYPE_CHECKING:
    from components.plan.nodepools import NodePoolSpec

API_VERSION = "kueue.x-k8s.io/v1beta2"
PART_OF = {"app.kubernetes.io/part-of": "ray-gke", "app.kubernetes.io/managed-by": "pulumi"}

# The Topology of a GPU pool whose machine type exposes the block labels, and those machine types
# (sources: :mod:`components.capacity.topology`'s docstring), from the accelerator records'
# ``topology_blocks`` (:data:`components.catalog.accelerators.ACCELERATORS`).
GPU_TOPOLOGY = "gpu-blocks"
TAS_MACHINE_TYPES = catalog.topology_block_machine_types()
# The Topology of a TPU7x super-slicing pool's cubes (:mod:`components.capacity.superslice`,
# which re-exports it as ``TOPOLOGY``).
SUPERSLICE_TOPOLOGY = "tpu7x-superslice"

# The node labels of an accelerator shape, the same on every priority of a ComputeClass.
CLASS_SHAPE_LABELS = (
    catalog.GPU_ACCELERATOR_LABEL,
    catalog.GPU_DRIVER_LABEL,
    catalog.TPU_ACCELERATOR_LABEL,
    catalog.TPU_TOPOLOGY_LABEL,
)


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    """``metadata`` of a Kueue object: its name, the ray-gke labels, the namespace when given."""
    out: dict[str, Any] = {"name": name, "labels": dict(PART_OF)}
    if namespace:
        out["namespace"] = namespace
    return out


def flavor_labels(specs: Sequence[NodePoolSpec]) -> dict[str, str]:
    """The node labels every GKE node pool of a config pool carries (their intersection)."""
    if not specs:
        return {}
    common = dict(specs[0].labels)
    for s in specs[1:]:
        common = {k: v for k, v in common.items() if s.labels.get(k) == v}
    return dict(sorted(common.items()))


def class_flavor_labels(specs: Sequence[NodePoolSpec], class_name: str) -> dict[str, str]:
    """The node labels of a ComputeClass flavor: ``cloud.google.com/compute-class: <class>``
    plus the accelerator labels every priority's nodes carry (:data:`CLASS_SHAPE_LABELS`: GKE
    sets them on every GPU / TPU node it creates, and every priority has the pool's shape,
    https://cloud.google.com/kubernetes-engine/docs/how-to/gpus,
    https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus). Left out: the
    declared pool's own ``cloud.google.com/gke-nodepool``, ``cloud.google.com/gke-spot`` and its
    stack ``labels:``, which the nodes of the class's other priorities do not carry, so a flavor
    keeping them would pin the admitted pods to the declared pool."""
    keep = {k: v for k, v in flavor_labels(specs).items() if k in CLASS_SHAPE_LABELS}
    return dict(sorted({**keep, **class_label(class_name)}.items()))


def pool_topology(spec: NodePoolSpec) -> str | None:
    """The Topology a node pool's flavor names: :data:`GPU_TOPOLOGY` for a GPU pool of a machine
    type that exposes the block labels, the TPU7x cube topology for a super-slicing pool
    (:mod:`components.capacity.superslice`), else None."""
    if spec.kind == "gpu" and spec.machine_type in TAS_MACHINE_TYPES:
        return GPU_TOPOLOGY
    return SUPERSLICE_TOPOLOGY if spec.super_slicing else None


def flavor_topology(topology: str, specs: Sequence[NodePoolSpec]) -> str | None:
    """``topologyName`` of a flavor over ``specs`` (one config pool's GKE pools); None with
    ``topology`` (``capacity.topology``) ``off``."""
    if topology == "off" or not specs:
        return None
    return pool_topology(specs[0])


def _taint(t: catalog.Taint) -> dict[str, str]:
    return {"key": t.key, "value": t.value, "effect": t.effect}


def resource_flavor(
    pool: str, specs: Sequence[NodePoolSpec], compute_class: str | None, topology: str
) -> dict[str, Any]:
    """The ResourceFlavor of config pool ``pool`` (named after the pool) over its GKE node pools
    ``specs`` (:attr:`components.plan.plan.Plan.pool_specs`; ``system``: the system pool).

    ``compute_class``: the ComputeClass naming the pool (the first), if any: then the flavor is a
    class flavor: its ``nodeLabels`` select the class (:func:`class_flavor_labels`) and it
    tolerates the class's taint, so Kueue admits a pod set on it and adds
    ``cloud.google.com/compute-class: <class>`` and the toleration to the pods (kueue v0.19.2
    ``pkg/podset/podset.go`` ``Merge``); GKE then places them by the class's priorities: the
    declared pool, then its fallbacks
    (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes:
    pods select a class with the ``cloud.google.com/compute-class`` node selector).
    ``topology``: ``capacity.topology`` (:func:`flavor_topology`).

    Raises:
        KeyError: ``specs`` is empty (no such pool).
    """
    if not specs:
        raise KeyError(pool)
    labels = (
        flavor_labels(specs) if compute_class is None else class_flavor_labels(specs, compute_class)
    )
    if specs[0].super_slicing:  # the slice controller picks the cubes: select the accelerator
        labels = {catalog.TPU_ACCELERATOR_LABEL: labels[catalog.TPU_ACCELERATOR_LABEL]}
    spec: dict[str, Any] = {"nodeLabels": labels}
    name = flavor_topology(topology, specs)
    if name:  # Topology Aware Scheduling (components.capacity.topology)
        spec["topologyName"] = name
    taints = specs[0].node_taints
    if taints:
        spec["nodeTaints"] = [_taint(t) for t in taints]
    tolerations = []
    if specs[0].queued:
        tolerations.append(catalog.QUEUED_TAINT.toleration())
    if compute_class is not None:
        tolerations.append(class_taint(compute_class).toleration())
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": meta(pool),
        "spec": spec,
    }
