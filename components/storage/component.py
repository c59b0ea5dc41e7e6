"""Storage (:class:`Storage`): the datasets, checkpoints and artifacts buckets, each with uniform
bucket-level access, public access prevention, CMEK with the buckets key, versioning, lifecycle
rules, a soft delete policy and the stack's labels. Sources: docs/sources.md#storage-component
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.config.storage import BucketConfig
from components.plan import naming
from components.plan.context import Context
from components.storage.fuse import hns_of
from components.storage.render import DAY_SECONDS, lifecycle_rules


@dataclass
class StorageArgs:
    """Inputs of :class:`Storage`.

    Attributes:
        context: the stack's context (its project, region, labels, bucket names and
            ``buckets`` block).
        kms_key_id: the buckets' CMEK key id (``projects/.../cryptoKeys/buckets``).
        depends_on: resources the buckets wait for (the GCS agent's key grant).
    """

    context: Context
    kms_key_id: pulumi.Input[str]
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class Storage(pulumi.ComponentResource):
    """``ray-gke:storage:Storage``: the three buckets; ``buckets`` maps purpose -> Bucket."""

    def __init__(
        self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:storage:Storage", name, None, opts)
        ctx = args.context
        self.buckets: dict[str, gcp.storage.Bucket] = {}
        for purpose in naming.BUCKET_PURPOSES:
            bc: BucketConfig = getattr(ctx.buckets_config, purpose)
            self.buckets[purpose] = gcp.storage.Bucket(
                f"{name}-{purpose}",
                name=ctx.buckets[purpose],
                project=ctx.project,
                location=naming.bucket_location(ctx.buckets_config.location, ctx.region),
                uniform_bucket_level_access=True,
                public_access_prevention="enforced",
                encryption=gcp.storage.BucketEncryptionArgs(default_kms_key_name=args.kms_key_id),
                versioning=gcp.storage.BucketVersioningArgs(enabled=bc.versioning),
                lifecycle_rules=[
                    gcp.storage.BucketLifecycleRuleArgs(
                        action=gcp.storage.BucketLifecycleRuleActionArgs(**r["action"]),
                        condition=gcp.storage.BucketLifecycleRuleConditionArgs(**r["condition"]),
                    )
                    for r in lifecycle_rules(bc)
                ],
                # One atomic folder rename per checkpoint commit (components.storage.fuse);
                # HNS needs uniform bucket-level access (set above).
                hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True)
                if hns_of(purpose, bc)
                else None,
                soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                    retention_duration_seconds=bc.soft_delete_days * DAY_SECONDS
                ),
                labels={**ctx.labels, "purpose": purpose},
                force_destroy=ctx.buckets_config.force_destroy,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
            )
        self.register_outputs({k: b.url for k, b in self.buckets.items()})
