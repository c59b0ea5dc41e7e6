"""Progress lines: printed by the workloads, parsed and shown by ``raygke local run`` (no Ray)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from contract.registry import PROGRESS_PREFIX
from raygke.local import progress
from raygke.local.progress import PlainStage, RunLog, figures, parse_progress
from workloads import common


def _line(**event) -> str:
    return PROGRESS_PREFIX + json.dumps(event)


def test_parse_progress_after_rays_prefix_and_colours() -> None:
    event = {"stage": "train", "done": 3, "total": 30, "loss": 2.5}
    assert parse_progress(_line(**event)) == event
    ray_prefixed = "\x1b[36m(RayTrainWorker pid=12, ip=10.0.0.2)\x1b[0m " + _line(**event)
    assert parse_progress(ray_prefixed) == event
    assert parse_progress(_line(**event) + "\x1b[0m trailing") == event
    assert parse_progress(_line(stage="prepare", done=0, total=None)) == {
        "stage": "prepare",
        "done": 0,
        "total": None,
    }


@pytest.mark.parametrize(
    "line",
    [
        "2026-11-30 05:27:35,115 INFO worker.py:1841 -- Connecting to existing Ray cluster",
        'RAYGKE_RESULT {"rows": 3}',
        PROGRESS_PREFIX + "{not json",
        PROGRESS_PREFIX + "[1, 2]",
        _line(done=1, total=2),  # no stage
        _line(stage="train", done=-1, total=2),
        _line(stage="train", done=True, total=2),
        _line(stage="train", done=1, total=0),
        _line(stage="train", done="1", total=2),
    ],
)
def test_parse_progress_refuses_other_lines(line: str) -> None:
    assert parse_progress(line) is None


def test_emit_progress_round_trip_and_throttle(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([100.0, 100.2, 100.4, 101.5, 101.6])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(common, "_last_progress", {})
    printed = [
        common.emit_progress("train", 1, 4, loss=3.0),  # first: printed
        common.emit_progress("train", 2, 4, loss=2.0),  # 0.2 s later: held back
        common.emit_progress("evaluate", 1, 9),  # another stage has its own clock
        common.emit_progress("train", 3, 4, loss=1.5),  # 1.5 s after the first: printed
        common.emit_progress("train", 4, 4, loss=1.0),  # the last: always printed
    ]
    assert printed == [True, False, True, True, True]
    events = [parse_progress(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [(e["stage"], e["done"]) for e in events] == [
        ("train", 1),
        ("evaluate", 1),
        ("train", 3),
        ("train", 4),
    ]
    assert events[-1] == {"stage": "train", "done": 4, "total": 4, "loss": 1.0}


def test_figures() -> None:
    assert figures({"loss": 2.8913, "tokens_per_s": 12271.4}) == "loss 2.891  12,271 tokens/s"
    assert figures({"files": 1758, "rows": 116046}) == "1,758 files  116,046 rows"
    assert figures({"loss": None, "tokens_per_s": 0.0}) == ""
    event = {"loss": 2.8913, "tokens_per_s": 12271.4, "mfu": 0.41349, "precision": "fp32"}
    assert figures(event) == "loss 2.891  12,271 tokens/s  MFU 41.3% fp32"
    assert figures({"loss": 2.0, "mfu": None, "precision": "bf16"}) == "loss 2.000"


def _plain(lines: int = 5) -> tuple[PlainStage, Console]:
    console = Console(record=True, width=200, force_terminal=False)
    return PlainStage(console, "train_lm", lines=lines), console


def test_plain_lines_every_fifth_of_the_steps_and_the_last_once() -> None:
    stage, console = _plain()
    for step in range(1, 501):
        event = {"stage": "train", "done": step, "total": 500, "unit": "steps", "loss": 1.0}
        stage.update(event, now=float(step))
        stage.update(event, now=float(step))  # a repeated line prints nothing more
    stage.update({"stage": "train", "done": 500, "total": 500}, now=600.0)
    out = console.export_text().splitlines()
    assert out == stage.printed
    assert [ln.split()[1] for ln in out] == ["100/500", "200/500", "300/500", "400/500", "500/500"]
    assert out[0] == "  train_lm  100/500 steps  loss 1.000  ETA 6m40s"
    assert "ETA" not in out[-1]


def test_plain_last_line_when_the_total_is_no_multiple_of_the_fifth() -> None:
    stage, _ = _plain()
    for done in range(32, 1025, 32):
        stage.update({"stage": "evaluate", "done": done, "total": 1024}, now=float(done))
    assert [ln.split()[1] for ln in stage.printed] == [
        "224/1,024",
        "416/1,024",
        "640/1,024",
        "832/1,024",
        "1,024/1,024",
    ]


def test_plain_lines_with_sparse_events_and_phases() -> None:
    stage, _ = _plain()
    # a job that reports rarely: each event past the next fifth prints one line
    for done in (0, 3, 9, 10):
        stage.update({"stage": "prepare", "done": done, "total": 10, "unit": "shards"}, now=1.0)
    assert [ln.split()[1] for ln in stage.printed] == ["3/10", "9/10", "10/10"]
    # a new phase starts its own count
    stage.update({"stage": "evaluate", "phase": "sample", "done": 200, "total": 200}, now=2.0)
    assert stage.printed[-1] == "  train_lm (sample)  200/200"


def test_stage_display_is_plain_on_a_non_terminal() -> None:
    console = Console(record=True, force_terminal=False)
    with progress.stage_display(console, "prepare") as stage:
        stage.status("RUNNING")
        stage.update({"stage": "prepare", "done": 8, "total": 8, "unit": "shards", "rows": 5})
    assert console.export_text() == "  prepare  8/8 shards  5 rows\n"


def test_stage_display_live_bar_on_a_terminal() -> None:
    console = Console(record=True, force_terminal=True, width=150)
    with progress.stage_display(console, "train_lm") as stage:
        stage.status("RUNNING")
        for step in (1, 2, 3):
            stage.update({"stage": "train", "done": step, "total": 3, "unit": "steps", "loss": 2})
    text = console.export_text()
    assert "train_lm" in text and "3/3" in text and "loss 2.000" in text
    assert text.rstrip().splitlines()[-1].rstrip().endswith("in 0s"), text


def test_run_log_strips_colours_and_captures_rays_logger(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import logging

    log = RunLog(tmp_path / "runs" / "x" / "run.log")
    log.write("\x1b[36m(RayTrainWorker pid=1)\x1b[0m hello")
    before = logging.getLogger("ray").handlers[:]
    with log.capture_ray_logging():
        logging.getLogger("ray.dashboard.modules.dashboard_sdk").info("Uploading package x")
    assert logging.getLogger("ray").handlers == before
    log.close()
    lines = log.path.read_text().splitlines()
    assert lines[0] == "(RayTrainWorker pid=1) hello"
    assert lines[1].endswith("INFO ray.dashboard.modules.dashboard_sdk: Uploading package x")
