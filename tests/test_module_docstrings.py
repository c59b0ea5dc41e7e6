"""Module docstrings of ``components/`` stay a few lines (issue 48 item 6): what the module is for,
its entry points, what it must not do; the research behind its facts is a section of
docs/sources.md, which the docstring points at (``docs/sources.md#<anchor>``)."""

from __future__ import annotations

import ast
import re
import statistics
from pathlib import Path

from tests.ast_source import parse_file

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "docs" / "sources.md"
MAX_LINES = 10
MAX_MEDIAN = 5
# Not trimmed yet: each to move its notes and sources into docs/sources.md as the others did,
# then leave this list (empty: every module is trimmed).
NOT_YET: frozenset[str] = frozenset()
POINTER = re.compile(r"docs/sources\.md#([A-Za-z0-9_-]+)")


def module_docstrings(root: Path = ROOT) -> dict[str, str]:
    """``{"components/<path>.py": module docstring}`` ("" for a module without one)."""
    out: dict[str, str] = {}
    for path in sorted((root / "components").rglob("*.py")):
        tree = parse_file(path)
        out[path.relative_to(root).as_posix()] = ast.get_docstring(tree) or ""
    return out


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lowercase, punctuation dropped (but ``-`` and
    ``_``), each space a ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor of ``markdown``: its headings' (GitHub's rule) and its ``<a id="...">``."""
    out = {github_anchor(m) for m in re.findall(r"^#+\s+(.*)$", markdown, re.MULTILINE)}
    out |= set(re.findall(r'<a id="([^"]+)"', markdown))
    return out


def lines(doc: str) -> int:
    return len(doc.splitlines())


def test_module_docstrings_are_a_few_lines() -> None:
    """Every module docstring of ``components/`` (but those of :data:`NOT_YET`) is at most
    :data:`MAX_LINES` lines, and their median at most :data:`MAX_MEDIAN`."""
    docs = {path: doc for path, doc in module_docstrings().items() if path not in NOT_YET}
    long = {path: lines(doc) for path, doc in docs.items() if lines(doc) > MAX_LINES}
    assert not long, f"module docstrings over {MAX_LINES} lines (move notes to docs/sources.md)"
    assert statistics.median(lines(doc) for doc in docs.values()) <= MAX_MEDIAN


def test_not_yet_lists_only_long_docstrings() -> None:
    """A module trimmed leaves :data:`NOT_YET` (and the list names only existing modules)."""
    docs = module_docstrings()
    assert {
        path: lines(docs[path]) for path in NOT_YET if lines(docs.get(path, "")) <= MAX_LINES
    } == {}


def test_every_sources_pointer_has_its_section() -> None:
    """Every ``docs/sources.md#<anchor>`` a module docstring points at is a heading (GitHub's
    anchor rule) or an ``<a id>`` of docs/sources.md."""
    known = anchors(SOURCES.read_text(encoding="utf-8"))
    missing = {
        path: anchor
        for path, doc in module_docstrings().items()
        for anchor in POINTER.findall(doc)
        if anchor not in known
    }
    assert not missing


def test_anchors_follow_githubs_rule() -> None:
    """The anchor rule itself."""
    assert github_anchor("components/stack/name_checks.py — name rules") == (
        "componentsstackname_checkspy--name-rules"
    )
    assert "stack-name-checks" in anchors('<a id="stack-name-checks"></a>\n## x')
    assert "sources" in anchors("# Sources\n")
