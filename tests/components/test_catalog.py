"""Accelerator catalog: derivations for every topology, and lookups that fail clearly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.catalog import CatalogError, tpu_slice

ALL_SLICES = [(gen, topo) for gen in catalog.TPU_GENERATIONS for topo in catalog.TPU_TOPOLOGIES]


@given(st.sampled_from(ALL_SLICES))
def test_hosts_times_chips_per_host_is_chips(gt: tuple[str, str]) -> None:
    s = tpu_slice(*gt)
    assert s.hosts * s.chips_per_host == s.chips
    assert s.chips == math.prod(int(d) for d in s.topology.split("x"))


@given(st.sampled_from(ALL_SLICES))
def test_single_host_iff_one_host(gt: tuple[str, str]) -> None:
    s = tpu_slice(*gt)
    assert s.multi_host == (s.hosts > 1)
    # Multi-host slices always use the 4-chip machine type; single-host uses 1/4/8 chips.
    if s.multi_host:
        assert s.chips_per_host == 4
    else:
        assert s.chips_per_host == s.chips


@given(st.sampled_from(ALL_SLICES), st.integers(min_value=1, max_value=8))
def test_scaling_config_matches_slice(gt: tuple[str, str], slices: int) -> None:
    s = tpu_slice(*gt)
    sc = s.scaling_config(slices)
    assert sc["num_workers"] == s.hosts * (slices if s.multi_host else 1)
    assert sc["resources_per_worker"] == {"TPU": s.chips_per_host}
    assert sc["topology"] == s.topology
    assert sc["accelerator_type"] == s.generation.ray_accelerator_type
    assert sc["use_tpu"] is True


@pytest.mark.parametrize(
    ("gen", "topo", "machine", "hosts", "labels"),
    [
        ("v6e", "4x4", "ct6e-standard-4t", 4, ("tpu-v6e-slice", "4x4")),
        ("v6e", "2x2", "ct6e-standard-4t", 1, ("tpu-v6e-slice", "2x2")),
        ("v6e", "1x1", "ct6e-standard-1t", 1, ("tpu-v6e-slice", "1x1")),
        ("v6e", "2x4", "ct6e-standard-8t", 1, ("tpu-v6e-slice", "2x4")),
        ("v6e", "16x16", "ct6e-standard-4t", 64, ("tpu-v6e-slice", "16x16")),
        ("v5e", "2x2", "ct5lp-hightpu-4t", 1, ("tpu-v5-lite-podslice", "2x2")),
        ("v5e", "8x16", "ct5lp-hightpu-4t", 32, ("tpu-v5-lite-podslice", "8x16")),
    ],
)
def test_design_table(gen: str, topo: str, machine: str, hosts: int, labels: tuple) -> None:
    s = tpu_slice(gen, topo)
    assert s.machine_type == machine
    assert s.hosts == hosts
    assert s.node_labels == {
        catalog.TPU_ACCELERATOR_LABEL: labels[0],
        catalog.TPU_TOPOLOGY_LABEL: labels[1],
    }
    assert s.taint.toleration() == {
        "key": "google.com/tpu",
        "operator": "Equal",
        "value": "present",
        "effect": "NoSchedule",
    }


def test_pod_type_and_head_resource() -> None:
    assert tpu_slice("v6e", "4x4").pod_type == "v6e-16"
    assert tpu_slice("v6e", "4x4").head_resource == "TPU-v6e-16-head"
    assert tpu_slice("v5e", "2x2").pod_type == "v5litepod-4"


def test_unknown_topology_lists_valid_ones() -> None:
    with pytest.raises(CatalogError, match=r"topology 3x3 is not a v6e topology; valid: 1x1, 2x2"):
        tpu_slice("v6e", "3x3")


def test_unknown_generation() -> None:
    with pytest.raises(CatalogError, match=r"'v9z'.*valid: v5e, v6e"):
        tpu_slice("v9z", "2x2")


@pytest.mark.parametrize(
    ("gpu", "count", "machine"),
    [
        ("nvidia-l4", 1, "g2-standard-4"),
        ("nvidia-l4", 8, "g2-standard-96"),
        ("nvidia-tesla-a100", 16, "a2-megagpu-16g"),
        ("nvidia-a100-80gb", 4, "a2-ultragpu-4g"),
        ("nvidia-h100-80gb", 8, "a3-highgpu-8g"),
        ("nvidia-h200-141gb", 8, "a3-ultragpu-8g"),
    ],
)
def test_gpu_machine_types(gpu: str, count: int, machine: str) -> None:
    g = catalog.gpu_type(gpu)
    assert g.machine_type(count) == machine
    sc = g.scaling_config(count, nodes=3)
    assert sc == {"use_gpu": True, "num_workers": 3 * count, "resources_per_worker": {"GPU": 1}}


def test_gpu_count_no_machine_offers() -> None:
    with pytest.raises(
        CatalogError, match=r"no machine type offers 3 x nvidia-l4; valid counts: 1, 2, 4, 8"
    ):
        catalog.gpu_type("nvidia-l4").machine_type(3)


def test_nap_resource_types_cover_catalog() -> None:
    for gen in catalog.TPU_GENERATIONS.values():
        assert gen.gke_accelerator in catalog.NAP_RESOURCE_TYPES
    for name in catalog.GPU_TYPES:
        assert name in catalog.NAP_RESOURCE_TYPES


def test_gke_version_ordering() -> None:
    v = catalog.parse_gke_version
    assert v("1.31.2-gke.1115000") > v("1.31.2-gke.1000")
    assert v("1.30") < v("1.31.2-gke.1115000")
    with pytest.raises(ValueError, match="not a GKE version"):
        v("latest")
