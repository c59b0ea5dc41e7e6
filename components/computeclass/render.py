"""Render ``compute_classes`` as GKE ``cloud.google.com/v1`` ComputeClass objects (pure dicts).

One object per class (https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass):

* ``spec.priorities[0]``: ``nodepools``: the class's declared GKE node pools, which carry the
  class's node label ``cloud.google.com/compute-class: <name>`` and taint
  ``cloud.google.com/compute-class=<name>:NoSchedule``
  (:func:`components.config.computeclass.class_label`, ``class_taint``; GKE puts both on the
  nodes it creates for a class itself);
* then one priority per ``fallback`` entry, each with the pool's shape: a TPU slice as
  ``tpu: {type, count (chips per node), topology}`` (TPU7x multi-host slices also
  ``placement.policyName``, the workload policy of the pool's first slice,
  :func:`components.nodepools.render.workload_policy_name`), a GPU machine as ``machineType``
  plus ``gpu: {type, count, driverVersion}`` — as accelerated-platforms writes them
  (``platforms/gke/base/core/custom_compute_class/templates/manifests/{tpu,gpu}``, commit 9320f3b)
  — and the capacity: ``reservations: {affinity: Specific, specific: [{name}]}``, ``spot: false``
  (on-demand), ``flexStart: {enabled: true}`` (+ ``maxRunDurationSeconds``) or ``spot: true``;
* ``priorityDefaults.location.zones``: the pool's zones (a TPU slice: its one zone);
* ``nodePoolAutoCreation.enabled``, ``activeMigration.optimizeRulePriority``,
  ``whenUnsatisfiable`` from the stack;
* ``nodePoolConfig.serviceAccount``: the nodes' own least-privilege service account, so nodes GKE
  creates for the class never run as the Compute Engine default service account.
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
