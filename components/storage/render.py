"""Pure pieces of the buckets: location and lifecycle rules.

Sources: https://cloud.google.com/storage/docs/lifecycle (``daysSinceNoncurrentTime``, ``age``),
https://cloud.google.com/storage/docs/soft-delete (retention 0 or 7-90 days).
"""

from __future__ import annotations

from typing import Any

from components.config.storage import BucketConfig

DAY_SECONDS = 86400


def lifecycle_rules(bucket: BucketConfig) -> list[dict[str, Any]]:
    """Lifecycle rules of a bucket config as ``{"action": {...}, "condition": {...}}`` dicts.

    ``noncurrent_version_days`` N -> delete noncurrent versions N days after they became
    noncurrent; ``delete_after_days`` N -> delete live objects N days after creation.
    """
    rules: list[dict[str, Any]] = []
    if bucket.noncurrent_version_days is not None:
        rules.append(
            {
                "action": {"type": "Delete"},
                "condition": {"days_since_noncurrent_time": bucket.noncurrent_version_days},
            }
        )
    if bucket.delete_after_days is not None:
        rules.append({"action": {"type": "Delete"}, "condition": {"age": bucket.delete_after_days}})
    return rules
