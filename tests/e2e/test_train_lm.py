"""train_lm + evaluate on a tiny corpus with Ray Train (real local Ray, slow)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from contract.registry import FAULTS_ENV
from tests.helpers import json_lines, steps_by_attempt

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TINY = {
    "d_model": 32,
    "n_layers": 1,
    "n_heads": 2,
    "batch_size": 8,
    "lr": 1e-2,
    "warmup": 5,
    # metrics reach Ray Train at checkpoints only: each report waits for the controller's
    # 2 s poll when the last one is uncollected (workloads.common._train_report)
    "log_every": 1000,
    "num_workers": 1,
    "use_gpu": False,
    "seed": 0,
    "max_failures": 0,
}


@pytest.fixture(scope="module")
def trained(tiny_dataset: Path, tmp_path_factory: pytest.TempPathFactory):
    """One 40-step run (checkpoints at steps 20 and 40) that the tests below read or copy, so
    the module fits once for them (each fit costs tens of seconds of Ray Train start-up here):
    ``(config, result)``."""
    from workloads import train_lm

    cfg = {
        **TINY,
        "dataset": str(tiny_dataset),
        "storage_path": str(tmp_path_factory.mktemp("trained") / "runs"),
        "name": "tiny",
        "steps": 40,
        "checkpoint_every": 20,
    }
    return cfg, train_lm.main(cfg)


def test_train_lowers_loss_and_evaluate_reads_final_checkpoint(
    trained: tuple[dict[str, Any], dict[str, Any]], tiny_dataset: Path
) -> None:
    from workloads import evaluate

    cfg, out = trained
    assert out["steps"] == 40
    assert out["first_loss"] > 4.5  # about ln(256) = 5.55 untrained
    assert out["last_loss"] < out["first_loss"] - 1.5
    assert out["tokens_per_s"] > 0
    assert Path(out["checkpoint"]).name == "checkpoint_00000040"
    # the last checkpoint also holds the Hugging Face folder (workloads/hf_export.py), listed in
    # its manifest; the earlier one does not (tests/workloads/test_hf_export.py loads it)
    from workloads.checkpoint import read_manifest

    assert out["hf_model"] == str(Path(out["checkpoint"]) / "hf")
    assert {"hf/config.json", "hf/model.safetensors"} <= set(
        read_manifest(out["checkpoint"])["files"]
    )
    assert not (Path(out["checkpoint"]).parent / "checkpoint_00000020" / "hf").exists()
    # MFU: model FLOP/s over the worker's matmul peak, measured at start in the run's dtype
    from workloads.checkpoint import verify_checkpoint
    from workloads.precision import cpu_flags, native_bf16

    assert 0 < out["mfu"] <= 1 and out["peak_flops"] > 0
    assert out["mfu"] == pytest.approx(out["model_flops"] / out["peak_flops"])
    # auto: fp32 on a CPU without bf16 matrix instructions (this AMD EPYC, AVX2 only)
    if not native_bf16(cpu_flags()):
        assert out["precision"] == "fp32"
    assert verify_checkpoint(out["checkpoint"])["precision"] == out["precision"]

    ev = evaluate.main(
        {
            "dataset": str(tiny_dataset),
            "storage_path": cfg["storage_path"],
            "name": "tiny",
            "prompt": "def ",
            "sample_bytes": 20,
        }
    )
    assert ev["checkpoint"] == out["checkpoint"]
    assert ev["step"] == 40
    assert ev["val_loss"] < math.log(256) - 1.5
    assert ev["sample"].startswith("def ")
    assert len(ev["sample"].encode()) >= 20
    # val_rows: the rows the loss was computed on (context 32: 32 scored bytes per row)
    assert ev["val_rows"] == len(evaluate.load_validation(str(tiny_dataset), 4096))
    assert ev["val_bytes"] == 32 * ev["val_rows"]
    assert ev["ppmd_nats_per_byte"] > 0 and ev["val_vs_ppmd"] > 0


def test_killed_worker_resumes_and_counts_every_step_once(
    tiny_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workloads import train_lm
    from workloads.checkpoint import verify_checkpoint

    log = tmp_path / "steps.jsonl"
    cfg = {
        **TINY,
        "dataset": str(tiny_dataset),
        "storage_path": str(tmp_path / "runs"),
        "name": "crash",
        "steps": 16,
        "checkpoint_every": 5,
        "max_failures": 1,
        "step_log": str(log),
    }
    # the test-only fault plan (workloads/faults.py), not a job argument
    crash = {"fail_at_step": 7, "fail_marker": str(tmp_path / "crashed")}
    monkeypatch.setenv(FAULTS_ENV, json.dumps(crash))
    out = train_lm.main(cfg)
    assert (tmp_path / "crashed").exists()  # the worker really died once
    attempts = steps_by_attempt(log)
    assert len(attempts) == 2
    first, second = attempts
    assert first == list(range(1, 8))  # died right after step 7
    assert second == list(range(6, 17))  # resumed from checkpoint_00000005
    counted = [s for s in first if s <= 5] + second
    assert counted == list(range(1, 17))  # every step exactly once
    assert out["steps"] == 16
    assert verify_checkpoint(out["checkpoint"])["step"] == 16


def test_damaged_newest_checkpoint_is_refused_and_previous_used(
    trained: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    """A copy of the shared run (checkpoints 20 and 40) whose newest checkpoint is damaged:
    verification names the file, and the next fit of the run continues from step 20."""
    from workloads import train_lm
    from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, verify_checkpoint

    shared, _ = trained
    runs = tmp_path / "runs"
    shutil.copytree(Path(shared["storage_path"]) / "tiny", runs / "dmg")
    cfg = {**shared, "storage_path": str(runs), "name": "dmg"}
    newest = runs / "dmg" / "checkpoint_00000040"
    weights = newest / "model.pt"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model\.pt"):
        verify_checkpoint(newest)
    found = latest_valid_checkpoint(runs / "dmg")
    assert found is not None
    assert found[0].name == "checkpoint_00000020"

    log = tmp_path / "steps.jsonl"
    out = train_lm.main({**cfg, "steps": 42, "step_log": str(log)})
    assert [e["step"] for e in json_lines(log)] == list(range(21, 43))
    assert out["steps"] == 42
    assert verify_checkpoint(out["checkpoint"])["step"] == 42
