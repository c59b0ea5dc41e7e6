"""Job-to-job references resolve at `check` time: an evaluate job reads the run of a declared
training job (args.name), and a gs:// checkpoint lies in that job's folder (issue 25 item 9)."""

from __future__ import annotations

from typing import Any

import pytest

from components.stack import validate
from components.stack.rules import job_checkpoint_references
from tests.components.stack.test_model import base, problems

BUCKET = "ray-gke-test-ray-checkpoints"  # <project>-<cluster name>-checkpoints


def _with_jobs(*jobs: dict[str, Any]) -> dict[str, Any]:
    data = base()
    data["jobs"] += [
        {"name": "train-a", "workload": "train_lm", "cluster": "research", "worker_group": "cpu"},
        *jobs,
    ]
    return data


def _eval(**args: Any) -> dict[str, Any]:
    return {
        "name": "eval-a",
        "workload": "evaluate",
        "cluster": "research",
        "worker_group": "cpu",
        "args": args,
    }


def test_evaluate_naming_a_declared_training_job_passes() -> None:
    cfg = validate(_with_jobs(_eval(name="train-a")))
    assert list(job_checkpoint_references(cfg)) == []
    ok = _with_jobs(_eval(name="train-a", checkpoint=f"gs://{BUCKET}/train-a/checkpoint_000010"))
    assert list(job_checkpoint_references(validate(ok))) == []


def test_a_typo_in_the_training_job_name_names_field_value_and_valid_names() -> None:
    found = [p for p in problems(_with_jobs(_eval(name="train-b"))) if "args.name" in p]
    assert len(found) == 1
    (line,) = found
    assert line.startswith("jobs[eval-a].args.name 'train-b'")
    assert "valid: train-a" in line and f"gs://{BUCKET}/train-b" in line


def test_the_default_run_name_is_checked_too() -> None:
    (line,) = [p for p in problems(_with_jobs(_eval())) if "args.name" in p]
    assert "'train_lm' (the default; set args.name)" in line and "valid: train-a" in line


@pytest.mark.parametrize(
    "checkpoint",
    [f"gs://{BUCKET}/train-b/checkpoint_000010", "gs://other-bucket/train-a/checkpoint_000010"],
)
def test_a_checkpoint_outside_the_named_jobs_folder_is_refused(checkpoint: str) -> None:
    (line,) = [
        p
        for p in problems(_with_jobs(_eval(name="train-a", checkpoint=checkpoint)))
        if "args.checkpoint" in p
    ]
    assert line.startswith(f"jobs[eval-a].args.checkpoint {checkpoint!r}")
    assert f"gs://{BUCKET}/train-a/" in line and "valid training jobs: train-a" in line


def test_a_job_that_is_not_a_trainer_is_not_a_valid_target() -> None:
    (line,) = [p for p in problems(_with_jobs(_eval(name="prep"))) if "args.name" in p]
    assert "'prep'" in line and "valid: train-a" in line
