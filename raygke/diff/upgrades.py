"""What kind of upgrade a RayService change is, in ``raygke diff``'s words: the detail of the
``rolling-restart``, ``upgrade-incremental`` and ``upgrade-new-cluster`` disruptions of
:mod:`raygke.diff.disruption`, with the steps an incremental upgrade takes and the capacity a
second cluster needs while both run. Pure data in, strings out.

KubeRay v1.7.0 (rayservice_controller.go):

* **in-place Serve config update**: a ``serveConfigV2``-only change is sent to the running
  cluster's Serve (``reconcileServe``); nothing new is created.
* **incremental upgrade** (``NewClusterWithIncrementalUpgrade``): a new RayCluster starts at
  Serve ``target_capacity`` 0; each round it rises by ``maxSurgePercent`` (default 100), traffic
  moves to it through the Gateway ``<name>-gateway`` by ``stepSizePercent`` every
  ``intervalSeconds`` until it carries that share, then the old cluster's capacity falls by
  ``maxSurgePercent`` (``reconcileServeTargetCapacity``, ``calculateTrafficRoutedPercent``);
  at 100 / 0 the old cluster is deleted. So ``ceil(100 / maxSurgePercent)`` rounds,
  ``ceil(100 / stepSizePercent)`` traffic steps, at least that many intervals, and at most
  ``maxSurgePercent`` of the service's workers on top of the old cluster's at any time
  (``target_capacity`` scales every deployment's replicas,
  https://docs.ray.io/en/latest/serve/advanced-guides/advanced-autoscaling.html).
* **new cluster** (``NewCluster``): the new RayCluster comes up whole beside the old one (its
  head and at least ``minReplicas`` workers, more as Serve deploys its replicas) and takes all
  the traffic once it serves; then the old one is deleted
  (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice.html).
"""

from __future__ import annotations

import math
from typing import Any

from raygke.diff.disruption import NODEPOOL, Disruption, pool_selects
from raygke.diff.replacement import RAYSERVICE, dig


def _cluster(record: dict[str, Any]) -> dict[str, Any]:
    return dig(record, "inputs", "spec", "rayClusterConfig") or {}


def _pools(group: dict[str, Any], records: list[dict[str, Any]]) -> str:
    sel = dig(group, "template", "spec", "nodeSelector") or {}
    names = sorted(
        str(dig(p, "inputs", "name"))
        for p in records
        if p["type"] == NODEPOOL and pool_selects(p, sel)
    )
    return f"pool {', '.join(names)}" if names else "its node pool"


def _head(cluster: dict[str, Any]) -> str:
    c = (dig(cluster, "headGroupSpec", "template", "spec", "containers") or [{}])[0]
    req = dig(c, "resources", "requests") or dig(c, "resources", "limits") or {}
    size = ", ".join(f"{k} {req[k]}" for k in ("cpu", "memory") if k in req)
    return f"a head pod ({size})" if size else "a head pod"


def _workers(group: dict[str, Any], share: float) -> tuple[int, int]:
    """(at least, at most) worker pods a new cluster holds at ``share`` (0-1) of the capacity."""
    hosts = int(group.get("numOfHosts") or 1)
    lo = max(1, math.ceil(int(group.get("minReplicas") or 0) * share)) * hosts
    hi = max(lo, math.ceil(int(group.get("maxReplicas") or 0) * share) * hosts)
    return lo, hi


def _capacity(record: dict[str, Any], records: list[dict[str, Any]], share: float) -> str:
    cluster = _cluster(record)
    parts = [_head(cluster)]
    for g in cluster.get("workerGroupSpecs") or []:
        lo, hi = _workers(g, share)
        count = f"{lo}" if lo == hi else f"{lo} (up to {hi})"
        parts.append(f"{count} worker pod(s) of group {g.get('groupName')} on {_pools(g, records)}")
    return " and ".join(parts)


def incremental_steps(options: dict[str, Any]) -> str:
    """The rounds and traffic steps of ``clusterUpgradeOptions`` (module docstring)."""
    surge = int(options.get("maxSurgePercent", 100))
    step = int(options.get("stepSizePercent") or 0)
    interval = int(options.get("intervalSeconds") or 0)
    if surge <= 0 or step <= 0:
        return (
            f"maxSurgePercent {surge}, stepSizePercent {step}: no capacity or traffic moves, "
            "the upgrade never completes"
        )
    rounds, steps = math.ceil(100 / surge), math.ceil(100 / step)
    minutes = steps * interval / 60
    return (
        f"the new cluster's Serve target_capacity rises {surge}% per round ({rounds} "
        f"round(s)); traffic moves {step}% every {interval} s through Gateway "
        f"{options.get('gatewayClassName')} ({steps} step(s), at least {minutes:g} min once "
        "the new cluster serves); after each round the old cluster's capacity falls "
        f"{surge}%, and at 0% it is deleted"
    )


def upgrade_detail(d: Disruption, new: dict[str, Any] | None, head: list[dict[str, Any]]) -> str:
    """The detail of a RayService's upgrade disruption ``d`` (others: unchanged): which kind of
    upgrade, its steps and the capacity a second cluster needs while both run."""
    if new is None or new["type"] != RAYSERVICE:
        return d.detail
    if d.effect == "rolling-restart":
        return f"in-place Serve config update: {d.detail}"
    spec = dig(new, "inputs", "spec") or {}
    if d.effect == "upgrade-incremental":
        opts = dig(spec, "upgradeStrategy", "clusterUpgradeOptions") or {}
        surge = int(opts.get("maxSurgePercent", 100)) / 100
        return (
            "incremental upgrade (NewClusterWithIncrementalUpgrade): rayClusterConfig changed; "
            f"{incremental_steps(opts)}; extra capacity while both run: "
            f"{_capacity(new, head, surge)}"
        )
    if d.effect == "upgrade-new-cluster":
        return (
            "new cluster (NewCluster): rayClusterConfig changed; KubeRay brings up a second "
            "RayCluster, moves all traffic when it serves, then deletes the old one; extra "
            f"capacity while both run: {_capacity(new, head, 1.0)}"
        )
    return d.detail


def detailed(
    found: list[Disruption], new: dict[str, Any] | None, head: list[dict[str, Any]]
) -> list[Disruption]:
    """``found`` with each RayService upgrade's detail from :func:`upgrade_detail`."""
    return [Disruption(d.target, d.effect, upgrade_detail(d, new, head)) for d in found]
