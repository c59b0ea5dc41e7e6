"""The path of a RayJob's render (issue 48): how many times rendering one job's manifest enters
each module of ``components`` from another (calls of module-level functions, traced with
``sys.setprofile``). The issue's target: each module once, ``pod.py`` at most twice (the
cluster's pods in one call, the submitter's in another); the ceilings below hold what the render
does today and only go down. The RayService's render is held the same way."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from components.images.render import planned_refs
from components.plan.plan import plan
from components.raycrs.rayjob import ray_job_manifest
from components.raycrs.serve import ray_service_manifest
from tests.helpers import stack

# module -> the most entries one job's render may make into it (today's figures).
CEILINGS = {
    "components.raycrs.pod": 2,  # cluster_pods (from raycluster.py), submitter_template
    "components.raycrs.raycluster": 2,  # ray_cluster_spec, object_metadata
    "components.raycrs.rayjob": 1,
    "components.raycrs.scaling": 1,  # job_workers
    "components.images.render": 1,  # job_image_kind
    "components.storage.fuse": 2,  # mounts, cache_pod_settings (once per cluster, from pod.py)
}

# module -> the most entries one service's render may make into it (today's figures).
SERVICE_CEILINGS = {
    "components.raycrs.pod": 1,  # cluster_pods (from raycluster.py)
    "components.raycrs.raycluster": 2,  # ray_cluster_spec, object_metadata
    "components.raycrs.serve": 1,
}


def entries_of(render: Callable[[], Any]) -> Counter[str]:
    """Module -> entries from another module while ``render()`` runs."""
    entries: Counter[str] = Counter()

    def on_call(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        function = frame.f_globals.get(frame.f_code.co_name)
        if (
            not module.startswith("components.")
            or getattr(function, "__code__", None) is not frame.f_code
        ):
            return  # not a module-level function of ours (a method, property, comprehension)
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if caller != module:
            entries[module] += 1

    sys.setprofile(on_call)
    try:
        render()
    finally:
        sys.setprofile(None)
    return entries


def render_entries(stack_name: str, job_name: str) -> Counter[str]:
    """Module -> entries from another module while ``ray_job_manifest`` renders ``job_name`` of
    the shipped stack ``stack_name`` (the plan built before, as every render finds it)."""
    cfg = stack(stack_name)
    p = plan(cfg)
    target = p.job(next(j for j in cfg.jobs if j.name == job_name))
    images = planned_refs(p.context, cfg.ray.images)
    return entries_of(lambda: ray_job_manifest(p, target, "gs://bucket/workloads.zip", images))


def test_the_trace_counts_entries_from_other_modules_only() -> None:
    """The tracer is not vacuous: the render enters pod.py (cluster_pods, from raycluster.py;
    submitter_template) and the job module itself once (the call from this test)."""
    entries = render_entries("prod", "train-lm-h100")
    assert entries["components.raycrs.rayjob"] == 1
    assert entries["components.raycrs.pod"] == 2 and entries["components.raycrs.raycluster"] >= 1


@pytest.mark.parametrize("stack_name", ["prod", "scale"])
def test_a_job_render_enters_the_pod_and_cluster_builders_at_most_the_ceilings(
    stack_name: str,
) -> None:
    cfg = stack(stack_name)
    for job in cfg.jobs:
        if job.cluster:  # a job on a long-lived cluster renders no pods of its own
            continue
        entries = render_entries(stack_name, job.name)
        over = {m: (entries[m], n) for m, n in CEILINGS.items() if entries[m] > n}
        assert not over, (
            f"{stack_name} {job.name}: entries (found, ceiling) {over}; all: {dict(entries)}"
        )


def test_a_service_render_enters_the_pod_and_cluster_builders_at_most_the_ceilings() -> None:
    cfg = stack("prod")
    p = plan(cfg)
    images = planned_refs(p.context, cfg.ray.images)
    assert cfg.services
    for svc in cfg.services:
        entries = entries_of(lambda svc=svc: ray_service_manifest(p, svc, "gs://b/w.zip", images))
        assert entries["components.raycrs.serve"] == 1
        over = {m: (entries[m], n) for m, n in SERVICE_CEILINGS.items() if entries[m] > n}
        assert not over, f"{svc.name}: entries (found, ceiling) {over}; all: {dict(entries)}"
