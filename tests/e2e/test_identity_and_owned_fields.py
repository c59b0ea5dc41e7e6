"""Issue 22 items 1 and 2: the Kubernetes provider's identity survives CA, endpoint and
credential changes; fields the cluster owns (autoscaled worker ``replicas``, node counts) are
left to it."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from raygke import mocks as rmocks
from raygke.diff import disruption as dis
from raygke.diff.compare import compare
from raygke.diff.formats import disruption_summary
from raygke.diff.replacement import K8S_PROVIDER
from raygke.diff.review_flags import provider_flags
from tests.e2e.day2 import render, stack_data

K8S = ("kubernetes:", "pulumi:providers:kubernetes")
RAY_CLUSTERS = (dis.RAYCLUSTER, dis.RAYSERVICE)


def _provider(records: list[dict[str, Any]]) -> dict[str, Any]:
    (p,) = [r for r in records if r["type"] == K8S_PROVIDER]
    return p


@pytest.mark.parametrize(
    ("stack", "prefix"),
    [("prod", "gke/ray-gke-prod/us-east5/ray-prod/"), ("dev", "gke/")],
)
def test_resources_json_shows_the_provider_identity(base_render, stack, prefix) -> None:
    ident = _provider(base_render[stack])["inputs"]["clusterIdentifier"]
    assert ident.startswith(prefix) and len(ident.rsplit("/", 1)[1]) == 12
    assert provider_flags(_provider(base_render[stack])) == []


def test_ca_and_endpoint_rotation_replaces_no_kubernetes_resource(base_render, monkeypatch) -> None:
    """The cloud side changes (new CA, new IP endpoint, new DNS endpoint host): the kubeconfig
    changes, the identity does not, so nothing Kubernetes is replaced and nothing stops."""
    rotated = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnew\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(rmocks, "_fake_ca", lambda seed: rotated.decode())
    monkeypatch.setattr(rmocks, "_ip", lambda seed: "34.1.2.3")
    head = render("prod", stack_data("prod"))
    base = base_render["prod"]
    assert (
        _provider(head)["inputs"]["clusterIdentifier"]
        == _provider(base)["inputs"]["clusterIdentifier"]
    )
    plan = compare(base, head, "prod")
    assert [c for c in plan.changes if c.type.startswith(K8S) and c.op != "update"] == []
    assert not plan.disruptive()
    assert disruption_summary(plan) == "Disruption: none (no running work stops or restarts)"


def test_a_new_cluster_identity_replaces_every_kubernetes_object(base_render) -> None:
    """The negative control: renaming the cluster (a new GKE cluster) changes the identity, so the
    provider and every object it manages are replaced, and the diff says what stops."""
    data = copy.deepcopy(stack_data("prod"))
    data["cluster"]["name"] = "ray-prod-2"
    data["cluster"]["deletion_protection"] = False
    head = render("prod", data)
    plan = compare(base_render["prod"], head, "prod")
    by = {c.name: c for c in plan.changes}
    assert by["kuberay-k8s"].op == "replace"
    assert "clusterIdentifier" in by["kuberay-k8s"].reasons[0]
    managed = [
        r["name"]
        for r in head
        if (r.get("options") or {}).get("provider") == "pulumi:providers:kubernetes::kuberay-k8s"
    ]
    assert len(managed) > 10
    for name in managed:
        assert by[name].op == "replace", name
        assert "recreated: its provider kuberay-k8s is replaced" in by[name].reasons
    assert by["ray-rayjob-train-lm-jax-v6e"].rerun
    effects = {(d["target"], d["effect"]) for c in plan.changes for d in c.disruption}
    assert ("RayCluster ray/training", "deleted") in effects
    assert ("RayJob ray/train-lm-jax-v6e", "re-run") in effects
    assert ("cluster ray-prod", "deleted") in effects


def test_a_provider_without_identity_is_flagged() -> None:
    rec = {"type": K8S_PROVIDER, "name": "k8s", "inputs": {"kubeconfig": "[secret]"}}
    (flag,) = provider_flags(rec)
    assert "no clusterIdentifier" in flag and "CA rotation" in flag


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_no_autoscaled_worker_group_sets_replicas(base_render, stack) -> None:
    seen = 0
    for r in base_render[stack]:
        if r["type"] not in RAY_CLUSTERS:
            continue
        spec = r["inputs"]["spec"]
        cluster = spec.get("rayClusterConfig", spec)
        assert cluster["enableInTreeAutoscaling"] is True
        for g in cluster["workerGroupSpecs"]:
            assert "replicas" not in g, (r["name"], g["groupName"])
            assert g["minReplicas"] <= g["maxReplicas"]
            seen += 1
        assert dis.autoscaler_owned_paths(r) == []
    assert seen >= 1
    # a job's own cluster is made once per run: a fixed-size one keeps its count (nothing
    # scales it); an elastic job's (slices {min, max}) starts at min and the autoscaler grows it
    for r in base_render[stack]:
        own = r["type"] == dis.RAYJOB and r["inputs"]["spec"].get("rayClusterSpec")
        if own:
            for g in own["workerGroupSpecs"]:
                assert "replicas" in g, (r["name"], g["groupName"])
                if own["enableInTreeAutoscaling"]:
                    assert g["replicas"] == g["minReplicas"] < g["maxReplicas"]


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else k))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _apply_conflicts(applied: dict[str, Any], live: dict[str, Any], others: set[str]) -> list:
    """Server-side apply's conflict rule: a field in the applied config, with a value other than
    the live one, owned by another manager
    (https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts)."""
    a = _leaves(applied)
    return sorted(p for p in a if p in others and live.get(p) != a[p])


def test_a_live_scale_up_gives_no_diff_and_no_conflict(base_render) -> None:
    """The autoscaler scales every group of prod's RayCluster up (it owns
    ``workerGroupSpecs[i].replicas``); the next `pulumi up` of the same config plans nothing and
    its apply config holds none of the autoscaler's fields. The render before this change
    (``replicas: 0`` on autoscaled groups) conflicts and shows a scale-down."""
    base = base_render["prod"]
    (rc,) = [r for r in base if r["type"] == dis.RAYCLUSTER]
    live = _leaves({"spec": rc["inputs"]["spec"]})
    owned = set()
    for i, _ in enumerate(rc["inputs"]["spec"]["workerGroupSpecs"]):
        live[f"spec.workerGroupSpecs[{i}].replicas"] = 5
        owned.add(f"spec.workerGroupSpecs[{i}].replicas")
    assert _apply_conflicts({"spec": rc["inputs"]["spec"]}, live, owned) == []
    assert compare(base, base, "prod").changes == []

    old = copy.deepcopy(rc)
    for g in old["inputs"]["spec"]["workerGroupSpecs"]:
        g["replicas"] = 0
    assert len(_apply_conflicts({"spec": old["inputs"]["spec"]}, live, owned)) == 3
    plan = compare([rc], [old], "prod")
    (c,) = plan.changes
    assert [d["effect"] for d in c.disruption] == ["scaled-down"]
    assert "kuberay#4149" in c.disruption[0]["detail"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_node_counts_stay_with_the_cluster_autoscaler(base_render, stack) -> None:
    pools = [r for r in base_render[stack] if r["type"] == dis.NODEPOOL]
    assert pools
    for p in pools:
        assert "nodeCount" not in p["inputs"]
        assert "initialNodeCount" in p["options"]["ignore_changes"]
        assert p["inputs"]["autoscaling"]
