"""The ``cluster`` and ``nap`` blocks: the GKE Standard cluster, its system pool, NAP."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components import catalog
from components.spec.base import _cpu_machine_type, _gke_name, _min_le_max, _Model

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

    @field_validator("machine_type")
    @classmethod
    def _cpu_shape(cls, v: str) -> str:
        return _cpu_machine_type(v)


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

    @model_validator(mode="after")
    def _version_offered(self) -> ClusterConfig:
        """A pinned version must be one GKE offers for new clusters in the release channel
        (:func:`components.catalog.gke_version_problem`)."""
        if self.min_master_version is not None:
            problem = catalog.gke_version_problem(self.min_master_version, self.release_channel)
            if problem:
                raise ValueError(f"min_master_version {problem}")
        return self


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
