"""Replacement rules against the real renders: every resource type of the dev and prod stacks
has a cited rule, and a replaced parent recreates what lives inside it (a renamed dev cluster
replaces the registry repository and recreates every in-cluster object); a replaced bucket that
may hold objects is a data-loss warning naming it."""

from __future__ import annotations

from typing import Any

import pytest

from raygke.diff.compare import compare
from raygke.diff.replacement import K8S_PROVIDER, recreated_by, ref, rule_for
from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def _render(stack: str, overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The records ``raygke diff`` compares (``raygke synth --resources-only``: each KubeRay
    CRD's spec as its digest)."""
    import raygke.synth

    config = raygke.synth.program_config(ROOT / f"Pulumi.{stack}.yaml", overrides or {})
    records, _ = raygke.synth.run_program(config, stack, crd_specs="digest")
    return records


@pytest.fixture(scope="module")
def renders() -> dict[str, list[dict[str, Any]]]:
    return {
        "dev": _render("dev"),
        "prod": _render("prod"),
        "dev-renamed": _render("dev", {"cluster.name": "ray-dev2"}),
    }


def test_every_rendered_resource_type_has_a_cited_replacement_rule(renders) -> None:
    types = {r["type"] for s in ("dev", "prod") for r in renders[s]}
    assert len(types) > 30  # the walk covers the real stacks, not an empty render
    missing = sorted(t for t in types if rule_for(t) is None)
    assert missing == [], f"resource types without a replacement rule: {missing}"
    for t in types:
        rule = rule_for(t)
        assert rule is not None and rule.source.startswith("https://"), t
        assert rule.fields or rule.in_place, f"{t}: no replacing fields and not marked in_place"


def test_renaming_the_dev_cluster_replaces_the_registry_and_recreates_in_cluster_objects(
    renders,
) -> None:
    base, head = renders["dev"], renders["dev-renamed"]
    plan = compare(base, head, "dev")
    ops = {c.urn: c for c in plan.changes}
    by_ref = {ref(r): r for r in head}

    (repo,) = [c for c in plan.changes if c.type == "gcp:artifactregistry/repository:Repository"]
    assert repo.op == "replace"
    assert any(r.startswith("repositoryId") for r in repo.reasons), repo.reasons

    (cluster,) = [c for c in plan.changes if c.type == "gcp:container/cluster:Cluster"]
    assert cluster.op == "replace"
    (provider,) = [c for c in plan.changes if c.type == K8S_PROVIDER]
    assert provider.op == "replace" and any(
        "kubeconfig targets cluster" in r for r in provider.reasons
    )

    in_cluster = [
        r
        for r in head
        if (r.get("options") or {}).get("provider")
        == ref(by_ref[next(k for k in by_ref if k.startswith(K8S_PROVIDER))])
    ]
    kinds = {r["type"].split(":")[-1] for r in in_cluster}
    assert {
        "Namespace",
        "CustomResourceDefinition",
        "Release",
        "Secret",
        "NetworkPolicy",
        "RayCluster",
        "RayJob",
    } <= kinds
    for r in in_cluster:
        c = ops.get(r["urn"])
        assert c is not None and c.op == "replace", f"{r['type']} {r['name']} not recreated"
    rayjobs = [ops[r["urn"]] for r in in_cluster if r["type"] == "kubernetes:ray.io/v1:RayJob"]
    assert rayjobs and all(c.rerun for c in rayjobs)
    # node pools live in the cluster
    pools = [c for c in plan.changes if c.type == "gcp:container/nodePool:NodePool"]
    assert pools and all(c.op == "replace" for c in pools)
    # the summary counts them: nothing inside the cluster is "unchanged"
    assert plan.counts()["replace"] >= len(in_cluster) + len(pools) + 3


def test_replaced_bucket_with_force_destroy_is_a_data_loss_warning_naming_it(renders) -> None:
    base, head = renders["dev"], renders["dev-renamed"]
    plan = compare(base, head, "dev")
    buckets = [c for c in plan.changes if c.type == "gcp:storage/bucket:Bucket"]
    assert buckets, "renaming the cluster renames the buckets"
    for c in buckets:
        old = next(r for r in base if r["urn"] == c.urn)
        name = old["inputs"]["name"]
        assert old["inputs"]["forceDestroy"] is True
        assert any(f.startswith("data loss") and name in f for f in c.flags), c.flags


def test_recreated_by_names_only_real_containment(renders) -> None:
    dev = renders["dev"]
    cluster = next(r for r in dev if r["type"] == "gcp:container/cluster:Cluster")
    bucket = next(r for r in dev if r["name"] == "storage-artifacts")
    pool = next(r for r in dev if r["type"] == "gcp:container/nodePool:NodePool")
    member = next(
        r
        for r in dev
        if r["type"] == "gcp:storage/bucketIAMMember:BucketIAMMember"
        and r["inputs"]["bucket"] == bucket["inputs"]["name"]
    )
    assert recreated_by(cluster, pool) is not None
    assert recreated_by(bucket, member) is not None
    assert recreated_by(cluster, member) is None  # no link
    assert recreated_by(bucket, pool) is None


def test_ray_spec_hash_paths_follow_kuberay() -> None:
    """One table (raygke/diff/replacement.py RAY_SPEC_HASH_MUTED) says which Ray cluster spec changes
    enter KubeRay's spec hash (what Recreate and a RayService upgrade react to) and which reach
    only recreated pods; raygke/diff/disruption.py and raygke/diff/compare.py both read it."""
    from raygke.diff.replacement import (
        RAY_SERVICE_HASH_MUTED,
        ray_pod_changes,
        ray_spec_hashed,
    )

    paths = [
        "spec.workerGroupSpecs[0].replicas",
        "spec.workerGroupSpecs[1].maxReplicas",
        "spec.workerGroupSpecs[0].scaleStrategy.workersToDelete",
        "spec.workerGroupSpecs[0].template.spec.tolerations[0].key",
        "spec.headGroupSpec.template.spec.schedulingGates[0].name",
        "spec.upgradeStrategy.type",
        "spec.workerGroupSpecs[0].template.spec.containers[0].image",
        "spec.rayVersion",
        "spec.headGroupSpec.serviceType",
        "metadata.labels.team",
    ]
    assert ray_spec_hashed(paths) == [
        "spec.workerGroupSpecs[0].template.spec.containers[0].image",
        "spec.rayVersion",
        "spec.headGroupSpec.serviceType",
    ]
    assert ray_pod_changes(paths) == [
        "spec.workerGroupSpecs[0].template.spec.tolerations[0].key",
        "spec.headGroupSpec.template.spec.schedulingGates[0].name",
        "spec.workerGroupSpecs[0].template.spec.containers[0].image",
        "spec.rayVersion",
    ]
    svc = [
        "spec.rayClusterConfig.suspend",
        "spec.rayClusterConfig.rayVersion",
        "spec.serveConfigV2",
    ]
    assert ray_spec_hashed(svc, "spec.rayClusterConfig") == svc[:2]
    assert ray_spec_hashed(svc, "spec.rayClusterConfig", RAY_SERVICE_HASH_MUTED) == svc[1:2]
