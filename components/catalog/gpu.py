"""GPU types as GKE and Compute Engine name them: machine types per GPU count, zones, driver
versions. Product name, memory and peak come from :mod:`contract.accelerators`. The zone lists
are not complete (Google adds zones); a pool may set ``allow_unlisted_zone``.

Sources (the tags [GCE-GPU], [GPU-ZONES], [GKE-GPU], [NVIDIA] cited below; [GCE-AO] is
:mod:`components.catalog.machines`', [NAP] :mod:`components.catalog.gke`', [RAY-GPU]
:mod:`contract.accelerators`'): docs/sources.md#catalog-gpu
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.accelerators import GPUS

from .accelerators import ACCELERATORS
from .labels import CatalogError
from .machines import machine_shape


@dataclass(frozen=True)
class GpuType:
    """A GPU type as GKE and Compute Engine name it.

    Attributes:
        name: GKE accelerator type (``nvidia-l4``): node label value and NAP resource type [GKE-GPU], [NAP].
        machine_types: GPUs per VM -> the default (smallest) machine type with that many [GCE-GPU].
        memory_gb: memory per GPU, GB.
        ray_accelerator_type: Ray's accelerator type of a node with this GPU (``L4``, ``H100``;
            :data:`contract.accelerators.GPUS`, [RAY-GPU] there).
        peak_bf16_tflops: peak dense bf16 throughput per GPU, TFLOP/s [NVIDIA].
        zones: zones offering it [GPU-ZONES] (not complete).
        arch: CPU architecture of the machine types that carry it, as Kubernetes names it
            (``kubernetes.io/arch``): ``amd64``, or ``arm64`` for GB200 on NVIDIA Grace (A4X)
            [GCE-GPU]. Ray's and this project's images are amd64 builds, so an arm64 GPU pool
            needs an image built for arm64 (``ray.images.gpu`` with ``architectures: [arm64]``).

    The host vCPUs and memory of each machine type come from :data:`MACHINE_SHAPES` [GCE-AO]
    (:attr:`host_vcpus`, :attr:`host_memory_gb`), so they are written once.
    """

    name: str
    display: str
    machine_types: Mapping[int, str]
    memory_gb: int
    peak_bf16_tflops: float
    zones: tuple[str, ...]
    arch: str = "amd64"
    ray_accelerator_type: str = ""

    @property
    def host_vcpus(self) -> dict[int, float]:
        """GPUs per node -> vCPUs of the default machine type."""
        return {n: machine_shape(m).vcpus for n, m in self.machine_types.items()}

    @property
    def host_memory_gb(self) -> dict[int, float]:
        """GPUs per node -> memory (GB) of the default machine type."""
        return {n: machine_shape(m).memory_gb for n, m in self.machine_types.items()}

    def machine_type(self, count: int) -> str:
        """Default machine type for ``count`` GPUs per node.

        Raises:
            CatalogError: no machine type offers ``count`` of this GPU; lists the counts that exist.
        """
        try:
            return self.machine_types[count]
        except KeyError:
            raise CatalogError(
                f"no machine type offers {count} x {self.name}; valid counts: "
                f"{', '.join(str(c) for c in self.machine_types)}"
            ) from None

    def scaling_config(self, count: int, nodes: int) -> dict[str, Any]:
        """``ray.train.ScalingConfig`` kwargs: one Ray Train worker per GPU on ``nodes`` nodes."""
        self.machine_type(count)
        return {
            "use_gpu": True,
            "num_workers": count * nodes,
            "resources_per_worker": {"GPU": 1},
        }


_COMMON_GPU_ZONES = (
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east1-b",
    "us-east1-c",
    "us-east1-d",
    "us-east4-a",
    "us-east4-b",
    "us-east4-c",
    "us-east5-a",
    "us-east5-b",
    "us-west1-a",
    "us-west1-b",
    "us-west4-a",
    "europe-west4-a",
    "europe-west4-b",
    "europe-west4-c",
    "asia-southeast1-b",
    "asia-southeast1-c",
)


def _gpu(name: str, **infra: Any) -> GpuType:
    """A GPU type: the facts of :data:`contract.accelerators.GPUS` (product name, memory, peak),
    the machine types of its record in :data:`components.catalog.accelerators.ACCELERATORS`, plus
    the infrastructure facts given here (zones, architecture)."""
    f = GPUS[name]
    return GpuType(
        name=name,
        display=f.display,
        machine_types=ACCELERATORS[name].machine_types,
        memory_gb=f.memory_gb,
        peak_bf16_tflops=f.peak_bf16_tflops,
        ray_accelerator_type=f.ray_accelerator_type,
        **infra,
    )


GPU_TYPES: Mapping[str, GpuType] = {
    "nvidia-l4": _gpu(
        "nvidia-l4",
        zones=_COMMON_GPU_ZONES,
    ),
    "nvidia-tesla-a100": _gpu(
        "nvidia-tesla-a100",
        zones=(
            "us-central1-a",
            "us-central1-b",
            "us-central1-c",
            "us-central1-f",
            "us-east1-b",
            "us-west1-b",
            "us-west4-b",
            "europe-west4-a",
            "europe-west4-b",
            "asia-southeast1-b",
            "asia-southeast1-c",
        ),
    ),
    "nvidia-a100-80gb": _gpu(
        "nvidia-a100-80gb",
        zones=(
            "us-central1-a",
            "us-central1-c",
            "us-east4-c",
            "us-east5-b",
            "europe-west4-a",
            "asia-southeast1-c",
        ),
    ),
    "nvidia-h100-80gb": _gpu(
        "nvidia-h100-80gb",
        zones=(
            "us-central1-a",
            "us-central1-c",
            "us-east4-a",
            "us-east4-b",
            "us-east5-a",
            "us-west1-a",
            "us-west4-a",
            "europe-west4-b",
            "asia-southeast1-c",
        ),
    ),
    # A3 Mega: 8 x H100 per a3-megagpu-8g under GKE's accelerator name nvidia-h100-mega-80gb
    # (GoogleCloudPlatform/container-engine-accelerators @992db81 gpudirect-tcpxo/
    # nccl-tcpxo-installer.yaml selects it). Zones: us-central1-c, where the same repository's
    # gpudirect-tcpxo/nccl-test-latest-autopilot.yaml places its A3 Mega pods
    # (topology.kubernetes.io/zone: us-central1-c); not a complete list (allow_unlisted_zone).
    "nvidia-h100-mega-80gb": _gpu(
        "nvidia-h100-mega-80gb",
        zones=("us-central1-c",),
    ),
    "nvidia-h200-141gb": _gpu(
        "nvidia-h200-141gb",
        zones=(
            "us-central1-b",
            "us-east4-b",
            "us-east5-a",
            "us-west1-c",
            "europe-west1-b",
            "asia-south1-b",
        ),
    ),
    # A4 [GCE-GPU]: 8 x B200 per a4-highgpu-8g. Memory and peak from NVIDIA's HGX B200 table
    # ([NVIDIA] in the module docstring). Zones: all four are listed for a4-highgpu-8g in
    # SkyPilot's GCP catalog, which its fetcher builds from the Compute Engine API
    # (skypilot-org/skypilot-catalog @8427bbff and @006059e0 catalogs/v8/gcp/vms.csv: rows
    # "a4-highgpu-8g,224.0,3968.0,...,<zone>" for europe-west4-b, us-central1-b, us-east4-b and
    # us-south1-b, among others); us-central1-b is also in a `gcloud compute accelerator-types
    # list` dump in the code index (nvidia-b200, 8 per VM), and `gcloud compute machine-types
    # list` by region lists a4-highgpu-8g in europe-west4, us-central1, us-east4 and us-south1
    # (Cyclenerd/google-cloud-pricing-cost-calculator @dac3128 tools/machinetyperegion.csv).
    # Google's GPU regions-zones page was not readable in this session's indexes.
    # allow_unlisted_zone for other zones.
    "nvidia-b200": _gpu(
        "nvidia-b200",
        zones=("us-central1-b", "us-east4-b", "us-south1-b", "europe-west4-b"),
    ),
    # A4X [GCE-GPU]: 4 x GB200 per a4x-highgpu-4g, NVIDIA Grace (Arm) host CPUs: arm64 nodes
    # (confirmed, module docstring). Zones: us-central1-b only, where Google's own GKE A4X test
    # runs (GoogleCloudPlatform/cluster-toolkit @1047080
    # tools/cloud-build/daily-tests/tests/gke-a4x.yml: "zone: us-central1-b"); that proves A4X
    # is offered there, not that it is the only zone. us-central1-a and us-east4-b, recorded
    # before, were dropped: no source names either zone (searched: the docs/pages/code/issues
    # indexes for "a4x-highgpu-4g" zones, A4X/GB200 regions and zones, SkyPilot's catalog (no
    # a4x rows), `gcloud compute machine-types list` dumps, which give regions only:
    # europe-west4, us-central1, us-east1, us-east4, Cyclenerd/google-cloud-pricing-cost-
    # calculator @dac3128 tools/machinetyperegion.csv). A pool in another A4X zone sets
    # allow_unlisted_zone: true.
    "nvidia-gb200": _gpu(
        "nvidia-gb200",
        zones=("us-central1-b",),
        arch="arm64",
    ),
}


def gpu_type(name: str) -> GpuType:
    """The catalog entry for a GPU type.

    Raises:
        CatalogError: unknown type; the message lists the known ones.
    """
    try:
        return GPU_TYPES[name]
    except KeyError:
        raise CatalogError(
            f"GPU type {name!r} is not in the catalog; valid: {', '.join(GPU_TYPES)}"
        ) from None


GPU_DRIVER_VERSIONS = ("DEFAULT", "LATEST", "INSTALLATION_DISABLED")  # [GKE-GPU]


def gpu_driver_label(driver_version: str | None) -> str | None:
    """Value of :data:`GPU_DRIVER_LABEL` on nodes whose driver GKE installs (``LATEST`` ->
    ``latest``), None when GKE installs none (``INSTALLATION_DISABLED``) [GKE-GPU]."""
    if driver_version in ("DEFAULT", "LATEST"):
        return driver_version.lower()
    return None
