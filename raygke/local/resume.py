"""An interrupted ``raygke local run`` and its resumption (issue 50): what Ctrl-C saved and the
exact command that goes on, and a resumed run's segments, so that its summary covers the whole
run.

A run that trains keeps ``segments`` in its pending record (``runs/pending_run.json``,
:func:`raygke.local.jobs.read_pending`): one entry per ``raygke local run`` that worked on it and
did not finish (``seconds`` of wall time, ``from_step`` -> ``to_step``: the newest checkpoint it
left, ``ended``: ``interrupted`` or ``failed``). The run that finishes adds its own and the
summary shows them all, with the total wall time.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raygke.local import leases


def resume_command() -> str:
    """The command that resumes this run: ``make ...`` as typed when ``make`` ran this
    ``raygke local run`` (through its recipe's shell: ``make local`` then brings the cluster up
    again too), else this command line."""
    pid = os.getppid()
    for _ in range(3):
        argv = leases.cmdline(pid)
        if not argv:
            break
        prog = Path(argv[0]).name
        if prog in ("make", "gmake"):
            return shlex.join(["make", *argv[1:]])
        if prog not in ("sh", "bash", "dash", "zsh") or "-c" not in argv[1:]:
            break
        pid = leases.parent_pid(pid) or 0
    return shlex.join(["raygke", *sys.argv[1:]])


def interrupted_lines(
    job: str | None, run_name: str | None, trains: bool, point: tuple[int, str] | None
) -> list[str]:
    """What Ctrl-C prints: which job stopped, what was saved (the newest checkpoint ``point``
    of ``run_name``), and the command that resumes."""
    lines = [f"interrupted; the running job{' ' + job if job else ''} was stopped"]
    again = resume_command()
    if trains and run_name:
        if point is not None:
            lines.append(f"saved: checkpoint {point[0]} of run {run_name} ({point[1]})")
            lines.append(
                f"resume: {again}  (continues from step {point[0]}; the jobs that succeeded are "
                "not run again; --fresh starts over)"
            )
        else:
            lines.append(f"saved: nothing yet (run {run_name} has no checkpoint)")
            lines.append(f"resume: {again}  (run {run_name} starts again from step 0)")
    else:
        lines.append(f"run again: {again}")
    return lines


def segment(seconds: float, from_step: int, to_step: int, ended: str) -> dict[str, Any]:
    """One entry of the pending record's ``segments``."""
    return {
        "seconds": round(seconds, 1),
        "from_step": from_step,
        "to_step": to_step,
        "ended": ended,
    }


def segments_text(segments: list[Mapping[str, Any]]) -> str:
    """``"312.4 s (steps 0-300, interrupted), 401.2 s (steps 300-900)"``."""
    parts = []
    for s in segments:
        how = "" if s.get("ended") == "finished" else f", {s.get('ended')}"
        parts.append(f"{s['seconds']:.1f} s (steps {s['from_step']}-{s['to_step']}{how})")
    return ", ".join(parts)


def whole_run(summary: dict[str, Any], earlier: list[Mapping[str, Any]], from_step: int) -> None:
    """Make ``summary`` (this segment's: ``seconds``, ``steps``) cover the whole run: add
    ``segments`` (the ``earlier`` ones and this one), ``seconds`` becomes their total and
    ``seconds_last_segment`` this one's; nothing changes for a run of one segment."""
    if not earlier:
        return
    this = segment(summary["seconds"], from_step, int(summary.get("steps") or 0), "finished")
    summary["segments"] = [*map(dict, earlier), this]
    summary["seconds_last_segment"] = summary["seconds"]
    summary["seconds"] = round(sum(float(s["seconds"]) for s in summary["segments"]), 1)
