"""components.catalog.gpu: machine types per count, Ray Train arguments, driver labels."""

from __future__ import annotations

import pytest

from components import catalog
from components.catalog import CatalogError


@pytest.mark.parametrize(
    ("gpu", "count", "machine"),
    [
        ("nvidia-l4", 1, "g2-standard-4"),
        ("nvidia-l4", 8, "g2-standard-96"),
        ("nvidia-tesla-a100", 16, "a2-megagpu-16g"),
        ("nvidia-a100-80gb", 4, "a2-ultragpu-4g"),
        ("nvidia-h100-80gb", 8, "a3-highgpu-8g"),
        ("nvidia-h200-141gb", 8, "a3-ultragpu-8g"),
        ("nvidia-b200", 8, "a4-highgpu-8g"),
        ("nvidia-gb200", 4, "a4x-highgpu-4g"),
    ],
)
def test_gpu_machine_types(gpu: str, count: int, machine: str) -> None:
    g = catalog.gpu_type(gpu)
    assert g.machine_type(count) == machine
    sc = g.scaling_config(count, nodes=3)
    assert sc == {"use_gpu": True, "num_workers": 3 * count, "resources_per_worker": {"GPU": 1}}


def test_blackwell_arch() -> None:
    assert catalog.gpu_type("nvidia-gb200").arch == "arm64"  # A4X: NVIDIA Grace hosts
    assert catalog.gpu_type("nvidia-b200").arch == "amd64"
    assert catalog.machine_shape("a4x-highgpu-4g").gpu_type == "nvidia-gb200"


def test_gpu_count_no_machine_offers() -> None:
    with pytest.raises(
        CatalogError, match=r"no machine type offers 3 x nvidia-l4; valid counts: 1, 2, 4, 8"
    ):
        catalog.gpu_type("nvidia-l4").machine_type(3)


def test_unknown_gpu_type_lists_known_ones() -> None:
    with pytest.raises(
        CatalogError, match=r"GPU type 'nvidia-t4' is not in the catalog; valid: nvidia-l4"
    ):
        catalog.gpu_type("nvidia-t4")


def test_host_shape_comes_from_the_machine_shapes() -> None:
    g = catalog.gpu_type("nvidia-h100-80gb")
    assert g.host_vcpus[8] == catalog.MACHINE_SHAPES["a3-highgpu-8g"].vcpus == 208
    assert g.host_memory_gb[1] == catalog.MACHINE_SHAPES["a3-highgpu-1g"].memory_gb


@pytest.mark.parametrize(
    ("driver", "label"),
    [("DEFAULT", "default"), ("LATEST", "latest"), ("INSTALLATION_DISABLED", None), (None, None)],
)
def test_gpu_driver_label(driver: str | None, label: str | None) -> None:
    assert catalog.gpu_driver_label(driver) == label


def test_sourced_blackwell_shapes_and_zones() -> None:
    # a4-highgpu-8g 224 vCPUs / 3968 GB and a4x-highgpu-4g 140 / 884: GKE's cluster autoscaler
    # machine table (components/catalog/machines.py); A4X in us-central1-b: cluster-toolkit's
    # GKE A4X test zone (components/catalog/gpu.py).
    a4 = catalog.machine_shape("a4-highgpu-8g")
    assert (a4.vcpus, a4.memory_gb, a4.gpu_type, a4.gpus) == (224, 3968, "nvidia-b200", 8)
    a4x = catalog.machine_shape("a4x-highgpu-4g")
    assert (a4x.vcpus, a4x.memory_gb, a4x.gpus) == (140, 884, 4)
    assert catalog.gpu_type("nvidia-b200").memory_gb == 180
    assert "us-central1-b" in catalog.gpu_type("nvidia-b200").zones
    assert "us-central1-b" in catalog.gpu_type("nvidia-gb200").zones
