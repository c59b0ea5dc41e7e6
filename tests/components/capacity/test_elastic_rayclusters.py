"""Queued RayClusters and Kueue's ElasticJobsViaWorkloadSlices gate (issue 21 items 1 and 6):
the gate in the rendered Helm values, the rules that refuse elastic queued work without it, a
queued RayCluster's render (labels, elastic annotation, no ComputeClass selector), Kueue's
RayCluster webhook rules and the preview of a RayCluster at its minimum size."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.capacity.checks import (
    class_selector_problems,
    raycluster_problems,
    render_problems,
)
from components.capacity.preview import preview
from components.capacity.render import (
    ELASTIC_ANNOTATION,
    ELASTIC_GATE,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    helm_values,
)
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.checks import check_stack
from components.stack.loader import validate
from tests.components.capacity.common import CAPACITY, data
from tests.helpers import WORKING_DIR


def _accelerators_first(capacity: dict[str, Any]) -> dict[str, Any]:
    """team-a with its flavors reordered: v6e, v6e-dws, then system (see elastic_flavor_problems)."""
    out = copy.deepcopy(capacity)
    flavors = out["cluster_queues"][0]["flavors"]
    out["cluster_queues"][0]["flavors"] = [*flavors[1:], flavors[0]]
    return out


def _cluster(**extra: Any) -> dict[str, Any]:
    return {
        "name": "interactive",
        "worker_groups": [{"name": "tpu", "node_pool": "v6e", "max_replicas": 2}],
        "queue": "team-a",
        **extra,
    }


def _stack(cluster: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    overrides.setdefault("capacity", _accelerators_first(CAPACITY))
    return data(ray_clusters=[cluster or _cluster()], **overrides)


def _problems(stack: dict[str, Any]) -> str:
    with pytest.raises(StackConfigError) as e:
        validate(stack)
    return str(e.value)


def _raycluster(cfg: Any) -> dict[str, Any]:
    return next(m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayCluster")


# ------------------------------------------------------------------------ the gate in Helm values


def test_helm_values_set_the_elastic_gate_from_the_stack() -> None:
    on = helm_values(validate(_stack()).capacity.kueue.elastic_jobs)["controllerManager"][
        "featureGates"
    ]
    assert on == [{"name": ELASTIC_GATE, "enabled": True}]
    stack = _stack(cluster=_cluster(autoscaling=False))
    stack["capacity"]["kueue"] = {"elastic_jobs": False}
    stack["jobs"] = []
    off = helm_values(validate(stack).capacity.kueue.elastic_jobs)["controllerManager"][
        "featureGates"
    ]
    assert off == [{"name": ELASTIC_GATE, "enabled": False}]


def test_gate_off_refuses_a_queued_autoscaling_raycluster_and_an_elastic_queued_job() -> None:
    stack = _stack()
    stack["capacity"]["kueue"] = {"elastic_jobs": False}
    stack["jobs"] = [
        {
            "name": "train",
            "workload": "train_lm_jax",
            "node_pool": "v6e",
            "queue": "team-a",
            "slices": {"min": 1, "max": 2},
        }
    ]
    msg = _problems(stack)
    assert "ray_clusters[interactive]: queue 'team-a' with autoscaling" in msg
    assert "capacity.kueue.elastic_jobs is false" in msg
    assert "jobs[train]: slices {min: 1, max: 2} with queue 'team-a' is an elastic" in msg
    # the same job unqueued is not Kueue's business
    stack["jobs"][0].pop("queue")
    stack["ray_clusters"][0]["autoscaling"] = False
    validate(stack)


# --------------------------------------------------------------------- a queued RayCluster's render


def test_queued_raycluster_renders_queue_priority_and_elastic_annotation() -> None:
    cfg = validate(_stack(cluster=_cluster(priority="high")))
    rc = _raycluster(cfg)
    assert rc["metadata"]["labels"][QUEUE_LABEL] == "team-a"
    assert rc["metadata"]["labels"][PRIORITY_LABEL] == "high"
    assert rc["metadata"]["annotations"][ELASTIC_ANNOTATION] == "true"
    assert "suspend" not in rc["spec"]
    assert check_stack(cfg) == []  # the CRD schemas, Kueue's webhook rules, the preview


def test_unqueued_or_fixed_size_raycluster_carries_no_kueue_marks() -> None:
    cluster = _cluster()
    cluster.pop("queue")
    rc = _raycluster(validate(_stack(cluster=cluster)))
    assert QUEUE_LABEL not in rc["metadata"]["labels"]
    assert ELASTIC_ANNOTATION not in rc["metadata"].get("annotations", {})
    fixed = _raycluster(validate(_stack(cluster=_cluster(autoscaling=False))))
    assert fixed["metadata"]["labels"][QUEUE_LABEL] == "team-a"
    assert ELASTIC_ANNOTATION not in fixed["metadata"].get("annotations", {})


def test_queued_raycluster_references_are_checked() -> None:
    assert "ray_clusters[interactive].queue: 'nope' is not a capacity.local_queues entry" in (
        _problems(_stack(cluster=_cluster(queue="nope")))
    )
    assert "ray_clusters[interactive].priority: 'low' is not a capacity.priority_classes" in (
        _problems(_stack(cluster=_cluster(priority="low")))
    )
    cluster = _cluster(priority="high")
    cluster.pop("queue")
    assert "ray_clusters[interactive].priority: 'high' needs queue" in _problems(
        _stack(cluster=cluster)
    )


def test_unqueued_raycluster_on_a_queued_pool_is_refused() -> None:
    cluster = _cluster(worker_groups=[{"name": "dws", "node_pool": "v6e-dws", "max_replicas": 1}])
    cluster.pop("queue")
    msg = _problems(_stack(cluster=cluster))
    assert "ray_clusters[interactive].worker_groups[dws]: node pool 'v6e-dws' has " in msg
    assert "set queue: <local queue> on the cluster" in msg


# ---------------------------------------------------------------- Kueue's RayCluster webhook rules


def test_raycluster_webhook_rules() -> None:
    rc = _raycluster(validate(_stack()))
    assert raycluster_problems(rc) == []
    assert "can use autoscaling only as an elastic job" in "\n".join(
        raycluster_problems(rc, elastic_gate=False)
    )
    bare = copy.deepcopy(rc)
    del bare["metadata"]["annotations"][ELASTIC_ANNOTATION]
    assert "not an elastic job" in "\n".join(raycluster_problems(bare))
    bad = copy.deepcopy(rc)
    group = bad["spec"]["workerGroupSpecs"][0]
    bad["spec"]["workerGroupSpecs"] = [dict(group, groupName="head")] + [
        dict(group, groupName=f"g{i}") for i in range(17)
    ]
    bad["spec"]["suspend"] = True
    found = "\n".join(raycluster_problems(bad))
    assert "groupName 'head' is reserved" in found
    assert "19 pod sets; a Kueue workload has at most 18" in found
    assert "suspend" not in found  # Kueue's own defaulter sets it on create
    assert raycluster_problems(dict(rc, spec={**rc["spec"], "suspend": True})) == []


# ---------------------------------------------------------------------------------- the preview


def test_preview_admits_a_raycluster_at_its_minimum_size() -> None:
    cfg = validate(
        _stack(
            cluster=_cluster(
                worker_groups=[
                    {"name": "tpu", "node_pool": "v6e", "min_replicas": 1, "max_replicas": 2}
                ]
            )
        )
    )
    (v,) = [v for v in preview(plan(cfg), cfg.capacity, [_raycluster(cfg)])]
    assert v.where == "ray_clusters[interactive]" and v.state == "admitted"
    counts = {a.pod_set.name: (a.pod_set.count, a.flavor) for a in v.assignments}
    # one v6e 4x4 slice = 4 hosts; no submitter pod set for a RayCluster
    assert counts == {"head": (1, "system"), "tpu": (4, "v6e")}


def test_zero_pod_accelerator_group_behind_the_system_flavor_is_refused() -> None:
    """team-a lists system first: a TPU group at 0 pods fits its zero quota, and Kueue would keep
    that flavor for every scale-up; with the accelerator flavors first the same cluster passes."""
    cfg = validate(_stack(capacity=copy.deepcopy(CAPACITY)))
    found = "\n".join(check_stack(cfg))
    assert (
        "ray_clusters[interactive]: worker group 'tpu' starts at 0 pods and would be admitted "
        "on flavor 'system' of cluster queue team-a, which has no google.com/tpu quota"
    ) in found
    assert check_stack(validate(_stack())) == []


def test_a_queued_pod_set_selecting_a_class_on_a_classless_flavor_is_refused() -> None:
    """The render never gives a queued object's pods a class selector; a manifest where it does
    (the case the compute_class workaround avoids) is caught with the pool and flavor named."""
    cfg = validate(_stack())
    rc = _raycluster(cfg)
    selector = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]
    assert "cloud.google.com/compute-class" not in selector
    selector["cloud.google.com/compute-class"] = "v6e-fallback"
    rc["spec"]["workerGroupSpecs"][0]["minReplicas"] = 1
    found = "\n".join(class_selector_problems(plan(cfg), preview(plan(cfg), cfg.capacity, [rc])))
    assert "pod set 'tpu' selects ComputeClass 'v6e-fallback' but would be admitted on " in found
    assert "flavor 'v6e'" in found
    assert render_problems(plan(cfg), cfg.capacity, [_raycluster(cfg)]) == []
