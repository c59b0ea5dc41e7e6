"""Check the rendered ComputeClasses (:func:`components.computeclass.render.render_compute_classes`)
against the carried schema ``components/checks/crds/gke/cloud.google.com_computeclasses.yaml``
(written from https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass; see
that folder's README) with :func:`components.checks.crd.validate_other`: unknown (pruned) fields,
types, enums and required fields, one line each."""

from __future__ import annotations

from components.spec import StackConfig


def compute_class_problems(cfg: StackConfig) -> list[str]:
    """Problems of the stack's rendered ComputeClasses, one line each (empty when none)."""
    from components.checks.crd import validate_other
    from components.computeclass.render import render_compute_classes

    out: list[str] = []
    for m in render_compute_classes(cfg):
        out += validate_other(m)
    return out
