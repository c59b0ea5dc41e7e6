"""The one stack-file rule of every command (raygke.stacks) and the node-pool table."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from components.stack.outputs import accelerator_summary
from raygke.stacks import StackChoice, StackChoiceError, choose_stack, pools_table, stack_name_for
from tests.helpers import stack


def test_stack_name_for() -> None:
    assert stack_name_for(Path("/x/Pulumi.prod.yaml")) == "prod"
    assert stack_name_for(Path("Pulumi.a.b.yml")) == "a.b"
    assert stack_name_for(Path("mystack.yaml")) == "mystack"


def test_stack_option_reads_pulumi_name_yaml(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert choose_stack("dev", None, cwd=tmp_path) == StackChoice(
        "dev", tmp_path / "Pulumi.dev.yaml"
    )
    with pytest.raises(StackChoiceError, match=r"Pulumi\.nope\.yaml: no such file"):
        choose_stack("nope", None, cwd=tmp_path)


@pytest.mark.parametrize("name", ["../Pulumi", "a/b", "dev x", "", "x" * 101])
def test_a_stack_name_outside_pulumis_rule_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    with pytest.raises(StackChoiceError, match=r"may only contain alphanumeric.*--config FILE"):
        choose_stack(name, None, cwd=tmp_path)
    assert choose_stack("dev", None, cwd=tmp_path).name == "dev"


def test_config_option_names_the_stack_after_the_file(tmp_path: Path) -> None:
    f = tmp_path / "Pulumi.staging.yaml"
    f.write_text("config: {}\n")
    assert choose_stack(None, f) == StackChoice("staging", f)
    with pytest.raises(StackChoiceError, match="is a directory"):
        choose_stack(None, tmp_path)


def test_neither_or_both_options(tmp_path: Path) -> None:
    with pytest.raises(StackChoiceError, match="exactly one"):
        choose_stack(None, None, cwd=tmp_path)
    with pytest.raises(StackChoiceError, match="exactly one"):
        choose_stack("a", tmp_path / "b.yaml", cwd=tmp_path)
    with pytest.raises(StackChoiceError, match="at most one"):
        choose_stack("a", tmp_path / "b.yaml", builtin="local", cwd=tmp_path)


def test_builtin_stack_unless_its_file_exists(tmp_path: Path) -> None:
    assert choose_stack(None, None, builtin="local", cwd=tmp_path) == StackChoice("local", None)
    assert choose_stack("local", None, builtin="local", cwd=tmp_path) == StackChoice("local", None)
    (tmp_path / "Pulumi.local.yaml").write_text("config: {}\n")
    assert choose_stack("local", None, builtin="local", cwd=tmp_path).path == (
        tmp_path / "Pulumi.local.yaml"
    )
    with pytest.raises(StackChoiceError, match="stack 'other'"):
        choose_stack("other", None, builtin="local", cwd=tmp_path)


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_pools_table_one_row_per_pool(name: str) -> None:
    cfg = stack(name)
    console = Console(width=250, record=True)
    console.print(pools_table(accelerator_summary(cfg)))
    rows = [ln for ln in console.export_text().splitlines() if ln.startswith("│")]
    assert len(rows) == len(cfg.node_pools)
    for p, row in zip(cfg.node_pools, rows, strict=True):
        assert p.name in row and p.machine_type in row and p.kind in row
