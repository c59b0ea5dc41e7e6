"""Validate rendered KubeRay custom resources against the CRD schemas of the stack's KubeRay version.

The API server validates a custom resource against its CRD's ``openAPIV3Schema`` and then
*silently prunes* every field the schema does not declare, unless the enclosing object has
``x-kubernetes-preserve-unknown-fields: true``
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning).
A misspelled field (``numOfHost``) is therefore not an error on the cluster, just a setting that
never takes effect. Here it is an error, reported with its path::

    RayCluster research: spec.workerGroupSpecs[0].numOfHost: unknown field (the API server would prune it)

``x-kubernetes-int-or-string: true`` accepts an integer or a string (same page, "IntOrString").
CEL rules (``x-kubernetes-validations``) and ``metadata`` (ObjectMeta, validated by the API server
itself) are not checked here.

The CRD folder is ``components/kuberay/crds/v<version>`` for the stack's
``kuberay.chart_version`` (one of ``components.stack.KUBERAY_CHART_VERSIONS``: 1.7.0, 1.6.2;
carried inside the repository, so a clone with nothing beside it can run the check) unless the
environment variable ``RAYGKE_CRDS_DIR`` names another; it holds ``ray.io_rayclusters.yaml``,
``ray.io_rayjobs.yaml``, ``ray.io_rayservices.yaml`` as published with that KubeRay version
(https://github.com/ray-project/kuberay/tree/v1.7.0/helm-chart/kuberay-operator/crds).
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from components.kuberay.render import CRD_FILES, carried_crds_dir
from components.stack.problems import FieldLine
from components.stack.yamlcache import load_yaml_cached

CRDS_ENV = "RAYGKE_CRDS_DIR"
DEFAULT_VERSION = "1.7.0"
_CRD_FILES = CRD_FILES


class CrdsMissingError(FileNotFoundError):
    """The KubeRay CRD folder (or a CRD file in it) is absent; the message says how to fix it."""


def crds_dir(version: str = DEFAULT_VERSION) -> Path:
    """The CRD folder: ``$RAYGKE_CRDS_DIR`` if set, else the copy carried in
    ``components/kuberay/crds/v<version>``.

    Raises:
        ValueError: ``version`` is not a carried KubeRay version.
    """
    env = os.environ.get(CRDS_ENV)
    if env:
        return Path(env)
    return carried_crds_dir(version)


def crds_available(directory: Path | None = None, version: str = DEFAULT_VERSION) -> bool:
    """True when the RayCluster and RayJob CRD files are present."""
    d = directory or crds_dir(version)
    return all((d / _CRD_FILES[k]).is_file() for k in ("RayCluster", "RayJob"))


def missing_crds_message(directory: Path | None = None, version: str = DEFAULT_VERSION) -> str:
    """One line saying where the CRDs were looked for and how to point at them."""
    d = directory or crds_dir(version)
    return (
        f"KubeRay v{version} CRDs not found in {d} (need {_CRD_FILES['RayCluster']} and "
        f"{_CRD_FILES['RayJob']}); set {CRDS_ENV}=<folder with the CRD YAML files> "
        f"(e.g. a checkout of ray-project/kuberay helm-chart/kuberay-operator/crds at v{version})"
    )


class CarriedFileError(RuntimeError):
    """A CRD file the check reads is damaged (not the recorded bytes of a carried copy, not
    YAML, or not a CustomResourceDefinition with schemas): a fault of the installation, not of
    the stack, so ``raygke`` reports it as an internal error (exit 3) naming the file, never as
    problems of the user's objects. Not a ValueError, so no caller turns it into a problem line."""


SUMS_FILE = "SHA256SUMS"
"""Beside each carried CRD folder's files (``sha256sum *.yaml`` output): their recorded digests."""


def _verify(path: Path) -> None:
    """Raise :class:`CarriedFileError` when ``path`` is listed in its folder's
    :data:`SUMS_FILE` with another SHA-256 (a truncated or edited carried copy); a folder without
    one (``$RAYGKE_CRDS_DIR``) is checked by structure only (:func:`_load_schema`)."""
    import hashlib

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


@functools.lru_cache(maxsize=16)
def _load_schema(path: str, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in the CRD file ``path``.

    Raises:
        CarriedFileError: the file is damaged (see :class:`CarriedFileError`).
        ValueError: the CRD has no such version.
    """
    _verify(Path(path))
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
    for v in versions:
        if v.get("name") == version:
            return v["schema"]["openAPIV3Schema"]
    raise ValueError(f"{path}: no version {version!r} in the CRD")


def crd_schema(
    kind: str,
    api_version: str = "ray.io/v1",
    directory: Path | None = None,
    version: str = DEFAULT_VERSION,
) -> dict:
    """The ``openAPIV3Schema`` of ``kind`` at ``api_version`` from the CRD folder.

    Raises:
        ValueError: unknown kind or version. CrdsMissingError: the file is absent.
    """
    if kind not in _CRD_FILES:
        raise ValueError(f"kind {kind!r} is not a KubeRay kind; valid: {', '.join(_CRD_FILES)}")
    d = directory or crds_dir(version)
    path = d / _CRD_FILES[kind]
    if not path.is_file():
        raise CrdsMissingError(missing_crds_message(d, version))
    return _load_schema(str(path), api_version.split("/", 1)[-1])


def _fmt(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "<root>"


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Structural schema -> plain JSON Schema: int-or-string becomes ``anyOf`` integer|string."""
    if isinstance(schema, dict):
        out = {k: _json_schema(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if schema.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out.pop("anyOf", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    if isinstance(schema, list):
        return [_json_schema(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=16)
def _validator(path: str, version: str) -> jsonschema.protocols.Validator:
    schema = _json_schema(copy.deepcopy(_load_schema(path, version)))
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


GENERATE_NAME_SUFFIX = "xxxxx"  # the API server appends 5 random characters to generateName


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


def server_view(
    manifest: dict[str, Any], directory: Path | None = None, version: str = DEFAULT_VERSION
) -> dict[str, Any]:
    """What the cluster sees of one KubeRay object: :func:`apply_defaults` with its CRD schema
    (``metadata`` aside), and ``metadata.name`` from ``generateName`` plus the five characters
    the API server appends (``"xxxxx"`` here) when only ``generateName`` is set
    (https://kubernetes.io/docs/reference/using-api/api-concepts/#generated-values). Objects of
    other kinds come back unchanged (a copy).

    Raises:
        CrdsMissingError: the CRD folder is absent.
    """
    out = copy.deepcopy(manifest)
    meta = out.get("metadata") or {}
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = f"{meta['generateName']}{GENERATE_NAME_SUFFIX}"
    kind, api_version = out.get("kind"), str(out.get("apiVersion", ""))
    if kind not in _CRD_FILES or not api_version.startswith("ray.io/"):
        return out
    schema = crd_schema(kind, api_version, directory, version)
    body = apply_defaults({k: v for k, v in out.items() if k != "metadata"}, schema)
    return {**body, "metadata": meta} if "metadata" in out else body


def validate_manifest(
    manifest: dict[str, Any], directory: Path | None = None, version: str = DEFAULT_VERSION
) -> list[FieldLine]:
    """Problems of one rendered custom resource, one line each: ``<Kind> <name>: <path>: <why>``,
    a :class:`~components.stack.problems.FieldLine` carrying ``<path>`` (``kind``, ``apiVersion``
    or the schema error's path in the object).

    Checks apiVersion/kind, unknown (pruned) fields, then the schema (types, enums, required,
    minimum...) of the object as the API server stores it: omitted fields with their CRD
    defaults, non-nullable nulls pruned (:func:`apply_defaults`). ``metadata`` is left to the API
    server.

    Raises:
        CrdsMissingError: the CRD folder is absent.
    """
    kind = manifest.get("kind", "?")
    name = (manifest.get("metadata") or {}).get("name", "?")
    head = f"{kind} {name}"
    api_version = manifest.get("apiVersion", "")
    if kind not in _CRD_FILES:
        valid = ", ".join(_CRD_FILES)
        return [FieldLine(f"{head}: kind {kind!r} is not a KubeRay kind; valid: {valid}", "kind")]
    if not api_version.startswith("ray.io/"):
        return [FieldLine(f"{head}: apiVersion {api_version!r} is not ray.io/v1", "apiVersion")]
    schema = crd_schema(kind, api_version, directory, version)
    d = directory or crds_dir(version)
    body = {k: v for k, v in manifest.items() if k != "metadata"}
    problems: list[str] = [
        FieldLine(f"{head}: {_fmt(p)}: unknown field (the API server would prune it)", _fmt(p))
        for p in unknown_fields(body, schema)
    ]
    validator = _validator(str(d / _CRD_FILES[kind]), api_version.split("/", 1)[-1])
    stored = apply_defaults(body, schema)
    errors = sorted(
        validator.iter_errors(stored), key=lambda e: (list(map(str, e.path)), e.message)
    )
    for e in errors:
        where = _fmt(e.absolute_path)
        problems.append(FieldLine(f"{head}: {where}: {e.message}", where))
    return problems


def validate_manifests(
    manifests: Iterable[dict[str, Any]],
    directory: Path | None = None,
    version: str = DEFAULT_VERSION,
) -> list[FieldLine]:
    """:func:`validate_manifest` over several objects, problems concatenated in order."""
    out: list[FieldLine] = []
    for m in manifests:
        out += validate_manifest(m, directory, version)
    return out


# ---------------------------------------------------------------- other CRDs (Managed Prometheus)

GMP_CRDS_DIR = Path(__file__).resolve().parents[1] / "monitoring" / "crds"
GKE_CRDS_DIR = Path(__file__).resolve().parents[1] / "computeclass" / "crds"
OTHER_CRD_FILES = {
    ("monitoring.googleapis.com", "PodMonitoring"): GMP_CRDS_DIR
    / "monitoring.googleapis.com_podmonitorings.yaml",
    # written from GKE's reference page, not GKE's own file: crds/gke/README.md
    ("cloud.google.com", "ComputeClass"): GKE_CRDS_DIR / "cloud.google.com_computeclasses.yaml",
}


def validate_other(manifest: dict[str, Any]) -> list[str]:
    """Problems of one rendered non-KubeRay custom resource whose CRD the product carries
    (:data:`OTHER_CRD_FILES`: Managed Prometheus ``PodMonitoring`` from
    ``components/monitoring/crds``, GKE ``ComputeClass`` from ``components/computeclass/crds``), checked like :func:`validate_manifest`: unknown (pruned)
    fields, then the schema. One line each: ``<Kind> <name>: <path>: <why>``.

    Raises:
        ValueError: a kind whose CRD is not carried.
    """
    kind = manifest.get("kind", "?")
    name = (manifest.get("metadata") or {}).get("name", "?")
    group, _, version = str(manifest.get("apiVersion", "")).rpartition("/")
    path = OTHER_CRD_FILES.get((group, kind))
    if path is None:
        raise ValueError(f"{kind} {name}: no carried CRD for {manifest.get('apiVersion')}")
    schema = _load_schema(str(path), version)
    body = {k: v for k, v in manifest.items() if k != "metadata"}
    problems = [
        f"{kind} {name}: {_fmt(p)}: unknown field (the API server would prune it)"
        for p in unknown_fields(body, schema)
    ]
    errors = sorted(
        _validator(str(path), version).iter_errors(body),
        key=lambda e: (list(map(str, e.path)), e.message),
    )
    problems += [f"{kind} {name}: {_fmt(e.absolute_path)}: {e.message}" for e in errors]
    return problems
