"""Elastic jobs render at their minimum (issue 37 item 5): prod's ``train-lm-jax-v6e``
(``slices: {min: 1, max: 2}``) brings a RayJob whose cluster starts on one slice and autoscales
to two, Kueue admits its first workload against one slice of quota, and the preview and
``raygke check`` judge it at its minimum with the maximum noted."""

from __future__ import annotations

import copy
from typing import Any

from components.capacity.checks import render_problems
from components.capacity.preview import preview
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.loader import stack_data_from_yaml, validate
from tests.helpers import WORKING_DIR, stack
from tests.raygke.test_cli import ROOT, raygke

JOB = "train-lm-jax-v6e"


def _rayjob(cfg) -> dict[str, Any]:
    (rj,) = [
        m
        for m in render_manifests(cfg, WORKING_DIR)
        if m["kind"] == "RayJob" and m["metadata"]["name"] == JOB
    ]
    return rj


def test_prods_elastic_job_renders_its_cluster_at_one_slice_growing_to_two():
    rj = _rayjob(stack("prod"))
    cluster = rj["spec"]["rayClusterSpec"]
    (group,) = cluster["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (1, 1, 2)
    assert group["numOfHosts"] == 4  # v6e 4x4: 4 hosts per slice
    # Kueue grows an elastic RayJob by workload slices through the in-tree autoscaler
    assert cluster["enableInTreeAutoscaling"] is True
    assert cluster["autoscalerOptions"]["idleTimeoutSeconds"] == 60
    assert rj["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"


def _one_slice_prod() -> dict[str, Any]:
    """Pulumi.prod.yaml with quota for one v6e 4x4 slice (16 chips) on each TPU flavor of
    ml-batch and nothing to borrow from research."""
    data = stack_data_from_yaml((ROOT / "Pulumi.prod.yaml").read_text())
    data = copy.deepcopy(data)
    for f in data["capacity"]["cluster_queues"][0]["flavors"]:
        if "google.com/tpu" in f["nominal"]:
            f["nominal"]["google.com/tpu"] = 16
    return data


def test_one_slice_of_quota_admits_it_at_its_minimum_with_the_maximum_noted():
    cfg = validate(_one_slice_prod())
    (v,) = [
        v
        for v in preview(plan(cfg), cfg.capacity, render_manifests(cfg, WORKING_DIR))
        if v.job == JOB
    ]
    assert v.state == "admitted"
    workers = next(a for a in v.assignments if a.pod_set.name == "tpu-v6e-4x4")
    assert (workers.pod_set.count, workers.flavor) == (4, "tpu-v6e-4x4")
    assert workers.pod_set.total["google.com/tpu"] == 16
    assert "judged at its minimum" in v.note
    assert "worker group 'tpu-v6e-4x4' 4 -> 8 pods (flavor 'tpu-v6e-4x4' holds at most 4)" in v.note
    assert not [
        p
        for p in render_problems(plan(cfg), cfg.capacity, render_manifests(cfg, WORKING_DIR))
        if JOB in p
    ]


def test_a_fixed_job_needing_two_slices_is_still_never_admitted_on_one():
    data = _one_slice_prod()
    (job,) = [j for j in data["jobs"] if j["name"] == JOB]
    job["slices"] = {"min": 2, "max": 2}
    cfg = validate(data)
    rj = _rayjob(cfg)
    assert (
        "enableInTreeAutoscaling" not in rj["spec"]["rayClusterSpec"]
        or not rj["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"]
    )
    lines = [
        p for p in render_problems(plan(cfg), cfg.capacity, [rj]) if "can never be admitted" in p
    ]
    assert lines and lines[0].startswith(f"jobs[{JOB}]: can never be admitted by queue ml-batch")


def test_raygke_queue_admits_prods_elastic_job_against_one_slice(tmp_path):
    import yaml

    doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    for f in doc["config"]["ray-gke:capacity"]["cluster_queues"][0]["flavors"]:
        if "google.com/tpu" in f["nominal"]:
            f["nominal"]["google.com/tpu"] = 16
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = raygke("queue", "--config", str(path))
    assert r.returncode == 0, r.stderr
    assert f"{JOB}: admitted at once" in r.stdout
    assert "worker group 'tpu-v6e-4x4' 4 -> 8 pods" in r.stdout
