"""KubeRay operator rules of a RayService: ``ValidateRayServiceMetadata`` and
``ValidateRayServiceSpec`` of KubeRay v1.7.0 ``ray-operator/controllers/ray/utils/validation.go``.
"""

from __future__ import annotations

import re

from components.kernel.problems import Problem, in_object
from components.raycrs.operator.common import (
    INITIALIZING_TIMEOUT_ANNOTATION,
    MAX_RAYSERVICE_NAME,
    Obj,
    go_duration_seconds,
    name_rule,
)

rayservice_name = name_rule("RayService", MAX_RAYSERVICE_NAME, "ValidateRayServiceMetadata")


def rayservice_initializing_timeout(o: Obj) -> list[Problem]:
    """validation.go validateInitializingTimeout: annotation ``ray.io/initializing-timeout`` is a
    positive Go duration (``30m``) or a positive integer of seconds."""
    v = (o.metadata.get("annotations") or {}).get(INITIALIZING_TIMEOUT_ANNOTATION)
    if not v:
        return []
    v = str(v)
    field = f"metadata.annotations[{INITIALIZING_TIMEOUT_ANNOTATION}]"
    where = f"{field} {v!r}"
    seconds = go_duration_seconds(v)
    if seconds is not None:
        if seconds <= 0:
            return [
                in_object(
                    field,
                    f"{where} must be a positive duration (validation.go validateInitializingTimeout)",
                )
            ]
        return []
    if re.fullmatch(r"[-+]?\d+", v):
        if int(v) <= 0:
            return [
                in_object(
                    field,
                    f"{where} must be a positive integer of seconds "
                    "(validation.go validateInitializingTimeout)",
                )
            ]
        return []
    return [
        in_object(
            field,
            f"{where} is neither a Go duration (5m, 1h) nor an integer of seconds "
            "(validation.go validateInitializingTimeout)",
        )
    ]


# -------------------------------------------------------------------------------- RayService rules


def rayservice_head_service_name(o: Obj) -> list[Problem]:
    """validation.go ValidateRayServiceSpec: ``rayClusterConfig.headGroupSpec.headService``
    sets no ``metadata.name``."""
    head = (o.spec.get("rayClusterConfig") or {}).get("headGroupSpec") or {}
    if ((head.get("headService") or {}).get("metadata") or {}).get("name"):
        f = "spec.rayClusterConfig.headGroupSpec.headService.metadata.name"
        return [in_object(f, f"{f} must not be set (validation.go ValidateRayServiceSpec)")]
    return []


def rayservice_upgrade_strategy(o: Obj) -> list[Problem]:
    """validation.go ValidateRayServiceSpec / ValidateClusterUpgradeOptions: ``upgradeStrategy.type``
    is ``NewClusterWithIncrementalUpgrade``, ``NewCluster`` or ``None``; the incremental upgrade
    needs autoscaling and ``clusterUpgradeOptions`` with ``maxSurgePercent`` (default 100) and
    ``stepSizePercent`` in 0..100, step <= max surge, ``intervalSeconds`` > 0 and a
    ``gatewayClassName``. (Checked regardless of the RayServiceIncrementalUpgrade feature gate.)"""
    us = o.spec.get("upgradeStrategy") or {}
    t = us.get("type")
    valid = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")
    if t is None:
        return []
    if t not in valid:
        return [
            in_object(
                "spec.upgradeStrategy.type",
                f"spec.upgradeStrategy.type {t!r} is invalid; valid: {', '.join(valid)} "
                "(validation.go ValidateRayServiceSpec)",
            )
        ]
    if t != "NewClusterWithIncrementalUpgrade":
        return []
    src = "(validation.go ValidateClusterUpgradeOptions)"
    c = o.cluster()
    out: list[Problem] = []
    if c is None or not c.autoscaling:
        out.append(
            in_object(
                "spec.upgradeStrategy.type",
                f"spec.upgradeStrategy.type {t} needs "
                f"spec.rayClusterConfig.enableInTreeAutoscaling: true {src}",
            )
        )
    opts = us.get("clusterUpgradeOptions")
    p = "spec.upgradeStrategy.clusterUpgradeOptions"
    if not isinstance(opts, dict):
        return [*out, in_object(p, f"{p} must be set for {t} {src}")]
    surge, step, interval = (
        opts.get("maxSurgePercent", 100),
        opts.get("stepSizePercent"),
        opts.get("intervalSeconds"),
    )
    if not isinstance(surge, int) or not 0 <= surge <= 100:
        f = f"{p}.maxSurgePercent"
        out.append(in_object(f, f"{f} {surge} must be between 0 and 100 {src}"))
    if not isinstance(step, int) or not 0 <= step <= 100:
        f = f"{p}.stepSizePercent"
        out.append(in_object(f, f"{f} {step} must be between 0 and 100 {src}"))
    elif isinstance(surge, int) and step > surge:
        f = f"{p}.stepSizePercent"
        out.append(in_object(f, f"{f} {step} > maxSurgePercent {surge} {src}"))
    if not isinstance(interval, int) or interval <= 0:
        f = f"{p}.intervalSeconds"
        out.append(in_object(f, f"{f} {interval} must be greater than 0 {src}"))
    if not opts.get("gatewayClassName"):
        f = f"{p}.gatewayClassName"
        out.append(in_object(f, f"{f} must be set {src}"))
    return out


def rayservice_deletion_delay(o: Obj) -> list[Problem]:
    """validation.go ValidateRayServiceSpec: ``rayClusterDeletionDelaySeconds`` >= 0."""
    v = o.spec.get("rayClusterDeletionDelaySeconds")
    if isinstance(v, int) and v < 0:
        return [
            in_object(
                "spec.rayClusterDeletionDelaySeconds",
                f"spec.rayClusterDeletionDelaySeconds {v} is negative "
                "(validation.go ValidateRayServiceSpec)",
            )
        ]
    return []
