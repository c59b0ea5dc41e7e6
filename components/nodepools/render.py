"""Pure node-pool render: the stack's GKE node pools (no Pulumi resources) and what the node
pool component reads of each (labels, autoscaling, upgrades, image streaming).

The specs themselves (:class:`NodePoolSpec`, one per GKE node pool) are built once per stack by
:mod:`components.plan.nodepools` and carried by the plan
(:attr:`components.plan.plan.Plan.pool_specs`); this module re-exports the builder's names.
"""

from __future__ import annotations

import math
from typing import Any

from components.config.computeclass import COMPUTE_CLASS_LABEL
from components.plan.nodepools import (
    PROVISION_ONLY,
    RESOURCE_POLICY_NAME_MAX,
    NodePoolSpec,
    allocatable,
    dws_fields,
    gpu_node_labels,
    pool_specs,
    system_pool_spec,
    tpu_host_capacity,
    workload_policy_name,
)
from components.plan.plan import Plan

__all__ = [
    "GKE_LABEL_PREFIXES",
    "PROVISION_ONLY",
    "RESERVATION_KEY",
    "RESOURCE_POLICY_NAME_MAX",
    "NodePoolSpec",
    "allocatable",
    "autoscaling",
    "config_labels",
    "dws_fields",
    "gpu_node_labels",
    "image_streaming",
    "initial_node_count",
    "node_pool_specs",
    "pool_specs",
    "system_pool_spec",
    "tpu_host_capacity",
    "upgrade_settings",
    "workload_policy_name",
]


def node_pool_specs(p: Plan) -> list[NodePoolSpec]:
    """Every GKE node pool of the stack of plan ``p``, the system pool first, in config order
    (:attr:`components.plan.plan.Plan.node_pool_specs`)."""
    return list(p.node_pool_specs)


RESERVATION_KEY = "compute.googleapis.com/reservation-name"
# Labels under these prefixes are set by GKE itself (node pool, spot, accelerator, topology);
# GKE rejects or overrides them in node_config.labels.
GKE_LABEL_PREFIXES = ("cloud.google.com/", "kubernetes.io/", "k8s.io/")


def config_labels(spec: NodePoolSpec) -> dict[str, str]:
    """The node labels to put in ``node_config.labels``: the spec's labels minus GKE's own,
    except ``cloud.google.com/compute-class``, which a declared pool of a ComputeClass is given
    (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes)."""
    return {
        k: v
        for k, v in sorted(spec.labels.items())
        if k == COMPUTE_CLASS_LABEL or not k.startswith(GKE_LABEL_PREFIXES)
    }


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


def upgrade_settings(spec: NodePoolSpec) -> dict[str, Any] | None:
    """The pool's node upgrade settings (``upgrade_settings``): for TPU and GPU pools surge
    upgrades with ``max_surge=0, max_unavailable=1`` - a node (or a whole multi-host slice, which
    GKE recreates as one unit) is drained before its replacement is created, so an upgrade needs
    no spare accelerator capacity, which on-demand and reserved TPU/GPU capacity rarely has
    (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge,
    https://cloud.google.com/kubernetes-engine/docs/concepts/tpus). CPU and system pools keep
    GKE's default surge (one extra node, none unavailable): None.
    """
    if spec.kind not in ("tpu", "gpu"):
        return None
    return {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}


def image_streaming(spec: NodePoolSpec) -> bool:
    """Image streaming (``node_config.gcfs_config.enabled``) on accelerator pools: the large
    GPU/TPU Ray images start before they are fully pulled (images from Artifact Registry on
    Container-Optimized OS, the stack's default;
    https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming). Turning it on for
    an existing pool recreates its nodes (``raygke diff`` shows them drained)."""
    return spec.kind in ("tpu", "gpu")


def initial_node_count(spec: NodePoolSpec) -> int:
    """Nodes per zone at creation: enough to reach ``min_nodes`` in total."""
    return math.ceil(spec.min_nodes / max(1, len(spec.zones)))
