"""The GPU networking resources under Pulumi mocks: the GPU NIC subnets record VPC Flow Logs
(``network.flow_logs``, sampled at ``gpu_flow_sampling``), the RDMA VPC's do not, and adding the
logs to a stack's existing GPU subnets is an in-place update, never a replacement."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.kernel.base import StackConfigError
from components.stack.loader import stack_data_from_yaml, validate
from raygke.diff.compare import compare
from tests.helpers import ROOT, render

SUBNET = "gcp:compute/subnetwork:Subnetwork"


def _data(name: str, **network: Any) -> dict[str, Any]:
    data = stack_data_from_yaml((ROOT / f"Pulumi.{name}.yaml").read_text())
    data["network"] = {**data.get("network", {}), **network}
    return data


def _subnets(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["name"]: r["inputs"] for r in records if r["type"] == SUBNET}


@pytest.fixture(scope="module")
def scale() -> list[dict[str, Any]]:
    """Pulumi.scale.yaml: 8 TCPXO subnets (A3 Mega), the RDMA pools' gVNIC subnet and the 8
    subnets of the RDMA VPC (A4)."""
    return render(_data("scale"), "scale")[0]


def test_gpu_nic_subnets_log_flows_and_the_rdma_vpcs_do_not(scale) -> None:
    subnets = _subnets(scale)
    gpu = {n: s for n, s in subnets.items() if "-tcpxo-" in n or n.endswith("-gvnic-sub")}
    rdma = {n: s for n, s in subnets.items() if "-rdma-sub-" in n}
    assert (len(gpu), len(rdma)) == (9, 8)
    for name, s in gpu.items():
        assert s["logConfig"] == {
            "aggregationInterval": "INTERVAL_5_SEC",  # network.flow_logs' own
            "flowSampling": 0.1,  # gpu_flow_sampling's default
            "metadata": "INCLUDE_ALL_METADATA",
        }, name
    assert all("logConfig" not in s for s in rdma.values())
    main = subnets["ray-scale-us-central1"]
    assert main["logConfig"]["flowSampling"] == 0.5  # the main subnet keeps flow_sampling


def test_gpu_flow_sampling_is_the_stacks_and_off_means_off() -> None:
    flow = {"gpu_flow_sampling": 1.0, "aggregation_interval": "INTERVAL_1_MIN"}
    subnets = _subnets(render(_data("scale", flow_logs=flow), "scale")[0])
    tcpxo = subnets["ray-scale-tcpxo-1-sub"]["logConfig"]
    assert (tcpxo["flowSampling"], tcpxo["aggregationInterval"]) == (1.0, "INTERVAL_1_MIN")
    off = _subnets(render(_data("scale", flow_logs={"enabled": False}), "scale")[0])
    assert all("logConfig" not in s for s in off.values())
    with pytest.raises(StackConfigError) as e:
        validate(_data("scale", flow_logs={"enabled": False, "gpu_flow_sampling": 0.5}))
    assert "gpu_flow_sampling set but enabled is false" in str(e.value)
    with pytest.raises(StackConfigError) as e:
        validate(_data("scale", flow_logs={"gpu_flow_sampling": 2}))
    assert "network.flow_logs.gpu_flow_sampling" in str(e.value)


def test_adding_flow_logs_to_existing_gpu_subnets_updates_them_in_place() -> None:
    """prod's H100 pools run GPUDirect-TCPX: its 4 GPU NIC subnets existed without logConfig
    before; the plan from that render to today's updates exactly those 4 in place (the
    provider's log_config is not ForceNew: raygke/diff/replacement.py)."""
    head = render(_data("prod"), "prod")[0]
    base = copy.deepcopy(head)
    for r in base:
        if r["type"] == SUBNET and "-tcpx-" in r["inputs"]["name"]:
            del r["inputs"]["logConfig"]
    plan = compare(base, head, "prod")
    assert sorted((c.type, c.op) for c in plan.changes) == [(SUBNET, "update")] * 4
    assert all(c.reasons == [] for c in plan.changes)
    assert {f.path.split(".")[0] for c in plan.changes for f in c.fields} == {"logConfig"}
