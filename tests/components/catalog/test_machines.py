"""components.catalog.machines: shapes of predefined, custom and TPU machine types, and why a
machine type cannot serve a pool."""

from __future__ import annotations

import pytest

from components import catalog
from components.catalog import CatalogError, cpu_machine_problem, gpu_machine_problem, machine_shape
from components.nodepools.render import node_pool_specs
from components.plan.plan import plan
from components.stack.loader import validate
from tests.components.config.test_stack import base, one_problem


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


# ---------------------------------------------------------------- from test_machine_shapes.py: Machine shapes: every ``machine_type`` in a stack is checked against the catalog's sourced


def test_cpu_pool_with_tpu_machine_type_is_refused() -> None:
    """A TPU machine type in a CPU pool would give pods no ``google.com/tpu`` toleration and no
    chips (https://cloud.google.com/kubernetes-engine/docs/concepts/tpus); the message says to
    declare a ``tpu:`` pool."""
    data = base()
    data["node_pools"][0]["machine_type"] = "ct5lp-hightpu-4t"
    line = one_problem(data, "node_pools[cpu]", "ct5lp-hightpu-4t", "tpu: {generation: v5e")
    assert "0 TPU chips" not in line


def test_cpu_pool_with_gpu_machine_type_is_refused() -> None:
    """A2/A3/G2 types always carry GPUs
    (https://cloud.google.com/compute/docs/accelerator-optimized-machines)."""
    data = base()
    data["node_pools"][0]["machine_type"] = "a2-highgpu-8g"
    one_problem(data, "node_pools[cpu]", "8 x nvidia-tesla-a100", "gpu: {type: nvidia-tesla-a100")


def test_gpu_pool_machine_type_must_carry_that_gpu() -> None:
    """``a2-highgpu-8g`` carries A100 40GB GPUs, not H100s
    (https://cloud.google.com/compute/docs/accelerator-optimized-machines)."""
    data = base()
    data["node_pools"][2] = {
        "name": "h100",
        "gpu": {"type": "nvidia-h100-80gb", "count": 8},
        "machine_type": "a2-highgpu-8g",
        "allow_unlisted_zone": True,
    }
    one_problem(data, "node_pools[h100]", "a2-highgpu-8g", "a3-highgpu-8g")


def test_gpu_pool_machine_type_count_must_match() -> None:
    data = base()
    data["node_pools"][2]["machine_type"] = "g2-standard-24"  # 2 x L4, pool asks for 1
    one_problem(data, "node_pools[l4]", "2 x nvidia-l4", "g2-standard-4")


def test_gpu_pool_larger_host_of_same_gpu_is_accepted_and_sized_from_its_shape() -> None:
    """g2-standard-16 carries one L4 with 16 vCPUs / 64 GB: capacity comes from that shape, not
    from the default g2-standard-4."""
    data = base()
    data["node_pools"][2]["machine_type"] = "g2-standard-16"
    cfg = validate(data)
    spec = next(s for s in node_pool_specs(plan(cfg)) if s.name == "l4")
    assert spec.capacity["cpu"] > 14 and spec.capacity["memory"] > 50


@pytest.mark.parametrize(
    ("machine_type", "needle"),
    [
        ("n2-standard-6", "valid: n2-standard-2"),
        ("n2-standrd-8", "not in the catalog"),
        ("m3-ultramem-32", "not in the catalog"),
        ("fancy-custom-4-4096", "custom shapes exist for series"),
    ],
)
def test_unknown_cpu_shapes_are_refused(machine_type: str, needle: str) -> None:
    """Sizes per series from https://cloud.google.com/compute/docs/general-purpose-machines and
    custom shapes from https://cloud.google.com/compute/docs/instances/creating-instance-with-custom-machine-type."""
    data = base()
    data["node_pools"][0]["machine_type"] = machine_type
    one_problem(data, "node_pools[cpu]", machine_type, needle)


def test_system_pool_machine_type_is_checked() -> None:
    data = base()
    data["cluster"] = {"system_pool": {"machine_type": "ct6e-standard-4t"}}
    one_problem(data, "cluster.system_pool", "TPU machine type")


def test_custom_and_predefined_shapes_are_accepted_with_their_size() -> None:
    data = base()
    data["node_pools"][0]["machine_type"] = "n2-custom-6-24576"
    cfg = validate(data)
    spec = next(s for s in node_pool_specs(plan(cfg)) if s.name == "cpu")
    assert spec.capacity["cpu"] == pytest.approx(6 * 0.94)
    assert catalog.machine_shape("n1-standard-4").memory_gb == pytest.approx(15.0)
    assert catalog.machine_shape("e2-medium").vcpus == 2


def test_every_default_gpu_machine_type_carries_its_gpu() -> None:
    """One source: the GPU catalog's default machine types agree with the machine table."""
    for g in catalog.GPU_TYPES.values():
        for count, machine in g.machine_types.items():
            shape = catalog.machine_shape(machine)
            assert (shape.gpu_type, shape.gpus) == (g.name, count)
            assert catalog.gpu_machine_problem(machine, g.name, count) is None


def test_tpu_machine_types_are_known_shapes() -> None:
    for gen in catalog.TPU_GENERATIONS.values():
        for machine in gen.machine_types.values():
            assert catalog.machine_shape(machine).tpu
