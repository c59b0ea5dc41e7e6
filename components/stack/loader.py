"""Reading stack files: YAML 1.2 as Pulumi reads it, the project's keys, and validation into
:class:`StackConfig` with one readable line per problem.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from components import catalog
from components.config.deprecations import modernized
from components.config.epochs import hold_defaults, read_epoch
from components.config.overrides import (  # noqa: F401  (re-exported: the ESC and --set API)
    SetError,
    apply_overrides,
    esc_stand_ins,
    parse_set,
    required_keys,
    set_key,
    set_key_parts,
    stack_environments,
)
from components.config.stack import StackConfig
from components.kernel.base import (
    OTHER_NAMESPACES,
    PROJECT_NAMESPACE,
    StackConfigError,
    StackFileError,
    one_line,
)
from components.kernel.hints import KEY_HINTS
from components.kernel.problems import ENTRY_KEYS, Problem
from components.kernel.stackyaml import (  # noqa: F401  (re-exported: the YAML reading API)
    MAX_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_STACK_BYTES,
    MAX_VALUES,
    WrittenFloat,
    read_stack_yaml,
)
from components.stack.rules import rule_problems, skipped_rules

# --------------------------------------------------------------------------------------- loaders


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """``('node_pools', 1, 'tpu', 'tpu')`` -> ``node_pools[tpu-v6e].tpu`` (item names where known:
    the first of :data:`components.kernel.problems.ENTRY_KEYS` an entry has, as :mod:`raygke.report`
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
    """(field path, message) for a derived or removed key (:mod:`components.kernel.hints`)."""
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


_NUMBER_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_BOUND_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "too_short",
    "too_long",
}


def format_validation_error(err: ValidationError, data: Any = None) -> list[Problem]:
    """One :class:`~components.kernel.problems.Problem` per problem (rule ``field``), path from the
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
            kinds = _kinds_with_key(tuple(e["loc"]))
            msg = (
                f"unknown key {key!r}; did you mean {close[0]!r}? (extra keys are rejected)"
                if close
                else f"{key!r} is a key of {' and '.join(kinds)} pools only, not of a "
                f"{e['loc'][2]} pool"
                if kinds
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
            span = _field_range(tuple(e["loc"])) if e["type"] in _NUMBER_BOUNDS else None
            msg = f"{f'must be {span}' if span else msg}; got {e.get('input')!r}"
        elif e["type"] in ("literal_error", "enum") or e["type"].endswith(("_type", "_parsing")):
            msg = f"{msg}; got {e.get('input')!r}{_type_hint(e['type'], e.get('input'))}"
        # The project's validators join several problems with newlines (and quote the values
        # they show); any other control character is a value's: escaped.
        parts = msg.split("\n") if e["type"] == "value_error" else [msg]
        for part in parts:
            part = one_line(part)
            lines.append(Problem(loc, f"{loc}: {part}" if loc else part, "field"))
    return lines


def _models_at(loc: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    """The model classes (with their union tags) of the mapping at pydantic error location
    ``loc`` (list indices skipped; a discriminated union's tag, ``tpu`` after a node pool's
    index, picks its member); ``[]`` where the model there is not known (a free mapping such as
    ``labels``)."""
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
    return current


def _kinds_with_key(loc: tuple[Any, ...]) -> list[str]:
    """For an unknown key of a tagged list entry (``('node_pools', 0, 'cpu', 'gpu_networking')``),
    the other kinds whose model has that key (``['gpu']``); ``[]`` elsewhere."""
    if len(loc) != 4 or loc[0] not in _TAGGED_LISTS or not isinstance(loc[1], int):
        return []
    members = _models_at(loc[:2])
    return [t for c, t in members if t and t != loc[2] and str(loc[3]) in c.model_fields]


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the model accepts in the mapping at pydantic error location ``loc``
    (:func:`_models_at`); ``[]`` where the model there is not known."""
    return sorted({k for cls, _ in _models_at(loc) for k in cls.model_fields})


def _field_range(loc: tuple[Any, ...]) -> str | None:
    """The bounds of the number field at ``loc`` in words, both ends where it has both (``from
    20 to 65536``, ``at least 1``, ``at most 8``, ``above 0``), from its ``Field(ge=, le=, gt=,
    lt=)``; None when the field or its bounds are not found (the library's message stays)."""
    import annotated_types as at

    words = {at.Ge: "at least", at.Gt: "above", at.Le: "at most", at.Lt: "below"}
    for cls, _ in _models_at(loc[:-1]):
        f = cls.model_fields.get(str(loc[-1]))
        if f is None:
            continue
        bounds = {
            type(m): getattr(m, type(m).__name__.lower()) for m in f.metadata if type(m) in words
        }
        low = next(((words[k], v) for k, v in bounds.items() if k in (at.Ge, at.Gt)), None)
        high = next(((words[k], v) for k, v in bounds.items() if k in (at.Le, at.Lt)), None)
        if low and high and low[0] == "at least" and high[0] == "at most":
            return f"from {low[1]} to {high[1]}"
        said = [f"{w} {v}" for w, v in (low, high) if w]
        return " and ".join(said) or None
    return None


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
    rules that could not run are listed in ``StackConfigError.notes``.

    Raises:
        StackConfigError: with every problem found (``items``: Problems with their stack paths;
            ``problems``: one line each).
    """
    if not isinstance(data, Mapping):
        raise StackConfigError(
            [f"expected a mapping of config keys, got {type(data).__name__}"], source
        )
    epoch = read_epoch(data)  # from the file as written, before the rewrites below
    data, deprecated = modernized(data)
    data = dict(data)
    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as e:
        problems: list[Problem] = format_validation_error(e, data)
        notes: list[str] = []
        partial = _valid_blocks(data, e)
        if partial is not None:
            cfg, broken = partial
            cfg._epoch = epoch
            hold_defaults(cfg, epoch)
            problems += [p for p in rule_problems(cfg, broken=broken) if p.severity != "warning"]
            notes = skipped_rules(broken=broken)
        raise StackConfigError(problems, source, notes) from None
    except catalog.CatalogError as e:  # pragma: no cover - validators wrap these already
        raise StackConfigError([str(e)], source) from None
    cfg._epoch = epoch
    cfg._held = tuple(hold_defaults(cfg, epoch))
    problems = rule_problems(cfg)  # the rules run once, over the validated model
    errors = [p for p in problems if p.severity != "warning"]
    if errors:
        raise StackConfigError(errors, source)
    cfg._notices = (*deprecated, *problems)  # warnings only: deprecations, newer refusals
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
        StackConfigError: a key given twice (see :func:`read_stack_yaml`).
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
        raise StackConfigError(problems, source)
    return data


def read_stack_text(path: Path) -> str:
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
        StackConfigError: the file is invalid; ``problems`` lists every problem.
        StackFileError: the file is not UTF-8 text.
        OSError: the file cannot be read.
    """
    path = Path(path)
    data = stack_data_from_yaml(read_stack_text(path), str(path))
    return validate(apply_overrides(data, overrides or {}, str(path)), str(path))
