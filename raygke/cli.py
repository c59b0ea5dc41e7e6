"""``raygke``: what Pulumi itself does not do — offline checks and renders of a stack, and the
local environment.

Exit codes, for every command: 0 success; 1 the stack is invalid (every problem listed, one line
each) or a job failed; 2 usage error or unreadable file; 3 internal error (a bug in raygke: one line
``internal error: <ExceptionType>: <message>; rerun with --debug for the traceback`` on stderr;
``raygke --debug <command>`` or ``RAYGKE_DEBUG=1`` prints the traceback instead).
"""

from __future__ import annotations

import atexit
import gc
import inspect
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from components.config.epochs import epoch_note
from components.config.nodepools import GpuPool, TpuPool
from components.config.stack import StackConfig
from components.kernel.base import plural
from contract.errors import ConfigurationError
from raygke import images as images_cli
from raygke import migrate as migrate_cli
from raygke import submit
from raygke.console import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_USAGE,
    console,
    err,
    gc_paused,
    print_table,
    working,
)
from raygke.local import commands as local
from raygke.stacks import (
    SetOption,
    choose_or_exit,
    format_or_exit,
    load_for_check,
    load_for_render,
    parse_sets_or_exit,
    pools_table,
)

app = typer.Typer(
    name="raygke",
    help="Offline checks and renders of a ray-gke stack, and the local Ray environment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DEBUG_ENV = "RAYGKE_DEBUG"
_debug = False  # set by the --debug option; read by main() when a command raises
_one_shot = False  # main() runs this process's own command line: the process ends with it


@app.callback()
def _options(
    debug: bool = typer.Option(
        False,
        "--debug",
        help=f"Print the traceback of an internal error (exit 3) instead of one line "
        f"(also: {DEBUG_ENV}=1)",
    ),
) -> None:
    """Offline checks and renders of a ray-gke stack, and the local Ray environment."""
    global _debug
    _debug = debug


def summary_line(cfg: StackConfig) -> str:
    """``3 node pools, 8 TPU chips on 2 hosts, 2 GPUs (at max scale), 1 ray cluster, 2 jobs,
    1 service`` (:func:`components.kernel.base.plural`)."""
    chips = sum(p.slice.chips * p.max_slices for p in cfg.node_pools if isinstance(p, TpuPool))
    hosts = sum(p.slice.hosts * p.max_slices for p in cfg.node_pools if isinstance(p, TpuPool))
    gpus = sum(p.gpu.count * p.max_nodes for p in cfg.node_pools if isinstance(p, GpuPool))
    return (
        f"{plural(len(cfg.node_pools), 'node pool')}, {plural(chips, 'TPU chip')} on "
        f"{plural(hosts, 'host')}, {plural(gpus, 'GPU')} (at max scale), "
        f"{plural(len(cfg.ray_clusters), 'ray cluster')}, {plural(len(cfg.jobs), 'job')}, "
        f"{plural(len(cfg.services), 'service')}"
    )


@app.command()
def check(
    ctx: typer.Context,
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    render: bool = typer.Option(
        True,
        "--render/--no-render",
        help="Also render the stack and check the rendered objects (CRD schemas, scheduling, IAM)",
    ),
    policy: bool = typer.Option(
        True,
        "--policy/--no-policy",
        help="With --render, also run the policy pack's GCP rules over the Pulumi program "
        "rendered under mocks (as raygke synth does; adds the program's run time)",
    ),
    sets: SetOption = None,
    fmt: str = typer.Option(
        "text",
        "--format",
        "-f",
        help="text | json | github: how problems are printed (json: the problems as objects "
        "with their stack path, rule, line and column; github: workflow annotations on the "
        "stack file's lines; docs/checking.md)",
    ),
) -> None:
    """Validate a stack offline: config rules, that a deployer can reach the Kubernetes API, and
    (unless --no-render) the rendered stack and the policy pack's secure-default rules (policy/, the
    same rule functions)."""
    from raygke.report import FORMATS

    # seconds of work over long-lived objects (raygke.console); as the process's own command,
    # the collector stays off to the end and the heap is frozen at exit (no last collection over
    # the providers' generated classes: about a second of CPU that frees nothing still needed)
    if _one_shot:
        atexit.register(gc.freeze)
    ctx.with_resource(gc_paused(resume=not _one_shot))
    format_or_exit(fmt, FORMATS)
    choice = choose_or_exit(stack, config, fmt=fmt)
    path = choice.path
    assert path is not None  # no built-in stack: a file is always chosen
    loaded = load_for_check(path, sets, fmt)
    cfg = loaded.cfg
    if loaded.from_environment and fmt == "text":
        err.print(
            f"note: {path} imports ESC "
            f"{plural(len(loaded.environments), 'environment', with_count=False)} "
            f"{', '.join(loaded.environments)}; expected "
            f"from them: {', '.join(loaded.from_environment)} (not checked offline: placeholders "
            f"stand in for them; give the values with --set KEY=VALUE to check them too)",
            markup=False,
        )
    from components.cluster.maintenance import maintenance_warnings
    from components.gpunet.rules import gpudirect_grants, multi_node_jobs_without_gpu_networking
    from components.images.checks import image_warnings
    from components.kernel.problems import Problem
    from components.network.access import reachability_problems
    from components.plan.plan import plan

    warnings = list(cfg.notices)  # deprecated spellings, refusals newer than the stack's epoch
    warnings += image_warnings(cfg.ray.images)
    stack_plan = plan(cfg)
    warnings += maintenance_warnings(stack_plan, cfg.cluster)
    warnings += list(multi_node_jobs_without_gpu_networking(stack_plan))
    # what gpu_networking: gpudirect grants, said every run
    warnings += gpudirect_grants(stack_plan)
    for line in warnings if fmt == "text" else ():
        err.print(f"[yellow]warning:[/] {escape(line)}")
    held = [Problem(h.path, h.note(), "newer-default", "warning") for h in cfg.held_defaults]
    if fmt == "text":
        for line in held:
            err.print(f"note: {line}", markup=False)
        if cfg.epoch.why:
            err.print(f"note: {epoch_note(path, cfg.epoch)}", markup=False)
    warnings += held
    problems: list[Problem] = reachability_problems(
        cfg.cluster.dns_endpoint, cfg.network.master_authorized_networks
    )
    skipped: list[str] = []  # what this run did not check, said on the ok line
    if not render:
        from components.stack.checks import RENDER_CHECKS

        skipped = [*RENDER_CHECKS, "policy rules"]  # the keys: checks in words
    if render:
        from components.stack.checks import check_stack

        with working(f"checking the rendered objects of {path.name}"):
            found = check_stack(cfg)
        # a CRD's CEL rule that could not be evaluated is a warning (components.kernel.crdschema)
        notes = [p for p in found if p.severity == "warning"]
        problems += [p for p in found if p.severity != "warning"]
        warnings += notes
        for line in notes if fmt == "text" else ():
            err.print(f"[yellow]warning:[/] {escape(line)}")
        if not policy:
            skipped.append("policy rules")
        elif not problems:  # the program renders only what the checks above accept
            if loaded.from_environment or sets:
                err.print(
                    "note: policy rules not run: the program renders the stack file as it is, "
                    "without the ESC or --set values",
                    markup=False,
                )
                skipped.append("policy rules")
            else:
                import raygke.synth  # pulumi is imported only here

                with working(f"rendering {path.name} under mocks for the policy rules"):
                    found = raygke.synth.policy_problems(path, choice.name)
                problems = found
    if fmt != "text":
        from raygke.report import render

        print(render(fmt, path, problems, warnings=warnings, summary=summary_line(cfg)))
        if problems:
            raise typer.Exit(EXIT_FAILED)
        return
    if problems:
        err.print(
            f"[bold red]{escape(str(path))}: the rendered stack has "
            f"{plural(len(problems), 'problem')}[/]"
        )
        from components.kernel.base import one_line

        for line in problems:
            err.print(f"  - {one_line(line)}", markup=False)
        raise typer.Exit(EXIT_FAILED)
    from components.stack.outputs import accelerator_summary

    print_table(
        pools_table(accelerator_summary(cfg), f"node pools of {cfg.cluster.name} ({cfg.location})")
    )
    from components.plan.plan import plan
    from components.raycrs.training_fit import training_fit_lines

    # each training job's bytes per device (its fit check)
    for line in training_fit_lines(plan(cfg), cfg.jobs):
        console.print(escape(line), soft_wrap=True)
    note = ""
    if not render:
        note = f" (config only; render checks skipped: {', '.join(skipped)})"
    elif skipped:
        note = f" ({', '.join(skipped)} skipped)"
    console.print(
        f"[green]ok[/] {escape(str(path))}{escape(note)}: {escape(summary_line(cfg))}",
        soft_wrap=True,
    )


@app.command()
def synth(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resources.json, manifests/)"),
    sets: SetOption = None,
    resources_only: bool = typer.Option(
        False,
        "--resources-only",
        help="Write resources.json and outputs.json only, no manifests/ (what raygke diff "
        "reads; faster for a stack that installs the KubeRay CRDs)",
    ),
) -> None:
    """Run the real Pulumi program under mocks (no CLI, no cloud) and write what it declares."""
    choice = choose_or_exit(stack, config)
    assert choice.path is not None  # no built-in stack: a file is always chosen
    _, overrides = load_for_render(choice.path, sets)
    _writable_folder_or_exit(out)
    import raygke.synth  # pulumi is imported only for this command

    with working(f"rendering {choice.path.name} under mocks"):
        result = raygke.synth.synth(
            choice.path, out, choice.name, overrides, manifests=not resources_only
        )
    raygke.synth.print_summary(result, out, console)


DIFF_FORMATS = ("text", "markdown", "json")


@app.command()
def diff(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: Pulumi.NAME.yaml at both revisions"
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        help="A stack file: one in this repository against its version at --base (default: "
        "main); one outside it against --against STACK (or the repository's file of the same "
        "name) at --base",
    ),
    against: str | None = typer.Option(
        None,
        "--against",
        help="With --config: compare the file with this stack's Pulumi.STACK.yaml at --base",
    ),
    base: str | None = typer.Option(
        None, "--base", help="Git revision of the base side (default: HEAD; main with --config)"
    ),
    head: str | None = typer.Option(
        None, "--head", help="Git revision of the head side (default: the working tree)"
    ),
    fmt: str = typer.Option("text", "--format", "-f", help="text | markdown | json"),
    exit_code: bool = typer.Option(
        False,
        "--exit-code",
        help="Exit 0 when there are no changes, 1 when there are changes, 4 when a change "
        "stops or restarts running work (a non-empty disruption), 5 when a side cannot be "
        "rendered or raygke check refuses the head side (an invalid stack)",
    ),
    sets: SetOption = None,
    full: bool = typer.Option(
        False, "--full", help="List every changed field (text format; digest-only changes too)"
    ),
) -> None:
    """The plan between two offline renders (create, update, replace with the field that forces
    it, delete), with the cost delta at minimum and maximum scale. --set values apply to the
    head side only (the change you are trying), never to the base. A head side that renders
    but that raygke check refuses is listed after the plan and exits 1 (5 with --exit-code)."""
    format_or_exit(fmt, DIFF_FORMATS)
    if (stack is None) == (config is None):
        err.print("error: give exactly one of --stack NAME or --config FILE", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if against is not None and config is None:
        err.print("error: --against STACK goes with --config FILE", markup=False)
        raise typer.Exit(EXIT_USAGE)
    parse_sets_or_exit(sets)  # a bad --set is a usage error before anything renders
    from raygke.diff import formats
    from raygke.diff.compare import DiffError
    from raygke.diff.sides import plan_sides

    try:
        with working(f"rendering both sides of {config or f'Pulumi.{stack}.yaml'}"):
            plan = plan_sides(stack, config, base, head, list(sets or []), against=against)
    except DiffError as e:
        from raygke.diff.disruption import EXIT_NO_PLAN

        # with --exit-code, 1 means "changes": an invalid side must not read as one
        if exit_code and e.exit_code == EXIT_FAILED:
            e.exit_code = EXIT_NO_PLAN
        raise  # main's handler of configuration errors prints it
    if fmt == "json":
        sys.stdout.write(formats.render_json(plan))
    elif fmt == "markdown":
        sys.stdout.write(formats.render_markdown(plan))
    else:
        formats.render_text(plan, console, full=full)
    if plan.refused:  # it renders, but check refuses it: never an ordinary exit
        from raygke.diff.disruption import EXIT_NO_PLAN

        raise typer.Exit(EXIT_NO_PLAN if exit_code else EXIT_FAILED)
    if exit_code and plan.disruptive():
        from raygke.diff.disruption import EXIT_DISRUPTIVE

        raise typer.Exit(EXIT_DISRUPTIVE)
    if exit_code and plan.changes:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def cost(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    fmt: str = typer.Option("text", "--format", "-f", help="text | json"),
    sets: SetOption = None,
) -> None:
    """Hourly and monthly (730 h) list cost per node pool at minimum and maximum scale, plus the
    cluster fee, from the catalog's dated price table (unknown prices shown as unknown)."""
    format_or_exit(fmt, ("text", "json"))
    choice = choose_or_exit(stack, config)
    assert choice.path is not None  # no built-in stack: a file is always chosen
    _, overrides = load_for_render(choice.path, sets)
    import raygke.synth
    from raygke.cost.estimate import stack_cost

    config = raygke.synth.program_config(choice.path, overrides)
    with working(f"rendering {choice.path.name} under mocks"):
        records, _ = raygke.synth.run_program(config, choice.name, crd_specs="digest")
    result = stack_cost(records)
    if fmt == "json":
        import json

        sys.stdout.write(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
        return
    from raygke.cost.table import print_cost

    print_cost(result, choice.name, console)


def _writable_folder_or_exit(out: Path) -> None:
    """Create ``out`` (a folder); a path that is a file or cannot be created is a usage error
    (exit 2), said in one line."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = "is a file, not a folder" if out.is_file() else (e.strerror or str(e))
        err.print(f"error: --out {out}: {why}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


DOCS_FILE = Path("docs/stack-config.md")


@app.command()
def docs(
    write: bool = typer.Option(
        False, "--write", help="Write the reference to --out (the tracked file) instead of stdout"
    ),
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 when --out differs from the model (for CI)"
    ),
    out: Path = typer.Option(
        DOCS_FILE, "--out", "-o", help="The file --write writes and --check compares"
    ),
) -> None:
    """Print the stack file reference, generated from the stack model (--write: write it to
    the tracked file; --check: exit 1 when that file is stale)."""
    from components.config.reference import render_reference

    if write and check:
        err.print("error: --write and --check exclude each other", markup=False)
        raise typer.Exit(EXIT_USAGE)
    text = render_reference()
    if check:
        if not out.is_file():
            err.print(
                f"{out} does not exist; write it: raygke docs --write --out {out}", markup=False
            )
            raise typer.Exit(EXIT_FAILED)
        if out.read_text() != text:
            err.print(
                f"{out} differs from the stack model; regenerate it: raygke docs --write --out {out}",
                markup=False,
            )
            raise typer.Exit(EXIT_FAILED)
        console.print(f"[green]ok[/] {escape(str(out))} matches the stack model")
        return
    if not write:
        if out != DOCS_FILE:
            err.print("error: --out is the file of --write or --check; give one", markup=False)
            raise typer.Exit(EXIT_USAGE)
        sys.stdout.write(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"wrote {escape(str(out))}")


app.command()(submit.submit)
app.command()(migrate_cli.migrate)
app.command()(migrate_cli.new)
from raygke.queue import queue as _queue  # noqa: E402  (the admission preview, raygke/queue.py)

app.command(name="queue")(_queue)
app.add_typer(local.app, name="local", help="The local Ray environment (no cloud).")
app.add_typer(
    images_cli.app, name="images", help="The requirement files of the project's Ray images."
)


def _reflow(text: str) -> str:
    """A docstring's paragraphs as single lines (list items keep their own lines), so the help
    wraps at the terminal's width, not at the source's line breaks."""
    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for ln in para.splitlines():
            if lines and not ln.lstrip().startswith(("* ", "- ", "\b")):
                lines[-1] += " " + ln.strip()
            else:
                lines.append(ln)
        out.append("\n".join(lines))
    return "\n\n".join(out)


def tidy_help(command: typer.core.TyperCommand | typer.core.TyperGroup) -> None:
    """Help as a reader expects it, for ``command`` and its subcommands: docstrings reflowed
    (:func:`_reflow`) and no ``<bool>`` type column on flags (``--verbose``, ``--render/--no-render``
    take no value; Typer 0.29 prints one)."""
    if command.help:
        command.help = _reflow(command.help)
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    make_help_option = command.get_help_option  # --help is made per call, not in params

    def help_option(ctx: Any) -> Any:
        option = make_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option  # type: ignore[method-assign]
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)


def _debug_wanted() -> bool:
    return _debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: ``sys.argv[1:]``) and return its exit code.

    The one place that maps outcomes to exit codes (:mod:`raygke.console`). Typer's standalone
    mode turns a command's ``typer.Exit``, usage errors (2) and Ctrl-C (130) into ``SystemExit``;
    a configuration error (:class:`contract.errors.ConfigurationError`, the one base of them) is
    the user's: ``error: <message>`` on stderr and its ``exit_code`` (1 invalid, 2 usage); any
    other exception is a bug: exit 3 with one line on stderr, or the traceback when
    ``--debug`` / ``RAYGKE_DEBUG=1`` asks for it. The console script exits with the returned code.
    """
    global _debug, _one_shot
    _debug = False
    _one_shot = argv is None  # the console script and `python -m raygke`, not a caller's argv
    try:
        return _run(argv)
    finally:
        _one_shot = False  # a later in-process command (a test's CliRunner) resumes the collector


def _run(argv: Sequence[str] | None) -> int:
    """:func:`main`'s body: the command, its exit code."""
    command = typer.main.get_command(app)
    tidy_help(command)
    try:
        command.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="raygke",
            standalone_mode=True,
        )
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        err.print(str(code), markup=False)  # sys.exit("message") prints and exits 1
        return EXIT_FAILED
    except ConfigurationError as e:
        # the one handler of configuration errors (contract.errors): the user's mistake, in words
        err.print(f"error: {e}", markup=False)
        return e.exit_code
    except BrokenPipeError:
        # the reader went away (`raygke ... | head`): no traceback, no second error when Python
        # flushes stdout at exit (https://docs.python.org/3/library/signal.html#note-on-sigpipe);
        # exit 1 as click and rich do for the output they write themselves
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as e:
        if _debug_wanted():
            traceback.print_exc()
        else:
            message = " ".join(str(e).split())
            if len(message) > 500:
                message = message[:500] + "..."
            err.print(
                f"internal error: {type(e).__name__}: {message}; "
                "rerun with --debug for the traceback",
                markup=False,
            )
        return EXIT_INTERNAL
    return 0
