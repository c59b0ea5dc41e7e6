"""KMS, service accounts, Workload Identity, bucket-level IAM and secrets (real program, mocks)."""

from __future__ import annotations

import pytest

from components.security.iam import NODE_PROJECT_ROLES, gke_service_agent
from raygke.mocks import project_number
from tests.helpers import by_name, config, of_type, render

NUMBER = project_number("ray-gke-test")


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return render(config())[0]


def test_workload_identity_binding_member_is_exact(records):
    wi = of_type(records, "gcp:serviceaccount/iAMMember:IAMMember")
    got = {
        (r["inputs"]["serviceAccountId"], r["inputs"]["member"], r["inputs"]["role"]) for r in wi
    }
    assert got == {
        (
            "projects/ray-gke-test/serviceAccounts/ray-train@ray-gke-test.iam.gserviceaccount.com",
            "serviceAccount:ray-gke-test.svc.id.goog[ray/ray-train]",
            "roles/iam.workloadIdentityUser",
        ),
        (
            "projects/ray-gke-test/serviceAccounts/ray-serve@ray-gke-test.iam.gserviceaccount.com",
            "serviceAccount:ray-gke-test.svc.id.goog[ray/ray-serve]",
            "roles/iam.workloadIdentityUser",
        ),
        # issue 12: each head has its own KSA bound to its own GSA
        (
            "projects/ray-gke-test/serviceAccounts/ray-train-head@ray-gke-test.iam.gserviceaccount.com",
            "serviceAccount:ray-gke-test.svc.id.goog[ray/ray-train-head]",
            "roles/iam.workloadIdentityUser",
        ),
        (
            "projects/ray-gke-test/serviceAccounts/ray-serve-head@ray-gke-test.iam.gserviceaccount.com",
            "serviceAccount:ray-gke-test.svc.id.goog[ray/ray-serve-head]",
            "roles/iam.workloadIdentityUser",
        ),
    }


def test_project_roles_are_only_the_node_sa_least_privilege_set(records):
    project_roles = of_type(records, "gcp:projects/iAMMember:IAMMember")
    assert sorted(r["inputs"]["role"] for r in project_roles) == sorted(NODE_PROJECT_ROLES)
    assert {r["inputs"]["member"] for r in project_roles} == {
        "serviceAccount:ray-test-nodes@ray-gke-test.iam.gserviceaccount.com"
    }
    assert not any(r["inputs"]["role"].startswith("roles/storage") for r in project_roles)
    # No other project-level IAM resource types, and no service-account keys anywhere.
    types = {r["type"] for r in records}
    assert not any("projects/iAMBinding" in t or "projects/iAMPolicy" in t for t in types)
    assert not any(t.startswith("gcp:serviceaccount/key") for t in types)


def test_bucket_roles_are_bucket_level_and_follow_config(records):
    grants = of_type(records, "gcp:storage/bucketIAMMember:BucketIAMMember")
    got = sorted(
        (g["inputs"]["bucket"], g["inputs"]["role"], g["inputs"]["member"]) for g in grants
    )
    sa = "serviceAccount:{}@ray-gke-test.iam.gserviceaccount.com"
    b = "ray-gke-test-ray-test-{}"
    assert got == sorted(
        [
            (b.format("datasets"), "roles/storage.objectViewer", sa.format("ray-train")),
            (b.format("checkpoints"), "roles/storage.objectUser", sa.format("ray-train")),
            (b.format("artifacts"), "roles/storage.objectViewer", sa.format("ray-train")),
            (b.format("checkpoints"), "roles/storage.objectViewer", sa.format("ray-serve")),
            (b.format("artifacts"), "roles/storage.objectViewer", sa.format("ray-serve")),
            # issue 12: the heads' own GSAs hold their identity's bucket roles (drivers run there)
            (b.format("datasets"), "roles/storage.objectViewer", sa.format("ray-train-head")),
            (b.format("checkpoints"), "roles/storage.objectUser", sa.format("ray-train-head")),
            (b.format("artifacts"), "roles/storage.objectViewer", sa.format("ray-train-head")),
            (b.format("checkpoints"), "roles/storage.objectViewer", sa.format("ray-serve-head")),
            (b.format("artifacts"), "roles/storage.objectViewer", sa.format("ray-serve-head")),
        ]
    )
    assert all(g["parent"] == "ray-gke:security:WorkloadAccess::access" for g in grants)


def test_kms_keys_rotate_and_service_agents_are_granted(records):
    keys = by_name(records, "gcp:kms/cryptoKey:CryptoKey")
    assert set(keys) == {
        "gke-secrets",
        "buckets",
        "artifact-registry",
        "secret-manager",
        "boot-disks",
    }
    assert all(k["rotationPeriod"] == "7776000s" for k in keys.values())
    grants = of_type(records, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    got = {(g["inputs"]["cryptoKeyId"].rsplit("/", 1)[1], g["inputs"]["member"]) for g in grants}
    assert got == {
        (
            "gke-secrets",
            f"serviceAccount:service-{NUMBER}@container-engine-robot.iam.gserviceaccount.com",
        ),
        ("buckets", f"serviceAccount:service-{NUMBER}@gs-project-accounts.iam.gserviceaccount.com"),
        (
            "artifact-registry",
            f"serviceAccount:service-{NUMBER}@gcp-sa-artifactregistry.iam.gserviceaccount.com",
        ),
        (
            "secret-manager",
            f"serviceAccount:service-{NUMBER}@gcp-sa-secretmanager.iam.gserviceaccount.com",
        ),
        (
            "boot-disks",
            f"serviceAccount:service-{NUMBER}@compute-system.iam.gserviceaccount.com",
        ),
    }
    assert all(g["inputs"]["role"] == "roles/cloudkms.cryptoKeyEncrypterDecrypter" for g in grants)
    assert (
        gke_service_agent("1")
        == "serviceAccount:service-1@container-engine-robot.iam.gserviceaccount.com"
    )


def test_secrets_have_no_values_and_only_readers_get_access(records):
    secrets = of_type(records, "gcp:secretmanager/secret:Secret")
    assert [s["inputs"]["secretId"] for s in secrets] == ["wandb-api-key"]
    assert not any(r["type"].startswith("gcp:secretmanager/secretVersion") for r in records)
    access = of_type(records, "gcp:secretmanager/secretIamMember:SecretIamMember")
    assert [(a["inputs"]["member"], a["inputs"]["role"]) for a in access] == [
        (
            "serviceAccount:ray-train@ray-gke-test.iam.gserviceaccount.com",
            "roles/secretmanager.secretAccessor",
        ),
        (  # issue 12: and the reader's head account
            "serviceAccount:ray-train-head@ray-gke-test.iam.gserviceaccount.com",
            "roles/secretmanager.secretAccessor",
        ),
    ]


def _kms(records: list[dict]) -> tuple[set[str], set[str]]:
    """(key ring ids, the key rings the keys live in)."""
    rings = {
        f"projects/ray-gke-test/locations/{r['inputs']['location']}/keyRings/{r['inputs']['name']}"
        for r in of_type(records, "gcp:kms/keyRing:KeyRing")
    }
    keys = {r["inputs"]["keyRing"] for r in of_type(records, "gcp:kms/cryptoKey:CryptoKey")}
    return rings, keys


def test_destroy_then_recreate_needs_new_key_ring_names(records):
    """Destroy leaves the key rings (and keys) in the project: KMS cannot delete them
    (terraform-provider-google kms_key_ring docs). Rendering the same stack again declares the
    same names, the clash that fails the second `pulumi up`; the next kms.key_ring_generation
    declares rings whose names none of the left-behind rings has, and the keys use them."""
    first, _ = _kms(records)
    assert first == {"projects/ray-gke-test/locations/us-east5/keyRings/ray-test-us-east5"}
    again, _ = _kms(render(config())[0])
    assert again == first  # same generation: the names clash with what destroy left behind
    second_records = render(config(kms={"key_ring_generation": 2}))[0]
    second, keys = _kms(second_records)
    assert second == {"projects/ray-gke-test/locations/us-east5/keyRings/ray-test-us-east5-g2"}
    assert not second & first
    assert keys == second
    # the cluster's secrets key and the buckets' CMEK key follow the new ring
    (cluster,) = of_type(second_records, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["databaseEncryption"]["keyName"].startswith(next(iter(second)))


def test_node_service_account_holds_only_the_documented_minimum_role(records):
    roles = [r["inputs"]["role"] for r in of_type(records, "gcp:projects/iAMMember:IAMMember")]
    assert roles == ["roles/container.defaultNodeServiceAccount"]
    assert "roles/artifactregistry.reader" not in roles


def test_secrets_are_replicated_in_the_region_under_the_secret_manager_key(records):
    (secret,) = of_type(records, "gcp:secretmanager/secret:Secret")
    replication = secret["inputs"]["replication"]
    assert "auto" not in replication
    (replica,) = replication["userManaged"]["replicas"]
    assert replica["location"] == "us-east5"
    key = replica["customerManagedEncryption"]["kmsKeyName"]
    assert (
        key
        == "projects/ray-gke-test/locations/us-east5/keyRings/ray-test-us-east5/cryptoKeys/secret-manager"
    )
    (agent,) = of_type(records, "gcp:projects/serviceIdentity:ServiceIdentity")
    assert agent["inputs"]["service"] == "secretmanager.googleapis.com"


def test_boot_disks_of_every_pool_and_nap_use_the_boot_disk_key(records):
    key = (
        "projects/ray-gke-test/locations/us-east5/keyRings/ray-test-us-east5/cryptoKeys/boot-disks"
    )
    pools = of_type(records, "gcp:container/nodePool:NodePool")
    assert pools and all(p["inputs"]["nodeConfig"]["bootDiskKmsKey"] == key for p in pools)
    (cluster,) = of_type(records, "gcp:container/cluster:Cluster")
    nap = cluster["inputs"]["clusterAutoscaling"]["autoProvisioningDefaults"]
    assert nap["bootDiskKmsKey"] == key
