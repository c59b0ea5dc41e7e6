"""Buckets as the engine receives them (real program, mocks)."""

from __future__ import annotations

from components.config.storage import BucketConfig
from components.storage.render import lifecycle_rules
from tests.helpers import by_name, config, render

BUCKET = "gcp:storage/bucket:Bucket"


def test_buckets_are_private_uniform_and_cmek():
    buckets_cfg = {
        "force_destroy": True,
        "datasets": {"delete_after_days": 90, "soft_delete_days": 0},
        "checkpoints": {
            "versioning": True,
            "noncurrent_version_days": 7,
            "soft_delete_days": 14,
            "hierarchical_namespace": False,  # versioning needs a flat bucket
        },
    }
    records, outputs = render(config(buckets=buckets_cfg))
    buckets = by_name(records, BUCKET)
    assert set(buckets) == {
        f"ray-gke-test-ray-test-{p}" for p in ("datasets", "checkpoints", "artifacts")
    }
    key = "projects/ray-gke-test/locations/us-east5/keyRings/ray-test-us-east5/cryptoKeys/buckets"
    for b in buckets.values():
        assert b["publicAccessPrevention"] == "enforced"
        assert b["uniformBucketLevelAccess"] is True
        assert b["encryption"] == {"defaultKmsKeyName": key}
        assert b["location"] == "US-EAST5"
        assert b["forceDestroy"] is True
        assert b["labels"]["env"] == "test"
    ds = buckets["ray-gke-test-ray-test-datasets"]
    assert ds["versioning"] == {"enabled": False}
    assert ds["lifecycleRules"] == [{"action": {"type": "Delete"}, "condition": {"age": 90}}]
    assert ds["softDeletePolicy"] == {"retentionDurationSeconds": 0}
    ck = buckets["ray-gke-test-ray-test-checkpoints"]
    assert ck["versioning"] == {"enabled": True}
    assert ck["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"daysSinceNoncurrentTime": 7}}
    ]
    assert ck["softDeletePolicy"] == {"retentionDurationSeconds": 14 * 86400}
    assert outputs["bucket_urls"]["checkpoints"] == "gs://ray-gke-test-ray-test-checkpoints"


def test_multi_region_buckets_get_a_key_ring_in_their_location():
    records, _ = render(config(buckets={"location": "US"}))
    rings = by_name(records, "gcp:kms/keyRing:KeyRing")
    assert {r["location"] for r in rings.values()} == {"us-east5", "us"}
    for b in by_name(records, BUCKET).values():
        assert "/locations/us/keyRings/" in b["encryption"]["defaultKmsKeyName"]


def test_lifecycle_rules_pure():
    assert lifecycle_rules(BucketConfig()) == []
    assert lifecycle_rules(BucketConfig(noncurrent_version_days=3, delete_after_days=30)) == [
        {"action": {"type": "Delete"}, "condition": {"days_since_noncurrent_time": 3}},
        {"action": {"type": "Delete"}, "condition": {"age": 30}},
    ]


def test_the_checkpoints_bucket_has_hierarchical_namespace_by_default_and_the_others_not():
    records, _ = render(config())
    buckets = by_name(records, BUCKET)
    ck = buckets["ray-gke-test-ray-test-checkpoints"]
    assert ck["hierarchicalNamespace"] == {"enabled": True}
    assert ck["uniformBucketLevelAccess"] is True  # HNS needs it (pulumi-gcp Bucket docs)
    assert ck["versioning"] == {"enabled": False}
    for purpose in ("datasets", "artifacts"):
        assert "hierarchicalNamespace" not in buckets[f"ray-gke-test-ray-test-{purpose}"]
