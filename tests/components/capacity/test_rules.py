"""Capacity rules (components/capacity/rules.py): each with a valid and an invalid case."""

from __future__ import annotations

import copy

import pytest

from components.capacity.checks import queued_ray_problems, rayjob_problems, render_problems
from components.capacity.rules import flavor_quota_shape_problems, pool_problems
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.checks import check_stack
from components.stack.loader import validate
from components.stack.rules import run_rule
from tests.components.capacity.common import CAPACITY, DWS_POOL, JOB, cfg, data
from tests.helpers import WORKING_DIR


def _problems(**overrides) -> str:
    with pytest.raises(StackConfigError) as e:
        validate(data(**overrides))
    return str(e.value)


def test_valid_queued_stack_has_no_problems():
    assert check_stack(cfg()) == []


def test_queued_job_on_an_existing_cluster_is_refused_citing_kueue():
    rc = [{"name": "rc", "worker_groups": [{"name": "tpu", "node_pool": "v6e"}]}]
    job = {
        "name": "train",
        "workload": "train_lm_jax",
        "cluster": "rc",
        "worker_group": "tpu",
        "queue": "team-a",
    }
    msg = _problems(ray_clusters=rc, jobs=[job])
    assert "should not use an existing cluster" in msg and "rayjob_webhook.go" in msg


def test_queued_job_must_shut_its_cluster_down():
    msg = _problems(jobs=[{**JOB, "shutdown_after_job_finishes": False}])
    assert "should delete the cluster after finishing" in msg


def test_kueue_owns_suspend():
    msg = _problems(jobs=[{**JOB, "suspend": True}])
    assert "Kueue owns spec.suspend" in msg


def test_unknown_queue_and_priority_are_refused():
    assert "queue: 'nope' is not a capacity.local_queues entry" in _problems(
        jobs=[{**JOB, "queue": "nope"}]
    )
    assert "priority: 'top' is not" in _problems(jobs=[{**JOB, "priority": "top"}])
    no_queue = {k: v for k, v in JOB.items() if k != "queue"}
    assert "needs queue" in _problems(jobs=[{**no_queue, "priority": "high"}])


def test_job_on_a_queued_pool_needs_a_queue():
    no_queue = {k: v for k, v in JOB.items() if k != "queue"}
    msg = _problems(jobs=[{**no_queue, "node_pool": "v6e-dws"}])
    assert "provisioning: queued" in msg and "set queue" in msg
    validate(data(jobs=[{**JOB, "node_pool": "v6e-dws"}]))  # with a queue: fine


def test_flavor_on_an_undeclared_pool_and_local_queue_on_an_undeclared_cluster_queue():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][1]["pool"] = "v7"
    cap["local_queues"][0]["cluster_queue"] = "nobody"
    msg = _problems(capacity=cap)
    assert "pool 'v7' is not a declared node pool" in msg
    assert "cluster_queue: 'nobody' is not declared" in msg


def test_queued_pool_scales_from_zero_and_needs_its_gke_version():
    pools = data()["node_pools"]
    pools[-1] = {**DWS_POOL, "min_slices": 1}
    assert "scales from 0" in _problems(node_pools=pools)
    # GKE offers no minor this old for new clusters any more (the cluster block refuses it), so
    # the rule is exercised on a model copy that skips validation
    c = cfg()
    old = c.model_copy(
        update={"cluster": c.cluster.model_copy(update={"min_master_version": "1.28.1-gke.100"})}
    )
    (problem,) = pool_problems(old.node_pools, old.cluster)
    line = str(problem)
    assert "needs GKE 1.33.0-gke.1712000" in line and "provisioningrequest" in line
    assert problem.path == "node_pools[v6e-dws].provisioning", problem
    assert list(pool_problems(c.node_pools, c.cluster)) == []


def test_flex_start_without_queueing_refuses_multi_host_tpu_and_cpu():
    pools = data()["node_pools"]
    pools[-1] = {**DWS_POOL, "provisioning": "flex-start"}
    msg = _problems(node_pools=pools, jobs=[])
    assert "single-host TPU slices only" in msg and "dws-flex-start-training" in msg
    pools[-1] = {
        **DWS_POOL,
        "tpu": {"generation": "v6e", "topology": "2x2"},
        "max_slices": 8,  # 8 x 4 chips hold the queues' 32 chips of quota on this flavor
        "provisioning": "flex-start",
    }
    validate(data(node_pools=pools, jobs=[]))  # single-host: fine
    pools[0] = {**pools[0], "provisioning": "flex-start"}
    assert "for TPU and GPU pools" in _problems(node_pools=pools, jobs=[])


def _rayjob(c):
    (job,) = [m for m in render_manifests(c, WORKING_DIR) if m["kind"] == "RayJob"]
    return job


def test_rendered_rayjob_rules_autoscaling_head_name_and_pod_set_limit_not_suspend():
    job = _rayjob(cfg())
    assert rayjob_problems(job) == []
    bad = copy.deepcopy(job)
    bad["spec"]["suspend"] = False
    bad["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    group = bad["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    bad["spec"]["rayClusterSpec"]["workerGroupSpecs"] = [
        {**group, "groupName": "head" if i == 0 else f"g{i}"} for i in range(18)
    ]
    text = "\n".join(rayjob_problems(bad))
    # spec.suspend is Kueue's to set (its create-time defaulter), not a refusal of Kueue's webhook
    assert "suspend" not in text
    for suspend in (True, False):
        assert rayjob_problems(dict(job, spec={**job["spec"], "suspend": suspend})) == []
    assert "only use autoscaling when workload slicing is enabled" in text
    assert "'head' is reserved" in text
    assert "20 pod sets; a Kueue workload has at most 18" in text  # head + 18 + submitter


def test_job_that_can_never_be_admitted_is_a_check_error_with_both_numbers():
    """The job needs 2 slices (32 chips); each flavor holds one slice (16) and team-b lends
    none of its v6e-dws chips, so no flavor ever has 32."""
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][1]["flavors"][1]["lending_limit"] = {"google.com/tpu": 0}
    c = cfg(capacity=cap)
    (line,) = [p for p in check_stack(c) if "can never be admitted" in p]
    assert line.startswith("jobs[train]: can never be admitted by queue team-a")
    assert "needs google.com/tpu 32" in line and "has 16 (nominal plus borrowable)" in line


def test_head_never_joins_the_provisioning_request():
    cap = copy.deepcopy(CAPACITY)
    # the system flavor gone: the head and submitter would land on the DWS flavor
    cap["cluster_queues"][1]["flavors"] = [cap["cluster_queues"][1]["flavors"][1]]
    c = cfg(capacity=cap, jobs=[{**JOB, "node_pool": "v6e-dws", "queue": "team-b"}])
    text = "\n".join(render_problems(plan(c), c.capacity, render_manifests(c, WORKING_DIR)))
    # the head does not tolerate the TPU taint: it can never join the DWS request; without a
    # non-DWS flavor for it the job is never admitted, and check says why
    assert (
        "jobs[train]: can never be admitted by queue team-b: pod set 'head' matches no flavor"
        in text
    )
    assert "untolerated taint google.com/tpu=present:NoSchedule" in text


def test_two_flavors_selecting_the_same_nodes_are_refused():
    pools = data()["node_pools"]
    pools[-1] = {**DWS_POOL, "labels": {}}
    c = cfg(node_pools=pools)
    text = "\n".join(render_problems(plan(c), c.capacity, render_manifests(c, WORKING_DIR)))
    assert "flavors 'v6e' and 'v6e-dws' select the same nodes" in text


def test_flavor_quota_above_what_the_pool_can_hold_is_refused_with_both_numbers():
    """v6e-dws holds at most 2 slices x 16 chips = 32; team-a 16 + team-b 16 fit, 24 + 16 do
    not (Kueue would admit jobs whose slices never come)."""
    assert check_stack(cfg()) == []
    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][0]["flavors"][2]["nominal"]["google.com/tpu"] = 24
    msg = _problems(capacity=capacity)
    assert (
        "flavor 'v6e-dws' has google.com/tpu nominal quota 40 in all (team-a 24, team-b 16), "
        "more than node pool 'v6e-dws' can ever hold (2 slices x 16 = 32)"
    ) in msg


def test_flavor_quota_below_one_slice_is_refused():
    """8 chips cannot hold one v6e 4x4 slice (16 chips, admitted as one pod set); 0 is fine
    (the flavor is then for borrowing only)."""
    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][1]["cohort"] = None
    capacity["cluster_queues"][0]["cohort"] = None
    capacity["cluster_queues"][1]["flavors"][1]["nominal"]["google.com/tpu"] = 8
    msg = _problems(capacity=capacity)
    assert (
        "capacity.cluster_queues[team-b].flavors[v6e-dws]: google.com/tpu nominal plus "
        "borrowable quota is 8, less than one TPU v6e 4x4 slice (16)"
    ) in msg
    capacity["cluster_queues"][1]["flavors"][1]["nominal"]["google.com/tpu"] = 0
    jobs = [dict(JOB, priority="high")]
    validate(data(capacity=capacity, jobs=jobs))


def test_borrowing_counts_toward_one_slice():
    """team-b has 0 nominal chips on v6e-dws but borrows team-a's 16: one slice, accepted."""
    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][1]["flavors"][1]["nominal"]["google.com/tpu"] = 0
    validate(data(capacity=capacity))


def test_a_class_flavor_with_fallbacks_may_hold_more_than_its_pool():
    """team-a's v6e flavor asks 48 chips; the v6e pool holds 2 slices x 16 = 32. Without a
    ComputeClass that is refused; with a class on v6e whose fallbacks create more slices (Spot)
    the flavor selects the class and the pool's size no longer bounds it; a class without
    fallbacks (the pool only) is still bounded by the pool."""
    capacity = copy.deepcopy(CAPACITY)
    capacity["cluster_queues"][0]["flavors"][1]["nominal"]["google.com/tpu"] = 48
    refused = "flavor 'v6e' has google.com/tpu nominal quota 48 in all (team-a 48)"
    assert refused in _problems(capacity=capacity)
    spot = [{"name": "v6e-cc", "node_pool": "v6e", "fallback": ["spot"]}]
    assert not run_rule(flavor_quota_shape_problems, cfg(capacity=capacity, compute_classes=spot))
    only_pool = [{"name": "v6e-cc", "node_pool": "v6e", "fallback": []}]
    assert refused in _problems(capacity=capacity, compute_classes=only_pool)


def test_a_queued_rayjob_on_an_existing_cluster_is_not_kueues_and_both_is_refused():
    """Kueue v0.19.2 rayjob_webhook.go validateCreate: clusterSelector alone is not managed
    (nothing more checked); with a rayClusterSpec it is refused."""
    job = _rayjob(cfg())
    both = dict(job, spec={**job["spec"], "clusterSelector": {"ray.io/cluster": "x"}})
    (p,) = rayjob_problems(both)
    assert "spec.clusterSelector with spec.rayClusterSpec" in p and "existing cluster" in p
    alone = copy.deepcopy(both)
    del alone["spec"]["rayClusterSpec"]
    assert rayjob_problems(alone) == []
    # not Kueue's at all: not even its queue-name rule runs (validateCreate returns first)
    alone["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Not_A_Name"
    assert queued_ray_problems(alone) == []
    assert "queue-name" in "\n".join(queued_ray_problems(dict(job, metadata=alone["metadata"])))
