"""How ``raygke check`` reports problems: ``--format text`` (today's lines), ``json`` (the
problems as objects) or ``github`` (GitHub Actions workflow annotations on the stack file's
lines). docs/checking.md describes the formats.

Positions come from the stack file read again with ruamel.yaml's round-trip loader, which keeps
every mapping key's and list item's line and column (``CommentedMap.lc.key(k)``,
``CommentedSeq.lc.item(i)``, 0-based; https://yaml.dev/doc/ruamel.yaml/detail/). A problem's
``path`` (:class:`components.kernel.problems.Problem`) is walked from ``config: ray-gke:<top key>``;
where the path's leaf is absent (a required key left out) the nearest existing ancestor's
position stands in.

GitHub's annotation syntax: ``::error file={name},line={line},col={col}::{message}``, with
``%``, CR and LF escaped in the message and also ``:`` and ``,`` in properties
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#setting-an-error-message,
escaping as in @actions/core ``command.ts`` ``escapeData`` / ``escapeProperty``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from components.kernel.problems import ENTRY_KEYS, Problem, path_parts, problem_of

FORMATS = ("text", "json", "github")
PREFIX = "ray-gke:"


def _root(doc: Any, top: str) -> tuple[Any, Any] | None:
    """(the ``config:`` mapping, its key) holding the stack key ``top``: ``ray-gke:<top>``, or
    ``gcp:<top>`` where that fills ``project`` / ``region``."""
    config = doc.get("config") if hasattr(doc, "get") else None
    if not hasattr(config, "lc"):
        return None
    for key in (PREFIX + top, f"gcp:{top}" if top in ("project", "region") else None):
        if key is not None and key in config:
            return config, key
    return None


def locate(text: str, path: str) -> tuple[int, int] | None:
    """The 1-based (line, column) of stack field ``path`` in the stack file ``text``: the key of
    the deepest part of ``path`` that exists in the file (a list entry by its ``name``, or its
    index); the ``config:`` key when even the top-level key is absent; None when the text is not
    a readable stack file or ``path`` is empty.

    Raises nothing: a file ruamel cannot read has no positions.
    """
    if not path:
        return None
    from ruamel.yaml import YAML

    try:
        doc = YAML(typ="rt", pure=True).load(text)
    except Exception:
        return None
    parts = path_parts(path)
    if not parts or not hasattr(doc, "lc"):
        return None
    found = _root(doc, parts[0])
    if found is None:
        if hasattr(doc, "lc") and "config" in doc:
            line, col = doc.lc.key("config")
            return line + 1, col + 1
        return None
    node, key = found
    line, col = node.lc.key(key)
    node = node[key]
    for part in parts[1:]:
        if part.startswith("["):
            name = part[1:-1]
            index = _item(node, name)
            if index is None:
                break
            line, col = node.lc.item(index)
            node = node[index]
        else:
            if not (hasattr(node, "lc") and hasattr(node, "keys") and part in node):
                break
            line, col = node.lc.key(part)
            node = node[part]
    return line + 1, col + 1


def _item(node: Any, name: str) -> int | None:
    """The index of the entry of list ``node`` whose ``name`` (or, for entries without one, its
    ``pool``: :data:`components.kernel.problems.ENTRY_KEYS`) is ``name`` (else, for a number, that index)."""
    if not (isinstance(node, list) and hasattr(node, "lc")):
        return None
    for key in ENTRY_KEYS:
        for i, entry in enumerate(node):
            if hasattr(entry, "get") and key in entry and str(entry.get(key)) == name:
                return i
    if name.isdigit() and int(name) < len(node):
        return int(name)
    return None


def _display(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it (GitHub resolves an
    annotation's file from the repository root, where the workflow runs), else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def records(
    path: Path, problems: Iterable[Problem | str], warnings: Iterable[Problem | str] = ()
) -> list[dict[str, Any]]:
    """Every problem (then warning) as ``{"path", "message", "rule", "severity", "file",
    "line", "column"}`` (line and column 1-based: the problem's own
    :attr:`~components.kernel.problems.Problem.position` where its producer gave one, else found
    from its path by :func:`locate`; None without a position)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    cache: dict[str, tuple[int, int] | None] = {}
    out = []
    items = [problem_of(p) for p in problems]
    items += [
        Problem(
            w.path if isinstance(w, Problem) else "",
            str(w),
            getattr(w, "rule", "") or "",
            "warning",
        )
        for w in warnings
    ]
    for p in items:
        if p.path not in cache:
            cache[p.path] = locate(text, p.path) if text else None
        pos = p.position or cache[p.path]  # the producer's position (a duplicate key) first
        out.append(
            {
                **p.as_dict(),
                "file": _display(path),
                "line": pos[0] if pos else None,
                "column": pos[1] if pos else None,
            }
        )
    return out


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_lines(recs: Sequence[dict[str, Any]]) -> list[str]:
    """One workflow command per record: ``::error file=...,line=...,col=...,title=...::msg``
    (``::warning`` for warnings)."""
    out = []
    for r in recs:
        props = [f"file={_escape_property(r['file'])}"]
        if r["line"] is not None:
            props += [f"line={r['line']}", f"col={r['column']}"]
        title = f"raygke check: {r['rule']}" if r["rule"] else "raygke check"
        if r["path"]:
            title += f" ({r['path']})"
        props.append(f"title={_escape_property(title)}")
        level = "warning" if r["severity"] == "warning" else "error"
        out.append(f"::{level} {','.join(props)}::{_escape_data(r['message'])}")
    return out


def render(
    fmt: str,
    path: Path,
    problems: Iterable[Problem | str],
    *,
    warnings: Iterable[Problem | str] = (),
    notes: Sequence[str] = (),
    summary: str = "",
) -> str:
    """The ``json`` or ``github`` report of a check of ``path``, as text to print on stdout.

    ``json``: one object ``{"file", "ok", "problems": [records], "notes", "summary"}``
    (:func:`records`; ``notes``: what was not checked; ``summary``: the ok line's counts).
    ``github``: :func:`github_lines`, then one ``::notice`` per note.

    Raises:
        ValueError: ``fmt`` is not ``json`` or ``github``.
    """
    problems = list(problems)
    recs = records(path, problems, warnings)
    if fmt == "json":
        doc = {
            "file": _display(path),
            "ok": not problems,
            "problems": recs,
            "notes": list(notes),
            "summary": summary,
        }
        return json.dumps(doc, indent=2)
    if fmt == "github":
        lines = github_lines(recs)
        lines += [
            f"::notice file={_escape_property(_display(path))}::{_escape_data(n)}" for n in notes
        ]
        return "\n".join(lines)
    raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
