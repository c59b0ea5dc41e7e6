"""Names computed from the stack config alone, needed by the spec's own rules as well as by the
builders and the plan's records (:mod:`components.plan.naming` re-exports them)."""

from __future__ import annotations

import hashlib
from typing import Literal

BucketPurpose = Literal["datasets", "checkpoints", "artifacts"]


def bucket_name(project: str, cluster: str, prefix: str | None, purpose: BucketPurpose) -> str:
    """GCS bucket name ``<prefix>-<purpose>``; ``prefix`` (``buckets.prefix``) defaults to
    ``<project>-<cluster>`` (``project``, ``cluster.name``).

    Bucket names are 3-63 characters (https://cloud.google.com/storage/docs/buckets#naming); a
    longer default prefix is shortened with a stable hash suffix. The stack's own names are in
    :attr:`components.plan.plan.Context.buckets`.
    """
    prefix = prefix or f"{project}-{cluster}"
    name = f"{prefix}-{purpose}"
    if len(name) > 63:
        digest = hashlib.sha256(prefix.encode()).hexdigest()[:8]
        name = f"{prefix[: 63 - len(purpose) - 10]}-{digest}-{purpose}"
    return name


def node_service_account_id(cluster: str) -> str:
    """Account id of the nodes' own least-privilege service account: ``<cluster>-nodes``
    (``cluster``: ``cluster.name``).

    Account ids are 6-30 characters and end with a letter or digit
    (https://cloud.google.com/iam/docs/service-accounts-create#creating); a cluster name too
    long for that is shortened with a stable hash, never cut mid-way (``...-`` would be refused).
    """
    suffix = "-nodes"
    name = cluster + suffix
    if len(name) <= 30:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:4]
    head = cluster[: 30 - len(suffix) - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}{suffix}"


GPUDIRECT_NAMESPACE_SUFFIX = "-gpudirect"
"""The namespace of the Ray objects on ``gpu_networking: gpudirect`` pools is the Ray namespace's
name with this suffix (:func:`gpudirect_namespace`)."""
GPUDIRECT_LABEL = "ray-gke.io/gpudirect"
"""The label (value :data:`GPUDIRECT_LABEL_VALUE`) that names that namespace's Pod Security
exception (docs/security.md; :mod:`components.security.rules` writes both out)."""
GPUDIRECT_LABEL_VALUE = "rxdm"


def gpudirect_namespace(ray_namespace: str) -> str:
    """The namespace of the Ray clusters with a worker group on a ``gpudirect`` pool, which runs
    the GPUDirect-TCPX(O) RxDM sidecar: ``<ray_namespace>-gpudirect`` (``kuberay.namespace``)."""
    return f"{ray_namespace}{GPUDIRECT_NAMESPACE_SUFFIX}"
