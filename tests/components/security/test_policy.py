"""The secure-default rules (components/security/policy.py): every rule passes on the shipped
stacks' renders (the real program under mocks) and fails, with its message, on a render weakened
for that rule; props normalisation (policy SDK proxies, unknown values, snake_case)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from components.security.policy import (
    RULE_NAMES,
    RULES,
    UNKNOWN,
    Resource,
    boot_disk_cmek,
    normalise,
    plain_props,
    resources_from_records,
    run_rules,
)
from raygke.synth import read_stack_config, run_program
from tests.helpers import ROOT, STACKS, check_records

Records = list[dict[str, Any]]


@pytest.fixture(scope="module", params=STACKS)
def rendered(request) -> Records:
    name = request.param
    return run_program(read_stack_config(ROOT / f"Pulumi.{name}.yaml"), name)[0]


@pytest.fixture(scope="module", params=STACKS)
def rendered_digest(request) -> Records:
    """The render with the KubeRay CRDs' specs as digests (``crd_specs="digest"``, as ``raygke
    check`` runs the rules): what each weakening changes is not a CRD, and the full CRDs pass
    every rule (``test_shipped_stacks_pass_every_rule``); the ~6 MB of schemas made each
    weakened copy of the helm-mode dev render cost ~0.5 s to copy and normalise."""
    name = request.param
    return run_program(read_stack_config(ROOT / f"Pulumi.{name}.yaml"), name, crd_specs="digest")[0]


def _first(records: Records, typ: str, kind: str | None = None) -> dict[str, Any]:
    for r in records:
        if r["type"] == typ and (kind is None or r["inputs"].get("kind") == kind):
            return r["inputs"]
    raise AssertionError(f"no {typ} {kind or ''} in the render")


def _add(records: Records, typ: str, name: str, inputs: dict[str, Any]) -> None:
    records.append({"type": typ, "name": name, "parent": None, "inputs": inputs})


def _public_bucket(rs: Records) -> None:
    _first(rs, "gcp:storage/bucket:Bucket")["publicAccessPrevention"] = "inherited"


def _acl_bucket(rs: Records) -> None:
    _first(rs, "gcp:storage/bucket:Bucket")["uniformBucketLevelAccess"] = False


def _bucket_without_key(rs: Records) -> None:
    del _first(rs, "gcp:storage/bucket:Bucket")["encryption"]


def _auto_secret(rs: Records) -> None:
    _first(rs, "gcp:secretmanager/secret:Secret")["replication"] = {"auto": {}}


def _pool_without_disk_key(rs: Records) -> None:
    del _first(rs, "gcp:container/nodePool:NodePool")["nodeConfig"]["bootDiskKmsKey"]


def _project_storage_admin(rs: Records) -> None:
    member = "serviceAccount:ray-train@p.iam.gserviceaccount.com"
    _add(
        rs,
        "gcp:projects/iAMMember:IAMMember",
        "x",
        {"project": "p", "role": "roles/storage.admin", "member": member},
    )


def _sa_key(rs: Records) -> None:
    _add(rs, "gcp:serviceaccount/key:Key", "ray-train-key", {"serviceAccountId": "ray-train"})


def _node_metadata_exposed(rs: Records) -> None:
    pool = _first(rs, "gcp:container/nodePool:NodePool")
    pool["nodeConfig"]["workloadMetadataConfig"] = {"mode": "GCE_METADATA"}


def _no_secure_boot(rs: Records) -> None:
    pool = _first(rs, "gcp:container/nodePool:NodePool")
    pool["nodeConfig"]["shieldedInstanceConfig"]["enableSecureBoot"] = False


def _public_nodes(rs: Records) -> None:
    _first(rs, "gcp:container/cluster:Cluster")["privateClusterConfig"]["enablePrivateNodes"] = (
        False
    )


def _no_ray_auth(rs: Records) -> None:
    _first(rs, "kubernetes:ray.io/v1:RayCluster")["spec"].pop("authOptions", None)


def _privileged_head(rs: Records) -> None:
    spec = _first(rs, "kubernetes:ray.io/v1:RayCluster")["spec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    head.setdefault("securityContext", {})["allowPrivilegeEscalation"] = True


def _no_network_policy(rs: Records) -> None:
    rs[:] = [r for r in rs if r["type"] != "kubernetes:networking.k8s.io/v1:NetworkPolicy"]


def _unlogged_subnet(rs: Records) -> None:
    net = "projects/p/global/networks/extra"
    _add(rs, "gcp:compute/subnetwork:Subnetwork", "extra-sub", {"name": "x-sub", "network": net})


WEAKEN: dict[str, tuple[Callable[[Records], None], str]] = {
    "bucket-public-access-prevention": (_public_bucket, "public access prevention is inherited"),
    "bucket-uniform-access": (_acl_bucket, "no uniform bucket-level access"),
    "bucket-cmek": (_bucket_without_key, "no customer-managed key"),
    "secret-cmek": (_auto_secret, "replicated automatically with Google-managed keys"),
    "boot-disk-cmek": (_pool_without_disk_key, "boot disks have no customer-managed key"),
    "no-project-storage-or-basic-roles": (_project_storage_admin, "project-wide roles/storage"),
    "no-service-account-keys": (_sa_key, "service-account key"),
    "workload-identity": (_node_metadata_exposed, "does not run the GKE metadata server"),
    "secure-boot": (_no_secure_boot, "has no secure boot"),
    "private-nodes": (_public_nodes, "cluster nodes have external IPs"),
    "ray-auth": (_no_ray_auth, "authOptions.mode is None, not 'token'"),
    "pod-security": (_privileged_head, "allowPrivilegeEscalation is not false"),
    "network-policy": (_no_network_policy, "no default-deny ingress NetworkPolicy"),
    "subnet-flow-logs": (_unlogged_subnet, "subnet x-sub records no VPC Flow Logs (logConfig)"),
}


def test_every_rule_has_a_weakened_render():
    assert set(WEAKEN) == set(RULE_NAMES)
    assert len(RULE_NAMES) == len(set(RULE_NAMES))


def test_shipped_stacks_pass_every_rule(rendered):
    assert check_records(rendered) == []


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_weakened_render_fails_its_rule_only(rendered_digest, rule):
    weaken, message = WEAKEN[rule]
    records = copy.deepcopy(rendered_digest)
    weaken(records)
    violations = run_rules(resources_from_records(records))
    assert {v.rule for v in violations} == {rule}, [v.line() for v in violations]
    assert any(message in v.message for v in violations), [v.line() for v in violations]
    assert all(v.line().startswith(f"{rule}: ") for v in violations)


class _DictProxy(dict):
    """Stands in for pulumi_policy.proxy._DictProxy: raises on unknown values, hands out its
    target under ``"__target"``."""

    def __getitem__(self, key):
        if key == "__target":
            return dict(self)
        value = super().__getitem__(key)
        if value == "04da6b54-80e4-46f7-96ec-b56ff0331ba9":
            raise RuntimeError("unknown value read through the proxy")
        return value


def test_plain_props_unwraps_proxies_and_marks_unknowns():
    props = _DictProxy(
        node_config=_DictProxy(
            boot_disk_kms_key="04da6b54-80e4-46f7-96ec-b56ff0331ba9",
            machineType="n2-standard-8",
        )
    )
    out = plain_props(props)
    assert out == {"nodeConfig": {"bootDiskKmsKey": UNKNOWN, "machineType": "n2-standard-8"}}
    pool = Resource("gcp:container/nodePool:NodePool", "p", out)
    assert boot_disk_cmek(pool) == []  # wired to a key the first `pulumi up` creates
    assert boot_disk_cmek(Resource(pool.type, "p", {"nodeConfig": {}}))


def test_kubernetes_props_keep_their_keys():
    obj = {"metadata": {"labels": {"ray.io/node_type": "head"}}, "kind": "RayCluster"}
    assert normalise("kubernetes:ray.io/v1:RayCluster", obj) == obj
    assert normalise("gcp:container/nodePool:NodePool", {"node_config": {}}) == {"nodeConfig": {}}


def test_rules_are_described_and_kinds_known():
    for rule in RULES:
        assert rule.description.endswith(".")
        assert rule.kind in ("resource", "stack")
        assert rule.scope in ("gcp", "kubernetes")


def test_kubernetes_rules_are_the_security_module_rules():
    """One implementation: the pack's Kubernetes rules are components/security/rules.py's."""
    from components.security import rules as security

    assert {r.name for r in RULES if r.scope == "kubernetes"} == set(security.RULES)


def test_subnet_flow_logs_exempts_rdma_vpcs_unknown_networks_and_stacks_without_logs():
    """subnet-flow-logs: with the main subnet logged, a GPU NIC subnet without logConfig is a
    violation naming it; a subnet of a VPC with a network profile (the RDMA VPC, whose RoCE
    subnets the stack leaves unlogged) or of a network unknown at preview is not; a stack whose
    flow logs are off (no subnet logs) passes."""
    from components.security.policy import subnet_flow_logs

    log = {"aggregationInterval": "INTERVAL_5_SEC", "flowSampling": 0.5}

    def sub(name: str, network: str, logged: bool) -> Resource:
        props = {"name": name, "network": network, **({"logConfig": log} if logged else {})}
        return Resource("gcp:compute/subnetwork:Subnetwork", f"r-{name}", props)

    rdma = Resource(
        "gcp:compute/network:Network",
        "r-rdma",
        {"name": "ray-rdma", "networkProfile": "projects/p/global/networkProfiles/z-vpc-roce"},
    )
    main = sub("ray-main", "projects/p/global/networks/ray", True)
    tcpx = sub("ray-tcpx-1-sub", "projects/p/global/networks/ray-tcpx-1", False)
    roce = sub("ray-rdma-sub-0", "projects/p/global/networks/ray-rdma", False)
    unknown = sub("ray-new-sub", UNKNOWN, False)
    (v,) = subnet_flow_logs([rdma, main, tcpx, roce, unknown])
    assert v.resource == "Subnetwork r-ray-tcpx-1-sub" and v.rule == "subnet-flow-logs"
    assert v.message == (
        "subnet ray-tcpx-1-sub records no VPC Flow Logs (logConfig) while ray-main does: "
        "traffic on it would go unrecorded"
    )
    off = sub("ray-main", "projects/p/global/networks/ray", False)
    assert subnet_flow_logs([rdma, off, tcpx, roce]) == []
