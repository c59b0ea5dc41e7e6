"""Kueue's ComponentResource and the DWS node pools under Pulumi mocks (the real program)."""

from __future__ import annotations

import pytest
import yaml

from components.config.capacity import KUEUE_CHART
from tests.components.capacity.common import DWS_POOL, data
from tests.helpers import by_name, of_type, render

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    d = data()
    d["node_pools"][-1] = {**DWS_POOL, "max_run_duration": "2d"}
    return render(d)[0]


def _ref(r: dict) -> str:
    return f"{r['type']}::{r['name']}"


def _kueue(records: list[dict], kind: str) -> list[dict]:
    return [r for r in records if r["type"] == f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}"]


def test_kueue_release_is_pinned_on_the_system_pool_with_ray_integrations(records):
    (release,) = [r for r in of_type(records, RELEASE) if r["inputs"]["chart"] == KUEUE_CHART]
    inputs = release["inputs"]
    assert inputs["version"] == "0.19.2" and inputs["namespace"] == "kueue-system"
    values = inputs["values"]
    assert values["controllerManager"]["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "system"
    }
    manager = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert "ray.io/rayjob" in manager["integrations"]["frameworks"]


def test_install_before_queues_before_rayjobs(records):
    (release,) = [r for r in of_type(records, RELEASE) if r["inputs"]["chart"] == KUEUE_CHART]
    queues = _kueue(records, "ClusterQueue") + _kueue(records, "LocalQueue")
    assert {r["inputs"]["metadata"]["name"] for r in queues} == {"team-a", "team-b"}
    for q in [
        *queues,
        *_kueue(records, "ResourceFlavor"),
        *_kueue(records, "WorkloadPriorityClass"),
    ]:
        assert _ref(release) in q["options"]["depends_on"], q["name"]
    (rayjob,) = of_type(records, "kubernetes:ray.io/v1:RayJob")
    deps = rayjob["options"]["depends_on"]
    assert _ref(release) in deps
    for q in queues:
        assert _ref(q) in deps, q["name"]
    assert rayjob["inputs"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"


def test_workload_priority_class_has_top_level_value(records):
    (wpc,) = _kueue(records, "WorkloadPriorityClass")
    assert wpc["inputs"]["value"] == 1000 and "spec" not in wpc["inputs"]


def test_queued_pool_renders_queued_provisioning_flex_start_and_no_autorepair(records):
    pools = by_name(records, NODE_POOL)
    for name in ("v6e-dws-0", "v6e-dws-1"):
        p = pools[name]
        assert p["queuedProvisioning"] == {"enabled": True}
        assert p["management"]["autoRepair"] is False
        assert p["nodeConfig"]["flexStart"] is True
        assert p["nodeConfig"]["maxRunDuration"] == "172800s"
        assert p["nodeConfig"]["reservationAffinity"] == {
            "consumeReservationType": "NO_RESERVATION"
        }
        assert p["autoscaling"]["locationPolicy"] == "ANY"
        assert p["autoscaling"]["minNodeCount"] == 0 and p["initialNodeCount"] == 0
    on_demand = pools["v6e-0"]
    assert "queuedProvisioning" not in on_demand and on_demand["management"]["autoRepair"] is True
    assert "flexStart" not in on_demand["nodeConfig"]


def test_no_queues_no_kueue():
    from tests.helpers import config

    recs = render(config())[0]
    assert not [r for r in of_type(recs, RELEASE) if r["inputs"]["chart"] == KUEUE_CHART]
    assert not [r for r in recs if "kueue.x-k8s.io" in r["type"]]
