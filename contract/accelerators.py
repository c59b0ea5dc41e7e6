"""Accelerator facts both sides need: one copy, read by the catalog and by the workloads.

Standard library only: ``workloads/`` (in the Ray image) and ``components/catalog`` (where the
infrastructure is provisioned) both import this module, so a figure is written once.
``components.catalog`` adds the infrastructure-only facts (machine types, zones, GKE versions,
host shapes) to each entry; benchmarks use :func:`peak_flops` for MFU.

Sources:

* [TPU-V5E] https://cloud.google.com/tpu/docs/v5e: 16 GB HBM2 and 197 TFLOP/s peak bf16 per chip.
* [TPU-V6E] https://cloud.google.com/tpu/docs/v6e: 32 GB HBM and 918 TFLOP/s peak bf16 per chip.
* [TPU-V5P] https://cloud.google.com/tpu/docs/v5p and the comparison table of [TPU-7X]: 95 GiB HBM
  and 459 TFLOP/s peak bf16 per chip, two TensorCores per chip.
* [TPU-7X] https://cloud.google.com/tpu/docs/tpu7x: two TensorCores, 192 GiB HBM and 2307 TFLOP/s
  peak bf16 per chip.
* [RAY-TPU] ``ray/_private/accelerators/tpu.py`` and ``ray/util/accelerators/accelerators.py``
  (Ray 2.60.0): accelerator types ``TPU-V5LITEPOD``, ``TPU-V6E``, ``TPU-V5P``, ``TPU-V7X``; pod
  types ``v5litepod-N``, ``v6e-N``, ``v5p-N``, ``v7x-N`` (N counts TensorCores;
  ``SINGLE_CORE_TPU_TYPES``: v5e and v6e have one per chip). Ray normalises ``tpu7x-8`` to
  ``v7x-8`` (``normalize_tpu_accelerator_type``).
* [NVIDIA] Peak dense bf16 tensor throughput from NVIDIA's data sheets: L4 121 TFLOP/s, A100
  312 TFLOP/s, H100 SXM 989 TFLOP/s, H200 989 TFLOP/s, B200 (HGX) 2250 TFLOP/s, GB200 2500 TFLOP/s
  (the Blackwell figures and the B200 180 GB / GB200 186 GB memory: NVIDIA's GB200 NVL72 /
  HGX B200 table, FP16/BF16 Tensor Core 5 and 4.5 PFLOPS per GPU with 2:4 sparsity, so 2.5 and
  2.25 dense, as reproduced at https://zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html and
  https://glennklockwood.com/garden/processors/B200; not read on nvidia.com itself).
* [RAY-GPU] ``ray/_private/accelerators/nvidia_gpu.py`` (Ray 2.60.0)
  ``_gpu_name_to_accelerator_type``: the NVML device name's model token (``NVIDIA L4`` -> ``L4``,
  ``NVIDIA A100-SXM4-80GB`` -> ``A100``, ``NVIDIA H100 80GB HBM3`` -> ``H100``), the constants of
  ``ray/util/accelerators/accelerators.py`` (``NVIDIA_L4 = "L4"``, ``NVIDIA_A100``,
  ``NVIDIA_H100``, ``NVIDIA_H200``, ``NVIDIA_B200``, ``NVIDIA_GB200``).
* [DEVICE-NAMES] what the frameworks report: ``jax.Device.device_kind`` (``TPU v5 lite`` on v5e,
  ``TPU v6 lite`` on v6e) and ``torch.cuda.get_device_name`` (``NVIDIA H100 80GB HBM3``,
  ``NVIDIA A100-SXM4-40GB``, ``NVIDIA L4``). Generations without a recorded device name (v5p,
  TPU7x, A100 80GB, B200, GB200) are not matched: MFU is not reported there rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True)
class TpuFacts:
    """The workload-facing facts of one TPU generation.

    Attributes:
        name: the short name of the stack config (``v5e``, ``v6e``, ``v5p``, ``tpu7x``).
        ray_accelerator_type: ``ScalingConfig(accelerator_type=...)`` [RAY-TPU].
        pod_type_prefix: prefix of the TPU pod type (``v6e`` -> ``v6e-16``) [RAY-TPU].
        hbm_gb: high-bandwidth memory per chip, GB.
        peak_bf16_tflops: peak dense bf16 throughput per chip, TFLOP/s.
        tensorcores_per_chip: TensorCores per chip; pod types count TensorCores [RAY-TPU].
        device_names: lower-case substrings of ``jax.Device.device_kind`` that mean this
            generation [DEVICE-NAMES]; empty when none is recorded.
    """

    name: str
    ray_accelerator_type: str
    pod_type_prefix: str
    hbm_gb: int
    peak_bf16_tflops: float
    tensorcores_per_chip: int = 1
    device_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuFacts:
    """The workload-facing facts of one GPU type.

    Attributes:
        name: GKE accelerator type (``nvidia-l4``), the stack config's ``gpu.type``.
        display: the product name.
        memory_gb: memory per GPU, GB.
        peak_bf16_tflops: peak dense bf16 throughput per GPU, TFLOP/s [NVIDIA].
        device_names: lower-case substrings of ``torch.cuda.get_device_name`` that mean this
            type [DEVICE-NAMES]; empty when none is recorded.
        ray_accelerator_type: the ``accelerator_type:<name>`` resource Ray gives a node with
            this GPU [RAY-GPU] (``LLMConfig(accelerator_type=...)``, ``@ray.remote
            (accelerator_type=...)``).
    """

    name: str
    display: str
    memory_gb: int
    peak_bf16_tflops: float
    device_names: tuple[str, ...] = ()
    ray_accelerator_type: str = ""


_Facts = TypeVar("_Facts", TpuFacts, GpuFacts)


def _by_name(*entries: _Facts) -> dict[str, _Facts]:
    return {e.name: e for e in entries}


# name, Ray accelerator type, pod type prefix, HBM GB, peak bf16 TFLOP/s, TensorCores, device names
TPUS: Mapping[str, TpuFacts] = _by_name(
    TpuFacts("v5e", "TPU-V5LITEPOD", "v5litepod", 16, 197.0, 1, ("v5 lite", "v5e")),  # [TPU-V5E]
    TpuFacts("v6e", "TPU-V6E", "v6e", 32, 918.0, 1, ("v6",)),  # [TPU-V6E]
    TpuFacts("v5p", "TPU-V5P", "v5p", 95, 459.0, 2),  # [TPU-V5P]
    TpuFacts("tpu7x", "TPU-V7X", "v7x", 192, 2307.0, 2),  # [TPU-7X]
)

# name, product, memory GB, peak bf16 TFLOP/s, device names, Ray accelerator type [NVIDIA],
# [DEVICE-NAMES], [RAY-GPU]
GPUS: Mapping[str, GpuFacts] = _by_name(
    GpuFacts("nvidia-l4", "NVIDIA L4", 24, 121.0, ("l4",), "L4"),
    GpuFacts("nvidia-tesla-a100", "NVIDIA A100 40GB", 40, 312.0, ("a100",), "A100"),
    GpuFacts("nvidia-a100-80gb", "NVIDIA A100 80GB", 80, 312.0, (), "A100"),
    GpuFacts("nvidia-h100-80gb", "NVIDIA H100 80GB", 80, 989.0, ("h100",), "H100"),
    # A3 Mega's H100 (GKE's own accelerator name; the same chip as nvidia-h100-80gb).
    GpuFacts("nvidia-h100-mega-80gb", "NVIDIA H100 80GB (A3 Mega)", 80, 989.0, (), "H100"),
    GpuFacts("nvidia-h200-141gb", "NVIDIA H200 141GB", 141, 989.0, ("h200",), "H200"),
    GpuFacts("nvidia-b200", "NVIDIA B200", 180, 2250.0, (), "B200"),
    GpuFacts("nvidia-gb200", "NVIDIA GB200", 186, 2500.0, (), "GB200"),
)


def _match_order() -> list[tuple[str, str, float]]:
    """``(device-name substring, key, TFLOP/s)``, longest substring first, so ``h200`` is tried
    before a shorter one it contains and ``v5 lite`` before ``v5e``."""
    rows = [
        (sub, f"tpu:{t.name}", t.peak_bf16_tflops) for t in TPUS.values() for sub in t.device_names
    ]
    rows += [
        (sub, f"gpu:{g.name}", g.peak_bf16_tflops) for g in GPUS.values() for sub in g.device_names
    ]
    return sorted(rows, key=lambda r: -len(r[0]))


_MATCH = _match_order()


def catalog_key(platform: str, device_name: str) -> str | None:
    """The entry (``tpu:v5e``, ``gpu:nvidia-l4``) a framework's device name means, or None
    (CPU, or a device with no recorded name) [DEVICE-NAMES].

    Args:
        platform: ``tpu``, ``gpu``, ``cuda`` or ``cpu`` (case-insensitive).
        device_name: ``jax.Device.device_kind`` or ``torch.cuda.get_device_name()``.
    """
    if platform.lower() == "cpu":
        return None
    name = device_name.lower()
    return next((key for sub, key, _ in _MATCH if sub in name), None)


def peak_flops(platform: str, device_name: str) -> float | None:
    """Peak dense bf16 FLOP/s (not TFLOP/s) of one device, or None when there is no figure
    (CPU, unknown device): the denominator of MFU."""
    key = catalog_key(platform, device_name)
    return next((t * 1e12 for _, k, t in _MATCH if k == key), None) if key else None
