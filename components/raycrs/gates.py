"""The KubeRay rules that depend on the operator's feature gates (:func:`gate_problems`), checked
with the gates the installed operator really has (:func:`installed_gates`).
:mod:`components.raycrs.operator` leaves them out because a manifest does not show the gates.
Sources (the gated rules, validation.go v1.7.0): docs/sources.md#raycrs-gates
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components.kernel.problems import Problem, at, in_object
from components.kuberay.render import (
    CHART_FEATURE_GATES,
    INCREMENTAL_UPGRADE,
    INCREMENTAL_UPGRADE_GATE,
    helm_values,
)

if TYPE_CHECKING:
    from components.config.kuberay import KubeRayConfig
    from components.config.serve import ServiceConfig

Gates = dict[str, bool]


def installed_gates(kuberay: KubeRayConfig, services: list[ServiceConfig]) -> tuple[Gates, str]:
    """``(gate -> enabled, where the values come from)`` for the operator the stack runs
    (``kuberay``; ``services``, whose upgrade strategies set the helm values' gates): helm mode,
    :data:`components.kuberay.render.CHART_FEATURE_GATES` of the chart version overlaid with the
    ``featureGates`` value of :func:`components.kuberay.render.helm_values`. With the GKE Ray
    add-on GKE runs the operator and does not publish its flags: the chart defaults of
    ``kuberay.chart_version`` are assumed, and every problem says so.

    Raises:
        KeyError: ``kuberay.chart_version`` has no entry in ``CHART_FEATURE_GATES``.
    """
    version = kuberay.chart_version
    gates = dict(CHART_FEATURE_GATES[version])
    if kuberay.mode == "helm":
        for g in helm_values(version, services).get("featureGates") or []:
            gates[g["name"]] = bool(g["enabled"])
        return gates, f"kuberay-operator chart {version} with the stack's values"
    return gates, (
        f"GKE Ray add-on: its gates are not published; the kuberay-operator chart {version} "
        "defaults are assumed"
    )


def _cluster_spec(manifest: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    spec = manifest.get("spec") or {}
    kind = manifest.get("kind")
    if kind == "RayCluster":
        return "spec", spec
    if kind == "RayJob" and spec.get("rayClusterSpec") is not None:
        return "spec.rayClusterSpec", spec["rayClusterSpec"]
    if kind == "RayService" and spec.get("rayClusterConfig") is not None:
        return "spec.rayClusterConfig", spec["rayClusterConfig"]
    return None


def gate_problems(manifest: dict[str, Any], gates: Gates, source: str = "") -> list[Problem]:
    """Problems of one rendered KubeRay object under ``gates``, one line each:
    ``<Kind> <name>: <field> needs the <Gate> feature gate, off in <source> (validation.go
    <function>)``."""
    kind = manifest.get("kind", "?")
    name = (manifest.get("metadata") or {}).get("name", "?")
    where = f", off in {source}" if source else ""
    out: list[Problem] = []

    def need(gate: str, field: str, fn: str) -> None:
        if not gates.get(gate, False):
            line = (
                f"{kind} {name}: {field} needs the {gate} feature gate{where} (validation.go {fn})"
            )
            out.append(in_object(field.split(" ")[0], line))

    found = _cluster_spec(manifest)
    if found is not None:
        base, spec = found
        for i, g in enumerate(spec.get("workerGroupSpecs") or []):
            if g.get("suspend") is True:
                need(
                    "RayJobDeletionPolicy",
                    f"{base}.workerGroupSpecs[{i}].suspend",
                    "ValidateRayClusterSpec",
                )
        for key, gate in (
            ("historyServerOptions", "RayClusterHistoryServer"),
            ("networkPolicy", "RayClusterNetworkPolicy"),
            ("tlsOptions", "RayClusterMTLS"),
        ):
            if spec.get(key) is not None:
                need(gate, f"{base}.{key}", "ValidateRayClusterSpec")
        if (spec.get("gcsFaultToleranceOptions") or {}).get("backend") == "rocksdb":
            need(
                "GCSFaultToleranceEmbeddedStorage",
                f"{base}.gcsFaultToleranceOptions.backend",
                "validateGcsFaultToleranceBackend",
            )
    spec = manifest.get("spec") or {}
    if kind == "RayJob" and spec.get("deletionStrategy") is not None:
        need("RayJobDeletionPolicy", "spec.deletionStrategy", "validateDeletionConfiguration")
    if kind == "RayService" and (spec.get("upgradeStrategy") or {}).get("type") == (
        INCREMENTAL_UPGRADE
    ):
        need(
            "RayServiceIncrementalUpgrade",
            "spec.upgradeStrategy.type NewClusterWithIncrementalUpgrade",
            "ValidateRayServiceSpec; utils/util.go IsIncrementalUpgradeEnabled",
        )
    return out


def incremental_upgrade_needs_helm(
    kuberay: KubeRayConfig, services: list[ServiceConfig]
) -> Iterable[Problem]:
    """``NewClusterWithIncrementalUpgrade`` (set, or the default of a service with a ``gateway``:
    :attr:`components.config.serve.ServiceConfig.strategy`) needs the KubeRay operator's
    ``RayServiceIncrementalUpgrade`` feature gate (``IsIncrementalUpgradeEnabled`` in
    ray-operator/controllers/ray/utils/util.go, gate in ray-operator/pkg/features/features.go;
    https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html).
    With ``kuberay.mode: helm`` the stack turns it on
    (:func:`components.kuberay.render.feature_gates`); the GKE Ray add-on runs an operator
    whose flags GKE sets and the stack cannot
    (https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/how-to/enable-ray-on-gke),
    so its gates are taken to be the chart defaults of ``kuberay.chart_version``
    (:func:`installed_gates`): on (beta) in 1.7.0, off (alpha) in 1.6.2.
    Without the gate KubeRay silently treats the strategy as no zero-downtime upgrade
    (``isZeroDowntimeUpgradeEnabled`` in rayservice_controller.go)."""
    if kuberay.mode != "gke-addon":
        return
    gates, _ = installed_gates(kuberay, services)
    if gates.get(INCREMENTAL_UPGRADE_GATE):
        return
    version = kuberay.chart_version
    for svc in services:
        if svc.strategy == "NewClusterWithIncrementalUpgrade":
            why = "" if svc.upgrade_strategy else " (the default of a service with a gateway)"
            yield (
                at(
                    f"services[{svc.name}].upgrade_strategy",
                    f"services[{svc.name}].upgrade_strategy: NewClusterWithIncrementalUpgrade"
                    f"{why} needs the KubeRay operator's RayServiceIncrementalUpgrade feature "
                    f"gate, off by default in KubeRay {version}, which kuberay.mode 'gke-addon' "
                    "cannot set (GKE runs that operator; without the gate a cluster change is "
                    "not rolled out); use upgrade_strategy: NewCluster, kuberay.mode: helm, or "
                    "kuberay.chart_version 1.7.0",
                )
            )
