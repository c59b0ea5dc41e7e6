"""The image registry, its IAM, the image builds and the digests in the Ray CRs, under the
synth mocks (the real program)."""

from __future__ import annotations

import re

import pytest
import yaml

from components.security.iam import REGISTRY_READER_ROLE
from raygke.synth import read_stack_config, run_program
from tests.helpers import ROOT, by_name, config, of_type, render

IMAGE = "docker-build:index:Image"
REPO = "gcp:artifactregistry/repository:Repository"
READER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
DIGEST_REF = re.compile(
    r"^[a-z0-9.-]+-docker\.pkg\.dev/[^@:]+/ray-(cpu|gpu|gpu-tf|tpu)@sha256:[0-9a-f]{64}$"
)


@pytest.fixture(scope="module")
def prod() -> tuple[list[dict], dict]:
    return run_program(read_stack_config(ROOT / "Pulumi.prod.yaml"), "prod")


def _containers(spec: dict):
    for key, value in spec.items():
        if key == "containers":
            yield from value
        elif isinstance(value, dict):
            yield from _containers(value)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    yield from _containers(v)


def test_repository_cmek_in_region_with_cleanup(prod) -> None:
    records, outputs = prod
    (repo,) = of_type(records, REPO)
    i = repo["inputs"]
    assert i["format"] == "DOCKER" and i["location"] == "us-east5"
    assert i["repositoryId"] == "ray-prod"
    assert i["kmsKeyName"].endswith(
        "/locations/us-east5/keyRings/ray-prod-us-east5/cryptoKeys/artifact-registry"
    )
    assert i["cleanupPolicies"] == [
        {
            "id": "delete-untagged",
            "action": "DELETE",
            "condition": {"tagState": "UNTAGGED", "olderThan": f"{14 * 86400}s"},
        }
    ]
    assert outputs["image_registry"] == "us-east5-docker.pkg.dev/ray-gke-prod/ray-prod"


def test_node_sa_reads_this_repository_only(prod) -> None:
    records, _ = prod
    (reader,) = of_type(records, READER)
    assert reader["inputs"]["role"] == REGISTRY_READER_ROLE
    assert reader["inputs"]["repository"] == "ray-prod"
    assert (
        reader["inputs"]["member"]
        == "serviceAccount:ray-prod-nodes@ray-gke-prod.iam.gserviceaccount.com"
    )
    project_roles = [
        r["inputs"]["role"] for r in of_type(records, "gcp:projects/iAMMember:IAMMember")
    ]
    assert project_roles and not any(r.startswith("roles/artifactregistry") for r in project_roles)
    kms = of_type(records, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    assert any(
        g["inputs"]["cryptoKeyId"].endswith("/artifact-registry")
        and g["inputs"]["member"].endswith("@gcp-sa-artifactregistry.iam.gserviceaccount.com")
        for g in kms
    )


def test_images_are_built_pushed_and_cached_in_the_registry(prod) -> None:
    records, outputs = prod
    built = {r["name"]: r["inputs"] for r in of_type(records, IMAGE)}
    assert sorted(built) == ["images-cpu", "images-gpu", "images-tpu"]
    repo = "us-east5-docker.pkg.dev/ray-gke-prod/ray-prod"
    for kind in ("cpu", "gpu", "tpu"):
        i = built[f"images-{kind}"]
        assert i["dockerfile"] == {"location": f"images/{kind}/Dockerfile"}
        assert i["context"] == {"location": "."}
        assert i["buildArgs"] == {"RAY_VERSION": "2.60.0"}
        assert i["platforms"] == ["linux/amd64"] and i["push"] is True
        assert i["tags"] == [f"{repo}/ray-{kind}:2.60.0"]
        assert i["cacheFrom"] == [{"registry": {"ref": f"{repo}/ray-{kind}:buildcache"}}]
        assert i["cacheTo"][0]["registry"]["ref"] == f"{repo}/ray-{kind}:buildcache"
        assert i["registries"] == "[secret]"
        assert DIGEST_REF.match(outputs["images"][kind]), outputs["images"][kind]


def test_prod_ray_resources_reference_images_by_digest(prod) -> None:
    records, outputs = prod
    crs = [
        r["inputs"]
        for r in records
        if r["type"] in ("kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayJob")
    ]
    assert {c["kind"] for c in crs} == {"RayCluster", "RayJob"}
    refs = [c["image"] for cr in crs for c in _containers(cr["spec"])]
    assert len(refs) >= 9
    assert all(DIGEST_REF.match(ref) for ref in refs), refs
    assert set(refs) == set(outputs["images"].values())
    rc = next(cr for cr in crs if cr["kind"] == "RayCluster")
    by_group = {
        g["groupName"]: g["template"]["spec"]["containers"][0]["image"]
        for g in rc["spec"]["workerGroupSpecs"]
    }
    assert by_group == {
        "cpu": outputs["images"]["cpu"],
        "tpu-v6e": outputs["images"]["tpu"],
        "h100": outputs["images"]["gpu"],
    }


def test_prebuilt_image_is_not_built_and_used_as_declared() -> None:
    gpu = "rayproject/ray:2.60.0-py311-gpu"
    data = config(
        ray={
            "images": {"gpu": {"image": gpu, "provides": {"torch": "2.13.0"}}},
            "delete_untagged_images_after_days": 3,
        },
        ray_clusters=[{"name": "rc", "worker_groups": [{"name": "l4", "node_pool": "l4"}]}],
    )
    records, outputs = render(data)
    assert [r["name"] for r in of_type(records, IMAGE)] == ["images-cpu"]
    assert outputs["images"]["gpu"] == gpu and set(outputs["images"]) == {"cpu", "gpu"}
    (repo,) = by_name(records, REPO).values()
    assert repo["cleanupPolicies"][0]["condition"]["olderThan"] == f"{3 * 86400}s"
    (rc,) = of_type(records, "kubernetes:ray.io/v1:RayCluster")
    group = rc["inputs"]["spec"]["workerGroupSpecs"][0]
    assert group["template"]["spec"]["containers"][0]["image"] == gpu
    head = rc["inputs"]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert DIGEST_REF.match(head["image"])


def test_manifest_yaml_written_by_synth_shows_digests(tmp_path) -> None:
    from raygke.synth import synth

    synth(ROOT / "Pulumi.dev.yaml", tmp_path)
    text = (tmp_path / "manifests" / "raycluster-ray-research.yaml").read_text()
    images = [c["image"] for c in _containers(yaml.safe_load(text)["spec"])]
    assert images and all(DIGEST_REF.match(i) for i in images)


def test_a_changed_image_content_changes_the_digest_the_ray_resources_use(monkeypatch) -> None:
    """A changed Dockerfile or requirement set changes the build's inputs (its content label),
    so the image is rebuilt and every Ray resource running it changes with the new digest."""
    from components.images import render as images

    data = config(
        ray_clusters=[{"name": "rc", "worker_groups": [{"name": "l4", "node_pool": "l4"}]}]
    )
    _, before = render(data)
    real = images.content_hash
    monkeypatch.setattr(
        images,
        "content_hash",
        lambda cfg, kind, root=images.ROOT: "0" * 12 if kind == "gpu" else real(cfg, kind, root),
    )
    records, after = render(data)
    assert after["images"]["gpu"] != before["images"]["gpu"]
    assert after["images"]["cpu"] == before["images"]["cpu"]
    (rc,) = of_type(records, "kubernetes:ray.io/v1:RayCluster")
    group = rc["inputs"]["spec"]["workerGroupSpecs"][0]
    assert group["template"]["spec"]["containers"][0]["image"] == after["images"]["gpu"]


def test_a_tensorflow_gpu_job_builds_the_gpu_tf_image_for_its_workers() -> None:
    """Only a stack with a TensorFlow job on a GPU pool builds gpu-tf (the prod stack above
    builds cpu, gpu, tpu); the job's workers run its pushed digest, its head the cpu one."""
    data = config(jobs=[{"name": "tf", "workload": "train_lm_tf", "node_pool": "l4"}])
    records, outputs = render(data)
    built = {r["name"]: r["inputs"] for r in of_type(records, IMAGE)}
    assert sorted(built) == ["images-cpu", "images-gpu-tf"]
    i = built["images-gpu-tf"]
    assert i["dockerfile"] == {"location": "images/gpu-tf/Dockerfile"}
    assert i["tags"] == ["us-east5-docker.pkg.dev/ray-gke-test/ray-test/ray-gpu-tf:2.60.0"]
    assert set(outputs["images"]) == {"cpu", "gpu-tf"}
    assert DIGEST_REF.match(outputs["images"]["gpu-tf"])
    (job,) = of_type(records, "kubernetes:ray.io/v1:RayJob")
    cluster = job["inputs"]["spec"]["rayClusterSpec"]
    worker = cluster["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    assert worker["image"] == outputs["images"]["gpu-tf"]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == outputs["images"]["cpu"]
