"""Exit codes of every ``raygke`` command (raygke/console.py): 0 valid, 1 invalid, 2 usage or
unreadable file, 3 internal error — one line, the traceback only with ``--debug``."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import components.stack.loader
from raygke.cli import main
from raygke.console import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
DEV = str(ROOT / "Pulumi.dev.yaml")


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


@pytest.fixture
def broken_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(path: object) -> None:
        raise RuntimeError("the loader\nbroke")

    monkeypatch.setattr(components.stack.loader, "load_stack_file", boom)


def test_codes() -> None:
    assert run("check", "--config", DEV, "--no-render")[0] == 0
    assert run("check")[0] == EXIT_USAGE
    assert run("check", "--bogus")[0] == EXIT_USAGE
    assert run("check", "--config", "/no/such/file.yaml")[0] == EXIT_USAGE
    assert run("--help")[0] == 0
    assert EXIT_FAILED == 1 and EXIT_INTERNAL == 3


def test_invalid_stack_exit_1(tmp_path: Path) -> None:
    p = tmp_path / "Pulumi.x.yaml"
    p.write_text("config:\n  ray-gke:project: 1\n")
    rc, out = run("check", "--config", str(p))
    assert rc == EXIT_FAILED and "Traceback" not in out


def test_internal_error_is_one_line_exit_3(
    broken_loader: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAYGKE_DEBUG", raising=False)
    rc, out = run("check", "--config", DEV)
    assert rc == EXIT_INTERNAL
    assert out == (
        "internal error: RuntimeError: the loader broke; rerun with --debug for the traceback\n"
    )


def test_debug_option_prints_the_traceback(broken_loader: None) -> None:
    rc, out = run("--debug", "check", "--config", DEV)
    assert rc == EXIT_INTERNAL
    assert "Traceback (most recent call last)" in out and "RuntimeError: the loader" in out
    # the option does not stick to the next run
    rc, out = run("check", "--config", DEV)
    assert rc == EXIT_INTERNAL and "Traceback" not in out


def test_debug_env_prints_the_traceback(
    broken_loader: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAYGKE_DEBUG", "1")
    rc, out = run("check", "--config", DEV)
    assert rc == EXIT_INTERNAL and "Traceback (most recent call last)" in out


def test_synth_out_that_is_a_file_or_cannot_be_created_is_a_usage_error(tmp_path: Path) -> None:
    """A bad --out is the user's mistake (exit 2, one line), not an internal error."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, Path("/proc/nope")):
        assert main(["synth", "--stack", "dev", "--out", str(out)]) == 2


def test_long_work_shows_a_spinner_naming_it_on_a_terminal_only(monkeypatch) -> None:
    import time

    from rich.console import Console

    import raygke.console as rc

    tty = io.StringIO()
    monkeypatch.setattr(rc, "err", Console(file=tty, force_terminal=True, width=80))
    with rc.working("rendering Pulumi.prod.yaml under mocks"):
        time.sleep(0.3)
    assert "rendering Pulumi.prod.yaml under mocks ..." in tty.getvalue()

    pipe = io.StringIO()
    monkeypatch.setattr(rc, "err", Console(file=pipe, force_terminal=False))
    with rc.working("rendering Pulumi.prod.yaml under mocks"):
        time.sleep(0.1)
    assert pipe.getvalue() == ""


@pytest.mark.parametrize(
    "argv", [["-m", "raygke", "docs"], ["-m", "contract.registry"]], ids=["raygke", "registry"]
)
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """``raygke docs | head -1``: the reader is gone before the command writes; it exits 1 (as
    click and rich do on a closed pipe), not 3 (internal error), with no traceback."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody reads
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_help_wraps_docstrings_and_shows_no_type_on_flags(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    _, out = run("check", "--help")
    assert "<bool>" not in out, out
    assert "--no-render" in out and "<str>" in out  # options that take a value keep theirs
    # the docstring's source line breaks are gone: its first sentence is on one line
    assert (
        "Validate a stack offline: config rules, that a deployer can reach the Kubernetes API, and (unless --no-render)"
        in out
    )
    _, top = run("--help")
    assert "<bool>" not in top and "Show this message and exit." in top


def test_a_narrow_console_prints_table_values_whole() -> None:
    """Every ``raygke`` table (raygke.console.table, print_table): on a 40-column console a long
    machine type and a price stay whole, each row on one line (the table printed at its natural
    width for the terminal to wrap), never folded inside a cell nor cut with an ellipsis; on a
    wide console the table is as before."""
    from rich.console import Console

    from raygke.console import print_table, table

    def render(width: int) -> str:
        t = table("cost", ("pool", "machine"), ("$/month max",))
        t.add_row("tpu-v6e-4x4-dws", "a3-highgpu-8g-and-a-long-suffix", "<= $144,431.48")
        out = io.StringIO()
        on = Console(file=out, width=width, color_system=None)
        print_table(t, on)
        assert on.width == width  # the console's width is left as it was
        return out.getvalue()

    narrow, wide = render(40), render(200)
    assert narrow == wide and "…" not in narrow
    (row,) = [line for line in narrow.splitlines() if line.startswith("│")]
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == ["tpu-v6e-4x4-dws", "a3-highgpu-8g-and-a-long-suffix", "<= $144,431.48"]


def test_piped_output_takes_its_width_from_columns_else_160() -> None:
    """In a pipe there is no terminal to measure: COLUMNS, when set, is the width (a user's
    ``COLUMNS=72 raygke queue | less``), else 160 (logs)."""
    import os
    import subprocess
    import sys

    code = "from raygke.console import console; print(console.width)"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    widths = [
        subprocess.run(
            [sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True
        ).stdout.strip()
        for e in (env, {**env, "COLUMNS": "72"})
    ]
    assert widths == ["160", "72"]


def test_a_configuration_error_from_any_layer_is_the_users_one_line_not_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one handler (raygke.cli.main): a ConfigurationError that reaches the command line -
    here a ResolveError raised below the loader, which no command catches - prints ``error: <its
    line>`` and exits with its ``exit_code`` (1 invalid, 2 usage); it is never an internal error."""
    from components.plan.resolve import ResolveError
    from raygke.stacks import StackChoiceError

    def unresolved(path: object) -> None:
        raise ResolveError("jobs[x].node_pool", "'nope' is not declared; declared: cpu")

    monkeypatch.setattr(components.stack.loader, "load_stack_file", unresolved)
    rc, out = run("check", "--config", DEV)
    assert (rc, out) == (
        EXIT_FAILED,
        "error: jobs[x].node_pool: 'nope' is not declared; declared: cpu\n",
    )

    def usage(path: object) -> None:
        raise StackChoiceError("give --stack or --config")

    monkeypatch.setattr(components.stack.loader, "load_stack_file", usage)
    assert run("check", "--config", DEV) == (EXIT_USAGE, "error: give --stack or --config\n")


def test_every_configuration_error_has_the_one_base() -> None:
    """Every configuration error of the project derives from contract.errors.ConfigurationError
    (so raygke.cli.main handles them in one place); an internal fault (a damaged carried file)
    does not."""
    from components.capacity.preview import PodSetError
    from components.catalog.labels import CatalogError
    from components.config.overrides import SetError
    from components.kernel.base import StackConfigError, StackFileError
    from components.kernel.crdschema import CarriedFileError
    from components.plan.resolve import ResolveError
    from components.raycrs.pod import ManifestError
    from components.raycrs.scaling import ScalingError
    from contract.args.base import ArgError
    from contract.errors import ConfigurationError
    from contract.quantity import QuantityError
    from raygke.diff.compare import DiffError
    from raygke.k8s_export import SkipListError
    from raygke.local.cluster import LocalError
    from raygke.stacks import StackChoiceError
    from raygke.submit import SubmitError
    from workloads.common import InputError

    errors = (
        PodSetError,
        CatalogError,
        StackConfigError,
        StackFileError,
        ManifestError,
        ScalingError,
    )
    errors += (SetError, ResolveError, ArgError, QuantityError, DiffError, SkipListError)
    errors += (StackChoiceError, InputError, LocalError, SubmitError)
    assert [e for e in errors if not issubclass(e, ConfigurationError)] == []
    assert {e.__name__: e.exit_code for e in errors if e.exit_code != 1} == {
        "StackFileError": 2,
        "SetError": 2,
        "StackChoiceError": 2,
    }
    # a DiffError carries its own: 2 (not a git work tree) by default, 1 (a side does not render)
    assert DiffError("not a git work tree").exit_code == 2
    assert DiffError("the base does not render", 1).exit_code == 1
    assert not issubclass(CarriedFileError, ConfigurationError)


def test_a_local_error_keeps_its_exit_code_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LocalError a command catches exits as before: a bad option 2, a failure 1, one line."""
    from raygke.local import cluster as local_cluster

    monkeypatch.setenv(local_cluster.ROOT_ENV, str(tmp_path))
    rc, out = run("local", "up", "--config", DEV, "--workers", "17")
    assert (rc, out) == (EXIT_USAGE, "error: --workers 17 is out of range; allowed: 0..16\n")

    def broken(target: object) -> None:
        raise local_cluster.LocalError("cannot read state.json: bad; remove it and retry")

    monkeypatch.setattr(local_cluster, "read_state", broken)
    rc, out = run("local", "status", "--config", DEV)
    assert (rc, out) == (EXIT_FAILED, "error: cannot read state.json: bad; remove it and retry\n")


def test_a_submit_error_keeps_its_exit_code_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from raygke import submit

    def no_cluster(*args: object) -> None:
        raise submit.SubmitError("stack 'dev' has no RayCluster 'x'")

    monkeypatch.setattr(submit, "plan_for_stack", no_cluster)
    rc, out = run("submit", "--config", DEV, "--cluster", "x", "--", "python", "-c", "1")
    assert (rc, out) == (EXIT_FAILED, "error: stack 'dev' has no RayCluster 'x'\n")


def test_a_local_error_no_command_caught_is_the_users_not_internal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One that reaches main is a configuration error (``error:``, exit 1), not a bug (3)."""
    from raygke.local.cluster import LocalError

    def boom(path: object) -> None:
        raise LocalError("ray is not installed")

    monkeypatch.setattr(components.stack.loader, "load_stack_file", boom)
    assert run("check", "--config", DEV) == (EXIT_FAILED, "error: ray is not installed\n")


def test_gc_paused_pauses_the_collector_and_resumes_it_unless_told() -> None:
    import gc

    from raygke.console import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with gc_paused(resume=False):
            pass
        assert not gc.isenabled()  # a process that ends with the block
    finally:
        gc.enable()


def test_a_check_called_in_process_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """``raygke check`` pauses the collector for its render; called with an argv (a caller's
    process, not the console script) it resumes it, also for a later in-process command."""
    import gc

    from typer.testing import CliRunner

    from raygke.cli import app

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["check", "--stack", "dev"]) == 0
    assert gc.isenabled()
    assert CliRunner().invoke(app, ["check", "--stack", "dev", "--no-render"]).exit_code == 0
    assert gc.isenabled()
