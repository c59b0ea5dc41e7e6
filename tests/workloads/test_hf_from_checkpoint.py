"""``python -m workloads.hf_from_checkpoint``: the Hugging Face folder of a checkpoint that has
none is the one a run writes (workloads/hf_from_checkpoint.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contract.checkpoint import HF_SUBDIR
from tests.helpers import ROOT
from workloads.checkpoint import CheckpointError, verify_checkpoint
from workloads.hf_export import HF_FILES
from workloads.lm_config import ModelConfig

CTX = 32


def test_an_older_checkpoint_exports_to_the_same_folder_a_run_writes(tmp_path: Path) -> None:
    """``export_checkpoint`` (for a checkpoint without ``hf/``: an intermediate one, or one
    written before the export existed) gives byte for byte what the trainer writes, for a torch
    and a JAX checkpoint; the CLI too; the folder carries its own manifest."""
    import torch

    from workloads import hf_from_checkpoint as H
    from workloads import model_jax, model_tf, model_torch
    from workloads.model_torch import GPT, save_checkpoint

    assert H.PARAMS_NPZ == model_jax.PARAMS == model_tf.PARAMS == model_torch.JAX_PARAMS
    assert H.NPZ_FRAMEWORKS == model_torch.NPZ_FRAMEWORKS
    cfg = ModelConfig(d_model=16, n_layers=1, n_heads=2, context_length=CTX)
    torch.manual_seed(0)
    model = GPT(cfg)
    plain = save_checkpoint(tmp_path / "torch", model, step=3)
    full = save_checkpoint(tmp_path / "torch_hf", model, step=3, hf=True)
    jax_plain = model_jax.save_checkpoint(tmp_path / "jax", cfg, model_jax.init_params(cfg), 3)
    jax_full = model_jax.save_checkpoint(
        tmp_path / "jax_hf", cfg, model_jax.init_params(cfg), 3, hf=True
    )
    for source, written in ((plain, full), (jax_plain, jax_full)):
        assert not (source / HF_SUBDIR).exists()
        out = H.export_checkpoint(source, tmp_path / f"{source.name}_export")
        for name in HF_FILES:
            assert (out / name).read_bytes() == (written / HF_SUBDIR / name).read_bytes(), name
        assert verify_checkpoint(out)["source"] == str(source)
    command = [sys.executable, "-m", "workloads.hf_from_checkpoint", str(jax_plain)]
    cli = subprocess.run(
        [*command, str(tmp_path / "cli")], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert cli.stdout.strip() == str(tmp_path / "cli")
    assert (tmp_path / "cli" / "model.safetensors").read_bytes() == (
        jax_full / HF_SUBDIR / "model.safetensors"
    ).read_bytes()
    with pytest.raises(CheckpointError, match="manifest missing"):
        H.export_checkpoint(tmp_path / "nothing", tmp_path / "x")
    bad = subprocess.run(
        [*command[:-1], str(tmp_path / "nothing"), str(tmp_path / "y")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        f"hf_from_checkpoint: {tmp_path / 'nothing' / 'manifest.json'}: manifest missing "
        "(incomplete checkpoint)"
    ]
