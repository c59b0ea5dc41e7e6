"""The secure-default rules of the stack (:data:`RULES`), written once: the Pulumi policy pack
(``policy/``) runs them at ``pulumi preview`` / ``pulumi up``, ``raygke check`` offline over the
synth render (:func:`raygke.synth.run_program`). Pure functions over :class:`Resource`
``(type, name, props)`` (props normalised by :func:`plain_props`); no Pulumi import.
Sources (one per rule): docs/sources.md#security-policy
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from components.kernel.problems import Problem, Rule
from components.security import rules as security

UNKNOWN = "<unknown at preview>"
"""What :func:`plain_props` puts where the engine has no value yet (``pulumi preview``)."""

# Sentinels the engine uses for values unknown during preview, as the pulumi-policy Python SDK
# (pulumi_policy/proxy.py, UNKNOWN_*_VALUE) and the Pulumi SDK (pulumi/runtime/rpc.py
# UNKNOWN) define them.
_UNKNOWN_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)
_SNAKE = re.compile(r"_([a-z0-9])")

BUCKET = "gcp:storage/bucket:Bucket"
SECRET = "gcp:secretmanager/secret:Secret"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
SA_KEY = "gcp:serviceaccount/key:Key"
PROJECT_IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
PROJECT_IAM_BINDING = "gcp:projects/iAMBinding:IAMBinding"
PROJECT_IAM_POLICY = "gcp:projects/iAMPolicy:IAMPolicy"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")


def _camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key)


def plain_props(props: Any, camel: bool = True) -> Any:
    """``props`` as plain ``dict`` / ``list`` data.

    Accepts synth records' ``inputs`` and pulumi-policy's ``args.props`` alike: its proxies
    (``_DictProxy`` / ``_ListProxy``, which hand out their target under the key ``"__target"``)
    are unwrapped, values unknown during preview become :data:`UNKNOWN`, and with ``camel``
    snake_case keys become camelCase (``node_config`` -> ``nodeConfig``; the engine's own names
    are camelCase already). Kubernetes objects keep their keys (``camel=False``): label keys such
    as ``ray.io/cluster`` are data, not property names.
    """
    if isinstance(props, str):
        return UNKNOWN if props in _UNKNOWN_SENTINELS else props
    if isinstance(props, Mapping):
        target = props["__target"] if type(props).__name__ == "_DictProxy" else props
        return {
            (_camel(str(k)) if camel else str(k)): plain_props(target[k], camel) for k in target
        }
    if isinstance(props, Sequence):
        target = props["__target"] if type(props).__name__ == "_ListProxy" else props  # type: ignore[call-overload]
        return [plain_props(v, camel) for v in target]
    return props


def normalise(resource_type: str, props: Any) -> dict[str, Any]:
    """:func:`plain_props` with the key convention of the resource's provider (camelCase for
    GCP, the object as written for ``kubernetes:*``)."""
    out = plain_props(props, camel=not resource_type.startswith("kubernetes:"))
    return out if isinstance(out, dict) else {}


# ---------------------------------------------------------------------------------- rule kit


@dataclass(frozen=True)
class Resource:
    """One resource as the rules see it.

    Attributes:
        type: the Pulumi type token (``gcp:storage/bucket:Bucket``).
        name: the Pulumi resource name (``storage-datasets``).
        props: normalised props (:func:`normalise`): the engine's view of the resource's
            inputs (camelCase for GCP resources, the object itself for Kubernetes ones), from
            synth's ``resources.json`` or a policy's ``args.props``. A value unknown at preview
            (:data:`UNKNOWN`) counts as set: only a missing or empty value is a violation.
    """

    type: str
    name: str
    props: dict[str, Any]


# Each secure-default rule is a components.kernel.problems.Rule: ``name`` (``rule_id``) the policy name
# (``bucket-cmek``), the same in the policy pack and ``raygke check``; ``description`` one line,
# what the rule demands; ``kind`` ``resource`` (``check(Resource) -> list[Problem]``, each
# printed as its message) or ``stack`` (``check(list[Resource]) -> list[Violation]``, each a
# Problem with the resource it is about, display name ``""`` when about the whole stack); ``scope`` ``gcp`` (needs the program's render) or
# ``kubernetes`` (rules of :mod:`components.security.rules`, which ``check_stack`` also runs over
# the pure render).


@dataclass(frozen=True)
class Violation:
    """A rule broken by a resource: the rule's :class:`~components.kernel.problems.Problem` (its
    message and its rule id) and the resource it is about (:func:`display_name`; empty: the stack
    as a whole), which the pack does not print but ``raygke check`` maps to a stack field
    (:func:`raygke.synth.policy_problems`)."""

    resource: str
    problem: Problem

    @property
    def rule(self) -> str:
        """The rule's id (``bucket-cmek``)."""
        return self.problem.rule

    @property
    def message(self) -> str:
        """What the policy pack reports for it (``report_violation``)."""
        return self.problem.message

    def line(self) -> str:
        """``<rule>: <resource>: <message>``, the line ``raygke check`` prints (the shape of
        :mod:`components.security.rules`'s lines)."""
        where = f"{self.resource}: " if self.resource else ""
        return f"{self.rule}: {where}{self.message}"

    def as_problem(self, path: str = "") -> Problem:
        """The violation as ``raygke check`` reports it: a Problem of the stack field ``path``
        (rule ``policy``) printed :meth:`line`."""
        return Problem(path, self.line(), "policy")


def display_name(r: Resource) -> str:
    """How messages name a resource: ``RayCluster ray/training`` for a Kubernetes object,
    ``Bucket storage-datasets`` (type, Pulumi name) otherwise."""
    if r.type.startswith("kubernetes:"):
        meta = r.props.get("metadata") or {}
        kind = r.props.get("kind") or r.type.rsplit(":", 1)[-1]
        ns = meta.get("namespace")
        name = meta.get("name", r.name)
        return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    return f"{r.type.rsplit(':', 1)[-1]} {r.name}"


def _get(data: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(data, dict):
            return None
        data = data.get(p)
    return data


def _set(value: Any) -> bool:
    """A value that is present: non-empty, or unknown at preview (wired to an output)."""
    return value == UNKNOWN or (value is not None and value != "" and value != [] and value != {})


# ------------------------------------------------------------------------------------ GCP rules


def bucket_public_access_prevention(r: Resource) -> list[Problem]:
    if r.type != BUCKET:
        return []
    v = r.props.get("publicAccessPrevention")
    if v in ("enforced", UNKNOWN):
        return []
    return [Problem("", f"bucket public access prevention is {v or 'not set'}; set it to enforced")]


def bucket_uniform_access(r: Resource) -> list[Problem]:
    if r.type != BUCKET or r.props.get("uniformBucketLevelAccess") in (True, UNKNOWN):
        return []
    return [
        Problem("", "bucket has no uniform bucket-level access (object ACLs allowed); enable it")
    ]


def bucket_cmek(r: Resource) -> list[Problem]:
    if r.type != BUCKET or _set(_get(r.props, "encryption", "defaultKmsKeyName")):
        return []
    return [Problem("", "bucket has no customer-managed key (encryption.defaultKmsKeyName)")]


def secret_cmek(r: Resource) -> list[Problem]:
    if r.type != SECRET:
        return []
    rep = r.props.get("replication") or {}
    if rep == UNKNOWN:
        return []
    auto = _get(rep, "auto")
    if auto is not None:
        if _set(_get(auto, "customerManagedEncryption", "kmsKeyName")):
            return []
        return [
            Problem("", "secret is replicated automatically with Google-managed keys; use a CMEK")
        ]
    replicas = _get(rep, "userManaged", "replicas") or []
    if replicas == UNKNOWN:
        return []
    bare = [
        str(_get(x, "location"))
        for x in replicas
        if not _set(_get(x, "customerManagedEncryption", "kmsKeyName"))
    ]
    if not replicas:
        return [Problem("", "secret has no replication with a customer-managed key")]
    if bare:
        return [Problem("", f"secret replica(s) in {', '.join(bare)} have no customer-managed key")]
    return []


def _node_configs(r: Resource) -> list[tuple[str, dict[str, Any]]]:
    """``(where, node config)`` of a node pool, or of a cluster's own node config and its inline
    node pools."""
    if r.type == NODE_POOL:
        return [("node pool", r.props.get("nodeConfig") or {})]
    if r.type != CLUSTER:
        return []
    out = []
    if "nodeConfig" in r.props:
        out.append(("cluster node config", r.props.get("nodeConfig") or {}))
    for p in r.props.get("nodePools") or []:
        if isinstance(p, dict):
            out.append((f"node pool {p.get('name', '?')}", p.get("nodeConfig") or {}))
    return out


def _nap_defaults(r: Resource) -> dict[str, Any] | None:
    """The cluster's NAP defaults when Node Auto Provisioning is enabled, else ``None``."""
    ca = r.props.get("clusterAutoscaling") if r.type == CLUSTER else None
    if not isinstance(ca, dict) or ca.get("enabled") is False:
        return None
    if ca.get("enabled") is not True and ca.get("enabled") != UNKNOWN:
        return None
    return ca.get("autoProvisioningDefaults") or {}


def boot_disk_cmek(r: Resource) -> list[Problem]:
    out = [
        Problem("", f"{where} boot disks have no customer-managed key (bootDiskKmsKey)")
        for where, nc in _node_configs(r)
        if not _set(nc.get("bootDiskKmsKey"))
    ]
    nap = _nap_defaults(r)
    if nap is not None and not _set(nap.get("bootDiskKmsKey")):
        out.append(
            Problem(
                "",
                "node auto-provisioning defaults have no boot disk customer-managed key "
                "(clusterAutoscaling.autoProvisioningDefaults.bootDiskKmsKey)",
            )
        )
    return out


def _forbidden_role(role: Any) -> bool:
    return isinstance(role, str) and (role.startswith("roles/storage.") or role in BASIC_ROLES)


def no_project_storage_or_basic_roles(r: Resource) -> list[Problem]:
    grants: list[tuple[Any, Any]] = []
    if r.type == PROJECT_IAM_MEMBER:
        grants = [(r.props.get("role"), r.props.get("member"))]
    elif r.type == PROJECT_IAM_BINDING:
        grants = [(r.props.get("role"), m) for m in r.props.get("members") or []]
    elif r.type == PROJECT_IAM_POLICY:
        data = r.props.get("policyData")
        try:
            bindings = json.loads(data).get("bindings", []) if isinstance(data, str) else []
        except (ValueError, AttributeError):
            bindings = []
        grants = [(b.get("role"), m) for b in bindings for m in b.get("members", [])]
    return [
        Problem(
            "",
            f"project-wide {role} granted to {member}: grant bucket-level roles "
            "(roles/storage.objectViewer / objectUser on the bucket), never storage or basic "
            "roles on the project",
        )
        for role, member in grants
        if _forbidden_role(role)
    ]


def no_service_account_keys(r: Resource) -> list[Problem]:
    if r.type != SA_KEY:
        return []
    return [
        Problem(
            "", "a service-account key is a long-lived credential; use Workload Identity instead"
        )
    ]


def workload_identity(r: Resource) -> list[Problem]:
    out = []
    if r.type == CLUSTER and not _set(_get(r.props, "workloadIdentityConfig", "workloadPool")):
        out.append(
            Problem(
                "", "cluster has no Workload Identity pool (workloadIdentityConfig.workloadPool)"
            )
        )
    for where, nc in _node_configs(r):
        mode = _get(nc, "workloadMetadataConfig", "mode")
        if mode not in ("GKE_METADATA", UNKNOWN):
            out.append(
                Problem(
                    "",
                    f"{where} does not run the GKE metadata server (workloadMetadataConfig.mode is "
                    f"{mode or 'not set'}; set GKE_METADATA): pods would see the node's identity",
                )
            )
    return out


def secure_boot(r: Resource) -> list[Problem]:
    configs = list(_node_configs(r))
    nap = _nap_defaults(r)
    if nap is not None:
        configs.append(("node auto-provisioning defaults", nap))
    return [
        Problem("", f"{where} has no secure boot (shieldedInstanceConfig.enableSecureBoot)")
        for where, nc in configs
        if _get(nc, "shieldedInstanceConfig", "enableSecureBoot") not in (True, UNKNOWN)
    ]


def private_nodes(r: Resource) -> list[Problem]:
    if r.type == CLUSTER:
        v = _get(r.props, "privateClusterConfig", "enablePrivateNodes")
        if v in (True, UNKNOWN):
            return []
        return [
            Problem("", "cluster nodes have external IPs (privateClusterConfig.enablePrivateNodes)")
        ]
    if r.type == NODE_POOL and _get(r.props, "networkConfig", "enablePrivateNodes") is False:
        return [
            Problem(
                "", "node pool opts out of private nodes (networkConfig.enablePrivateNodes: false)"
            )
        ]
    return []


def subnet_flow_logs(resources: Sequence[Resource]) -> list[Violation]:
    """Rule ``subnet-flow-logs`` (docs/sources.md#security-policy): each subnet without ``logConfig`` while
    another subnet of the stack has one, unless its VPC (``network``, matched by name) has a
    ``networkProfile`` or is unknown at preview."""
    subnets = [r for r in resources if r.type == SUBNETWORK]
    logged = [r.props.get("name", r.name) for r in subnets if _set(r.props.get("logConfig"))]
    if not logged:
        return []  # the stack's flow logs are off (network.flow_logs.enabled: false)
    profiled = {
        r.props.get("name")
        for r in resources
        if r.type == NETWORK and _set(r.props.get("networkProfile"))
    }
    out = []
    for r in subnets:
        net = r.props.get("network")
        if _set(r.props.get("logConfig")) or not isinstance(net, str) or net == UNKNOWN:
            continue
        if net.rsplit("/", 1)[-1] in profiled:
            continue
        message = (
            f"subnet {r.props.get('name', r.name)} records no VPC Flow Logs (logConfig) while "
            f"{', '.join(logged)} does: traffic on it would go unrecorded"
        )
        out.append(Violation(display_name(r), Problem("", message, "subnet-flow-logs")))
    return out


# ----------------------------------------------------------------------------- Kubernetes rules
# One implementation: the rule functions of components/security/rules.py, which `raygke check`
# runs over the pure render (check_stack). Here they get the objects of the program's render.


def _split(rule: str, line: str) -> tuple[str, str]:
    """``"<rule>: <object>: <message>"`` (a security.py line) -> ``(object, message)``."""
    rest = line.removeprefix(f"{rule}: ")
    obj, sep, message = rest.partition(": ")
    return (obj, message) if sep else ("", rest)


def _k8s_rule(rule: str) -> Callable[[Resource], list[Problem]]:
    fn = security.RULES[rule]

    def check(r: Resource) -> list[Problem]:
        if not r.type.startswith("kubernetes:"):
            return []
        return [Problem("", _split(rule, line)[1], rule) for line in fn([r.props])]

    check.__name__ = rule.replace("-", "_")
    return check


def network_policy(resources: Sequence[Resource]) -> list[Violation]:
    """Rule ``network-policy`` of :mod:`components.security.rules` over the stack's Kubernetes
    objects (it needs them all: policies and the Ray objects they guard)."""
    objects = [r.props for r in resources if r.type.startswith("kubernetes:")]
    out = []
    for line in security.check_network_policy(objects):
        resource, message = _split("network-policy", line)
        out.append(Violation(resource, Problem("", message, "network-policy")))
    return out


def _resource_rule(
    name: str,
    description: str,
    fn: Callable[[Resource], list[Problem]],
    scope: Literal["gcp", "kubernetes"] = "gcp",
) -> Rule:
    return Rule(fn, rule_id=name, description=description, kind="resource", scope=scope)


RULES: tuple[Rule, ...] = (
    _resource_rule(
        "bucket-public-access-prevention",
        "Every Cloud Storage bucket enforces public access prevention.",
        bucket_public_access_prevention,
    ),
    _resource_rule(
        "bucket-uniform-access",
        "Every Cloud Storage bucket has uniform bucket-level access (no object ACLs).",
        bucket_uniform_access,
    ),
    _resource_rule(
        "bucket-cmek", "Every Cloud Storage bucket has a customer-managed KMS key.", bucket_cmek
    ),
    _resource_rule(
        "secret-cmek",
        "Every Secret Manager secret is encrypted with a customer-managed KMS key.",
        secret_cmek,
    ),
    _resource_rule(
        "boot-disk-cmek",
        "Node boot disks (node pools, cluster node config, NAP defaults) use a customer-managed "
        "KMS key.",
        boot_disk_cmek,
    ),
    _resource_rule(
        "no-project-storage-or-basic-roles",
        "No project-level storage role or basic role (owner/editor/viewer) is granted.",
        no_project_storage_or_basic_roles,
    ),
    _resource_rule(
        "no-service-account-keys",
        "No service-account key is created; workloads use Workload Identity.",
        no_service_account_keys,
    ),
    _resource_rule(
        "workload-identity",
        "The cluster has Workload Identity and every node pool runs the GKE metadata server.",
        workload_identity,
    ),
    _resource_rule(
        "secure-boot",
        "Every node pool and the NAP defaults use Shielded nodes with secure boot.",
        secure_boot,
    ),
    _resource_rule("private-nodes", "Cluster nodes have internal IPs only.", private_nodes),
    Rule(
        subnet_flow_logs,
        rule_id="subnet-flow-logs",
        description="When the stack's subnets record VPC Flow Logs, every subnet does (the GPU "
        "NIC subnets included; not an RDMA-profile VPC's).",
        kind="stack",
        scope="gcp",
    ),
    _resource_rule(
        "ray-auth",
        "Every Ray cluster (RayCluster, a RayJob's own cluster, RayService) uses token "
        "authentication.",
        _k8s_rule("ray-auth"),
        "kubernetes",
    ),
    _resource_rule(
        "pod-security",
        "Every container of every pod template (Ray heads, workers, submitters, the autoscaler) "
        "runs restricted: no privilege escalation, all capabilities dropped, non-root, "
        "RuntimeDefault seccomp; the namespace enforces Pod Security. One exception, in the "
        "-gpudirect namespace only: a worker group's GPUDirect-TCPX(O) RxDM sidecar.",
        _k8s_rule("pod-security"),
        "kubernetes",
    ),
    Rule(
        network_policy,
        rule_id="network-policy",
        description="Every namespace with Ray objects has a default-deny ingress NetworkPolicy "
        "and every Ray head a NetworkPolicy of its own that does not open its API ports to all.",
        kind="stack",
        scope="kubernetes",
    ),
)
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)


def run_rules(resources: Iterable[Resource], rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Every violation of ``rules`` by ``resources``, in rule order then resource order."""
    res = list(resources)
    out: list[Violation] = []
    for rule in rules:
        if rule.kind == "resource":
            for r in res:
                out += [Violation(display_name(r), p.with_rule(rule.id)) for p in rule.check(r)]
        else:
            out += [Violation(v.resource, v.problem.with_rule(rule.id)) for v in rule.check(res)]
    return out


def resources_from_records(records: Iterable[Mapping[str, Any]]) -> list[Resource]:
    """Synth records (``{"type", "name", "inputs"}``, :func:`raygke.synth.run_program` or
    ``resources.json``) as :class:`Resource` (component resources and providers left out)."""
    out = []
    for rec in records:
        t = str(rec.get("type", ""))
        if ":" not in t or t.startswith("pulumi:") or t.startswith("ray-gke:"):
            continue
        out.append(Resource(t, str(rec.get("name", "")), normalise(t, rec.get("inputs") or {})))
    return out


GCP_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.scope == "gcp")
