"""The ``cluster`` and ``nap`` blocks: the GKE Standard cluster, its system pool, NAP."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import ClassVar, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components import catalog
from components.config.nodepools import MaxNodes, MinNodes, NodeBounds, NodeSettings
from components.kernel.base import (
    INT64_MAX,
    StrictModel,
    cpu_machine_type,
    gcp_labels,
    gke_name,
    unique,
)

# --------------------------------------------------------------------------------------- cluster

# Maintenance exclusions (components/cluster/maintenance.py has the sources): a cluster holds at
# most 20 (pulumi-gcp 10.2.0 ClusterMaintenancePolicyArgs.maintenance_exclusions); a NO_UPGRADES
# one lasts at most 30 days (GKE's maintenance windows and exclusions page, "Scope of upgrades").
MAINTENANCE_DOC = (
    "https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions"
)
MAX_EXCLUSIONS = 20
NO_UPGRADES_MAX_SECONDS = 30 * 24 * 3600


def parse_time(value: str) -> datetime:
    """An RFC 3339 time in UTC (``2026-12-01T00:00:00Z``) as an aware ``datetime``.

    Raises:
        ValueError: not RFC 3339 with a ``Z`` or ``+00:00`` offset (GKE returns exclusion times
            in UTC, and pulumi-gcp documents "Zulu" format: any other offset would diff forever).
    """
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{value!r} is not an RFC 3339 time such as 2026-12-01T00:00:00Z"
        ) from None
    if t.tzinfo is None or t.utcoffset() != timedelta(0):
        raise ValueError(f"{value!r} must be in UTC, written with Z (2026-12-01T00:00:00Z)")
    return t.astimezone(UTC)


class MaintenanceWindow(StrictModel):
    """Daily maintenance window start (UTC, ``HH:MM``)."""

    start_time: str = Field(
        "03:00",
        description="Start of the daily maintenance window, `HH:MM` in UTC "
        "(`maintenancePolicy.dailyMaintenanceWindow`, https://cloud.google.com/"
        "kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions).",
    )

    @field_validator("start_time")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError(f"start_time {v!r} is not HH:MM (UTC, 00:00-23:59)")
        return v


class MaintenanceExclusion(StrictModel):
    """One maintenance exclusion: a non-repeating time in which GKE starts no automatic upgrade
    of the excluded scope (:mod:`components.cluster.maintenance`)."""

    name: str = Field(
        description="Name of the exclusion (`exclusionName`), unique in the cluster; shown by "
        "`gcloud container clusters describe`.",
    )
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = Field(
        "NO_MINOR_OR_NODE_UPGRADES",
        description="What it excludes (`exclusionOptions.scope`): `NO_MINOR_OR_NODE_UPGRADES` "
        "(no minor and no node pool upgrades, control-plane patches only: what keeps a "
        "training run's nodes), `NO_MINOR_UPGRADES` (node patch upgrades still drain nodes) or "
        "`NO_UPGRADES` (nothing, at most 30 days) (https://cloud.google.com/kubernetes-engine/"
        "docs/concepts/maintenance-windows-and-exclusions).",
    )
    start_time: str = Field(
        description="Start, RFC 3339 in UTC (`2026-12-01T00:00:00Z`).",
    )
    end_time: str | None = Field(
        None,
        description="End, RFC 3339 in UTC, after `start_time`; exactly one of `end_time` and "
        "`until_end_of_support`.",
    )
    until_end_of_support: bool = Field(
        False,
        description="End when the cluster's minor version leaves standard support "
        "(`exclusionOptions.endTimeBehavior: UNTIL_END_OF_SUPPORT`); only with the minor "
        "scopes.",
    )

    @field_validator("name")
    @classmethod
    def _exclusion_name(cls, v: str) -> str:
        return gke_name(v, "maintenance exclusion name")

    @field_validator("start_time", "end_time")
    @classmethod
    def _rfc3339(cls, v: str | None) -> str | None:
        if v is not None:
            parse_time(v)
        return v

    @model_validator(mode="after")
    def _end(self) -> MaintenanceExclusion:
        if (self.end_time is None) == (not self.until_end_of_support):
            raise ValueError(
                f"maintenance exclusion {self.name!r}: give exactly one of end_time and "
                "until_end_of_support: true"
            )
        if self.until_end_of_support and self.scope == "NO_UPGRADES":
            raise ValueError(
                f"maintenance exclusion {self.name!r}: until_end_of_support applies to the "
                "NO_MINOR_UPGRADES and NO_MINOR_OR_NODE_UPGRADES scopes only; NO_UPGRADES needs "
                f"an end_time at most 30 days after start_time ({MAINTENANCE_DOC})"
            )
        if self.end_time is None:
            return self
        seconds = (parse_time(self.end_time) - parse_time(self.start_time)).total_seconds()
        if seconds <= 0:
            raise ValueError(
                f"maintenance exclusion {self.name!r}: end_time {self.end_time} is not after "
                f"start_time {self.start_time}"
            )
        if self.scope == "NO_UPGRADES" and seconds > NO_UPGRADES_MAX_SECONDS:
            raise ValueError(
                f"maintenance exclusion {self.name!r}: a NO_UPGRADES exclusion lasts at most 30 "
                f"days, this one {seconds / 86400:g}; use NO_MINOR_OR_NODE_UPGRADES for longer "
                f"({MAINTENANCE_DOC})"
            )
        return self


class SystemPool(NodeSettings, NodeBounds):
    """The small CPU pool for system pods and Ray head pods."""

    # Its nodes take the settings every node pool shares (NodeSettings); the class attributes
    # and property at the end answer as a declared pool would, so one builder makes every kind
    # of node pool (components.plan.nodepools._spec).

    machine_type: str = Field(
        "e2-standard-8",
        description="Compute Engine machine type of the system pool's nodes "
        "(https://cloud.google.com/compute/docs/general-purpose-machines).",
    )
    min_nodes: MinNodes = Field(
        1,
        description="Autoscaling lower bound, nodes in total over the cluster's zones "
        "(`totalMinNodeCount`).",
    )
    max_nodes: MaxNodes = Field(
        3,
        description="Autoscaling upper bound, nodes in total over the cluster's zones "
        "(`totalMaxNodeCount`); counts towards NAP's `cpu` limit.",
    )
    spot: bool = Field(
        False,
        description="Run the system pool on Spot VMs (cheaper, can be preempted; the Ray head "
        "runs here) (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms).",
    )

    @field_validator("machine_type")
    @classmethod
    def _cpu_shape(cls, v: str) -> str:
        return cpu_machine_type(v)

    name: ClassVar[str] = "system"  # the GKE node pool's name (reserved for pools: gke_name)
    zones: ClassVar[None] = None  # the cluster's zones
    reservation: ClassVar[None] = None
    max_run_duration: ClassVar[None] = None
    labels: ClassVar[Mapping[str, str]] = MappingProxyType({})

    @property
    def provisioning(self) -> str:
        return "spot" if self.spot else "on-demand"


class ClusterConfig(StrictModel):
    """The GKE Standard cluster."""

    name: str = Field(
        "ray",
        description="GKE cluster name; also part of bucket, service account and KMS names. 1-40 "
        "lowercase letters, digits and hyphens, starting with a letter.",
    )
    regional: bool = Field(
        False,
        description="`true`: regional control plane (location = `region`, replicated over "
        "`zones`); `false`: zonal control plane in the first of `zones` "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/types-of-clusters).",
    )
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = Field(
        "REGULAR",
        description="GKE release channel (https://cloud.google.com/kubernetes-engine/docs/"
        "concepts/release-channels).",
    )
    min_master_version: str | None = Field(
        None,
        description="Minimum control plane version, e.g. `1.31.2-gke.1115000`; unset: the "
        "channel's default. TPU generations need a minimum GKE version (checked against the "
        "catalog, https://cloud.google.com/kubernetes-engine/docs/concepts/tpus).",
    )
    deletion_protection: bool = Field(
        True,
        description="Refuse to delete the cluster (`pulumi destroy` fails until set to false; "
        "the provider's `deletionProtection`).",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="GCP labels on the cluster only, added to (and overriding) the stack's "
        "`labels` (`resourceLabels`).",
    )
    maintenance_window: MaintenanceWindow = Field(
        default_factory=MaintenanceWindow,
        description="When GKE may run automatic upgrades and maintenance.",
    )
    maintenance_exclusions: list[MaintenanceExclusion] = Field(
        default_factory=list,
        description="Times GKE starts no automatic upgrade of the given scope "
        "(`maintenancePolicy.maintenanceExclusions`, at most 20), e.g. one "
        "`NO_MINOR_OR_NODE_UPGRADES` over a multi-day training run: a node upgrade drains the "
        "node and stops the run. Cluster-wide (every pool). `raygke check` warns when a job's "
        "`active_deadline_seconds` or its pool's `max_run_duration` outlasts the longest time "
        "without a node upgrade (https://cloud.google.com/kubernetes-engine/docs/concepts/"
        "maintenance-windows-and-exclusions).",
    )
    system_pool: SystemPool = Field(
        default_factory=SystemPool,
        description="The CPU pool for system pods, the KubeRay operator, Ray head pods and "
        "RayJob submitters (node pool `system`).",
    )
    dns_endpoint: bool = Field(
        True,
        description="Let Kubernetes API traffic in through the control plane's DNS-based "
        "endpoint (`controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic`): a "
        "name under `gke.goog` reachable from any network that reaches Google Cloud APIs, each "
        "request checked by IAM (`container.clusters.connect`), so `pulumi up`, CI and kubectl "
        "need no IP allow-list. The `kubeconfig` output and the program's Kubernetes provider "
        "use it; `network.master_authorized_networks` still govern the IP endpoint "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation). With "
        "`false` the IP endpoint must be reachable from where you deploy (`raygke check` refuses "
        "a stack no deployer could reach).",
    )
    managed_prometheus: bool = Field(
        True,
        description="Enable Google Cloud Managed Service for Prometheus "
        "(https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed).",
    )
    gcs_fuse_csi: bool = Field(
        True,
        description="Enable the Cloud Storage FUSE CSI driver add-on, which mounts the buckets "
        "into Ray pods (https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "persistent-volumes/cloud-storage-fuse-csi-driver).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return gke_name(v, "cluster.name")

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return gcp_labels(v)

    @field_validator("maintenance_exclusions")
    @classmethod
    def _exclusions(cls, v: list[MaintenanceExclusion]) -> list[MaintenanceExclusion]:
        """At most 20, names unique (pulumi-gcp 10.2.0 ``ClusterMaintenancePolicyArgs``: "A
        cluster can have up to 20 maintenance exclusions at a time"; GKE keys them by name)."""
        if len(v) > MAX_EXCLUSIONS:
            raise ValueError(
                f"maintenance_exclusions has {len(v)} entries; a GKE cluster holds at most "
                f"{MAX_EXCLUSIONS}"
            )
        unique([e.name for e in v], "maintenance_exclusions names")
        return v

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        """A pinned version parses (:func:`components.catalog.parse_gke_version`); whether GKE
        still offers it for new clusters is the rule
        :func:`components.stack.rules.gke_version_offered` (a warning for stacks written before
        it, :mod:`components.config.epochs`: GKE stops offering a minor as time passes, while an
        existing cluster keeps running at or above it)."""
        if v is not None:
            catalog.parse_gke_version(v)
        return v


# NAP's cpu (vCPUs) and memory (GB) maxima when the stack gives none; GKE requires both once NAP
# is on (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#enable).
NAP_DEFAULT_LIMITS: dict[str, int] = {"cpu": 256, "memory": 1024}


class NapConfig(StrictModel):
    """Node Auto Provisioning (``cluster_autoscaling``)."""

    enabled: bool = Field(
        True,
        description="Enable node auto-provisioning: GKE may create node pools for pending pods "
        "within `resource_limits` (https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "node-auto-provisioning).",
    )
    autoscaling_profile: Literal["BALANCED", "OPTIMIZE_UTILIZATION"] = Field(
        "OPTIMIZE_UTILIZATION",
        description="Cluster autoscaler profile: `OPTIMIZE_UTILIZATION` removes idle nodes "
        "sooner (https://cloud.google.com/kubernetes-engine/docs/concepts/"
        "cluster-autoscaler#autoscaling_profiles).",
    )
    resource_limits: dict[str, int] = Field(
        default_factory=lambda: dict(NAP_DEFAULT_LIMITS),
        description="Cluster-wide maxima by NAP resource type: `cpu` (vCPUs), `memory` (GB), "
        "TPU/GPU types (chips/GPUs, e.g. `tpu-v6e-slice`, `nvidia-l4`). When NAP is on, each given "
        "limit must cover what the declared pools scale to; accelerator limits not given are set "
        "to that (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning).",
    )

    @property
    def effective_limits(self) -> dict[str, int]:
        """``resource_limits`` with cpu and memory defaulted (:data:`NAP_DEFAULT_LIMITS`): what
        the cluster's NAP settings hold for them when the stack names only accelerators."""
        return {**NAP_DEFAULT_LIMITS, **self.resource_limits}

    @field_validator("resource_limits")
    @classmethod
    def _types(cls, v: dict[str, int]) -> dict[str, int]:
        for key, value in v.items():
            if key not in catalog.NAP_RESOURCE_TYPES:
                raise ValueError(
                    f"resource_limits key {key!r} is not a NAP resource type; valid: "
                    f"{', '.join(catalog.NAP_RESOURCE_TYPES)}"
                )
            if not 0 <= value <= INT64_MAX:
                raise ValueError(
                    f"resource_limits[{key}] {value} must be 0 to {INT64_MAX} (GKE's "
                    "ResourceLimit.maximum is an int64)"
                )
        return v
