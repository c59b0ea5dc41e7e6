"""``raygke migrate``: a stack file rewritten to this release's spelling and defaults epoch.

The file is edited as round-trip YAML (ruamel.yaml: comments, order, anchors and quoting stay;
the shipped stack files round-trip byte for byte). What is rewritten:

* deprecated spellings (:func:`components.config.deprecations.modernize`: a renamed workload
  and its arguments);
* ``ray-gke:defaults`` set to this release's (:data:`components.kernel.release.RELEASE`), and,
  unless ``adopt``, every newer default the file did not get written into it with the value it
  keeps (:class:`components.config.epochs.Held`), so the migrated file plans nothing new. With
  ``adopt`` the newer defaults apply, and the plan says what they replace.

The file is refused, unchanged, when today's product refuses it, and when the migrated file
would be refused (a refusal newer than its epoch becomes an error once the epoch moves forward):
fix those first.
"""

from __future__ import annotations

import difflib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from components.kernel.base import PROJECT_NAMESPACE
from components.kernel.problems import Problem
from components.kernel.release import RELEASE


@dataclass
class Migration:
    """A stack file's migration.

    Attributes:
        old: the file's text.
        new: the migrated text (equal to ``old`` when nothing changes).
        changes: what was rewritten, one line each.
        refused: the problems of the migrated file (errors); the file must not be written.
    """

    old: str
    new: str
    changes: list[str] = field(default_factory=list)
    refused: list[Problem] = field(default_factory=list)

    def file_diff(self, name: str) -> str:
        """The unified diff of the file (``--- name`` / ``+++ name (migrated)``)."""
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                name,
                f"{name} (migrated)",
            )
        )


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def migrate_text(text: str, source: str, *, adopt: bool = False) -> Migration:
    """Migrate the stack file ``text`` (named ``source`` in messages).

    Raises:
        StackConfigError: the file as written is invalid (its problems; nothing is migrated).
        StackFileError: not a stack file.
    """
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    from components.config.deprecations import modernize
    from components.stack.loader import set_key, stack_data_from_yaml, validate

    cfg = validate(stack_data_from_yaml(text, source), source)  # refuses an invalid file
    y = _yaml()
    doc = y.load(text)
    config = doc["config"]
    prefix = PROJECT_NAMESPACE + ":"
    view = {str(k)[len(prefix) :]: v for k, v in config.items() if str(k).startswith(prefix)}
    changes = [p.message for p in modernize(view)]
    if not adopt:
        for held in cfg.held_defaults:
            set_key(view, held.path, held.value, source)
            changes.append(f"{held.path}: {held.value} written (the default it was read with)")
    if cfg.defaults != RELEASE:
        written = (
            f"was {cfg.defaults}" if cfg.defaults else f"was read as {cfg.epoch.date or 'older'}"
        )
        changes.append(f"defaults: {RELEASE} ({written})")
        view["defaults"] = DoubleQuotedScalarString(RELEASE)
    for key, value in view.items():
        name = prefix + key
        if name not in config:
            if key == "defaults":  # first, as the shipped stacks write it
                config.insert(0, name, value)
            else:
                config[name] = value
        elif key == "defaults":
            config[name] = value
    out = io.StringIO()
    y.dump(doc, out)
    new = out.getvalue() if changes else text
    migration = Migration(text, new, changes)
    if changes:
        from components.kernel.base import StackConfigError

        try:
            validate(stack_data_from_yaml(new, source), source)
        except StackConfigError as e:
            migration.refused = list(e.items)
    return migration


def plan_of(path: Path, new_text: str, name: str) -> Any:
    """The plan (:class:`raygke.diff.compare.Plan`) from the stack file at ``path`` as written to
    ``new_text``, both rendered by this checkout's ``raygke synth`` (each in its own process, as
    ``raygke diff`` renders a side).

    Raises:
        DiffError: a side does not render.
    """
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import raygke
    from raygke.diff.compare import compare
    from raygke.diff.sides import cost_delta, render_tree

    code = Path(raygke.__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="raygke-migrate-") as tmp:
        migrated = Path(tmp) / path.name  # the same file name: the same stack name
        migrated.write_text(new_text, encoding="utf-8")
        with ThreadPoolExecutor(max_workers=2) as pool:
            sides = [
                pool.submit(render_tree, code, name, label, None, f)
                for label, f in (("as written", path.resolve()), ("migrated", migrated))
            ]
            old, new = (s.result() or [] for s in sides)
    plan = compare(old, new, name, "as written", "migrated")
    plan.cost = cost_delta(old, new)
    return plan


def migrate(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    adopt: bool = typer.Option(
        False,
        "--adopt",
        help="Take this release's defaults instead of writing the older ones the file is read "
        "with into it (the plan shows what they replace)",
    ),
    write: bool = typer.Option(
        False, "--write", help="Write the migrated file (default: print the diffs only)"
    ),
    plan: bool = typer.Option(
        True,
        "--plan/--no-plan",
        help="Also render the file as written and as migrated and print the plan between them",
    ),
) -> None:
    """Rewrite a stack file to this release's spelling and defaults epoch (ray-gke:defaults),
    keeping its comments and order: print the diff of the file and of the plan; write it only
    with --write. Exit 1 when the file, or the migrated file, is refused (nothing written)."""
    from rich.markup import escape

    from components.kernel.base import one_line
    from components.stack.loader import read_stack_text
    from raygke.console import EXIT_FAILED, console, err, working
    from raygke.stacks import choose_or_exit, refuse_stack

    choice = choose_or_exit(stack, config)
    path = choice.path
    assert path is not None  # no built-in stack: a file is always chosen
    text = read_stack_text(path)
    try:
        m = migrate_text(text, str(path), adopt=adopt)
    except Exception as e:
        from components.kernel.base import StackConfigError

        if not isinstance(e, StackConfigError):
            raise
        refuse_stack(path, e, checking=True)
    if not m.changes:
        console.print(f"{escape(str(path))}: nothing to migrate (written for {RELEASE})")
        return
    for line in m.changes:
        err.print(f"  - {one_line(line)}", markup=False)
    sys.stdout.write(m.file_diff(path.name))
    if m.refused:
        err.print(
            f"[bold red]{escape(str(path))}: the migrated file would be refused "
            f"({len(m.refused)} problem(s)); fix these first, nothing was written:[/]"
        )
        for p in m.refused:
            err.print(f"  - {one_line(p)}", markup=False)
        raise typer.Exit(EXIT_FAILED)
    if plan:
        from raygke.diff import formats

        with working(f"rendering {path.name} as written and as migrated"):
            found = plan_of(path, m.new, choice.name)
        formats.render_text(found, console)
    if write:
        path.write_text(m.new, encoding="utf-8")
        console.print(f"wrote {escape(str(path))}")
    else:
        console.print("not written; rerun with --write to write it")


def new(
    name: str = typer.Argument(..., help="The new stack's name: writes Pulumi.NAME.yaml"),
    start: str = typer.Option(
        "dev",
        "--from",
        help="The shipped stack to start from: dev (small, zonal, spot), prod (regional, TPU "
        "slices, H100) or scale (GPU networking, TPU7x)",
    ),
) -> None:
    """Start a stack file from a shipped one, written for this release's defaults
    (ray-gke:defaults). Refuses to overwrite a file."""
    import raygke
    from raygke.console import EXIT_USAGE, console, err
    from raygke.stacks import STACK_NAME

    shipped = Path(raygke.__file__).resolve().parents[1] / f"Pulumi.{start}.yaml"
    target = Path(f"Pulumi.{name}.yaml")
    problem = (
        f"{name!r} is not a stack name (letters, digits, '-', '_', '.')"
        if not STACK_NAME.fullmatch(name)
        else f"no shipped stack {start!r} ({shipped} does not exist)"
        if not shipped.is_file()
        else f"{target} exists; choose another name or edit it"
        if target.exists()
        else None
    )
    if problem:
        err.print(f"error: {problem}", markup=False)
        raise typer.Exit(EXIT_USAGE)
    text = shipped.read_text(encoding="utf-8")
    m = migrate_text(text, str(shipped), adopt=True)  # the shipped stacks name RELEASE already
    target.write_text(m.new, encoding="utf-8")
    console.print(
        f"wrote {target} from {shipped.name} (defaults {RELEASE}); next: edit project, region "
        f"and zones, then raygke check --stack {name}",
        soft_wrap=True,
    )
