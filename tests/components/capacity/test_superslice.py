"""TPU7x super-slicing (components/capacity/superslice.py): the pool option's renders (workload
policy, slice controller, Kueue Topology, flavor, slice admission check, pod annotations) and
the refusals where the catalog, GKE or Kueue says it cannot be."""

from __future__ import annotations

import copy

import pytest

from components.capacity import superslice
from components.capacity.checks import kueue_schema_problems
from components.capacity.render import render_capacity
from components.capacity.topology import BLOCK, REQUIRED, SLICE_REQUIRED, SLICE_SIZE
from components.kernel.base import StackConfigError
from components.nodepools.render import node_pool_specs
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.helpers import WORKING_DIR, config, of_type, render

POOL = {
    "name": "ironwood",
    "tpu": {"generation": "tpu7x", "topology": "4x4x4"},
    "zones": ["us-central1-c"],
    "max_slices": 2,
    "provisioning": "reservation",
    "reservation": "ironwood-all-capacity",
    "super_slicing": True,
}


def _data(pool: dict | None = None, **cluster) -> dict:
    pool = copy.deepcopy(pool or POOL)
    tpu = 2 * 64
    return config(
        region="us-central1",
        zones=["us-central1-c"],
        cluster={
            "name": "ray-test",
            "deletion_protection": False,
            "release_channel": "RAPID",
            "min_master_version": superslice.MIN_GKE_VERSION,
            **cluster,
        },
        node_pools=[pool],
        nap={"enabled": False},
        kuberay={"mode": "gke-addon"},
        capacity={
            "cluster_queues": [
                {
                    "name": "tpu",
                    "flavors": [
                        {
                            "pool": pool["name"],
                            "nominal": {"cpu": 8000, "memory": "80Ti", "google.com/tpu": tpu},
                        },
                        {"pool": "system", "nominal": {"cpu": 16, "memory": "64Gi"}},
                    ],
                }
            ],
            "local_queues": [{"name": "tpu", "cluster_queue": "tpu"}],
        },
        jobs=[
            {
                "name": "pretrain",
                "workload": "train_lm_jax",
                "node_pool": pool["name"],
                "queue": "tpu",
            }
        ],
    )


def test_the_cube_pools_provision_only_and_the_cluster_runs_the_slice_controller():
    cfg = validate(_data())
    specs = [s for s in node_pool_specs(plan(cfg)) if s.pool == "ironwood"]
    assert len(specs) == 2 and all(s.super_slicing for s in specs)
    assert specs[0].workload_policy == {
        "type": "HIGH_THROUGHPUT",
        "accelerator_topology": "4x4x4",
        "accelerator_topology_mode": "PROVISION_ONLY",
    }
    records, _ = render(_data())
    (cluster,) = of_type(records, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["addonsConfig"]["sliceControllerConfig"] == {"enabled": True}
    policies = of_type(records, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert {p["inputs"]["workloadPolicy"]["acceleratorTopologyMode"] for p in policies} == {
        "PROVISION_ONLY"
    }


def test_kueue_gets_the_cube_topology_the_accelerator_flavor_and_the_slice_check():
    cfg = validate(_data())
    objects = render_capacity(plan(cfg), cfg.capacity)
    assert kueue_schema_problems(objects, "0.19.2") == []
    (topo,) = [o for o in objects if o["kind"] == "Topology"]
    assert [lvl["nodeLabel"] for lvl in topo["spec"]["levels"]] == [
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gke-tpu-partition-4x4x4-id",
        "kubernetes.io/hostname",
    ]
    flavor = next(
        o for o in objects if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] == "ironwood"
    )
    assert flavor["spec"]["nodeLabels"] == {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}
    assert flavor["spec"]["topologyName"] == superslice.TOPOLOGY
    (check,) = [o for o in objects if o["kind"] == "AdmissionCheck"]
    assert check["spec"] == {"controllerName": "accelerator.gke.io/slice"}
    (cq,) = [o for o in objects if o["kind"] == "ClusterQueue"]
    assert cq["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": superslice.SLICE_CHECK, "onFlavors": ["ironwood"]}]
    }


def test_the_worker_pods_carry_the_slice_topology_and_one_cube_per_slice():
    cfg = validate(_data())
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert group["numOfHosts"] == 16
    ann = group["template"]["metadata"]["annotations"]
    assert ann[superslice.SLICE_TOPOLOGY_ANNOTATION] == "4x4x4"
    assert ann[REQUIRED] == BLOCK  # two cubes: one block
    assert ann[SLICE_REQUIRED] == superslice.PARTITION_LABEL and ann[SLICE_SIZE] == "16"


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            {"pool": {**POOL, "tpu": {"generation": "tpu7x", "topology": "4x4x8"}}},
            "node_pools[ironwood].super_slicing",
            "stitches TPU7x 4x4x4 cubes",
        ),
        (
            {"pool": {**POOL, "provisioning": "on-demand", "reservation": None}},
            "node_pools[ironwood].super_slicing",
            "All Capacity mode reservation",
        ),
        ({"release_channel": "REGULAR"}, "cluster.release_channel", "needs the RAPID channel"),
        (
            {"min_master_version": "1.34.1-gke.1000000"},
            "cluster.min_master_version",
            "needs GKE 1.35.2-gke.1842000 or later",
        ),
    ],
)
def test_super_slicing_is_refused_where_it_cannot_run(change, path, words):
    pool = change.pop("pool", None)
    with pytest.raises(StackConfigError) as e:
        validate(_data(pool, **change))
    found = [p for p in e.value.problems if p.rule == "super-slicing"]
    assert [p.path for p in found] == [path]
    assert words in found[0]


def test_super_slice_topologies_follow_gkes_slice_rule():
    """Any AxBxC of multiples of 4 in ascending order, up to 144 cubes (9,216 chips): GKE's
    Slice reference, not only the topologies the catalog lists (issue 49)."""
    assert superslice.valid_topology("4x4x8") is None
    assert superslice.valid_topology("4x4x16") is None  # not a listed tpu7x topology
    assert superslice.valid_topology("12x12x16") is None  # 144 cubes, 9,216 chips
    assert superslice.valid_topology("4x8x4") is not None  # i <= j <= k
    assert superslice.valid_topology("4x4x6") is not None
    assert "at most 144" in superslice.valid_topology("28x28x28")
    assert "160 cubes" in superslice.valid_topology("16x16x40")


def test_a_super_slice_gke_takes_but_the_catalog_does_not_list_renders():
    """``super_slice: 4x4x16`` on a pool of 4 cubes: one slice of 64 hosts (256 chips)."""
    data = _data({**POOL, "max_slices": 4})
    data["capacity"]["cluster_queues"][0]["flavors"][0]["nominal"]["google.com/tpu"] = 4 * 64
    data["jobs"][0]["super_slice"] = "4x4x16"
    group, scaling = _group_and_scaling(data)
    assert (group["replicas"], group["numOfHosts"]) == (1, 64)
    env = {e["name"]: e["value"] for e in group["template"]["spec"]["containers"][0]["env"]}
    assert (env["TPU_TOPOLOGY"], env["TPU_ACCELERATOR_TYPE"]) == ("4x4x16", "v7x-512")
    assert (scaling["num_workers"], scaling["topology"]) == (64, "4x4x16")


def test_an_unqueued_job_on_a_super_slicing_pool_is_refused():
    data = _data()
    data["jobs"][0].pop("queue")
    with pytest.raises(StackConfigError) as e:
        validate(data)
    found = [p for p in e.value.problems if p.rule == "super-slicing"]
    assert [p.path for p in found] == ["jobs[pretrain].queue"]
    assert "no queue" in found[0]


def _group_and_scaling(data: dict) -> tuple[dict, dict]:
    import json

    cfg = validate(data)
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    args = json.loads(job["spec"]["entrypoint"].split("--config-json ", 1)[1].strip("'"))
    return group, args["scaling"]


def test_a_super_slice_job_spans_both_cubes_as_one_slice_from_one_source():
    """``super_slice: 4x4x8``: one replica of 32 hosts on one ICI domain; the worker group, its
    TPU env, the slice annotation and Ray Train's ScalingConfig all come from the stitched slice
    (numOfHosts 32, v7x-256, 4x4x8), each cube's 16 pods kept in one cube by Kueue, the pods
    selecting the accelerator only (the cubes' nodes are labelled 4x4x4)."""
    data = _data()
    data["jobs"][0]["super_slice"] = "4x4x8"
    group, scaling = _group_and_scaling(data)
    assert (group["replicas"], group["maxReplicas"], group["numOfHosts"]) == (1, 1, 32)
    env = {e["name"]: e["value"] for e in group["template"]["spec"]["containers"][0]["env"]}
    assert (env["TPU_TOPOLOGY"], env["TPU_ACCELERATOR_TYPE"]) == ("4x4x8", "v7x-256")
    assert "MEGASCALE_PORT" not in env  # one slice: no Multislice over DCN
    ann = group["template"]["metadata"]["annotations"]
    assert ann[superslice.SLICE_TOPOLOGY_ANNOTATION] == "4x4x8"
    assert (ann[REQUIRED], ann[SLICE_REQUIRED], ann[SLICE_SIZE]) == (
        BLOCK,
        superslice.PARTITION_LABEL,
        "16",
    )
    assert group["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x"
    }
    assert (scaling["num_workers"], scaling["topology"]) == (32, "4x4x8")
    # unset: each replica is one cube, a Multislice of two over DCN
    group, scaling = _group_and_scaling(_data())
    assert (group["replicas"], group["numOfHosts"]) == (2, 16)
    assert group["template"]["metadata"]["annotations"][SLICE_SIZE] == "16"
    assert (scaling["num_workers"], scaling["topology"]) == (32, "4x4x4")


@pytest.mark.parametrize(
    ("job", "pool", "words"),
    [
        ({"super_slice": "4x8x8"}, POOL, "4x8x8 is 4 cubes; node pool 'ironwood' has 2"),
        (
            {"super_slice": "8x4x4"},
            POOL,
            "'8x4x4' is not 4i x 4j x 4k with i <= j <= k: write 4x4x8",
        ),
        ({"super_slice": "2x2x4"}, POOL, "'2x2x4' is not 4i x 4j x 4k"),
        (
            {"super_slice": "4x4x8"},
            {**POOL, "super_slicing": False, "provisioning": "on-demand", "reservation": None},
            "needs a super_slicing TPU7x pool; node pool 'ironwood' is not one",
        ),
    ],
)
def test_a_super_slice_the_pool_cannot_form_is_refused_at_the_job(job, pool, words):
    data = _data(pool)
    data["jobs"][0].update(job)
    with pytest.raises(StackConfigError) as e:
        validate(data)
    found = [p for p in e.value.problems if p.path == "jobs[pretrain].super_slice"]
    assert len(found) == 1 and words in found[0], e.value.problems
