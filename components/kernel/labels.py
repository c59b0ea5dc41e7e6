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


def is_qualified_name(key: str) -> bool:
    """``IsQualifiedName``: optional DNS-1123 subdomain prefix (<= 253) + ``/`` + a name of at
    most 63 chars of alphanumerics, ``-``, ``_``, ``.``, alphanumeric at both ends."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and QUALIFIED_NAME.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    """``IsValidLabelValue``: empty, or a name as in :func:`is_qualified_name` (no prefix)."""
    return value == "" or (len(value) <= 63 and QUALIFIED_NAME.fullmatch(value) is not None)


def is_gcp_label(key: str, value: str) -> bool:
    """A GCP resource label: the key starts with a lowercase letter, key and value are at most 63
    lowercase letters, digits, ``_`` or ``-`` (the value may be empty)."""
    return GCP_LABEL_KEY.fullmatch(key) is not None and GCP_LABEL_VALUE.fullmatch(value) is not None
