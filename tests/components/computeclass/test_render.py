"""ComputeClasses (issue 21 item 3): the stack key's rules (each with a valid and an invalid case),
the render against the carried schema, worker groups selecting the class, and the object applied
under mocks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from components.computeclass.checks import compute_class_problems
from components.computeclass.render import render_compute_classes
from components.config.computeclass import ComputeClassConfig
from components.nodepools.render import config_labels, node_pool_specs
from components.plan.plan import plan
from components.raycrs.crd import validate_other
from components.raycrs.render import render_manifests
from components.stack.checks import check_stack
from components.stack.loader import validate
from tests.components.config.test_stack import problems
from tests.helpers import WORKING_DIR, by_name, config, of_type, render

# Every fallback a multi-host v6e slice may take: not flex-start, which without queueing takes
# single-host TPU slices only (catalog.capabilities; test_flex_start_fallback_* below).
FULL = {
    "name": "v6e-4x4",
    "node_pool": "v6e",
    "fallback": ["reservation", "on-demand", "spot"],
    "reservation": "v6e-res",
    "active_migration": True,
}
# flex-start on the single-host v5e 2x2 pool.
FLEX = {
    "name": "v5e-flex",
    "node_pool": "v5e",
    "fallback": ["on-demand", "flex-start", "spot"],
    "max_run_duration_seconds": 86400,
}


def _stack(*classes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    data = config(compute_classes=list(classes))
    data["ray_clusters"] = [
        {
            "name": "research",
            "worker_groups": [
                {"name": "tpu", "node_pool": "v6e", "max_replicas": 1},
                {"name": "l4", "node_pool": "l4", "max_replicas": 1},
            ],
        }
    ]
    data["kuberay"] = {"tpu_webhook": True}  # the multi-host v6e group needs it in helm mode
    data.update(extra)
    return data


# ------------------------------------------------------------------------------------ the model


def test_model_accepts_the_full_fallback() -> None:
    cc = ComputeClassConfig.model_validate({**FULL, "fallback": [*FULL["fallback"], "flex-start"]})
    assert cc.fallback == ["reservation", "on-demand", "spot", "flex-start"]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"fallback": ["spot", "spot"]}, "fallback lists spot twice"),
        ({"reservation": None}, "fallback 'reservation' needs reservation"),
        ({"fallback": ["spot"]}, "reservation 'v6e-res' is set but fallback has no 'reservation'"),
        (
            {"fallback": ["spot"], "reservation": None, "max_run_duration_seconds": 86400},
            "max_run_duration_seconds applies to the flex-start priority",
        ),
        ({"node_pool_auto_creation": False}, "needs node_pool_auto_creation: true"),
        ({"max_run_duration_seconds": 8 * 86400}, "less than or equal to 604800"),
        ({"fallback": ["preemptible"]}, "'reservation', 'on-demand', 'flex-start' or 'spot'"),
        ({"name": "V6E"}, "is not a DNS label"),
        ({"when_unsatisfiable": "Maybe"}, "'DoNotScaleUp' or 'ScaleUpAnyway'"),
    ],
)
def test_model_refuses(change: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValidationError, match=needle):
        ComputeClassConfig.model_validate({**FULL, **change})


def test_no_fallback_without_auto_creation_is_fine() -> None:
    cc = ComputeClassConfig.model_validate(
        {"name": "pinned", "node_pool": "v6e", "fallback": [], "node_pool_auto_creation": False}
    )
    assert cc.fallback == []


# ------------------------------------------------------------------------------------ the rules


def test_rules_accept_a_tpu_and_a_gpu_class() -> None:
    cfg = validate(_stack(FULL, {"name": "l4-spot", "node_pool": "l4", "fallback": ["spot"]}))
    assert [c.name for c in cfg.compute_classes] == ["v6e-4x4", "l4-spot"]


@pytest.mark.parametrize(
    ("classes", "needle"),
    [
        ([{"name": "c", "node_pool": "cpu"}], "node_pool: 'cpu' is a CPU pool"),
        ([{"name": "c", "node_pool": "nope"}], "node_pool: 'nope' is not a declared node pool"),
        (
            [{"name": "a", "node_pool": "l4"}, {"name": "b", "node_pool": "l4"}],
            "node pool 'l4' has 2 classes",
        ),
        (
            [{"name": "a", "node_pool": "l4"}, {"name": "a", "node_pool": "v5e"}],
            "name 'a' is used 2 times",
        ),
    ],
)
def test_rules_refuse(classes: list[dict[str, Any]], needle: str) -> None:
    assert needle in "\n".join(problems(_stack(*classes)))


def test_nap_limits_must_fit_every_priority() -> None:
    """A v6e 4x4 slice is 4 x ct6e-standard-4t (720 vCPUs): with nap.resource_limits.cpu 500 no
    fallback node pool of the class can ever be created; 4096 fits."""
    ok = _stack(FULL)
    validate(ok)
    small = copy.deepcopy(ok)
    small["nap"]["resource_limits"]["cpu"] = 500
    found = "\n".join(problems(small))
    assert (
        "compute_classes[v6e-4x4]: the spot priority's TPU v6e 4x4 slice "
        "(4 x ct6e-standard-4t) needs cpu 720, above nap.resource_limits[cpu] 500"
    ) in found
    small["nap"]["resource_limits"]["cpu"] = 4096
    small["nap"]["resource_limits"]["tpu-v6e-slice"] = 8
    found = "\n".join(problems(small))
    assert "needs tpu-v6e-slice 16, above nap.resource_limits[tpu-v6e-slice] 8" in found


@pytest.mark.parametrize(
    ("pool", "old", "new", "need"),
    [
        ("l4", "1.32", "1.33", "1.32.2-gke.1652000 or later for GPUs"),
        ("v5e", "1.33", "1.34", "1.33.0-gke.1712000 or later for TPUs"),
    ],
)
def test_flex_start_priority_needs_the_flex_start_gke_version(
    pool: str, old: str, new: str, need: str
) -> None:
    """GKE's flex-start minimums (catalog.FLEX_START_MIN_GKE_VERSION) hold for a class's
    flex-start priority; without flex-start in fallback the same old version is accepted."""
    cls = {"name": "cc", "node_pool": pool, "fallback": ["on-demand", "flex-start"]}

    def at(version: str, c: dict[str, Any]) -> dict[str, Any]:
        data = _stack(c)
        data["cluster"] = {"release_channel": "EXTENDED", "min_master_version": version}
        return data

    found = "\n".join(problems(at(old, cls)))
    assert f"compute_classes[cc]: the flex-start priority needs GKE {need}" in found
    assert f"cluster.min_master_version is {old}: raise it or drop flex-start" in found
    validate(at(new, cls))
    validate(at(old, {**cls, "fallback": ["on-demand", "spot"]}))


def test_nap_off_skips_the_limit_rule() -> None:
    data = _stack(FULL)
    data["nap"] = {"enabled": False, "resource_limits": {"cpu": 1}}
    validate(data)


# ----------------------------------------------------------------------------------- the render


def test_render_follows_the_fallback_order_and_the_schema() -> None:
    cfg = validate(_stack(FULL))
    (cc,) = render_compute_classes(plan(cfg))
    assert cc["apiVersion"] == "cloud.google.com/v1" and cc["kind"] == "ComputeClass"
    spec = cc["spec"]
    prios = spec["priorities"]
    assert prios[0] == {"nodepools": ["v6e-0", "v6e-1"]}
    tpu = {"type": "tpu-v6e-slice", "count": 4, "topology": "4x4"}
    assert prios[1] == {
        "tpu": tpu,
        "reservations": {"affinity": "Specific", "specific": [{"name": "v6e-res"}]},
        "spot": False,
    }
    assert prios[2] == {"tpu": tpu, "spot": False}
    assert prios[3] == {"tpu": tpu, "spot": True}
    assert spec["nodePoolAutoCreation"] == {"enabled": True}
    assert spec["activeMigration"] == {"optimizeRulePriority": True}
    assert spec["priorityDefaults"] == {"location": {"zones": ["us-east5-b"]}}
    assert spec["nodePoolConfig"]["serviceAccount"] == (
        "ray-test-nodes@ray-gke-test.iam.gserviceaccount.com"
    )
    assert validate_other(cc) == []
    assert compute_class_problems(plan(cfg)) == []


def test_flex_start_priority_renders_on_a_single_host_slice() -> None:
    cfg = validate(_stack(FLEX))
    (cc,) = render_compute_classes(plan(cfg))
    tpu = {"type": "tpu-v5-lite-podslice", "count": 4, "topology": "2x2"}
    assert cc["spec"]["priorities"][2] == {
        "tpu": tpu,
        "flexStart": {"enabled": True},
        "maxRunDurationSeconds": 86400,
    }
    assert validate_other(cc) == []


def test_flex_start_fallback_on_a_multi_host_slice_is_refused_as_the_pool_is() -> None:
    found = [
        p
        for p in problems(
            _stack({**FULL, "fallback": ["on-demand", "flex-start"], "reservation": None})
        )
        if "single-host TPU slices only" in p
    ]
    assert [p.split(": ", 1)[0] for p in found] == ["compute_classes[v6e-4x4].fallback"]


def test_gpu_class_renders_machine_type_and_driver() -> None:
    cfg = validate(_stack({"name": "l4-spot", "node_pool": "l4", "fallback": ["on-demand"]}))
    (cc,) = render_compute_classes(plan(cfg))
    assert cc["spec"]["priorities"][1] == {
        "machineType": "g2-standard-4",
        "gpu": {"type": "nvidia-l4", "count": 1, "driverVersion": "latest"},
        "spot": False,
    }
    assert validate_other(cc) == []


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda s: s["priorities"][1].update(spott=True), "priorities[1].spott: unknown field"),
        (
            lambda s: s["priorities"][1]["reservations"].update(affinity="Any"),
            "priorities[1].reservations.affinity: 'Any' is not one of",
        ),
        (lambda s: s.update(whenUnsatisfiable="Never"), "whenUnsatisfiable: 'Never' is not one"),
        # GKE's own rules (the types leave tpu.topology and an empty list of priorities to it)
        (
            lambda s: s["priorities"][2].update(nodepools=["x"]),
            "priorities[2]: Nodepool field cannot be set along with other fields",
        ),
        (
            lambda s: s["priorities"][1]["reservations"].pop("specific"),
            "At least 1 specific reservation required for specific affinity",
        ),
    ],
)
def test_schema_catches_a_wrong_object(mutate: Any, needle: str) -> None:
    (cc,) = render_compute_classes(plan(validate(_stack(FULL))))
    mutate(cc["spec"])
    assert needle in "\n".join(validate_other(cc))


def test_tpu7x_multi_host_class_names_the_workload_policy() -> None:
    data = config(region="us-central1", zones=["us-central1-c"])
    data["node_pools"] = [
        {"name": "iw", "tpu": {"generation": "tpu7x", "topology": "2x2x2"}, "max_slices": 2}
    ]
    data["nap"] = {"enabled": False}
    data["compute_classes"] = [{"name": "iw", "node_pool": "iw", "fallback": ["spot"]}]
    (cc,) = render_compute_classes(plan(validate(data)))
    assert cc["spec"]["priorities"][1]["placement"] == {"policyName": "ray-test-iw-0-wp"}
    assert cc["spec"]["priorities"][1]["tpu"] == {"type": "tpu7x", "count": 4, "topology": "2x2x2"}
    assert validate_other(cc) == []


# ------------------------------------------------------------------ pools and worker groups


def test_declared_pools_join_the_class_and_worker_groups_select_it() -> None:
    cfg = validate(_stack(FULL))
    specs = {s.name: s for s in node_pool_specs(plan(cfg))}
    for name in ("v6e-0", "v6e-1"):
        assert specs[name].labels["cloud.google.com/compute-class"] == "v6e-4x4"
        assert config_labels(specs[name])["cloud.google.com/compute-class"] == "v6e-4x4"
        assert ("cloud.google.com/compute-class", "v6e-4x4") in {
            (t.key, t.value) for t in specs[name].taints
        }
    assert "cloud.google.com/compute-class" not in specs["l4"].labels
    rc = next(m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayCluster")
    groups = {g["groupName"]: g["template"]["spec"] for g in rc["spec"]["workerGroupSpecs"]}
    assert groups["tpu"]["nodeSelector"]["cloud.google.com/compute-class"] == "v6e-4x4"
    assert {
        "key": "cloud.google.com/compute-class",
        "operator": "Equal",
        "value": "v6e-4x4",
        "effect": "NoSchedule",
    } in groups["tpu"]["tolerations"]
    assert "cloud.google.com/compute-class" not in groups["l4"]["nodeSelector"]


@pytest.mark.slow
def test_check_stack_passes_with_a_class() -> None:
    assert [p for p in check_stack(validate(_stack(FULL))) if "ComputeClass" in p] == []


@pytest.mark.slow
def test_the_class_is_applied_in_the_cluster_under_mocks() -> None:
    records, _ = render(_stack(FULL))
    classes = of_type(records, "kubernetes:cloud.google.com/v1:ComputeClass")
    assert len(classes) == 1
    assert classes[0]["inputs"]["spec"]["priorities"][0] == {"nodepools": ["v6e-0", "v6e-1"]}
    assert "namespace" not in classes[0]["inputs"]["metadata"]  # cluster-scoped
    pools = by_name(records, "gcp:container/nodePool:NodePool")
    assert pools["v6e-0"]["nodeConfig"]["labels"]["cloud.google.com/compute-class"] == "v6e-4x4"
    assert {
        "key": "cloud.google.com/compute-class",
        "value": "v6e-4x4",
        "effect": "NO_SCHEDULE",
    } in pools["v6e-0"]["nodeConfig"]["taints"]


# ------------------------------------------------------------- classes and Kueue flavors (rule 4)


def test_a_class_pool_that_is_a_kueue_flavor_gets_a_flavor_selecting_the_class() -> None:
    """team-a lists the v6e pool as a flavor and a class is on v6e: valid. The flavor selects
    the class (not the pool: no gke-nodepool, no stack labels, which the class's fallback nodes
    lack) and tolerates the class taint; a queued job's workers are admitted on it without a
    class selector of their own (Kueue adds the flavor's labels and tolerations)."""
    from components.capacity.checks import render_problems
    from components.capacity.preview import flavor_match, preview
    from components.capacity.render import QUEUE_LABEL, resource_flavor
    from tests.components.capacity.common import CAPACITY
    from tests.components.capacity.common import data as queued

    capacity = copy.deepcopy(CAPACITY)  # team-a's v6e flavor holds the job's two slices
    capacity["cluster_queues"][0]["flavors"][1]["nominal"] = {
        "cpu": 1440,
        "memory": "5600Gi",
        "google.com/tpu": 32,
    }
    cfg = validate(
        queued(
            capacity=capacity,
            compute_classes=[{"name": "v6e-fallback", "node_pool": "v6e", "fallback": ["spot"]}],
        )
    )
    flavor = resource_flavor(plan(cfg), "v6e")["spec"]
    assert flavor["nodeLabels"] == {
        "cloud.google.com/compute-class": "v6e-fallback",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    taint = {
        "key": "cloud.google.com/compute-class",
        "value": "v6e-fallback",
        "effect": "NoSchedule",
    }
    assert taint in flavor["nodeTaints"]
    assert flavor["tolerations"] == [{**taint, "operator": "Equal"}]
    # without the class the same pool's flavor neither selects nor tolerates a class
    plain = resource_flavor(plan(validate(queued())), "v6e")["spec"]
    assert "tolerations" not in plain
    assert "cloud.google.com/compute-class" not in plain["nodeLabels"]

    manifests = render_manifests(cfg, WORKING_DIR)
    rayjob = next(m for m in manifests if m["kind"] == "RayJob")
    assert rayjob["metadata"]["labels"][QUEUE_LABEL] == "team-a"
    (verdict,) = preview(plan(cfg), cfg.capacity, [rayjob])
    assert verdict.state == "admitted", verdict.reason
    workers = next(a for a in verdict.assignments if a.pod_set.name not in ("head", "submitter"))
    assert workers.flavor == "v6e" and not workers.provisioning
    assert "cloud.google.com/compute-class" not in workers.pod_set.node_selector
    # the pods need the flavor's toleration: without it the class taint refuses them
    bare = dict(resource_flavor(plan(cfg), "v6e"))
    bare["spec"] = {k: v for k, v in flavor.items() if k != "tolerations"}
    assert "untolerated taint cloud.google.com/compute-class=v6e-fallback" in (
        flavor_match(workers.pod_set, bare) or ""
    )
    assert render_problems(plan(cfg), cfg.capacity, manifests) == []


def test_a_class_on_a_queued_pool_is_refused() -> None:
    from tests.components.capacity.common import data as queued

    bad = queued(compute_classes=[{"name": "dws-fallback", "node_pool": "v6e-dws"}])
    found = "\n".join(problems(bad))
    assert "compute_classes[dws-fallback]: node pool 'v6e-dws' has provisioning: queued" in found


def test_a_class_on_a_pool_no_queue_lists_is_fine_and_queued_jobs_skip_its_selector() -> None:
    """The l4 pool is in no queue, its DWS twin l4-dws is: the class is valid next to Kueue. A
    queued job on l4 is admitted on l4-dws and its workers keep no class selector (the
    workaround in raycrs/render.py stays: Kueue's flavor places the pods, and DWS nodes have
    no class label); an unqueued cluster's group on l4 selects the class."""
    from components.capacity.preview import preview
    from components.capacity.render import QUEUE_LABEL
    from tests.components.capacity.common import CAPACITY
    from tests.components.capacity.common import data as queued

    base = queued()
    dws = {
        "name": "l4-dws",
        "gpu": {"type": "nvidia-l4", "count": 1},
        "max_nodes": 2,
        "provisioning": "queued",
        "labels": {"capacity": "dws"},
    }
    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][0]["flavors"].append(
        {"pool": "l4-dws", "nominal": {"cpu": 16, "memory": "64Gi", "nvidia.com/gpu": 2}}
    )
    job = {"name": "tune", "workload": "train_lm", "node_pool": "l4", "queue": "team-a"}
    rc = [{"name": "vision", "worker_groups": [{"name": "l4", "node_pool": "l4"}]}]
    cfg = validate(
        queued(
            node_pools=[*base["node_pools"], dws],
            capacity=capacity,
            jobs=[job],
            ray_clusters=rc,
            compute_classes=[{"name": "l4-spot", "node_pool": "l4"}],
        )
    )
    manifests = render_manifests(cfg, WORKING_DIR)
    rayjob = next(m for m in manifests if m["kind"] == "RayJob")
    assert rayjob["metadata"]["labels"][QUEUE_LABEL] == "team-a"
    for g in rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
        assert "cloud.google.com/compute-class" not in g["template"]["spec"]["nodeSelector"]
    (verdict,) = preview(plan(cfg), cfg.capacity, [rayjob])
    assert verdict.state == "admitted"
    assert {a.pod_set.name: a.flavor for a in verdict.assignments}["l4"] == "l4-dws"
    cluster = next(m for m in manifests if m["kind"] == "RayCluster")
    (group,) = cluster["spec"]["workerGroupSpecs"]
    assert group["template"]["spec"]["nodeSelector"]["cloud.google.com/compute-class"] == "l4-spot"


def test_a_class_flavor_keeps_only_the_shape_labels_of_its_pool() -> None:
    """A Spot GPU pool with stack labels: its plain flavor selects gke-spot, the pool and the
    labels; its class flavor only the class and the GPU shape (the class's on-demand priority
    nodes carry neither gke-spot nor the pool's labels)."""
    from components.capacity.render import resource_flavor
    from tests.components.capacity.common import CAPACITY
    from tests.components.capacity.common import data as queued

    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][0]["flavors"].append(
        {"pool": "l4", "nominal": {"cpu": 16, "memory": "64Gi", "nvidia.com/gpu": 2}}
    )
    base = queued(capacity=capacity)
    l4 = next(p for p in base["node_pools"] if p["name"] == "l4")
    l4.update(provisioning="spot", labels={"team": "vision"})
    plain = resource_flavor(plan(validate(base)), "l4")["spec"]["nodeLabels"]
    assert plain["cloud.google.com/gke-spot"] == "true" and plain["team"] == "vision"
    assert plain["cloud.google.com/gke-nodepool"] == "l4"
    with_class = {**base, "compute_classes": [{"name": "l4-cc", "node_pool": "l4"}]}
    labels = resource_flavor(plan(validate(with_class)), "l4")["spec"]["nodeLabels"]
    assert labels == {
        "cloud.google.com/compute-class": "l4-cc",
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-gpu-driver-version": "latest",
    }
