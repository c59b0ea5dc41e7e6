"""What every KubeRay operator rule reads (:mod:`components.raycrs.operator`): the limits and keys
of KubeRay v1.7.0 ``constant.go``, Go durations, and the views of a rendered object
(:class:`Obj`) and of its RayCluster spec (:class:`ClusterSpec`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.kernel.labels import is_dns1035_label
from components.kernel.problems import Problem, in_object

# constant.go
MAX_RAYCLUSTER_NAME = 53  # MaxRayClusterNameLength
MAX_RAYJOB_NAME = MAX_RAYCLUSTER_NAME - 6  # MaxRayJobNameLength
MAX_RAYSERVICE_NAME = MAX_RAYCLUSTER_NAME - 6  # MaxRayServiceNameLength
FT_ANNOTATION = "ray.io/ft-enabled"  # RayFTEnabledAnnotationKey
EXTERNAL_STORAGE_NS_ANNOTATION = "ray.io/external-storage-namespace"
INITIALIZING_TIMEOUT_ANNOTATION = "ray.io/initializing-timeout"
ORIGINATED_FROM_CRD_LABEL = "ray.io/originated-from-crd"  # RayOriginatedFromCRDLabelKey
CLUSTER_SELECTOR_KEY = "ray.io/cluster"  # RayJobClusterSelectorKey
AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"  # RAY_ENABLE_AUTOSCALER_V2
AUTOSCALER_START_CMD_ENV = "KUBERAY_GEN_AUTOSCALER_START_CMD"
COLLECTOR_CONTAINER = "ray-history-collector"  # CollectorContainerName
COLLECTOR_MANAGED_ENV = (
    "POD_IP",
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_ROLE",
    "OWNER_KIND",
    "OWNER_NAME",
    "EVENTS_PORT",
)
TLS_MANAGED_ENV = ("RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT")
TLS_VOLUME, TLS_MOUNT_PATH = "ray-tls", "/etc/ray/tls"  # RayTLSVolumeName, RayTLSCertMountPath
GCS_STORAGE_ENV = ("RAY_gcs_storage", "RAY_gcs_storage_path")
GCS_STORAGE_VOLUME, GCS_STORAGE_MOUNT_PATH = "gcs-storage", "/data/gcs"

_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_seconds(text: str) -> float | None:
    """Seconds of a Go ``time.ParseDuration`` string (``1h30m``, ``-5s``, ``0``), else None."""
    sign, body = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    parts = list(_GO_DURATION_PART.finditer(body))
    if not body or "".join(m.group(0) for m in parts) != body:
        return None
    return sign * sum(float(m.group(1)) * _GO_UNITS[m.group(2)] for m in parts)


def version_tuple(v: str) -> tuple[int, ...] | None:
    """``version.ParseGeneric``: ``[v]X.Y[.Z...]`` with optional pre-release / build suffix."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", v.strip())
    return tuple(int(x or 0) for x in m.groups()) if m else None


def env_by_name(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e.get("name"): e for e in container.get("env") or [] if isinstance(e, dict)}


def containers_of(group: dict[str, Any]) -> list[dict[str, Any]]:
    pod = ((group or {}).get("template") or {}).get("spec") or {}
    return [c for c in pod.get("containers") or [] if isinstance(c, dict)]


def restart_policy_of(group: dict[str, Any]) -> str:
    return (((group or {}).get("template") or {}).get("spec") or {}).get("restartPolicy") or ""


# ------------------------------------------------------------------------------ the object views


@dataclass
class ClusterSpec:
    """A RayCluster spec where it appears: ``spec`` of a RayCluster, ``spec.rayClusterSpec`` of a
    RayJob, ``spec.rayClusterConfig`` of a RayService; with its object's annotations / labels."""

    path: str
    spec: dict[str, Any]
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> dict[str, Any]:
        return self.spec.get("headGroupSpec") or {}

    @property
    def workers(self) -> list[dict[str, Any]]:
        return [g for g in self.spec.get("workerGroupSpecs") or [] if isinstance(g, dict)]

    def worker_path(self, i: int) -> str:
        return f"{self.path}.workerGroupSpecs[{i}]"

    @property
    def head_env(self) -> dict[str, dict[str, Any]]:
        cs = containers_of(self.head)
        return env_by_name(cs[0]) if cs else {}

    @property
    def autoscaling(self) -> bool:
        """``IsAutoscalingEnabled``: ``enableInTreeAutoscaling`` is true."""
        return self.spec.get("enableInTreeAutoscaling") is True

    @property
    def autoscaler_v2(self) -> bool:
        """``IsAutoscalingV2Enabled``: ``autoscalerOptions.version`` is ``v2``."""
        return (self.spec.get("autoscalerOptions") or {}).get("version") == "v2"

    @property
    def v2_by_env(self) -> bool:
        """``RAY_enable_autoscaler_v2`` is ``1`` or ``true`` on the head container."""
        return (self.head_env.get(AUTOSCALER_V2_ENV) or {}).get("value") in ("1", "true")

    @property
    def ft_enabled(self) -> bool:
        """``IsGCSFaultToleranceEnabled``: ``ray.io/ft-enabled: "true"`` or FT options set."""
        ann = str(self.annotations.get(FT_ANNOTATION, "")).lower() == "true"
        return ann or self.spec.get("gcsFaultToleranceOptions") is not None

    @property
    def auth(self) -> dict[str, Any]:
        return self.spec.get("authOptions") or {}


@dataclass
class Obj:
    """One custom resource: kind, name, metadata and spec."""

    kind: str
    name: str
    metadata: dict[str, Any]
    spec: dict[str, Any]

    @classmethod
    def of(cls, manifest: dict[str, Any]) -> Obj:
        meta = manifest.get("metadata") or {}
        return cls(
            str(manifest.get("kind")), str(meta.get("name", "?")), meta, manifest.get("spec") or {}
        )

    def cluster(self) -> ClusterSpec | None:
        """The embedded RayCluster spec, if any. A RayService always has one: its
        ``rayClusterConfig`` is a value, not a pointer (``RayServiceSpec.RayClusterSpec``), so the
        operator validates a missing one as empty (validation.go ``ValidateRayServiceSpec``); a
        RayJob's ``rayClusterSpec`` is optional (a job may select a running cluster)."""
        key = {"RayCluster": None, "RayJob": "rayClusterSpec", "RayService": "rayClusterConfig"}
        if self.kind not in key:
            return None
        sub = self.spec if key[self.kind] is None else self.spec.get(key[self.kind])
        if self.kind == "RayService" and sub is None:
            sub = {}
        if not isinstance(sub, dict):
            return None
        path = "spec" if key[self.kind] is None else f"spec.{key[self.kind]}"
        return ClusterSpec(
            path,
            sub,
            dict(self.metadata.get("annotations") or {}),
            dict(self.metadata.get("labels") or {}),
        )


# ------------------------------------------------------------------------------- metadata rules


def name_rule(kind: str, limit: int, go: str) -> Callable[[Obj], list[Problem]]:
    def rule(o: Obj) -> list[Problem]:
        out = []
        if len(o.name) > limit:
            out.append(
                in_object(
                    "metadata.name",
                    f"metadata.name {o.name!r} has {len(o.name)} characters; KubeRay allows "
                    f"at most {limit} for a {kind} (validation.go {go})",
                )
            )
        if not is_dns1035_label(o.name):
            out.append(
                in_object(
                    "metadata.name",
                    f"metadata.name {o.name!r} is not a DNS-1035 label (lowercase letters, "
                    f"digits, '-', starting with a letter) (validation.go {go})",
                )
            )
        return out

    rule.__name__ = f"{kind.lower()}_name"
    rule.__doc__ = (
        f"validation.go {go}: a {kind} name has at most {limit} characters "
        "(constant.go) and is a DNS-1035 label."
    )
    return rule
