"""The ``buckets``, ``workload_identities`` and ``secrets`` blocks."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components import catalog
from components.kernel.base import INT32_MAX, SERVICE_ACCOUNT_ID, StrictModel, unique

# --------------------------------------------------------------------------- storage & identity


class BucketConfig(StrictModel):
    """One GCS bucket (uniform access, public access prevention, CMEK are always on)."""

    versioning: bool = Field(
        False,
        description="Keep noncurrent object versions (https://cloud.google.com/storage/docs/"
        "object-versioning).",
    )
    noncurrent_version_days: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,  # GCS lifecycle conditions are int32 (JSON API Buckets resource)
        description="Delete a noncurrent version this many days after it became noncurrent "
        "(lifecycle `daysSinceNoncurrentTime`, https://cloud.google.com/storage/docs/lifecycle); "
        "unset: keep them.",
    )
    delete_after_days: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,  # GCS lifecycle conditions are int32 (JSON API Buckets resource)
        description="Delete live objects this many days after creation (lifecycle `age`, "
        "https://cloud.google.com/storage/docs/lifecycle); unset: keep them.",
    )
    soft_delete_days: int = Field(
        7,
        ge=0,
        le=90,
        description="Soft delete retention, days: 0 turns it off, else 7-90 "
        "(https://cloud.google.com/storage/docs/soft-delete).",
    )

    hierarchical_namespace: bool | None = Field(
        None,
        description="Hierarchical namespace: real folders, so renaming a folder (a checkpoint "
        "commit) is one atomic operation, and higher request rates; set at creation only "
        "(changing it replaces the bucket), no object versioning "
        "(https://cloud.google.com/storage/docs/hns-overview). Unset: on for checkpoints "
        "(stacks with `defaults` 2026-12-03 or later, unless `versioning` or "
        "`noncurrent_version_days` is set), off for the others.",
    )
    fuse_profile: Literal["dataset", "checkpoints", "model", "plain"] | None = Field(
        None,
        description="Cloud Storage FUSE mount options of the bucket's mounts in Ray pods: "
        "`dataset` (file cache, range reads cached, unlimited stat/type caches), `checkpoints` "
        "(file cache with parallel downloads for restores, read-ahead), `model` (both, for "
        "large read-once files), `plain` (`implicit-dirs` only); read-only mounts also get an "
        "unlimited metadata TTL (https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "cloud-storage-fuse-csi-driver-perf). Unset: `dataset` for datasets, `checkpoints` for "
        "checkpoints, `plain` for artifacts.",
    )
    file_cache_size: str | None = Field(
        None,
        description="File cache of each mount of the bucket (`file-cache:max-size-mb`), a "
        "Kubernetes quantity; `0`: none. Unset: 20Gi for the dataset, checkpoints and model "
        "profiles, none for plain. Held on `buckets.file_cache_medium`.",
    )

    @field_validator("file_cache_size")
    @classmethod
    def _cache_size(cls, v: str | None) -> str | None:
        from contract.quantity import quantity_float

        if v is not None and quantity_float(v) < 0:
            raise ValueError(f"file_cache_size {v!r} is negative")
        return v

    @field_validator("soft_delete_days")
    @classmethod
    def _soft_delete(cls, v: int) -> int:
        """GCS soft delete retention is 0 (off) or 7 to 90 days
        (https://cloud.google.com/storage/docs/soft-delete#retention-duration)."""
        if 0 < v < 7:
            raise ValueError(
                f"soft_delete_days {v} is not a GCS soft delete retention: use 0 (off) or 7-90 days"
            )
        return v


class BucketsConfig(StrictModel):
    """The three buckets; names are ``<project>-<cluster>-<purpose>`` unless ``prefix`` is given."""

    location: str | None = Field(
        None,
        description="GCS location of the buckets, e.g. `US-EAST5` or `US`; unset: the stack's "
        "region (https://cloud.google.com/storage/docs/locations).",
    )
    prefix: str | None = Field(
        None,
        description="Bucket name prefix (names are `<prefix>-<purpose>`); unset: "
        "`<project>-<cluster.name>`, shortened with a hash past 63 characters "
        "(https://cloud.google.com/storage/docs/buckets#naming).",
    )
    force_destroy: bool = Field(
        False,
        description="Let `pulumi destroy` delete buckets that still hold objects (the provider's "
        "`forceDestroy`).",
    )
    datasets: BucketConfig = Field(
        default_factory=BucketConfig,
        description="The datasets bucket (`prepare` writes, trainers read).",
    )
    checkpoints: BucketConfig = Field(
        default_factory=BucketConfig,
        description="The checkpoints bucket (Ray Train `storage_path`); hierarchical namespace "
        "by default (stacks with `defaults` 2026-12-03 or later), so no object versioning "
        "(soft delete keeps deleted objects 7 days); `versioning: true` makes it flat.",
    )
    artifacts: BucketConfig = Field(
        default_factory=lambda: BucketConfig(versioning=True),
        description="The artifacts bucket (holds the workloads archive that RayJobs run from).",
    )
    file_cache_medium: Literal["ephemeral", "memory"] = Field(
        "ephemeral",
        description="Where the GCS FUSE file caches of a pod live: `ephemeral` (the node's "
        "ephemeral storage: boot disk, or Local SSD where the node has it; A3 GPU hosts) or "
        "`memory` (a RAM disk, `gke-gcsfuse-cache` memory emptyDir: recommended for TPU v6+ "
        "hosts; it counts against the pod's memory: `raygke check` refuses a pod whose caches "
        "and object store take more than 80% of it) "
        "(https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-perf).",
    )

    @model_validator(mode="after")
    def _hns(self) -> BucketsConfig:
        """Hierarchical namespace refuses object versioning
        (https://cloud.google.com/storage/docs/hns-overview, incompatible features)."""
        for purpose in ("datasets", "checkpoints", "artifacts"):
            bc = getattr(self, purpose)
            if bc.hierarchical_namespace and (bc.versioning or bc.noncurrent_version_days):
                raise ValueError(
                    f"{purpose}: hierarchical namespace does not support object versioning; "
                    "drop versioning / noncurrent_version_days (soft_delete_days still recovers "
                    "deleted objects), or drop hierarchical_namespace for a flat bucket that "
                    "versions objects (https://cloud.google.com/storage/docs/hns-overview)"
                )
        return self

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        """Bucket names are lowercase letters, digits, ``-`` and ``_``, start with a letter or
        digit, never start with ``goog`` nor contain ``google``
        (https://cloud.google.com/storage/docs/buckets#naming); the prefix starts every name.
        Lengths of the derived names are checked by ``raygke check`` (components.stack.name_checks)."""
        if v is None:
            return v
        if not re.fullmatch(r"[a-z0-9][-_a-z0-9]*", v):
            raise ValueError(
                f"prefix {v!r} cannot start a bucket name: use lowercase letters, digits, '-' "
                "and '_', starting with a letter or digit"
            )
        if v.startswith("goog") or "google" in v:
            raise ValueError(
                f"prefix {v!r}: bucket names may not start with 'goog' or contain 'google'"
            )
        return v

    @field_validator("location")
    @classmethod
    def _location(cls, v: str | None) -> str | None:
        problem = None if v is None else catalog.bucket_location_problem(v)
        if problem:
            raise ValueError(problem)
        return v


PURPOSE_HNS = {"datasets": False, "checkpoints": True, "artifacts": False}
"""Hierarchical namespace when ``hierarchical_namespace`` is unset, by purpose (checkpoints: a
commit is one atomic folder rename, components/storage/fuse.py)."""


def hns_of(purpose: str, bucket: BucketConfig) -> bool:
    """Whether the bucket of ``purpose`` has hierarchical namespace: its
    ``hierarchical_namespace``; unset, a flat bucket where it asks for object versioning
    (``versioning`` or ``noncurrent_version_days``, which hierarchical namespace does not
    support), else :data:`PURPOSE_HNS` (stacks written before hierarchical namespace became the
    checkpoints default keep a flat one: :mod:`components.config.epochs`)."""
    if bucket.hierarchical_namespace is not None:
        return bucket.hierarchical_namespace
    if bucket.versioning or bucket.noncurrent_version_days:
        return False
    return PURPOSE_HNS[purpose]


def hns_by_purpose(buckets: BucketsConfig) -> dict[str, bool]:
    """Bucket purpose -> whether the ``buckets`` block's bucket of it has hierarchical
    namespace (:func:`hns_of`), every purpose in one call."""
    return {purpose: hns_of(purpose, getattr(buckets, purpose)) for purpose in PURPOSE_HNS}


BucketRole = Literal["read", "write"]


class KmsConfig(StrictModel):
    """The KMS key rings (one per location: the cluster's region and the buckets' location)."""

    key_ring_generation: int = Field(
        1,
        ge=1,
        le=999,
        description="Generation of the key ring names: 1 names them `<cluster.name>-<location>`, "
        "N > 1 `<cluster.name>-<location>-g<N>`. KMS key rings and keys cannot be deleted "
        "(the provider only drops them from its state: terraform-provider-google "
        "`website/docs/r/kms_key_ring.html.markdown`; deleted key names cannot be reused: "
        "https://cloud.google.com/kms/docs/delete-kms-resources): after `pulumi destroy` the "
        "names stay taken, so raise this before recreating the stack (new key ring and keys; "
        "data encrypted with the old keys still needs the old ones).",
    )


class WorkloadIdentityConfig(StrictModel):
    """One workload class: a Google service account bound to a Kubernetes service account.

    ``buckets`` grants bucket-level roles only: ``read`` = roles/storage.objectViewer,
    ``write`` = roles/storage.objectUser.
    """

    name: str = Field(
        description="Google service account id, also the Kubernetes service account name that "
        "`ray_clusters[].service_account` and `jobs[].service_account` refer to. 6-30 lowercase "
        "letters, digits and hyphens (https://cloud.google.com/iam/docs/"
        "service-accounts-create#creating).",
    )
    buckets: dict[Literal["datasets", "checkpoints", "artifacts"], BucketRole] = Field(
        default_factory=lambda: {"datasets": "read", "checkpoints": "write", "artifacts": "read"},
        description="Bucket roles by purpose: `read` = roles/storage.objectViewer, `write` = "
        "roles/storage.objectUser (https://cloud.google.com/storage/docs/access-control/"
        "iam-roles); a bucket not listed is neither granted nor mounted.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not SERVICE_ACCOUNT_ID.match(v):
            raise ValueError(
                f"workload identity name {v!r} is not a valid service account id: 6-30 lowercase "
                "letters, digits and hyphens, starting with a letter"
            )
        return v


def default_identities() -> list[WorkloadIdentityConfig]:
    return [
        WorkloadIdentityConfig(name="ray-train"),
        WorkloadIdentityConfig(
            name="ray-serve", buckets={"checkpoints": "read", "artifacts": "read"}
        ),
    ]


class SecretConfig(StrictModel):
    """A Secret Manager secret: name only; the value is set out of band, never in config."""

    name: str = Field(
        description="Secret Manager secret id: 1-255 letters, digits, `-` or `_`; the value is "
        "added out of band (https://cloud.google.com/secret-manager/docs/creating-and-accessing-"
        "secrets).",
    )
    readers: list[str] = Field(
        default_factory=list,
        description="Names of `workload_identities` (each once) granted "
        "roles/secretmanager.secretAccessor on this secret (https://cloud.google.com/secret-manager/docs/access-control).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", v):
            raise ValueError(f"secret name {v!r}: use 1-255 letters, digits, '-' or '_'")
        return v

    @field_validator("readers")
    @classmethod
    def _readers(cls, v: list[str]) -> list[str]:
        """Each reader once: a reader is one IAM binding resource (its URN names the reader)."""
        return unique(v, "readers")
