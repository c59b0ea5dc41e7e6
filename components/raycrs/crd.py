"""Validate rendered KubeRay custom resources against the CRD schemas of the stack's KubeRay version
(:func:`validate_manifest`, :func:`validate_manifests`; the other carried CRDs:
:func:`validate_other`), through the checker every carried CRD goes through,
:func:`components.kernel.crdschema.validate_object`. A field the schema does not declare is an
error with its path, where the API server would silently prune it. The CRD folder:
:func:`crds_dir`. Sources: docs/sources.md#raycrs-crd
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from components.kernel.crdschema import (  # noqa: F401 - re-exported: callers and tests read them here
    SUMS_FILE,
    CarriedFileError,
    apply_defaults,
    fmt_path,
    json_schema,
    load_schema,
    unknown_fields,
    validate_object,
    validator,
    verify,
)
from components.kernel.problems import Problem, in_object
from components.kuberay.render import CRD_FILES, carried_crds_dir

_fmt, _json_schema, _load_schema, _validator, _verify = (
    fmt_path,
    json_schema,
    load_schema,
    validator,
    verify,
)

CRDS_ENV = "RAYGKE_CRDS_DIR"
DEFAULT_VERSION = "1.7.0"
_CRD_FILES = CRD_FILES


class CrdsMissingError(FileNotFoundError):
    """The KubeRay CRD folder (or a CRD file in it) is absent; the message says how to fix it."""


def crds_dir(version: str = DEFAULT_VERSION) -> Path:
    """The CRD folder: ``$RAYGKE_CRDS_DIR`` if set, else the copy carried in
    ``components/kuberay/crds/v<version>`` for the stack's ``kuberay.chart_version`` (one of
    ``components.config.kuberay.KUBERAY_CHART_VERSIONS``; carried inside the repository, so a
    clone with nothing beside it can run the check). It holds ``ray.io_rayclusters.yaml``,
    ``ray.io_rayjobs.yaml``, ``ray.io_rayservices.yaml`` as published with that KubeRay version.

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


GENERATE_NAME_SUFFIX = "xxxxx"  # the API server appends 5 random characters to generateName


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
) -> list[Problem]:
    """Problems of one rendered custom resource, one line each: ``<Kind> <name>: <path>: <why>``,
    a :class:`~components.kernel.problems.Problem` whose ``object_field`` is ``<path>`` (``kind``,
    ``apiVersion`` or the schema error's path in the object), e.g.
    ``RayCluster research: spec.workerGroupSpecs[0].numOfHost: unknown field (the API server
    would prune it)``.

    Checks apiVersion/kind, then everything the API server checks on create
    (:func:`components.kernel.crdschema.validate_object`: unknown (pruned) fields, the schema of
    the object as stored - omitted fields with their CRD defaults, non-nullable nulls pruned -,
    ``metadata``, list types and the CRD's CEL rules; a CEL rule not evaluated is a
    ``warning`` Problem of rule ``crd-cel-not-evaluated``).

    Raises:
        CrdsMissingError: the CRD folder is absent.
    """
    kind = manifest.get("kind", "?")
    name = (manifest.get("metadata") or {}).get("name", "?")
    head = f"{kind} {name}"
    api_version = manifest.get("apiVersion", "")
    if kind not in _CRD_FILES:
        valid = ", ".join(_CRD_FILES)
        return [in_object("kind", f"{head}: kind {kind!r} is not a KubeRay kind; valid: {valid}")]
    if not api_version.startswith("ray.io/"):
        return [in_object("apiVersion", f"{head}: apiVersion {api_version!r} is not ray.io/v1")]
    crd_schema(kind, api_version, directory, version)  # CrdsMissingError / unknown version
    d = directory or crds_dir(version)
    return validate_object(manifest, d / _CRD_FILES[kind], head=head)


def validate_manifests(
    manifests: Iterable[dict[str, Any]],
    directory: Path | None = None,
    version: str = DEFAULT_VERSION,
) -> list[Problem]:
    """:func:`validate_manifest` over several objects, problems concatenated in order."""
    out: list[Problem] = []
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


def validate_other(manifest: dict[str, Any]) -> list[Problem]:
    """Problems of one rendered non-KubeRay custom resource whose CRD the product carries
    (:data:`OTHER_CRD_FILES`: Managed Prometheus ``PodMonitoring`` from
    ``components/monitoring/crds``, GKE ``ComputeClass`` from ``components/computeclass/crds``),
    checked like :func:`validate_manifest` (:func:`components.kernel.crdschema.validate_object`).
    One line each: ``<Kind> <name>: <path>: <why>``.

    Raises:
        ValueError: a kind whose CRD is not carried.
    """
    kind = manifest.get("kind", "?")
    name = (manifest.get("metadata") or {}).get("name", "?")
    group, _, _version = str(manifest.get("apiVersion", "")).rpartition("/")
    path = OTHER_CRD_FILES.get((group, kind))
    if path is None:
        raise ValueError(f"{kind} {name}: no carried CRD for {manifest.get('apiVersion')}")
    return validate_object(manifest, path)
