"""`raygke docs`: prints the stack reference by default, writes only with --write, --check for CI."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from components.stack.reference import render_reference
from raygke.cli import app

ROOT = Path(__file__).resolve().parents[2]


def test_docs_prints_to_stdout_and_writes_nothing(tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)  # a write would create docs/stack-config.md here
    try:
        result = CliRunner().invoke(app, ["docs"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert result.stdout == render_reference()
    assert not (tmp_path / "docs").exists()


def test_docs_write_then_check_then_stale(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "ref.md"
    missing = runner.invoke(app, ["docs", "--check", "--out", str(out)])
    assert missing.exit_code == 1 and "--write" in missing.output
    assert runner.invoke(app, ["docs", "--write", "--out", str(out)]).exit_code == 0
    assert out.read_text() == render_reference()
    assert runner.invoke(app, ["docs", "--check", "--out", str(out)]).exit_code == 0
    out.write_text(out.read_text() + "edited by hand\n")
    stale = runner.invoke(app, ["docs", "--check", "--out", str(out)])
    assert stale.exit_code == 1 and "differs from the stack model" in stale.output


def test_docs_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    both = runner.invoke(app, ["docs", "--write", "--check"])
    assert both.exit_code == 2 and "exclude each other" in both.output
    bare_out = runner.invoke(app, ["docs", "--out", str(tmp_path / "x.md")])
    assert bare_out.exit_code == 2 and not (tmp_path / "x.md").exists()


def test_tracked_reference_is_current_and_ci_checks_it() -> None:
    assert (ROOT / "docs/stack-config.md").read_text() == render_reference()
    lint = (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "raygke docs --check" in lint
