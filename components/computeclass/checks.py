"""Check the rendered ComputeClasses (the plan's records,
:attr:`components.plan.plan.Plan.compute_class_manifests`, which
:func:`components.computeclass.render.render_compute_classes` hands out) against the carried
schema ``components/computeclass/crds/cloud.google.com_computeclasses.yaml`` (written from
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass; see that folder's
README) with :func:`components.raycrs.crd.validate_other`: unknown (pruned) fields, types, enums
and required fields, GKE's validation rules, one line each, at ``compute_classes[<name>]``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.plan.plan import Plan


def compute_class_problems(p: Plan) -> list[Problem]:
    """Problems of the rendered ComputeClasses of the stack whose plan is ``p``, one line each
    (empty when none)."""
    from components.raycrs.crd import validate_other

    out: list[Problem] = []
    for m in p.compute_class_manifests:
        # the stack entry behind the object: compute_classes[<name>] (the class's name)
        where = f"compute_classes[{m['metadata']['name']}]"
        out += [p.with_path(where) for p in validate_other(m)]
    return out
