"""components.catalog.tpu: derivations for every topology, and lookups that fail clearly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.catalog import CatalogError, tpu_slice

ALL_SLICES = [
    (name, topo) for name, gen in catalog.TPU_GENERATIONS.items() for topo in gen.topologies
]


@given(st.sampled_from(ALL_SLICES))
def test_hosts_times_chips_per_host_is_chips(gt: tuple[str, str]) -> None:
    s = tpu_slice(*gt)
    assert s.hosts * s.chips_per_host == s.chips
    assert s.chips == math.prod(int(d) for d in s.topology.split("x"))


@pytest.mark.parametrize("gt", ALL_SLICES)
def test_ray_agrees_on_every_slice(gt: tuple[str, str]) -> None:
    """Ray 2.60's own TPU tables (ray.util.tpu.get_tpu_worker_resources, which JaxTrainer's
    ScalingConfig validation calls) accept every catalog slice and give the same workers per
    slice (hosts) and pod type."""
    from ray._private.accelerators.tpu import (
        VALID_TPU_TOPOLOGY,
        normalize_tpu_accelerator_type,
    )
    from ray.util.tpu import get_tpu_worker_resources

    s = tpu_slice(*gt)
    ray_type = normalize_tpu_accelerator_type(s.generation.ray_accelerator_type)
    assert s.topology in VALID_TPU_TOPOLOGY[ray_type]
    workers, resources = get_tpu_worker_resources(
        topology=s.topology,
        accelerator_type=s.generation.ray_accelerator_type,
        resources_per_worker={"TPU": s.chips_per_host},
        num_slices=1,
    )
    assert workers == s.hosts
    assert resources["TPU"] == s.chips_per_host
    assert s.pod_type.startswith(ray_type + "-")


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
    # two TensorCores per chip: the pod type counts cores (4 chips -> v5p-8, v7x-8)
    assert tpu_slice("v5p", "2x2x1").pod_type == "v5p-8"
    assert tpu_slice("tpu7x", "2x2x2").pod_type == "v7x-16"
    assert tpu_slice("tpu7x", "4x4x4").head_resource == "TPU-v7x-128-head"


@pytest.mark.parametrize(
    ("gen", "topo", "machine", "hosts", "label", "ray_type"),
    [
        ("tpu7x", "2x2x1", "tpu7x-standard-4t", 1, "tpu7x", "TPU-V7X"),
        ("tpu7x", "4x4x4", "tpu7x-standard-4t", 16, "tpu7x", "TPU-V7X"),
        ("v5p", "2x2x1", "ct5p-hightpu-4t", 1, "tpu-v5p-slice", "TPU-V5P"),
        ("v5p", "2x4x4", "ct5p-hightpu-4t", 8, "tpu-v5p-slice", "TPU-V5P"),
    ],
)
def test_2026_tpus(
    gen: str, topo: str, machine: str, hosts: int, label: str, ray_type: str
) -> None:
    s = tpu_slice(gen, topo)
    assert (s.machine_type, s.hosts, s.chips_per_host) == (machine, hosts, 4)
    assert s.node_labels[catalog.TPU_ACCELERATOR_LABEL] == label
    assert s.scaling_config()["accelerator_type"] == ray_type
    assert label in catalog.NAP_RESOURCE_TYPES


def test_tpu7x_facts() -> None:
    gen = catalog.tpu_generation("tpu7x")
    assert (gen.hbm_gb, gen.peak_bf16_tflops, gen.min_gke_version) == (
        192,
        2307.0,
        "1.34.0-gke.2201000",
    )
    assert tpu_slice("tpu7x", "4x4x4").peak_bf16_tflops == 64 * 2307.0


def test_workload_policy_only_for_multi_host_tpu7x() -> None:
    assert tpu_slice("tpu7x", "2x2x2").workload_policy == {
        "type": "HIGH_THROUGHPUT",
        "accelerator_topology": "2x2x2",
    }
    assert tpu_slice("tpu7x", "2x2x1").workload_policy is None  # single host: no policy
    assert tpu_slice("v5p", "2x2x2").workload_policy is None  # v5p: COMPACT + tpu_topology
    assert tpu_slice("v6e", "4x4").workload_policy is None


def test_2d_topology_refused_for_3d_generation() -> None:
    with pytest.raises(
        CatalogError, match=r"topology 4x4 is not a tpu7x topology; valid: 2x2x1, 2x2x2.*tpu7x\)"
    ):
        tpu_slice("tpu7x", "4x4")
    with pytest.raises(CatalogError, match=r"topology 2x2x1 is not a v6e topology"):
        tpu_slice("v6e", "2x2x1")


def test_unknown_topology_lists_valid_ones() -> None:
    with pytest.raises(CatalogError, match=r"topology 3x3 is not a v6e topology; valid: 1x1, 2x2"):
        tpu_slice("v6e", "3x3")


def test_unknown_generation() -> None:
    with pytest.raises(CatalogError, match=r"'v9z'.*valid: v5e, v6e"):
        tpu_slice("v9z", "2x2")


def test_tpu_machine() -> None:
    assert catalog.tpu_machine("ct6e-standard-4t") == ("v6e", 4)
    assert catalog.tpu_machine("ct5lp-hightpu-1t") == ("v5e", 1)
    assert catalog.tpu_machine("n2-standard-8") is None


def test_sourced_tpu_zones_and_hosts() -> None:
    # https://docs.cloud.google.com/tpu/docs/types-zones (North America): TPU7x in
    # us-central1-c; v5p in us-central1-a and us-east5-a. TPU7x 4-chip VM: 224 vCPUs, 960 GB
    # (https://docs.cloud.google.com/tpu/docs/tpu7x).
    tpu7x = catalog.tpu_generation("tpu7x")
    assert "us-central1-c" in tpu7x.zones
    assert (tpu7x.host_vcpus[4], tpu7x.host_memory_gb[4]) == (224, 960)
    assert {"us-central1-a", "us-east5-a"} <= set(catalog.tpu_generation("v5p").zones)
