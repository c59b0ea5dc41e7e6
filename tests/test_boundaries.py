"""The design's two import boundaries, checked on the source (AST), so a violation fails CI:

1. `workloads/` never imports `pulumi` or `components` (it runs in the Ray image).
2. `components/` never imports `ray`, `torch`, `jax` or `tensorflow` (it runs where infra is
   provisioned); from `workloads` it may import only the standard-library-only registry.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    mods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module)
    return mods


def top(mod: str) -> str:
    return mod.split(".")[0]


@pytest.mark.parametrize("path", sorted((ROOT / "workloads").rglob("*.py")), ids=str)
def test_workloads_do_not_import_iac(path: Path) -> None:
    bad = {
        m
        for m in imported_modules(path)
        if top(m) in {"pulumi", "pulumi_gcp", "pulumi_kubernetes", "components"}
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted((ROOT / "components").rglob("*.py")), ids=str)
def test_components_do_not_import_ml(path: Path) -> None:
    mods = imported_modules(path)
    bad = {m for m in mods if top(m) in {"ray", "torch", "jax", "jaxlib", "tensorflow", "optax"}}
    bad |= {m for m in mods if top(m) == "workloads" and m != "workloads.registry"}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_registry_is_standard_library_only() -> None:
    """Importing the registry (as the Pulumi side does) loads none of the ML frameworks."""
    code = (
        "import sys, workloads.registry, components.config; "
        "bad = [m for m in ('ray', 'torch', 'jax', 'pulumi') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""
