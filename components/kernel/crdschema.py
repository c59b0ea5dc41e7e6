"""What the API server does with a custom resource, for every CRD the stack carries: the one
checker (:func:`validate_object`: pruning, defaulting, schema, ``metadata``, list types, CEL
rules) that KubeRay's, Kueue's, the ComputeClass's and Managed Prometheus' checks call. Every
result is a :class:`~components.kernel.problems.Problem` carrying the object path. The steps
and their sources:
docs/sources.md#kernel-crdschema
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from components.kernel import crdcel
from components.kernel.labels import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    is_label_value,
    qualified_name_problem,
)
from components.kernel.problems import Problem, in_object
from components.kernel.yamlcache import load_yaml_cached

SUMS_FILE = "SHA256SUMS"
"""Beside each carried CRD folder's files (``sha256sum *.yaml`` output): their recorded digests."""


class CarriedFileError(RuntimeError):
    """A CRD file the check reads is damaged (not the recorded bytes of a carried copy, not
    YAML, or not a CustomResourceDefinition with schemas): a fault of the installation, not of
    the stack, so ``raygke`` reports it as an internal error (exit 3) naming the file, never as
    problems of the user's objects. Not a ValueError, so no caller turns it into a problem line."""


NOTE_RULE = "crd-cel-not-evaluated"
"""The rule of a ``warning`` Problem about a CEL rule of a CRD this runtime cannot evaluate (the
rule was not checked; not a refusal)."""


def verify(path: Path) -> None:
    """Raise :class:`CarriedFileError` when ``path`` is listed in its folder's
    :data:`SUMS_FILE` with another SHA-256 (a truncated or edited carried copy); a folder without
    one (``$RAYGKE_CRDS_DIR``) is checked by structure only (:func:`load_crd`)."""
    sums = path.parent / SUMS_FILE
    if not sums.is_file():
        return
    recorded = dict(
        reversed(line.split(maxsplit=1)) for line in sums.read_text().splitlines() if line.strip()
    )
    want = recorded.get(path.name)
    if want is not None and hashlib.sha256(path.read_bytes()).hexdigest() != want.strip():
        raise CarriedFileError(
            f"{path}: the carried CRD file is damaged (its SHA-256 is not the one recorded in "
            f"{sums}); restore it, e.g. `git checkout -- {path}`"
        )


@functools.lru_cache(maxsize=32)
def load_crd(path: str) -> dict[str, Any]:
    """The CustomResourceDefinition in the file ``path`` (verified, :func:`verify`).

    Raises:
        CarriedFileError: the file is damaged (see :class:`CarriedFileError`).
    """
    verify(Path(path))
    try:
        doc = load_yaml_cached(Path(path).read_bytes())  # parsed once per content
    except yaml.YAMLError as e:
        raise CarriedFileError(f"{path}: the CRD file is not readable YAML ({e})") from None
    versions = (doc.get("spec") or {}).get("versions") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "CustomResourceDefinition"
        or not isinstance(versions, list)
        or not versions
        or not all(
            isinstance(v, dict)
            and isinstance((v.get("schema") or {}).get("openAPIV3Schema"), dict)
            # required by apiextensions.k8s.io/v1 CustomResourceDefinitionVersion, and written
            # after the schema (keys sorted): a file cut inside a schema lacks them
            and isinstance(v.get("served"), bool)
            and isinstance(v.get("storage"), bool)
            for v in versions
        )
    ):
        raise CarriedFileError(
            f"{path}: not a complete CustomResourceDefinition (each version needs a schema, "
            "served and storage; the file is damaged or truncated); restore the file"
        )
    return doc


@functools.lru_cache(maxsize=32)
def load_schema(path: str, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in the CRD file ``path``.

    Raises:
        CarriedFileError: the file is damaged. ValueError: the CRD has no such version.
    """
    for v in load_crd(path)["spec"]["versions"]:
        if v.get("name") == version:
            return v["schema"]["openAPIV3Schema"]
    raise ValueError(f"{path}: no version {version!r} in the CRD")


def fmt_path(path: Iterable[Any]) -> str:
    """``("spec", "groups", 0, "name")`` -> ``spec.groups[0].name`` (``<root>`` when empty)."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "<root>"


def json_schema(schema: Any) -> Any:
    """Structural schema -> plain JSON Schema: int-or-string becomes ``anyOf`` integer|string,
    ``nullable: true`` admits ``null``, ``x-kubernetes-*`` keys dropped, Go's ``^(?i)`` inline flag (AdmissionCheck's pattern) moved
    first for Python's ``re`` (same meaning)."""
    if isinstance(schema, dict):
        out = {k: json_schema(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if schema.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if schema.get("nullable") is True:  # OpenAPI's nullable: null is a value of the field
            if isinstance(out.get("type"), str):
                out["type"] = [out["type"], "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        p = out.get("pattern")
        if isinstance(p, str) and p.startswith("^(?i)"):
            out["pattern"] = "(?i)^" + p[len("^(?i)") :]
        return out
    if isinstance(schema, list):
        return [json_schema(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=32)
def validator(path: str, version: str) -> jsonschema.protocols.Validator:
    """The jsonschema validator of ``version`` of the CRD file ``path`` (built once;
    :func:`json_schema` builds a new tree, so the loaded schema is not copied first)."""
    schema = json_schema(load_schema(path, version))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


def unknown_fields(obj: Any, schema: dict[str, Any], path: tuple = ()) -> list[tuple]:
    """Paths of the fields in ``obj`` that ``schema`` does not declare (the ones the API server
    would prune). Objects with ``x-kubernetes-preserve-unknown-fields`` keep everything."""
    found: list[tuple] = []
    if isinstance(obj, dict) and isinstance(schema, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return found
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        for key, value in obj.items():
            if props is not None and key in props:
                found += unknown_fields(value, props[key], (*path, key))
            elif isinstance(addl, dict):
                found += unknown_fields(value, addl, (*path, key))
            elif props is not None or addl is False:
                found.append((*path, key))
    elif (
        isinstance(obj, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict)
    ):
        for i, item in enumerate(obj):
            found += unknown_fields(item, schema["items"], (*path, i))
    return found


def apply_defaults(obj: Any, schema: dict[str, Any]) -> Any:
    """``obj`` as the API server stores it (a new copy): ``null`` values of fields that are not
    ``nullable`` pruned, then every omitted field whose enclosing object is present given its
    schema ``default`` (recursively: list items and map values included, and inside a default
    that is itself an object). Source: "Defaulting" and "Defaulting and Nullable" in
    https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting.
    """
    if isinstance(obj, dict) and isinstance(schema, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return copy.deepcopy(obj)
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, value in obj.items():
            sub = props.get(key, addl if isinstance(addl, dict) else None)
            if value is None and isinstance(sub, dict) and not sub.get("nullable"):
                continue  # pruned before defaulting
            out[key] = apply_defaults(value, sub) if isinstance(sub, dict) else value
        for key, sub in props.items():
            if key not in out and isinstance(sub, dict) and "default" in sub:
                out[key] = apply_defaults(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(obj, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [apply_defaults(v, schema["items"]) for v in obj]
    return copy.deepcopy(obj)


def list_type_problems(obj: Any, schema: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """``(path, why)`` for each duplicate in an ``x-kubernetes-list-type: set`` list and each item
    of a ``map`` list whose ``x-kubernetes-list-map-keys`` repeat an earlier item's
    (``Duplicate value: ...`` on the API server)."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(schema, dict):
        return out
    if isinstance(obj, list):
        kind, items = schema.get("x-kubernetes-list-type"), schema.get("items")
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: list[Any] = []
        for i, item in enumerate(obj):
            if kind == "set" or (kind == "map" and isinstance(item, dict)):
                mark = item if kind == "set" else {k: item.get(k) for k in keys}
                if mark in seen:
                    out.append(((*path, i), f"Duplicate value: {mark!r}"))
                seen.append(mark)
            out += list_type_problems(item, items, (*path, i))
    elif isinstance(obj, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, value in obj.items():
            out += list_type_problems(
                value, props.get(key, addl if isinstance(addl, dict) else None), (*path, key)
            )
    return out


ANNOTATIONS_BYTES_MAX = 256 * 1024  # objectmeta.go TotalAnnotationSizeLimitB


def metadata_problems(meta: Any, namespaced: bool) -> list[tuple[tuple, str]]:
    """``(path, why)`` for each ObjectMeta rule ``meta`` breaks (module docstring, step 4)."""
    if not isinstance(meta, dict):
        return [(("metadata",), "must be an object")]
    out: list[tuple[tuple, str]] = []
    name = meta.get("name") or ""
    if not name and not meta.get("generateName"):
        out.append((("metadata", "name"), "Required value: name or generateName is required"))
    if name and (len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name)):
        out.append(
            (
                ("metadata", "name"),
                f"{name!r}: a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (at most 253 characters)",
            )
        )
    ns = meta.get("namespace")
    if ns and not namespaced:
        out.append((("metadata", "namespace"), "not allowed on this type (cluster-scoped)"))
    elif ns and (len(ns) > 63 or not DNS1123_LABEL.fullmatch(str(ns))):
        out.append((("metadata", "namespace"), f"{ns!r}: must be a DNS label (RFC 1123)"))
    for key, value in (meta.get("labels") or {}).items():
        if why := qualified_name_problem(str(key)):
            out.append((("metadata", "labels", key), f"label key {key!r}: {why}"))
        v = "" if value is None else str(value)
        if not is_label_value(v):
            out.append(
                (
                    ("metadata", "labels", key),
                    f"label value {v!r}: at most 63 characters of alphanumerics, '-', '_' or "
                    "'.', starting and ending with an alphanumeric",
                )
            )
    annotations = meta.get("annotations") or {}
    for key in annotations:
        if why := qualified_name_problem(str(key).lower()):
            out.append((("metadata", "annotations", key), f"annotation key {key!r}: {why}"))
    size = sum(len(str(k)) + len(str(v or "")) for k, v in annotations.items())
    if size > ANNOTATIONS_BYTES_MAX:
        out.append(
            (
                ("metadata", "annotations"),
                f"Too long: annotations are {size} bytes, at most {ANNOTATIONS_BYTES_MAX}",
            )
        )
    return out


def validate_object(
    manifest: dict[str, Any], crd_file: Path | str, *, head: str | None = None
) -> list[Problem]:
    """Every problem of one custom resource against its CRD file ``crd_file`` (the version named
    by the object's ``apiVersion``), in the order of the module docstring, one line each:
    ``<head>: <path>: <why>`` (``head`` defaults to ``<Kind> <name>``), a
    :class:`~components.kernel.problems.Problem` whose ``object_field`` is ``<path>``; ``warning``
    Problems of rule :data:`NOTE_RULE` for CEL rules not evaluated.

    Raises:
        CarriedFileError: the CRD file is damaged. ValueError: the CRD has no such version.
    """
    kind = manifest.get("kind", "?")
    meta = manifest.get("metadata")
    head = head or f"{kind} {(meta or {}).get('name', '?')}"
    version = str(manifest.get("apiVersion", "")).rpartition("/")[2]
    path = str(crd_file)
    schema = load_schema(path, version)
    body = {k: v for k, v in manifest.items() if k != "metadata"}

    def line(where: tuple, why: str, note: bool = False) -> Problem:
        at = fmt_path(where)
        if note:
            return in_object(at, f"{head}: {at}: {why}", NOTE_RULE, "warning")
        return in_object(at, f"{head}: {at}: {why}")

    out = [
        line(p, "unknown field (the API server would prune it)")
        for p in unknown_fields(body, schema)
    ]
    stored = apply_defaults(body, schema)
    errors = sorted(
        validator(path, version).iter_errors(stored),
        key=lambda e: (list(map(str, e.path)), e.message),
    )
    out += [line(tuple(e.absolute_path), e.message) for e in errors]
    if meta is not None:
        namespaced = load_crd(path)["spec"].get("scope", "Namespaced") == "Namespaced"
        out += [line(p, why) for p, why in metadata_problems(meta, namespaced)]
    out += [line(p, why) for p, why in list_type_problems(stored, schema)]
    if any(e.validator in ("type", "enum") for e in errors):
        return [*out, line((), crdcel.NOT_CHECKED)]
    for r in crdcel.rule_problems(stored, schema):
        out.append(line(r.path, r.message, r.note))
    return out


def problems_with_notes(problems: Iterable[Problem], path: str, rule: str) -> list[Problem]:
    """``problems`` (of :func:`validate_object` or a caller's own) as Problems of the stack field
    ``path`` and of ``rule`` where they have none (a note keeps its rule, :data:`NOTE_RULE`)."""
    return [p.with_path(path).with_rule(rule) for p in problems]


def structural_problems(schema: Any, path: str = "", root: bool = True) -> list[Problem]:
    """Why ``schema`` is not a structural schema (the API server refuses such a CRD in
    apiextensions.k8s.io/v1: "Specifying a structural schema" on the CRD page above): a node
    without ``type`` (unless ``x-kubernetes-int-or-string`` or
    ``x-kubernetes-preserve-unknown-fields``), ``properties`` beside ``additionalProperties``,
    ``type`` / ``default`` / ``nullable`` inside ``allOf`` / ``anyOf`` / ``oneOf`` / ``not``
    (int-or-string's own ``anyOf`` aside), ``metadata`` restricting more than ``name`` and
    ``generateName``. Empty when structural. Problems of the CRD, not of a stack (no path)."""
    out: list[Problem] = []
    if not isinstance(schema, dict):
        return out
    here = path or "<root>"
    if not schema.get("type") and not (
        schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out.append(Problem("", f"{here}: no type"))
    if "properties" in schema and "additionalProperties" in schema:
        out.append(Problem("", f"{here}: properties and additionalProperties together"))
    for junction in ("allOf", "anyOf", "oneOf", "not"):
        parts = schema.get(junction)
        parts = [parts] if isinstance(parts, dict) else parts or []
        if junction == "anyOf" and schema.get("x-kubernetes-int-or-string"):
            continue
        for part in parts:
            bad = {"type", "default", "nullable"} & set(part) if isinstance(part, dict) else set()
            if bad:
                out.append(
                    Problem("", f"{here}.{junction}: {', '.join(sorted(bad))} inside {junction}")
                )
    props = schema.get("properties") or {}
    if root and isinstance(props.get("metadata"), dict):
        extra = set(props["metadata"].get("properties") or {}) - {"name", "generateName"}
        if extra:
            out.append(
                Problem(
                    "", f".metadata: restricts {', '.join(sorted(extra))} (only name, generateName)"
                )
            )
    for key, sub in props.items():
        if not (root and key == "metadata"):
            out += structural_problems(sub, f"{path}.{key}", False)
    if isinstance(schema.get("additionalProperties"), dict):
        out += structural_problems(schema["additionalProperties"], f"{path}[*]", False)
    if isinstance(schema.get("items"), dict):
        out += structural_problems(schema["items"], f"{path}[*]", False)
    return out
