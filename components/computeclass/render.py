"""Render ``compute_classes`` as GKE ``cloud.google.com/v1`` ComputeClass objects (pure dicts):
:func:`render_compute_classes`, copies of the plan's records (built by
:func:`components.plan.computeclasses.compute_class_manifest`), one object per class.
Sources (the object's fields, as accelerated-platforms writes them):
docs/sources.md#computeclass-render
"""

from __future__ import annotations

import copy
from typing import Any

# The builder lives on the plan floor (the plan carries the stack's ComputeClasses); re-exported.
from components.plan.computeclasses import API_VERSION as API_VERSION
from components.plan.computeclasses import KIND as KIND
from components.plan.computeclasses import MANAGED_BY as MANAGED_BY
from components.plan.computeclasses import compute_class_manifest as compute_class_manifest
from components.plan.plan import Plan


def render_compute_classes(p: Plan) -> list[dict[str, Any]]:
    """Every ComputeClass of the stack whose plan is ``p``, in ``compute_classes`` order: the
    plan's records
    (:attr:`components.plan.plan.Plan.compute_class_manifests`), copies the caller may change.

    Raises:
        KeyError: a class's ``node_pool`` is not a declared pool (the stack rules refuse it first).
        ValueError: it is a CPU pool (refused by the rules too).
    """
    return copy.deepcopy(list(p.compute_class_manifests))
