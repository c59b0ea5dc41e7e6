"""Reading a stack file's YAML as Pulumi does (YAML 1.2, ruamel.yaml), with the limits of a
stack file and the positions a problem of the text needs (a key given twice).
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from components.kernel.base import PROJECT_NAMESPACE, StackConfigError, StackFileError
from components.kernel.problems import ENTRY_KEYS, Problem


def read_stack_yaml(text: str, source: str | None = None) -> Any:
    """Parse a stack file the way Pulumi does: YAML 1.2 (``yes``/``on`` are strings, ``23:30``
    is not a number, ``010`` is ten), merge keys (``<<: *anchor``) allowed, and a key given twice
    in one mapping refused. Uses ``ruamel.yaml`` (YAML 1.2 core schema; PyYAML reads YAML 1.1).

    A stack file is small: text over :data:`MAX_STACK_BYTES`, nesting deeper than
    :data:`MAX_DEPTH`, or a document that expands (aliases counted at every use) to more than
    :data:`MAX_VALUES` values is refused before anything else reads it, so a few hundred bytes
    of nested ``[`` or of aliases of aliases cannot exhaust the stack or the memory; nor a few
    long strings aliased many times (:data:`MAX_EXPANDED_CHARS`).

    Raises:
        StackConfigError: a key is given twice (both places named).
        StackFileError: the text is not YAML, or is too large, too deep or expands too far.

    One ``raygke check`` reads the same file in three places (the loader, the policy run, the
    program's config); the last few texts read are kept (:data:`_PARSED`), and each caller gets
    its own deep copy, so a text is parsed once (ruamel's pure-Python parser: ~0.3 s for the
    prod stack on 2 cores).
    """
    if text in _PARSED:
        _PARSED.move_to_end(text)
        return copy.deepcopy(_PARSED[text])
    doc = _parse(text, source)
    _PARSED[text] = doc
    while len(_PARSED) > _PARSED_KEPT:
        _PARSED.popitem(last=False)
    return copy.deepcopy(doc)


# text -> the document it parsed to (never handed out: callers get deep copies)
_PARSED: OrderedDict[str, Any] = OrderedDict()
_PARSED_KEPT = 8


def _parse(text: str, source: str | None) -> Any:
    """:func:`read_stack_yaml` without the cache."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if len(text) > MAX_STACK_BYTES:
        raise StackFileError(
            [f"the file has {len(text)} characters; a stack file is at most {MAX_STACK_BYTES}"],
            source,
        )
    try:
        yaml = YAML(typ="safe", pure=True)
        yaml.Constructor = _StackConstructor
        doc = yaml.load(text)
    except RecursionError:
        raise StackFileError(
            [
                f"the YAML is nested too deeply to read (a stack file nests at most {MAX_DEPTH} levels)"
            ],
            source,
        ) from None
    except DuplicateKeyError as e:
        at, first = e.problem_mark, e.context_mark
        where = f"line {at.line + 1} column {at.column + 1}" if at else "?"
        was = f" (in the mapping that starts at line {first.line + 1})" if first else ""
        problem = (e.problem or "duplicate key").split(" with value")[0].replace('"', "'")
        problem = problem.removeprefix("found ")
        path = _key_path(text, at.line, at.column) if at else ""
        head = f"{path}: " if path else ""
        raise StackConfigError(
            [
                Problem(
                    path,
                    f"{head}{problem} at {where}{was}; keep one",
                    "duplicate-key",
                    line=at.line + 1 if at else None,
                    column=at.column + 1 if at else None,
                )
            ],
            source,
        ) from None
    except MarkedYAMLError as e:
        mark = e.problem_mark
        problem = " ".join(str(x) for x in (e.context, e.problem) if x)
        ended = "<stream end>" in problem or "end of stream" in problem
        if ended and e.context_mark is not None and mark is not None:
            # an unclosed [ { or quote: the parser notices at the end of the file, but the line
            # to fix is where it opened (the context mark)
            problem += f" (the file ends at line {mark.line + 1})"
            mark = e.context_mark
        at = f" at line {mark.line + 1}" if mark else ""
        # the position travels with the problem: --format json|github put it on that line
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        message = f"not valid YAML{at}: {problem}"
        raise StackFileError(
            [Problem("", message, "read", line=line, column=column)], source
        ) from None
    except YAMLError as e:
        raise StackFileError([f"not valid YAML: {e}"], source) from None
    except ValueError as e:  # e.g. a timestamp ruamel cannot build (2001-02-30)
        raise StackFileError([f"not valid YAML: {e}"], source) from None
    _check_size(doc, source)
    return doc


def _key_path(text: str, line: int, column: int) -> str:
    """The stack path (``cluster.regional``, ``node_pools[tpu].max_nodes``) of the mapping key
    that starts at 0-based ``line``/``column`` of the stack file ``text``, from ruamel.yaml's node
    tree (``compose``: no values are built, so a key given twice does not stop it); ``""`` when
    the key is not under ``config: ray-gke:<key>`` or the text cannot be composed."""
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    try:
        root = YAML(typ="safe", pure=True).compose(text)
    except Exception:  # the loader reports what is wrong with the text
        return ""

    def name_of(item: Any) -> str | None:
        if isinstance(item, MappingNode):
            for want in ENTRY_KEYS:
                for k, v in item.value:
                    if isinstance(k, ScalarNode) and k.value == want and isinstance(v, ScalarNode):
                        return str(v.value)
        return None

    def walk(node: Any, parts: list[str]) -> list[str] | None:
        if isinstance(node, MappingNode):
            for k, v in node.value:
                key = str(k.value) if isinstance(k, ScalarNode) else "?"
                here = [*parts, f".{key}"]
                if (k.start_mark.line, k.start_mark.column) == (line, column):
                    return here
                found = walk(v, here)
                if found is not None:
                    return found
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                found = walk(item, [*parts, f"[{name_of(item) or i}]"])
                if found is not None:
                    return found
        return None

    parts = walk(root, []) or []
    prefix = PROJECT_NAMESPACE + ":"
    if len(parts) < 2 or parts[0] != ".config" or not parts[1].startswith("." + prefix):
        return ""
    return (parts[1][1 + len(prefix) :] + "".join(parts[2:])).lstrip(".")


def _float_constructor() -> Any:
    """ruamel.yaml's safe constructor, except that a number too large for a float (``1e400``,
    which YAML reads as infinity) keeps the text it was written as (:class:`WrittenFloat`), so a
    problem with it shows ``1e400``, not ``inf``."""
    from ruamel.yaml.constructor import SafeConstructor

    class StackConstructor(SafeConstructor):
        def construct_yaml_float(self, node: Any) -> Any:
            value = super().construct_yaml_float(node)
            written = str(node.value)
            if isinstance(value, float) and math.isinf(value) and "inf" not in written.lower():
                return WrittenFloat(value, written)
            return value

    StackConstructor.add_constructor(
        "tag:yaml.org,2002:float", StackConstructor.construct_yaml_float
    )
    return StackConstructor


class WrittenFloat(float):
    """A YAML number too large for a float (``1e400``): the float YAML gives (infinity) that
    shows, in ``str`` and ``repr``, as the user wrote it. Validation refuses it like any other
    infinity, naming the value as written."""

    written: str

    def __new__(cls, value: float, written: str) -> WrittenFloat:
        self = super().__new__(cls, value)
        self.written = written
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (WrittenFloat, (float(self), self.written))

    def __repr__(self) -> str:
        return self.written

    __str__ = __repr__


_StackConstructor = _float_constructor()


# Limits of a stack file; the shipped prod stack is ~3 KB, 7 levels deep, ~300 values.
MAX_STACK_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_VALUES = 100_000
# Characters of all strings (keys included), each alias counted at every use: the stack file's
# 1,000,000 plus room; what the render writes out grows with it, and a Kubernetes object holds
# at most 1.5 MiB (components.stack.checks.OBJECT_BYTES_MAX), so this bounds the render's time
# and memory before it starts.
MAX_EXPANDED_CHARS = 2_000_000


def _check_size(doc: Any, source: str | None) -> None:
    """Refuse a document deeper than :data:`MAX_DEPTH` or expanding to more than
    :data:`MAX_VALUES` values or :data:`MAX_EXPANDED_CHARS` characters of strings (an alias
    counts its whole target at every use: that is what the render would write out). Time and
    memory are linear in the expanded size, which these bound."""
    seen = chars = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        seen += 1
        if isinstance(node, str):
            chars += len(node)
            if chars > MAX_EXPANDED_CHARS:
                raise StackFileError(
                    [
                        f"the YAML expands to more than {MAX_EXPANDED_CHARS} characters of text "
                        "(aliases are counted at every use); a stack file is far smaller: check "
                        "its anchors and aliases"
                    ],
                    source,
                )
        if seen > MAX_VALUES:
            raise StackFileError(
                [
                    f"the YAML expands to more than {MAX_VALUES} values (aliases are counted at "
                    "every use); a stack file is far smaller: check its anchors and aliases"
                ],
                source,
            )
        if depth > MAX_DEPTH:
            raise StackFileError(
                [f"the YAML nests deeper than {MAX_DEPTH} levels; a stack file is far shallower"],
                source,
            )
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1) for v in node)
