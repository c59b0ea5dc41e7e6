"""RayService ``NewClusterWithIncrementalUpgrade``: the Helm chart values turn on KubeRay's
``RayServiceIncrementalUpgrade`` feature gate, the cluster gets GKE's Gateway API, and the GKE
add-on (whose operator flags GKE sets) is refused."""

from __future__ import annotations

from typing import Any

import pytest

from components.cluster.render import gateway_api_channel
from components.config.kuberay import KUBERAY_CHART_VERSIONS
from components.kernel.base import StackConfigError
from components.kuberay.render import CHART_FEATURE_GATES, feature_gates, helm_values
from components.stack.loader import validate
from tests.helpers import config

INCREMENTAL = {
    "upgrade_strategy": "NewClusterWithIncrementalUpgrade",
    "incremental_upgrade": {"gateway_class_name": "gke-l7-rilb"},
}
IDENTITIES = [
    {"name": "ray-train", "buckets": {"checkpoints": "write", "artifacts": "read"}},
    {"name": "ray-serve", "buckets": {"checkpoints": "read", "artifacts": "read"}},
]


def _data(*services: dict[str, Any], **kuberay: Any) -> dict[str, Any]:
    svcs = [
        {"name": f"lm{i}", "checkpoint": "gs://ray-gke-test-x/ckpt", "node_pool": "l4", **s}
        for i, s in enumerate(services)
    ]
    return config(services=svcs, workload_identities=IDENTITIES, kuberay=kuberay)


def _gates(values: dict[str, Any]) -> dict[str, bool]:
    return {g["name"]: g["enabled"] for g in values["featureGates"]}


@pytest.mark.parametrize("version", KUBERAY_CHART_VERSIONS)
def test_helm_values_enable_the_gate_and_keep_the_charts_other_gates(version: str) -> None:
    cfg = validate(_data({}, INCREMENTAL, chart_version=version))
    gates = _gates(helm_values(cfg.kuberay.chart_version, cfg.services))
    assert gates["RayServiceIncrementalUpgrade"] is True
    # Helm replaces a list value: every other gate of the chart's default list keeps its value.
    defaults = dict(CHART_FEATURE_GATES[version])
    assert set(gates) == set(defaults)
    assert {k: v for k, v in gates.items() if k != "RayServiceIncrementalUpgrade"} == {
        k: v for k, v in defaults.items() if k != "RayServiceIncrementalUpgrade"
    }


def test_v1_6_2_chart_default_has_the_gate_off() -> None:
    # Why the value matters: in chart 1.6.2 the gate is alpha and off by default.
    assert dict(CHART_FEATURE_GATES["1.6.2"])["RayServiceIncrementalUpgrade"] is False
    assert dict(CHART_FEATURE_GATES["1.7.0"])["RayServiceIncrementalUpgrade"] is True


def test_no_feature_gates_value_without_an_incremental_service() -> None:
    for services in ([], [{}], [{"upgrade_strategy": "None"}]):
        cfg = validate(_data(*services))
        assert feature_gates(cfg.kuberay.chart_version, cfg.services) is None
        assert "featureGates" not in helm_values(cfg.kuberay.chart_version, cfg.services)
        assert gateway_api_channel(cfg.services) is None


def test_the_cluster_gets_the_gateway_api_for_an_incremental_service() -> None:
    cfg = validate(_data({}, INCREMENTAL))
    assert gateway_api_channel(cfg.services) == "CHANNEL_STANDARD"


def test_gke_addon_refuses_the_incremental_strategy_in_one_line_where_its_gate_is_off() -> None:
    # the add-on's gates are taken as the chart defaults: off in 1.6.2 (alpha), on in 1.7.0
    with pytest.raises(StackConfigError) as e:
        validate(_data(INCREMENTAL, mode="gke-addon", chart_version="1.6.2"))
    lines = [ln for ln in str(e.value).splitlines() if "upgrade_strategy" in ln]
    assert len(lines) == 1, str(e.value)
    assert "services[lm0].upgrade_strategy: NewClusterWithIncrementalUpgrade" in lines[0]
    assert "RayServiceIncrementalUpgrade feature gate, off by default in KubeRay 1.6.2" in lines[0]
    assert (
        "upgrade_strategy: NewCluster, kuberay.mode: helm, or kuberay.chart_version 1.7.0"
        in (lines[0])
    )
    # The same stack with the default strategy is fine on the add-on, and so is 1.7.0's gate.
    validate(_data({}, mode="gke-addon", chart_version="1.6.2"))
    validate(_data(INCREMENTAL, mode="gke-addon"))
