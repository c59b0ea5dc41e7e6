"""Render ``compute_classes`` as GKE ``cloud.google.com/v1`` ComputeClass objects (pure dicts).

One object per class (https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass):

* ``spec.priorities[0]``: ``nodepools``: the class's declared GKE node pools, which carry the
  class's node label ``cloud.google.com/compute-class: <name>`` and taint
  ``cloud.google.com/compute-class=<name>:NoSchedule``
  (:func:`components.computeclass.model.class_label`, ``class_taint``; GKE puts both on the
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

from typing import Any

from components import catalog
from components.computeclass.model import ComputeClassConfig
from components.nodepools.model import GpuPool, TpuPool
from components.nodepools.render import workload_policy_name
from components.stack.model import StackConfig
from components.stack.naming import node_service_account_id
from components.stack.plan import plan

API_VERSION = "cloud.google.com/v1"
KIND = "ComputeClass"
MANAGED_BY = {"app.kubernetes.io/managed-by": "ray-gke"}


def _shape(cluster: str, pool: TpuPool | GpuPool) -> dict[str, Any]:
    if isinstance(pool, TpuPool):
        s = pool.slice
        out: dict[str, Any] = {
            "tpu": {
                "type": s.generation.gke_accelerator,
                "count": s.chips_per_host,
                "topology": s.topology,
            }
        }
        if s.workload_policy:
            out["placement"] = {"policyName": workload_policy_name(cluster, f"{pool.name}-0")}
        return out
    driver = catalog.gpu_driver_label(pool.driver_version)
    gpu: dict[str, Any] = {"type": pool.gpu.type, "count": pool.gpu.count}
    if driver:
        gpu["driverVersion"] = driver
    return {"machineType": pool.machine_type, "gpu": gpu}


def _capacity(cc: ComputeClassConfig, fallback: str) -> dict[str, Any]:
    if fallback == "reservation":
        return {
            "reservations": {"affinity": "Specific", "specific": [{"name": cc.reservation}]},
            "spot": False,
        }
    if fallback == "flex-start":
        out: dict[str, Any] = {"flexStart": {"enabled": True}}
        if cc.max_run_duration_seconds is not None:
            out["maxRunDurationSeconds"] = cc.max_run_duration_seconds
        return out
    return {"spot": fallback == "spot"}


def compute_class_manifest(cfg: StackConfig, cc: ComputeClassConfig) -> dict[str, Any]:
    """The ComputeClass object of ``cc`` (see the module docstring).

    Raises:
        KeyError: ``cc.node_pool`` is not a declared pool (the stack rules refuse it first).
        ValueError: it is a CPU pool (refused by the rules too).
    """
    p = plan(cfg)
    ctx = p.context
    pool = p.pools[cc.node_pool]
    if not isinstance(pool, TpuPool | GpuPool):
        raise ValueError(f"compute class {cc.name}: node pool {pool.name!r} is a CPU pool")
    shape = _shape(ctx.cluster, pool)
    priorities: list[dict[str, Any]] = [
        {"nodepools": [s.name for s in p.pool_specs.get(pool.name, ())]}
    ]
    priorities += [{**shape, **_capacity(cc, f)} for f in cc.fallback]
    zones = cfg.pool_zones(pool)[:1] if isinstance(pool, TpuPool) else cfg.pool_zones(pool)
    sa = f"{node_service_account_id(ctx.cluster)}@{ctx.project}.iam.gserviceaccount.com"
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": cc.name, "labels": dict(MANAGED_BY)},
        "spec": {
            "description": f"ray-gke: {pool.name} then {', '.join(cc.fallback) or 'nothing'}",
            "priorities": priorities,
            "priorityDefaults": {"location": {"zones": list(zones)}},
            "nodePoolAutoCreation": {"enabled": cc.node_pool_auto_creation},
            "activeMigration": {"optimizeRulePriority": cc.active_migration},
            "whenUnsatisfiable": cc.when_unsatisfiable,
            "nodePoolConfig": {"serviceAccount": sa},
        },
    }


def render_compute_classes(cfg: StackConfig) -> list[dict[str, Any]]:
    """Every ComputeClass of the stack, in ``compute_classes`` order."""
    return [compute_class_manifest(cfg, cc) for cc in cfg.compute_classes]
