"""Every name that reaches GCP or Kubernetes, derived names included, against that system's rule.

The names come from :func:`derived_names` (the same functions the
Pulumi resources and the manifests call), so a name that breaks a rule is reported with the
stack-file field to change. Two config entries that produce the same name are refused too.
Labels are checked where they are applied: GCP resource labels (stack ``labels`` and
``cluster.labels``) and Kubernetes node labels (``node_pools[].labels``).

Sources (one per rule in :data:`NAME_RULES`): docs/sources.md#stack-name-checks
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from components.config.stack import StackConfig
from components.kernel.labels import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    is_gcp_label,
    is_label_value,
    is_qualified_name,
)
from components.kernel.problems import Problem, at
from components.nodepools.render import GKE_LABEL_PREFIXES
from components.plan.gcsft_names import auth_secret_id, ft_enabled
from components.plan.naming import (
    BUCKET_PURPOSES,
    bucket_name,
    key_ring_locations,
    key_ring_name,
    nat_name,
    node_service_account_id,
    router_name,
    subnet_name,
    workload_accounts,
)
from components.plan.plan import plan


@dataclass(frozen=True)
class NameRule:
    """A naming rule: ``pattern`` must match the whole name, whose length is within bounds."""

    pattern: re.Pattern[str]
    min_len: int
    max_len: int
    allowed: str


NAME_RULES: dict[str, NameRule] = {
    "gke-cluster": NameRule(
        DNS1035_LABEL, 1, 40, "lowercase letters, digits, hyphens; start with a letter"
    ),
    "gke-node-pool": NameRule(
        DNS1035_LABEL, 1, 40, "lowercase letters, digits, hyphens; start with a letter"
    ),
    "compute": NameRule(
        DNS1035_LABEL, 1, 63, "lowercase letters, digits, hyphens; start with a letter"
    ),
    "service-account": NameRule(DNS1035_LABEL, 6, 30, "lowercase letters, digits, hyphens"),
    "bucket": NameRule(
        re.compile(r"[a-z0-9][-_a-z0-9]*[a-z0-9]"), 3, 63, "lowercase letters, digits, '-', '_'"
    ),
    "kms": NameRule(re.compile(r"[A-Za-z0-9_-]+"), 1, 63, "letters, digits, '_', '-'"),
    "secret": NameRule(re.compile(r"[A-Za-z0-9_-]+"), 1, 255, "letters, digits, '_', '-'"),
    "k8s-label": NameRule(DNS1123_LABEL, 1, 63, "lowercase letters, digits, hyphens"),
}
GCP_LABELS_MAX = 64


def name_problem(n: DerivedName) -> Problem | None:
    """Why ``n.name`` breaks its system's rule (a Problem of ``n.field``, rule ``names``, its line
    naming the field), else None."""
    rule = NAME_RULES[n.kind]
    ok = rule.min_len <= len(n.name) <= rule.max_len and rule.pattern.fullmatch(n.name)
    if n.kind == "bucket" and ok and (n.name.startswith("goog") or "google" in n.name):
        line = (
            f"{n.field}: the {n.what} name {n.name!r} starts with 'goog' or contains 'google', "
            "which GCS refuses; change the field"
        )
        return at(n.field, line, "names")
    if ok:
        return None
    line = (
        f"{n.field}: the {n.what} name {n.name!r} derived from it is not valid: use "
        f"{rule.min_len}-{rule.max_len} characters ({rule.allowed}; end with a letter or digit)"
        f", got {len(n.name)}; shorten or change the field"
    )
    return at(n.field, line, "names")


def gcp_label_problems(field: str, labels: dict[str, str]) -> list[Problem]:
    """GCP resource label rules for one labels mapping (Problems of ``field``, rule ``labels``)."""
    problems = [
        f"{field}: label {k!r}={v!r} is not a GCP label: keys start with a lowercase letter, keys "
        "and values are at most 63 lowercase letters, digits, '_' or '-'"
        for k, v in labels.items()
        if not is_gcp_label(k, str(v))
    ]
    if len(labels) > GCP_LABELS_MAX:
        problems.append(f"{field}: {len(labels)} labels; GCP allows at most {GCP_LABELS_MAX}")
    return [at(field, line, "labels") for line in problems]


def k8s_label_problems(field: str, labels: dict[str, str]) -> list[Problem]:
    """Kubernetes label rules (and GKE's reserved prefixes) for node labels (Problems of
    ``field``, rule ``labels``)."""
    problems = []
    for k, v in labels.items():
        if not (is_qualified_name(k) and is_label_value(str(v))):
            problems.append(
                f"{field}: {k!r}={v!r} is not a Kubernetes label: an optional DNS prefix and '/', "
                "then at most 63 letters, digits, '-', '_' or '.', starting and ending "
                "alphanumeric (the value likewise, or empty)"
            )
        elif k.startswith(GKE_LABEL_PREFIXES):
            problems.append(
                f"{field}: {k!r} is a label GKE sets on nodes itself "
                f"({', '.join(GKE_LABEL_PREFIXES)}); use a label of your own"
            )
    return [at(field, line, "labels") for line in problems]


def name_problems(cfg: StackConfig) -> list[Problem]:
    """Every derived name checked against its rule, collisions, and labels where applied."""
    names = derived_names(cfg)
    problems = [p for n in names if (p := name_problem(n))]
    groups: dict[tuple[str, str, str], list[DerivedName]] = defaultdict(list)
    for n in names:
        groups[(n.kind, n.scope, n.name)].append(n)
    for (_, _, name), same in groups.items():
        fields = list(dict.fromkeys(n.field for n in same))
        if len(same) > 1 and len(fields) > 1:
            problems.append(
                at(
                    fields[-1],
                    f"{' and '.join(fields)} both produce the {same[0].what} name {name!r}; "
                    "names must be unique: rename one",
                    "names",
                )
            )
    problems += gcp_label_problems("cluster.labels", {**cfg.labels, **cfg.cluster.labels})
    for pool in cfg.node_pools:
        field = f"node_pools[{pool.name}].labels"
        problems += k8s_label_problems(field, dict(pool.labels))
    return problems


@dataclass(frozen=True)
class DerivedName:
    """One name the stack declares in GCP or Kubernetes.

    Attributes:
        kind: the naming rule that applies (keys of ``components.stack.name_checks.NAME_RULES``).
        what: the object, for messages (``node pool``, ``bucket``, ...).
        name: the name as it will be sent to the API.
        field: the stack-file field whose value it comes from (what to edit).
        scope: names must be unique within ``(kind, scope)``.
    """

    kind: str
    what: str
    name: str
    field: str
    scope: str = ""


def derived_names(cfg: StackConfig) -> list[DerivedName]:
    """Every GCP and Kubernetes object name the Pulumi program and the manifests declare, each
    with the stack-file field it derives from. Node pool names come from
    :func:`components.nodepools.render.node_pool_specs` (``<pool>-<i>`` per multi-host slice)."""
    from components.nodepools.render import node_pool_specs

    out = [
        DerivedName("gke-cluster", "GKE cluster", cfg.cluster.name, "cluster.name"),
        DerivedName("compute", "VPC network", cfg.network.name, "network.name", "network"),
        DerivedName(
            "compute",
            "subnetwork",
            subnet_name(cfg.network.name, cfg.region),
            "network.name",
            "subnet",
        ),
        DerivedName(
            "compute", "Cloud Router", router_name(cfg.network.name), "network.name", "router"
        ),
        DerivedName("compute", "Cloud NAT", nat_name(cfg.network.name), "network.name", "nat"),
        DerivedName(
            "service-account",
            "node service account",
            node_service_account_id(cfg.cluster.name),
            "cluster.name",
        ),
        DerivedName(
            "k8s-label", "namespace", cfg.kuberay.namespace, "kuberay.namespace", "namespace"
        ),
    ]
    if any(getattr(p, "gpu_networking", None) == "gpudirect" for p in cfg.node_pools):
        from components.kernel.names import gpudirect_namespace

        out.append(
            DerivedName(
                "k8s-label",
                "GPUDirect namespace",
                gpudirect_namespace(cfg.kuberay.namespace),
                "kuberay.namespace",
                "namespace gpudirect",
            )
        )
    generation = cfg.kms.key_ring_generation
    for loc in dict.fromkeys(key_ring_locations(cfg.region, cfg.buckets.location).values()):
        ring = key_ring_name(cfg.cluster.name, generation, loc)
        out.append(DerivedName("kms", "KMS key ring", ring, "cluster.name", f"keyring {loc}"))
    for spec in node_pool_specs(plan(cfg)):
        field = "cluster.system_pool" if spec.kind == "system" else f"node_pools[{spec.pool}].name"
        out.append(DerivedName("gke-node-pool", "node pool", spec.name, field))
    from components.gpunet.render import gpu_vpcs, networked_pools

    try:
        vpcs = gpu_vpcs(cfg.node_pools, cfg.zones, cfg.network)
    except ValueError:  # too small a network.gpu_cidr: the gpu-networking rule says so
        vpcs = []
    for vpc in vpcs:  # GPU networking's VPCs, subnets, firewalls, GKE Network objects
        out.append(DerivedName("compute", "GPU VPC network", vpc.name, "network.name", "network"))
        if vpc.firewall:
            out.append(
                DerivedName("compute", "firewall rule", vpc.firewall, "network.name", "firewall")
            )
        for sub in vpc.subnets:
            out.append(DerivedName("compute", "GPU subnetwork", sub.name, "network.name", "subnet"))
            field = f"node_pools[{networked_pools(cfg.node_pools)[0][0].name}].gpu_networking"
            out.append(DerivedName("k8s-label", "GKE Network", sub.k8s_name, field, "gke-network"))
    for purpose in BUCKET_PURPOSES:
        field = "buckets.prefix" if cfg.buckets.prefix else "project / cluster.name"
        out.append(
            DerivedName(
                "bucket",
                "bucket",
                bucket_name(cfg.project, cfg.cluster.name, cfg.buckets.prefix, purpose),
                field,
            )
        )
    for acct in workload_accounts(cfg.workload_identities):
        field = f"workload_identities[{acct.identity.name}].name"
        out.append(DerivedName("service-account", "service account", acct.name, field))
        out.append(DerivedName("k8s-label", "Kubernetes service account", acct.name, field, "ksa"))
    for secret in cfg.secrets:
        out.append(DerivedName("secret", "secret", secret.name, f"secrets[{secret.name}].name"))
    if ft_enabled(
        cfg.gcs_fault_tolerance, cfg.services
    ):  # the GCS fault tolerance Redis's AUTH string (components/gcsft)
        out.append(
            DerivedName("secret", "secret", auth_secret_id(cfg.cluster.name), "cluster.name")
        )
    for rc in cfg.ray_clusters:
        out.append(
            DerivedName("k8s-label", "RayCluster", rc.name, f"ray_clusters[{rc.name}].name", "ray")
        )
    for job in cfg.jobs:
        out.append(DerivedName("k8s-label", "RayJob", job.name, f"jobs[{job.name}].name", "job"))
    return out
