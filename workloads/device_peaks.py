"""Peak dense bf16 FLOP/s per device, by the name the framework reports, for MFU in benchmarks.

The figures are those of ``components/catalog.py`` (``TpuGeneration.peak_bf16_tflops``,
``GpuType.peak_bf16_tflops``; sources cited there: Cloud TPU v5e/v6e docs, NVIDIA data sheets),
repeated here because ``workloads/`` must not import ``components`` (it runs in the Ray image);
``tests/test_bench_step.py`` checks the two agree. CPU: no catalog peak -> None (MFU not reported).
"""

from __future__ import annotations

# (substring of the lower-cased device name, catalog key, TFLOP/s); first match wins.
_PEAKS: tuple[tuple[str, str, float], ...] = (
    ("v5 lite", "tpu:v5e", 197.0),
    ("v5e", "tpu:v5e", 197.0),
    ("v6", "tpu:v6e", 918.0),
    ("h200", "gpu:nvidia-h200-141gb", 989.0),
    ("h100", "gpu:nvidia-h100-80gb", 989.0),
    ("a100", "gpu:nvidia-tesla-a100", 312.0),
    ("l4", "gpu:nvidia-l4", 121.0),
)


def catalog_key(platform: str, device_name: str) -> str | None:
    """Catalog entry (``tpu:v5e``, ``gpu:nvidia-l4``) for a device name, or None (e.g. CPU)."""
    if platform.lower() == "cpu":
        return None
    name = device_name.lower()
    for sub, key, _ in _PEAKS:
        if sub in name:
            return key
    return None


def peak_flops(platform: str, device_name: str) -> float | None:
    """Peak bf16 FLOP/s of one device (``jax.Device.device_kind`` or
    ``torch.cuda.get_device_name``), or None when the catalog has no figure (CPU, unknown)."""
    key = catalog_key(platform, device_name)
    return next(t * 1e12 for _, k, t in _PEAKS if k == key) if key else None
