"""Which stack file a ``raygke`` command reads, loading it, and the node-pool table it prints.

One rule for every command (``check``, ``synth``, ``local ...``):

* ``--stack NAME`` reads ``Pulumi.NAME.yaml`` in the current directory; the stack is ``NAME``.
* ``--config FILE`` reads ``FILE``; the stack is ``NAME`` when the file is named
  ``Pulumi.NAME.yaml`` (or ``.yml``), else the file's stem.
* Both at once is a usage error.
* Neither: commands without a built-in stack (``check``, ``synth``) refuse; ``raygke local``
  uses its built-in ``local`` environment. ``--stack local`` without a ``Pulumi.local.yaml``
  also means the built-in one.

Pulumi's own naming of stack files: https://www.pulumi.com/docs/iac/concepts/projects/project-file/
("Stack settings files ... ``Pulumi.<stack-name>.yaml``").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from components.kernel.base import plural
from contract.errors import ConfigurationError
from raygke.console import EXIT_FAILED, EXIT_USAGE, err
from raygke.console import table as make_table

# ``--set KEY=VALUE``, one definition for every command that reads a stack file's values
# (check, synth, diff, cost, queue): components.config.overrides.parse_set / apply_overrides.
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        # escaped: typer renders help as rich markup, where [name] would be a style tag
        help=escape(
            "KEY=VALUE: set a ray-gke config value, read as YAML; KEY is a stack path as problems "
            "print it: dotted keys set nested values (cluster.name=ray), [name] or [index] a list "
            "entry (node_pools[tpu].max_slices=2, node_pools[0].max_nodes=3), [key] a mapping's "
            "key (nap.resource_limits[cpu]=512, ...nominal[nvidia.com/gpu]=4). For values a Pulumi "
            "ESC environment provides, or to try one in place of the file's; project= and region= "
            "also set gcp:project / gcp:region in the rendered program (the two must not differ). "
            "Repeatable"
        ),
    ),
]

STACK_FILE = re.compile(r"Pulumi\.(.+)\.ya?ml")


class StackChoiceError(ConfigurationError):
    """The options name no readable stack file; ``str(e)`` is the one-line message."""

    exit_code = 2  # a usage error


@dataclass(frozen=True)
class StackChoice:
    """The stack a command acts on.

    Attributes:
        name: the stack name (``Pulumi.<name>.yaml``), or the built-in stack's name.
        path: the stack file; None for the built-in stack (no file).
    """

    name: str
    path: Path | None


def stack_name_for(path: Path) -> str:
    """``Pulumi.prod.yaml`` -> ``prod``; any other file -> its stem."""
    m = STACK_FILE.fullmatch(path.name)
    return m.group(1) if m else path.stem


def _readable(path: Path, what: str = "") -> Path:
    """``path`` when it is a regular file (or a link to one); else StackChoiceError saying what
    it is: a directory, not a regular file (a FIFO, socket or device, which reading could block
    on or never end), or absent."""
    try:
        regular = path.is_file()
        exists = path.exists()
    except OSError as e:  # e.g. a name too long, a loop of links
        raise StackChoiceError(f"cannot read {path}: {e.strerror or e}{what}") from None
    if not regular:
        why = (
            "is a directory"
            if path.is_dir()
            else "not a regular file"
            if exists
            else "no such file"
        )
        raise StackChoiceError(f"cannot read {path}: {why}{what}")
    return path


# Pulumi's stack name rule (pulumi/pulumi sdk/go/common/tokens, ValidateStackName: "a stack name
# may only contain alphanumeric, hyphens, underscores, or periods", at most 100 characters), so
# that --stack names a file in this folder and nothing else (``../x`` is refused).
STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def choose_stack(
    stack: str | None,
    config: Path | None,
    *,
    builtin: str | None = None,
    cwd: Path | None = None,
) -> StackChoice:
    """The stack named by ``--stack`` / ``--config`` (rules in the module docstring).

    Args:
        stack: the ``--stack`` value or None.
        config: the ``--config`` value or None.
        builtin: name of the command's built-in stack (``local``), or None when it has none.
        cwd: folder holding ``Pulumi.<stack>.yaml`` files (default: the current directory).

    Raises:
        StackChoiceError: both options; neither without a built-in stack; a missing or
            unreadable (directory) file.
    """
    if stack is not None and config is not None:
        one = "at most one" if builtin else "exactly one"
        raise StackChoiceError(f"give {one} of --stack NAME or --config FILE")
    if config is not None:
        return StackChoice(stack_name_for(config), _readable(config))
    if stack is None:
        if builtin is None:
            raise StackChoiceError("give exactly one of --stack NAME or --config FILE")
        return StackChoice(builtin, None)
    if not STACK_NAME.fullmatch(stack):
        raise StackChoiceError(
            f"--stack {stack!r}: a stack name may only contain alphanumeric characters, hyphens, "
            "underscores or periods (Pulumi's rule); for a file elsewhere give --config FILE"
        )
    folder = cwd or Path.cwd()
    path = folder / f"Pulumi.{stack}.yaml"
    if stack == builtin and not path.exists():
        return StackChoice(builtin, None)
    here = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))
    known = f"; stacks here: {', '.join(here)}" if here and not path.exists() else ""
    return StackChoice(stack, _readable(path, f" (stack {stack!r}{known})"))


def format_or_exit(fmt: str, formats: tuple[str, ...]) -> str:
    """``fmt`` when it is one of ``formats`` (a command's ``--format``); else one ``error:`` line
    naming them and exit 2 (usage)."""
    if fmt not in formats:
        err.print(f"error: --format {fmt!r}: expected one of {', '.join(formats)}", markup=False)
        raise typer.Exit(EXIT_USAGE)
    return fmt


def choose_or_exit(
    stack: str | None, config: Path | None, *, builtin: str | None = None, fmt: str = "text"
) -> StackChoice:
    """:func:`choose_stack`, printing its one-line error and exiting 2 (usage) on failure (with
    ``fmt`` ``json`` or ``github``, also as that report on stdout: :func:`_unreadable`)."""
    try:
        return choose_stack(stack, config, builtin=builtin)
    except StackChoiceError as e:
        from components.kernel.base import one_line

        named = config if config is not None else Path(f"Pulumi.{stack or builtin}.yaml")
        _unreadable(named, one_line(str(e)), fmt)


def load_or_exit(
    path: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    checking: bool = False,
    fmt: str = "text",
) -> Any:
    """Load and validate a stack file (``components.stack.loader.load_stack_file``, with ``overrides``
    from ``--set``) into a ``StackConfig``; print every problem and exit 1 when invalid, 2 when
    unreadable."""
    from components.kernel.base import StackConfigError
    from components.stack.loader import load_stack_file

    try:
        return load_stack_file(path, overrides) if overrides else load_stack_file(path)
    except (StackConfigError, OSError, UnicodeDecodeError) as e:
        refuse_stack(path, e, checking=checking, fmt=fmt)


def refuse_stack(
    path: Path, e: Exception, *, checking: bool = False, fmt: str = "text"
) -> NoReturn:
    """Print why the stack file ``path`` was not loaded and exit: a ``--set`` that does not fit
    it (:class:`components.stack.loader.SetError`) is a usage error (2); a file that is not a
    stack file (``StackFileError``) or cannot be read (``OSError``, not UTF-8) is unreadable (2);
    an invalid config (``StackConfigError``) prints its problems in ``fmt`` and exits 1."""
    from components.kernel.base import StackConfigError, StackFileError
    from components.stack.loader import SetError

    if isinstance(e, SetError):
        _bad_set(e)
    if isinstance(e, StackFileError):
        _unreadable_stack_file(path, e, fmt)
    if isinstance(e, StackConfigError):
        _print_invalid(path, e.problems, e.notes, checking=checking, fmt=fmt)
    _unreadable(path, f"cannot read {path}: {e}", fmt)


def pools_table(pools: Mapping[str, Mapping[str, Any]], title: str = "node pools") -> Table:
    """Rich table: one row per node pool (machine type, accelerator, chips per host, hosts per
    slice, maximum scale).

    Args:
        pools: config pool name -> the ``node_pools`` stack output's entry, as built by
            ``components.stack.outputs.accelerator_summary`` (keys ``kind``,
            ``machine_type``, ``gke_node_pools``; TPU ``accelerator``, ``topology``,
            ``chips_per_host``, ``hosts_per_slice``, ``chips_per_slice``, ``max_slices``; GPU
            ``accelerator``, ``gpus_per_node``, ``max_nodes``; CPU ``max_nodes``).
        title: the table's title.
    """
    cols = ("pool", "kind", "machine type", "accelerator", "chips/host", "hosts/slice", "max")
    table = make_table(title, cols)
    for name, p in pools.items():
        if p["kind"] == "tpu":
            n = len(p["gke_node_pools"])
            row = (
                f"{p['accelerator']} {p['topology']} ({p['chips_per_slice']} chips)",
                str(p["chips_per_host"]),
                str(p["hosts_per_slice"]),
                f"{plural(p['max_slices'], 'slice')} ({plural(n, 'GKE pool')})",
            )
        elif p["kind"] == "gpu":
            row = (
                f"{p['gpus_per_node']} x {p['accelerator']}",
                str(p["gpus_per_node"]),
                "1",
                plural(p["max_nodes"], "node"),
            )
        else:
            row = ("-", "-", "1", plural(p["max_nodes"], "node"))
        table.add_row(name, p["kind"], p["machine_type"], *row)
    return table


@dataclass(frozen=True)
class CheckedStack:
    """A stack file loaded for ``raygke check``.

    Attributes:
        cfg: the validated config; keys an ESC environment provides hold stand-ins
            (:func:`components.stack.loader.esc_stand_ins`).
        environments: the ESC environments the file imports.
        from_environment: required keys neither the file nor ``--set`` gives, expected from
            those environments (not checked offline).
    """

    cfg: Any
    environments: tuple[str, ...]
    from_environment: tuple[str, ...]


def parse_sets_or_exit(sets: list[str] | None) -> dict[str, Any]:
    """The ``--set KEY=VALUE`` items as overrides (:func:`components.stack.loader.parse_set`); a bad item
    is a usage error: its one line is printed and the command exits 2."""
    from components.kernel.base import StackConfigError
    from components.stack.loader import parse_set

    try:
        return parse_set(list(sets or []))
    except StackConfigError as e:
        err.print(f"error: {'; '.join(e.problems)}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


def _bad_set(e: Exception) -> NoReturn:
    """A ``--set`` that does not fit the stack file (:class:`components.stack.loader.SetError`):
    a usage error, its one line printed, exit 2."""
    err.print(f"error: {'; '.join(getattr(e, 'problems', [str(e)]))}", markup=False)
    raise typer.Exit(EXIT_USAGE)


def _environments(path: Path) -> tuple[str, ...]:
    """The ESC environments ``path`` imports; ``()`` when none or unreadable (the loader then
    says what is wrong with the file)."""
    from components.kernel.base import StackConfigError  # StackFileError is one
    from components.stack.loader import stack_environments

    try:
        text = path.read_text(encoding="utf-8")
        # the YAML is read a second time only where it can name an environment
        return stack_environments(text, str(path)) if "environment" in text else ()
    except (StackConfigError, OSError, UnicodeDecodeError):
        return ()


def load_for_render(path: Path, sets: list[str] | None) -> tuple[Any, dict[str, Any]]:
    """(validated config, overrides) for the commands that run the program (``synth``, ``cost``):
    the stack file with ``--set KEY=VALUE`` overrides applied, loaded as :func:`load_or_exit`
    does. Nothing stands in for values a Pulumi ESC ``environment:`` provides (a render needs
    real ones): when the file imports one and required keys are missing, a note says to give
    them with ``--set`` before the problems are printed (exit 1)."""
    from components.kernel.base import StackConfigError  # StackFileError is one
    from components.stack.loader import required_keys, stack_data_from_yaml

    overrides = parse_sets_or_exit(sets)
    envs = _environments(path)
    if envs:
        try:
            data = stack_data_from_yaml(path.read_text(encoding="utf-8"), str(path))
        except (StackConfigError, OSError, UnicodeDecodeError):
            data = {}  # load_or_exit below says what is wrong with the file
        top = {re.split(r"[.\[]", k, maxsplit=1)[0] for k in overrides}
        missing = [k for k in required_keys() if k not in data and k not in top]
        if missing:
            err.print(
                f"note: {path} imports ESC {plural(len(envs), 'environment', with_count=False)} "
                f"{', '.join(envs)}; rendering offline "
                f"needs their values: give {', '.join(missing)} with --set KEY=VALUE",
                markup=False,
            )
    return load_or_exit(path, overrides), overrides


def load_for_check(path: Path, sets: list[str] | None, fmt: str = "text") -> CheckedStack:
    """Load a stack file as :func:`load_or_exit` does, with ``--set KEY=VALUE`` overrides, and
    tolerate the required keys a Pulumi ESC ``environment:`` provides: they are reported, not
    refused, and the other keys are checked. Prints and exits like :func:`load_or_exit` (a bad
    ``--set`` is a usage error, 2); ``fmt``: how problems are printed (``raygke check --format``,
    :mod:`raygke.report`)."""
    from components.kernel.base import StackConfigError
    from components.kernel.problems import Problem
    from components.stack.loader import (
        apply_overrides,
        esc_stand_ins,
        required_keys,
        stack_data_from_yaml,
        validate,
    )

    overrides = parse_sets_or_exit(sets)
    envs = _environments(path)
    if not envs:
        return CheckedStack(load_or_exit(path, overrides, checking=True, fmt=fmt), (), ())
    try:
        text = path.read_text(encoding="utf-8")
        data = apply_overrides(stack_data_from_yaml(text, str(path)), overrides, str(path))
    except (StackConfigError, OSError, UnicodeDecodeError) as e:
        refuse_stack(path, e, checking=True, fmt=fmt)
    expected = tuple(k for k in required_keys() if k not in data) if envs else ()
    try:
        cfg = validate(data, str(path))
    except StackConfigError as e:
        missing = {f"{k}: required field is missing" for k in expected}
        problems = [p for p in e.problems if p not in missing]
        if problems or not expected:
            _print_invalid(path, problems or e.problems, e.notes, checking=True, fmt=fmt)
        try:
            cfg = validate({**data, **esc_stand_ins(data, expected)}, str(path))
        except StackConfigError as e2:  # the stand-ins do not fit the rest: say which keys to --set
            _print_invalid(
                path,
                [
                    Problem(
                        p.path,
                        f"{p.message} (with stand-ins for {', '.join(expected)}, which ESC "
                        "provides: give them with --set KEY=VALUE to check this)",
                        p.rule,
                    )
                    for p in e2.items
                ],
                e2.notes,
                checking=True,
                fmt=fmt,
            )
    return CheckedStack(cfg, envs, expected)


def _unreadable_stack_file(path: Path, e: Any, fmt: str) -> NoReturn:
    """:func:`_unreadable` for a ``StackFileError`` ``e``: its problems in one line, at the
    position its first problem carries (a YAML syntax error's line and column)."""
    position = getattr(e.problems[0], "position", None) if e.problems else None
    message = f"cannot read {path} as a stack file: {'; '.join(e.problems)}"
    _unreadable(path, message, fmt, position)


def _unreadable(
    path: Path, message: str, fmt: str = "text", position: tuple[int, int] | None = None
) -> NoReturn:
    """A stack file that cannot be read (not YAML, not a stack file, absent): ``error: <message>``
    on stderr and exit 2; with ``fmt`` ``json`` or ``github`` also the one problem on stdout in
    that format (rule ``read``, no field path; at ``position``, (line, column) 1-based, when
    known: a YAML syntax error), so a pull request's review still shows it."""
    err.print(f"error: {message}", markup=False)
    if fmt != "text":
        from components.kernel.problems import Problem
        from raygke.report import render

        line, column = position or (None, None)
        print(render(fmt, path, [Problem("", message, "read", line=line, column=column)]))
    raise typer.Exit(EXIT_USAGE)


_SKIPPED = re.compile(r"not checked because (.+?) is invalid: (.+) \(fix it first\)")
NOTE_WIDTH = 100


def note_lines(note: str, width: int = NOTE_WIDTH) -> list[str]:
    """A ``note:`` as text lines of at most ``width`` characters: the rules a broken key kept
    from running as a head line (``note: not checked because node_pools is invalid (fix it
    first): 22 rules``) and the rule names wrapped below it; any other note wrapped."""
    import textwrap

    m = _SKIPPED.fullmatch(note)
    if m is None:
        return textwrap.wrap(
            note,
            width,
            initial_indent="  note: ",
            subsequent_indent=" " * 8,
            break_on_hyphens=False,
        )
    rules = m.group(2).split(", ")
    head = f"  note: not checked because {m.group(1)} is invalid (fix it first): "
    head += plural(len(rules), "rule")
    body: list[str] = []  # whole rule names per line, never one cut in two
    for i, rule in enumerate(rules):
        item = rule + ("," if i < len(rules) - 1 else "")
        if body and len(body[-1]) + 1 + len(item) <= width:
            body[-1] += " " + item
        else:
            body.append(" " * 8 + item)
    return [head, *body]


def _print_invalid(
    path: Path,
    problems: list[str],
    notes: list[str] | None = None,
    *,
    checking: bool = False,
    fmt: str = "text",
) -> NoReturn:
    """Print every problem (one ``  - `` line each) and what was not checked because of them
    (``  note: `` lines: rules reading an invalid key; with ``checking``, for ``raygke check``,
    the render checks), then exit 1. With ``fmt`` ``json`` or ``github`` the problems go to
    stdout in that format (:func:`raygke.report.render`) instead."""
    if fmt != "text":
        from raygke.report import render

        print(render(fmt, path, problems, notes=list(notes or [])))
        raise typer.Exit(EXIT_FAILED)
    err.print(
        f"[bold red]{escape(str(path))}: invalid stack config[/] ({plural(len(problems), 'problem')})"
    )
    from components.kernel.base import one_line

    for line in problems:
        err.print(f"  - {one_line(line)}", markup=False)
    for note in notes or []:
        for line in note_lines(one_line(note)):
            err.print(line, markup=False, soft_wrap=True)
    if checking:
        for line in note_lines(
            "the checks of the rendered stack (CRD schemas, scheduling, names, IAM, security) run "
            "once the config is valid"
        ):
            err.print(line, markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAILED)
