"""Topology-aware placement (components/capacity/topology.py): the Topology objects, flavors
that name them, the pod sets' requests and the preview's Kueue TAS rules."""

from __future__ import annotations

import copy

import pytest

from components.capacity.checks import kueue_schema_problems
from components.capacity.preview import preview
from components.capacity.render import render_capacity, resource_flavor
from components.capacity.topology import (
    BLOCK,
    GPU_LEVELS,
    HOSTNAME,
    PREFERRED,
    REQUIRED,
    SUBBLOCK,
    tas_mismatch,
)
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.helpers import WORKING_DIR, config

H100 = {
    "name": "h100",
    "gpu": {"type": "nvidia-h100-80gb", "count": 8},
    "zones": ["us-east5-a"],
    "max_nodes": 4,
}
A4X = {
    "name": "gb200",
    "gpu": {"type": "nvidia-gb200", "count": 4},
    "zones": ["us-central1-b"],
    "max_nodes": 18,
}


def _data(pool: dict, replicas_job: str = "train", topology: str | None = None) -> dict:
    region = pool["zones"][0].rsplit("-", 1)[0]
    data = config(
        region=region,
        zones=list(pool["zones"]),
        node_pools=[{"name": "cpu", "machine_type": "n2-standard-8", "max_nodes": 2}, pool],
        nap={"enabled": False},
        capacity={
            "cluster_queues": [
                {
                    "name": "gpu",
                    "flavors": [
                        {
                            "pool": pool["name"],
                            "nominal": {
                                "cpu": 4000,
                                "memory": "40Ti",
                                "nvidia.com/gpu": pool["max_nodes"] * pool["gpu"]["count"],
                            },
                        },
                        {"pool": "system", "nominal": {"cpu": 16, "memory": "64Gi"}},
                    ],
                }
            ],
            "local_queues": [{"name": "gpu", "cluster_queue": "gpu"}],
        },
        jobs=[
            {
                "name": replicas_job,
                "workload": "train_lm",
                "node_pool": pool["name"],
                "queue": "gpu",
            }
        ],
    )
    if topology:
        data["capacity"]["topology"] = topology
    if pool is A4X:  # A4X hosts are arm64: a prebuilt arm64 image
        data["ray"] = {
            "images": {
                "gpu": {
                    "image": "example/ray-gpu:2.60.0-arm64",
                    "architectures": ["arm64"],
                }
            }
        }
    return data


def _worker_annotations(cfg) -> dict[str, str]:
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    return group["template"]["metadata"].get("annotations") or {}


def test_a_gpu_block_pool_gets_the_topology_its_flavor_and_a_required_block_request():
    cfg = validate(_data(H100))
    objects = render_capacity(plan(cfg), cfg.capacity)
    (topo,) = [o for o in objects if o["kind"] == "Topology"]
    assert [lvl["nodeLabel"] for lvl in topo["spec"]["levels"]] == list(GPU_LEVELS)
    # the Topology comes before the flavor that names it, and validates against the carried CRD
    kinds = [o["kind"] for o in objects]
    assert kinds.index("Topology") < kinds.index("ResourceFlavor")
    assert kueue_schema_problems(objects, "0.19.2") == []
    assert resource_flavor(plan(cfg), "h100")["spec"]["topologyName"] == topo["metadata"]["name"]
    assert "topologyName" not in resource_flavor(plan(cfg), "system")["spec"]
    # 4 nodes on an A3 High pool: no published sub-block size, so the block
    assert _worker_annotations(cfg)[REQUIRED] == BLOCK


def test_the_request_is_the_tightest_level_and_follows_the_stack_field():
    one = copy.deepcopy(H100)
    one["max_nodes"] = 1
    assert _worker_annotations(validate(_data(one)))[REQUIRED] == HOSTNAME
    # A4X: an NVLink domain (sub-block) holds 18 instances
    assert _worker_annotations(validate(_data(A4X)))[REQUIRED] == SUBBLOCK
    pref = _worker_annotations(validate(_data(H100, topology="preferred")))
    assert pref[PREFERRED] == BLOCK and REQUIRED not in pref
    off = validate(_data(H100, topology="off"))
    assert REQUIRED not in _worker_annotations(off)
    assert not [o for o in render_capacity(plan(off), off.capacity) if o["kind"] == "Topology"]


def test_pools_without_block_labels_get_no_topology():
    cfg = validate(
        _data({**H100, "gpu": {"type": "nvidia-l4", "count": 1}, "zones": ["us-east5-a"]})
    )
    assert not [o for o in render_capacity(plan(cfg), cfg.capacity) if o["kind"] == "Topology"]
    assert REQUIRED not in _worker_annotations(cfg)


def test_the_preview_names_the_level_each_pod_set_gets():
    cfg = validate(_data(H100))
    (v,) = preview(plan(cfg), cfg.capacity, render_manifests(cfg, WORKING_DIR))
    by_set = {a.pod_set.name: a for a in v.assignments}
    assert v.state == "admitted"
    assert by_set["h100"].flavor == "h100" and by_set["h100"].topology == "required block"
    assert by_set["head"].topology == "-"


@pytest.mark.parametrize(
    ("request_", "flavor", "tas_only", "why"),
    [
        (("required", BLOCK), {"spec": {}}, False, "does not support TopologyAwareScheduling"),
        (None, {"spec": {"topologyName": "gpu-blocks"}}, False, "supports only"),
        (None, {"spec": {"topologyName": "gpu-blocks"}}, True, None),
        (
            ("required", "rack"),
            {"spec": {"topologyName": "gpu-blocks"}},
            False,
            "requested level rack",
        ),
        (("preferred", SUBBLOCK), {"spec": {"topologyName": "gpu-blocks"}}, False, None),
        (None, {"spec": {}}, False, None),
    ],
)
def test_tas_mismatch_follows_kueues_flavor_assigner(request_, flavor, tas_only, why):
    got = tas_mismatch(request_, {"metadata": {"name": "f"}, **flavor}, tas_only)
    assert (got is None) if why is None else (why in got)


def test_a_pod_set_without_a_request_cannot_take_a_tas_flavor_in_the_preview():
    from components.capacity.preview import flavor_match, pod_sets

    off = validate(_data(H100, topology="off"))
    (job,) = [m for m in render_manifests(off, WORKING_DIR) if m["kind"] == "RayJob"]
    workers = next(ps for ps in pod_sets(job) if ps.name == "h100")
    assert workers.topology is None
    tas_flavor = resource_flavor(plan(validate(_data(H100))), "h100")
    assert "supports only TopologyAwareScheduling" in flavor_match(workers, tas_flavor)
    assert flavor_match(workers, tas_flavor, tas_only=True) is None  # Kueue's isTASImplied
