"""raygke/local/resume.py (issue 50): what Ctrl-C says (what was saved, the exact command that
resumes: ``make local`` as typed when make ran the run), a resumed run's summary over every
segment, and the local checkpoint cadence (an interrupt loses under a minute of training)."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from contract.registry import LOCAL_CHECKPOINTS
from raygke.local import jobs as local_jobs
from raygke.local import leases
from raygke.local import resume as local_resume
from raygke.local.run import summary_table
from raygke.local.summary import summarize


def test_ctrl_c_names_the_checkpoint_saved_and_the_command_that_resumes(monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["raygke", "local", "run", "--data", "/my corpus"])
    lines = local_resume.interrupted_lines("train_lm", "lm-x-1", True, (300, "/c/lm-x-1/ck_300"))
    assert lines == [
        "interrupted; the running job train_lm was stopped",
        "saved: checkpoint 300 of run lm-x-1 (/c/lm-x-1/ck_300)",
        "resume: raygke local run --data '/my corpus'  (continues from step 300; the jobs that "
        "succeeded are not run again; --fresh starts over)",
    ]
    nothing = local_resume.interrupted_lines("train_lm", "lm-x-1", True, None)
    assert nothing[1] == "saved: nothing yet (run lm-x-1 has no checkpoint)"
    assert local_resume.interrupted_lines("prepare", None, False, None)[-1] == (
        "run again: raygke local run --data '/my corpus'"
    )


def test_the_resume_command_is_make_as_typed_when_make_ran_the_run(monkeypatch) -> None:
    # this process <- `sh -c` (the recipe's shell) <- `make local DATA=...`
    table = {
        os.getppid(): ["/bin/sh", "-c", "trap ... EXIT; .venv/bin/raygke local run"],
        4242: ["make", "local", "DATA=/data/my corpus"],
    }
    monkeypatch.setattr(leases, "cmdline", lambda pid: table.get(pid, []))
    monkeypatch.setattr(leases, "parent_pid", lambda pid: 4242)
    assert local_resume.resume_command() == "make local 'DATA=/data/my corpus'"
    table[os.getppid()] = ["bash"]  # an interactive shell: this command as typed
    monkeypatch.setattr(sys, "argv", ["/x/.venv/bin/raygke", "local", "run"])
    assert local_resume.resume_command() == "raygke local run"


def test_a_resumed_runs_summary_covers_every_segment() -> None:
    summary = summarize({"train_lm": {"steps": 900, "tokens_per_s": 15000.0}})
    summary["seconds"] = 401.24
    earlier = [local_resume.segment(312.42, 0, 300, "interrupted")]
    local_resume.whole_run(summary, earlier, from_step=300)
    assert summary["seconds"] == 713.6 and summary["seconds_last_segment"] == 401.24
    assert [(s["from_step"], s["to_step"], s["ended"]) for s in summary["segments"]] == [
        (0, 300, "interrupted"),
        (300, 900, "finished"),
    ]
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    text = console.export_text()
    assert "312.4 s (steps 0-300, interrupted), 401.2 s (steps 300-900)" in text
    assert "713.6 (all 2 segments)" in text and "tokens/s (last segment)" in text

    one = summarize({"train_lm": {"steps": 900}})
    one["seconds"] = 5.0
    local_resume.whole_run(one, [], from_step=0)
    assert "segments" not in one and one["seconds"] == 5.0


def test_local_trainers_checkpoint_often_enough_to_lose_under_a_minute() -> None:
    state = {"buckets": {b: f"/b/{b}" for b in ("datasets", "checkpoints", "artifacts")}}
    state["tpu"] = None
    assert LOCAL_CHECKPOINTS["checkpoint_every"] == 50
    for name in ("train_lm", "train_lm_tf", "train_lm_jax"):
        assert local_jobs.job_args(name, state, None, "r", {})["checkpoint_every"] == 50
    mine = {"train_lm": {"checkpoint_every": 7}}
    assert (
        local_jobs.job_args("train_lm", state, None, "r", {}, overrides=mine)["checkpoint_every"]
        == 7
    )
