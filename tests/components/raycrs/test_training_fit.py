"""The training fit check (components/raycrs/training_fit.py, rule ``job_memory_fits``) through
the stack loader's rules (what ``raygke check`` runs), on prod's jobs: a job that cannot fit its
devices is refused with its bytes per device and the fixes in order; the same job fits sharded."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config.stack import StackConfig
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.serving import dataset_context
from components.raycrs.training_fit import JobFit, job_fit, training_fit_lines
from components.stack.loader import stack_data_from_yaml, validate
from tests.helpers import ROOT, stack

BIG = {"d_model": 8192, "n_layers": 64, "n_heads": 64}


@pytest.fixture(scope="module")
def prod_data() -> dict[str, Any]:
    return stack_data_from_yaml((ROOT / "Pulumi.prod.yaml").read_text())


def _with_args(data: dict[str, Any], job: str, **args: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    entry = next(j for j in data["jobs"] if j["name"] == job)
    entry["args"] = {**entry.get("args", {}), **args}
    # the served model follows train-lm-h100: serve a gs:// path instead (its shape is unknown
    # offline), so only the training rule speaks
    for svc in data.get("services", []):
        svc["checkpoint"] = "gs://ray-gke-prod-ray-prod-checkpoints/x"
    return data


def _fit(cfg: StackConfig, name: str) -> JobFit | None:
    """The fit of job ``name`` of ``cfg``."""
    job = next(j for j in cfg.jobs if j.name == name)
    return job_fit(plan(cfg), job, dataset_context(cfg.jobs))


def _fit_problems(data: dict[str, Any]) -> list[Any]:
    with pytest.raises(StackConfigError) as e:
        validate(data)
    return [p for p in e.value.problems if p.rule == "job_memory_fits"]


@pytest.mark.parametrize("name", ["dev", "prod", "scale"])
def test_the_shipped_jobs_fit_replicated_or_as_they_shard(name: str) -> None:
    cfg = stack(name)  # validates: every rule, job_memory_fits included
    fits = {j.name: f for j in cfg.jobs if (f := _fit(cfg, j.name)) is not None}
    assert fits, name
    for job, f in fits.items():
        assert f.estimate.fits
        if (name, job) == ("prod", "train-lm-jax-v6e"):  # 1.2B parameters over a slice's chips
            assert (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 16)
            continue
        # auto picks DDP for the shipped small model (replicated for the other trainers)
        assert f.estimate.parallelism in ("ddp", "replicated")
        assert f.estimate.degree == 1
    lines = [ln for ln in training_fit_lines(plan(cfg), cfg.jobs) if "fit not checked" not in ln]
    assert len(lines) == len(fits)  # prod's fine-tuning job: its model's size is not read
    assert all(" GB per device (" in line and " GB usable" in line for line in lines)


def test_prods_v6e_job_at_51b_parameters_is_refused(prod_data: dict[str, Any]) -> None:
    (p,) = _fit_problems(_with_args(prod_data, "train-lm-jax-v6e", **BIG))
    assert p.path == "jobs[train-lm-jax-v6e].args"
    text = str(p)
    # auto already shards over the slice's 16 chips (the JAX mesh's fsdp axis), still too big
    assert "train_lm_jax does not fit a TPU v6e chip (32 GB HBM): 88.20 GB per device" in text
    assert "(fsdp over 16; 51,550.6M parameters" in text
    # the fixes the JAX trainer lacks are said, and the batch alone cannot help
    assert "1) activation checkpointing: not available in this trainer" in text
    assert "a smaller model is needed" in text


JAX_6B = {"d_model": 4096, "n_layers": 32, "n_heads": 32, "batch_size": 8}


def test_a_jax_job_refused_data_only_fits_on_the_slices_fsdp_axis(
    prod_data: dict[str, Any],
) -> None:
    """6.4B parameters: a replica's states are over a v6e chip's 29.9 GB usable; the fix is
    the mesh's fsdp axis over one slice's 16 chips (not the job's two slices: fsdp stays inside
    a slice, slices replicate on the data axis)."""
    (p,) = _fit_problems(_with_args(prod_data, "train-lm-jax-v6e", parallelism="data", **JAX_6B))
    text = str(p)
    assert "80.88 GB per device (replicated;" in text
    assert text.endswith("1) parallelism: fsdp over a slice's 16 chips: 9.95 GB per device (fits)")
    cfg = validate(_with_args(prod_data, "train-lm-jax-v6e", parallelism="fsdp", **JAX_6B))
    f = _fit(cfg, "train-lm-jax-v6e")
    assert f is not None and f.estimate.fits
    assert (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 16)
    # auto: the smallest fsdp degree whose estimate fits with the margin, as the trainer picks
    cfg = validate(_with_args(prod_data, "train-lm-jax-v6e", parallelism="auto", **JAX_6B))
    f = _fit(cfg, "train-lm-jax-v6e")
    assert f is not None and f.estimate.fits
    assert (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 8)


def test_a_jax_shard_degree_must_divide_a_slice(prod_data: dict[str, Any]) -> None:
    data = _with_args(prod_data, "train-lm-jax-v6e", parallelism="fsdp", shard_degree=3)
    (p,) = _fit_problems(data)
    assert p.path == "jobs[train-lm-jax-v6e].args.shard_degree"
    assert "shard_degree 3 does not divide the 16 devices of a slice" in str(p)


def test_a_torch_job_refused_replicated_fits_sharded(prod_data: dict[str, Any]) -> None:
    (p,) = _fit_problems(_with_args(prod_data, "train-lm-h100", parallelism="ddp", **BIG))
    text = str(p)
    assert p.path == "jobs[train-lm-h100].args"
    assert "984 GB per device (ddp;" in text
    # fixes in order: fsdp over the job's 16 GPUs, then activation checkpointing
    fsdp = text.index("1) parallelism: fsdp over the job's 16 devices: 205 GB per device")
    assert fsdp < text.index("2) activation_checkpointing: true: 69.56 GB per device (fits)")
    sharded = _with_args(
        prod_data,
        "train-lm-h100",
        parallelism="fsdp",
        activation_checkpointing=True,
        batch_size=16,
        **BIG,
    )
    cfg = validate(sharded)
    f = _fit(cfg, "train-lm-h100")
    assert f is not None and f.estimate.fits
    assert (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 16)


def test_auto_shards_what_a_replica_cannot_hold(prod_data: dict[str, Any]) -> None:
    # 6.5B parameters: a replica's states (12 bytes each with Muon, +4 DDP buckets) are over
    # the H100's 71 GB usable; auto picks fsdp over the 16 GPUs, which fits
    args = {"d_model": 4096, "n_layers": 32, "n_heads": 32, "batch_size": 8}
    cfg = validate(_with_args(prod_data, "train-lm-h100", **args))
    f = _fit(cfg, "train-lm-h100")
    assert f is not None and f.estimate.fits
    assert (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 16)
    forced = _with_args(prod_data, "train-lm-h100", parallelism="ddp", **args)
    (p,) = _fit_problems(forced)
    assert "(ddp;" in str(p)


def test_a_shard_degree_must_divide_the_workers(prod_data: dict[str, Any]) -> None:
    (p,) = _fit_problems(_with_args(prod_data, "train-lm-h100", parallelism="fsdp", shard_degree=3))
    assert p.path == "jobs[train-lm-h100].args.shard_degree"
    assert "does not divide the job's 16 workers" in str(p)


def test_device_memory_gb_makes_auto_shard_for_a_smaller_device_and_is_at_most_the_devices(
    prod_data: dict[str, Any],
) -> None:
    # 1.6B parameters (d_model 2048, 32 layers): a replica fits an H100's 80 GB with margin, so
    # auto keeps DDP; taken as a 24 GB device, the same job's auto estimate shards it
    args = {"d_model": 2048, "n_layers": 32, "n_heads": 16, "batch_size": 8}
    cfg = validate(_with_args(prod_data, "train-lm-h100", **args))
    f = _fit(cfg, "train-lm-h100")
    assert f is not None and (f.estimate.parallelism, f.estimate.degree) == ("ddp", 1)
    cfg = validate(_with_args(prod_data, "train-lm-h100", device_memory_gb=24, **args))
    f = _fit(cfg, "train-lm-h100")
    assert f is not None and (f.estimate.parallelism, f.estimate.degree) == ("fsdp", 16)
    assert f.estimate.fits
    assert "taken as 24 GB" in f.devices.what
    with pytest.raises(StackConfigError) as e:
        validate(_with_args(prod_data, "train-lm-h100", device_memory_gb=100, **args))
    (p,) = [p for p in e.value.problems if p.path.endswith("device_memory_gb")]
    assert p.path == "jobs[train-lm-h100].args.device_memory_gb"
    assert "100 GB is more than one NVIDIA H100 80GB (80 GB) holds (allowed: at most 80" in str(p)
