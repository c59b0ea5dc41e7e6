"""The stack's :class:`Context`: what the renders need of a stack besides its records.

Below :mod:`components.stack.plan` (which carries it as :attr:`~components.stack.plan.Plan.context`
and re-exports it) so that the records the plan derives, the node-pool specs of
:mod:`components.nodepools.spec`, can be built from it. Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from components.kernel.names import BucketPurpose, bucket_name

if TYPE_CHECKING:
    from components.stack.model import StackConfig
    from components.storage.model import BucketsConfig

_PURPOSES: tuple[BucketPurpose, ...] = ("datasets", "checkpoints", "artifacts")


@dataclass(frozen=True)
class Context:
    """What the renders need of a stack besides its records.

    Attributes:
        project: GCP project id.
        region: GCP region (``us-central2``).
        location: the cluster's location (:attr:`components.stack.model.StackConfig.location`:
            the region for a regional control plane, else the first zone).
        zones: the stack's zones.
        cluster: the GKE cluster's name (``cluster.name``).
        namespace: the Kubernetes namespace of the Ray objects (``kuberay.namespace``).
        labels: the stack's common GCP labels (``labels``, already validated as GCP labels).
        ray_version: the Ray version of every image and RayCluster (``ray.version``).
        buckets: bucket purpose (``datasets``, ``checkpoints``, ``artifacts``) -> bucket name
            (:func:`components.kernel.names.bucket_name`).
        buckets_config: the ``buckets`` block (the FUSE profiles and caches of the mounts,
            :mod:`components.storage.fuse`).
    """

    project: str
    region: str
    location: str
    zones: tuple[str, ...]
    cluster: str
    namespace: str
    labels: Mapping[str, str]
    ray_version: str
    buckets: Mapping[str, str]
    buckets_config: BucketsConfig

    def bucket_url(self, purpose: BucketPurpose) -> str:
        """``gs://<bucket name>`` of ``purpose``."""
        return f"gs://{self.buckets[purpose]}"


def context(cfg: StackConfig) -> Context:
    """The :class:`Context` of ``cfg``."""
    return Context(
        project=cfg.project,
        region=cfg.region,
        location=cfg.location,
        zones=tuple(cfg.zones),
        cluster=cfg.cluster.name,
        namespace=cfg.kuberay.namespace,
        labels=MappingProxyType(dict(cfg.labels)),
        ray_version=cfg.ray.version,
        buckets=MappingProxyType(
            {
                p: bucket_name(cfg.project, cfg.cluster.name, cfg.buckets.prefix, p)
                for p in _PURPOSES
            }
        ),
        buckets_config=cfg.buckets,
    )
