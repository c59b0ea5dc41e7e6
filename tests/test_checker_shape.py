"""Issue 35: one checker shape. Every check of a stack yields
:class:`~components.kernel.problems.Problem` (the policy pack's violations are made from
Problems): no ``FieldLine``, no checker returning ``list[str]`` or ``str | None``.

The walk reads the source (AST) of every module of ``components/``, ``contract/``, ``raygke/``,
``policy/`` and ``workloads/``:

* a *checker* is a function named ``check_*``, ``*_problems`` or ``*_warnings`` (what the
  project calls its checks), and every check registered in a rules table (the stack's
  cross-field rules, the KubeRay operator rules, the secure-default rules and the policy pack's
  rules, read from the tables themselves); its return annotation must name ``Problem`` (or the
  policy pack's ``Violation``, which holds one); a guard that returns ``None`` and raises on a
  refusal (``raygke.local.jobs.check_overrides``) yields nothing and passes;
* no class or name ``FieldLine`` / ``NoteLine`` is left.

``Problem`` lives in ``contract/problems.py`` (standard library only, the lowest floor of
tests/test_imports.py FLOORS), so every floor can make one: the workloads' argument checks and
the serving fit check do.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.ast_source import parse

ROOT = Path(__file__).resolve().parents[1]
WALKED = ("components", "contract", "raygke", "policy", "workloads")
CHECKER = re.compile(r"^check_|_problems$|_warnings$")
GONE = {"FieldLine", "NoteLine"}
# Parts of the one CRD checker (components/kernel/crdschema.py validate_object), each giving
# (object path, why) pairs that validate_object makes Problems of, with the object's name.
CRD_PARTS = {
    ("components/kernel/crdschema.py", "list_type_problems"),
    ("components/kernel/crdschema.py", "metadata_problems"),
    ("components/kernel/crdcel.py", "rule_problems"),
}


def _shape_ok(annotation: str | None) -> bool:
    if annotation == "None":  # a guard: it raises, it yields no lines
        return True
    return annotation is not None and ("Problem" in annotation or "Violation" in annotation)


def wrong_shapes(source: str, where: str) -> Iterator[str]:
    """What in ``source`` (the module ``where``) breaks the one checker shape, one line each."""
    tree = parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in GONE:
            yield f"{where}:{node.lineno}: class {node.name}"
        elif isinstance(node, ast.Name) and node.id in GONE:
            yield f"{where}:{node.lineno}: uses {node.id}"
        elif isinstance(node, ast.alias) and node.name in GONE:
            yield f"{where}: imports {node.name}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not CHECKER.search(node.name) or (where, node.name) in CRD_PARTS:
                continue
            returns = ast.unparse(node.returns) if node.returns else None
            if not _shape_ok(returns):
                yield f"{where}:{node.lineno}: checker {node.name} returns {returns}"


def walk() -> list[str]:
    out: list[str] = []
    for folder in WALKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "venv" in path.parts:
                continue
            where = str(path.relative_to(ROOT))
            out += wrong_shapes(path.read_text(encoding="utf-8"), where)
    return out


def registered_checks() -> list[Callable[..., object]]:
    """Every check of the project's rules tables."""
    from components.raycrs.operator import CLUSTER_RULES, OBJECT_RULES
    from components.security import policy
    from components.security import rules as security
    from components.stack.rules import RULES

    checks: list[Callable[..., object]] = [r.check for r in (*RULES, *OBJECT_RULES)]
    checks += [r.check for r in (*CLUSTER_RULES, *policy.RULES)]
    return checks + list(security.RULES.values())


def test_every_checker_yields_problems_and_no_fieldline_is_left() -> None:
    assert walk() == []


def test_every_registered_check_yields_problems() -> None:
    """The rules tables' checks (some not named like checkers: ``worker_replicas``,
    ``bucket_cmek``, ``ray_version_locked``) are checkers too."""
    checks = registered_checks()
    assert len(checks) > 80  # the tables are read, not empty
    wrong = [
        f"{c.__module__}.{c.__name__} returns {inspect.signature(c).return_annotation}"
        for c in checks
        if not _shape_ok(str(inspect.signature(c).return_annotation))
    ]
    assert wrong == []


PLANTED = """
from components.kernel.problems import FieldLine

def quota_problems(cfg) -> list[str]:
    return ["x: too much"]

def check_names(cfg) -> str | None:
    return None

def schema_problems(obj) -> list[Problem]:
    return []

def _helper(x) -> list[str]:
    return []

class FieldLine(str):
    pass
"""


def test_a_planted_wrong_checker_is_found() -> None:
    """The walk finds a ``list[str]`` and a ``str | None`` checker and a FieldLine (class,
    import and use), and passes a Problem checker and a helper that is no checker."""
    assert sorted(wrong_shapes(PLANTED, "planted.py")) == [
        "planted.py: imports FieldLine",
        "planted.py:16: class FieldLine",
        "planted.py:4: checker quota_problems returns list[str]",
        "planted.py:7: checker check_names returns str | None",
    ]
    assert list(wrong_shapes("def f(): return FieldLine('a', 'b')\n", "used.py")) == [
        "used.py:1: uses FieldLine"
    ]


def test_the_tests_parse_source_through_the_retrying_helper() -> None:
    """Every test that parses the project's code goes through ``tests/ast_source.py``: a bare
    ``ast.parse`` fails spuriously under CPython 3.11 when another thread builds an AST (it
    failed ``test_every_sources_pointer_has_its_section`` once under xdist)."""
    here = Path(__file__).resolve().parent
    call = "ast." + "parse("  # split: this file's own text is scanned too
    bare = [
        str(p.relative_to(here))
        for p in sorted(here.rglob("*.py"))
        if p.name != "ast_source.py" and call in p.read_text(encoding="utf-8")
    ]
    assert not bare, f"use tests.ast_source.parse / parse_file instead of ast.parse in {bare}"
