"""The path of a RayJob's render (issue 48): how many times rendering one job's manifest enters
each module of ``components`` from another (calls of module-level functions, traced with
``sys.setprofile``). The issue's target, held for every module: each module once, ``pod.py`` at
most twice (the cluster's pods in one call, the submitter's in another). A pool's catalog facts
and an identity's account names are records of the plan (:class:`PoolFacts` on its targets,
:attr:`Plan.accounts`), read, not looked up again. The RayService's render is held the same
way."""

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

ONCE = 1  # every module of components, per render
# module -> the most entries one render may make into it, with the reason it needs more than one.
EXCEPTIONS = {
    "components.raycrs.pod": 2,  # cluster_pods (from raycluster.py), submitter_template (rayjob)
}


def over_once(entries: Counter[str]) -> dict[str, int]:
    """The modules ``entries`` enters more often than :data:`ONCE` / their :data:`EXCEPTIONS`."""
    return {m: n for m, n in entries.items() if n > EXCEPTIONS.get(m, ONCE)}


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
    submitter_template), the job module itself once (the call from this test) and modules far
    from it (the plan's naming only through its records: not at all)."""
    entries = render_entries("prod", "train-lm-h100")
    assert entries["components.raycrs.rayjob"] == 1
    assert entries["components.raycrs.pod"] == 2 and entries["components.raycrs.raycluster"] == 1
    assert entries["components.gpunet.render"] == 1 and entries["components.storage.fuse"] == 1
    assert all(m.startswith("components.") for m in entries)
    assert "components.plan.naming" not in entries


def test_the_trace_counts_a_module_entered_twice() -> None:
    """A module-level function called twice from another module counts twice; calls within a
    module, methods and properties do not count."""
    from components.plan import naming

    def render() -> None:
        naming.ksa_name("a")
        naming.head_account_id("a")  # calls ksa_name within naming: not an entry
        naming.RunAs("a", "a-head")  # a class, not a module-level function

    assert entries_of(render)["components.plan.naming"] == 2


@pytest.mark.parametrize("stack_name", ["dev", "prod", "scale"])
def test_a_job_render_enters_every_module_at_most_once(stack_name: str) -> None:
    cfg = stack(stack_name)
    jobs = [j for j in cfg.jobs if not j.cluster]  # on a long-lived cluster: no pods of its own
    assert jobs
    for job in jobs:
        entries = render_entries(stack_name, job.name)
        assert not over_once(entries), (
            f"{stack_name} {job.name}: entries {over_once(entries)}; all: {dict(entries)}"
        )


def test_a_service_render_enters_every_module_at_most_once() -> None:
    cfg = stack("prod")
    p = plan(cfg)
    images = planned_refs(p.context, cfg.ray.images)
    assert cfg.services
    for svc in cfg.services:
        entries = entries_of(lambda svc=svc: ray_service_manifest(p, svc, "gs://b/w.zip", images))
        assert entries["components.raycrs.serve"] == 1
        assert entries["components.raycrs.pod"] == 1  # cluster_pods: no submitter
        assert not over_once(entries), f"{svc.name}: {over_once(entries)}; all: {dict(entries)}"
