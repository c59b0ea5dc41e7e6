"""The GPU networking proof stack ``Pulumi.scale.yaml`` through the whole program (``raygke
synth`` in process): the extra VPCs and subnets, the node pools' additional networks, the
cluster's multi-networking, GKE's network objects and the RDMA installer; the secure-default
policy pack and the name rules over the render; and the day-2 diff of turning networking off,
which replaces the node pool (the provider's ForceNew, raygke/diff/replacement.py)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from components.plan.plan import plan
from components.stack import name_checks
from components.stack.checks import check_stack
from components.stack.loader import stack_data_from_yaml
from raygke.cost.estimate import stack_cost
from raygke.cost.prices import price_list
from raygke.diff.compare import compare
from raygke.synth import config_entries, read_stack_config, run_program
from tests.helpers import ROOT, check_records, stack

POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return run_program(read_stack_config(ROOT / "Pulumi.scale.yaml"), "scale")[0]


def _inputs(records, typ, name):
    (r,) = [r for r in records if r["type"] == typ and r["inputs"].get("name") == name]
    return r["inputs"]


def test_scale_checks_clean():
    problems = check_stack(stack("scale"))
    assert [p for p in problems if p.severity == "error"] == []


def test_scale_renders_the_gpu_networks(records):
    types = Counter(r["type"] for r in records)
    assert types["gcp:compute/network:Network"] == 1 + 8 + 2  # primary, 8 TCPXO, gVNIC + RDMA
    assert types["gcp:compute/subnetwork:Subnetwork"] == 1 + 8 + 1 + 8
    assert types["gcp:compute/firewall:Firewall"] == 9  # not on the RDMA VPC
    rdma = _inputs(records, "gcp:compute/network:Network", "ray-scale-rdma")
    assert rdma["networkProfile"].endswith("/networkProfiles/us-central1-b-vpc-roce")
    assert rdma["mtu"] == 8244
    (cluster,) = [r for r in records if r["type"] == "gcp:container/cluster:Cluster"]
    assert cluster["inputs"]["enableMultiNetworking"] is True
    assert cluster["inputs"]["datapathProvider"] == "ADVANCED_DATAPATH"
    mega = _inputs(records, POOL, "a3-mega")["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(mega) == 8 and mega[0] == {
        "network": "ray-scale-tcpxo-1",
        "subnetwork": "ray-scale-tcpxo-1-sub",
    }
    a4 = _inputs(records, POOL, "a4")["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(a4) == 9 and a4[0]["network"] == "ray-scale-gvnic"
    assert "networkConfig" not in _inputs(records, POOL, "cpu")
    kinds = Counter(
        r["inputs"].get("kind") or r["type"].split(":")[-1]
        for r in records
        if r["type"].startswith("kubernetes:")
    )
    assert kinds["GKENetworkParamSet"] == kinds["Network"] == 17
    assert kinds["DaemonSet"] == 1


def test_scale_render_passes_the_policy_pack_and_name_rules(records):
    assert check_records(records) == []
    data = stack_data_from_yaml((ROOT / "Pulumi.scale.yaml").read_text())
    named = run_program(config_entries(data, {"project": data["project"]}), "scale")[0]
    declared = {n.name for n in name_checks.derived_names(stack("scale"))}
    for r in named:
        if r["type"] in (
            "gcp:compute/network:Network",
            "gcp:compute/subnetwork:Subnetwork",
            "gcp:compute/firewall:Firewall",
            POOL,
        ):
            assert r["inputs"]["name"] in declared, r["inputs"]["name"]


def test_turning_gpu_networking_off_replaces_the_pool(records):
    off = read_stack_config(ROOT / "Pulumi.scale.yaml")
    pools = json.loads(off["ray-gke:node_pools"])
    for p in pools:
        if p["name"] == "a3-mega":
            p["gpu_networking"] = "off"
    off["ray-gke:node_pools"] = json.dumps(pools)
    head = run_program(off, "scale")[0]
    plan = compare(records, head, "scale")
    (pool,) = [c for c in plan.changes if c.type == POOL]
    assert pool.op == "replace" and pool.name == "pool-a3-mega-pool"
    print(pool.reasons)
    assert pool.reasons == [
        "networkConfig.additionalNodeNetworkConfigs "
        "(network_config.additional_node_network_configs: ForceNew)"
    ]
    deleted = {c.name for c in plan.changes if c.op == "delete"}
    assert "gpunet-ray-scale-tcpxo-1" in deleted


def test_scale_cost_prices_what_has_a_price_and_names_the_rest(records):
    """``raygke cost --stack scale``: the CPU, system and A3 Mega pools and the cluster fee are
    priced (A3 Mega's GPUs from GKE's autoscaler table, raygke/cost/seed.py); the A4 host has no
    recorded price (raygke/cost/prices.json not_priced says why), so that pool's maximum is
    unknown, never $0; at minimum scale (0 GPU nodes) the stack costs the system pool and the
    fee."""
    cost = stack_cost(records)
    pools = {p.name: p for p in cost.pools}
    assert pools["a3-mega"].missing == []
    assert pools["a3-mega"].max_hourly and pools["a3-mega"].min_hourly == 0.0
    assert pools["a4"].missing == ["a4-highgpu-8g in us-central1 (on-demand)"]
    assert pools["a4"].max_hourly is None and pools["a4"].min_hourly == 0.0
    assert pools["cpu"].max_hourly and pools["system"].min_hourly
    assert cost.max_hourly is None and cost.min_hourly is not None and cost.min_hourly > 0
    assert "a4" in price_list()["not_priced"]["families"]


def test_scale_queue_names_the_topology_level_each_job_gets():
    """``raygke queue --stack scale``: every job is admitted in the ``scale`` ClusterQueue; the
    GPU jobs' workers ask for one block of ``gpu-blocks``, the TPU7x super-slice's 32 workers for
    one block with each slice's 16 pods in one 4x4x4 cube (docs/capacity.md)."""
    from components.capacity.preview import preview
    from components.raycrs.render import render_manifests
    from tests.helpers import WORKING_DIR

    cfg = stack("scale")
    verdicts = {
        v.job: v for v in preview(plan(cfg), cfg.capacity, render_manifests(cfg, WORKING_DIR))
    }
    assert set(verdicts) == {"train-lm-a3-mega", "train-lm-a4", "train-lm-jax-ironwood"}
    workers = {}
    for job, v in verdicts.items():
        assert v.state == "admitted", (job, v)
        (w,) = [a for a in v.assignments if a.pod_set.name not in ("head", "submitter")]
        workers[job] = (w.flavor, w.pod_set.count, w.topology)
    assert workers == {
        "train-lm-a3-mega": ("a3-mega", 2, "required block"),
        "train-lm-a4": ("a4", 2, "required block"),
        "train-lm-jax-ironwood": (
            "ironwood",
            32,
            "required block, slices of 16 per gke-tpu-partition-4x4x4-id",
        ),
    }


def test_scale_trains_on_one_super_slice_of_both_cubes():
    """The ironwood job's ``super_slice: 4x4x8``: one worker-group replica of 32 hosts whose pods
    ask GKE's slice controller for a 4x4x8 slice (both cubes on one ICI domain), not two
    4x4x4 slices over DCN."""
    from components.raycrs.render import render_manifests
    from tests.helpers import WORKING_DIR

    cfg = stack("scale")
    (job,) = [
        m
        for m in render_manifests(cfg, WORKING_DIR)
        if m["kind"] == "RayJob" and m["metadata"]["name"] == "train-lm-jax-ironwood"
    ]
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert (group["replicas"], group["numOfHosts"]) == (1, 32)
    ann = group["template"]["metadata"]["annotations"]
    assert ann["cloud.google.com/gke-tpu-slice-topology"] == "4x4x8"
