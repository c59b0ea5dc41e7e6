"""The ``buckets``, ``workload_identities`` and ``secrets`` blocks."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from components.spec.base import _SA_ID, _Model

# --------------------------------------------------------------------------- storage & identity


class BucketConfig(_Model):
    """One GCS bucket (uniform access, public access prevention, CMEK are always on)."""

    versioning: bool = False
    noncurrent_version_days: int | None = Field(None, ge=1)
    delete_after_days: int | None = Field(None, ge=1)
    soft_delete_days: int = Field(7, ge=0, le=90)

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


class BucketsConfig(_Model):
    """The three buckets; names are ``<project>-<cluster>-<purpose>`` unless ``prefix`` is given."""

    location: str | None = None
    prefix: str | None = None
    force_destroy: bool = False
    datasets: BucketConfig = Field(default_factory=BucketConfig)
    checkpoints: BucketConfig = Field(
        default_factory=lambda: BucketConfig(versioning=True, noncurrent_version_days=14)
    )
    artifacts: BucketConfig = Field(default_factory=lambda: BucketConfig(versioning=True))


BucketRole = Literal["read", "write"]


class WorkloadIdentityConfig(_Model):
    """One workload class: a Google service account bound to a Kubernetes service account.

    ``buckets`` grants bucket-level roles only: ``read`` = roles/storage.objectViewer,
    ``write`` = roles/storage.objectUser.
    """

    name: str
    buckets: dict[Literal["datasets", "checkpoints", "artifacts"], BucketRole] = Field(
        default_factory=lambda: {"datasets": "read", "checkpoints": "write", "artifacts": "read"}
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _SA_ID.match(v):
            raise ValueError(
                f"workload identity name {v!r} is not a valid service account id: 6-30 lowercase "
                "letters, digits and hyphens, starting with a letter"
            )
        return v


def _default_identities() -> list[WorkloadIdentityConfig]:
    return [
        WorkloadIdentityConfig(name="ray-train"),
        WorkloadIdentityConfig(
            name="ray-serve", buckets={"checkpoints": "read", "artifacts": "read"}
        ),
    ]


class SecretConfig(_Model):
    """A Secret Manager secret: name only; the value is set out of band, never in config."""

    name: str
    readers: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", v):
            raise ValueError(f"secret name {v!r}: use 1-255 letters, digits, '-' or '_'")
        return v
