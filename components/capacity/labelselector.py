"""``metav1validation.ValidateLabelSelector`` (k8s.io/apimachinery
``pkg/apis/meta/v1/validation/validation.go``, with ``LabelSelectorValidationOptions{}``), which
Kueue v0.19.2's ClusterQueue webhook runs on ``spec.namespaceSelector``
(``pkg/webhooks/clusterqueue_webhook.go`` ``validateClusterQueueSpec``): every ``matchLabels``
entry a label, every ``matchExpressions`` requirement a label key with an operator Kubernetes
knows, values for ``In`` / ``NotIn`` and none for ``Exists`` / ``DoesNotExist``, each value a
label value. Errors are :class:`components.capacity.webhooks.FieldError`s, made by the caller's
``make(path, kind, value, detail)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.kernel.labels import is_label_value, is_qualified_name

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")  # metav1.LabelSelectorOperator

Make = Callable[[str, str, Any, str], Any]


def label_selector_errors(selector: Any, path: str, make: Make) -> list[Any]:
    """The errors of one ``metav1.LabelSelector`` at ``path`` (none for an absent one)."""
    if not isinstance(selector, dict):
        return []
    out: list[Any] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        p = f"{path}.matchLabels"
        if not is_qualified_name(str(k)):
            out.append(make(p, "Invalid value", str(k), "must be a qualified name"))
        if not is_label_value(str(v)):
            out.append(make(p, "Invalid value", str(v), "must be a valid label value"))
    for i, req in enumerate(selector.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        req = req or {}
        op, values = req.get("operator"), list(req.get("values") or [])
        if op in ("In", "NotIn") and not values:
            out.append(
                make(
                    f"{p}.values",
                    "Required value",
                    None,
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
        elif op in ("Exists", "DoesNotExist") and values:
            out.append(
                make(
                    f"{p}.values",
                    "Forbidden",
                    None,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif op not in OPERATORS:
            out.append(
                make(
                    f"{p}.operator",
                    "Unsupported value",
                    op,
                    "supported values: " + ", ".join(f'"{o}"' for o in OPERATORS),
                )
            )
        if not is_qualified_name(str(req.get("key", ""))):
            out.append(make(f"{p}.key", "Invalid value", req.get("key"), "must be a label key"))
        for j, v in enumerate(values):
            if not is_label_value(str(v)):
                out.append(make(f"{p}.values[{j}]", "Invalid value", v, "must be a label value"))
    return out
