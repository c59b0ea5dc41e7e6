"""What the long-lived Ray clusters keep up: a node pool's floor (issue 50).

A RayService (and a long-lived RayCluster) keeps its head and ``minReplicas`` workers of each
worker group running around the clock, whatever the pool's own autoscaling minimum: prod's
``lm`` service (``min_workers: 1`` on ``l4-serve``, a pool of ``min_nodes: 0``) keeps a
g2-standard-8 with an L4 up. Pure function of the render: each group's pods are placed on the
node pools whose nodes they can schedule on, read from the rendered records alone (the diff's
sides are renders too):

* a pod's ``nodeSelector`` keys that a pool's nodes carry: ``cloud.google.com/gke-nodepool`` (the
  pool's name), ``cloud.google.com/gke-accelerator`` (its GPU type), ``cloud.google.com/gke-spot``,
  the pool's own ``nodeConfig.labels`` (a ComputeClass label among them); a
  ``cloud.google.com/gke-tpu-*`` key matches the TPU pools; ``gke-gpu-driver-version`` (set by
  GKE on every GPU node) is not checked; any other key must be a label of the pool's nodes;
* every ``NoSchedule`` / ``NoExecute`` taint of the pool tolerated by the pod;
* pods per node: the fewest of ``node GPUs // pod GPUs`` and ``machine vCPUs // pod CPUs`` (a
  worker pod is sized to its node, so one; heads of 2 CPUs share a system node), at least one;
  a TPU worker replica is ``numOfHosts`` pods, one per host.

When several pools fit a group, the floor goes on the cheapest (the minimum-scale cost is a lower
bound, and the cluster autoscaler may pick any of them). A pool's cost at minimum scale is then
``max(its minimum, its floor)`` nodes (:class:`raygke.cost.estimate.PoolCost`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from components.catalog import CatalogError, machine_shape, tpu_machine
from contract.quantity import quantity_float

RAY_KINDS = {
    "kubernetes:ray.io/v1:RayService": "RayService",
    "kubernetes:ray.io/v1:RayCluster": "RayCluster",
}
NODE_POOL = "gcp:container/nodePool:NodePool"
_GKE = "cloud.google.com/"
# node labels GKE sets on every node of a fitting pool, not derivable from the render
_SET_BY_GKE = {f"{_GKE}gke-gpu-driver-version"}


@dataclass
class Floor:
    """The nodes a pool keeps up for long-lived Ray clusters, and why (one reason each)."""

    nodes: int = 0
    reasons: list[str] = field(default_factory=list)


def _pool_labels(inputs: dict[str, Any]) -> dict[str, str]:
    nc = inputs.get("nodeConfig") or {}
    labels = {f"{_GKE}gke-nodepool": str(inputs.get("name") or "")}
    for g in nc.get("guestAccelerators") or []:
        labels[f"{_GKE}gke-accelerator"] = str(g.get("type"))
    if nc.get("spot"):
        labels[f"{_GKE}gke-spot"] = "true"
    labels.update({str(k): str(v) for k, v in (nc.get("labels") or {}).items()})
    return labels


def _selects(selector: dict[str, Any], inputs: dict[str, Any]) -> bool:
    labels = _pool_labels(inputs)
    is_tpu = tpu_machine(str((inputs.get("nodeConfig") or {}).get("machineType") or "")) is not None
    for key, value in (selector or {}).items():
        if key.startswith(f"{_GKE}gke-tpu-"):
            if not is_tpu:
                return False
        elif key in _SET_BY_GKE:
            continue
        elif labels.get(key) != str(value):
            return False  # a label the pool's nodes do not carry, or another value
    return True


def _tolerates(tolerations: list[dict[str, Any]], inputs: dict[str, Any]) -> bool:
    for taint in (inputs.get("nodeConfig") or {}).get("taints") or []:
        key, value = taint.get("key"), taint.get("value")
        ok = any(
            (t.get("key") in (None, key))
            and (t.get("operator") == "Exists" or str(t.get("value")) == str(value))
            for t in tolerations or []
        )
        if not ok:
            return False
    return True


def _pods_per_node(pod: dict[str, Any], inputs: dict[str, Any]) -> int:
    """How many such pods one node of the pool holds: by GPUs (node GPUs // pod GPUs) and by
    CPUs (machine vCPUs // pod CPU request); 1 when neither is known."""
    want: dict[str, Any] = {}
    for c in pod.get("containers") or []:
        res = c.get("resources") or {}
        want.update({**(res.get("limits") or {}), **(res.get("requests") or {})})
    nc = inputs.get("nodeConfig") or {}
    fits = []
    gpus = quantity_float(want.get("nvidia.com/gpu", 0))
    node_gpus = sum(int(g.get("count") or 0) for g in nc.get("guestAccelerators") or [])
    if gpus and node_gpus:
        fits.append(int(node_gpus // gpus))
    cpus = quantity_float(want.get("cpu", 0))
    try:
        vcpus = machine_shape(str(nc.get("machineType") or "")).vcpus
    except CatalogError:
        vcpus = 0
    if cpus and vcpus:
        fits.append(int(vcpus // cpus))
    return max(1, min(fits)) if fits else 1


def _groups(record: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """``(group, pods kept up, pod spec)`` of a RayService's / RayCluster's head and workers."""
    spec = (record.get("inputs") or {}).get("spec") or {}
    cluster = spec.get("rayClusterConfig") or spec
    out = []
    head = ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec")
    if head:
        out.append(("head", 1, head))
    for g in cluster.get("workerGroupSpecs") or []:
        pods = int(g.get("minReplicas") or 0) * int(g.get("numOfHosts") or 1)
        if pods and not g.get("suspend"):
            out.append((str(g.get("groupName")), pods, (g.get("template") or {}).get("spec") or {}))
    return out


def floors(records: list[dict[str, Any]], node_hourly: dict[str, float | None]) -> dict[str, Floor]:
    """GKE node pool name -> :class:`Floor` for every RayService and RayCluster of the render;
    ``node_hourly``: pool name -> its node price (the cheapest fitting pool takes a group)."""
    pools = [
        (r.get("inputs") or {}) for r in records if r.get("type") == NODE_POOL and r.get("inputs")
    ]
    out: dict[str, Floor] = {}
    share: dict[str, float] = {}  # nodes' worth of pods per pool
    for r in records:
        kind = RAY_KINDS.get(str(r.get("type")))
        if kind is None:
            continue
        name = ((r.get("inputs") or {}).get("metadata") or {}).get("name") or r.get("name")
        for group, pods, pod in _groups(r):
            fits = [
                p
                for p in pools
                if _selects(pod.get("nodeSelector") or {}, p)
                and _tolerates(pod.get("tolerations") or [], p)
            ]
            if not fits:
                continue
            best = min(fits, key=lambda p: _price_key(node_hourly.get(str(p.get("name")))))
            pool = str(best.get("name"))
            share[pool] = share.get(pool, 0.0) + pods / _pods_per_node(pod, best)
            floor = out.setdefault(pool, Floor())
            what = "head" if group == "head" else f"{pods} {group} worker(s)"
            floor.reasons.append(f"{kind} {name}: {what}")
    for pool, floor in out.items():  # pods of several groups may share a node
        floor.nodes = math.ceil(share[pool] - 1e-9)
    return out


def _price_key(price: float | None) -> float:
    return math.inf if price is None else price
