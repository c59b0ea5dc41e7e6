"""train_lm_tf (Keras 3 / TensorFlow, MultiWorkerMirroredStrategy under Ray Train's
TensorflowTrainer) on a tiny corpus with a real local Ray cluster (slow): two workers stay in
sync, a killed worker resumes from the newest good checkpoint with every step counted once, and
evaluate scores the TensorFlow checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from contract.registry import FAULTS_ENV
from tests.helpers import json_lines, steps_by_attempt

pytestmark = [pytest.mark.ray, pytest.mark.slow]

# Two workers of half a CPU each on the 2-CPU test cluster, so Ray Data's read tasks still fit.
TINY = {
    "d_model": 32,
    "n_layers": 1,
    "n_heads": 2,
    "batch_size": 8,
    "lr": 1e-2,
    "warmup": 5,
    # metrics reach Ray Train at checkpoints only (workloads.common._train_report)
    "log_every": 1000,
    "num_workers": 2,
    "cpus_per_worker": 0.5,
    "tf_threads": 1,
    "seed": 0,
    "max_failures": 0,
}


def test_a_killed_worker_resumes_and_two_workers_stay_in_sync_and_evaluate_scores(
    tiny_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One 30-step run of two workers whose rank 0 dies after step 7: the group restarts from
    checkpoint 5 with every step counted once, both workers end with bit-identical weights
    (restored into every worker, then 25 all-reduced steps), and evaluate scores the final
    TensorFlow checkpoint. (Two tests before, each fitting its own run:
    test_two_workers_stay_in_sync_and_evaluate_scores_the_checkpoint and
    test_killed_worker_resumes_and_counts_every_step_once; every assertion of both is here.)"""
    from workloads import evaluate, train_lm_tf
    from workloads.checkpoint import verify_checkpoint

    # the test-only fault plan (workloads/faults.py), not a job argument
    crash = {"fail_at_step": 7, "fail_marker": str(tmp_path / "crashed")}
    monkeypatch.setenv(FAULTS_ENV, json.dumps(crash))

    log, weights = tmp_path / "steps.jsonl", tmp_path / "weights.jsonl"
    out = train_lm_tf.main(
        {
            **TINY,
            "dataset": str(tiny_dataset),
            "storage_path": str(tmp_path / "runs"),
            "name": "tf",
            "steps": 30,
            "checkpoint_every": 5,
            "max_failures": 1,
            "step_log": str(log),
            "weights_log": str(weights),
        }
    )
    assert (tmp_path / "crashed").exists()  # rank 0 really died once
    attempts = steps_by_attempt(log)
    assert len(attempts) == 2
    first, second = attempts
    assert first == list(range(1, 8))  # died right after step 7
    assert second == list(range(6, 31))  # resumed from checkpoint_00000005
    counted = [s for s in first if s <= 5] + second
    assert counted == list(range(1, 31))  # every step exactly once

    records = json_lines(weights)
    assert sorted(r["rank"] for r in records) == [0, 1]
    assert {r["step"] for r in records} == {30}
    # Both workers hold bit-identical weights after the all-reduced steps since the restart.
    assert len({r["weights_sha256"] for r in records}) == 1
    assert out["steps"] == 30
    assert out["first_loss"] > 4.5  # about ln(256) = 5.55 untrained
    assert out["last_loss"] < out["first_loss"] - 1.0
    assert Path(out["checkpoint"]).name == "checkpoint_00000030"
    meta = verify_checkpoint(out["checkpoint"])
    assert meta["framework"] == "tensorflow" and meta["step"] == 30
    # rank 0 wrote the Hugging Face folder into the last checkpoint (workloads/hf_export.py)
    assert Path(out["hf_model"], "model.safetensors").is_file()

    ev = evaluate.main(
        {
            "dataset": str(tiny_dataset),
            "storage_path": str(tmp_path / "runs"),
            "name": "tf",
            "sample_bytes": 10,
        }
    )
    assert ev["checkpoint"] == out["checkpoint"]
    assert ev["step"] == 30
    assert math.isfinite(ev["val_loss"]) and ev["val_loss"] < out["first_loss"] - 1.0
