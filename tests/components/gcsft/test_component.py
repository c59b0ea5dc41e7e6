"""The Pulumi side of GCS fault tolerance (components/gcsft/component.py, wired in __main__.py),
rendered under mocks: the Memorystore instance with private services access, AUTH, TLS and the
stack's KMS key, its AUTH string in Secret Manager for the services' heads only, the APIs it
needs, the head's objects in the Ray namespace, and nothing of it for an opted-out stack."""

from __future__ import annotations

from typing import Any

from tests.helpers import config, of_type, render

SERVICE = {
    "name": "lm",
    "checkpoint": "gs://ray-gke-test-ray-test-checkpoints/run",
    "node_pool": "l4",
}
V135 = {"name": "ray-test", "deletion_protection": True, "min_master_version": "1.35"}


def _render(**overrides: Any) -> list[dict]:
    records, _ = render(config(services=[dict(SERVICE)], cluster=dict(V135), **overrides))
    return records


def test_the_redis_its_network_key_and_secret() -> None:
    records = _render()
    (redis,) = of_type(records, "gcp:redis/instance:Instance")
    i = redis["inputs"]
    assert i["name"] == "ray-test-gcs" and i["tier"] == "STANDARD_HA" and i["memorySizeGb"] == 1
    assert i["connectMode"] == "PRIVATE_SERVICE_ACCESS" and i["reservedIpRange"] == "ray-psa"
    assert i["authEnabled"] is True and i["transitEncryptionMode"] == "SERVER_AUTHENTICATION"
    assert i["customerManagedKey"].endswith("/keyRings/ray-test-us-east5/cryptoKeys/memorystore")
    assert i["deletionProtection"] is True
    (psa,) = of_type(records, "gcp:compute/globalAddress:GlobalAddress")
    assert psa["inputs"]["purpose"] == "VPC_PEERING"
    assert (psa["inputs"]["address"], psa["inputs"]["prefixLength"]) == ("10.24.0.0", 20)
    (conn,) = of_type(records, "gcp:servicenetworking/connection:Connection")
    assert conn["inputs"]["reservedPeeringRanges"] == ["ray-psa"]
    grants = of_type(records, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    assert any("@cloud-redis.iam.gserviceaccount.com" in g["inputs"]["member"] for g in grants)
    (secret,) = [
        r["inputs"]
        for r in of_type(records, "gcp:secretmanager/secret:Secret")
        if r["name"] == "gcsft-auth"
    ]
    assert secret["secretId"] == "ray-test-redis-auth"
    cmek = secret["replication"]["userManaged"]["replicas"][0]
    assert cmek["customerManagedEncryption"]["kmsKeyName"].endswith("/cryptoKeys/secret-manager")
    (version,) = of_type(records, "gcp:secretmanager/secretVersion:SecretVersion")
    assert version["inputs"]["secretData"]  # the instance's AUTH string, a secret output
    readers = [
        r["inputs"]["member"]
        for r in of_type(records, "gcp:secretmanager/secretIamMember:SecretIamMember")
        if r["inputs"]["secretId"] == "ray-test-redis-auth"
    ]
    assert readers == ["serviceAccount:ray-serve-head@ray-gke-test.iam.gserviceaccount.com"]
    apis = {r["inputs"]["service"] for r in of_type(records, "gcp:projects/service:Service")}
    assert {"redis.googleapis.com", "servicenetworking.googleapis.com"} <= apis
    (cluster,) = of_type(records, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["secretManagerConfig"] == {"enabled": True}


def test_the_head_s_objects_and_the_rayservice_use_the_instance() -> None:
    records = _render()
    (ca,) = of_type(records, "kubernetes:core/v1:ConfigMap")
    assert ca["inputs"]["metadata"]["name"] == "gcs-redis-ca"
    assert "BEGIN CERTIFICATE" in ca["inputs"]["data"]["ca.crt"]
    (spc,) = [
        r
        for r in of_type(records, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
        if r["inputs"]["metadata"]["name"] == "gcs-redis-auth"
    ]
    (svc,) = of_type(records, "kubernetes:ray.io/v1:RayService")
    address = svc["inputs"]["spec"]["rayClusterConfig"]["gcsFaultToleranceOptions"]["redisAddress"]
    assert address.startswith("rediss://10.24.") and address.endswith(":6378")
    assert f"{ca['type']}::{ca['name']}" in set(svc["options"]["depends_on"])
    assert spc["inputs"]["metadata"]["namespace"] == "ray"


def test_an_opted_out_stack_creates_none_of_it() -> None:
    records = _render(gcs_fault_tolerance={"enabled": False})
    types = {r["type"] for r in records}
    assert not types & {
        "gcp:redis/instance:Instance",
        "gcp:servicenetworking/connection:Connection",
        "gcp:compute/globalAddress:GlobalAddress",
        "kubernetes:core/v1:ConfigMap",
    }
    apis = {r["inputs"]["service"] for r in of_type(records, "gcp:projects/service:Service")}
    assert "redis.googleapis.com" not in apis


def test_the_ca_bundle_holds_every_server_ca_while_memorystore_rotates_it() -> None:
    from types import SimpleNamespace

    from components.gcsft.component import ca_bundle

    old, new = "-----BEGIN CERTIFICATE-----\nOLD\n-----END CERTIFICATE-----", "NEW PEM\n"
    assert ca_bundle([{"cert": old}]) == old  # one CA: the PEM as the instance gives it
    assert ca_bundle([SimpleNamespace(cert=old), {"cert": new}]) == old + "\n" + new
    assert ca_bundle([]) is None and ca_bundle(None) is None
