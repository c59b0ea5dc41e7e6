"""The day-2 harness: render a shipped stack with a change applied to its config, under the
program's mocks (:func:`raygke.synth.run_program`, no cloud, no Ray), and plan the step from the
previous render with :func:`raygke.diff.compare.compare` (disruption included)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.stack.loader import stack_data_from_yaml
from raygke import mocks as rmocks
from raygke import synth as rsynth
from raygke.diff.compare import Plan, compare

ROOT = Path(__file__).resolve().parents[2]

Mutation = Callable[[dict[str, Any]], None]


def stack_data(stack: str) -> dict[str, Any]:
    """The ``ray-gke:`` config of ``Pulumi.<stack>.yaml`` as plain data (keys without prefix)."""
    path = ROOT / f"Pulumi.{stack}.yaml"
    return stack_data_from_yaml(path.read_text(encoding="utf-8"), str(path))


def render(stack: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """``resources.json`` records of the program run on ``data`` (the stack file's ``gcp:`` and
    other entries kept), as ``raygke diff`` reads them from ``raygke synth --resources-only``:
    each KubeRay CRD's spec as its digest (``crd_specs="digest"``)."""
    entries = rsynth.read_stack_config(ROOT / f"Pulumi.{stack}.yaml")
    gcp = {k.split(":", 1)[1]: v for k, v in entries.items() if k.startswith("gcp:")}
    kept = {k: v for k, v in entries.items() if not k.startswith(("ray-gke:", "gcp:"))}
    config = {**kept, **rsynth.config_entries(data, gcp)}
    records, _ = rsynth.run_program(config, stack, crd_specs="digest")
    return records


def plan_ops(plan: Plan) -> dict[str, str]:
    """``{resource name: op}`` of every change (``job re-run`` for a RayJob replacement)."""
    return {c.name: ("re-run" if c.rerun else c.op) for c in plan.changes}


def plan_disruption(plan: Plan) -> set[tuple[str, str]]:
    """``{(target, effect)}`` over every change's disruption."""
    return {(d["target"], d["effect"]) for c in plan.changes for d in c.disruption}


@dataclass
class Step:
    """One change a platform team makes, with the plan and disruption it must show.

    Attributes:
        what: the change in words.
        mutate: edits the config data in place (None: config unchanged, e.g. a CA rotation).
        plan: the expected ``{resource name: op}`` (exactly these changes, nothing else).
        disruption: the expected ``{(target, effect)}`` (exactly; empty: nothing stops).
        mocks: ``{"raygke.mocks attribute": replacement}`` patched while rendering (the cloud's
            side of the change, e.g. a new CA).
    """

    what: str
    mutate: Mutation | None
    plan: dict[str, str]
    disruption: set[tuple[str, str]] = field(default_factory=set)
    mocks: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scenario:
    """An ordered sequence of steps on one stack, each planned from the one before."""

    name: str
    stack: str
    steps: list[Step]


def run(scenario: Scenario, monkeypatch: Any, base: list[dict[str, Any]]) -> list[Plan]:
    """Plan every step of ``scenario`` from ``base`` (the unchanged stack's render); the config
    and the mocks' patches accumulate step by step."""
    data = copy.deepcopy(stack_data(scenario.stack))
    prev = base
    plans = []
    for step in scenario.steps:
        if step.mutate is not None:
            step.mutate(data)
        for attr, value in step.mocks.items():
            monkeypatch.setattr(rmocks, attr, value)
        head = render(scenario.stack, data)
        plans.append(compare(prev, head, scenario.stack))
        prev = head
    return plans
