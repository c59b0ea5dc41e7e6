"""The import graph of the project's packages (``components``, ``contract``, ``raygke``,
``workloads``), from the source (AST): module-level and function-level imports both count.

It has no circle, and the infrastructure's side (``components``) and the shared contract
(``contract``) import nothing from ``workloads`` (issue 20). Every import goes down the floors of
``FLOORS`` (a module's floor is its folder), and ``components/kernel/`` imports no concept (issue 35).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.ast_source import parse_file

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("components", "contract", "raygke", "workloads")


def module_name(path: Path, base: Path = ROOT) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules ``path`` (module ``name``) imports, anywhere in the file. ``from a
    import b`` counts ``a.b`` when that is a module, else ``a``; relative imports resolved."""
    tree = parse_file(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for t in targets:
            while t and t not in known:  # a name inside a module: the module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    mods = modules()
    known = set(mods)
    g = {name: imports_of(path, name, known) for name, path in mods.items()}
    return g


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle
    path through it (first module repeated at the end)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(_path(g, set(comp)))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _path(g: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One cycle through ``comp``'s smallest module: a shortest path from it back to itself
    (breadth-first), the first module repeated at the end."""
    start = min(comp)
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v] & comp):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return sorted(comp)


def test_the_graph_sees_function_level_imports() -> None:
    """The graph is not vacuous: a function-level import (raygke/local/run.py imports
    contract.registry inside its functions) is an edge."""
    g = graph()
    assert "contract.registry" in g["raygke.local.run"]
    assert "contract.workload" in g["contract.args.tune_lm"]


def test_circles_are_found_and_printed() -> None:
    """The detector finds a circle of a made-up graph and prints it as a path."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(g) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_a_relative_and_a_function_level_import_are_edges(tmp_path) -> None:
    """``from . import b`` inside a function of ``pkg/a.py`` is the edge pkg.a -> pkg.b."""
    (tmp_path / "pkg").mkdir()
    a = tmp_path / "pkg" / "a.py"
    a.write_text("def f():\n    from . import b\n    from pkg.c import thing\n")
    assert imports_of(a, "pkg.a", {"pkg.a", "pkg.b", "pkg.c"}) == {"pkg.b", "pkg.c"}


def test_no_import_circles() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_infrastructure_and_contract_import_nothing_from_workloads() -> None:
    g = graph()
    bad = sorted(
        f"{m} imports {w}"
        for m, deps in g.items()
        if m.split(".")[0] in ("components", "contract")
        for w in deps
        if w.split(".")[0] == "workloads"
    )
    assert not bad, "\n".join(bad)


# The CLI's local environment really runs the workloads (it reads their checkpoints to resume a
# run or pick one to serve); the rest of raygke is infrastructure and imports none of them.
RAYGKE_RUNS_WORKLOADS = {"raygke.local.jobs", "raygke.local.serve", "raygke.local.capacity"}


def test_only_the_local_runner_of_raygke_imports_workloads() -> None:
    g = graph()
    bad = sorted(
        f"{m} imports {w}"
        for m, deps in g.items()
        if m.split(".")[0] == "raygke" and m not in RAYGKE_RUNS_WORKLOADS
        for w in deps
        if w.split(".")[0] == "workloads"
    )
    assert not bad, "\n".join(bad)


def shared_prefixes(names: list[str], at_least: int = 3) -> dict[str, list[str]]:
    """Module-name prefixes (the part before the first ``_``) shared by ``at_least`` modules of
    one folder: a grouping carried by names instead of a sub-package."""
    by_prefix: dict[str, list[str]] = {}
    for n in names:
        if n != "__init__" and "_" in n.strip("_"):
            by_prefix.setdefault(n.split("_")[0], []).append(n)
    for n in names:  # ``local`` and ``local_run`` share ``local`` too
        if n in by_prefix:
            by_prefix[n].append(n)
    return {p: sorted(ms) for p, ms in by_prefix.items() if len(ms) >= at_least}


def test_shared_prefixes_are_found() -> None:
    assert shared_prefixes(["local", "local_run", "local_serve", "diff", "cost"]) == {
        "local": ["local", "local_run", "local_serve"]
    }
    assert shared_prefixes(["diff", "diff_sides", "cost"]) == {}


def test_raygke_groups_by_folder_not_by_module_name_prefix() -> None:
    """Issue 35: ``raygke/`` is sub-packages by what the user does (``local/``, ``diff/``,
    ``cost/``), not one flat room whose names carry the grouping."""
    for folder in [ROOT / "raygke", *(p for p in (ROOT / "raygke").rglob("*") if p.is_dir())]:
        if folder.name == "__pycache__":
            continue
        names = [p.stem for p in folder.glob("*.py")]
        assert not shared_prefixes(names), f"{folder}: {shared_prefixes(names)}"


# The floors, lowest first: a module may import its own floor and the floors below it, never one
# above (issues 35, 48). A module's floor is its folder; within a concept folder the Pulumi
# ComponentResource (``component.py``) stands above the folder's pure modules.
FLOORS = (
    "contract",  # contract/: standard library only, shared with the Ray image
    "catalog",  # components/catalog/: sourced facts
    "kernel",  # components/kernel/: what every concept stands on (Problem, the model base)
    "config",  # components/config/: StackConfig and the concept models it composes
    "plan",  # components/plan/: context, resolve, plan, the record builders, derived names
    "concepts",  # components/<concept>/: renders, rules, checks (pure)
    "components",  # components/<concept>/component.py: the Pulumi ComponentResources
    "assembly",  # components/stack/: the rules table, checks, loader, outputs, the root component
    "workloads",  # workloads/: Ray programs (nothing below imports them)
    "cli",  # raygke/: the command-line tool
)

# The folders of components/ that are a floor of their own; every other folder is a concept.
FOLDER_FLOORS = {
    "catalog": "catalog",
    "kernel": "kernel",
    "config": "config",
    "plan": "plan",
    "stack": "assembly",
}


def floor(module: str) -> str:
    """The floor of a project module (one of ``FLOORS``), by its folder (and, in a concept
    folder, whether it is the folder's ``component.py``)."""
    parts = module.split(".")
    top_level = {"contract": "contract", "workloads": "workloads", "raygke": "cli"}
    if parts[0] in top_level:
        return top_level[parts[0]]
    if len(parts) == 1:
        return "kernel"  # components/__init__.py imports nothing
    if parts[1] in FOLDER_FLOORS:
        return FOLDER_FLOORS[parts[1]]
    return "components" if parts[-1] == "component" else "concepts"


def wrong_way(g: dict[str, set[str]]) -> list[str]:
    """Each import of ``g`` that goes up the floors, as ``a (floor) imports b (floor)``."""
    rank = {f: i for i, f in enumerate(FLOORS)}
    return sorted(
        f"{m} ({floor(m)}) imports {w} ({floor(w)})"
        for m, deps in g.items()
        for w in deps
        if rank[floor(w)] > rank[floor(m)]
    )


def test_floors_follow_the_folders() -> None:
    assert floor("contract.quantity") == "contract"
    assert floor("components.catalog.tpu") == "catalog"
    assert floor("components.kernel.problems") == "kernel"
    assert floor("components.config.stack") == "config"
    assert floor("components.config.nodepools") == "config"
    assert floor("components.plan.plan") == "plan"
    assert floor("components.plan.nodepools") == "plan"
    assert floor("components.raycrs.operator.cluster") == "concepts"
    assert floor("components.nodepools.render") == "concepts"
    assert floor("components.nodepools.component") == "components"
    assert floor("components.stack.loader") == "assembly"
    assert floor("raygke.local.run") == "cli"


def test_a_wrong_way_import_is_found_and_printed() -> None:
    """A made-up graph with a kernel module importing the stack's config and a concept's config
    importing its render: both are flagged; the right-way imports are not."""
    g = {
        "components.kernel.base": {"components.kernel.problems", "components.config.stack"},
        "components.config.nodepools": {"components.nodepools.render", "components.kernel.base"},
        "components.nodepools.render": {"components.plan.plan", "components.config.nodepools"},
        "raygke.cli": {"components.stack.checks", "workloads.prepare"},
    }
    assert wrong_way(g) == [
        "components.config.nodepools (config) imports components.nodepools.render (concepts)",
        "components.kernel.base (kernel) imports components.config.stack (config)",
    ]


def test_every_import_goes_down_the_floors() -> None:
    """The layer table holds for the whole graph, function-level imports included."""
    bad = wrong_way(graph())
    assert not bad, "imports against the floors (tests/test_imports.py FLOORS):\n" + "\n".join(bad)


def test_the_kernel_imports_no_concept() -> None:
    """components/kernel/ imports only itself, the catalog and the contract: every concept may
    import it, and nothing it imports stands on a concept."""
    g = graph()
    kernel = [m for m in g if m == "components.kernel" or m.startswith("components.kernel.")]
    assert "components.kernel.problems" in kernel
    bad = sorted(
        f"{m} imports {w}"
        for m in kernel
        for w in g[m]
        if not (w.startswith(("components.kernel", "components.catalog", "contract")))
        and w != "components"
    )
    assert not bad, "\n".join(bad)


def folder_of(module: str) -> str:
    """The folder a module counts in for :func:`mutual_folders`: ``components/<folder>`` or the
    top-level package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "components" and len(parts) > 1 else parts[0]


def mutual_folders(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of folders that import each other (each through any of their modules)."""
    edges = {(folder_of(m), folder_of(w)) for m, deps in g.items() for w in deps}
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def test_mutual_folders_are_found() -> None:
    g = {
        "components.a.x": {"components.b.y"},
        "components.b.z": {"components.a.w"},
        "raygke.c": {"components.a.x"},
    }
    assert mutual_folders(g) == [("components.a", "components.b")]


# Issue 48: folders that import each other: at most 4 asked, 1 now (computeclass <-> raycrs;
# 21 before the floors). The ceiling only goes down.
MAX_MUTUAL_FOLDERS = 1


def test_folders_import_each_other_at_most_the_ceiling() -> None:
    pairs = mutual_folders(graph())
    assert len(pairs) <= MAX_MUTUAL_FOLDERS, "folders that import each other:\n" + "\n".join(
        f"{a} <-> {b}" for a, b in pairs
    )


def stack_config_functions(
    roots: tuple[str, ...] = ("components", "raygke"), base: Path = ROOT
) -> list[str]:
    """Every function (``module:qualname``) of ``roots`` (folders of ``base``) with a parameter
    annotated ``StackConfig`` (alone or in a union) or named ``cfg`` whatever its annotation
    (``cfg: Any`` or none): the functions handed the whole stack."""
    out = []
    for pkg in roots:
        for path in sorted((base / pkg).rglob("*.py")):
            tree = parse_file(path)
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
                if any(
                    p.arg == "cfg" or (p.annotation and "StackConfig" in ast.unparse(p.annotation))
                    for p in params
                ):
                    out.append(f"{module_name(path, base)}:{node.name}")
    return out


def test_stack_config_functions_are_found(tmp_path: Path) -> None:
    found = stack_config_functions()
    assert "components.stack.rules:unique_names" in found  # cfg: StackConfig
    assert "components.plan.plan:plan" in found
    assert "components.plan.plan:_build" in found  # private ones count too
    assert not any(f.startswith("components.plan.naming:gsa_email") for f in found)  # narrow
    # a parameter named cfg counts whatever its annotation; a local, a lambda's does not
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "from typing import Any\n"
        "def typed(cfg: Any) -> None: ...\n"
        "def bare(x, *, cfg): ...\n"
        "async def later(cfg=None): ...\n"
        "def union(s: 'StackConfig | None') -> None: ...\n"
        "def narrow(node_pools: list[Any]) -> None:\n"
        "    cfg = node_pools\n"
        "    f = lambda cfg: cfg\n"
    )
    assert stack_config_functions(("pkg",), tmp_path) == [
        "pkg.mod:typed",
        "pkg.mod:bare",
        "pkg.mod:later",
        "pkg.mod:union",
    ]


# Issue 48: the functions handed the whole StackConfig, each for a reason: the plan floor builds
# the Plan from the stack; the assembly's entry points (check, outputs, derived names, the rule
# runner) and the whole-stack renders read every block. A render or a check takes the Plan and its
# record (pool spec, job, service); a cross-field rule is handed its blocks by name
# (components.plan.plan.rule_inputs).
WHOLE_STACK_REASONS = {
    "components.plan.": "the plan floor: builds the Plan, its Context and its references",
    "components.stack.": "the assembly: whole-stack entry points and the rule runner",
    "components.raycrs.render:render_manifests": "renders every Ray object of the stack",
    "components.config.epochs:hold_defaults": "writes the held defaults into the stack's blocks",
    "raygke.cli:summary_line": "the CLI's one line about the whole stack",
}
MAX_STACK_CONFIG_FUNCTIONS = 40  # the figure; today 27


def test_only_functions_with_a_reason_take_the_whole_stack_config() -> None:
    found = stack_config_functions()
    unexplained = [f for f in found if not any(f.startswith(k) for k in WHOLE_STACK_REASONS)]
    assert not unexplained, (
        f"{unexplained} take StackConfig: hand a render the Plan and its record, a rule its "
        "blocks by name (components.plan.plan.rule_inputs)"
    )
    assert len(found) <= MAX_STACK_CONFIG_FUNCTIONS, found


def private_imports(path: Path, name: str) -> list[str]:
    """Each ``from <project module> import _name`` of ``path`` (module ``name``) where the module
    is another one: ``<line>: from <module> import <_name>``. Relative imports resolved; ``import
    x as _y`` of a public name is not one (the name imported is public)."""
    tree = parse_file(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*up, base] if base else up)
        if base.split(".")[0] not in PACKAGES or base == name:
            continue
        out += [
            f"{node.lineno}: from {base} import {a.name}"
            for a in node.names
            if a.name.startswith("_")
        ]
    return out


def test_a_private_import_is_found(tmp_path) -> None:
    """The scan sees a private name imported from another module, relative or absolute, at
    function level too; a public name imported under a private alias is not one."""
    (tmp_path / "components").mkdir()
    a = tmp_path / "components" / "a.py"
    a.write_text(
        "from components.b import _x, y as _y\n"
        "def f():\n    from . import _c\n    from components.a import _own\n"
    )
    assert private_imports(a, "components.a") == [
        "1: from components.b import _x",
        "3: from components import _c",
    ]


def test_no_module_imports_a_private_name_of_another() -> None:
    """A name another module imports is public (no ``_`` prefix): what the kernel and each floor
    share is their interface, not a private detail (issue 48). Tests may import privates."""
    found = [
        f"{mod} {line}"
        for mod, path in {**modules(), "__main__": ROOT / "__main__.py"}.items()
        for line in private_imports(path, mod)
    ]
    assert not found, "private names imported from another module:\n" + "\n".join(found)
