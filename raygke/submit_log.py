"""A submitted job's output (``raygke submit``): every line, ANSI colours removed, to its log
file, and to the terminal all but Ray's own INFO/DEBUG records (:class:`JobLog`); a job that did
not succeed named with its driver's exit code (:func:`failure_detail`)."""

from __future__ import annotations

import re
from pathlib import Path

# Ray's own log records in a job's output (the driver's ``ray.init``, a worker's records):
# ``2026-12-07 03:40:12,345\tINFO worker.py:1917 -- Connecting to existing Ray cluster ...``,
# perhaps behind a ``(pid=123, ip=...)`` prefix; they go to the job's log file, not the terminal.
_RAY_RECORD = re.compile(
    r"^(?:\([^)]*\)\s+)?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:DEBUG|INFO)\s+\S+:\d+ -- "
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class JobLog:
    """A submitted job's output: every line (ANSI colours removed) to ``path``, and to the
    terminal every line but Ray's own INFO/DEBUG records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)
        self.hidden = 0

    def line(self, raw: str) -> None:
        plain = _ANSI.sub("", raw)
        self._file.write(plain + "\n")
        if _RAY_RECORD.match(plain):
            self.hidden += 1
        else:
            print(plain, flush=True)

    def close(self) -> None:
        self._file.close()


def failure_detail(url: str, headers: dict[str, str], job_id: str) -> str:
    """``" (Job entrypoint command failed with exit code 3)"`` of a job that did not succeed:
    its driver's exit code and the first line of the Jobs API's message (without the log tail it
    quotes: the lines were shown); ``""`` when neither is known."""
    from ray.job_submission import JobSubmissionClient

    try:
        info = JobSubmissionClient(url, headers=headers).get_job_info(job_id)
    except Exception:
        return ""
    code = getattr(info, "driver_exit_code", None)
    message = (str(getattr(info, "message", "") or "").strip().splitlines() or [""])[0]
    message = message.split(", last available logs", 1)[0].rstrip(":")  # the logs came already
    parts = [f"exit code {code}"] if code is not None and f"exit code {code}" not in message else []
    parts += [message] if message else []
    return f" ({': '.join(parts)})" if parts else ""
