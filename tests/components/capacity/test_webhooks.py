"""Kueue's validating webhooks ported from v0.19.2 (components/capacity/webhooks.py): each rule on
a rendered object, and the stack field a refused object leads back to."""

from __future__ import annotations

import copy

import pytest

from components.capacity.checks import render_problems
from components.capacity.render import cluster_queue, render_capacity, resource_flavor
from components.capacity.webhooks import (
    LENDING_LIMIT_MSG,
    validate_cluster_queue,
    validate_cohort,
    validate_ray_object,
    validate_resource_flavor,
)
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.components.capacity.common import CAPACITY, cfg, data
from tests.helpers import WORKING_DIR


def _items(**overrides) -> list:
    with pytest.raises(StackConfigError) as e:
        validate(data(**overrides))
    return e.value.items


def test_every_rendered_kueue_object_of_the_test_stack_passes_the_webhooks():
    objects = render_capacity(plan(cfg()), cfg().capacity)
    assert {o["kind"] for o in objects} >= {"ClusterQueue", "ResourceFlavor", "LocalQueue"}
    for o in objects:
        if o["kind"] == "ClusterQueue":
            assert validate_cluster_queue(o) == []
        if o["kind"] == "ResourceFlavor":
            assert validate_resource_flavor(o) == []


def test_lending_limit_above_nominal_is_refused_at_the_stack_field_with_kueues_reason():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][1]["lending_limit"] = {"google.com/tpu": 32}
    (p,) = [p for p in _items(capacity=cap) if LENDING_LIMIT_MSG in p]
    # the resource by name, in the stack field (the key --set takes) and in Kueue's path: the
    # rendered index (resources[2]) names nothing in the stack file
    assert p.path == "capacity.cluster_queues[team-a].flavors[v6e].lending_limit[google.com/tpu]"
    assert p == (
        "capacity.cluster_queues[team-a].flavors[v6e].lending_limit[google.com/tpu]: Kueue's "
        "ClusterQueue webhook refuses ClusterQueue team-a: spec.resourceGroups[0].flavors[1]."
        'resources[google.com/tpu].lendingLimit: Invalid value: "32": must be less than or '
        "equal to the nominalQuota (kueue v0.19.2 pkg/webhooks/clusterqueue_webhook.go)"
    )
    assert "resources[2]" not in p
    # at the nominal quota it is accepted
    cap["cluster_queues"][0]["flavors"][1]["lending_limit"] = {"google.com/tpu": 16}
    validate(data(capacity=cap))


def test_lending_limit_on_a_resource_without_nominal_quota_is_refused():
    """A covered resource left out of ``nominal`` is rendered with nominalQuota 0."""
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][1]["flavors"][0]["lending_limit"] = {"google.com/tpu": 1}
    paths = [p.path for p in _items(capacity=cap) if LENDING_LIMIT_MSG in p]
    assert paths == [
        "capacity.cluster_queues[team-b].flavors[system].lending_limit[google.com/tpu]"
    ]


def _cq():
    c = cfg()
    return cluster_queue(plan(c), c.capacity.cluster_queues[0])


def test_cluster_queue_resource_order_duplicates_and_limits_without_cohort():
    cq = _cq()
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors[0]["resources"][0], flavors[0]["resources"][1] = (
        flavors[0]["resources"][1],
        flavors[0]["resources"][0],
    )
    flavors[2]["name"] = flavors[1]["name"]
    flavors[1]["resources"][0]["borrowingLimit"] = "-1"
    del cq["spec"]["cohortName"]
    text = [str(e) for e in validate_cluster_queue(cq)]
    assert (
        'spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must '
        "match the name in coveredResources" in text
    )
    assert 'spec.resourceGroups[0].flavors[2].name: Duplicate value: "v6e"' in text
    limit = "spec.resourceGroups[0].flavors[1].resources[0].borrowingLimit"
    assert f'{limit}: Invalid value: "-1": must be nil when cohort is empty' in text
    assert f'{limit}: Invalid value: "-1": must be greater than or equal to 0' in text


def test_cluster_queue_preemption_fungibility_and_on_flavors():
    cq = _cq()
    cq["spec"]["preemption"] = {
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    cq["spec"]["flavorFungibility"] = {
        "preference": "BorrowingOverPreemption",
        "whenCanBorrow": "MayStopSearch",
    }
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] = ["nope"]
    text = "\n".join(map(str, validate_cluster_queue(cq)))
    assert "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never" in text
    assert "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor" in text
    assert 'onFlavors[0]: Unsupported value: "nope"' in text


def test_cohort_allows_lending_above_nominal_but_wants_a_parent_for_limits():
    group = copy.deepcopy(_cq()["spec"]["resourceGroups"])
    group[0]["flavors"][1]["resources"][2]["lendingLimit"] = "64"
    cohort = {"kind": "Cohort", "metadata": {"name": "ml"}, "spec": {"resourceGroups": group}}
    assert [str(e) for e in validate_cohort(cohort)] == [
        'spec.resourceGroups[0].flavors[1].resources[2].lendingLimit: Invalid value: "64": '
        "must be nil when parent is empty"
    ]
    cohort["spec"]["parentName"] = "org"
    assert validate_cohort(cohort) == []


def test_resource_flavor_labels_taints_and_tolerations():
    rf = resource_flavor(plan(cfg()), "v6e")
    rf["spec"]["nodeLabels"]["bad key!"] = "x"
    rf["spec"]["nodeTaints"].append(dict(rf["spec"]["nodeTaints"][0], value="other"))
    rf["spec"]["tolerations"] = [{"key": "-no-", "operator": "Exists"}]
    text = "\n".join(map(str, validate_resource_flavor(rf)))
    assert 'spec.nodeLabels: Invalid value: "bad key!"' in text
    assert "taints must be unique by key and effect pair" in text
    assert 'spec.tolerations[0].key: Invalid value: "-no-"' in text


def test_a_pool_label_kueue_refuses_is_refused_at_the_pools_labels():
    pools = data()["node_pools"]
    (i,) = [n for n, p in enumerate(pools) if p["name"] == "v6e"]
    pools[i] = {**pools[i], "labels": {"team": "-a-"}}
    paths = {p.path for p in _items(node_pools=pools) if "ResourceFlavor webhook" in p}
    assert paths == {"node_pools[v6e].labels"}


def _rayjob():
    c = cfg()
    (job,) = [m for m in render_manifests(c, WORKING_DIR) if m["kind"] == "RayJob"]
    return job


def test_ray_integration_rules_of_the_rayjob_webhook():
    job = _rayjob()
    assert validate_ray_object(job) == []
    both = copy.deepcopy(job)
    both["spec"]["clusterSelector"] = {"ray.io/cluster": "x"}
    assert [e.path for e in validate_ray_object(both)] == ["spec.clusterSelector"]
    neither = copy.deepcopy(job)
    del neither["spec"]["rayClusterSpec"]
    (e,) = validate_ray_object(neither)
    assert e.kind == "Required value" and "rayClusterSpec is required" in str(e)
    bad = copy.deepcopy(job)
    bad["spec"]["shutdownAfterJobFinishes"] = False
    bad["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Team_A"
    paths = [e.path for e in validate_ray_object(bad)]
    assert paths == ["spec.shutdownAfterJobFinishes", "metadata.labels[kueue.x-k8s.io/queue-name]"]


def test_queued_rayservice_gets_the_rayservice_webhook():
    job = _rayjob()
    svc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve", "labels": dict(job["metadata"]["labels"])},
        "spec": {
            "rayClusterConfig": dict(job["spec"]["rayClusterSpec"], enableInTreeAutoscaling=True)
        },
    }
    (e,) = validate_ray_object(svc)
    assert e.path == "spec.rayClusterConfig.enableInTreeAutoscaling"
    svc["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    assert validate_ray_object(svc) == []
    assert validate_ray_object(svc, gate=False) != []
    lines = render_problems(plan(cfg()), cfg().capacity, [svc])
    assert lines == []
    svc["metadata"].pop("annotations")
    (line,) = render_problems(plan(cfg()), cfg().capacity, [svc])
    assert line.startswith("RayService serve: spec.rayClusterConfig.enableInTreeAutoscaling")
    assert "raycluster/common.go" in line


# ------------------------------------------------------------------ where Kueue is installed


def test_kueue_in_the_ray_namespace_is_refused_at_its_field():
    cap = copy.deepcopy(CAPACITY)
    cap["kueue"] = {"namespace": "ray"}
    (p,) = [p for p in _items(capacity=cap) if p.path == "capacity.kueue.namespace"]
    assert "is the Ray namespace" in p and "default-deny ingress" in p
    cap["kueue"] = {"namespace": "kueue-system"}
    validate(data(capacity=cap))


@pytest.mark.parametrize("ns", ["kube-system", "gke-managed-system", "gmp-system", "default"])
def test_kueue_in_a_reserved_namespace_is_refused(ns):
    cap = copy.deepcopy(CAPACITY)
    cap["kueue"] = {"namespace": ns}
    text = "\n".join(_items(capacity=cap))
    assert f"kueue.namespace {ns!r} is" in text and "use a namespace of its own" in text


def test_a_refused_gpu_lending_limit_names_nvidia_gpu_not_its_index():
    """prod's ml-batch queue renders the h100 flavor's quota as resources cpu, memory,
    google.com/tpu, nvidia.com/gpu: a GPU lending limit above the nominal 16 is refused naming
    nvidia.com/gpu (not resources[3]), at the field --set takes."""
    from components.stack.loader import stack_data_from_yaml
    from tests.helpers import ROOT

    prod = stack_data_from_yaml((ROOT / "Pulumi.prod.yaml").read_text())
    (queue,) = [q for q in prod["capacity"]["cluster_queues"] if q["name"] == "ml-batch"]
    (h100,) = [f for f in queue["flavors"] if f["pool"] == "h100"]
    h100["lending_limit"] = {"nvidia.com/gpu": 32}
    with pytest.raises(StackConfigError) as e:
        validate(prod)
    (p,) = [p for p in e.value.items if LENDING_LIMIT_MSG in p]
    field = "capacity.cluster_queues[ml-batch].flavors[h100].lending_limit[nvidia.com/gpu]"
    assert p.path == field
    assert p.startswith(f"{field}: Kueue's ClusterQueue webhook refuses ClusterQueue ml-batch: ")
    assert '.resources[nvidia.com/gpu].lendingLimit: Invalid value: "32"' in p
    assert "resources[3]" not in p
