"""The whole stack: :class:`StackConfig`, one field per top-level key of ``Pulumi.<stack>.yaml``.

Validating the model checks each field (pydantic); the cross-field rules
(:mod:`components.stack.rules`) run once over the validated model, from
:func:`components.stack.loader.validate`, which every stack file goes through. The model runs no
rule itself (so this module imports neither the rules nor the resolver)."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    field_validator,
)

from components import catalog
from components.config.capacity import CapacityConfig
from components.config.cluster import ClusterConfig, NapConfig
from components.config.computeclass import ComputeClassConfig
from components.config.gcsft import GcsFaultToleranceConfig
from components.config.kuberay import KubeRayConfig
from components.config.network import NetworkConfig
from components.config.nodepools import CpuPool, GpuPool, NodePool, TpuPool
from components.config.raycrs import JobConfig, RayClusterConfig, RayConfig
from components.config.serve import ServiceConfig
from components.config.storage import (
    BucketsConfig,
    KmsConfig,
    SecretConfig,
    WorkloadIdentityConfig,
    default_identities,
)
from components.kernel import release
from components.kernel.base import REGION_NAME, StrictModel, gcp_labels, unique


class LocalConfig(StrictModel):
    """The local environment (``raygke local``): Ray processes on this machine, buckets as folders."""

    workers: int = Field(
        1,
        ge=0,
        le=16,
        description="Worker nodes started besides the head (0-16); `--workers` overrides it.",
    )
    cpus_per_node: int = Field(
        1,
        ge=1,
        le=1024,
        description="CPUs each local Ray node advertises (1-1024: a local machine).",
    )
    gcs_port: int | None = Field(
        None,
        ge=1024,
        le=65535,
        description="Port of the local head's GCS; unset: a free port `raygke local up` picks "
        "(recorded in the cluster's state.json), so two checkouts' clusters run side by side.",
    )
    dashboard_port: int | None = Field(
        None,
        ge=1024,
        le=65535,
        description="Port of the local Ray dashboard and job API; unset: a free port `raygke "
        "local up` picks (recorded in the cluster's state.json).",
    )
    root: str = Field(
        ".raygke/local",
        description="Folder of the local state, logs and bucket folders (`<root>/<stack>/`); "
        "`$RAYGKE_LOCAL_ROOT` overrides it.",
    )


# ----------------------------------------------------------------------------------------- stack


class StackConfig(StrictModel):
    """Everything one stack (``dev``, ``prod``, ...) declares. See the README and docs/ for a tour."""

    defaults: str | None = Field(
        None,
        description="The release whose defaults the stack file is written for, an ISO date "
        f"(`{release.RELEASE}` is this release's; `raygke new` and `raygke migrate` write it). A "
        "default that changes what gets created, and a new refusal, apply only to stacks at or "
        "after the release that introduced them; unset: the oldest release "
        "(docs/upgrading.md).",
    )
    project: str = Field(
        description="GCP project id every resource is created in (6-30 lowercase letters, digits "
        "and hyphens); `gcp:project` fills it when absent and must not differ.",
    )
    region: str = Field(
        description="GCP region, e.g. `us-central1` (https://cloud.google.com/compute/docs/"
        "regions-zones); `gcp:region` fills it when absent and must not differ.",
    )
    zones: list[str] = Field(
        min_length=1,
        description="Zones of the region the nodes run in (at least one); the first is the "
        "location of a zonal cluster. Node pools may narrow them with their own `zones`.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="GCP labels on every labelled resource (cluster, nodes, buckets, KMS keys, "
        "secrets) (https://cloud.google.com/resource-manager/docs/creating-managing-labels).",
    )
    network: NetworkConfig = Field(
        default_factory=NetworkConfig,
        description="VPC, subnet ranges, private nodes, control-plane access.",
    )
    cluster: ClusterConfig = Field(
        default_factory=ClusterConfig, description="The GKE Standard cluster and its system pool."
    )
    node_pools: list[NodePool] = Field(
        default_factory=list,
        description="Node pools for Ray workers: CPU pools, TPU pools (a `tpu:` block) and GPU "
        "pools (a `gpu:` block); see the sections per kind.",
    )
    nap: NapConfig = Field(default_factory=NapConfig, description="Node auto-provisioning.")
    compute_classes: list[ComputeClassConfig] = Field(
        default_factory=list,
        description="GKE custom ComputeClasses, one per TPU/GPU pool shape: the pool's nodes "
        "first, then an ordered fallback (specific reservation, on-demand, flex-start, spot); "
        "worker groups on the pool select the class "
        "(https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass).",
    )
    kuberay: KubeRayConfig = Field(
        default_factory=KubeRayConfig,
        description="How KubeRay is installed (Helm chart or GKE add-on) and its namespace.",
    )
    ray: RayConfig = Field(default_factory=RayConfig, description="Ray version and images.")
    ray_clusters: list[RayClusterConfig] = Field(
        default_factory=list, description="Long-lived RayClusters."
    )
    jobs: list[JobConfig] = Field(
        default_factory=list,
        description="RayJobs, each running one registered workload on a RayCluster or on its "
        "own cluster.",
    )
    services: list[ServiceConfig] = Field(
        default_factory=list,
        description="Ray Serve applications, each a KubeRay RayService with its own RayCluster "
        "(e.g. the LM from a training job's checkpoints).",
    )
    gcs_fault_tolerance: GcsFaultToleranceConfig = Field(
        default_factory=GcsFaultToleranceConfig,
        description="GCS fault tolerance of the RayServices: KubeRay's "
        "`gcsFaultToleranceOptions` with a Memorystore for Redis the stack creates "
        "(docs/deploying.md, GCS fault tolerance).",
    )
    capacity: CapacityConfig = Field(
        default_factory=CapacityConfig,
        description="Kueue queues, quotas per node-pool flavor, cohorts and priorities "
        "(docs/capacity.md); empty: Kueue is not installed.",
    )
    buckets: BucketsConfig = Field(
        default_factory=BucketsConfig,
        description="The datasets, checkpoints and artifacts buckets (CMEK, uniform access).",
    )
    kms: KmsConfig = Field(
        default_factory=KmsConfig,
        description="KMS key ring naming (GKE secrets and bucket CMEK keys).",
    )
    workload_identities: list[WorkloadIdentityConfig] = Field(
        default_factory=default_identities,
        description="Workload classes: a Google service account bound to a Kubernetes service "
        "account with bucket roles. Default: `ray-train` (datasets read, checkpoints write, "
        "artifacts read) and `ray-serve` (checkpoints and artifacts read).",
    )
    secrets: list[SecretConfig] = Field(
        default_factory=list, description="Secret Manager secrets (names and readers only)."
    )
    local: LocalConfig = Field(
        default_factory=LocalConfig,
        description="The local environment of `raygke local`; nothing in the cloud render changes.",
    )

    # Set by the loader (components.stack.loader.validate), which reads a file's epoch
    _notices: tuple[Any, ...] = PrivateAttr(default=())
    _held: tuple[Any, ...] = PrivateAttr(default=())
    _epoch: release.Epoch | None = PrivateAttr(default=None)

    @field_validator("defaults", mode="before")
    @classmethod
    def _defaults(cls, v: Any) -> Any:
        """An ISO date (YAML may read an unquoted one as a date) up to this release's
        (:func:`components.kernel.release.epoch_problem`)."""
        if isinstance(v, date):
            v = v.isoformat()
        if isinstance(v, str) and (problem := release.epoch_problem(v)):
            raise ValueError(problem)
        return v

    @property
    def held_defaults(self) -> tuple[Any, ...]:
        """The newer defaults this stack does not get, its epoch being older than theirs
        (:class:`components.config.epochs.Held`)."""
        return self._held

    @property
    def epoch(self) -> release.Epoch:
        """The release whose defaults the stack is read with
        (:func:`components.config.epochs.read_epoch`; a model not read from a stack file:
        its ``defaults``, else this release's)."""
        return self._epoch or release.Epoch(self.defaults or release.RELEASE, "")

    @property
    def notices(self) -> tuple[Any, ...]:
        """Warnings found while the stack was loaded (:func:`components.stack.loader.validate`):
        deprecated spellings, refusals newer than the stack's epoch (Problems, severity
        ``warning``)."""
        return self._notices

    @field_validator("project")
    @classmethod
    def _project(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", v):
            raise ValueError(
                f"project {v!r} is not a GCP project id: 6-30 lowercase letters, digits and hyphens"
            )
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not REGION_NAME.match(v):
            raise ValueError(f"region {v!r} is not a GCP region (e.g. us-central1)")
        problem = catalog.region_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("zones")
    @classmethod
    def _zones(cls, v: list[str]) -> list[str]:
        """Each zone once (GKE node locations are a set; a repeat would count a zone twice)."""
        return unique(v, "zones")

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return gcp_labels(v)

    # ---- lookups used by the builders
    def pool(self, name: str) -> CpuPool | TpuPool | GpuPool:
        """The node pool called ``name`` (KeyError when absent)."""
        for p in self.node_pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def ray_cluster(self, name: str) -> RayClusterConfig:
        """The RayCluster called ``name`` (KeyError when absent)."""
        for c in self.ray_clusters:
            if c.name == name:
                return c
        raise KeyError(name)

    def pool_zones(self, pool: CpuPool | TpuPool | GpuPool) -> list[str]:
        """The zones a pool's nodes go to: its own, else the stack's."""
        return list(pool.zones or self.zones)

    @property
    def location(self) -> str:
        """Cluster location: the region for a regional control plane, else the first zone."""
        return self.region if self.cluster.regional else self.zones[0]
