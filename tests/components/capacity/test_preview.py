"""The admission preview (components/capacity/preview.py): fits, waits and never fits."""

from __future__ import annotations

import copy

from components.capacity.preview import flavor_match, pod_sets, preview
from components.capacity.render import resource_flavor
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from tests.components.capacity.common import CAPACITY, JOB, cfg
from tests.helpers import WORKING_DIR


def _verdict(c):
    (v,) = preview(plan(c), c.capacity, render_manifests(c, WORKING_DIR))
    return v


def test_pod_sets_follow_kueue_head_workers_submitter():
    c = cfg()
    (job,) = [m for m in render_manifests(c, WORKING_DIR) if m["kind"] == "RayJob"]
    sets = pod_sets(job)
    assert [p.name for p in sets] == ["head", "v6e", "submitter"]
    head, workers, submitter = sets
    assert head.count == 1 and head.per_pod["cpu"] == 2.0 and head.per_pod["memory"] == 8 * 2**30
    assert workers.count == 8  # 2 slices x 4 hosts (replicas x numOfHosts)
    assert workers.per_pod["google.com/tpu"] == 4
    assert submitter.count == 1 and submitter.per_pod["cpu"] == 0.5


def test_fits_at_once_on_the_first_flavor():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][1]["nominal"] = {
        "cpu": 1400,
        "memory": "5200Gi",
        "google.com/tpu": 32,
    }
    v = _verdict(cfg(capacity=cap))
    assert v.state == "admitted"
    assert [(a.pod_set.name, a.flavor, a.mode) for a in v.assignments] == [
        ("head", "system", "nominal"),
        ("v6e", "v6e", "nominal"),
        ("submitter", "system", "nominal"),
    ]
    assert not any(a.provisioning for a in v.assignments)


def test_falls_back_to_dws_and_waits_for_borrowed_quota():
    v = _verdict(cfg())  # 32 chips: 16 on v6e, 16 + 16 borrowable from team-b on v6e-dws
    assert v.state == "waits" and "cohort ml" in v.reason
    workers = v.assignments[1]
    assert (workers.flavor, workers.mode, workers.provisioning) == ("v6e-dws", "borrow", True)


def test_never_fits_names_the_resource_and_both_numbers():
    cap = copy.deepcopy(CAPACITY)
    del cap["cluster_queues"][1]  # no cohort partner: nothing to borrow
    cap["local_queues"] = cap["local_queues"][:1]
    v = _verdict(cfg(capacity=cap))
    assert v.state == "never"
    assert v.shortfall == ("google.com/tpu", 32.0, 16.0)
    assert "needs google.com/tpu 32" in v.reason and "has 16" in v.reason


def test_never_fits_names_the_shortfall_of_the_flavor_that_comes_closest():
    """v6e has half the chips; v6e-dws has every chip but is a little short of CPU: the reason is
    v6e-dws's CPU (raise it to admit the job), not v6e's chips and not the system flavor's."""
    cap = copy.deepcopy(CAPACITY)
    del cap["cluster_queues"][1]
    cap["local_queues"] = cap["local_queues"][:1]
    (job,) = [m for m in render_manifests(cfg(), WORKING_DIR) if m["kind"] == "RayJob"]
    (workers,) = [ps for ps in pod_sets(job) if ps.name == "v6e"]
    short = int(workers.total["cpu"] * 0.9)
    cap["cluster_queues"][0]["flavors"][2]["nominal"] = {
        "cpu": short,
        "memory": "5200Gi",
        "google.com/tpu": 32,
    }
    v = _verdict(cfg(capacity=cap))
    assert v.state == "never"
    assert v.shortfall == ("cpu", workers.total["cpu"], float(short)), v.reason
    assert f"has {short}" in v.reason


def test_borrowing_limit_caps_what_the_cohort_lends():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][2]["borrowing_limit"] = {"google.com/tpu": 8}
    v = _verdict(cfg(capacity=cap))
    assert v.state == "never" and v.shortfall == ("google.com/tpu", 32.0, 24.0)


def test_flavor_match_on_taints_and_labels():
    c = cfg()
    (job,) = [m for m in render_manifests(c, WORKING_DIR) if m["kind"] == "RayJob"]
    head, workers, _ = pod_sets(job)
    assert flavor_match(workers, resource_flavor(plan(c), "v6e")) is None
    assert (
        flavor_match(workers, resource_flavor(plan(c), "v6e-dws")) is None
    )  # flavor tolerates gke-queued
    assert "untolerated taint google.com/tpu" in flavor_match(head, resource_flavor(plan(c), "v6e"))
    assert "nodeSelector cloud.google.com/gke-nodepool=system" in flavor_match(
        head, resource_flavor(plan(c), "cpu")
    )


def test_unqueued_jobs_are_not_previewed():
    no_queue = {k: v for k, v in JOB.items() if k != "queue"}
    c = cfg(jobs=[no_queue])
    assert preview(plan(c), c.capacity, render_manifests(c, WORKING_DIR)) == []
