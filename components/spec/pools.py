"""The ``node_pools`` block: CPU, TPU (``tpu:``) and GPU (``gpu:``) node pools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from components import catalog
from components.spec.base import _cpu_machine_type, _gke_name, _min_le_max, _Model, vcpus_of

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

    @field_validator("machine_type")
    @classmethod
    def _cpu_shape(cls, v: str) -> str:
        return _cpu_machine_type(v)

    @property
    def vcpus(self) -> float | None:
        """vCPUs of the machine type (catalog machine shapes)."""
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

    @model_validator(mode="after")
    def _gpu_shape(self) -> GpuPool:
        if self.machine_type_override is not None:
            problem = catalog.gpu_machine_problem(
                self.machine_type_override, self.gpu.type, self.gpu.count
            )
            if problem:
                raise ValueError(problem)
        return self

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
