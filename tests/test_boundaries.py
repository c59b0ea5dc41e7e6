"""The design's import boundaries, checked on the source (AST), so a violation fails CI:

1. `workloads/` never imports `pulumi` or `components` (it runs in the Ray image).
2. `components/` never imports `ray`, `torch`, `jax` or `tensorflow` (it runs where infra is
   provisioned); from `workloads` it may import only the standard-library-only registry and
   argument dataclasses (`workloads.registry`, `workloads.args`).
3. Inside `components/` the folders are layers and data flows one way:
   `spec/` -> `builders/` -> `checks/` and `resources/`. spec/builders/checks never import
   `pulumi`; spec imports no later layer; builders import neither checks nor resources;
   checks import no resources; resources import no checks. `catalog.py` (sourced facts) imports
   no layer.
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


# The standard-library-only workloads modules components may import.
COMPONENTS_MAY_IMPORT = {"workloads.registry", "workloads.args"}


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


def test_registry_is_standard_library_only() -> None:
    """Importing the registry (as the Pulumi side does) loads none of the ML frameworks."""
    code = (
        "import sys, workloads.registry, workloads.args, components.spec; "
        "bad = [m for m in ('ray', 'torch', 'jax', 'pulumi') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


PULUMI = {"pulumi", "pulumi_gcp", "pulumi_kubernetes"}
# layer -> the components packages it may not import
FORBIDDEN_LAYERS = {
    "spec": {"components.builders", "components.checks", "components.resources"},
    "builders": {"components.checks", "components.resources"},
    "checks": {"components.resources"},
    "resources": {"components.checks"},
    # concept folder (issue 21): pure like builders; the in-cluster resources apply its objects
    "computeclass": {"components.resources"},
}


# Concept folders (design.md "Layout": model part, pure render, checks, component): only the
# component file imports pulumi. concept -> its component files.
CONCEPT_FOLDERS = {"capacity": {"component.py"}}


def _layer_files() -> list[tuple[str, Path]]:
    return [
        (layer, path)
        for layer in FORBIDDEN_LAYERS
        for path in sorted((ROOT / "components" / layer).rglob("*.py"))
    ]


def test_components_top_level_is_layers_and_catalog() -> None:
    """Only the layer folders and the catalog sit at the top of ``components/``."""
    modules = {p.name for p in (ROOT / "components").glob("*.py")}
    folders = {
        p.name
        for p in (ROOT / "components").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    assert modules == {"__init__.py", "catalog.py"}
    assert folders == set(FORBIDDEN_LAYERS) | set(CONCEPT_FOLDERS)


@pytest.mark.parametrize(
    "path",
    [p for c in CONCEPT_FOLDERS for p in sorted((ROOT / "components" / c).rglob("*.py"))],
    ids=str,
)
def test_concept_folders_import_pulumi_only_in_their_component(path: Path) -> None:
    concept = path.relative_to(ROOT / "components").parts[0]
    mods = imported_modules(path)
    if path.name not in CONCEPT_FOLDERS[concept]:
        assert not {m for m in mods if top(m) in PULUMI}, f"{path} imports pulumi"
        assert not {m for m in mods if m.startswith("components.resources")}, path


@pytest.mark.parametrize(("layer", "path"), _layer_files(), ids=lambda x: str(x))
def test_layers_import_one_way(layer: str, path: Path) -> None:
    mods = imported_modules(path)
    bad = {m for m in mods if any(m == f or m.startswith(f + ".") for f in FORBIDDEN_LAYERS[layer])}
    if layer != "resources":
        bad |= {m for m in mods if top(m) in PULUMI}
    assert not bad, f"{path.relative_to(ROOT)} ({layer}) imports {sorted(bad)}"


def test_catalog_imports_no_layer() -> None:
    mods = imported_modules(ROOT / "components" / "catalog.py")
    assert not {m for m in mods if top(m) in {"components", *PULUMI}}
