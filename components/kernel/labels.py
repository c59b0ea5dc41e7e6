"""The label and name rules every check shares: Kubernetes' (``k8s.io/apimachinery/pkg/util/
validation/validation.go``: what KubeRay's operator rules, :mod:`components.raycrs.operator`, Kueue's
webhooks and label selectors, :mod:`components.capacity`, the API server's object metadata checks,
:mod:`components.kernel.crdschema`, and the node-label checks of
:mod:`components.stack.name_checks` call) and GCP's resource labels
(https://cloud.google.com/resource-manager/docs/labels-overview#requirements).
"""

from __future__ import annotations

import re

DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # dns1035LabelFmt
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # dns1123LabelFmt
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # qualifiedNameFmt
GCP_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
GCP_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


def is_dns1035_label(value: str) -> bool:
    """``IsDNS1035Label``: at most 63 chars, ``[a-z]([-a-z0-9]*[a-z0-9])?``."""
    return len(value) <= 63 and DNS1035_LABEL.fullmatch(value) is not None


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name, or None: ``IsQualifiedName``, an optional DNS-1123
    subdomain prefix (<= 253 chars) and ``/``, then a name of at most 63 chars of alphanumerics,
    ``-``, ``_``, ``.``, alphanumeric at both ends."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "the prefix must be a DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not QUALIFIED_NAME.fullmatch(name):
        return (
            "the name part must be 1-63 characters of alphanumerics, '-', '_' or '.', starting "
            "and ending with an alphanumeric"
        )
    return None


def is_qualified_name(key: str) -> bool:
    """Whether ``key`` is a qualified name (:func:`qualified_name_problem` finds nothing)."""
    return qualified_name_problem(key) is None


def is_label_value(value: str) -> bool:
    """``IsValidLabelValue``: empty, or a name as in :func:`is_qualified_name` (no prefix)."""
    return value == "" or (len(value) <= 63 and QUALIFIED_NAME.fullmatch(value) is not None)


def is_gcp_label(key: str, value: str) -> bool:
    """A GCP resource label: the key starts with a lowercase letter, key and value are at most 63
    lowercase letters, digits, ``_`` or ``-`` (the value may be empty)."""
    return GCP_LABEL_KEY.fullmatch(key) is not None and GCP_LABEL_VALUE.fullmatch(value) is not None
