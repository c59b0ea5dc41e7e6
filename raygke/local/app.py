"""What the ``raygke local`` commands share: the Typer app, the stack options, the one-line
failure and the stack-to-target resolution (:mod:`raygke.local.commands` holds ``up``, ``status``,
``serve``, ``down``; :mod:`raygke.local.run` holds ``run``)."""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer

from raygke.console import EXIT_FAILED, EXIT_USAGE, err
from raygke.local import cluster as local_cluster
from raygke.stacks import choose_or_exit, load_or_exit

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The local Ray environment: a head and worker nodes on this machine, buckets as folders.",
)

StackOpt = typer.Option(
    None, "--stack", "-s", help="Stack name: Pulumi.NAME.yaml (default: built-in 'local')"
)
ConfigOpt = typer.Option(None, "--config", "-c", help="Path to a stack file")


# The --stack / --config this command was given (set by resolve_target), shell-quoted, for the
# commands it prints for the user to run (:func:`with_target`).
_target_opts: list[str] = []
_LOCAL_COMMAND = re.compile(r"`raygke local ([^`]*)`")


def target_opts() -> str:
    """``" --stack NAME"`` / ``" --config PATH"`` (shell-quoted, the path as given) as this
    command was given them, or ``""`` for the built-in stack."""
    return "".join(f" {o}" for o in _target_opts)


def with_target(text: str) -> str:
    """``text`` with every ```raygke local ...``` command in it carrying this command's
    ``--stack`` / ``--config`` (:func:`target_opts`): run as printed, it acts on the same
    cluster."""
    opts = target_opts()
    if not opts:
        return text
    return _LOCAL_COMMAND.sub(lambda m: f"`raygke local {m.group(1)}{opts}`", text)


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print ``error: message`` (its ```raygke local ...``` commands :func:`with_target`) on
    stderr and exit ``code``."""
    err.print(f"error: {with_target(message)}", markup=False)
    raise typer.Exit(code)


def resolve_target(
    stack: str | None, config: Path | None, workers: int | None = None
) -> local_cluster.LocalTarget:
    """The :class:`~raygke.local.cluster.LocalTarget` named by the options (rules in
    :mod:`raygke.stacks`; the built-in stack is ``local``).

    Raises:
        typer.Exit(2): both options, a missing stack file, or ``--workers`` out of 0..16.
        typer.Exit(1): an invalid stack file (every problem listed).
    """
    from components.config.stack import LocalConfig

    choice = choose_or_exit(stack, config, builtin=local_cluster.BUILTIN_STACK)
    _target_opts[:] = (
        [f"--config {shlex.quote(str(config))}"]
        if config is not None
        else [f"--stack {shlex.quote(stack)}"]
        if stack is not None
        else []
    )
    local = load_or_exit(choice.path).local if choice.path is not None else LocalConfig()
    try:
        return local_cluster.make_target(choice.name, local, workers)
    except local_cluster.LocalError as e:
        fail(str(e), EXIT_USAGE)


def queue_note(stack: str | None, config: Path | None, names: list[str]) -> None:
    """Say once that Kueue queues do not apply locally (raygke.queue.local_queue_note)."""
    from raygke.queue import local_queue_note

    choice = choose_or_exit(stack, config, builtin=local_cluster.BUILTIN_STACK)
    note = local_queue_note(load_or_exit(choice.path).jobs, names) if choice.path else None
    if note:
        err.print(note, markup=False)


def dead_nodes(state: dict[str, Any]) -> list[local_cluster.NodeRecord]:
    return [n for n in local_cluster.nodes_of(state) if not n.alive]


# When this command started: a `down` recorded after it stopped this command's cluster.
STARTED_AT = time.time()


@contextlib.contextmanager
def api_errors(state: dict[str, Any], name: str, resume: str | None = None) -> Iterator[None]:
    """Turn a Jobs API failure (connection refused, HTTP error) into a one-line exit 1; when a
    ``raygke local down`` stopped the cluster meanwhile, say who and when, and ``resume`` (how
    to go on; default: start it again and rerun this command)."""
    try:
        yield
    except (typer.Exit, KeyboardInterrupt, local_cluster.LocalError):
        raise
    except Exception as e:
        from raygke.local.leases import vanished_note

        again = "raygke " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        note = vanished_note(
            Path(state["token_file"]).parent,
            STARTED_AT,
            resume or f"start it again with `raygke local up`, then run `{again}` again",
        )
        if note:
            fail(f"job {name}: {note}")
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        fail(f"job {name}: the Jobs API at {state['dashboard_url']} failed: {first}")
