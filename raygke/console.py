"""The consoles and exit codes every ``raygke`` command shares."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager

from rich.console import Console
from rich.table import Table

# Wide tables in logs (CI, `make local`), where there is no terminal to size them to, unless
# COLUMNS says how wide (rich reads it when the width is left to it).
_PIPE_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160
console = Console(highlight=False, width=_PIPE_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_FAILED = 1  # a check found problems, or a job failed
EXIT_USAGE = 2  # a usage error or an unreadable file
EXIT_INTERNAL = 3  # a bug in raygke: one line on stderr (the traceback with --debug)


def table(title: str, columns: Iterable[str], right: Iterable[str] = (), **kw: object) -> Table:
    """A rich table titled ``title`` with ``columns`` (left-aligned) then ``right`` (numbers,
    right-aligned); ``kw`` go to :class:`rich.table.Table`. Print it with :func:`print_table`,
    which keeps every value whole on a narrow console."""
    t = Table(title=title, **kw)  # type: ignore[arg-type]
    for col in columns:
        t.add_column(col)
    for col in right:
        t.add_column(col, justify="right")
    return t


def print_table(t: Table, on: Console | None = None) -> None:
    """Print ``t`` on ``on`` (the stdout console) with every value whole: a table wider than
    the console is printed at its natural width, one line per row, and the terminal wraps the
    lines (as ``kubectl get -o wide`` does), rather than rich folding a machine type or a price
    inside its cell; a log keeps each row on one line."""
    on = on or console
    width = on.width
    natural = on.measure(t, options=on.options.update(max_width=10**5)).maximum
    try:
        on.width = max(width, natural)
        on.print(t)
    finally:
        on.width = width


def working(what: str) -> AbstractContextManager[object]:
    """A spinner on stderr naming ``what`` is being done (``rendering Pulumi.prod.yaml under
    mocks``) while the block runs, for work that takes seconds; it leaves no line behind. Only
    on a terminal: in CI and pipes, where a spinner is noise, nothing is printed."""
    if not err.is_terminal:
        return contextlib.nullcontext()
    return err.status(f"{what} ...", spinner="dots")


@contextlib.contextmanager
def gc_paused(resume: bool = True) -> Iterator[None]:
    """Within the block, Python's cyclic garbage collector does not run; after it, it runs as it
    did before (``resume=False``: it stays off, for a process that ends with the block).

    For work of seconds over a heap of long-lived objects: a render imports the providers'
    generated modules (``pulumi_gcp.compute`` alone defines thousands of classes and typing
    objects) and registers hundreds of resources, millions of objects that live until the process
    ends, which the collector traverses again each time the heap grows by a quarter (CPython
    3.11's full-collection rule): a third of ``raygke check``'s CPU time, for nothing freed. What
    the block makes is freed by reference counting as before; the cycles it leaves are collected
    after it (resumed, the first young collection walks what the block made, once). Not for a
    command that runs for long (``raygke local``, a followed job)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled and resume:
            gc.enable()
