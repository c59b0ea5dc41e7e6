"""Derived names against the rules of the systems they reach (components/stack/name_checks.py)."""

from __future__ import annotations

import pytest

from components.plan import naming
from components.stack import name_checks
from components.stack.loader import validate
from components.stack.name_checks import name_problems
from raygke.synth import config_entries, run_program
from tests.components.config.test_stack import base
from tests.helpers import STACKS, stack


def _problems(data: dict) -> list[str]:
    return name_problems(validate(data))


@pytest.mark.parametrize("name", STACKS)
def test_shipped_stacks_have_valid_names(name: str) -> None:
    assert name_problems(stack(name)) == []


@pytest.mark.parametrize("length", [24, 25, 29, 30, 40])
def test_node_service_account_id_is_valid_for_any_cluster_name(length: int) -> None:
    """IAM account ids: 6-30 characters ending with a letter or digit
    (https://cloud.google.com/iam/docs/service-accounts-create#creating). A 29-character
    cluster name used to give ``<name>-`` (cut at 30), which IAM refuses."""
    data = base()
    data["cluster"] = {"name": "r" + "a" * (length - 2) + "y"}
    cfg = validate(data)
    sa = naming.node_service_account_id(cfg.cluster.name)
    assert 6 <= len(sa) <= 30 and sa[-1].isalnum() and sa.endswith("-nodes")
    assert not [p for p in name_problems(cfg) if "service account" in p]


def test_distinct_long_cluster_names_get_distinct_node_accounts() -> None:
    a, b = base(), base()
    a["cluster"] = {"name": "research-platform-cluster-alpha"}
    b["cluster"] = {"name": "research-platform-cluster-bravo"}
    assert naming.node_service_account_id(
        validate(a).cluster.name
    ) != naming.node_service_account_id(validate(b).cluster.name)


def test_multi_host_slice_pool_names_collide_with_a_declared_pool() -> None:
    """GKE node pool names are unique per cluster: a multi-host pool ``tpu`` declares ``tpu-0``,
    ``tpu-1``, so a pool named ``tpu-0`` collides
    (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools)."""
    data = base()
    data["zones"] = ["us-east5-b"]
    data["region"] = "us-east5"
    data["kuberay"] = {"mode": "gke-addon"}
    data["node_pools"] = [
        {"name": "tpu", "tpu": {"generation": "v6e", "topology": "4x4"}, "max_slices": 2},
        {"name": "tpu-0", "machine_type": "n2-standard-8"},
    ]
    data["ray_clusters"] = []
    data["jobs"] = []
    data["nap"] = {"resource_limits": {"cpu": 4096, "memory": 8192, "tpu-v6e-slice": 64}}
    found = _problems(data)
    assert any(
        "node_pools[tpu].name and node_pools[tpu-0].name" in p and "'tpu-0'" in p for p in found
    ), found


def test_slice_suffix_makes_node_pool_name_too_long() -> None:
    """A 40-character multi-host pool name gets ``-0``: 42 characters, over GKE's 40."""
    data = base()
    data["zones"] = ["us-east5-b"]
    data["region"] = "us-east5"
    data["kuberay"] = {"mode": "gke-addon"}
    long = "t" * 40
    data["node_pools"] = [{"name": long, "tpu": {"generation": "v6e", "topology": "4x4"}}]
    data["ray_clusters"] = []
    data["jobs"] = []
    data["nap"] = {"resource_limits": {"cpu": 4096, "memory": 8192, "tpu-v6e-slice": 64}}
    found = _problems(data)
    assert any(f"node_pools[{long}].name" in p and f"'{long}-0'" in p for p in found), found


def test_key_ring_name_over_63_characters() -> None:
    """KMS key ring names are at most 63 characters
    (https://cloud.google.com/kms/docs/resource-hierarchy#key_rings):
    ``<40-char cluster>-northamerica-northeast1`` is 64."""
    data = base()
    data["cluster"] = {"name": "c" * 40}
    data["buckets"] = {"location": "northamerica-northeast1"}
    found = _problems(data)
    assert any(p.startswith("cluster.name: the KMS key ring name") for p in found), found


def test_bucket_name_with_google_is_refused() -> None:
    """https://cloud.google.com/storage/docs/buckets#naming: the prefix is refused by the stack
    model already (with the config's other problems), and the derived-name check still knows the
    rule for a name that reaches it."""
    from components.config.stack import StackConfig
    from components.kernel.base import StackConfigError

    data = base()
    data["buckets"] = {"prefix": "google-data"}
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert any(p.startswith("buckets.prefix:") and "google" in p for p in e.value.problems)
    cfg = validate(base())
    unchecked = cfg.model_copy(update={"buckets": cfg.buckets.model_copy(update=data["buckets"])})
    assert isinstance(unchecked, StackConfig)
    found = name_problems(unchecked)
    assert any(p.startswith("buckets.prefix:") and "google" in p for p in found), found


def test_labels_where_applied() -> None:
    """GCP labels (https://cloud.google.com/resource-manager/docs/labels-overview#requirements)
    on cluster.labels; Kubernetes label syntax and GKE's own prefixes on node labels
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/)."""
    from components.kernel.base import StackConfigError

    data = base()
    data["cluster"] = {"labels": {"Team": "ML"}}
    with pytest.raises(StackConfigError) as e:  # refused by the model already, with the rest
        validate(data)
    assert any(p.startswith("cluster.labels: label 'Team'") for p in e.value.problems)
    cfg = validate(base())
    unchecked = cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update=data["cluster"])})
    assert any(p.startswith("cluster.labels: label 'Team'") for p in name_problems(unchecked))
    data = base()
    data["node_pools"][0]["labels"] = {"cloud.google.com/gke-nodepool": "x", "ok/": "v"}
    found = _problems(data)
    assert any("GKE sets on nodes itself" in p for p in found), found
    assert any("'ok/'='v' is not a Kubernetes label" in p for p in found), found


def test_valid_labels_pass() -> None:
    data = base()
    data["cluster"] = {"labels": {"team": "ml"}}
    data["node_pools"][0]["labels"] = {"example.com/team": "vision", "tier": ""}
    assert _problems(data) == []


@pytest.mark.parametrize("name", STACKS)
def test_every_rendered_gcp_name_is_a_derived_name(name: str) -> None:
    """One source: each name the real Pulumi program (under mocks) sends to GCP is one that
    ``derived_names`` lists, so the check sees every name."""
    from tests.helpers import ROOT

    cfg = stack(name)
    from components.stack.loader import stack_data_from_yaml

    data = stack_data_from_yaml((ROOT / f"Pulumi.{name}.yaml").read_text())
    records, _ = run_program(config_entries(data, {"project": data["project"]}), name)
    declared = {n.name for n in name_checks.derived_names(cfg)}
    name_inputs = {
        "gcp:container/cluster:Cluster": "name",
        "gcp:container/nodePool:NodePool": "name",
        "gcp:compute/network:Network": "name",
        "gcp:compute/subnetwork:Subnetwork": "name",
        "gcp:compute/firewall:Firewall": "name",
        "gcp:compute/router:Router": "name",
        "gcp:compute/routerNat:RouterNat": "name",
        "gcp:kms/keyRing:KeyRing": "name",
        "gcp:serviceaccount/account:Account": "accountId",
        "gcp:storage/bucket:Bucket": "name",
        "gcp:secretmanager/secret:Secret": "secretId",
    }
    seen = 0
    for r in records:
        key = name_inputs.get(r["type"])
        if key:
            seen += 1
            assert r["inputs"][key] in declared, (r["type"], r["inputs"][key])
    assert seen >= 10
