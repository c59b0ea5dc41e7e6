"""Device-peak lookup for the step benchmarks agrees with the catalog."""

from __future__ import annotations

import pytest

from components.catalog import gpu_type, tpu_generation
from workloads.device_peaks import catalog_key, peak_flops


@pytest.mark.parametrize(
    ("platform", "name", "key"),
    [
        ("tpu", "TPU v5 lite", "tpu:v5e"),
        ("tpu", "TPU v6 lite", "tpu:v6e"),
        ("gpu", "NVIDIA H100 80GB HBM3", "gpu:nvidia-h100-80gb"),
        ("cuda", "NVIDIA H200", "gpu:nvidia-h200-141gb"),
        ("cuda", "NVIDIA A100-SXM4-40GB", "gpu:nvidia-tesla-a100"),
        ("cuda", "NVIDIA L4", "gpu:nvidia-l4"),
        ("cpu", "cpu", None),
    ],
)
def test_device_names_map_to_catalog_peaks(platform: str, name: str, key: str | None) -> None:
    assert catalog_key(platform, name) == key
    if key is None:
        assert peak_flops(platform, name) is None
        return
    kind, entry = key.split(":")
    want = (tpu_generation(entry) if kind == "tpu" else gpu_type(entry)).peak_bf16_tflops
    assert peak_flops(platform, name) == want * 1e12
