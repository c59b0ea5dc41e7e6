"""components.catalog.machines: shapes of predefined, custom and TPU machine types, and why a
machine type cannot serve a pool."""

from __future__ import annotations

import pytest

from components.catalog import CatalogError, cpu_machine_problem, gpu_machine_problem, machine_shape


def test_predefined_custom_and_tpu_shapes() -> None:
    assert (machine_shape("n2-standard-8").vcpus, machine_shape("n2-standard-8").memory_gb) == (
        8,
        32,
    )
    assert machine_shape("custom-4-16384").memory_gb == 16
    assert machine_shape("n2-custom-8-32768").series == "n2"
    tpu = machine_shape("ct6e-standard-4t")
    assert tpu.tpu and tpu.vcpus == 180


def test_unknown_size_lists_the_series_sizes() -> None:
    with pytest.raises(
        CatalogError, match=r"'n2-standard-3' is not a n2-standard shape; valid: n2-standard-2"
    ):
        machine_shape("n2-standard-3")
    with pytest.raises(CatalogError, match=r"custom shapes exist for series n1, n2"):
        machine_shape("c3-custom-4-8192")


def test_pool_problems() -> None:
    assert cpu_machine_problem("n2-standard-8") is None
    assert "declare the pool with gpu: {type: nvidia-l4, count: 1}" in (
        cpu_machine_problem("g2-standard-4") or ""
    )
    assert "tpu: {generation: v6e" in (cpu_machine_problem("ct6e-standard-4t") or "")
    assert gpu_machine_problem("a3-highgpu-8g", "nvidia-h100-80gb", 8) is None
    assert "for 8 x nvidia-h100-80gb use a3-highgpu-8g" in (
        gpu_machine_problem("a3-highgpu-4g", "nvidia-h100-80gb", 8) or ""
    )
