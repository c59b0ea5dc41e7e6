"""Names computed from the stack config alone, needed by the spec's own rules as well as by the
builders (:mod:`components.stack.naming` re-exports them)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from components.stack.model import StackConfig

BucketPurpose = Literal["datasets", "checkpoints", "artifacts"]


def bucket_name(cfg: StackConfig, purpose: BucketPurpose) -> str:
    """GCS bucket name ``<prefix>-<purpose>``; prefix defaults to ``<project>-<cluster>``.

    Bucket names are 3-63 characters (https://cloud.google.com/storage/docs/buckets#naming); a
    longer default prefix is shortened with a stable hash suffix.
    """
    prefix = cfg.buckets.prefix or f"{cfg.project}-{cfg.cluster.name}"
    name = f"{prefix}-{purpose}"
    if len(name) > 63:
        digest = hashlib.sha256(prefix.encode()).hexdigest()[:8]
        name = f"{prefix[: 63 - len(purpose) - 10]}-{digest}-{purpose}"
    return name
