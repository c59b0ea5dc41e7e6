"""The one ComputeClass builder: a ``compute_classes`` entry and its declared pool -> the
``cloud.google.com/v1`` ComputeClass object (a pure dict; the fields and their sources are in
:mod:`components.computeclass.render`'s docstring).

On the plan floor (``tests/test_imports.py`` ``FLOORS``): it stands on the models, the node-pool
records and the stack's :class:`~components.plan.context.Context` only, so the plan carries the
stack's ComputeClasses (:attr:`components.plan.plan.Plan.compute_class_manifests`, built once
per stack) and the render, the check and the component read them there.
:mod:`components.computeclass.render` re-exports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.computeclass import ComputeClassConfig
from components.config.nodepools import CpuPool, GpuPool, TpuPool
from components.kernel.names import node_service_account_id
from components.plan.nodepools import workload_policy_name

if TYPE_CHECKING:
    from components.plan.context import Context

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


def compute_class_manifest(
    ctx: Context,
    cc: ComputeClassConfig,
    pool: CpuPool | TpuPool | GpuPool,
    nodepools: Sequence[str],
) -> dict[str, Any]:
    """The ComputeClass object of ``cc`` (see :mod:`components.computeclass.render`'s docstring):
    ``pool`` is its ``node_pool`` as declared, ``nodepools`` the names of that pool's GKE node pools
    (:attr:`components.plan.plan.Plan.pool_specs`), ``ctx`` the stack's cluster, project and
    zones.

    Raises:
        ValueError: ``pool`` is a CPU pool (the stack rules refuse it first).
    """
    if not isinstance(pool, TpuPool | GpuPool):
        raise ValueError(f"compute class {cc.name}: node pool {pool.name!r} is a CPU pool")
    shape = _shape(ctx.cluster, pool)
    priorities: list[dict[str, Any]] = [{"nodepools": list(nodepools)}]
    priorities += [{**shape, **_capacity(cc, f)} for f in cc.fallback]
    zones = list(pool.zones or ctx.zones)  # the pool's own, else the stack's
    if isinstance(pool, TpuPool):
        zones = zones[:1]  # a TPU slice lives in one zone
    sa = f"{node_service_account_id(ctx.cluster)}@{ctx.project}.iam.gserviceaccount.com"
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": cc.name, "labels": dict(MANAGED_BY)},
        "spec": {
            "description": f"ray-gke: {pool.name} then {', '.join(cc.fallback) or 'nothing'}",
            "priorities": priorities,
            "priorityDefaults": {"location": {"zones": zones}},
            "nodePoolAutoCreation": {"enabled": cc.node_pool_auto_creation},
            "activeMigration": {"optimizeRulePriority": cc.active_migration},
            "whenUnsatisfiable": cc.when_unsatisfiable,
            "nodePoolConfig": {"serviceAccount": sa},
        },
    }
