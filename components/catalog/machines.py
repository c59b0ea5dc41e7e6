"""Compute Engine machine shapes (CPU families, accelerator-optimized, custom, TPU hosts): what a
node of a machine type has (:func:`machine_shape`, :data:`MACHINE_SHAPES`) and why a machine type
cannot serve a pool (:func:`cpu_machine_problem`, :func:`gpu_machine_problem`). Sources (the
tags [GCE-GP], [GCE-CO], [GCE-AO], [GCE-CUSTOM], [GKE-TPU], [GKE-GPU] cited below):
docs/sources.md#catalog-machines
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .labels import CatalogError
from .tpu import tpu_machine_types

# ------------------------------------------------------------------------------- machine shapes


@dataclass(frozen=True)
class MachineShape:
    """A Compute Engine machine type: what a node of that type has.

    Attributes:
        name: the machine type (``n2-standard-8``).
        series: the machine series (``n2``, ``g2``, ``ct6e``).
        vcpus: vCPUs (shared-core E2 types: the burstable 2).
        memory_gb: memory, GB.
        gpu_type: GKE accelerator name of the GPUs the type always carries (A2/A3/G2), else None.
        gpus: how many of them.
        tpu: True for TPU machine types (``ct5lp-*``, ``ct6e-*``), usable only through a ``tpu:``
            pool, whose slice derives the type [GKE-TPU].
    """

    name: str
    series: str
    vcpus: float
    memory_gb: float
    gpu_type: str | None = None
    gpus: int = 0
    tpu: bool = False


def _series(
    series: str, kind: str, sizes: tuple[int, ...], gb_per_vcpu: float
) -> dict[str, MachineShape]:
    return {
        f"{series}-{kind}-{n}": MachineShape(f"{series}-{kind}-{n}", series, n, n * gb_per_vcpu)
        for n in sizes
    }


# Predefined general-purpose and compute-optimized shapes: series -> (kind, sizes, GB per vCPU)
# [GCE-GP], [GCE-CO].
_CPU_SERIES: dict[str, tuple[tuple[str, tuple[int, ...], float], ...]] = {
    "e2": (
        ("standard", (2, 4, 8, 16, 32), 4.0),
        ("highmem", (2, 4, 8, 16), 8.0),
        ("highcpu", (2, 4, 8, 16, 32), 1.0),
    ),
    "n1": (
        ("standard", (1, 2, 4, 8, 16, 32, 64, 96), 3.75),
        ("highmem", (2, 4, 8, 16, 32, 64, 96), 6.5),
        ("highcpu", (2, 4, 8, 16, 32, 64, 96), 0.9),
    ),
    "n2": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80, 96), 1.0),
    ),
    "n2d": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 1.0),
    ),
    "n4": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80), 2.0),
    ),
    "c3": (
        ("standard", (4, 8, 22, 44, 88, 176), 4.0),
        ("highmem", (4, 8, 22, 44, 88, 176), 8.0),
        ("highcpu", (4, 8, 22, 44, 88, 176), 2.0),
    ),
    "c3d": (
        ("standard", (4, 8, 16, 30, 60, 90, 180, 360), 4.0),
        ("highmem", (4, 8, 16, 30, 60, 90, 180, 360), 8.0),
        ("highcpu", (4, 8, 16, 30, 60, 90, 180, 360), 2.0),
    ),
    "t2d": (("standard", (1, 2, 4, 8, 16, 32, 48, 60), 4.0),),
    "c2": (("standard", (4, 8, 16, 30, 60), 4.0),),
    "c2d": (
        ("standard", (2, 4, 8, 16, 32, 56, 112), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 56, 112), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 56, 112), 2.0),
    ),
    "c4": (
        ("standard", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 3.75),
        ("highmem", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 7.75),
        ("highcpu", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 2.0),
    ),
}
# Series that take custom shapes ``<series>-custom-<vCPUs>-<MB>`` (N1: ``custom-<vCPUs>-<MB>``)
# [GCE-CUSTOM].
CUSTOM_SERIES = ("n1", "n2", "n2d", "e2", "n4")

# Accelerator-optimized shapes: name -> (vCPUs, memory GB, GKE GPU type, GPUs) [GCE-AO].
_GPU_MACHINES: dict[str, tuple[int, int, str, int]] = {
    "g2-standard-4": (4, 16, "nvidia-l4", 1),
    "g2-standard-8": (8, 32, "nvidia-l4", 1),
    "g2-standard-12": (12, 48, "nvidia-l4", 1),
    "g2-standard-16": (16, 64, "nvidia-l4", 1),
    "g2-standard-24": (24, 96, "nvidia-l4", 2),
    "g2-standard-32": (32, 128, "nvidia-l4", 1),
    "g2-standard-48": (48, 192, "nvidia-l4", 4),
    "g2-standard-96": (96, 384, "nvidia-l4", 8),
    "a2-highgpu-1g": (12, 85, "nvidia-tesla-a100", 1),
    "a2-highgpu-2g": (24, 170, "nvidia-tesla-a100", 2),
    "a2-highgpu-4g": (48, 340, "nvidia-tesla-a100", 4),
    "a2-highgpu-8g": (96, 680, "nvidia-tesla-a100", 8),
    "a2-megagpu-16g": (96, 1360, "nvidia-tesla-a100", 16),
    "a2-ultragpu-1g": (12, 170, "nvidia-a100-80gb", 1),
    "a2-ultragpu-2g": (24, 340, "nvidia-a100-80gb", 2),
    "a2-ultragpu-4g": (48, 680, "nvidia-a100-80gb", 4),
    "a2-ultragpu-8g": (96, 1360, "nvidia-a100-80gb", 8),
    "a3-highgpu-1g": (26, 234, "nvidia-h100-80gb", 1),
    "a3-highgpu-2g": (52, 468, "nvidia-h100-80gb", 2),
    "a3-highgpu-4g": (104, 936, "nvidia-h100-80gb", 4),
    "a3-highgpu-8g": (208, 1872, "nvidia-h100-80gb", 8),
    # a3-megagpu-8g: 208 vCPUs, 1872 GB, 8 x nvidia-h100-mega-80gb: GKE's cluster autoscaler
    # machine table (GoogleCloudPlatform/cluster-autoscaler, deprecated_machine_types_config.go:
    # NewMachineTypeInfo("a3-megagpu-8g", 208, 1872).withGpuOverride(NvidiaH100Mega_80gb, 8)).
    "a3-megagpu-8g": (208, 1872, "nvidia-h100-mega-80gb", 8),
    "a3-ultragpu-8g": (224, 2952, "nvidia-h200-141gb", 8),
    # a4-highgpu-8g: 224 vCPUs, 3968 GB, 8 x nvidia-b200, confirmed by GKE's own cluster
    # autoscaler machine table: GoogleCloudPlatform/cluster-autoscaler @7d25050
    # pkg/cloudprovider/gke/machinetypes/deprecated_machine_types_config.go
    # (NewMachineTypeInfo("a4-highgpu-8g", 224, 3968).withGpuOverride(NvidiaB200, 8)).
    "a4-highgpu-8g": (224, 3968, "nvidia-b200", 8),
    # a4x-highgpu-4g: 140 vCPUs, 884 GB, confirmed by
    # https://cloud.google.com/compute/docs/instances/arm-on-compute (gpu.py docstring) and by
    # the same cluster-autoscaler table (NewMachineTypeInfo("a4x-highgpu-4g", 140, 884)).
    "a4x-highgpu-4g": (140, 884, "nvidia-gb200", 4),
}

MACHINE_SHAPES: Mapping[str, MachineShape] = {
    # E2 shared-core: 2 burstable vCPUs [GCE-GP].
    "e2-micro": MachineShape("e2-micro", "e2", 2, 1),
    "e2-small": MachineShape("e2-small", "e2", 2, 2),
    "e2-medium": MachineShape("e2-medium", "e2", 2, 4),
    **{
        name: shape
        for series, kinds in _CPU_SERIES.items()
        for kind, sizes, gb in kinds
        for name, shape in _series(series, kind, sizes, gb).items()
    },
    **{
        name: MachineShape(name, name.split("-")[0], v, m, gpu, n)
        for name, (v, m, gpu, n) in _GPU_MACHINES.items()
    },
}


def machine_shape(machine_type: str) -> MachineShape:
    """The shape of a Compute Engine machine type: a predefined one from :data:`MACHINE_SHAPES`,
    a custom one (``n2-custom-8-32768``, ``custom-4-16384`` for N1) or a TPU type from
    :data:`TPU_GENERATIONS` (``tpu=True``).

    Raises:
        CatalogError: the name is not a machine type the catalog knows; for a known series with a
            size it does not offer, the message lists the sizes it does.
    """
    if machine_type in MACHINE_SHAPES:
        return MACHINE_SHAPES[machine_type]
    tpu = tpu_machine_types().get(machine_type)
    if tpu:
        gen, chips = tpu
        return MachineShape(
            machine_type,
            machine_type.split("-")[0],
            gen.host_vcpus[chips],
            gen.host_memory_gb[chips],
            tpu=True,
        )
    custom = re.fullmatch(r"(?:([a-z0-9]+)-)?custom-(\d+)-(\d+)", machine_type)
    if custom:
        series = custom.group(1) or "n1"
        if series in CUSTOM_SERIES and int(custom.group(2)) >= 1:
            return MachineShape(
                machine_type, series, int(custom.group(2)), int(custom.group(3)) / 1024
            )
        raise CatalogError(
            f"machine type {machine_type!r}: custom shapes exist for series "
            f"{', '.join(CUSTOM_SERIES)} (e.g. n2-custom-8-32768)"
        )
    prefix = re.fullmatch(r"([a-z0-9]+-[a-z]+)-\d+[a-z]*", machine_type)
    sizes = sorted(
        (m for m in MACHINE_SHAPES if prefix and m.startswith(prefix.group(1) + "-")),
        key=lambda m: MACHINE_SHAPES[m].vcpus,
    )
    if sizes:
        raise CatalogError(
            f"machine type {machine_type!r} is not a {prefix.group(1)} shape; valid: "  # type: ignore[union-attr]
            f"{', '.join(sizes)}"
        )
    raise CatalogError(
        f"machine type {machine_type!r} is not in the catalog; series: "
        f"{', '.join(sorted({s.series for s in MACHINE_SHAPES.values()}))} "
        "(e.g. n2-standard-8); TPU machine types come from a tpu: block, GPU ones from gpu:"
    )


def cpu_machine_problem(machine_type: str) -> str | None:
    """Why ``machine_type`` cannot serve a CPU node pool (or the system pool), else None.

    TPU machine types carry chips tainted ``google.com/tpu`` [GKE-TPU] and GPU machine types
    always carry GPUs tainted ``nvidia.com/gpu`` [GKE-GPU], so the pool's pods would get no
    toleration and no accelerator; such pools are declared with ``tpu:`` / ``gpu:`` instead.
    """
    try:
        shape = machine_shape(machine_type)
    except CatalogError as e:
        return str(e)
    if shape.tpu:
        gen, chips = tpu_machine_types()[machine_type]
        return (
            f"{machine_type} is a TPU machine type ({chips} x TPU {gen.name}); declare the pool "
            f"with tpu: {{generation: {gen.name}, topology: ...}} instead (the machine type is "
            "derived from the slice)"
        )
    if shape.gpu_type:
        return (
            f"{machine_type} carries {shape.gpus} x {shape.gpu_type}; declare the pool with "
            f"gpu: {{type: {shape.gpu_type}, count: {shape.gpus}}} instead"
        )
    return None


def gpu_machine_problem(machine_type: str, gpu: str, count: int) -> str | None:
    """Why ``machine_type`` cannot carry ``count`` x ``gpu`` (a GKE GPU type), else None.

    Accelerator-optimized machine types come with a fixed GPU model and count [GCE-AO].
    """
    try:
        shape = machine_shape(machine_type)
    except CatalogError as e:
        return str(e)
    if shape.gpu_type == gpu and shape.gpus == count:
        return None
    fits = sorted(
        name for name, s in MACHINE_SHAPES.items() if s.gpu_type == gpu and s.gpus == count
    )
    have = f"carries {shape.gpus} x {shape.gpu_type}" if shape.gpu_type else "carries no GPU"
    if shape.tpu:
        have = "is a TPU machine type"
    return (
        f"machine_type {machine_type} {have}, not {count} x {gpu}; "
        + (
            f"for {count} x {gpu} use {', '.join(fits)}"
            if fits
            else f"no machine type offers {count} x {gpu}"
        )
        + " (or leave machine_type out to use the default)"
    )
