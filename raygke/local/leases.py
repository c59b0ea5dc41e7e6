"""Who started a local cluster and who is using it (issue 50): the owner and the leases.

``raygke local up`` records, in ``state.json`` under ``started_by``, the process that ran it
(its parent: the shell of ``make local``'s recipe, or your interactive shell), with its start
time and a readable name (``make local``, or ``raygke local up`` for a command typed by hand).
Each command that uses the cluster holds a **lease** while it runs: a file
``<root>/<stack>/leases/<pid>.json`` (pid, start time, the command, who ran it, when), removed
when it ends; a lease whose process is gone is dead and swept. A Serve application holds the
lease ``serve-<app>.json`` from ``raygke local serve`` until ``serve --stop`` or ``down``.

``raygke local down --if-mine`` (the Makefile's exit step) stops the cluster only when the
calling shell's ``raygke local up`` started it and no other lease is live, and else says who
holds it and leaves it up; ``down`` by hand lists the commands it would interrupt and stops only
with ``--force``. Whoever stops a cluster leaves ``last_down.json`` (who, when, what was
interrupted), so that a command whose cluster vanished can say so in plain words
(:func:`vanished_note`). Standard library only; Linux (``/proc``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contract.errors import ConfigurationError
from raygke.local.procs import is_alive, proc_start_ticks

LEASES = "leases"
LAST_DOWN = "last_down.json"
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish"}


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def parent_pid(pid: int) -> int | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(raw[raw.rfind(")") + 2 :].split()[1])


def describe(pid: int, fallback: str) -> str:
    """A readable name for the command behind process ``pid``: the nearest ancestor (``pid``
    itself first) that is not a ``sh -c`` wrapper, as ``make local``; ``fallback`` when that is
    an interactive shell (the command was typed by hand) or unknown."""
    seen = 0
    while pid and pid > 1 and seen < 5:
        argv = cmdline(pid)
        if not argv:
            break
        prog = Path(argv[0]).name.lstrip("-")
        if prog in _SHELLS:
            if "-c" not in argv[1:]:
                return fallback  # an interactive shell: typed by hand
            pid = parent_pid(pid) or 0
            seen += 1
            continue
        if prog.startswith("python") and len(argv) > 1:
            argv = argv[1:]
            prog = Path(argv[0]).name
        words = [prog, *argv[1:4]]
        return " ".join(shlex.quote(w) for w in words)
    return fallback


def this_command() -> str:
    """``raygke local <subcommand>`` of this process (no options)."""
    words = [Path(sys.argv[0]).name or "raygke"]
    for a in sys.argv[1:]:
        if a.startswith("-"):
            break
        words.append(a)
        if len(words) >= 3:
            break
    if words[0] != "raygke":
        words[0] = "raygke"
    return " ".join(words)


def caller() -> dict[str, Any]:
    """The owner record ``up`` writes (``started_by``): this process's parent (pid, start
    ticks) and a readable name of what ran it."""
    ppid = os.getppid()
    return {
        "pid": ppid,
        "start_ticks": proc_start_ticks(ppid),
        "command": describe(ppid, this_command()),
        "at": time.time(),
    }


def started_here(state: Mapping[str, Any]) -> bool:
    """Whether this process's parent is the one that ran the ``up`` that started the cluster
    (same pid and start time)."""
    owner = state.get("started_by") or {}
    ppid = os.getppid()
    return owner.get("pid") == ppid and owner.get("start_ticks") == proc_start_ticks(ppid)


@dataclass(frozen=True)
class Lease:
    """One command using the cluster (or a Serve application: ``pid`` None)."""

    name: str
    pid: int | None
    start_ticks: int | None
    command: str
    caller: str
    at: float

    @property
    def live(self) -> bool:
        return self.pid is None or is_alive(self.pid, self.start_ticks)

    def describe(self) -> str:
        since = time.strftime("%H:%M:%S", time.localtime(self.at))
        who = f"pid {self.pid}, " if self.pid is not None else ""
        by = f"from {self.caller}, " if self.caller and self.caller != self.command else ""
        return f'"{self.command}" ({who}{by}since {since})'


def _folder(state_dir: Path) -> Path:
    return state_dir / LEASES


@contextlib.contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    folder = _folder(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def live_leases(state_dir: Path, exclude_pid: int | None = None) -> list[Lease]:
    """The live leases of the cluster recorded in ``state_dir``, oldest first; dead ones (their
    process gone) are removed."""
    folder = _folder(state_dir)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            lease = Lease(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if not lease.live:
            path.unlink(missing_ok=True)
            continue
        if exclude_pid is None or lease.pid != exclude_pid:
            found.append(lease)
    return sorted(found, key=lambda x: x.at)


def _write(state_dir: Path, lease: Lease) -> Path:
    path = _folder(state_dir) / f"{lease.name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(lease), sort_keys=True) + "\n")
    tmp.replace(path)
    return path


class Busy(ConfigurationError):
    """Another command holds a lease of the kind asked for; ``str(e)`` names it (a user-facing
    failure: under the one configuration-error root, :mod:`contract.errors`)."""


@contextlib.contextmanager
def hold(state_dir: Path, exclusive_of: str | None = None) -> Iterator[Lease]:
    """Hold a lease for this process while the block runs.

    ``exclusive_of``: a command name (``raygke local run``): raise :class:`Busy`, writing
    nothing, when another live lease of that command exists (two pipelines on one cluster fight
    for its CPUs and its pending-run record)."""
    me = os.getpid()
    with _locked(state_dir):
        if exclusive_of is not None:
            other = [x for x in live_leases(state_dir, me) if x.command == exclusive_of]
            if other:
                raise Busy(other[0].describe())
        lease = Lease(
            name=str(me),
            pid=me,
            start_ticks=proc_start_ticks(me),
            command=this_command(),
            caller=describe(os.getppid(), ""),
            at=time.time(),
        )
        path = _write(state_dir, lease)
    try:
        yield lease
    finally:
        path.unlink(missing_ok=True)


def serve_lease(state_dir: Path, app: str) -> None:
    """Record that a Serve application ``app`` runs (live until :func:`drop_serve_lease`)."""
    with _locked(state_dir):
        _write(
            state_dir,
            Lease(
                name=f"serve-{app}",
                pid=None,
                start_ticks=None,
                command=f"raygke local serve (application {app})",
                caller=describe(os.getppid(), ""),
                at=time.time(),
            ),
        )


def drop_serve_lease(state_dir: Path, app: str) -> None:
    (_folder(state_dir) / f"serve-{app}.json").unlink(missing_ok=True)


def forget(state_dir: Path) -> None:
    """A new cluster: drop a former one's Serve leases and its ``last_down.json``."""
    (state_dir / LAST_DOWN).unlink(missing_ok=True)
    folder = _folder(state_dir)
    for path in folder.glob("serve-*.json") if folder.is_dir() else []:
        path.unlink(missing_ok=True)


def record_down(state_dir: Path, interrupted: list[Lease]) -> None:
    """Write ``last_down.json`` (who stopped the cluster, when, whom it interrupted) and drop
    every lease."""
    state_dir.mkdir(parents=True, exist_ok=True)
    entry = {
        "by": " ".join(
            [this_command(), *[a for a in sys.argv[1:] if a in ("--force", "--if-mine")]]
        ),
        "caller": describe(os.getppid(), ""),
        "pid": os.getpid(),
        "at": time.time(),
        "interrupted": [x.describe() for x in interrupted],
    }
    (state_dir / LAST_DOWN).write_text(json.dumps(entry, sort_keys=True) + "\n")
    folder = _folder(state_dir)
    for path in folder.glob("*.json") if folder.is_dir() else []:
        path.unlink(missing_ok=True)


def vanished_note(state_dir: Path, since: float, resume: str) -> str | None:
    """The plain-words reason a command's cluster went away, when a ``down`` after ``since``
    (unix seconds) recorded it: who stopped it, when, and ``resume`` (how to go on); None when
    no such record exists (the cluster died otherwise)."""
    try:
        entry = json.loads((state_dir / LAST_DOWN).read_text())
    except (OSError, ValueError):
        return None
    if float(entry.get("at") or 0) < since:
        return None
    when = time.strftime("%H:%M:%S", time.localtime(entry["at"]))
    by = f"`{entry.get('by')}` (pid {entry.get('pid')}"
    by += f", from {entry['caller']})" if entry.get("caller") else ")"
    return f"the local cluster was stopped at {when} by {by} while this command ran; {resume}"
