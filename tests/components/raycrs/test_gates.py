"""Issue 22 item 6: the offline checks see what the cluster stores (CRD defaults applied, nulls
pruned, ``generateName`` expanded) and the gated KubeRay rules use the installed operator's
feature gates."""

from __future__ import annotations

import copy

from components.config.stack import StackConfig
from components.raycrs.crd import apply_defaults, crd_schema, server_view, validate_manifest
from components.raycrs.gates import gate_problems, installed_gates
from components.raycrs.render import render_manifests
from components.stack.checks import check_manifests
from tests.helpers import WORKING_DIR, stack


def _raycluster(cfg: StackConfig) -> dict:
    (rc,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayCluster"]
    return rc


def test_omitted_fields_get_their_crd_defaults_only_under_present_parents() -> None:
    schema = crd_schema("RayCluster")
    body = {"spec": {"workerGroupSpecs": [{"groupName": "g", "template": {}}]}}
    stored = apply_defaults(body, schema)
    (g,) = stored["spec"]["workerGroupSpecs"]
    # KubeRay v1.7.0 ray.io_rayclusters.yaml defaults
    assert (g["replicas"], g["minReplicas"], g["maxReplicas"], g["numOfHosts"]) == (
        0,
        0,
        2147483647,
        1,
    )
    assert "headGroupSpec" not in stored["spec"]  # no parent, no default
    assert body["spec"]["workerGroupSpecs"][0] == {"groupName": "g", "template": {}}  # a copy


def test_an_autoscaled_group_without_replicas_is_stored_with_the_default() -> None:
    rc = _raycluster(stack("prod"))
    assert all("replicas" not in g for g in rc["spec"]["workerGroupSpecs"])
    stored = server_view(rc)
    assert all(g["replicas"] == 0 for g in stored["spec"]["workerGroupSpecs"])
    assert validate_manifest(rc) == []


def test_nulls_are_pruned_before_defaulting_and_validation() -> None:
    rc = _raycluster(stack("prod"))
    bad = copy.deepcopy(rc)
    bad["spec"]["workerGroupSpecs"][0]["numOfHosts"] = None
    assert server_view(bad)["spec"]["workerGroupSpecs"][0]["numOfHosts"] == 1
    assert validate_manifest(bad) == []  # the API server prunes the null, then defaults it
    wrong = copy.deepcopy(rc)
    wrong["spec"]["workerGroupSpecs"][0]["numOfHosts"] = "two"
    assert any("numOfHosts" in p and "integer" in p for p in validate_manifest(wrong))


def test_generate_name_gives_the_stored_name() -> None:
    rc = _raycluster(stack("prod"))
    gen = copy.deepcopy(rc)
    del gen["metadata"]["name"]
    gen["metadata"]["generateName"] = "burst-"
    assert server_view(gen)["metadata"]["name"] == "burst-xxxxx"


def test_installed_gates_follow_the_chart_version_and_values() -> None:
    dev = stack("dev")  # helm, chart 1.7.0
    gates, source = installed_gates(dev.kuberay, dev.services)
    assert gates["RayJobDeletionPolicy"] is True and gates["RayClusterNetworkPolicy"] is False
    assert gates["RayServiceIncrementalUpgrade"] is True and "chart 1.7.0" in source
    old = dev.model_copy(
        update={"kuberay": dev.kuberay.model_copy(update={"chart_version": "1.6.2"})}
    )
    assert installed_gates(old.kuberay, old.services)[0]["RayServiceIncrementalUpgrade"] is False
    prod = stack("prod")
    _, source = installed_gates(prod.kuberay, prod.services)
    assert "GKE Ray add-on" in source and "assumed" in source


def test_gated_fields_are_refused_when_the_gate_is_off() -> None:
    rc = _raycluster(stack("prod"))
    gated = copy.deepcopy(rc)
    gated["spec"]["networkPolicy"] = {"mode": "DenyAll"}
    gated["spec"]["workerGroupSpecs"][0]["suspend"] = True
    dev = stack("dev")
    gates, source = installed_gates(dev.kuberay, dev.services)
    (line,) = gate_problems(gated, gates, source)
    assert line.startswith("RayCluster training: spec.networkPolicy needs the ")
    assert "RayClusterNetworkPolicy feature gate, off in kuberay-operator chart 1.7.0" in line
    no_policy = {**gates, "RayJobDeletionPolicy": False}
    lines = gate_problems(gated, no_policy)
    assert any("workerGroupSpecs[0].suspend needs the RayJobDeletionPolicy" in x for x in lines)
    assert gate_problems(rc, gates) == []  # the shipped render uses no gated field


def test_check_manifests_reports_a_gated_rayservice_upgrade() -> None:
    cfg = stack("prod")
    old = cfg.model_copy(
        update={"kuberay": cfg.kuberay.model_copy(update={"chart_version": "1.6.2"})}
    )
    (svc,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayService"]
    svc = copy.deepcopy(svc)
    svc["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade"}
    lines = [x for x in check_manifests(old, [svc]) if "feature gate" in x]
    assert len(lines) == 1 and "RayServiceIncrementalUpgrade" in lines[0]
    assert "GKE Ray add-on" in lines[0]
