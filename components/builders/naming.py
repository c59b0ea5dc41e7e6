"""Deterministic names shared by the Pulumi components and the pure manifest builders.

Everything here is computed from the stack config alone, so a name is known at preview time and
the rendered Kubernetes objects can refer to buckets and service accounts as plain strings.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from components.spec import StackConfig, WorkloadIdentityConfig

BucketPurpose = Literal["datasets", "checkpoints", "artifacts"]
BUCKET_PURPOSES: tuple[BucketPurpose, ...] = ("datasets", "checkpoints", "artifacts")


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


def bucket_url(cfg: StackConfig, purpose: BucketPurpose) -> str:
    """``gs://<bucket name>``."""
    return f"gs://{bucket_name(cfg, purpose)}"


def gsa_account_id(cfg: StackConfig, identity: WorkloadIdentityConfig | str) -> str:
    """Google service account id of a workload class (the workload identity's name)."""
    return identity if isinstance(identity, str) else identity.name


def gsa_email(cfg: StackConfig, identity: WorkloadIdentityConfig | str) -> str:
    """``<id>@<project>.iam.gserviceaccount.com``."""
    return f"{gsa_account_id(cfg, identity)}@{cfg.project}.iam.gserviceaccount.com"


def ksa_name(identity: WorkloadIdentityConfig | str) -> str:
    """Kubernetes service account of a workload class (same name as the workload identity)."""
    return identity if isinstance(identity, str) else identity.name


def workload_pool(cfg: StackConfig) -> str:
    """The Workload Identity pool ``<project>.svc.id.goog``."""
    return f"{cfg.project}.svc.id.goog"


def workload_identity_member(cfg: StackConfig, identity: WorkloadIdentityConfig | str) -> str:
    """IAM member that lets the KSA impersonate the GSA through Workload Identity:
    ``serviceAccount:<project>.svc.id.goog[<namespace>/<ksa>]``
    (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."""
    return f"serviceAccount:{workload_pool(cfg)}[{cfg.kuberay.namespace}/{ksa_name(identity)}]"


def node_service_account_id(cfg: StackConfig) -> str:
    """Account id of the nodes' own least-privilege service account."""
    return f"{cfg.cluster.name}-nodes"[:30]
