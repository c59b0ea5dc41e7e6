"""The stack's :class:`Context`: what the renders need of a stack besides its records.

Below :mod:`components.plan.plan` (which carries it as :attr:`~components.plan.plan.Plan.context`
and re-exports it) so that the records the plan derives, the node-pool specs of
:mod:`components.plan.nodepools`, can be built from it. Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from components.kernel.names import BucketPurpose, bucket_name, gpudirect_namespace
from components.kernel.ray import PART_OF

if TYPE_CHECKING:
    from components.config.stack import StackConfig
    from components.config.storage import BucketsConfig

_PURPOSES: tuple[BucketPurpose, ...] = ("datasets", "checkpoints", "artifacts")


@dataclass(frozen=True)
class Context:
    """What the renders need of a stack besides its records.

    Attributes:
        project: GCP project id.
        region: GCP region (``us-central2``).
        location: the cluster's location (:attr:`components.config.stack.StackConfig.location`:
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
        gpudirect_namespace: ``<namespace>-gpudirect`` when a node pool sets
            ``gpu_networking: gpudirect`` (:func:`components.kernel.names.gpudirect_namespace`),
            else None.
        ray_namespaces: Ray object name -> its namespace, for the objects outside
            :attr:`namespace` (read it with :meth:`namespace_of`): every Ray cluster with a
            worker group on a ``gpudirect`` pool (a RayCluster, a job's own cluster, a
            RayService) and every job submitted to such a RayCluster runs in
            :attr:`gpudirect_namespace`, whose Pod Security level lets their RxDM sidecars run
            (docs/security.md).
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
    gpudirect_namespace: str | None = None
    ray_namespaces: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def namespace_of(self, name: str) -> str:
        """The namespace of the Ray object ``name`` (a RayCluster, RayJob or RayService: a
        ``ray_clusters``, ``jobs`` or ``services`` entry's name) and of what belongs to it (its
        auth Secret, NetworkPolicies, PodMonitoring, Hub token class, Gateway)."""
        return self.ray_namespaces.get(name, self.namespace)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces holding the stack's Ray objects: :attr:`namespace`, then
        :attr:`gpudirect_namespace` when there is one."""
        extra = (self.gpudirect_namespace,) if self.gpudirect_namespace else ()
        return (self.namespace, *extra)

    def bucket_url(self, purpose: BucketPurpose) -> str:
        """``gs://<bucket name>`` of ``purpose``."""
        return f"gs://{self.buckets[purpose]}"


def _ray_namespaces(cfg: StackConfig) -> tuple[str | None, dict[str, str]]:
    """``(gpudirect namespace, {Ray object name: that namespace})`` (:class:`Context`); read
    from the config alone, by pool name (a reference to an undeclared pool moves nothing)."""
    gpudirect = {
        p.name for p in cfg.node_pools if getattr(p, "gpu_networking", None) == "gpudirect"
    }
    if not gpudirect:
        return None, {}
    ns = gpudirect_namespace(cfg.kuberay.namespace)
    out = {
        rc.name: ns
        for rc in cfg.ray_clusters
        if any(g.node_pool in gpudirect for g in rc.worker_groups)
    }
    for job in cfg.jobs:
        if (job.cluster and job.cluster in out) or (not job.cluster and job.node_pool in gpudirect):
            out[job.name] = ns
    out.update({s.name: ns for s in cfg.services if s.node_pool in gpudirect})
    return ns, out


def context(cfg: StackConfig) -> Context:
    """The :class:`Context` of ``cfg``."""
    gpudirect, ray_namespaces = _ray_namespaces(cfg)
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
        gpudirect_namespace=gpudirect,
        ray_namespaces=MappingProxyType(ray_namespaces),
    )


def object_metadata(ctx: Context, name: str) -> dict[str, Any]:
    """``metadata`` of the stack's Ray object (RayCluster, RayJob, RayService) ``name`` in its
    namespace (:meth:`Context.namespace_of`: ``kuberay.namespace``, or its ``-gpudirect``
    namespace for a Ray cluster on a ``gpudirect`` pool)."""
    return {
        "name": name,
        "namespace": ctx.namespace_of(name),
        "labels": {"app.kubernetes.io/part-of": PART_OF, "app.kubernetes.io/managed-by": "pulumi"},
    }
