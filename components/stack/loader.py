"""Reading stack files: YAML 1.2 as Pulumi reads it, the project's keys, and validation into
:class:`StackConfig` with one readable line per problem.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from components import catalog
from components.stack.base import (
    OTHER_NAMESPACES,
    PROJECT_NAMESPACE,
    ConfigError,
    StackFileError,
    one_line,
)
from components.stack.hints import KEY_HINTS
from components.stack.model import StackConfig
from components.stack.problems import ENTRY_KEYS, Problem
from components.stack.rules import rule_problems, skipped_rules

# --------------------------------------------------------------------------------------- loaders


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """``('node_pools', 1, 'tpu', 'tpu')`` -> ``node_pools[tpu-v6e].tpu`` (item names where known:
    the first of :data:`components.stack.problems.ENTRY_KEYS` an entry has, as :mod:`raygke.report`
    finds them)."""
    parts: list[str] = []
    node: Any = data
    skip_tag, key = False, None
    for p in loc:
        if skip_tag:
            skip_tag = False
            if p in _TAGS:
                continue
        if isinstance(p, int):
            item = node[p] if isinstance(node, list) and p < len(node) else None
            named = (
                [item.get(k) for k in ENTRY_KEYS if item.get(k)]
                if isinstance(item, Mapping)
                else []
            )
            name = named[0] if named else None
            if not isinstance(name, str) or not name:
                name = p  # no usable name: the list index
            elif not re.fullmatch(r"[\w.-]+", name):
                name = repr(name)  # quoted, control characters escaped
            parts[-1 if parts else 0 :] = [f"{parts[-1] if parts else ''}[{name}]"]
            node = item
            skip_tag = key in _TAGGED_LISTS
        else:
            parts.append(str(p) if re.fullmatch(r"[\w-]+", str(p)) else repr(p))
            node = node.get(p) if isinstance(node, Mapping) else None
            key = p
    return ".".join(parts)


def _model_path(loc: tuple[Any, ...]) -> str:
    """``('node_pools', 1, 'tpu', 'machine_type')`` -> ``node_pools.tpu.machine_type`` (list
    indices dropped; the pool kind a node pool's validation adds stays)."""
    return ".".join(str(p) for p in loc if not isinstance(p, int))


def _block(loc: tuple[Any, ...], data: Any) -> Any:
    """The mapping of ``data`` that holds the key at ``loc`` (the tag after an index skipped)."""
    node, skip_tag, key = data, False, None
    for p in loc[:-1]:
        if skip_tag:
            skip_tag = False
            if p in _TAGS:
                continue
        if isinstance(p, int):
            node = node[p] if isinstance(node, list) and p < len(node) else None
            skip_tag = key in _TAGGED_LISTS
        else:
            node = node.get(p) if isinstance(node, Mapping) else None
            key = p
    return node


def _extra_key(e: Any, data: Any) -> tuple[str, str] | None:
    """(field path, message) for a derived or removed key (:mod:`components.stack.hints`)."""
    loc = tuple(e["loc"])
    hint = KEY_HINTS.get(_model_path(loc))
    if hint is None:
        return None
    text = hint.message(_block(loc, data))
    if hint.kind == "removed":
        return _loc(loc[:-1], data), f"{loc[-1]} was removed: {text}"
    return _loc(loc, data), text


def _type_hint(kind: str, value: Any) -> str:
    """What to write instead, for the YAML mistakes strict validation rejects."""
    if kind == "string_type" and isinstance(value, int | float | bool | date):
        what = {bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a date")
        return f" (YAML read {what}; put the value in quotes as you wrote it)"
    if kind in ("int_type", "float_type") and isinstance(value, str):
        return " (write the number without quotes)"
    if kind == "bool_type":
        return " (write true or false, without quotes)"
    return ""


_BOUND_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "too_short",
    "too_long",
}


def format_validation_error(err: ValidationError, data: Any = None) -> list[Problem]:
    """One :class:`~components.stack.problems.Problem` per problem (rule ``field``), path from the
    error's location (list entries by name where ``data`` names them), printed
    ``<field path>: <message>`` (multi-line messages become several)."""
    lines: list[Problem] = []
    for e in err.errors():
        loc = _loc(tuple(e["loc"]), data)
        msg = e["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix) :]
        hinted = _extra_key(e, data) if e["type"] == "extra_forbidden" else None
        if hinted:
            loc, msg = hinted
        elif e["type"] == "extra_forbidden":
            key = str(e["loc"][-1])
            close = difflib.get_close_matches(key, _allowed_keys(tuple(e["loc"])[:-1]), n=1)
            msg = (
                f"unknown key {key!r}; did you mean {close[0]!r}? (extra keys are rejected)"
                if close
                else f"unknown key {key!r} (check its spelling; extra keys are rejected)"
            )
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] == "union_tag_invalid":
            msg = (
                f"kind {e.get('ctx', {}).get('tag')!r} is not a node pool kind: leave kind out (or "
                "write cpu) for a CPU pool, and give a tpu: or gpu: block for an accelerator pool"
            )
        elif e["type"] in _BOUND_ERRORS:
            msg = f"{msg}; got {e.get('input')!r}"
        elif e["type"] in ("literal_error", "enum") or e["type"].endswith(("_type", "_parsing")):
            msg = f"{msg}; got {e.get('input')!r}{_type_hint(e['type'], e.get('input'))}"
        # The project's validators join several problems with newlines (and quote the values
        # they show); any other control character is a value's: escaped.
        parts = msg.split("\n") if e["type"] == "value_error" else [msg]
        for part in parts:
            part = one_line(part)
            lines.append(Problem(loc, f"{loc}: {part}" if loc else part, "field"))
    return lines


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the model accepts in the mapping at pydantic error location ``loc`` (list
    indices skipped; a discriminated union's tag, ``tpu`` after a node pool's index, picks its
    member); ``[]`` where the model there is not known (a free mapping such as ``labels``)."""
    import types
    import typing

    from pydantic import BaseModel

    def members(tp: Any) -> list[Any]:
        """``tp`` without Annotated / Optional / list wrappers: its model classes (all members
        of a union), each with its union tag when it has one."""
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            base, *meta = typing.get_args(tp)
            tags = [getattr(m, "tag", None) for m in meta if hasattr(m, "tag")]
            return [(c, tags[0] if tags else t) for c, t in members(base)]
        if origin in (typing.Union, types.UnionType):
            return [m for a in typing.get_args(tp) for m in members(a)]
        if origin in (list, tuple, set, frozenset):
            return [m for a in typing.get_args(tp) for m in members(a)]
        return [(tp, None)] if isinstance(tp, type) and issubclass(tp, BaseModel) else []

    current: list[Any] = [(StackConfig, None)]
    for part in loc:
        if isinstance(part, int):
            continue
        tagged = [c for c, t in current if t == part]
        if tagged:  # the union member the tag names (``node_pools.1.tpu``)
            current = [(c, None) for c in tagged]
            continue
        nxt = []
        for cls, _ in current:
            f = cls.model_fields.get(part)
            if f is not None:
                nxt += members(f.annotation)
        current = nxt
    return sorted({k for cls, _ in current for k in cls.model_fields})


_TAGS = {"cpu", "tpu", "gpu"}
# Lists of discriminated unions, whose error locations carry the tag after the index
# (``('node_pools', 1, 'tpu', ...)``); elsewhere a ``cpu`` after an index is a field name.
_TAGGED_LISTS = {"node_pools"}


def validate(data: Mapping[str, Any], source: str | None = None) -> StackConfig:
    """Validate a mapping of top-level keys (without the ``ray-gke:`` prefix).

    Validation is pydantic model validation (:class:`StackConfig` runs no rule itself), then
    the cross-field rules run once over the validated model. Every top-level block is checked
    on its own (pydantic reports every field error); a mapping
    block with invalid keys is validated again without them (their defaults standing in), so
    its other keys still count as valid. Then every cross-field rule of
    :mod:`components.stack.rules` runs that reads no invalid key (``Rule.needs``): an unsupported
    ``cluster.min_master_version`` still lets a NAP limit below the node pools be reported. Field
    problems come first, then rule problems in :data:`components.stack.rules.RULES` order; the
    rules that could not run are listed in ``ConfigError.notes``.

    Raises:
        ConfigError: with every problem found (``items``: Problems with their stack paths;
            ``problems``: one line each).
    """
    if not isinstance(data, Mapping):
        raise ConfigError([f"expected a mapping of config keys, got {type(data).__name__}"], source)
    data = dict(data)
    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as e:
        problems: list[Problem] = format_validation_error(e, data)
        notes: list[str] = []
        partial = _valid_blocks(data, e)
        if partial is not None:
            cfg, broken = partial
            problems += rule_problems(cfg, broken=broken)
            notes = skipped_rules(broken=broken)
        raise ConfigError(problems, source, notes) from None
    except catalog.CatalogError as e:  # pragma: no cover - validators wrap these already
        raise ConfigError([str(e)], source) from None
    problems = rule_problems(cfg)  # the rules run once, over the validated model
    if problems:
        raise ConfigError(problems, source)
    return cfg


# Stand-ins for required blocks that failed validation: they let the valid blocks validate into a
# model; no rule reads them (a rule runs only when the blocks it needs are valid).
_STAND_INS: dict[str, Any] = {
    "project": "invalid-project",
    "region": "us-central1",
    "zones": ["us-central1-a"],
}


def _partial_block(name: str, value: Any, errors: list[Any]) -> tuple[Any, set[str]] | None:
    """A mapping block validated without its invalid keys (their defaults stand in), and the
    dotted paths of those keys; None when the block is not a mapping of a model, an error is
    about the block as a whole, or it does not validate without them (e.g. a required key)."""
    from pydantic import BaseModel

    field = StackConfig.model_fields[name]
    model = field.annotation
    if not (
        isinstance(value, Mapping) and isinstance(model, type) and issubclass(model, BaseModel)
    ):
        return None
    locs = [tuple(e["loc"]) for e in errors if e["loc"] and e["loc"][0] == name]
    if any(len(loc) < 2 or not isinstance(loc[1], str) for loc in locs):
        return None
    bad = {str(loc[1]) for loc in locs}
    try:
        block = model.model_validate({k: v for k, v in value.items() if k not in bad})
    except (ValidationError, ValueError):
        return None
    return block, {f"{name}.{k}" for k in bad}


def _valid_blocks(
    data: dict[str, Any], err: ValidationError
) -> tuple[StackConfig, set[str]] | None:
    """The stack's valid top-level blocks as a model (invalid ones left unset, or at their
    defaults; a mapping block with invalid keys validated without them) and the paths that are
    invalid (top-level keys, or ``block.key``); None when that cannot be built."""
    fields = set(StackConfig.model_fields)
    errors = err.errors()
    if any(not e["loc"] for e in errors):
        return None
    bad = {str(e["loc"][0]) for e in errors} & fields
    # A block whose only errors are unknown keys is valid without them: nothing reads an unknown
    # key, so no rule is skipped for it (a typo in cluster: does not hide the capacity rules).
    data = dict(data)
    for name in sorted(bad):
        mine = [e for e in errors if e["loc"][0] == name]
        if all(e["type"] == "extra_forbidden" for e in mine):
            cleaned = _without_keys({name: data[name]}, [tuple(e["loc"]) for e in mine])
            if cleaned is not None:
                data[name] = cleaned[name]
                bad.discard(name)
    partial: dict[str, Any] = {}
    broken: set[str] = set()
    for name in sorted(bad):
        found = _partial_block(name, data.get(name), errors) if name in data else None
        if found is None:
            broken.add(name)
        else:
            partial[name], paths = found
            broken |= paths
    good = {k: v for k, v in data.items() if k in fields and k not in bad}
    stand_ins = {k: v for k, v in _STAND_INS.items() if k in bad and k not in partial}
    try:
        whole = StackConfig.model_validate({**good, **stand_ins})
    except (ValidationError, ValueError):  # pragma: no cover - the blocks validated alone
        return None
    kept = {k: getattr(whole, k) for k in fields - bad}
    return StackConfig.model_construct(**kept, **partial), broken


def _without_keys(block: dict[str, Any], locs: list[tuple[Any, ...]]) -> dict[str, Any] | None:
    """A deep copy of ``block`` (``{top-level key: value}``) without the keys at the pydantic
    error locations ``locs``, validated; None when it does not validate without them."""
    import copy

    out = copy.deepcopy(block)
    for loc in locs:
        holder = _block(loc, out)
        if isinstance(holder, dict):
            holder.pop(loc[-1], None)
    (name,) = out
    try:
        StackConfig.model_validate({**_STAND_INS, name: out[name]})
    except (ValidationError, ValueError):
        return None
    return out


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
        ConfigError: a key is given twice (both places named).
        StackFileError: the text is not YAML, or is too large, too deep or expands too far.
    """
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
        raise ConfigError(
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
        at = f" at line {e.problem_mark.line + 1}" if e.problem_mark else ""
        problem = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise StackFileError([f"not valid YAML{at}: {problem}"], source) from None
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


def _plain(key: str) -> str:
    """A key as written when it is plain (letters, digits, ``_.:/-``), else quoted (repr), so a
    control character is never printed raw."""
    return key if re.fullmatch(r"[\w.:/-]+", key) else repr(key)


def stack_data_from_yaml(text: str, source: str | None = None) -> dict[str, Any]:
    """The project's keys from a ``Pulumi.<stack>.yaml`` text, prefix stripped.

    Keys of other namespaces (``gcp:project``) are ignored, except that ``gcp:project`` and
    ``gcp:region`` fill ``project`` and ``region`` when the project's own keys are absent.

    Raises:
        StackFileError: not YAML, or not a ``config:`` mapping.
        ConfigError: a key given twice (see :func:`read_stack_yaml`).
    """
    doc = read_stack_yaml(text, source)
    if isinstance(doc, Mapping) and doc.get("config") is None and "environment" in doc:
        doc = {**doc, "config": {}}  # every value may come from the ESC environment
    if not isinstance(doc, Mapping) or not isinstance(doc.get("config"), Mapping):
        raise StackFileError(["expected a top-level 'config:' mapping (Pulumi stack file)"], source)
    data: dict[str, Any] = {}
    fallbacks: dict[str, Any] = {}
    prefix = PROJECT_NAMESPACE + ":"
    for key, value in doc["config"].items():
        key = str(key)
        if key.startswith(prefix):
            data[key[len(prefix) :]] = value
        elif key in ("gcp:project", "gcp:region"):
            fallbacks[key.split(":", 1)[1]] = value
    problems = [
        f"{_plain(key)}: unknown config namespace {key.split(':', 1)[0]!r}; this project's keys are "
        f"{prefix}<key> (other namespaces read: {', '.join(sorted(OTHER_NAMESPACES))})"
        for key in map(str, doc["config"])
        if ":" not in key or key.split(":", 1)[0] not in {PROJECT_NAMESPACE, *OTHER_NAMESPACES}
    ]
    for k, v in fallbacks.items():
        if k in data and data[k] != v:
            problems.append(
                f"gcp:{k} {v!r} differs from {prefix}{k} {data[k]!r}; the provider would "
                "create resources elsewhere than the stack says"
            )
        data.setdefault(k, v)
    if problems:
        raise ConfigError(problems, source)
    return data


def _read_text(path: Path) -> str:
    if path.exists() and not path.is_file():  # a FIFO or device: reading could block forever
        what = "a directory" if path.is_dir() else "not a regular file"
        raise StackFileError([f"{what}; a stack file is a regular file"], str(path))
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise StackFileError(
            [f"not UTF-8 text (byte {e.start}: {e.object[e.start : e.start + 1]!r})"], str(path)
        ) from None


def load_stack_file(path: str | Path, overrides: Mapping[str, Any] | None = None) -> StackConfig:
    """Read and validate ``Pulumi.<stack>.yaml`` (plain YAML read, no Pulumi engine), with
    ``overrides`` (:func:`parse_set`) applied first.

    Raises:
        ConfigError: the file is invalid; ``problems`` lists every problem.
        StackFileError: the file is not UTF-8 text.
        OSError: the file cannot be read.
    """
    path = Path(path)
    data = stack_data_from_yaml(_read_text(path), str(path))
    return validate(apply_overrides(data, overrides or {}, str(path)), str(path))


# ------------------------------------------------------------------------ ESC and --set values
#
# A stack file may import Pulumi ESC environments (``environment: [name, ...]`` beside
# ``config:``); their ``pulumiConfig`` values become config at `pulumi up` time and are not in the
# file (https://www.pulumi.com/docs/esc/integrations/infrastructure/pulumi-iac/). Offline, such
# keys are either given with ``--set KEY=VALUE`` or reported as expected from the environment.


def stack_environments(text: str, source: str | None = None) -> tuple[str, ...]:
    """The ESC environments a stack file imports (``environment:`` as a list of names, one name,
    or ``{imports: [...]}``); ``()`` when none.

    Raises:
        StackFileError / ConfigError: as :func:`read_stack_yaml`, or ``environment:`` of another
            shape.
    """
    doc = read_stack_yaml(text, source)
    env = doc.get("environment") if isinstance(doc, Mapping) else None
    if env is None:
        return ()
    if isinstance(env, Mapping):
        env = env.get("imports", [])
    if isinstance(env, str):
        env = [env]
    if not isinstance(env, list) or not all(isinstance(e, str) and e for e in env):
        raise StackFileError(
            [f"environment: {env!r} is not a list of ESC environment names"], source
        )
    return tuple(env)


def required_keys() -> tuple[str, ...]:
    """Top-level stack keys without a default (``project``, ``region``, ``zones``)."""
    return tuple(n for n, f in StackConfig.model_fields.items() if f.is_required())


class SetError(ConfigError):
    """A ``--set KEY=VALUE`` that cannot be applied (its key goes through a value of another
    shape, or names a list entry the file does not have): a usage error (``raygke`` exits 2)."""


# ``--set`` keys: a top-level key, then ``.key`` per mapping level and ``[name]`` or ``[index]``
# (or ``.index``) per list entry: the path shape problems are printed with
# (``node_pools[tpu].max_nodes``), so a path from ``raygke check`` can be given back to ``--set``.
_SET_KEY = re.compile(r"[^.\[\]\s]+(?:\.[^.\[\]\s]+|\[[^\[\]]+\])*")
_SET_PART = re.compile(r"\.?([^.\[\]]+)|\[([^\[\]]+)\]")


def set_key_parts(key: str) -> list[tuple[str, str]] | None:
    """``node_pools[tpu].max_nodes`` -> ``[("key", "node_pools"), ("item", "tpu"), ("key",
    "max_nodes")]``; a digits-only ``.0`` is a ``key`` part that :func:`apply_overrides` reads as
    an index where the value is a list. None when ``key`` is not of that shape (empty parts,
    unbalanced brackets, spaces)."""
    if not _SET_KEY.fullmatch(key):
        return None
    return [("key", k) if k else ("item", i.strip("'\"")) for k, i in _SET_PART.findall(key)]


def parse_set(items: list[str]) -> dict[str, Any]:
    """``["project=my-proj", "zones=[us-east5-a]", "cluster.name=ray",
    "node_pools[tpu].max_nodes=3"]`` -> overrides, each value read as YAML 1.2 (as in a stack
    file). A key may carry the ``ray-gke:`` prefix; a dotted key sets a key inside a mapping, and
    ``[name]`` (or ``[index]``, ``.index``) a list entry (:func:`apply_overrides`).

    Raises:
        ConfigError: an item has no ``=``, a key not of that shape, or a value that is not YAML.
    """
    out: dict[str, Any] = {}
    problems: list[str] = []
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip().removeprefix(PROJECT_NAMESPACE + ":")
        if not eq or not key or set_key_parts(key) is None:
            problems.append(
                f"--set {item!r}: expected KEY=VALUE, KEY a stack path (e.g. --set "
                "project=my-project, --set cluster.name=ray, --set node_pools[tpu].max_nodes=3)"
            )
            continue
        try:
            out[key] = read_stack_yaml(raw) if raw.strip() else ""
        except (StackFileError, ConfigError) as e:
            problems.append(f"--set {key}: {'; '.join(e.problems)}")
    if problems:
        raise ConfigError(problems)
    return out


def _entry_index(entries: list[Any], name: str) -> int | None:
    """The index of the entry of ``entries`` named ``name`` (by the first of
    :data:`~components.stack.problems.ENTRY_KEYS` it has, as problem paths name entries), else
    ``name`` as an index (``0``, ``-1``) when it is one."""
    for key in ENTRY_KEYS:
        for i, entry in enumerate(entries):
            if isinstance(entry, Mapping) and str(entry.get(key)) == name:
                return i
    if re.fullmatch(r"-?\d+", name) and -len(entries) <= int(name) < len(entries):
        return int(name) % len(entries)
    return None


def _entry_names(entries: list[Any]) -> str:
    names = []
    for i, entry in enumerate(entries):
        named = (
            [entry.get(k) for k in ENTRY_KEYS if entry.get(k)] if isinstance(entry, Mapping) else []
        )
        names.append(str(named[0]) if named else str(i))
    return ", ".join(names) if names else "none (the list is empty)"


def apply_overrides(
    data: Mapping[str, Any], overrides: Mapping[str, Any], source: str | None = None
) -> dict[str, Any]:
    """A copy of ``data`` with ``overrides`` (key -> value, keys as :func:`parse_set` accepts
    them) set: ``cluster.name`` sets a key of a mapping (creating the mappings on the way),
    ``node_pools[tpu].max_nodes`` a key of the list entry named ``tpu`` (its ``name``, or a Kueue
    flavor's ``pool``), ``node_pools[0].max_nodes`` or ``node_pools.0.max_nodes`` of the first
    entry. An entry is never created: a list is given whole (``--set 'zones=[a, b]'``).

    Raises:
        SetError: a key goes through a value that is not a mapping or list, names an entry the
            list does not have, or indexes a list the file does not give.
    """
    import copy

    out = copy.deepcopy(dict(data))
    for key, value in overrides.items():
        parts = set_key_parts(key) or [("key", key)]
        node: Any = out
        for i, (kind, name) in enumerate(parts):
            last = i == len(parts) - 1
            where = _set_label(parts[:i]) or "the stack"
            if isinstance(node, list) and (kind == "item" or re.fullmatch(r"-?\d+", name)):
                index = _entry_index(node, name)
                if index is None:
                    raise SetError(
                        [
                            f"--set {key}: {where} has no entry {name!r}; its entries: "
                            f"{_entry_names(node)} (by name or index)"
                        ],
                        source,
                    )
                if last:
                    node[index] = value
                else:
                    node = node[index]
            elif isinstance(node, dict) and kind == "key":
                if last:
                    node[name] = value
                elif node.get(name) is None:
                    if parts[i + 1][0] == "item" or re.fullmatch(r"-?\d+", parts[i + 1][1]):
                        raise SetError(
                            [
                                f"--set {key}: {_set_label(parts[: i + 1])} is not in the file, so "
                                "it has no entry to set; give the whole list: --set "
                                f"'{_set_label(parts[: i + 1])}=[...]'"
                            ],
                            source,
                        )
                    node[name] = {}
                node = node[name]
            elif isinstance(node, list):
                raise SetError(
                    [
                        f"--set {key}: {where} is a list; name an entry as {where}[<name>] or "
                        f"{where}[<index>] (its entries: {_entry_names(node)})"
                    ],
                    source,
                )
            else:
                what = "a mapping" if isinstance(node, dict) else f"{type(node).__name__} {node!r}"
                raise SetError(
                    [f"--set {key}: {where} is {what}, not a list: it has no entry [{name}]"]
                    if isinstance(node, dict)
                    else [f"--set {key}: {where} is not a mapping or a list (it is {what})"],
                    source,
                )
    return out


def _set_label(parts: list[tuple[str, str]]) -> str:
    """``[("key", "node_pools"), ("item", "tpu")]`` -> ``node_pools[tpu]``."""
    return "".join(f".{n}" if k == "key" else f"[{n}]" for k, n in parts).lstrip(".")


def esc_stand_ins(data: Mapping[str, Any], keys: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Placeholder values for required ``keys`` an ESC environment provides, consistent with the
    rest of ``data`` (a region taken from any zone the file names), so the checks of the other
    keys can run. Never deployed: only ``raygke check`` uses them, and says so."""
    zones = [z for z in (data.get("zones") or []) if isinstance(z, str)]
    for pool in data.get("node_pools") or []:
        if isinstance(pool, Mapping):
            zones += [z for z in (pool.get("zones") or []) if isinstance(z, str)]
    region = data.get("region")
    if not isinstance(region, str):
        region = zones[0].rpartition("-")[0] if zones else "us-central1"
    letters = catalog.GCP_REGIONS.get(region) or "a"
    stand_ins = {
        "project": "esc-placeholder",
        "region": region,
        "zones": sorted(set(zones)) or [f"{region}-{letters[0]}"],
    }
    return {k: stand_ins[k] for k in keys if k in stand_ins}
