"""The stack file reference: every field described, docs/stack-config.md current, `raygke docs`."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import components
from components.config.reference import REGENERATE, render_reference, sections
from components.kernel.base import StackConfigError, StrictModel
from components.stack.loader import validate
from raygke.cli import app
from tests.helpers import ROOT

DOC = ROOT / "docs" / "stack-config.md"


def _models() -> list[type[StrictModel]]:
    """Every model class defined in components/ (reachable from StackConfig or not): the pure
    modules of every concept folder (the component files hold no models)."""
    for mod in pkgutil.walk_packages(components.__path__, "components."):
        if not mod.ispkg and not mod.name.endswith(".component"):
            importlib.import_module(mod.name)
    found, todo = [], list(StrictModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("components."):
            found.append(cls)
    return found


def test_every_field_of_every_model_has_a_description() -> None:
    models = _models()
    assert {"StackConfig", "CpuPool", "TpuSpec", "LocalConfig"} <= {m.__name__ for m in models}
    missing = [
        f"{m.__module__}.{m.__name__}.{name}"
        for m in models
        for name, field in m.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert not missing, f"fields without a description: {missing}"


def test_committed_reference_matches_the_model() -> None:
    assert DOC.is_file(), f"{DOC} is missing; generate it with: {REGENERATE}"
    assert DOC.read_text() == render_reference(), (
        f"{DOC.relative_to(ROOT)} differs from the stack model; regenerate it with: {REGENERATE}"
    )


def test_reference_lists_every_key_with_pool_kinds_apart() -> None:
    text = render_reference()
    for heading in (
        "`node_pools[]` (CPU pool)",
        "`node_pools[]` (TPU pool)",
        "`node_pools[]` (GPU pool)",
    ):
        assert f"## {heading}" in text
    paths = {row.path for s in sections() for row in s.rows}
    assert {
        "cluster.system_pool.max_nodes",
        "node_pools[].tpu.topology",
        "node_pools[].machine_type",  # the GPU pool's alias, not machine_type_override
        "ray_clusters[].worker_groups[].node_pool",
        "jobs[].args",
        "local.root",
    } <= paths
    assert "machine_type_override" not in text
    assert "cluster.ray_addon" not in paths and "`cluster.ray_addon`" in text  # removed keys
    (args,) = [r for s in sections() for r in s.rows if r.path == "jobs[].args"]
    assert "see workloads" in args.description


def test_raygke_docs_writes_and_checks(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "ref.md"
    result = runner.invoke(app, ["docs", "--check", "--out", str(out)])
    assert result.exit_code == 1
    assert "raygke docs" in result.output
    assert runner.invoke(app, ["docs", "--write", "--out", str(out)]).exit_code == 0
    assert out.read_text() == render_reference()
    assert runner.invoke(app, ["docs", "--check", "--out", str(out)]).exit_code == 0
    out.write_text(out.read_text().replace("GKE", "GKEE", 1))
    assert runner.invoke(app, ["docs", "--check", "--out", str(out)]).exit_code == 1


@pytest.mark.parametrize("value", [True, False])
def test_removed_ray_addon_says_what_to_write_instead(value: bool) -> None:
    data = {
        "project": "ray-gke-test",
        "region": "us-central1",
        "zones": ["us-central1-a"],
        "cluster": {"name": "ray", "ray_addon": value},
    }
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    (line,) = exc.value.problems
    assert line.startswith("cluster: ray_addon was removed")
    assert "kuberay: {mode: gke-addon}" in line
    assert "unknown key" not in line
