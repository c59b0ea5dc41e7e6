"""Review flags of ``raygke diff``: what a change risks that its :mod:`raygke.diff.disruption` list
cannot say as an effect on running work, shown as a flag on the change.

* A Kubernetes provider without ``clusterIdentifier`` (:func:`provider_flags`): any kubeconfig
  change replaces it and every object it manages, which an offline render cannot see
  (``Provider.cluster_identifier``, pulumi_kubernetes 4.34.2 ``provider.py``).
* A RayService ``NewCluster`` upgrade without room for its second cluster on the worker groups'
  pools (:func:`upgrade_room`, kuberay#4239).
* A cluster's maintenance exclusions added, removed or changed (:func:`maintenance_flags`): when
  GKE may next upgrade (and so drain) the nodes under a running job
  (:mod:`components.cluster.maintenance`).
"""

from __future__ import annotations

import math
from typing import Any

from raygke.diff.disruption import (
    NODEPOOL,
    Disruption,
    k8s_target,
    pool_selects,
    worker_groups,
)
from raygke.diff.replacement import CLUSTER, K8S_PROVIDER, RAYSERVICE, dig

# --------------------------------------------------------------------------------------- provider


def provider_flags(record: dict[str, Any]) -> list[str]:
    """Review warnings for a Kubernetes provider record without ``clusterIdentifier``."""
    if record["type"] != K8S_PROVIDER or dig(record, "inputs", "clusterIdentifier"):
        return []
    return [
        "no clusterIdentifier: any kubeconfig change (CA rotation, endpoint or credentials) "
        "replaces the provider and every Kubernetes object it manages; the offline render "
        "cannot see it (the kubeconfig is secret)"
    ]


# ----------------------------------------------------------------------- RayService capacity


def pool_max_nodes(pool: dict[str, Any]) -> int:
    """A node pool record's most nodes: ``totalMaxNodeCount``, else ``maxNodeCount`` per zone
    times its zones (https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler)."""
    a = dig(pool, "inputs", "autoscaling") or {}
    if a.get("totalMaxNodeCount") is not None:
        return int(a["totalMaxNodeCount"])
    zones = dig(pool, "inputs", "nodeLocations") or [None]
    return int(a.get("maxNodeCount") or 0) * len(zones)


def upgrade_room(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    head: list[dict[str, Any]],
    surge: int = 100,
    kind: str = "NewCluster",
) -> list[str]:
    """Why a RayService's ``NewCluster`` upgrade (``surge`` 100) or incremental upgrade (``surge``:
    its ``maxSurgePercent``: the new cluster's first round holds that share of the capacity,
    :mod:`raygke.diff.upgrades`) cannot complete, one line per worker group (empty
    when it fits). The new cluster must serve before KubeRay moves traffic and deletes the old
    one (kuberay#4239), so it needs ``minReplicas x numOfHosts`` worker nodes (one worker pod
    per node: :func:`components.raycrs.pod.worker_pod_size`) on the group's pools while
    the old cluster may hold up to its ``maxReplicas x numOfHosts``; the pools' maximum
    (:func:`pool_max_nodes`) must leave that room. A group pinned to its pools by
    ``nodeSelector`` gets no node from NAP."""
    spec = dig(new, "inputs", "spec", "rayClusterConfig") or {}
    old_groups = worker_groups(dig(old, "inputs", "spec", "rayClusterConfig") or {})
    pools = [r for r in head if r["type"] == NODEPOOL]
    out = []
    for g in spec.get("workerGroupSpecs") or []:
        sel = dig(g, "template", "spec", "nodeSelector") or {}
        mine = [p for p in pools if pool_selects(p, sel)]
        if not mine:
            continue
        hosts = int(g.get("numOfHosts") or 1)
        need = max(1, math.ceil(int(g.get("minReplicas") or 0) * surge / 100)) * hosts
        was = old_groups.get(g.get("groupName"), g)
        held = int(was.get("maxReplicas") or 0) * int(was.get("numOfHosts") or 1)
        cap = sum(pool_max_nodes(p) for p in mine)
        if need > cap - held:
            names = ", ".join(sorted(str(dig(p, "inputs", "name")) for p in mine))
            out.append(
                f"blocked: the {kind} upgrade of {k8s_target(new)} needs {need} more "
                f"node(s) on pool {names} (group {g.get('groupName')}: minReplicas x hosts) "
                f"while the old cluster holds up to {held} of its {cap}: the new cluster stays "
                f"pending and the upgrade never completes; raise the pool's max to at least "
                f"{held + need} or lower the service's max_workers (kuberay#4239)"
            )
    return out


def upgrade_flags(
    op: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    disruption: list[Disruption],
    head: list[dict[str, Any]],
) -> list[str]:
    """Review flags of a change's upgrade: a RayService update that brings up a second cluster
    (:func:`upgrade_room`, all at once or an incremental upgrade's first round)."""
    if op != "update" or new is None or new["type"] != RAYSERVICE:
        return []
    if any(d.effect == "upgrade-new-cluster" for d in disruption):
        return upgrade_room(old, new, head)
    if any(d.effect == "upgrade-incremental" for d in disruption):
        opts = dig(new, "inputs", "spec", "upgradeStrategy", "clusterUpgradeOptions") or {}
        surge = int(opts.get("maxSurgePercent", 100))
        return upgrade_room(old, new, head, surge, f"incremental ({surge}% surge)")
    return []


# ------------------------------------------------------------------------ maintenance exclusions

_NODE_SCOPES = ("NO_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES")  # components.cluster.maintenance


def _exclusions(record: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    items = dig(record, "inputs", "maintenancePolicy", "maintenanceExclusions") or []
    return {str(e.get("exclusionName")): e for e in items}


def _describe(e: dict[str, Any]) -> str:
    opts = e.get("exclusionOptions") or {}
    end = e.get("endTime") or (
        "end of support" if opts.get("endTimeBehavior") == "UNTIL_END_OF_SUPPORT" else "?"
    )
    return f"{opts.get('scope', 'NO_UPGRADES')}, {e.get('startTime')} to {end}"


def maintenance_flags(op: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """One line per maintenance exclusion a cluster update adds, removes or changes
    (``maintenancePolicy.maintenanceExclusions``, keyed by ``exclusionName``; an exclusion
    without a scope is ``NO_UPGRADES``, GKE API ``MaintenanceExclusionOptions``). Removing or
    narrowing an exclusion that kept node upgrades away (scope ``NO_UPGRADES`` or
    ``NO_MINOR_OR_NODE_UPGRADES``) says that GKE may drain the nodes of a running job in the
    next maintenance window
    (https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions).
    """
    if op != "update" or new is None or new["type"] != CLUSTER:
        return []
    before, after = _exclusions(old), _exclusions(new)
    out = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        kept_nodes = (
            was is not None
            and (was.get("exclusionOptions") or {}).get("scope", "NO_UPGRADES") in _NODE_SCOPES
        )
        keeps_nodes = (
            now is not None
            and (now.get("exclusionOptions") or {}).get("scope", "NO_UPGRADES") in _NODE_SCOPES
        )
        if now is None:
            line = f"maintenance exclusion {name} removed (was {_describe(was or {})})"
        elif was is None:
            line = f"maintenance exclusion {name} added ({_describe(now)})"
        else:
            line = f"maintenance exclusion {name} changed: {_describe(was)} -> {_describe(now)}"
        if kept_nodes and not keeps_nodes:
            line += (
                ": GKE may upgrade and drain nodes again in the next maintenance window, under "
                "a running job"
            )
        out.append(line)
    return out
