"""The stack model's shared pieces: errors, the strict base model, and name/quantity rules
that several parts of the model apply.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
)

from components import catalog
from components.kernel.labels import DNS1035_LABEL, DNS1123_LABEL, is_gcp_label
from contract import quantity
from contract.errors import ConfigurationError

if TYPE_CHECKING:
    from components.kernel.problems import Problem

PROJECT_NAMESPACE = "ray-gke"
# Namespaces of the providers and the engine, which a stack file may also set.
OTHER_NAMESPACES = frozenset({"gcp", "kubernetes", "pulumi"})

# GKE names: cluster and node pool names are lowercase letters, digits and hyphens, start with a
# letter, end with a letter or digit, at most 40 characters
# (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools):
# the RFC 1035 label rule (components.kernel.labels.DNS1035_LABEL).
GKE_NAME_MAX = 40
# Kubernetes integer fields of the CRs we render (durations, replicas, limits) are int32
# (https://kubernetes.io/docs/reference/using-api/api-concepts/, KubeRay's CRD schemas:
# ``format: int32``); a larger value is refused by the API server.
INT32_MAX = 2**31 - 1
# The largest value of an int64 field: GKE's NAP ``ResourceLimit.maximum`` ("string (int64
# format)", https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#resourcelimit)
# and the Kubernetes quantities a ResourceQuota holds (int64 scaled values,
# https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/).
INT64_MAX = 2**63 - 1
# Nodes of one node pool: GKE allows 1,000 per node pool per zone
# (https://cloud.google.com/kubernetes-engine/quotas#limits_per_cluster) and a region has at most
# 4 zones (components.catalog.GCP_REGIONS), so no pool of any stack can have more than 4,000; the
# zone-aware bound is the rule components.stack.rules.pool_node_counts_within_gke_limits. (The
# GKE API field ``totalMaxNodeCount`` is int32 and KubeRay's ``maxReplicas`` int32: both looser.)
NODES_PER_POOL_ZONE_MAX = 1000
POOL_NODES_MAX = NODES_PER_POOL_ZONE_MAX * 4
# Largest Persistent Disk (boot disk) size, GB: 64 TiB
# (https://cloud.google.com/compute/docs/disks/persistent-disks#disk_size_limits).
DISK_SIZE_MAX_GB = 65536
# Kubernetes object names (RFC 1123 labels, components.kernel.labels.DNS1123_LABEL) for
# RayClusters, RayJobs, worker groups.
# KubeRay derives Service and Pod names from the RayCluster name; keep headroom under 63.
K8S_NAME_MAX = 50
# Google service account ids: 6-30 characters, lowercase letters, digits, hyphens
# (https://cloud.google.com/iam/docs/service-accounts-create#creating).
SERVICE_ACCOUNT_ID = re.compile(r"^[a-z]([-a-z0-9]{4,28}[a-z0-9])\Z")
ZONE_NAME = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]\Z")
REGION_NAME = re.compile(r"^[a-z]+-[a-z]+\d+\Z")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """``text`` with every control, line-separator and bidirectional-override character written
    as its escape (``\\n``, ``\\x00``, ``\\u202e``), so a value from a stack file can neither
    break a problem line in two nor reorder what the terminal shows."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


def plural(count: int, noun: str, many: str | None = None, *, with_count: bool = True) -> str:
    """``count`` and ``noun`` in the number it takes: ``plural(1, "ray cluster")`` ->
    ``1 ray cluster``, ``plural(3, "job")`` -> ``3 jobs``, ``plural(2, "family", "families")``
    -> ``2 families``; ``with_count=False`` gives the noun alone (``ESC environments a, b``). The
    one plural of every summary and count line (``raygke check``, ``cost``, ``diff``, ``queue``)."""
    word = noun if count == 1 else (many or f"{noun}s")
    return f"{count} {word}" if with_count else word


class StackConfigError(ConfigurationError):
    """An invalid stack configuration, as the list of its problems: the one configuration error
    that carries them one by one, each with its stack path (what ``raygke check --format
    json|github`` and ``raygke migrate`` read), the file they come from and the notes on what
    was not checked. Every other :class:`~contract.errors.ConfigurationError` is one message.

    Attributes:
        items: every problem (:class:`components.kernel.problems.Problem`, with its stack path);
            a plain line given is a Problem without a path.
        problems: the same, as their printed lines (a Problem is its line).
        notes: what was not checked because of them.
    """

    def __init__(
        self,
        problems: Sequence[Problem | str],
        source: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        from components.kernel.problems import problems_of

        self.items = problems_of(problems)
        self.problems: list[str] = list(self.items)  # each a Problem: its line, with .path
        self.source = source
        self.notes = list(notes or [])  # what was not checked because of the problems
        head = f"{source}: " if source else ""
        super().__init__(
            head
            + f"{plural(len(self.problems), 'problem')}:\n"
            + "\n".join([*self.problems, *self.notes])
        )


class StackFileError(StackConfigError):
    """The file is not a readable Pulumi stack file (not YAML, or no ``config:`` mapping)."""

    exit_code = 2  # an unreadable file


def gke_name(value: str, what: str, max_len: int = GKE_NAME_MAX) -> str:
    if len(value) > max_len or not DNS1035_LABEL.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not a valid GKE name: use 1-{max_len} lowercase letters, digits "
            "and hyphens, starting with a letter and not ending with a hyphen"
        )
    return value


# KubeRay's name limits (ray-operator/controllers/ray/utils/constant.go MaxRayClusterNameLength,
# MaxRayJobNameLength; validation.go ValidateRayClusterMetadata / ValidateRayJobMetadata): the
# names are DNS-1035 labels (start with a letter), RayClusters at most 53 characters (we keep 50,
# K8S_NAME_MAX, for the Service and Pod names derived from it), RayJobs 47 (KubeRay appends a
# suffix to name the RayJob's own RayCluster).
RAYJOB_NAME_MAX = 47


def k8s_name(value: str, what: str, max_len: int = K8S_NAME_MAX, dns1035: bool = False) -> str:
    """``value`` when it is a Kubernetes name (RFC 1123 label; with ``dns1035`` starting with a
    letter) of at most ``max_len`` characters, else ValueError saying what is allowed."""
    ok = (DNS1035_LABEL if dns1035 else DNS1123_LABEL).fullmatch(value)
    if len(value) > max_len or not ok:
        start = "a letter" if dns1035 else "a letter or digit"
        raise ValueError(
            f"{what} {value!r} is not a valid Kubernetes name: use 1-{max_len} lowercase "
            f"letters, digits and hyphens, starting with {start} and ending with a letter or digit"
        )
    return value


def cidr(
    value: str, what: str, *, example: str, ipv4_only: bool = False
) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """``value`` as the network it writes in CIDR notation (``10.0.0.0/8``): an IPv4 network (or
    an IPv6 one unless ``ipv4_only``) with its prefix length written and its host bits zero, as
    GKE's and Kubernetes' CIDR fields take them (``cidrBlock``, ``ipBlock.cidr``). The one CIDR
    check of the stack model's fields.

    Raises:
        ValueError: one line naming ``what`` and the value: not a network (with ``example``), no
            prefix length (with the /32 or /128 to write for one address), or host bits set
            (with the network they belong to).
    """
    parse = ipaddress.IPv4Network if ipv4_only else ipaddress.ip_network
    kind = "an IPv4 network" if ipv4_only else "an IPv4 or IPv6 network"
    try:
        net = parse(value, strict=False)
    except ValueError:
        raise ValueError(
            f"{what} {value!r} is not {kind} in CIDR notation (e.g. {example})"
        ) from None
    if "/" not in value:
        raise ValueError(f"{what} {value!r} has no prefix length; write {net} for one address")
    if net.network_address != ipaddress.ip_address(value.split("/")[0]):
        raise ValueError(f"{what} {value!r} has host bits set; the network is {net}")
    return net


def repeated(values: Iterable[Any]) -> list[Any]:
    """The entries of ``values`` given more than once, each once, in the order of their second
    appearance (``repeated(["a", "b", "a", "b", "a"]) == ["a", "b"]``)."""
    seen: set[Any] = set()
    dups: list[Any] = []
    for v in values:
        if v in seen and v not in dups:
            dups.append(v)
        seen.add(v)
    return dups


def unique(values: list[Any], what: str) -> list[Any]:
    """``values`` unchanged when no entry is given twice, else ValueError naming the repeated
    entries: each entry becomes a resource, binding or rule of its own (a name, an IAM member, a
    Pulumi URN), so a repeat would be two resources with one name, which the provider or the
    engine refuses (duplicate URN), or a silently merged entry."""
    if dups := repeated(values):
        raise ValueError(
            f"{what}: {', '.join(repr(d) for d in dups)} listed more than once; list each once"
        )
    return values


# Namespaces a stack may not take as its Ray namespace, nor admit in kuberay.serve_from:
# Kubernetes' own (``kube-system``, ``kube-public``, ``kube-node-lease``; every ``kube-`` name is
# reserved for the system, https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces),
# GKE's (``gke-*``, e.g. ``gke-managed-system``, ``gke-gmp-system``) and Managed Prometheus's
# (``gmp-system``, ``gmp-public``, https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed),
# and ``default``. Why, per use:
# * as ``kuberay.namespace`` the stack labels the namespace Pod Security ``restricted``, puts a
#   default-deny NetworkPolicy, a ResourceQuota and a LimitRange on it and would delete them on
#   ``pulumi destroy``: on a system namespace that stops system pods (DNS, metrics agents,
#   GKE's controllers) and on ``default`` it changes every workload that lands there;
# * in ``kuberay.serve_from.namespaces`` it admits every pod of that namespace to Serve's port:
#   ``default`` is where any unnamespaced ``kubectl apply`` lands, and no system component is a
#   Serve client, so admitting one opens the port to anything that runs (or is compromised) there.
RESERVED_NAMESPACES = frozenset({"default"})
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")


def reserved_namespace_problem(name: str) -> str | None:
    """Why ``name`` is a reserved namespace (:data:`RESERVED_NAMESPACES`, prefixes
    :data:`RESERVED_NAMESPACE_PREFIXES`), else None."""
    if name in RESERVED_NAMESPACES:
        return f"{name!r} is the default namespace, shared by every workload that names none"
    if name.startswith(RESERVED_NAMESPACE_PREFIXES):
        return (
            f"{name!r} is a system namespace ({', '.join(p + '*' for p in RESERVED_NAMESPACE_PREFIXES)}"
            " belong to Kubernetes, GKE and Managed Prometheus)"
        )
    return None


def gcp_labels(v: dict[str, str]) -> dict[str, str]:
    """``v`` when every key and value is a GCP label: keys start with a lowercase letter, keys
    and values are at most 63 lowercase letters, digits, ``_`` or ``-``
    (https://cloud.google.com/resource-manager/docs/labels-overview#requirements); else
    ValueError naming every bad label (quoted), one per line."""
    bad = [
        f"label {key!r}={value!r}: GCP labels are lowercase letters, digits, '_' and '-', keys "
        "start with a letter, at most 63 characters"
        for key, value in v.items()
        if not is_gcp_label(str(key), str(value))
    ]
    if bad:
        raise ValueError("\n".join(bad))
    return v


def min_le_max(model: Any, lo: str, hi: str) -> Any:
    """``model`` unchanged when ``model.<lo> <= model.<hi>``, else ValueError naming both."""
    if getattr(model, lo) > getattr(model, hi):
        raise ValueError(f"{lo} {getattr(model, lo)} > {hi} {getattr(model, hi)}")
    return model


def cpu_machine_type(value: str) -> str:
    """``value`` when it is a CPU machine type (no TPU, no GPU), else ValueError saying what to
    declare instead (:func:`components.catalog.cpu_machine_problem`)."""
    problem = catalog.cpu_machine_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def quantity_bytes(value: str) -> int:
    """A Kubernetes quantity accepted by :func:`k8s_quantity` as a whole number of base units
    (bytes for memory): ``"4Gi"`` -> 4294967296, ``"1500M"`` -> 1500000000, rounded down
    (:func:`contract.quantity.quantity_int`).

    Raises:
        ValueError: not such a quantity.
    """
    return quantity.quantity_int(str(value))


def k8s_quantity(value: str, what: str) -> str:
    """``value`` when it is a Kubernetes quantity the API server keeps as written: at most
    2^63-1 base units and no finer than 1m (:func:`contract.quantity.kept_as_written`).

    Raises:
        ValueError: not such a quantity (the field, the value and what is allowed named).
    """
    try:
        why = quantity.kept_as_written(str(value))
    except quantity.QuantityError as e:
        raise ValueError(f"{what} {e}") from None
    if why:
        raise ValueError(f"{what} {str(value)!r} is {why}")
    return str(value)


def quantity_value(value: str) -> float:
    """A quantity already accepted by ``k8s_quantity`` in base units (``"500m"`` -> 0.5)."""
    return quantity.quantity_float(str(value))


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)
