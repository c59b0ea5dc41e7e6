"""Check the rendered ComputeClasses (the plan's records,
:attr:`components.stack.plan.Plan.compute_class_manifests`, which
:func:`components.computeclass.render.render_compute_classes` hands out) against the carried
schema ``components/computeclass/crds/cloud.google.com_computeclasses.yaml`` (written from
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass; see that folder's
README) with :func:`components.raycrs.crd.validate_other`: unknown (pruned) fields, types, enums
and required fields, one line each."""

from __future__ import annotations

from components.kernel.problems import Problem
from components.stack.model import StackConfig


def compute_class_problems(cfg: StackConfig) -> list[Problem]:
    """Problems of the stack's rendered ComputeClasses, one line each (empty when none)."""
    from components.raycrs.crd import validate_other
    from components.stack.plan import plan

    out: list[Problem] = []
    for m in plan(cfg).compute_class_manifests:
        out += validate_other(m)
    return out
