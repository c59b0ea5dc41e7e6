"""Cost of a render (raygke.cost.estimate) from the catalog's price table."""

from __future__ import annotations

import pytest

from raygke.cost.estimate import (
    FLEX_START_NOTE,
    FLEX_START_PRICING,
    delta_lines,
    pool_cost,
    region_of,
    stack_cost,
)
from raygke.cost.prices import CLUSTER_FEE, GPU_PRICES, MACHINE_PRICES, TPU_CHIP_PRICES
from raygke.synth import read_stack_config, run_program
from tests.helpers import ROOT


def _pool(**nc) -> dict:
    return {
        "name": "h100",
        "location": "us-east5",
        "nodeLocations": ["us-east5-a"],
        "autoscaling": {"minNodeCount": 0, "maxNodeCount": 2},
        "nodeConfig": {
            "machineType": "a3-highgpu-8g",
            "spot": False,
            "guestAccelerators": [{"type": "nvidia-h100-80gb", "count": 8}],
            **nc,
        },
    }


def test_gpu_pool_is_host_plus_gpus_and_spot_is_cheaper():
    on = pool_cost(_pool())
    host = MACHINE_PRICES[("us-east5", "a3-highgpu-8g")]
    gpu = GPU_PRICES[("us-east5", "nvidia-h100-80gb")]
    assert on.node_hourly == pytest.approx(host.on_demand + 8 * gpu.on_demand)
    assert (on.min_hourly, on.max_hourly) == (0, pytest.approx(2 * on.node_hourly))
    spot = pool_cost(_pool(spot=True))
    assert spot.provisioning == "spot"
    assert spot.node_hourly == pytest.approx(host.spot + 8 * gpu.spot)
    assert spot.node_hourly < on.node_hourly
    assert on.sources and all(s.startswith("https://") for s in on.sources)


def test_reservation_pays_on_demand_and_cites_why():
    res = pool_cost(
        _pool(
            reservationAffinity={
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "values": ["r"],
            }
        )
    )
    assert res.provisioning == "reservation"
    assert res.node_hourly == pool_cost(_pool()).node_hourly
    assert any("reservations-overview" in s for s in res.sources)


def test_unknown_price_is_unknown_never_zero():
    c = pool_cost(_pool(machineType="a3-edgegpu-8g"))  # not in the catalog
    assert c.node_hourly is None and c.max_hourly is None
    assert c.min_nodes == 0 and c.min_hourly == 0.0  # 0 nodes cost $0, not unknown
    assert c.missing == ["a3-edgegpu-8g in us-east5 (on-demand)"]
    cost = stack_cost(
        [{"type": "gcp:container/nodePool:NodePool", "name": "p", "inputs": _pool(machineType="x")}]
    )
    assert cost.max_hourly is None and cost.known_max_hourly == 0.0


def test_tpu_pool_prices_chips_and_per_zone_counts_multiply_by_zones():
    inputs = {
        "name": "v6e",
        "location": "us-east5",
        "nodeLocations": ["us-east5-a", "us-east5-b"],
        "autoscaling": {"minNodeCount": 1, "maxNodeCount": 4},
        "nodeConfig": {"machineType": "ct6e-standard-4t"},
    }
    c = pool_cost(inputs)
    chip = TPU_CHIP_PRICES[("us-east5", "v6e")].on_demand
    assert c.accelerators == "4 TPU v6e chips"
    assert (c.min_nodes, c.max_nodes) == (2, 8)
    assert c.max_hourly == pytest.approx(8 * 4 * chip)


def test_region_of_zone():
    assert region_of("us-central1-a") == "us-central1"
    assert region_of("us-east5") == "us-east5"


@pytest.fixture(scope="module")
def prod_records() -> list[dict]:
    return run_program(read_stack_config(ROOT / "Pulumi.prod.yaml"), "prod")[0]


def test_prod_stack_is_fully_priced(prod_records):
    cost = stack_cost(prod_records)
    assert {p.name for p in cost.pools} == {
        "system",
        "cpu",
        "h100",
        "l4-serve",  # the vLLM service's L4 pool
        "tpu-v6e-4x4-0",
        "tpu-v6e-4x4-1",
        "h100-dws",  # the DWS pools (provisioning: queued): on-demand, an upper bound
        "tpu-v6e-4x4-dws-0",
        "tpu-v6e-4x4-dws-1",
    }
    assert all(p.node_hourly is not None for p in cost.pools)
    assert cost.cluster_fee_hourly == CLUSTER_FEE.on_demand
    assert cost.min_hourly is not None and cost.max_hourly > cost.min_hourly
    data = cost.to_json()
    assert data["max_monthly"] == pytest.approx(cost.max_hourly * 730, abs=0.01)


def test_delta_names_the_pool_and_the_total(prod_records):
    import copy

    head = copy.deepcopy(prod_records)
    for r in head:
        if r["type"] == "gcp:container/nodePool:NodePool" and r["inputs"]["name"] == "h100":
            r["inputs"]["nodeConfig"]["spot"] = True
    lines = delta_lines(stack_cost(prod_records), stack_cost(head))
    assert lines[0].startswith("pool h100 (on-demand -> spot): $0.00/month at min scale, -$")
    assert lines[-1].startswith("total: $0.00/month at min scale, -$")
    assert delta_lines(stack_cost(prod_records), stack_cost(prod_records)) == []


def test_cli_cost_prints_every_pool_with_sources(capsys, monkeypatch):
    from raygke.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["cost", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    for pool in ("system", "cpu", "h100", "tpu-v6e-4x4-0", "tpu-v6e-4x4-1", "cluster fee"):
        assert pool in out
    assert "] https://cloud.google.com/kubernetes-engine/pricing" in out
    assert "skypilot-catalog" in out and "unknown" not in out


@pytest.mark.parametrize(
    ("extra", "provisioning"),
    [
        ({"queuedProvisioning": {"enabled": True}}, "queued"),
        ({"nodeConfig": {"flexStart": True}}, "flex-start"),
        ({"queuedProvisioning": {"enabled": True}, "nodeConfig": {"flexStart": True}}, "queued"),
    ],
)
def test_dws_pools_are_priced_on_demand_as_an_upper_bound_with_the_source(extra, provisioning):
    """Flex-start and queued (DWS) VMs are billed at DWS's own, discounted rate; the price table
    has none, so the cost is the on-demand price, marked an upper bound, with the source."""
    inputs = _pool()
    inputs["nodeConfig"].update(extra.pop("nodeConfig", {}))
    inputs.update(extra)
    dws = pool_cost(inputs)
    assert dws.provisioning == provisioning and dws.upper_bound
    assert dws.node_hourly == pool_cost(_pool()).node_hourly  # the on-demand rate, not spot
    assert FLEX_START_PRICING in dws.sources
    assert not pool_cost(_pool()).upper_bound and not pool_cost(_pool(spot=True)).upper_bound
    data = stack_cost([{"type": "gcp:container/nodePool:NodePool", "name": "p", "inputs": inputs}])
    (pool,) = data.to_json()["pools"]
    assert pool["upper_bound"] is True and pool["price_basis"] == FLEX_START_NOTE
    assert data.to_json()["upper_bound_pools"] == ["h100"]
    # min scale is 0 nodes ($0, exact); max scale holds the upper-bound price
    assert (data.is_upper_bound("min_hourly"), data.is_upper_bound("max_hourly")) == (False, True)


def test_cli_cost_marks_the_dws_pools_and_totals_as_upper_bounds(capsys, monkeypatch):
    from raygke.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["cost", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    rows = {ln.split("│")[1].strip(): ln for ln in out.splitlines() if ln.count("│") > 5}
    assert "queued" in rows["h100-dws"] and "<= $" in rows["h100-dws"]
    assert "<= $" not in rows["h100"] and "<= $" in rows["total"]
    assert (
        "<= upper bound: h100-dws, tpu-v6e-4x4-dws-0, tpu-v6e-4x4-dws-1: on-demand price, upper "
        f"bound (DWS flex-start is billed at its own rate: {FLEX_START_PRICING})"
    ) in out
    assert main(["cost", "--stack", "dev"]) == 0  # dev has no DWS pool: no upper bound
    assert "<=" not in capsys.readouterr().out


def test_json_hourly_figures_are_rounded_sums_not_float_noise():
    """Hourly sums are rounded to the node price's 5 places: 0.36804, never 0.36804000000000003."""
    import json

    pools = []
    for i, n in enumerate((3, 7, 11)):
        p = _pool()
        p["name"] = f"p{i}"
        p["autoscaling"] = {"minNodeCount": n, "maxNodeCount": n * 3}
        pools.append({"type": "gcp:container/nodePool:NodePool", "name": p["name"], "inputs": p})
    doc = stack_cost(pools).to_json()
    figures = [doc["min_hourly"], doc["max_hourly"]]
    figures += [p[k] for p in doc["pools"] for k in ("min_hourly", "max_hourly")]
    assert all(f > 0 for f in figures)
    for f in figures:
        assert f == round(f, 5) and len(json.dumps(f).partition(".")[2]) <= 5, f


# ------------------------------------------------- what the long-lived Ray clusters keep up


def _service_group(records: list[dict]) -> dict:
    (svc,) = [r for r in records if r["type"] == "kubernetes:ray.io/v1:RayService"]
    (group,) = svc["inputs"]["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    return group


def test_a_services_min_workers_keep_their_pools_nodes_up_at_minimum_scale(prod_records):
    cost = stack_cost(prod_records)
    pools = {p.name: p for p in cost.pools}
    l4 = pools["l4-serve"]
    # prod's lm service: min_workers 1 on l4-serve (min_nodes 0): one g2-standard-8 + L4 stays up
    assert (l4.min_nodes, l4.floor_nodes, l4.min_scale_nodes) == (0, 1, 1)
    assert l4.floor_by == ["RayService lm: 1 l4-serve worker(s)"]
    assert l4.min_hourly == pytest.approx(l4.node_hourly) and l4.min_hourly > 0.5
    # the heads (2 CPUs each) share the system pool's one node
    assert pools["system"].min_scale_nodes == 1
    assert pools["system"].floor_by == ["RayCluster training: head", "RayService lm: head"]
    assert cost.min_hourly == pytest.approx(
        pools["system"].node_hourly + l4.node_hourly + cost.cluster_fee_hourly
    )
    data = cost.to_json()
    (row,) = [p for p in data["pools"] if p["name"] == "l4-serve"]
    assert row["floor_nodes"] == 1 and row["min_monthly"] == pytest.approx(
        l4.node_hourly * 730, abs=0.01
    )


def test_adding_removing_and_rescaling_a_service_shows_its_floors_cost(prod_records):
    import copy

    without = [r for r in prod_records if r["type"] != "kubernetes:ray.io/v1:RayService"]
    base, added = stack_cost(without), stack_cost(prod_records)
    node = {p.name: p for p in added.pools}["l4-serve"].node_hourly * 730
    lines = delta_lines(base, added)
    assert lines[0] == (
        f"pool l4-serve (changed; kept up by Ray: 0 -> 1 node(s) (RayService lm: 1 l4-serve "
        f"worker(s))): +${node:,.2f}/month at min scale, $0.00/month at max scale "
        "($2,492.54 -> $2,492.54)"
    )
    assert lines[-1].startswith(f"total: +${node:,.2f}/month at min scale, $0.00/month")
    removed = delta_lines(added, base)
    assert removed[0].startswith("pool l4-serve (changed; kept up by Ray: 1 -> 0 node(s)")
    assert f"-${node:,.2f}/month at min scale" in removed[0]

    rescaled = copy.deepcopy(prod_records)
    _service_group(rescaled)["minReplicas"] = 3
    lines = delta_lines(added, stack_cost(rescaled))
    assert "kept up by Ray: 1 -> 3 node(s)" in lines[0]
    assert f"+${2 * node:,.2f}/month at min scale" in lines[0]


def test_a_floor_goes_on_a_pool_the_pods_can_land_on_the_cheapest_when_several(prod_records):
    import copy

    spot = copy.deepcopy(
        next(r for r in prod_records if r.get("inputs", {}).get("name") == "l4-serve")
    )
    spot["name"] = spot["inputs"]["name"] = "l4-spot"
    spot["inputs"]["nodeConfig"]["spot"] = True
    pools = {p.name: p for p in stack_cost([*prod_records, spot]).pools}
    assert (pools["l4-spot"].floor_nodes, pools["l4-serve"].floor_nodes) == (1, 0)

    nowhere = copy.deepcopy(prod_records)
    _service_group(nowhere)["template"]["spec"]["nodeSelector"] = {"team": "x"}
    assert {p.name: p for p in stack_cost(nowhere).pools}["l4-serve"].floor_nodes == 0
    untolerated = copy.deepcopy(prod_records)
    _service_group(untolerated)["template"]["spec"]["tolerations"] = []
    assert {p.name: p for p in stack_cost(untolerated).pools}["l4-serve"].floor_nodes == 0


def test_cli_cost_marks_the_nodes_a_service_keeps_up(capsys, monkeypatch):
    from raygke.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["cost", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert "1*-4" in out
    assert (
        "* l4-serve: 1 node kept up at minimum scale (the pool's own minimum: 0) by "
        "RayService lm: 1 l4-serve worker(s)"
    ) in out
