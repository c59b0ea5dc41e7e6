"""The ``node_pools`` block: CPU, TPU (``tpu:``) and GPU (``gpu:``) node pools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from components import catalog
from components.kernel.base import (
    DISK_SIZE_MAX_GB,
    POOL_NODES_MAX,
    StrictModel,
    cpu_machine_type,
    gke_name,
    min_le_max,
    unique,
)

# ------------------------------------------------------------------------------------ node pools

Provisioning = Literal["on-demand", "spot", "reservation", "queued", "flex-start"]

# Node-count bounds of every autoscaled pool (GKE: at most 1,000 nodes per zone, four zones).
MinNodes = Annotated[int, Field(ge=0, le=POOL_NODES_MAX)]
MaxNodes = Annotated[int, Field(ge=1, le=POOL_NODES_MAX)]
MIN_NODES_DOC = "Autoscaling lower bound, nodes in total over the pool's zones."
MAX_NODES_DOC = (
    "Autoscaling upper bound, nodes in total over the pool's zones (at most 1,000 per zone, "
    "GKE); a worker group on this pool has at most this many replicas."
)


class NodeSettings(StrictModel):
    """What every node pool's nodes share, the system pool's included: the one model the node
    pool builder (:class:`components.nodepools.component.NodePool`) reads through
    :attr:`components.plan.nodepools.NodePoolSpec.config`. A field every node pool takes goes
    here and into that builder; nothing in between copies it.
    """

    disk_size_gb: int = Field(
        100,
        ge=20,
        le=DISK_SIZE_MAX_GB,
        description="Boot disk size of each node, GB (20 to 65536, the largest Persistent Disk).",
    )


class NodeBounds(StrictModel):
    """``min_nodes <= max_nodes`` for a pool with :data:`MinNodes` / :data:`MaxNodes` fields
    (CPU, GPU and system pools; a TPU pool counts slices)."""

    @model_validator(mode="after")
    def _min_max(self) -> NodeBounds:
        return min_le_max(self, "min_nodes", "max_nodes")


class _PoolBase(NodeSettings):
    name: str = Field(
        description="Node pool name (GKE node pool, and the `node_pool` that worker groups and "
        "jobs refer to). 1-40 lowercase letters, digits and hyphens; `system` is reserved.",
    )
    zones: list[str] | None = Field(
        None,
        description="Zones of the pool's nodes, in the stack's region; unset: the stack's "
        "`zones`. A TPU slice lives in the first zone only.",
    )

    @field_validator("zones")
    @classmethod
    def _zones_once(cls, v: list[str] | None) -> list[str] | None:
        """Each zone once (GKE node locations are a set)."""
        return None if v is None else unique(v, "zones")

    provisioning: Provisioning = Field(
        "on-demand",
        description="Capacity type: `on-demand`, `spot` (Spot VMs, preemptible, "
        "https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms) or `reservation` "
        "(needs `reservation`, https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "consuming-reservations), `queued` (flex-start with queued provisioning: Dynamic "
        "Workload Scheduler provisions the nodes all at once for a job admitted by a Kueue "
        "queue, https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest) or "
        "`flex-start` (flex-start VMs without queueing, single-host TPU slices only, "
        "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training).",
    )
    max_run_duration: str | None = Field(
        None,
        description="Longest a node of a `flex-start` or `queued` pool runs before GKE reclaims "
        "it (`maxRunDuration`), `<n>s|m|h|d`, at most 7d; unset: 7 days. Refused with other "
        "provisioning.",
    )
    reservation: str | None = Field(
        None,
        description="Name of the specific Compute Engine reservation to consume; only with "
        "`provisioning: reservation`.",
    )
    allow_unlisted_zone: bool = Field(
        False,
        description="Accept a zone the catalog does not list for this TPU/GPU type (the catalog "
        "follows https://cloud.google.com/tpu/docs/regions-zones and https://cloud.google.com/"
        "compute/docs/gpus/gpu-regions-zones). Only steers that check; nothing rendered changes.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Extra Kubernetes node labels on the pool's nodes (GKE's own labels are "
        "added and cannot be overridden).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return gke_name(v, "node pool name")

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

    @model_validator(mode="after")
    def _run_duration(self) -> _PoolBase:
        if self.max_run_duration is None:
            return self
        from components.config.capacity import duration_seconds

        if self.provisioning not in ("queued", "flex-start"):
            raise ValueError(
                f"max_run_duration {self.max_run_duration!r} needs provisioning: flex-start or "
                f"queued (it is {self.provisioning!r})"
            )
        if not 0 < duration_seconds(self.max_run_duration) <= catalog.FLEX_START_MAX_RUN_SECONDS:
            raise ValueError(
                f"max_run_duration {self.max_run_duration!r}: flex-start nodes run at most 7 "
                f"days ({catalog.DWS_FLEX_DOC}); allowed: 1s to 7d"
            )
        return self

    @property
    def spot(self) -> bool:
        return self.provisioning == "spot"


class CpuPool(_PoolBase, NodeBounds):
    """A CPU node pool (Ray CPU workers)."""

    kind: Literal["cpu"] = Field(
        "cpu",
        description="Pool kind; may be left out for a CPU pool (a `tpu:` or `gpu:` block makes "
        "a TPU or GPU pool).",
    )
    machine_type: str = Field(
        "n2-standard-8",
        description="Compute Engine machine type; a name ending in the vCPU count "
        "(`n2-standard-8`) lets worker sizes and NAP needs be derived "
        "(https://cloud.google.com/compute/docs/general-purpose-machines).",
    )
    min_nodes: MinNodes = Field(0, description=MIN_NODES_DOC)
    max_nodes: MaxNodes = Field(4, description=MAX_NODES_DOC)

    @field_validator("machine_type")
    @classmethod
    def _cpu_shape(cls, v: str) -> str:
        return cpu_machine_type(v)


class TpuSpec(StrictModel):
    """A TPU slice shape: ``{generation: v6e, topology: 4x4}``."""

    generation: str = Field(
        description="TPU generation from the catalog: `v5e`, `v6e`, `v5p`, `tpu7x` (Ironwood) "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/tpus, "
        "https://cloud.google.com/tpu/docs/tpu7x).",
    )
    topology: str = Field(
        description="Slice topology, e.g. `2x2` (single host) or `4x4` (multi-host) for v5e/v6e, "
        "`2x2x1` (single host) or `2x2x2`, `4x4x4`, ... (multi-host) for v5p/tpu7x; must be "
        "offered for the generation (https://cloud.google.com/tpu/docs/v5e, "
        "https://cloud.google.com/tpu/docs/v6e, https://cloud.google.com/tpu/docs/v5p, "
        "https://cloud.google.com/tpu/docs/tpu7x). A tpu7x multi-host slice is placed by a "
        "HIGH_THROUGHPUT workload policy instead of `tpu_topology`.",
    )

    # Field validators (not one on the model), so an error's path is the field it is about:
    # ``node_pools[x].tpu.generation`` or ``node_pools[x].tpu.topology``.
    @field_validator("generation")
    @classmethod
    def _generation(cls, v: str) -> str:
        catalog.tpu_generation(v)  # raises CatalogError (a ValueError) naming the valid ones
        return v

    @field_validator("topology")
    @classmethod
    def _topology(cls, v: str, info: ValidationInfo) -> str:
        generation = info.data.get("generation")  # absent when it was refused itself
        if generation is not None:
            catalog.tpu_slice(generation, v)  # raises CatalogError naming the valid topologies
        return v

    @property
    def slice(self) -> catalog.TpuSlice:
        """The slice (validated at ``topology``: a pool's topology is one the catalog lists; a
        stitched super-slice's, :meth:`TpuPool.stitched`, one GKE's Slice resource takes)."""
        return catalog.TpuSlice(catalog.tpu_generation(self.generation), self.topology)


class TpuPool(_PoolBase):
    """TPU slices of one shape. One GKE node pool per slice for multi-host slices (they scale
    atomically); one pool autoscaling 0..max_slices nodes for single-host slices."""

    kind: Literal["tpu"] = Field("tpu", description="Pool kind; implied by the `tpu:` block.")
    tpu: TpuSpec = Field(description="The slice shape: `{generation, topology}`.")
    min_slices: int = Field(
        0,
        ge=0,
        le=64,
        description="Slices kept at all times (multi-host: that many per-slice GKE node pools "
        "keep all their hosts; single-host: the pool's minimum node count).",
    )
    max_slices: int = Field(
        1,
        ge=1,
        le=64,
        description="Most slices (1-64): one GKE node pool per slice for multi-host slices, one "
        "pool autoscaling 0..max_slices for single-host slices; a worker group on this pool has "
        "at most this many replicas.",
    )

    super_slicing: bool = Field(
        False,
        description="TPU7x super-slicing: each slice of this pool is a 4x4x4 cube (16 hosts) "
        "provisioned on its own (`PROVISION_ONLY` workload policy), and GKE's slice controller "
        "stitches cubes of one block into the slice a queued job asks for, admitted by Kueue "
        "(Topology over block / cube / host, the `accelerator.gke.io/slice` admission check). "
        "Needs tpu7x 4x4x4, `provisioning: reservation` (All Capacity mode), the pool as a "
        "Kueue flavor, GKE 1.35.2-gke.1842000+ on RAPID "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/dynamic-slicing).",
    )

    @model_validator(mode="after")
    def _min_max(self) -> TpuPool:
        return min_le_max(self, "min_slices", "max_slices")

    @property
    def slice(self) -> catalog.TpuSlice:
        return self.tpu.slice

    def stitched(self, topology: str) -> TpuPool | None:
        """This super-slicing pool as a job spanning super-slices of ``topology`` sees it: each
        slice a ``topology`` TPU7x slice stitched from ``chips / 64`` of the pool's 4x4x4 cubes,
        ``max_slices`` (and ``min_slices``) the whole super-slices its cubes make. None when the
        pool is not super-slicing, ``topology`` is no super-slice topology
        (:func:`components.catalog.tpu.super_slice_problem`), or the pool has too few cubes; ``jobs[].super_slice``'s rule
        (:func:`components.capacity.superslice.problems`) reports those. The one slice every
        render of the job derives from (numOfHosts, the TPU env, ScalingConfig, the slice
        annotation), as a pool's own slice is (docs/design: one source of truth per slice)."""
        from components.catalog.tpu import TpuSlice, super_slice_problem

        if not self.super_slicing or super_slice_problem(topology) is not None:
            return None
        cube = self.slice.chips
        chips = TpuSlice(self.slice.generation, topology).chips
        if chips % cube or chips // cube > self.max_slices:
            return None
        cubes = chips // cube
        return self.model_copy(
            update={
                "tpu": self.tpu.model_copy(update={"topology": topology}),
                "max_slices": self.max_slices // cubes,
                "min_slices": self.min_slices // cubes,
            }
        )

    @property
    def machine_type(self) -> str:
        return self.slice.machine_type


class GpuSpec(StrictModel):
    """GPUs per node: ``{type: nvidia-l4, count: 1}``."""

    type: str = Field(
        description="GPU type as GKE names it, e.g. `nvidia-l4`, `nvidia-h100-80gb`, "
        "`nvidia-b200` (A4), `nvidia-gb200` (A4X, arm64 hosts: needs an arm64 `ray.images.gpu`) "
        "(https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).",
    )
    count: int = Field(
        1,
        ge=1,
        le=16,
        description="GPUs per node (1-16: no Compute Engine machine has more); must be a count some machine type offers for the type "
        "(https://cloud.google.com/compute/docs/accelerator-optimized-machines).",
    )

    @model_validator(mode="after")
    def _known(self) -> GpuSpec:
        catalog.gpu_type(self.type).machine_type(self.count)
        return self

    @property
    def gpu(self) -> catalog.GpuType:
        return catalog.gpu_type(self.type)


class GpuPool(_PoolBase, NodeBounds):
    """A GPU node pool; machine type derived from ``gpu`` unless given."""

    kind: Literal["gpu"] = Field("gpu", description="Pool kind; implied by the `gpu:` block.")
    gpu: GpuSpec = Field(description="GPUs per node: `{type, count}`.")
    machine_type_override: str | None = Field(
        None,
        alias="machine_type",
        description="Machine type; unset: the catalog's machine type for `gpu.type` x "
        "`gpu.count` (e.g. `g2-standard-4` for 1 x nvidia-l4, https://cloud.google.com/compute/"
        "docs/gpus).",
    )
    driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = Field(
        "LATEST",
        description="NVIDIA driver GKE installs (`gpuDriverInstallationConfig`, "
        "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus#installing_drivers).",
    )
    gpu_networking: Literal["auto", "off", "tcpx", "tcpxo", "rdma", "gpudirect"] = Field(
        "auto",
        description="GPU-to-GPU networking of the pool's nodes: `auto` (default) is the "
        "machine family's own - GPUDirect-TCPX's 4 extra NICs on `a3-highgpu-8g`, "
        "GPUDirect-TCPXO's 8 on `a3-megagpu-8g`, GPUDirect RDMA's 8 (4 on `a4x-highgpu-4g`) "
        "CX-7 NICs on an RDMA network profile on `a3-ultragpu-8g`, `a4-highgpu-8g` and "
        "`a4x-highgpu-4g`, none on other machine types; `off` only the primary NIC (refused "
        "where there is none to turn off); `tcpx` / "
        "`tcpxo` / `rdma` name the family's technology and are refused on another family "
        "(https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth, "
        "https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx; "
        "docs/deploying.md, GPU networking). On A3 High / A3 Mega `auto`, `tcpx` and `tcpxo` "
        "run NCCL's socket transport over those NICs; `gpudirect` (A3 High and A3 Mega only) "
        "runs GPUDirect-TCPX / -TCPXO itself: Google's NCCL plugin installer and the RxDM "
        "sidecar in the Ray workers on the pool, whose Ray clusters move to the namespace "
        "`<kuberay.namespace>-gpudirect` at Pod Security `privileged` (docs/security.md, "
        "GPUDirect). Changing it between `off` and the others replaces the node pool. Unset in a "
        "stack without `defaults` 2026-12-03 or later: `off` (what those stacks created).",
    )
    min_nodes: MinNodes = Field(0, description=MIN_NODES_DOC)
    max_nodes: MaxNodes = Field(1, description=MAX_NODES_DOC)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

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

    @field_validator("gpu_networking")
    @classmethod
    def _gpu_networking_matches(cls, v: str, info: ValidationInfo) -> str:
        """An explicit technology must be the machine family's own
        (:data:`components.catalog.gpu_network.GPU_NET_FAMILIES`)."""
        gpu = info.data.get("gpu")
        if v == "auto" or gpu is None:
            return v
        from components.catalog.gpu_network import GPU_NET_FAMILIES, gpu_net_family

        machine = info.data.get("machine_type_override") or gpu.gpu.machine_type(gpu.count)
        fam = gpu_net_family(machine)
        if v == "gpudirect":
            return _gpudirect_fits(v, machine, gpu, fam)
        if v == "off":
            if fam is None:  # every key has an effect or is refused
                raise ValueError(
                    f"'off' on machine type {machine}, which has no GPU networking to turn off; "
                    "remove gpu_networking"
                )
            return v
        if fam is None or fam.kind != v:
            have = f"{fam.family} has {fam.kind}" if fam else "it has no GPUDirect networking"
            fits = sorted(m for m, f in GPU_NET_FAMILIES.items() if f.kind == v)
            raise ValueError(
                f"{v!r} does not fit machine type {machine} ({have}); {v} is on "
                f"{', '.join(fits)}; allowed here: auto, off" + (f", {fam.kind}" if fam else "")
            )
        return v

    @property
    def gpu_net(self) -> Any:
        """The pool's GPU networking (:class:`components.catalog.gpu_network.GpuNetFamily`), None
        when it has none or ``gpu_networking: off``."""
        from components.catalog.gpu_network import gpu_net_family

        return None if self.gpu_networking == "off" else gpu_net_family(self.machine_type)

    @property
    def gpudirect(self) -> bool:
        """``gpu_networking: gpudirect``: the pool's Ray workers run the GPUDirect-TCPX(O) RxDM
        sidecar (:mod:`components.catalog.gpudirect`)."""
        return self.gpu_networking == "gpudirect"


def _gpudirect_fits(v: str, machine: str, gpu: GpuSpec, fam: Any) -> str:
    """``gpudirect`` on a machine type whose GPUDirect kind runs the RxDM sidecar (TCPX, TCPXO),
    else the refusal naming the value, the machine and the machine types it takes."""
    from components.catalog.gpu_network import GPU_NET_FAMILIES
    from components.catalog.gpudirect import KINDS

    if fam is not None and fam.kind in KINDS:
        return v
    fits = ", ".join(
        f"{m} ({f.family}: gpu {{type: {f.accelerators[0]}, count: 8}}, GPUDirect-{f.kind.upper()})"
        for m, f in GPU_NET_FAMILIES.items()
        if f.kind in KINDS
    )
    if fam is None:
        have = f"{gpu.type} x {gpu.count}, which has no GPUDirect-TCPX or -TCPXO"
        allowed = "auto"
    else:
        have = (
            f"{fam.family}: GPUDirect RDMA, whose gIB NCCL plugin needs no RxDM sidecar and "
            "already runs with auto or rdma"
        )
        allowed = f"auto, off, {fam.kind}"
    raise ValueError(
        f"{v!r} does not fit machine type {machine} ({have}); gpudirect runs the GPUDirect-TCPX "
        f"/ -TCPXO RxDM sidecar and takes only {fits}; allowed here: {allowed}"
    )


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
