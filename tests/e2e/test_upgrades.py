"""Issue 22 item 4: upgrades that hold - a Ray version bump on the long-lived RayCluster, a
KubeRay chart upgrade between the carried versions (CRDs first), a GKE minor bump with the
accelerator pools' upgrade settings, and a RayService upgrade that needs a second cluster
(capacity checked, refused with the reason when the pool leaves no room)."""

from __future__ import annotations

import copy

from raygke.diff import disruption as dis
from raygke.diff.compare import compare
from tests.e2e.day2 import plan_disruption, plan_ops, render, stack_data


def _by_name(records: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in records}


def test_ray_bump_on_the_long_lived_cluster_recreates_it_under_recreate(
    base_render, ray_261_locked
) -> None:
    data = copy.deepcopy(stack_data("prod"))
    data["ray"]["version"] = "2.61.0"
    head = render("prod", data)
    (rc,) = [r for r in head if r["type"] == dis.RAYCLUSTER]
    assert rc["inputs"]["spec"]["upgradeStrategy"] == {"type": "Recreate"}
    assert rc["inputs"]["spec"]["rayVersion"] == "2.61.0"
    plan = compare(base_render["prod"], head, "prod")
    assert plan_ops(plan)["ray-raycluster-training"] == "update"
    effects = plan_disruption(plan)
    assert ("RayCluster ray/training", "recreated") in effects
    # since issue 21 no prod RayJob runs on ``training`` (each brings its own cluster through
    # Kueue): nothing is interrupted there, and every job re-runs on the new Ray version
    assert not {e for e in effects if e[1] == "interrupted"}
    assert ("RayJob ray/train-lm-jax-v6e", "re-run") in effects
    # prod's lm sits behind a gateway: it upgrades incrementally (defaults 2026-12-08), in
    # rounds of its max surge through KubeRay's Gateway; the NewCluster path is checked below
    assert ("RayService ray/lm", "upgrade-incremental") in effects
    assert ("RayService ray/lm", "upgrade-new-cluster") not in effects
    (svc,) = [c for c in plan.changes if c.type == dis.RAYSERVICE]
    (detail,) = [d["detail"] for d in svc.disruption]
    assert "rises 34% per round (3 round(s))" in detail and "gke-l7-rilb" in detail


def _new_cluster(data: dict) -> dict:
    """``data`` with prod's lm upgraded with NewCluster (its incremental options dropped)."""
    out = copy.deepcopy(data)
    svc = out["services"][0]
    svc["upgrade_strategy"] = "NewCluster"
    svc.pop("incremental_upgrade", None)
    return out


def test_kuberay_chart_upgrade_applies_the_crds_first(base_render) -> None:
    data = copy.deepcopy(stack_data("dev"))
    data["kuberay"]["chart_version"] = "1.6.2"
    old = render("dev", data)
    new = base_render["dev"]  # 1.7.0
    plan = compare(old, new, "dev")
    assert plan_ops(plan) == {
        "kuberay-crd-rayclusters": "update",
        "kuberay-crd-rayjobs": "update",
        "kuberay-crd-rayservices": "update",
        "kuberay-operator": "update",
    }
    op = _by_name(new)["kuberay-operator"]
    assert op["inputs"]["version"] == "1.7.0" and op["inputs"]["skipCrds"] is True
    crds = {f"{r['type']}::{r['name']}" for r in new if r["type"] == dis.CRD}
    assert len(crds) == 3 and crds <= set(op["options"]["depends_on"])
    # the upgraded CRDs are taken over from Helm's field manager (patchForce), not recreated
    for r in new:
        if r["type"] == dis.CRD:
            assert r["inputs"]["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
    assert plan_disruption(plan) == {("KubeRay operator (kuberay-operator)", "restarted")}


def test_accelerator_pools_upgrade_without_spare_capacity_and_stream_images(base_render) -> None:
    pools = [r for r in base_render["prod"] if r["type"] == dis.NODEPOOL]
    for p in pools:
        accel = dis._is_tpu(p) or p["inputs"]["nodeConfig"].get("guestAccelerators")
        settings = p["inputs"].get("upgradeSettings")
        gcfs = p["inputs"]["nodeConfig"].get("gcfsConfig")
        if accel:
            assert settings == {"maxSurge": 0, "maxUnavailable": 1, "strategy": "SURGE"}, p["name"]
            assert gcfs == {"enabled": True}, p["name"]
        else:
            assert settings is None and gcfs is None, p["name"]
    # 2 on-demand slices + 2 DWS slices (tpu-v6e-4x4-dws, issue 21) + h100 + h100-dws + l4-serve
    assert sum(1 for p in pools if p["inputs"].get("upgradeSettings")) == 7


def test_gke_minor_bump_drains_the_pools(base_render) -> None:
    data = copy.deepcopy(stack_data("prod"))
    data["cluster"].update(release_channel="REGULAR", min_master_version="1.36")
    plan = compare(base_render["prod"], render("prod", data), "prod")
    assert plan_ops(plan) == {"cluster-gke": "update"}
    (d,) = plan.changes[0].disruption
    assert d["effect"] == "drained" and "maintenance window" in d["detail"]


def test_rayservice_upgrade_without_room_for_a_second_cluster_is_refused(base_render) -> None:
    """prod's lm service may hold 3 of the l4-serve pool's 4 nodes: a new cluster fits. At 4
    workers the old cluster can hold the whole pool, so the NewCluster upgrade is flagged
    blocked. (prod's lm upgrades incrementally, needing a round's surge only: as shipped the
    same head change is an incremental upgrade that fits; the NewCluster cases set the
    strategy.)"""
    head = {"cpu": "4", "memory": "16Gi"}
    data = copy.deepcopy(stack_data("prod"))
    data["services"][0]["head"] = head
    shipped = compare(base_render["prod"], render("prod", data), "prod")
    (svc,) = [c for c in shipped.changes if c.type == dis.RAYSERVICE]
    assert [d["effect"] for d in svc.disruption] == ["upgrade-incremental"]
    assert not [f for f in svc.flags if f.startswith("blocked")]

    data = _new_cluster(stack_data("prod"))
    before = render("prod", data)
    data["services"][0]["head"] = head
    fits = compare(before, render("prod", data), "prod")
    (svc,) = [c for c in fits.changes if c.type == dis.RAYSERVICE]
    assert [d["effect"] for d in svc.disruption] == ["upgrade-new-cluster"]
    assert not [f for f in svc.flags if f.startswith("blocked")]

    full = _new_cluster(stack_data("prod"))
    full["services"][0]["max_workers"] = 4
    full["services"][0]["args"]["max_replicas"] = 4
    before = render("prod", full)
    full["services"][0]["head"] = {"cpu": "4", "memory": "16Gi"}
    plan = compare(before, render("prod", full), "prod")
    (svc,) = [c for c in plan.changes if c.type == dis.RAYSERVICE]
    (flag,) = [f for f in svc.flags if f.startswith("blocked")]
    assert "needs 1 more node(s) on pool l4-serve" in flag and "at least 5" in flag
    # a serveConfigV2-only change needs no second cluster: nothing to check
    args = copy.deepcopy(full)
    args["services"][0]["args"]["target_ongoing_requests"] = 32
    plan = compare(render("prod", full), render("prod", args), "prod")
    (svc,) = [c for c in plan.changes if c.type == dis.RAYSERVICE]
    assert svc.flags == [] and [d["effect"] for d in svc.disruption] == ["rolling-restart"]
