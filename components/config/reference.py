"""The stack file reference (``docs/stack-config.md``), generated from the pydantic model.

:func:`render_reference` walks :class:`~components.config.stack.StackConfig` recursively (its
``model_fields``: key, type with bounds, default, ``description``) and returns Markdown: one
section per mapping (``network``, ``cluster.system_pool``, ``ray_clusters[]`` ...), node pools as
one section per kind (CPU, TPU, GPU). Pure: no I/O; ``raygke docs`` writes or checks the file.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from components.config.stack import StackConfig
from components.kernel.base import PROJECT_NAMESPACE
from components.kernel.hints import KEY_HINTS
from contract.registry import args_classes, markdown_table

REGENERATE = "raygke docs --write"

_INTRO = f"""\
# Stack file reference

<!-- Generated from the stack model (components/config/) by `{REGENERATE}`; do not edit by hand:
a test fails when this file differs from the model. -->

Every key below is set in `Pulumi.<stack>.yaml` under `config:` as `{PROJECT_NAMESPACE}:<top-level key>`
(for example `{PROJECT_NAMESPACE}:cluster: {{name: ray-dev, regional: false}}`). Unknown keys are
rejected; `raygke check --stack <stack>` validates a stack offline. `a.b` is key `b` inside mapping
`a`; `a[].b` is key `b` of each item of list `a`. A default of *required* means the key must be
given; *see below* means the value is a mapping whose keys have their own defaults.
"""


@dataclass(frozen=True)
class Row:
    """One key of the reference: its path (``cluster.system_pool.min_nodes``), type, default,
    and description."""

    path: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    """A mapping of the stack file: its path, a label (the node pool kind, else None), what it
    is (the model's docstring), its keys."""

    path: str
    label: str | None
    about: str
    rows: tuple[Row, ...]


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _members(annotation: Any) -> list[Any]:
    annotation = _unwrap(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [_unwrap(a) for a in get_args(annotation)]
    return [annotation]


def _type(annotation: Any) -> str:
    """``list[str] | None`` -> ``list of string, or null``."""
    annotation = _unwrap(annotation)
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        parts = list(dict.fromkeys(_type(a) for a in get_args(annotation)))
        return ", or ".join(parts)
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in get_args(annotation))
    if origin is list:
        (item,) = get_args(annotation)
        return f"list of {_type(item)}"
    if origin is dict:
        key, value = get_args(annotation)
        return f"mapping {_type(key)} -> {_type(value)}"
    if annotation is type(None):
        return "null"
    if _is_model(annotation):
        return "mapping"
    return {str: "string", int: "integer", bool: "boolean", float: "number", Any: "any"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def _bounds(field: FieldInfo) -> list[str]:
    out = []
    for meta in field.metadata:
        for cls, attr, sign in _BOUNDS:
            if isinstance(meta, cls):
                out.append(f"{sign} {getattr(meta, attr)}")
        if isinstance(meta, annotated_types.MinLen):
            n = meta.min_length
            out.append(f"at least {n} item{'s' if n != 1 else ''}")
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "*required*"
    value = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return "*see below*"
    if value is None:
        return "unset"
    return f"`{json.dumps(_plain(value), separators=(', ', ': '))}`"


def _about(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip()
    text = " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _key(name: str, field: FieldInfo) -> str:
    return field.alias or name


def sections(
    model: type[BaseModel] = StackConfig, path: str = "", label: str | None = None
) -> Iterator[Section]:
    """Sections of ``model`` and of every model nested in it, depth first (a key's mapping comes
    right after the section that lists the key). Node pool kinds are separate sections."""
    rows: list[Row] = []
    nested: list[tuple[str, type[BaseModel], str | None]] = []
    for name, field in model.model_fields.items():
        key = _key(name, field)
        full = f"{path}.{key}" if path else key
        typ = _type(field.annotation)
        bounds = _bounds(field)
        if bounds:
            typ += f" ({', '.join(bounds)})"
        rows.append(Row(full, typ, _default(field), field.description or ""))
        annotation = _unwrap(field.annotation)
        if get_origin(annotation) is list:
            inner, suffix = get_args(annotation)[0], "[]"
        else:
            inner, suffix = annotation, ""
        models = [m for m in _members(inner) if _is_model(m)]
        for m in models:
            kind = m.model_fields.get("kind")
            kind_label = f"{kind.default.upper()} pool" if len(models) > 1 and kind else label
            nested.append((full + suffix, m, kind_label))
    yield Section(path, label, _about(model), tuple(rows))
    for sub_path, m, sub_label in nested:
        yield from sections(m, sub_path, sub_label)


def _table(rows: tuple[Row, ...]) -> list[str]:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for r in rows:
        cells = (f"`{r.path}`", r.type, r.default, r.description)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def render_reference() -> str:
    """The whole reference as Markdown (ends with one newline). Deterministic: the same model
    gives the same bytes."""
    out = [_INTRO]
    for s in sections():
        heading = f"`{s.path}`" if s.path else "Top-level keys"
        if s.label:
            heading += f" ({s.label})"
        out.append(f"## {heading}\n")
        if s.about:
            out.append(s.about + "\n")
        out.append("\n".join(_table(s.rows)) + "\n")
    out.append("## Derived and removed keys\n")
    out.append(
        "A stack that sets one of these is refused with the explanation shown (derived: the "
        "value comes from other keys; removed: no longer a key).\n"
    )
    out.append("| key | kind | why, and what to write instead |\n|---|---|---|")
    for hint in KEY_HINTS.values():
        path, _, label = hint.doc.partition(" (")
        key = f"`{path}`" + (f" ({label}" if label else "")
        out.append(f"| {key} | {hint.kind} | {_cell(hint.text)} |")
    out.append("\n## Workload arguments (`jobs[].args`)\n")
    out.append(
        "Each registered workload's arguments, from its dataclass in `contract/args/` (the one source of "
        "their types, defaults and checks). `dataset`, `storage_path`, `name` (training jobs: the "
        "job name), `scaling`, `max_failures` and `peak_flops_per_device` are filled in by the "
        "platform from the job's target; a value in `args` wins.\n"
    )
    for name in args_classes():
        out.append(f"### `{name}`\n\n{markdown_table(name)}\n")
    return "\n".join(out).rstrip("\n") + "\n"
