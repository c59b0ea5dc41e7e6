"""The design's import boundaries, checked on the source (AST), so a violation fails CI:

1. `workloads/` never imports `pulumi` or `components` (it runs in the Ray image).
2. `components/` never imports `ray`, `torch`, `jax` or `tensorflow` (it runs where infra is
   provisioned), nor `workloads`: what both sides share is in `contract/`, which imports only the
   standard library and itself (it ships in the Ray image beside `workloads/`).
3. `components/` is one folder per concept (design.md "Layout"): its part of the stack model, its
   pure render, its checks and its ComponentResource side by side. Only a concept's
   `component.py` imports `pulumi`, and no pure file imports a `component` module. The
   `catalog/` package (sourced facts, one module per family) imports no concept, only itself
   and `contract`.
4. `contract/` (shared by infrastructure and the Ray image) imports the standard library only.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ast_source import parse_file

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = parse_file(path)
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


# The workloads modules components may import: none (they import contract/ instead).
COMPONENTS_MAY_IMPORT: set[str] = set()


@pytest.mark.parametrize("path", sorted((ROOT / "components").rglob("*.py")), ids=str)
def test_components_do_not_import_ml(path: Path) -> None:
    mods = imported_modules(path)
    bad = {
        m
        for m in mods
        if top(m) in {"ray", "torch", "jax", "jaxlib", "tensorflow", "keras", "optax"}
    }
    bad |= {m for m in mods if top(m) == "workloads" and m not in COMPONENTS_MAY_IMPORT}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted((ROOT / "contract").rglob("*.py")), ids=str)
def test_contract_imports_only_the_standard_library(path: Path) -> None:
    bad = {
        m
        for m in imported_modules(path)
        if top(m) not in sys.stdlib_module_names and top(m) not in {"contract", "__future__"}
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_registry_is_standard_library_only() -> None:
    """Importing the registry (as the Pulumi side does) loads none of the ML frameworks."""
    code = (
        "import sys, contract.registry, components.stack; "
        "bad = [m for m in ('ray', 'torch', 'jax', 'pulumi') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


PULUMI = {"pulumi", "pulumi_gcp", "pulumi_kubernetes"}

# The concept folders of components/ (design.md "Layout").
CONCEPTS = {
    "apis",
    "capacity",
    "cluster",
    "computeclass",
    "gcsft",
    "images",
    "gpunet",
    "kuberay",
    "monitoring",
    "network",
    "nodepools",
    "raycrs",
    "security",
    "stack",
    "storage",
}


# The folders of components/ that are floors of their own (tests/test_imports.py's layer table):
# what every concept stands on, the stack file as typed data, the stack resolved once.
FLOOR_FOLDERS = {"catalog", "kernel", "config", "plan"}


def test_components_top_level_is_concepts_and_catalog() -> None:
    """Only the concept folders and the floors below them (the catalog, the kernel, config and
    plan: tests/test_imports.py's layer table) sit at the top of ``components/``."""
    modules = {p.name for p in (ROOT / "components").glob("*.py")}
    folders = {
        p.name
        for p in (ROOT / "components").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    assert modules == {"__init__.py"}
    assert folders == CONCEPTS | FLOOR_FOLDERS


def _concept_files() -> list[Path]:
    folders = sorted(CONCEPTS | {"kernel", "config", "plan"})
    return [p for c in folders for p in sorted((ROOT / "components" / c).rglob("*.py"))]


@pytest.mark.parametrize("path", _concept_files(), ids=str)
def test_only_a_concepts_component_file_imports_pulumi(path: Path) -> None:
    if path.name == "component.py":
        return
    mods = imported_modules(path)
    assert not {m for m in mods if top(m) in PULUMI}, f"{path.relative_to(ROOT)} imports pulumi"
    components = {m for m in mods if m.startswith("components.") and m.endswith(".component")}
    assert not components, f"{path.relative_to(ROOT)} (pure) imports {sorted(components)}"


CATALOG_FILES = sorted((ROOT / "components" / "catalog").glob("*.py"))


@pytest.mark.parametrize("path", CATALOG_FILES, ids=str)
def test_catalog_imports_no_concept(path: Path) -> None:
    """A catalog module imports the standard library, ``contract`` and (relatively) its own
    package: no concept, no Pulumi, no workloads."""
    tree = parse_file(path)
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert all(n.level == 1 for n in relative), f"{path.name} imports from above its package"
    bad = {
        m for m in imported_modules(path) if top(m) not in sys.stdlib_module_names | {"contract"}
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted((ROOT / "contract").rglob("*.py")), ids=str)
def test_contract_is_standard_library_only(path: Path) -> None:
    bad = {
        m for m in imported_modules(path) if top(m) not in sys.stdlib_module_names | {"contract"}
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
