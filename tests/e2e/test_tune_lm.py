"""tune_lm: tiny ASHA and PBT sweeps and an interrupted experiment resumed (real local Ray, slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.registry import FAULTS_ENV

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TINY = {
    "widths": [16, 32],
    "depths": [1],
    "batch_sizes": [8],
    "warmups": [0, 2],
    "n_heads": 2,
    "val_rows": 16,
    "cpus_per_trial": 1,
    "max_failures": 0,
    "seed": 0,
}


@pytest.fixture(scope="module")
def tiny_dataset(ray_cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workloads.prepare import main

    root = tmp_path_factory.mktemp("corpus")
    for i in range(8):
        body = "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(30))
        (root / f"m{i}.py").write_text(body)
    ds = tmp_path_factory.mktemp("data") / "ds"
    main(
        {
            "data": str(root),
            "dataset": str(ds),
            "context_length": 32,
            "val_fraction": 0.25,
            "num_shards": 2,
        }
    )
    return ds


def _cfg(ds: Path, tmp: Path, **kw: Any) -> dict[str, Any]:
    return {**TINY, "dataset": str(ds), "storage_path": str(tmp / "runs"), **kw}


def test_asha_stops_some_trials_early(tiny_dataset: Path, tmp_path: Path) -> None:
    from workloads.tune_lm import main

    out = main(
        _cfg(
            tiny_dataset,
            tmp_path,
            trials=4,
            steps=12,
            report_every=2,
            grace_period=2,
            reduction_factor=2,
            # a learning rate range wide enough that trials differ clearly
            lr_min=1e-4,
            lr_max=3e-2,
            # one trial at a time: ASHA compares a trial at a rung with those recorded there
            # before it, so concurrent trials that reach each rung in order of quality (as on a
            # loaded CI machine) may all finish; in sequence the seeded sample stops one
            max_concurrent=1,
        )
    )
    statuses = [r["status"] for r in out["trials"]]
    assert out["errors"] == 0, out["table"]
    assert "stopped early" in statuses, out["table"]
    assert "finished" in statuses, out["table"]
    assert out["steps_run"] < out["budget_steps"]
    assert out["best"]["val_loss"] == min(r["val_loss"] for r in out["trials"])
    assert Path(out["checkpoint"], "manifest.json").is_file()


@pytest.mark.timeout(1200)  # each exploit restarts a trial actor: slow on a busy 2-core box
def test_pbt_exploits_a_trial(tiny_dataset: Path, tmp_path: Path) -> None:
    from workloads.tune_lm import main

    out = main(
        _cfg(
            tiny_dataset,
            tmp_path,
            scheduler="pbt",
            trials=4,
            # synchronous PBT: at each perturbation point (steps 4, 8, 12) every trial has
            # reported and the bottom quarter (one of four) exploits the top quarter
            steps=14,
            report_every=2,
            perturbation_interval=4,
            lr_min=1e-4,
            lr_max=3e-2,
        )
    )
    assert out["errors"] == 0, out["table"]
    assert any(r["exploited"] for r in out["trials"]), out["table"]
    assert all(r["steps"] == 14 for r in out["trials"]), out["table"]


def test_interrupted_experiment_resumes_without_rerunning_finished_trials(
    tiny_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workloads.tune_lm import main

    cfg = _cfg(tiny_dataset, tmp_path, trials=3, steps=6, report_every=3, name="resume")
    monkeypatch.setenv(FAULTS_ENV, json.dumps({"interrupt_after": 1}))  # workloads/faults.py
    first = main(cfg)
    monkeypatch.delenv(FAULTS_ENV)
    done_first = {r["trial"]: r for r in first["trials"] if r["status"] == "finished"}
    assert 1 <= len(done_first) < 3, first["table"]
    assert first["steps_run"] < first["budget_steps"], first["table"]

    second = main(cfg)
    rows = {r["trial"]: r for r in second["trials"]}
    assert len(rows) == 3 and all(r["status"] == "finished" for r in rows.values()), second["table"]
    for tid, before in done_first.items():
        # a finished trial is not run again: same last checkpoint, same validation loss
        assert rows[tid]["checkpoint"] == before["checkpoint"]
        assert rows[tid]["val_loss"] == before["val_loss"]


def test_asha_sweep_over_the_tf_trainer_gives_a_checkpoint_evaluate_scores(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """trainer tf: each trial runs train_lm_tf's stepper (Keras 3 / TensorFlow, one device);
    the best trial's TensorFlow checkpoint is scored by evaluate (PyTorch loader, nats/byte)."""
    pytest.importorskip("tensorflow")
    import math

    from workloads import evaluate
    from workloads.checkpoint import verify_checkpoint
    from workloads.tune_lm import main

    out = main(
        _cfg(
            tiny_dataset,
            tmp_path,
            trainer="tf",
            name="tune-tf",
            widths=[16],
            trials=2,
            steps=6,
            report_every=3,
            grace_period=3,
            reduction_factor=2,
            lr_min=1e-3,
            lr_max=1e-2,
            max_concurrent=1,
        )
    )
    assert out["errors"] == 0, out["table"]
    assert "finished" in [r["status"] for r in out["trials"]], out["table"]
    best = out["best"]
    assert best["steps"] == 6 and math.isfinite(best["val_loss"]), out["table"]
    meta = verify_checkpoint(out["checkpoint"])
    assert meta["framework"] == "tensorflow" and meta["step"] == 6
    ev = evaluate.main(
        {
            "dataset": str(tiny_dataset),
            "checkpoint": out["checkpoint"],
            "sample_bytes": 8,
            "max_val_rows": 16,
        }
    )
    assert ev["step"] == 6 and math.isfinite(ev["val_loss"])
    assert ev["val_loss"] == pytest.approx(best["val_loss"], rel=1e-3)
