"""The consoles and exit codes every ``raygke`` command shares."""

from __future__ import annotations

import contextlib
import sys
from contextlib import AbstractContextManager

from rich.console import Console

# Wide tables in logs (CI, `make local`), where there is no terminal to size them to.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_FAILED = 1  # a check found problems, or a job failed
EXIT_USAGE = 2  # a usage error or an unreadable file
EXIT_INTERNAL = 3  # a bug in raygke: one line on stderr (the traceback with --debug)


def working(what: str) -> AbstractContextManager[object]:
    """A spinner on stderr naming ``what`` is being done (``rendering Pulumi.prod.yaml under
    mocks``) while the block runs, for work that takes seconds; it leaves no line behind. Only
    on a terminal: in CI and pipes, where a spinner is noise, nothing is printed."""
    if not err.is_terminal:
        return contextlib.nullcontext()
    return err.status(f"{what} ...", spinner="dots")
