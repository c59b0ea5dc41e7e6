"""contract.accelerators: the one copy of the accelerator facts; device names map to the
catalog's entries and peaks; the catalog reads its figures from here."""

from __future__ import annotations

import pytest

from components.catalog import GPU_TYPES, TPU_GENERATIONS, gpu_type, tpu_generation
from contract.accelerators import GPUS, TPUS, catalog_key, peak_flops


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
        ("CPU", "NVIDIA L4", None),  # the platform decides: CPU has no peak
        ("gpu", "Tesla T4", None),  # not in the catalog
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


def test_catalog_takes_its_figures_from_the_contract() -> None:
    """Every catalog generation / GPU type has a contract entry and the same figures."""
    assert set(TPU_GENERATIONS) == set(TPUS)
    assert set(GPU_TYPES) == set(GPUS)
    for name, gen in TPU_GENERATIONS.items():
        f = TPUS[name]
        assert (
            gen.ray_accelerator_type,
            gen.pod_type_prefix,
            gen.hbm_gb,
            gen.peak_bf16_tflops,
            gen.tensorcores_per_chip,
        ) == (
            f.ray_accelerator_type,
            f.pod_type_prefix,
            f.hbm_gb,
            f.peak_bf16_tflops,
            f.tensorcores_per_chip,
        )
    for name, g in GPU_TYPES.items():
        f = GPUS[name]
        assert (g.display, g.memory_gb, g.peak_bf16_tflops) == (
            f.display,
            f.memory_gb,
            f.peak_bf16_tflops,
        )


def test_design_figures() -> None:
    """design.md's table: v5e 16 GB / 197 TFLOP/s, v6e 32 GB / 918 TFLOP/s, Ray types."""
    assert (TPUS["v5e"].hbm_gb, TPUS["v5e"].peak_bf16_tflops) == (16, 197.0)
    assert (TPUS["v6e"].hbm_gb, TPUS["v6e"].peak_bf16_tflops) == (32, 918.0)
    assert TPUS["v5e"].ray_accelerator_type == "TPU-V5LITEPOD"
    assert TPUS["v6e"].ray_accelerator_type == "TPU-V6E"
    assert TPUS["tpu7x"].tensorcores_per_chip == 2


def test_no_device_name_matches_two_entries() -> None:
    """A device-name substring of one entry is not a substring of another's recorded name,
    except where the longer one is tried first (longest match wins)."""
    subs = [s for t in TPUS.values() for s in t.device_names] + [
        s for g in GPUS.values() for s in g.device_names
    ]
    assert len(subs) == len(set(subs))
    assert catalog_key("tpu", "TPU v5 lite") == "tpu:v5e"  # "v5 lite" before anything shorter


def test_ray_knows_the_accelerator_types() -> None:
    """Ray 2.60's accelerator constants name every TPU generation's Ray type."""
    from ray.util import accelerators

    known = {v for k, v in vars(accelerators).items() if k.startswith("GOOGLE_TPU")}
    assert {t.ray_accelerator_type for t in TPUS.values()} <= known
