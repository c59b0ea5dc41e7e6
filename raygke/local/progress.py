"""``raygke local run``: one progress line or bar per job, its full log in a file.

The workloads print ``RAYGKE_PROGRESS {json}`` lines (``workloads.common.emit_progress``; the
prefix is ``contract.registry.PROGRESS_PREFIX``) among Ray's own output in the job log. Every
log line goes to the run's log file (:class:`RunLog`); progress lines are also parsed
(:func:`parse_progress`) and shown:

* on a terminal, as a live ``rich.progress`` bar per job (:class:`LiveStage`): done/total, the
  stage's figures (loss, tokens/s, rows...), elapsed time and ETA;
* elsewhere (CI, pipes), as a plain line each time the job passes another fifth of its total
  (:class:`PlainStage`), so a job adds at most about 5 lines however many steps it runs.

Rich's progress display: https://rich.readthedocs.io/en/stable/progress.html
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
)
from rich.text import Text

from contract.registry import PROGRESS_PREFIX

PLAIN_LINES = 5  # plain lines per job (and per phase of a job) on a non-terminal

_DECODER = json.JSONDecoder()


def parse_progress(line: str) -> dict[str, Any] | None:
    """The event of a ``RAYGKE_PROGRESS {json}`` log line, or None for any other line.

    The prefix may come after Ray's own prefix (``(RayTrainWorker pid=12) ``, with or without
    ANSI colours); text after the JSON object is ignored. An event is a dict with ``stage``
    (str), ``done`` (int >= 0) and ``total`` (int > 0 or None) plus free fields; a line whose
    JSON lacks those, or is not JSON, gives None.
    """
    at = line.find(PROGRESS_PREFIX)
    if at < 0:
        return None
    try:
        event, _ = _DECODER.raw_decode(line[at + len(PROGRESS_PREFIX) :].lstrip())
    except json.JSONDecodeError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("stage"), str):
        return None
    done, total = event.get("done"), event.get("total")
    if isinstance(done, bool) or not isinstance(done, int) or done < 0:
        return None
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 1):
        return None
    return event


def _num(value: Any, fmt: str) -> str | None:
    return (
        None if not isinstance(value, int | float) or isinstance(value, bool) else f"{value:{fmt}}"
    )


def figures(event: Mapping[str, Any]) -> str:
    """The stage's figures of an event, e.g. ``loss 2.891  12,271 tokens/s  MFU 41.3% fp32``
    or ``1,758 files  116,046 rows`` (only those present; MFU: a trainer's model FLOP/s over its
    measured matmul peak in its ``precision``, :mod:`workloads.precision`)."""
    parts = []
    for key, fmt, label in (
        ("files", ",", " files"),
        ("rows", ",", " rows"),
        ("loss", ".3f", ""),
        ("tokens_per_s", ",.0f", " tokens/s"),
        ("mfu", ".1%", ""),
    ):
        shown = _num(event.get(key), fmt)
        if shown is not None and not (key in ("tokens_per_s", "mfu") and not event[key]):
            if key == "loss":
                shown = f"loss {shown}"
            elif key == "mfu":
                dtype = event.get("precision")
                shown = f"MFU {shown}" + (f" {dtype}" if isinstance(dtype, str) else "")
            parts.append(shown + label)
    return "  ".join(parts)


def _duration(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Stage(Protocol):
    """What ``raygke local run`` tells the display about one job."""

    def status(self, status: str) -> None:
        """Ray's job status changed or was polled (``PENDING``, ``RUNNING``, ...)."""

    def update(self, event: Mapping[str, Any]) -> None:
        """A progress event of the job (:func:`parse_progress`)."""


class PlainStage:
    """Plain lines for a non-terminal: one when the job passes another ``1/lines`` of its total
    (the last step once), per phase of the job; repeated or older events and status changes print
    nothing.

    Line: ``  <job>  <done>/<total> <unit>  <figures>  ETA <time>`` (ETA from the rate since
    the first event of the phase).
    """

    def __init__(self, console: Console, name: str, lines: int = PLAIN_LINES) -> None:
        self.console, self.name, self.lines = console, name, max(1, lines)
        self._phase: tuple[Any, Any] | None = None
        self._next = 0
        self._first: tuple[float, int] | None = None
        self.printed: list[str] = []

    def status(self, status: str) -> None:
        pass

    def update(self, event: Mapping[str, Any], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        done, total = int(event["done"]), event.get("total")
        phase = (event.get("phase"), total)
        every = math.ceil(total / self.lines) if total else 1
        if phase != self._phase:
            self._phase, self._next, self._first = phase, every, None
        if self._first is None:
            self._first = (now, done)
        final = total is not None and done >= total
        if done < self._next:
            return  # not yet at the next multiple of `every` (or the total), or already shown
        if final:
            self._next = total + 1
        else:
            self._next = (done // every + 1) * every
            self._next = min(self._next, total) if total else self._next
        line = self.format(event, now)
        self.printed.append(line)
        self.console.print(line, markup=False, highlight=False)

    def format(self, event: Mapping[str, Any], now: float) -> str:
        """The plain line for ``event`` at monotonic time ``now``."""
        done, total = int(event["done"]), event.get("total")
        unit = str(event.get("unit") or "")
        phase = f" ({event['phase']})" if event.get("phase") else ""
        parts = [
            f"  {self.name}{phase}",
            f"{done:,}/{total:,} {unit}".rstrip() if total else f"{done:,} {unit}".rstrip(),
        ]
        shown = figures(event)
        if shown:
            parts.append(shown)
        if total and self._first is not None:
            t0, d0 = self._first
            if done > d0 and done < total:
                parts.append(f"ETA {_duration((now - t0) / (done - d0) * (total - done))}")
        return "  ".join(parts)


class LiveStage:
    """A live ``rich.progress`` bar for one job on a terminal (its own ``Progress``)."""

    def __init__(self, progress: Progress, name: str) -> None:
        self.progress, self.name = progress, name
        self.task = progress.add_task(name, total=None, unit="", info="submitting")
        self._phase: Any = None
        self._events = 0

    def status(self, status: str) -> None:
        if self._events == 0:  # once the job reports progress, its figures take the place
            self.progress.update(self.task, info=status)

    def update(self, event: Mapping[str, Any]) -> None:
        self._events += 1
        phase = event.get("phase")
        if phase != self._phase:
            self._phase = phase
            self.progress.reset(self.task, total=event.get("total"))
        self.progress.update(
            self.task,
            description=f"{self.name} ({phase})" if phase else self.name,
            total=event.get("total"),
            completed=int(event["done"]),
            unit=str(event.get("unit") or ""),
            info=figures(event),
        )


class TimesColumn(ProgressColumn):
    """``<elapsed>  ETA <remaining>`` while running (ETA from rich's speed estimate), ``in
    <elapsed>`` once finished."""

    def render(self, task: Task) -> Text:
        if task.finished:
            return Text(f"in {_duration(task.finished_time or 0)}", style="progress.elapsed")
        shown = _duration(task.elapsed or 0)
        if task.time_remaining is not None:
            shown += f"  ETA {_duration(task.time_remaining)}"
        return Text(shown, style="progress.remaining")


def live_progress(console: Console) -> Progress:
    """The ``rich.progress.Progress`` of one job: spinner, name, bar, done/total unit, figures,
    elapsed time and ETA (:class:`TimesColumn`)."""
    return Progress(
        SpinnerColumn(finished_text="[green]✓"),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TextColumn("{task.fields[info]}"),
        TimesColumn(),
        console=console,
    )


@contextlib.contextmanager
def stage_display(console: Console, name: str) -> Iterator[Stage]:
    """A :class:`LiveStage` on a terminal (the bar stays on screen afterwards), else a
    :class:`PlainStage`."""
    if not console.is_terminal:
        yield PlainStage(console, name)
        return
    with live_progress(console) as progress:
        stage = LiveStage(progress, name)
        yield stage
        task = progress.tasks[stage.task]
        if task.total is not None and not task.finished:
            progress.update(stage.task, info=f"{task.fields['info']}  (stopped)")


class RunLog:
    """The log file of one ``raygke local run``: every job's log lines (ANSI colours removed),
    each job headed by ``==> <i>/<n> <job>``, and Ray's own log records of the ``raygke``
    process (Jobs API client: package uploads) while :meth:`capture_ray_logging` is active.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)

    def write(self, line: str) -> None:
        """Append one line (ANSI escape sequences removed)."""
        self._file.write(Text.from_ansi(line).plain + "\n")

    def close(self) -> None:
        self._file.close()

    @contextlib.contextmanager
    def capture_ray_logging(self) -> Iterator[None]:
        """Send the ``ray`` logger's records to this file instead of stderr; restore after.

        Ray configures its ``ray`` logger when imported (``ray._private.log``: a stderr
        handler, ``propagate=False``), so Ray is imported first.
        """
        import ray  # noqa: F401  (configures the "ray" logger)

        logger = logging.getLogger("ray")
        saved = logger.handlers[:]
        handler = logging.StreamHandler(self._file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.handlers = [handler]
        try:
            yield
        finally:
            logger.handlers = saved
