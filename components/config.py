"""Stack configuration: one pydantic model, two loaders.

The configuration of a stack lives in ``Pulumi.<stack>.yaml`` under the project's namespace
(``ray-gke:<key>``), one key per top-level field of :class:`StackConfig`::

    config:
      ray-gke:project: my-gcp-project
      ray-gke:region: us-central1
      ray-gke:node_pools:
        - name: tpu-v6e
          tpu: {generation: v6e, topology: 4x4}
          max_slices: 2

:func:`load_stack_file` reads that file with a plain YAML parser (for ``raygke check`` and tests,
no Pulumi engine needed); :func:`load_pulumi_config` reads the same keys through
``pulumi.Config`` inside a Pulumi program. Both return a validated :class:`StackConfig` or raise
:class:`ConfigError` carrying every problem, one line each, naming the field, the value and what is
allowed. Unknown keys are rejected everywhere (``extra="forbid"``).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from components import catalog

PROJECT_NAMESPACE = "ray-gke"
# Namespaces of the providers and the engine, which a stack file may also set.
OTHER_NAMESPACES = frozenset({"gcp", "kubernetes", "pulumi"})

# GKE names: cluster and node pool names are lowercase letters, digits and hyphens, start with a
# letter, end with a letter or digit, at most 40 characters
# (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools).
_GKE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GKE_NAME_MAX = 40
# Kubernetes object names (RFC 1123 labels) for RayClusters, RayJobs, worker groups.
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# KubeRay derives Service and Pod names from the RayCluster name; keep headroom under 63.
K8S_NAME_MAX = 50
# Google service account ids: 6-30 characters, lowercase letters, digits, hyphens
# (https://cloud.google.com/iam/docs/service-accounts-create#creating).
_SA_ID = re.compile(r"^[a-z]([-a-z0-9]{4,28}[a-z0-9])$")
_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
_QUANTITY = re.compile(r"^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")


class ConfigError(ValueError):
    """An invalid stack configuration; ``problems`` holds one readable line per problem."""

    def __init__(self, problems: list[str], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        head = f"{source}: " if source else ""
        super().__init__(head + f"{len(problems)} problem(s):\n" + "\n".join(problems))


class StackFileError(ConfigError):
    """The file is not a readable Pulumi stack file (not YAML, or no ``config:`` mapping)."""


def _gke_name(value: str, what: str, max_len: int = GKE_NAME_MAX) -> str:
    if len(value) > max_len or not _GKE_NAME.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid GKE name: use 1-{max_len} lowercase letters, digits "
            "and hyphens, starting with a letter and not ending with a hyphen"
        )
    return value


def _k8s_name(value: str, what: str) -> str:
    if len(value) > K8S_NAME_MAX or not _K8S_NAME.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid Kubernetes name: use 1-{K8S_NAME_MAX} lowercase "
            "letters, digits and hyphens, starting and ending with a letter or digit"
        )
    return value


def _min_le_max(model: Any, lo: str, hi: str) -> Any:
    """``model`` unchanged when ``model.<lo> <= model.<hi>``, else ValueError naming both."""
    if getattr(model, lo) > getattr(model, hi):
        raise ValueError(f"{lo} {getattr(model, lo)} > {hi} {getattr(model, hi)}")
    return model


def vcpus_of(machine_type: str) -> int | None:
    """vCPUs of a machine type whose name ends in the count (``n2-standard-8`` -> 8), else None."""
    m = re.search(r"-(\d+)$", machine_type)
    return int(m.group(1)) if m else None


def _quantity(value: str, what: str) -> str:
    if not _QUANTITY.match(str(value)):
        raise ValueError(f"{what} {value!r} is not a Kubernetes quantity (e.g. 4, 500m, 16Gi)")
    return str(value)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


# --------------------------------------------------------------------------------------- network


class AuthorizedNetwork(_Model):
    """A CIDR allowed to reach the GKE control plane."""

    name: str
    cidr: str

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        try:
            ipaddress.ip_network(v)
        except ValueError:
            raise ValueError(
                f"cidr {v!r} is not an IPv4/IPv6 network (e.g. 203.0.113.0/24)"
            ) from None
        return v


class NetworkConfig(_Model):
    """VPC, subnet and its secondary ranges, private nodes, control-plane access."""

    name: str = "ray"
    subnet_cidr: str = "10.10.0.0/20"
    pods_cidr: str = "10.16.0.0/14"
    services_cidr: str = "10.20.0.0/20"
    master_ipv4_cidr: str = "172.16.0.0/28"
    private_nodes: bool = True
    private_endpoint: bool = False
    master_authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _gke_name(v, "network.name", 63)

    @field_validator("subnet_cidr", "pods_cidr", "services_cidr", "master_ipv4_cidr")
    @classmethod
    def _cidrs(cls, v: str, info: Any) -> str:
        try:
            net = ipaddress.IPv4Network(v)
        except ValueError:
            raise ValueError(
                f"{info.field_name} {v!r} is not an IPv4 CIDR (e.g. 10.10.0.0/20)"
            ) from None
        if not net.is_private:
            raise ValueError(f"{info.field_name} {v!r} is not a private (RFC 1918) range")
        if info.field_name == "master_ipv4_cidr" and net.prefixlen != 28:
            raise ValueError(f"master_ipv4_cidr {v!r} must be a /28 (GKE private control plane)")
        return v

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkConfig:
        ranges = {
            "subnet_cidr": self.subnet_cidr,
            "pods_cidr": self.pods_cidr,
            "services_cidr": self.services_cidr,
            "master_ipv4_cidr": self.master_ipv4_cidr,
        }
        nets = {k: ipaddress.IPv4Network(v) for k, v in ranges.items()}
        keys = list(nets)
        problems = [
            f"{a} {ranges[a]} overlaps {b} {ranges[b]}; the ranges must be disjoint"
            for i, a in enumerate(keys)
            for b in keys[i + 1 :]
            if nets[a].overlaps(nets[b])
        ]
        if problems:
            raise ValueError("\n".join(problems))
        return self


# --------------------------------------------------------------------------------------- cluster


class MaintenanceWindow(_Model):
    """Daily maintenance window start (UTC, ``HH:MM``)."""

    start_time: str = "03:00"

    @field_validator("start_time")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError(f"start_time {v!r} is not HH:MM (UTC, 00:00-23:59)")
        return v


class SystemPool(_Model):
    """The small CPU pool for system pods and Ray head pods."""

    machine_type: str = "e2-standard-8"
    min_nodes: int = Field(1, ge=0)
    max_nodes: int = Field(3, ge=1)
    disk_size_gb: int = Field(100, ge=20)
    spot: bool = False

    @model_validator(mode="after")
    def _min_max(self) -> SystemPool:
        return _min_le_max(self, "min_nodes", "max_nodes")


class ClusterConfig(_Model):
    """The GKE Standard cluster."""

    name: str = "ray"
    regional: bool = False
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = "REGULAR"
    min_master_version: str | None = None
    deletion_protection: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    maintenance_window: MaintenanceWindow = Field(default_factory=MaintenanceWindow)
    system_pool: SystemPool = Field(default_factory=SystemPool)
    ray_addon: bool = False
    managed_prometheus: bool = True
    gcs_fuse_csi: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _gke_name(v, "cluster.name")

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            catalog.parse_gke_version(v)
        return v


# ------------------------------------------------------------------------------------ node pools

Provisioning = Literal["on-demand", "spot", "reservation"]


class _PoolBase(_Model):
    name: str
    zones: list[str] | None = None
    provisioning: Provisioning = "on-demand"
    reservation: str | None = None
    allow_unlisted_zone: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    disk_size_gb: int = Field(100, ge=20)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _gke_name(v, "node pool name")

    @model_validator(mode="after")
    def _reservation(self) -> _PoolBase:
        if self.provisioning == "reservation" and not self.reservation:
            raise ValueError("provisioning 'reservation' needs reservation: <reservation name>")
        if self.provisioning != "reservation" and self.reservation:
            raise ValueError(
                f"reservation {self.reservation!r} is set but provisioning is "
                f"{self.provisioning!r}; set provisioning: reservation"
            )
        return self

    @property
    def spot(self) -> bool:
        return self.provisioning == "spot"


class CpuPool(_PoolBase):
    """A CPU node pool (Ray CPU workers)."""

    kind: Literal["cpu"] = "cpu"
    machine_type: str = "n2-standard-8"
    min_nodes: int = Field(0, ge=0)
    max_nodes: int = Field(4, ge=1)

    @model_validator(mode="after")
    def _min_max(self) -> CpuPool:
        return _min_le_max(self, "min_nodes", "max_nodes")

    @property
    def vcpus(self) -> int | None:
        """vCPUs of the machine type when its name ends in the count (``n2-standard-8`` -> 8)."""
        return vcpus_of(self.machine_type)


class TpuSpec(_Model):
    """A TPU slice shape: ``{generation: v6e, topology: 4x4}``."""

    generation: str
    topology: str

    @model_validator(mode="after")
    def _known(self) -> TpuSpec:
        catalog.tpu_slice(self.generation, self.topology)  # raises CatalogError (a ValueError)
        return self

    @property
    def slice(self) -> catalog.TpuSlice:
        return catalog.tpu_slice(self.generation, self.topology)


class TpuPool(_PoolBase):
    """TPU slices of one shape. One GKE node pool per slice for multi-host slices (they scale
    atomically); one pool autoscaling 0..max_slices nodes for single-host slices."""

    kind: Literal["tpu"] = "tpu"
    tpu: TpuSpec
    min_slices: int = Field(0, ge=0)
    max_slices: int = Field(1, ge=1, le=64)

    @model_validator(mode="after")
    def _min_max(self) -> TpuPool:
        return _min_le_max(self, "min_slices", "max_slices")

    @property
    def slice(self) -> catalog.TpuSlice:
        return self.tpu.slice

    @property
    def machine_type(self) -> str:
        return self.slice.machine_type


class GpuSpec(_Model):
    """GPUs per node: ``{type: nvidia-l4, count: 1}``."""

    type: str
    count: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _known(self) -> GpuSpec:
        catalog.gpu_type(self.type).machine_type(self.count)
        return self

    @property
    def gpu(self) -> catalog.GpuType:
        return catalog.gpu_type(self.type)


class GpuPool(_PoolBase):
    """A GPU node pool; machine type derived from ``gpu`` unless given."""

    kind: Literal["gpu"] = "gpu"
    gpu: GpuSpec
    machine_type_override: str | None = Field(None, alias="machine_type")
    driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "LATEST"
    min_nodes: int = Field(0, ge=0)
    max_nodes: int = Field(1, ge=1)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    @model_validator(mode="after")
    def _min_max(self) -> GpuPool:
        return _min_le_max(self, "min_nodes", "max_nodes")

    @property
    def machine_type(self) -> str:
        return self.machine_type_override or self.gpu.gpu.machine_type(self.gpu.count)


def _pool_kind(v: Any) -> str:
    if isinstance(v, Mapping):
        if "tpu" in v:
            return "tpu"
        if "gpu" in v:
            return "gpu"
        return str(v.get("kind", "cpu"))
    return getattr(v, "kind", "cpu")


NodePool = Annotated[
    Annotated[CpuPool, Tag("cpu")]
    | Annotated[TpuPool, Tag("tpu")]
    | Annotated[GpuPool, Tag("gpu")],
    Discriminator(_pool_kind),
]


class NapConfig(_Model):
    """Node Auto Provisioning (``cluster_autoscaling``)."""

    enabled: bool = True
    autoscaling_profile: Literal["BALANCED", "OPTIMIZE_UTILIZATION"] = "OPTIMIZE_UTILIZATION"
    resource_limits: dict[str, int] = Field(default_factory=lambda: {"cpu": 256, "memory": 1024})

    @field_validator("resource_limits")
    @classmethod
    def _types(cls, v: dict[str, int]) -> dict[str, int]:
        for key, value in v.items():
            if key not in catalog.NAP_RESOURCE_TYPES:
                raise ValueError(
                    f"resource_limits key {key!r} is not a NAP resource type; valid: "
                    f"{', '.join(catalog.NAP_RESOURCE_TYPES)}"
                )
            if value < 0:
                raise ValueError(f"resource_limits[{key}] {value} must be >= 0")
        return v


# --------------------------------------------------------------------------------- ray / kuberay


class KubeRayConfig(_Model):
    """How KubeRay is installed: the ``kuberay-operator`` Helm chart or the GKE Ray add-on.

    Multi-host TPU slices need the TPU initialization webhook, which injects each pod's
    ``TPU_WORKER_ID`` / ``TPU_WORKER_HOSTNAMES``
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html). The GKE Ray add-on
    installs it; with ``mode: helm`` set ``tpu_webhook: true`` once you have installed it yourself
    (https://github.com/GoogleCloudPlatform/ai-on-gke/tree/main/ray-on-gke/tpu/kuberay-tpu-webhook).
    """

    mode: Literal["helm", "gke-addon"] = "helm"
    chart_version: str = "1.7.0"
    namespace: str = "ray"
    tpu_webhook: bool = False

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _k8s_name(v, "kuberay.namespace")


class RayImages(_Model):
    """Ray container images per accelerator kind."""

    cpu: str = "rayproject/ray:2.60.0-py311"
    gpu: str = "rayproject/ray:2.60.0-py311-gpu"
    tpu: str = "rayproject/ray:2.60.0-py311"


class RayConfig(_Model):
    """Ray version and images; every image's tag must carry the same Ray version."""

    version: str = "2.60.0"
    images: RayImages = Field(default_factory=RayImages)

    @model_validator(mode="after")
    def _image_versions(self) -> RayConfig:
        problems = []
        for kind in ("cpu", "gpu", "tpu"):
            image = getattr(self.images, kind)
            tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
            m = re.match(r"(\d+\.\d+\.\d+)", tag)
            if not m:
                problems.append(
                    f"images.{kind} {image!r} has no Ray version tag; use e.g. "
                    f"rayproject/ray:{self.version}-py311"
                )
            elif m.group(1) != self.version:
                problems.append(
                    f"images.{kind} {image!r} is Ray {m.group(1)} but ray.version is {self.version}"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self


class HeadConfig(_Model):
    """The Ray head pod; it runs on the system pool and is never exposed outside the cluster."""

    cpu: str = "2"
    memory: str = "8Gi"

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str:
        return _quantity(str(v), f"head.{info.field_name}")


class WorkerGroupConfig(_Model):
    """A RayCluster worker group bound to one declared node pool.

    For TPU pools replicas count slices (each replica is ``numOfHosts`` pods); for GPU and CPU pools
    replicas count pods (one per node).
    """

    name: str
    node_pool: str
    min_replicas: int = Field(0, ge=0)
    max_replicas: int | None = Field(None, ge=1)
    cpu: str | None = None
    memory: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "worker group name")

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str | None:
        return None if v is None else _quantity(str(v), f"worker group {info.field_name}")


class RayClusterConfig(_Model):
    """A long-lived RayCluster."""

    name: str
    service_account: str = "ray-train"
    head: HeadConfig = Field(default_factory=HeadConfig)
    worker_groups: list[WorkerGroupConfig] = Field(default_factory=list)
    autoscaling: bool = True
    idle_timeout_seconds: int = Field(600, ge=0)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "ray cluster name")


class JobConfig(_Model):
    """A RayJob running one registered workload."""

    name: str
    workload: str
    args: dict[str, Any] = Field(default_factory=dict)
    cluster: str | None = None
    worker_group: str | None = None
    node_pool: str | None = None
    service_account: str = "ray-train"
    backoff_limit: int = Field(0, ge=0)
    max_failures: int = Field(2, ge=0)
    active_deadline_seconds: int | None = Field(None, ge=60)
    ttl_seconds_after_finished: int = Field(3600, ge=0)
    shutdown_after_job_finishes: bool = True
    suspend: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "job name")

    @model_validator(mode="after")
    def _target(self) -> JobConfig:
        if self.cluster and self.node_pool:
            raise ValueError(
                "set either cluster (submit to a long-lived RayCluster) or node_pool (the job "
                "brings its own RayCluster), not both"
            )
        if self.worker_group and not self.cluster:
            raise ValueError(
                f"worker_group {self.worker_group!r} needs cluster: <ray cluster name>"
            )
        return self


# --------------------------------------------------------------------------- storage & identity


class BucketConfig(_Model):
    """One GCS bucket (uniform access, public access prevention, CMEK are always on)."""

    versioning: bool = False
    noncurrent_version_days: int | None = Field(None, ge=1)
    delete_after_days: int | None = Field(None, ge=1)
    soft_delete_days: int = Field(7, ge=0, le=90)


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


class LocalConfig(_Model):
    """The local environment (``raygke local``): Ray processes on this machine, buckets as folders."""

    workers: int = Field(1, ge=0, le=16)
    cpus_per_node: int = Field(1, ge=1)
    gcs_port: int = Field(6380, ge=1024, le=65535)
    dashboard_port: int = Field(8266, ge=1024, le=65535)
    root: str = ".raygke/local"


# ----------------------------------------------------------------------------------------- stack


class StackConfig(_Model):
    """Everything one stack (``dev``, ``prod``, ...) declares. See the README for a tour."""

    project: str
    region: str
    zones: list[str] = Field(min_length=1)
    labels: dict[str, str] = Field(default_factory=dict)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    node_pools: list[NodePool] = Field(default_factory=list)
    nap: NapConfig = Field(default_factory=NapConfig)
    kuberay: KubeRayConfig = Field(default_factory=KubeRayConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    ray_clusters: list[RayClusterConfig] = Field(default_factory=list)
    jobs: list[JobConfig] = Field(default_factory=list)
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    workload_identities: list[WorkloadIdentityConfig] = Field(default_factory=_default_identities)
    secrets: list[SecretConfig] = Field(default_factory=list)
    local: LocalConfig = Field(default_factory=LocalConfig)

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
        if not _REGION.match(v):
            raise ValueError(f"region {v!r} is not a GCP region (e.g. us-central1)")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", key) or not re.fullmatch(
                r"[a-z0-9_-]{0,63}", str(value)
            ):
                raise ValueError(
                    f"label {key}={value!r}: GCP labels are lowercase letters, digits, '_' and "
                    "'-', keys start with a letter, at most 63 characters"
                )
        return v

    @model_validator(mode="after")
    def _cross_checks(self) -> StackConfig:
        problems = list(_cross_problems(self))
        if problems:
            raise ValueError("\n".join(problems))
        return self

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


def _duplicates(names: Iterable[str]) -> list[str]:
    return sorted(n for n, c in Counter(names).items() if c > 1)


def _cross_problems(cfg: StackConfig) -> Iterable[str]:
    """Rules that span several fields. Yields one readable line per problem."""
    for z in cfg.zones:
        if not _ZONE.match(z) or not z.startswith(cfg.region + "-"):
            yield f"zones: {z!r} is not a zone of region {cfg.region} (e.g. {cfg.region}-a)"

    for what, names in (
        ("node_pools", [p.name for p in cfg.node_pools] + ["system"]),
        ("ray_clusters", [c.name for c in cfg.ray_clusters]),
        ("jobs", [j.name for j in cfg.jobs]),
        ("workload_identities", [w.name for w in cfg.workload_identities]),
        ("secrets", [s.name for s in cfg.secrets]),
    ):
        for dup in _duplicates(names):
            note = " ('system' is the built-in system pool)" if dup == "system" else ""
            yield f"{what}: name {dup!r} is used more than once{note}"

    # Zones offered per accelerator.
    for pool in cfg.node_pools:
        zones = cfg.pool_zones(pool)
        for z in zones:
            if pool.zones and not z.startswith(cfg.region + "-"):
                yield f"node_pools[{pool.name}].zones: {z!r} is not in region {cfg.region}"
        if isinstance(pool, TpuPool | GpuPool) and not pool.allow_unlisted_zone:
            acc = pool.slice.generation if isinstance(pool, TpuPool) else pool.gpu.gpu
            label = f"TPU {acc.name}" if isinstance(pool, TpuPool) else acc.name
            for z in zones:
                if z not in acc.zones:
                    yield (
                        f"node_pools[{pool.name}]: {label} is not offered in zone {z} per the "
                        f"catalog; offered in: {', '.join(acc.zones)} (set allow_unlisted_zone: "
                        "true if Google offers it there now)"
                    )
        if isinstance(pool, TpuPool) and cfg.cluster.min_master_version:
            need = pool.slice.generation.min_gke_version
            have = cfg.cluster.min_master_version
            if catalog.parse_gke_version(have) < catalog.parse_gke_version(need):
                yield (
                    f"cluster.min_master_version {have} is older than {need}, the oldest GKE "
                    f"version with TPU {pool.slice.generation.name} node pools "
                    f"(node_pools[{pool.name}])"
                )

    # NAP limits must cover what the declared pools can scale to.
    if cfg.nap.enabled:
        needed = nap_needs(cfg)
        for key, have in cfg.nap.resource_limits.items():
            if key in needed and have < needed[key]:
                yield (
                    f"nap.resource_limits[{key}] {have} is smaller than the declared node pools "
                    f"can scale to ({needed[key]}); raise it to at least {needed[key]}"
                )

    # References.
    pool_names = {p.name: p for p in cfg.node_pools}
    identity_names = {w.name for w in cfg.workload_identities}
    for rc in cfg.ray_clusters:
        if rc.service_account not in identity_names:
            yield (
                f"ray_clusters[{rc.name}].service_account {rc.service_account!r} is not a declared "
                f"workload identity; declared: {', '.join(sorted(identity_names)) or 'none'}"
            )
        for dup in _duplicates(g.name for g in rc.worker_groups):
            yield f"ray_clusters[{rc.name}].worker_groups: name {dup!r} is used more than once"
        for g in rc.worker_groups:
            where = f"ray_clusters[{rc.name}].worker_groups[{g.name}]"
            pool = pool_names.get(g.node_pool)
            if pool is None:
                yield (
                    f"{where}.node_pool {g.node_pool!r} is not a declared node pool; declared: "
                    f"{', '.join(pool_names) or 'none'}"
                )
                continue
            limit = pool_capacity(pool)
            mx = group_max_replicas(pool, g)
            if g.min_replicas > mx:
                yield f"{where}: min_replicas {g.min_replicas} > max_replicas {mx}"
            if mx > limit:
                unit = "slices" if isinstance(pool, TpuPool) else "nodes"
                yield (
                    f"{where}.max_replicas {mx} exceeds node pool {pool.name!r} capacity of "
                    f"{limit} {unit}"
                )
    if cfg.kuberay.mode == "helm" and not cfg.kuberay.tpu_webhook:
        users = [
            (f"ray_clusters[{rc.name}].worker_groups[{g.name}]", g.node_pool)
            for rc in cfg.ray_clusters
            for g in rc.worker_groups
        ] + [(f"jobs[{j.name}].node_pool", j.node_pool) for j in cfg.jobs if j.node_pool]
        for where, pool_name in users:
            pool = pool_names.get(pool_name or "")
            if isinstance(pool, TpuPool) and pool.slice.multi_host:
                yield (
                    f"{where}: the multi-host TPU slice {pool.tpu.generation} "
                    f"{pool.tpu.topology} needs the TPU initialization webhook, which "
                    "kuberay.mode 'helm' does not install; set kuberay.mode: gke-addon, or "
                    "kuberay.tpu_webhook: true once you have installed it"
                )
    cluster_names = {c.name: c for c in cfg.ray_clusters}
    for job in cfg.jobs:
        where = f"jobs[{job.name}]"
        if job.cluster and job.cluster not in cluster_names:
            yield (
                f"{where}.cluster {job.cluster!r} is not a declared ray cluster; declared: "
                f"{', '.join(cluster_names) or 'none'}"
            )
        if job.cluster in cluster_names and job.worker_group:
            groups = [g.name for g in cluster_names[job.cluster].worker_groups]
            if job.worker_group not in groups:
                yield (
                    f"{where}.worker_group {job.worker_group!r} is not a worker group of "
                    f"{job.cluster!r}; its groups: {', '.join(groups) or 'none'}"
                )
        if job.node_pool and job.node_pool not in pool_names:
            yield (
                f"{where}.node_pool {job.node_pool!r} is not a declared node pool; declared: "
                f"{', '.join(pool_names) or 'none'}"
            )
        if job.service_account not in identity_names:
            yield (
                f"{where}.service_account {job.service_account!r} is not a declared workload "
                f"identity; declared: {', '.join(sorted(identity_names))}"
            )
        problem = _workload_problem(job.workload)
        if problem:
            yield f"{where}.workload {problem}"
            continue
        workload = _workload(job.workload)
        for p in workload.arg_problems(job.args):
            yield f"{where}.args: {p}"
        # The job's processes run as the RayCluster's service account when it is submitted to a
        # long-lived cluster, else as its own; that account must be allowed to write what the
        # workload writes (bucket-level roles, components/iam.py).
        runs_as = (
            cluster_names[job.cluster].service_account
            if job.cluster in cluster_names
            else job.service_account
        )
        identity = next((w for w in cfg.workload_identities if w.name == runs_as), None)
        for purpose in workload.writes:
            if identity is not None and identity.buckets.get(purpose) != "write":
                yield (
                    f"{where}: workload {job.workload} writes to the {purpose} bucket but runs as "
                    f"{runs_as!r}, which has {identity.buckets.get(purpose) or 'no'} access there; "
                    f"set workload_identities[{runs_as}].buckets.{purpose}: write"
                )
    for secret in cfg.secrets:
        for r in secret.readers:
            if r not in identity_names:
                yield (
                    f"secrets[{secret.name}].readers: {r!r} is not a declared workload identity; "
                    f"declared: {', '.join(sorted(identity_names))}"
                )


def _workload(name: str) -> Any:
    from workloads.registry import get_workload

    return get_workload(name)


def _workload_problem(name: str) -> str | None:
    # workloads.registry is standard-library only (design: components may refer to workloads by
    # module path, never import ray/torch/jax).
    from workloads.registry import WORKLOADS

    if name not in WORKLOADS:
        return f"{name!r} is not a registered workload; registered: {', '.join(WORKLOADS)}"
    return None


def pool_capacity(pool: CpuPool | TpuPool | GpuPool) -> int:
    """Most replicas a worker group on ``pool`` can have: slices for TPU pools, nodes otherwise."""
    return pool.max_slices if isinstance(pool, TpuPool) else pool.max_nodes


def group_max_replicas(pool: CpuPool | TpuPool | GpuPool, group: WorkerGroupConfig) -> int:
    """``maxReplicas`` of a worker group: its ``max_replicas``, else the pool's capacity (slices
    for TPU pools, nodes otherwise)."""
    return group.max_replicas if group.max_replicas is not None else pool_capacity(pool)


def nap_needs(cfg: StackConfig) -> dict[str, int]:
    """Resources the declared pools can scale to, keyed by NAP resource type.

    TPU and GPU types count chips / GPUs; ``cpu`` counts vCPUs of the pools whose machine type
    names its vCPU count (``n2-standard-8``), including the system pool.
    """
    needs: Counter[str] = Counter()
    for pool in cfg.node_pools:
        if isinstance(pool, TpuPool):
            s = pool.slice
            needs[s.generation.gke_accelerator] += s.chips * pool.max_slices
            needs["cpu"] += s.generation.host_vcpus[s.chips_per_host] * s.hosts * pool.max_slices
        elif isinstance(pool, GpuPool):
            g = pool.gpu
            needs[g.type] += g.count * pool.max_nodes
            needs["cpu"] += g.gpu.host_vcpus.get(g.count, 0) * pool.max_nodes
        else:
            needs["cpu"] += (pool.vcpus or 0) * pool.max_nodes
    sp = cfg.cluster.system_pool
    needs["cpu"] += (vcpus_of(sp.machine_type) or 0) * sp.max_nodes
    return dict(needs)


# --------------------------------------------------------------------------------------- loaders


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """``('node_pools', 1, 'tpu', 'tpu')`` -> ``node_pools[tpu-v6e].tpu`` (item names where known)."""
    parts: list[str] = []
    node: Any = data
    skip_tag = False
    for p in loc:
        if skip_tag:
            skip_tag = False
            if p in _TAGS:
                continue
        if isinstance(p, int):
            item = node[p] if isinstance(node, list) and p < len(node) else None
            name = item.get("name") if isinstance(item, Mapping) else None
            parts[-1 if parts else 0 :] = [f"{parts[-1] if parts else ''}[{name or p}]"]
            node = item
            skip_tag = True
        else:
            parts.append(str(p) if re.fullmatch(r"[\w-]+", str(p)) else repr(p))
            node = node.get(p) if isinstance(node, Mapping) else None
    return ".".join(parts)


def _type_hint(kind: str, value: Any) -> str:
    """What to write instead, for the YAML mistakes strict validation rejects."""
    if kind == "string_type" and isinstance(value, int | float | bool | date):
        what = {bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a date")
        return f" (YAML read {what}; put the value in quotes as you wrote it)"
    if kind in ("int_type", "float_type") and isinstance(value, str):
        return " (write the number without quotes)"
    if kind == "bool_type":
        return " (write true or false, without quotes)"
    return ""


_BOUND_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "too_short",
    "too_long",
}


def format_validation_error(err: ValidationError, data: Any = None) -> list[str]:
    """One line per problem: ``<field path>: <message>`` (multi-line messages become several)."""
    lines: list[str] = []
    for e in err.errors():
        loc = _loc(tuple(e["loc"]), data)
        msg = e["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix) :]
        if e["type"] == "extra_forbidden":
            msg = f"unknown key {str(e['loc'][-1])!r} (check its spelling; extra keys are rejected)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] == "union_tag_invalid":
            msg = (
                f"kind {e.get('ctx', {}).get('tag')!r} is not a node pool kind: leave kind out (or "
                "write cpu) for a CPU pool, and give a tpu: or gpu: block for an accelerator pool"
            )
        elif e["type"] in _BOUND_ERRORS:
            msg = f"{msg}; got {e.get('input')!r}"
        elif e["type"] in ("literal_error", "enum") or e["type"].endswith(("_type", "_parsing")):
            msg = f"{msg}; got {e.get('input')!r}{_type_hint(e['type'], e.get('input'))}"
        for part in msg.split("\n"):
            part = part.replace("\r", " ")
            lines.append(f"{loc}: {part}" if loc else part)
    return lines


_TAGS = {"cpu", "tpu", "gpu"}


def validate(data: Mapping[str, Any], source: str | None = None) -> StackConfig:
    """Validate a mapping of top-level keys (without the ``ray-gke:`` prefix).

    Raises:
        ConfigError: with every problem found, one line each.
    """
    if not isinstance(data, Mapping):
        raise ConfigError([f"expected a mapping of config keys, got {type(data).__name__}"], source)
    try:
        return StackConfig.model_validate(dict(data))
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, data), source) from None
    except catalog.CatalogError as e:  # pragma: no cover - validators wrap these already
        raise ConfigError([str(e)], source) from None


def read_stack_yaml(text: str, source: str | None = None) -> Any:
    """Parse a stack file the way Pulumi does: YAML 1.2 (``yes``/``on`` are strings, ``23:30``
    is not a number, ``010`` is ten), merge keys (``<<: *anchor``) allowed, and a key given twice
    in one mapping refused. Uses ``ruamel.yaml`` (YAML 1.2 core schema; PyYAML reads YAML 1.1).

    Raises:
        ConfigError: a key is given twice (both places named).
        StackFileError: the text is not YAML.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except DuplicateKeyError as e:
        at, first = e.problem_mark, e.context_mark
        where = f"line {at.line + 1} column {at.column + 1}" if at else "?"
        was = f" (in the mapping that starts at line {first.line + 1})" if first else ""
        problem = (e.problem or "duplicate key").split(" with value")[0].replace('"', "'")
        problem = problem.removeprefix("found ")
        raise ConfigError([f"{problem} at {where}{was}; keep one"], source) from None
    except MarkedYAMLError as e:
        at = f" at line {e.problem_mark.line + 1}" if e.problem_mark else ""
        problem = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise StackFileError([f"not valid YAML{at}: {problem}"], source) from None
    except YAMLError as e:
        raise StackFileError([f"not valid YAML: {e}"], source) from None


def stack_data_from_yaml(text: str, source: str | None = None) -> dict[str, Any]:
    """The project's keys from a ``Pulumi.<stack>.yaml`` text, prefix stripped.

    Keys of other namespaces (``gcp:project``) are ignored, except that ``gcp:project`` and
    ``gcp:region`` fill ``project`` and ``region`` when the project's own keys are absent.

    Raises:
        StackFileError: not YAML, or not a ``config:`` mapping.
        ConfigError: a key given twice (see :func:`read_stack_yaml`).
    """
    doc = read_stack_yaml(text, source)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("config"), Mapping):
        raise StackFileError(["expected a top-level 'config:' mapping (Pulumi stack file)"], source)
    data: dict[str, Any] = {}
    fallbacks: dict[str, Any] = {}
    prefix = PROJECT_NAMESPACE + ":"
    for key, value in doc["config"].items():
        key = str(key)
        if key.startswith(prefix):
            data[key[len(prefix) :]] = value
        elif key in ("gcp:project", "gcp:region"):
            fallbacks[key.split(":", 1)[1]] = value
    problems = [
        f"{key}: unknown config namespace {key.split(':', 1)[0]!r}; this project's keys are "
        f"{prefix}<key> (other namespaces read: {', '.join(sorted(OTHER_NAMESPACES))})"
        for key in map(str, doc["config"])
        if ":" not in key or key.split(":", 1)[0] not in {PROJECT_NAMESPACE, *OTHER_NAMESPACES}
    ]
    for k, v in fallbacks.items():
        if k in data and data[k] != v:
            problems.append(
                f"gcp:{k} {v!r} differs from {prefix}{k} {data[k]!r}; the provider would "
                "create resources elsewhere than the stack says"
            )
        data.setdefault(k, v)
    if problems:
        raise ConfigError(problems, source)
    return data


def load_stack_file(path: str | Path) -> StackConfig:
    """Read and validate ``Pulumi.<stack>.yaml`` (plain YAML read, no Pulumi engine).

    Raises:
        ConfigError: the file is invalid; ``problems`` lists every problem.
        OSError: the file cannot be read.
    """
    path = Path(path)
    text = path.read_text()
    return validate(stack_data_from_yaml(text, str(path)), str(path))


def load_pulumi_config() -> StackConfig:
    """Read and validate the current stack's config through ``pulumi.Config`` (inside a program).

    Raises:
        ConfigError: the stack config is invalid.
    """
    import pulumi

    cfg = pulumi.Config(PROJECT_NAMESPACE)
    data: dict[str, Any] = {}
    for name in StackConfig.model_fields:
        raw = cfg.get(name)
        if raw is None:
            continue
        try:
            data[name] = json.loads(raw)
        except json.JSONDecodeError:
            data[name] = raw
    gcp = pulumi.Config("gcp")
    for name in ("project", "region"):
        if name not in data and gcp.get(name):
            data[name] = gcp.get(name)
    return validate(data, f"stack {pulumi.get_stack()}")
