"""GCS FUSE mount options by purpose, the file cache's pod settings and size check, and
hierarchical namespace on the checkpoints bucket (components/storage/fuse.py)."""

from __future__ import annotations

import pytest

from components.kernel.base import StackConfigError
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from components.storage.fuse import (
    CACHE_VOLUME,
    EPHEMERAL_LIMIT_ANNOTATION,
    cache_mib,
    hns_of,
    mount_options,
    profile_of,
)
from contract.storage import HNS_MOUNTS_ENV
from tests.helpers import config

TRAIN = {
    "name": "ray-train",
    "buckets": {"datasets": "read", "checkpoints": "write", "artifacts": "read"},
}


def _worker_template(data: dict) -> dict:
    cfg = validate(data)
    (rc,) = [m for m in render_manifests(cfg, "gs://b/w.zip") if m["kind"] == "RayCluster"]
    return rc["spec"]["workerGroupSpecs"][0]["template"]


def _stack(**buckets) -> dict:
    return config(
        buckets=buckets,
        workload_identities=[TRAIN],
        ray_clusters=[
            {
                "name": "rc",
                "service_account": "ray-train",
                "worker_groups": [{"name": "l4", "node_pool": "l4", "max_replicas": 1}],
            }
        ],
    )


def _options(template: dict) -> dict[str, list[str]]:
    return {
        v["name"]: v["csi"]["volumeAttributes"]["mountOptions"].split(",")
        for v in template["spec"]["volumes"]
        if "csi" in v
    }


def test_each_purpose_gets_its_profiles_mount_options():
    opts = _options(_worker_template(_stack()))
    # datasets, read-only: file cache with range reads, unlimited metadata caches and TTL
    assert opts["gcs-datasets"] == [
        "implicit-dirs",
        "metadata-cache:ttl-secs:-1",
        "metadata-cache:stat-cache-max-size-mb:-1",
        "metadata-cache:type-cache-max-size-mb:-1",
        "file-system:kernel-list-cache-ttl-secs:-1",
        "file-cache:max-size-mb:20480",
        "file-cache:cache-file-for-range-read:true",
    ]
    # checkpoints, written: the 60 s TTL (other pods write), parallel downloads for restores,
    # read-ahead; an HNS bucket needs no rename-dir-limit
    assert opts["gcs-checkpoints"] == [
        "implicit-dirs",
        "metadata-cache:ttl-secs:60",
        "metadata-cache:stat-cache-max-size-mb:-1",
        "metadata-cache:type-cache-max-size-mb:-1",
        "file-cache:max-size-mb:20480",
        "file-cache:enable-parallel-downloads:true",
        "read_ahead_kb=1024",
    ]
    assert opts["gcs-artifacts"] == ["implicit-dirs"]


def test_a_model_profile_and_a_flat_checkpoints_bucket():
    data = _stack(
        artifacts={"fuse_profile": "model", "file_cache_size": "8Gi"},
        checkpoints={"hierarchical_namespace": False, "file_cache_size": "0"},
    )
    t = _worker_template(data)
    opts = _options(t)
    assert "file-cache:max-size-mb:8192" in opts["gcs-artifacts"]
    assert "file-cache:enable-parallel-downloads:true" in opts["gcs-artifacts"]
    assert "file-cache:cache-file-for-range-read:true" in opts["gcs-artifacts"]
    assert "read_ahead_kb=1024" in opts["gcs-artifacts"]
    # no cache: no parallel downloads (GKE refuses them without the file cache)
    assert not any(o.startswith("file-cache") for o in opts["gcs-checkpoints"])
    assert "file-system:rename-dir-limit:200000" in opts["gcs-checkpoints"]
    # no HNS mount: the workload is not told of one
    env = t["spec"]["containers"][0].get("env") or []
    assert HNS_MOUNTS_ENV not in {e["name"] for e in env}


def test_the_cache_sits_on_ephemeral_storage_or_in_ram():
    t = _worker_template(_stack())
    # datasets 20 GiB + checkpoints 20 GiB + 1 GiB headroom
    assert t["metadata"]["annotations"][EPHEMERAL_LIMIT_ANNOTATION] == "41984Mi"
    assert CACHE_VOLUME not in {v["name"] for v in t["spec"]["volumes"]}
    env = {e["name"]: e["value"] for e in t["spec"]["containers"][0]["env"]}
    assert env[HNS_MOUNTS_ENV] == "/mnt/gcs/checkpoints"
    small = {"file_cache_size": "1Gi"}
    ram = _worker_template(_stack(file_cache_medium="memory", datasets=small, checkpoints=small))
    (cache,) = [v for v in ram["spec"]["volumes"] if v["name"] == CACHE_VOLUME]
    assert cache["emptyDir"] == {"medium": "Memory", "sizeLimit": "3072Mi"}
    assert EPHEMERAL_LIMIT_ANNOTATION not in ram["metadata"]["annotations"]


def test_defaults_by_purpose_and_pure_options():
    cfg = validate(_stack())
    b = cfg.buckets
    assert [profile_of(p, getattr(b, p)) for p in ("datasets", "checkpoints", "artifacts")] == [
        "dataset",
        "checkpoints",
        "plain",
    ]
    assert [hns_of(p, getattr(b, p)) for p in ("datasets", "checkpoints", "artifacts")] == [
        False,
        True,
        False,
    ]
    assert cache_mib("artifacts", b.artifacts) == 0
    assert mount_options("plain", read_only=False, cache=100, hns=False) == "implicit-dirs"


def test_hns_refuses_versioning_in_one_line():
    with pytest.raises(StackConfigError) as e:
        validate(
            config(buckets={"checkpoints": {"versioning": True, "hierarchical_namespace": True}})
        )
    (line,) = e.value.problems
    assert line.path == "buckets"
    assert "does not support object versioning" in line


def test_versioning_without_hierarchical_namespace_means_a_flat_bucket():
    """An explicit ``versioning: true`` (as stack files before hierarchical namespace wrote the
    checkpoints bucket) asks for a flat bucket, never an error (issue 46)."""
    for checkpoints in ({"versioning": True}, {"noncurrent_version_days": 7}):
        b = validate(config(buckets={"checkpoints": checkpoints})).buckets
        assert hns_of("checkpoints", b.checkpoints) is False
    assert hns_of("checkpoints", validate(config()).buckets.checkpoints) is True


def test_caches_larger_than_half_the_boot_disk_are_refused():
    data = _stack(datasets={"file_cache_size": "40Gi"})
    data["node_pools"][3]["disk_size_gb"] = 100  # l4: 40 + 20 GiB = 64.4 GB > 50 GB
    with pytest.raises(StackConfigError) as e:
        validate(data)
    (line,) = e.value.problems
    assert line.rule == "fuse-cache-size" and line.path == "buckets"
    assert "(checkpoints 20480 MiB, datasets 40960 MiB: 64.4 GB)" in line
    assert "pool l4's 100 GB boot disk" in line
    validate(_stack(datasets={"file_cache_size": "10Gi"}))


def test_a_memory_cache_must_fit_beside_the_object_store_in_each_pod():
    """A RAM disk counts against the pod's memory (issue 49): the 20 GiB default caches do not
    fit the tests' 8 GiB head nor its 11.8 GiB L4 workers; each pod is named with its numbers."""
    with pytest.raises(StackConfigError) as e:
        validate(_stack(file_cache_medium="memory"))
    head, worker = e.value.problems
    assert head.rule == worker.rule == "fuse-cache-memory" and head.path == "buckets"
    assert "a 41.0 GiB RAM disk) and Ray's object store (2.4 GiB)" in head
    assert "80% of the 8.0 GiB memory of ray_clusters[rc] head's pods" in head
    assert "of ray_clusters[rc].worker_groups[l4]'s pods" in worker
    # 1 GiB each (3 GiB with the headroom) fits both pods beside their object stores
    small = {"file_cache_size": "1Gi"}
    validate(_stack(file_cache_medium="memory", datasets=small, checkpoints=small))
    # a stack written before the rule: a warning that says so
    old = _stack(file_cache_medium="memory")
    del old["defaults"]
    old["buckets"]["checkpoints"] = {"hierarchical_namespace": True}
    notices = [n for n in validate(old).notices if n.rule == "fuse-cache-memory"]
    assert len(notices) == 2 and all(n.severity == "warning" for n in notices)
