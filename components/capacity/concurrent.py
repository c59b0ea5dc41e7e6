"""Kueue v0.19.2's ``validateConcurrentAdmissionPolicy`` (``pkg/webhooks/clusterqueue_webhook.go``),
which its ClusterQueue webhook runs only under the ``ConcurrentAdmission`` feature gate (alpha
since 0.18, off by default: ``pkg/features/kube_features.go``): a ClusterQueue with a
``concurrentAdmissionPolicy`` has exactly one resource group of at most 16 flavors, is not
``StrictFIFO``, and its ``migration.constraints`` are set only with the ``TryPreferredFlavors``
mode (or none), their ``lastAcceptableFlavorName`` one of the queue's flavors. Errors are
:class:`components.capacity.webhooks.FieldError`s, made by the caller's
``make(path, kind, value, detail)``. The stack renders no ``concurrentAdmissionPolicy``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TRY_PREFERRED = "TryPreferredFlavors"  # kueue.ConcurrentAdmissionTryPreferredFlavors
MAX_FLAVORS = 16

Make = Callable[[str, str, Any, str], Any]


def concurrent_admission_errors(spec: dict[str, Any], make: Make) -> list[Any]:
    """The errors of ``spec.concurrentAdmissionPolicy`` (none when it is absent)."""
    policy = spec.get("concurrentAdmissionPolicy")
    if policy is None:
        return []
    groups = spec.get("resourceGroups") or []
    out: list[Any] = []
    if len(groups) != 1:
        out.append(
            make(
                "spec.resourceGroups",
                "Invalid value",
                len(groups),
                "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    if len(groups) == 1 and len(groups[0].get("flavors") or []) > MAX_FLAVORS:
        out.append(
            make(
                "spec.resourceGroups[0].flavors",
                "Invalid value",
                len(groups[0]["flavors"]),
                f"cannot have more than {MAX_FLAVORS} resource flavors in the ResourceGroup when "
                "ConcurrentAdmissionPolicy is defined",
            )
        )
    migration = (policy or {}).get("migration") or {}
    constraints = migration.get("constraints")
    path = "spec.concurrentAdmissionPolicy.migration.constraints"
    if constraints is not None:
        mode = migration.get("mode") or ""
        last = constraints.get("lastAcceptableFlavorName")
        flavors = [f.get("name") for g in groups for f in g.get("flavors") or []]
        if mode and mode != TRY_PREFERRED:
            out.append(
                make(
                    path,
                    "Forbidden",
                    None,
                    f'may only be set when migration.mode is "{TRY_PREFERRED}" (got "{mode}")',
                )
            )
        elif last is not None and last not in flavors:
            out.append(
                make(
                    f"{path}.lastAcceptableFlavorName",
                    "Invalid value",
                    last,
                    "must be one of the flavors defined in the ClusterQueue: "
                    f"[{' '.join(map(str, flavors))}]",
                )
            )
    if spec.get("queueingStrategy") == "StrictFIFO":
        out.append(
            make(
                "spec.queueingStrategy",
                "Invalid value",
                "StrictFIFO",
                "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is "
                "defined",
            )
        )
    return out
