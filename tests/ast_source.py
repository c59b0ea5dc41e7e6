"""The AST of a source file for the tests that read the project's code (the import graph, the
boundaries, the checkers' shape).

CPython 3.11 keeps the AST constructor's recursion depth in state shared by every thread, so an
``ast.parse`` while another thread builds an AST (a library's worker thread left by an earlier
test in the same process) can fail with ``SystemError: AST constructor recursion depth mismatch``
(https://github.com/python/cpython/issues/106905, fixed in 3.12). Parsing is pure: such a
failure is retried.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path


def parse(source: str, filename: str = "<unknown>", tries: int = 5) -> ast.Module:
    """``ast.parse(source, filename)``, retried on CPython 3.11's spurious recursion-depth
    ``SystemError``; any other error is raised at once."""
    for attempt in range(tries):
        try:
            return ast.parse(source, filename=filename)
        except SystemError as e:
            if "recursion depth mismatch" not in str(e) or attempt == tries - 1:
                raise
            time.sleep(0.01)
    raise AssertionError("unreachable")


def parse_file(path: Path) -> ast.Module:
    """:func:`parse` of the file at ``path``."""
    return parse(path.read_text(encoding="utf-8"), filename=str(path))
