"""Node pools as the engine receives them (real program under mocks)."""

from __future__ import annotations

import pytest

from components.nodepools.render import (
    autoscaling,
    config_labels,
    initial_node_count,
    node_pool_specs,
)
from components.plan.plan import plan
from components.stack.loader import validate
from tests.helpers import BASE, by_name, config, of_type, render

NP = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def rendered() -> tuple[list[dict], dict]:
    return render(config())


def test_v6e_4x4_is_one_compact_pool_per_slice(rendered):
    pools = by_name(rendered[0], NP)
    assert "v6e" not in pools
    for name in ("v6e-0", "v6e-1"):
        p = pools[name]
        assert p["nodeConfig"]["machineType"] == "ct6e-standard-4t"
        assert p["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
        assert p["autoscaling"]["maxNodeCount"] == 4  # hosts of a 4x4 slice
        assert p["autoscaling"]["minNodeCount"] in (0, 4)
        assert p["nodeLocations"] == ["us-east5-b"]
        assert {"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"} in p[
            "nodeConfig"
        ]["taints"]
    assert "v6e-2" not in pools


def test_v5e_2x2_single_host_has_no_topology(rendered):
    p = by_name(rendered[0], NP)["v5e"]
    assert p["nodeConfig"]["machineType"] == "ct5lp-hightpu-4t"
    assert "placementPolicy" not in p
    assert p["autoscaling"]["maxNodeCount"] == 3  # slices = nodes for single-host


def test_gpu_pool_has_accelerator_and_driver_and_spot(rendered):
    p = by_name(rendered[0], NP)["l4"]
    nc = p["nodeConfig"]
    assert nc["machineType"] == "g2-standard-4"
    assert nc["guestAccelerators"] == [
        {
            "type": "nvidia-l4",
            "count": 1,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ]
    assert nc["spot"] is True
    assert p["autoscaling"]["locationPolicy"] == "ANY"
    # Only config-given labels; GKE sets cloud.google.com/* itself.
    assert nc["labels"] == {"team": "vision"}


def test_every_pool_is_hardened_and_uses_the_node_sa(rendered):
    records, _ = rendered
    pools = of_type(records, NP)
    assert {p["inputs"]["name"] for p in pools} == {"system", "cpu", "v6e-0", "v6e-1", "v5e", "l4"}
    for r in pools:
        nc = r["inputs"]["nodeConfig"]
        assert nc["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert nc["shieldedInstanceConfig"] == {
            "enableSecureBoot": True,
            "enableIntegrityMonitoring": True,
        }
        assert nc["serviceAccount"] == "ray-test-nodes@ray-gke-test.iam.gserviceaccount.com"
        assert r["inputs"]["management"] == {"autoRepair": True, "autoUpgrade": True}
        assert r["parent"] == f"ray-gke:nodepool:NodePool::pool-{r['inputs']['name']}"
        assert r["inputs"]["cluster"].endswith("/clusters/ray-test")
        assert not any(k.startswith("cloud.google.com/") for k in nc.get("labels", {}))


def test_reservation_affinity():
    pools = [
        {
            "name": "h100",
            "gpu": {"type": "nvidia-h100-80gb", "count": 8},
            "zones": ["us-east5-a"],
            "provisioning": "reservation",
            "reservation": "h100-res",
        }
    ]
    records, _ = render(
        config(node_pools=pools, nap={"resource_limits": {"cpu": 4096, "memory": 8192}})
    )
    nc = by_name(records, NP)["h100"]["nodeConfig"]
    assert nc["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["h100-res"],
    }
    assert nc["spot"] is False
    assert nc["guestAccelerators"][0]["count"] == 8


def test_pure_helpers_follow_the_spec():
    cfg = validate(config(zones=["us-east5-a", "us-east5-b"]))
    specs = {s.name: s for s in node_pool_specs(plan(cfg))}
    cpu = specs["cpu"]
    assert autoscaling(cpu) == {"total_min_node_count": 0, "total_max_node_count": 2}
    system = specs["system"]
    assert initial_node_count(system) == 1  # min 1 over two zones -> 1 per zone at creation
    assert config_labels(specs["l4"]) == {"team": "vision"}
    assert BASE["zones"] == ["us-east5-b"]  # the helper config is not mutated


RP = "gcp:compute/resourcePolicy:ResourcePolicy"


def _tpu7x_config() -> dict:
    """BASE plus a TPU7x 4x4x4 pool (16 hosts per slice, two slices) in us-central1-c."""
    data = config(region="us-central1", zones=["us-central1-c"])
    data["node_pools"] = [
        {
            "name": "ironwood",
            "tpu": {"generation": "tpu7x", "topology": "4x4x4"},
            "max_slices": 2,
        },
        {"name": "ironwood-1host", "tpu": {"generation": "tpu7x", "topology": "2x2x1"}},
    ]
    data["cluster"] = {**data["cluster"], "min_master_version": "1.35"}
    data["nap"] = {"resource_limits": {"cpu": 8192, "memory": 65536, "tpu7x": 132}}
    return data


def test_tpu7x_multi_host_pool_uses_its_workload_policy() -> None:
    """Under mocks each TPU7x multi-host slice pool gets a HIGH_THROUGHPUT workload policy with
    the slice topology and names it in placement_policy.policy_name, without tpu_topology
    (https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood)."""
    records, _ = render(_tpu7x_config())
    policies = by_name(records, RP)
    pools = by_name(records, NP)
    for i in (0, 1):
        pool = pools[f"ironwood-{i}"]
        policy_name = f"ray-test-ironwood-{i}-wp"
        assert policies[policy_name]["workloadPolicy"] == {
            "type": "HIGH_THROUGHPUT",
            "acceleratorTopology": "4x4x4",
        }
        assert policies[policy_name]["region"] == "us-central1"
        assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": policy_name}
        assert pool["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
        assert pool["autoscaling"]["maxNodeCount"] == 16
    # the single-host slice needs neither a policy nor a topology
    assert "placementPolicy" not in pools["ironwood-1host"]
    assert set(policies) == {"ray-test-ironwood-0-wp", "ray-test-ironwood-1-wp"}


def test_no_resource_policy_without_tpu7x(rendered) -> None:
    assert of_type(rendered[0], RP) == []


def test_workload_policy_name_stays_within_63() -> None:
    from components.nodepools.render import workload_policy_name

    cfg = validate(config(cluster={"name": "c" * 40, "deletion_protection": False}))
    long = workload_policy_name(cfg.cluster.name, "p" * 40 + "-12")
    assert len(long) <= 63 and long.endswith("-wp")
    assert long == workload_policy_name(cfg.cluster.name, "p" * 40 + "-12")  # stable
    assert long != workload_policy_name(cfg.cluster.name, "p" * 40 + "-13")


def test_a_shared_node_setting_takes_two_edits(monkeypatch):
    """A setting every node pool shares lands in two places: the model
    (:class:`components.config.nodepools.NodeSettings`; here each pool kind's subclass with a
    ``disk_type`` field, the system pool's included) and the one builder of the GKE node config
    (:func:`components.nodepools.component.node_config_args`; here wrapped to read it). The
    program then renders it on every GKE node pool: nothing in between (the specs, the per-kind
    builders, the plan, ``__main__.py``) copies it."""
    from dataclasses import replace

    import pulumi
    from pydantic import create_model

    from components.config.cluster import SystemPool
    from components.config.nodepools import CpuPool, GpuPool, TpuPool
    from components.nodepools import component, render
    from raygke.synth import config_entries, run_program

    kinds = {m: create_model(m.__name__, __base__=m, disk_type=(str, "pd-balanced"))
             for m in (CpuPool, GpuPool, TpuPool, SystemPool)}  # fmt: skip

    def extended(pool):  # place 1: the declared pool as the extended model validates it
        data = pool.model_dump(by_alias=True, exclude_unset=True)
        name = getattr(pool, "name", "system")
        return kinds[type(pool)].model_validate({**data, "disk_type": f"pd-ssd-{name}"})

    specs_of = render.node_pool_specs

    def node_pool_specs(stack_plan):  # the stack's plan as if the models had the field
        system = extended(stack_plan.system_pool)
        pools = tuple(extended(p) for p in stack_plan.declared_pools)
        return specs_of(replace(stack_plan, system_pool=system, declared_pools=pools))

    builder = component.node_config_args

    def node_config_args(ctx, spec, args):  # place 2: the builder reads it
        node_config = builder(ctx, spec, args)
        pulumi.set(node_config, "disk_type", spec.config.disk_type)
        return node_config

    monkeypatch.setattr(render, "node_pool_specs", node_pool_specs)
    monkeypatch.setattr(component, "node_config_args", node_config_args)
    data = config()
    records, _ = run_program(
        config_entries(data, {"project": data["project"]}), "test", crd_specs="digest"
    )
    pools = by_name(records, NP)
    specs = {s.name: s for s in specs_of(plan(validate(data)))}
    assert {s.kind for s in specs.values()} == {"system", "cpu", "tpu", "gpu"}
    assert set(pools) == set(specs)
    for name, p in pools.items():
        assert p["nodeConfig"]["diskType"] == f"pd-ssd-{specs[name].pool}"
