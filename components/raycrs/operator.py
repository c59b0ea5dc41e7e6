"""The rules the KubeRay operator applies to a RayCluster, RayJob or RayService when it reconciles.

The API server accepts any object its CRD schema allows (:mod:`components.raycrs.crd`); the
operator then validates it again and, on a problem, records an event and never acts on the object:
``pulumi up`` succeeds and the cluster or job never runs. This module repeats every rule of KubeRay
v1.7.0 ``ray-operator/controllers/ray/utils/validation.go`` (constants from ``constant.go``) that
can be decided from the manifest alone, one function per rule, each citing the Go function it
comes from. Every problem is one line::

    RayJob train: spec.ttlSecondsAfterFinished 3600 needs spec.shutdownAfterJobFinishes true ...

Rules that depend on something a manifest does not show are not checked: the operator's feature
gates (``RayJobDeletionPolicy``, ``RayClusterHistoryServer``, ``RayClusterNetworkPolicy``,
``RayClusterMTLS``, ``GCSFaultToleranceEmbeddedStorage``, ``RayServiceIncrementalUpgrade``;
:mod:`components.raycrs.gates` checks those with the installed operator's gates),
``status`` (``ValidateRayClusterStatus``, ``ValidateRayJobStatus``) and RayCronJob (not rendered).

Versions: the rules are read from v1.7.0. For v1.6.2 (the other carried version) the v1.6.2
``validation.go`` was not available; the rules whose fields first appear in the v1.7.0 CRDs
(``tlsOptions``, ``networkPolicy``, ``historyServerOptions``, ``workerGroupSpecs[].priority``,
``gcsFaultToleranceOptions.backend`` / ``.storage``, ``autoscalerOptions.args``) are tagged
``since="1.7.0"`` and skipped (the v1.6.2 CRD check already refuses those fields as unknown);
every other rule is applied as in v1.7.0, which is unverified for v1.6.2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.problems import Rule

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

# k8s.io/apimachinery/pkg/util/validation
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def is_dns1035_label(value: str) -> bool:
    """``IsDNS1035Label``: at most 63 chars, ``[a-z]([-a-z0-9]*[a-z0-9])?``."""
    return len(value) <= 63 and _DNS1035.fullmatch(value) is not None


def is_qualified_name(key: str) -> bool:
    """``IsQualifiedName``: optional DNS-1123 subdomain prefix (<= 253) + ``/`` + a name of at
    most 63 chars of alphanumerics, ``-``, ``_``, ``.``, alphanumeric at both ends."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and _QUALIFIED.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    """``IsValidLabelValue``: empty, or a name as in :func:`is_qualified_name` (no prefix)."""
    return value == "" or (len(value) <= 63 and _QUALIFIED.fullmatch(value) is not None)


def go_duration_seconds(text: str) -> float | None:
    """Seconds of a Go ``time.ParseDuration`` string (``1h30m``, ``-5s``, ``0``), else None."""
    sign, body = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    parts = list(_GO_DURATION_PART.finditer(body))
    if not body or "".join(m.group(0) for m in parts) != body:
        return None
    return sign * sum(float(m.group(1)) * _GO_UNITS[m.group(2)] for m in parts)


def _version_tuple(v: str) -> tuple[int, ...] | None:
    """``version.ParseGeneric``: ``[v]X.Y[.Z...]`` with optional pre-release / build suffix."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", v.strip())
    return tuple(int(x or 0) for x in m.groups()) if m else None


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e.get("name"): e for e in container.get("env") or [] if isinstance(e, dict)}


def _containers(group: dict[str, Any]) -> list[dict[str, Any]]:
    pod = ((group or {}).get("template") or {}).get("spec") or {}
    return [c for c in pod.get("containers") or [] if isinstance(c, dict)]


def _restart_policy(group: dict[str, Any]) -> str:
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
        cs = _containers(self.head)
        return _env(cs[0]) if cs else {}

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
        """The embedded RayCluster spec, if any."""
        key = {"RayCluster": None, "RayJob": "rayClusterSpec", "RayService": "rayClusterConfig"}
        if self.kind not in key:
            return None
        sub = self.spec if key[self.kind] is None else self.spec.get(key[self.kind])
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


def _name_rule(kind: str, limit: int, go: str) -> Callable[[Obj], list[str]]:
    def rule(o: Obj) -> list[str]:
        out = []
        if len(o.name) > limit:
            out.append(
                f"metadata.name {o.name!r} has {len(o.name)} characters; KubeRay allows "
                f"at most {limit} for a {kind} (validation.go {go})"
            )
        if not is_dns1035_label(o.name):
            out.append(
                f"metadata.name {o.name!r} is not a DNS-1035 label (lowercase letters, "
                f"digits, '-', starting with a letter) (validation.go {go})"
            )
        return out

    rule.__name__ = f"{kind.lower()}_name"
    rule.__doc__ = (
        f"validation.go {go}: a {kind} name has at most {limit} characters "
        "(constant.go) and is a DNS-1035 label."
    )
    return rule


raycluster_name = _name_rule("RayCluster", MAX_RAYCLUSTER_NAME, "ValidateRayClusterMetadata")
rayjob_name = _name_rule("RayJob", MAX_RAYJOB_NAME, "ValidateRayJobMetadata")
rayservice_name = _name_rule("RayService", MAX_RAYSERVICE_NAME, "ValidateRayServiceMetadata")


def rayservice_initializing_timeout(o: Obj) -> list[str]:
    """validation.go validateInitializingTimeout: annotation ``ray.io/initializing-timeout`` is a
    positive Go duration (``30m``) or a positive integer of seconds."""
    v = (o.metadata.get("annotations") or {}).get(INITIALIZING_TIMEOUT_ANNOTATION)
    if not v:
        return []
    v = str(v)
    where = f"metadata.annotations[{INITIALIZING_TIMEOUT_ANNOTATION}] {v!r}"
    seconds = go_duration_seconds(v)
    if seconds is not None:
        if seconds <= 0:
            return [
                f"{where} must be a positive duration (validation.go validateInitializingTimeout)"
            ]
        return []
    if re.fullmatch(r"[-+]?\d+", v):
        if int(v) <= 0:
            return [
                f"{where} must be a positive integer of seconds "
                "(validation.go validateInitializingTimeout)"
            ]
        return []
    return [
        f"{where} is neither a Go duration (5m, 1h) nor an integer of seconds "
        "(validation.go validateInitializingTimeout)"
    ]


# --------------------------------------------------------------------------- RayCluster spec rules


def cluster_upgrade_strategy(o: Obj) -> list[str]:
    """validation.go ValidateRayClusterUpgradeOptions: ``spec.upgradeStrategy.type`` is
    ``Recreate`` or ``None``, and is not set on a RayCluster created by a RayJob or RayService
    (label ``ray.io/originated-from-crd``)."""
    t = (o.spec.get("upgradeStrategy") or {}).get("type")
    if t is None:
        return []
    out = []
    if t not in ("Recreate", "None"):
        out.append(
            f"spec.upgradeStrategy.type {t!r} is invalid; valid: Recreate, None "
            "(validation.go ValidateRayClusterUpgradeOptions)"
        )
    creator = (o.metadata.get("labels") or {}).get(ORIGINATED_FROM_CRD_LABEL)
    if creator in ("RayJob", "RayService"):
        out.append(
            f"spec.upgradeStrategy cannot be set on a RayCluster created by {creator} "
            "(validation.go ValidateRayClusterUpgradeOptions)"
        )
    return out


def head_has_container(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: the head pod template has at least one container."""
    if not _containers(c.head):
        return [
            f"{c.path}.headGroupSpec.template.spec.containers is empty; the head needs one "
            "(validation.go ValidateRayClusterSpec)"
        ]
    return []


def workers_have_container(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: every worker pod template has a container."""
    return [
        f"{c.worker_path(i)}.template.spec.containers is empty; a worker group needs one "
        "(validation.go ValidateRayClusterSpec)"
        for i, g in enumerate(c.workers)
        if not _containers(g)
    ]


def group_resources_once(c: ClusterSpec) -> list[str]:
    """validation.go validateRayGroupResources: a group sets resources either in
    ``rayStartParams`` (num-cpus, num-gpus, memory, resources) or in ``resources``, not both."""
    out = []
    for path, g in [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), w) for i, w in enumerate(c.workers)
    ]:
        params = g.get("rayStartParams") or {}
        if any(params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")) and g.get(
            "resources"
        ):
            out.append(
                f"{path}: resources are set in both rayStartParams and resources; use one "
                "(validation.go validateRayGroupResources)"
            )
    return out


def group_labels(c: ClusterSpec) -> list[str]:
    """validation.go validateRayGroupLabels: no ``rayStartParams['labels']`` (use ``labels``);
    ``labels`` keys are qualified names and values valid label values."""
    out = []
    for path, g in [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), w) for i, w in enumerate(c.workers)
    ]:
        if "labels" in (g.get("rayStartParams") or {}):
            out.append(
                f"{path}.rayStartParams.labels is not supported; use {path}.labels "
                "(validation.go validateRayGroupLabels)"
            )
        for k, v in (g.get("labels") or {}).items():
            if not is_qualified_name(str(k)):
                out.append(
                    f"{path}.labels key {k!r} is not a valid label key "
                    "(validation.go validateRayGroupLabels)"
                )
            if not is_label_value(str(v)):
                out.append(
                    f"{path}.labels[{k}] value {v!r} is not a valid label value "
                    "(validation.go validateRayGroupLabels)"
                )
    return out


def worker_replicas(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: without autoscaling both ``minReplicas`` and
    ``maxReplicas`` are set; neither is negative; ``minReplicas <= maxReplicas``."""
    out = []
    src = "(validation.go ValidateRayClusterSpec)"
    for i, g in enumerate(c.workers):
        p, lo, hi = c.worker_path(i), g.get("minReplicas"), g.get("maxReplicas")
        if not c.autoscaling and (lo is None or hi is None):
            out.append(
                f"{p}: minReplicas and maxReplicas must both be set when "
                f"enableInTreeAutoscaling is not true {src}"
            )
        for key, v in (("minReplicas", lo), ("maxReplicas", hi)):
            if isinstance(v, int) and v < 0:
                out.append(f"{p}.{key} {v} is negative {src}")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            out.append(f"{p}: minReplicas {lo} > maxReplicas {hi} {src}")
    return out


def worker_idle_timeout(c: ClusterSpec) -> list[str]:
    """validation.go validateWorkerGroupIdleTimeout: a group's ``idleTimeoutSeconds`` is >= 0 and
    needs autoscaler v2 (``autoscalerOptions.version: v2`` or the head env
    ``RAY_enable_autoscaler_v2``)."""
    out = []
    for i, g in enumerate(c.workers):
        t = g.get("idleTimeoutSeconds")
        if t is None:
            continue
        p = f"{c.worker_path(i)}.idleTimeoutSeconds"
        if isinstance(t, int) and t < 0:
            out.append(f"{p} {t} is negative (validation.go validateWorkerGroupIdleTimeout)")
        elif not (c.autoscaler_v2 or c.v2_by_env):
            out.append(
                f"{p} needs autoscaler v2: set {c.path}.autoscalerOptions.version: v2 "
                "(validation.go validateWorkerGroupIdleTimeout)"
            )
    return out


def worker_priority(c: ClusterSpec) -> list[str]:
    """validation.go validateWorkerGroupPriority: a non-zero ``priority`` needs ``rayVersion`` >=
    2.56.0 and autoscaler v2."""
    out = []
    src = "(validation.go validateWorkerGroupPriority)"
    for i, g in enumerate(c.workers):
        if not g.get("priority"):
            continue
        p = f"{c.worker_path(i)}.priority"
        v = _version_tuple(str(c.spec.get("rayVersion") or ""))
        if v is None:
            out.append(
                f"{p} needs {c.path}.rayVersion 2.56.0 or later (unset or unparseable) {src}"
            )
        elif v < (2, 56, 0):
            out.append(
                f"{p} needs {c.path}.rayVersion 2.56.0 or later, got "
                f"{c.spec.get('rayVersion')} {src}"
            )
        elif not (c.autoscaler_v2 or c.v2_by_env):
            out.append(f"{p} needs autoscaler v2 (autoscalerOptions.version: v2) {src}")
    return out


def ft_annotation_and_options(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: annotation ``ray.io/ft-enabled`` and
    ``gcsFaultToleranceOptions`` are not both set."""
    if c.annotations.get(FT_ANNOTATION) and c.spec.get("gcsFaultToleranceOptions") is not None:
        return [
            f"metadata.annotations[{FT_ANNOTATION}] and {c.path}.gcsFaultToleranceOptions "
            "are both set; use gcsFaultToleranceOptions (validation.go ValidateRayClusterSpec)"
        ]
    return []


def redis_address_needs_ft(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: head env ``RAY_REDIS_ADDRESS`` without GCS fault
    tolerance enabled is refused; with ``gcsFaultToleranceOptions`` the head sets neither
    ``RAY_REDIS_ADDRESS`` nor ``REDIS_PASSWORD`` env, nor ``rayStartParams.redis-password``, nor
    the ``ray.io/external-storage-namespace`` annotation (use the options' fields)."""
    env, out = c.head_env, []
    src = "(validation.go ValidateRayClusterSpec)"
    head = f"{c.path}.headGroupSpec"
    if not c.ft_enabled and "RAY_REDIS_ADDRESS" in env:
        out.append(
            f"{head}: env RAY_REDIS_ADDRESS enables GCS fault tolerance implicitly; set "
            f"{c.path}.gcsFaultToleranceOptions instead {src}"
        )
    if c.spec.get("gcsFaultToleranceOptions") is not None:
        if (c.head.get("rayStartParams") or {}).get("redis-password"):
            out.append(
                f"{head}.rayStartParams.redis-password is refused with "
                f"gcsFaultToleranceOptions; use its redisPassword {src}"
            )
        for name, use in (
            ("REDIS_PASSWORD", "redisPassword"),
            ("RAY_REDIS_ADDRESS", "redisAddress"),
        ):
            if name in env:
                out.append(
                    f"{head}: env {name} is refused with gcsFaultToleranceOptions; use "
                    f"its {use} {src}"
                )
        if c.annotations.get(EXTERNAL_STORAGE_NS_ANNOTATION):
            out.append(
                f"metadata.annotations[{EXTERNAL_STORAGE_NS_ANNOTATION}] is refused with "
                f"gcsFaultToleranceOptions; use its externalStorageNamespace {src}"
            )
    return out


def ft_backend(c: ClusterSpec) -> list[str]:
    """validation.go validateGcsFaultToleranceBackend: backend ``rocksdb`` takes none of the
    redis fields, ``storage.claimName`` excludes size/storageClassName/accessModes, and the head
    sets neither ``RAY_gcs_storage*`` env nor the ``gcs-storage`` volume / ``/data/gcs`` mount;
    backend ``redis`` (default) takes no ``storage``."""
    ft = c.spec.get("gcsFaultToleranceOptions")
    if not isinstance(ft, dict):
        return []
    p, src = (
        f"{c.path}.gcsFaultToleranceOptions",
        "(validation.go validateGcsFaultToleranceBackend)",
    )
    if (ft.get("backend") or "redis") != "rocksdb":
        return [f"{p}.storage applies only to backend rocksdb {src}"] if "storage" in ft else []
    out = [
        f"{p}.{k} is refused with backend rocksdb {src}"
        for k in ("redisAddress", "redisUsername", "redisPassword", "externalStorageNamespace")
        if ft.get(k) not in (None, "")
    ]
    storage = ft.get("storage") or {}
    if storage.get("claimName") and any(
        storage.get(k) not in (None, [], "") for k in ("size", "storageClassName", "accessModes")
    ):
        out.append(f"{p}.storage.claimName excludes size, storageClassName and accessModes {src}")
    cs = _containers(c.head)
    head = cs[0] if cs else {}
    if any(n in _env(head) for n in GCS_STORAGE_ENV):
        out.append(
            f"{c.path}.headGroupSpec: env {' / '.join(GCS_STORAGE_ENV)} is managed by "
            f"KubeRay with backend rocksdb {src}"
        )
    mounts = [m for m in head.get("volumeMounts") or [] if isinstance(m, dict)]
    vols = ((c.head.get("template") or {}).get("spec") or {}).get("volumes") or []
    if any(
        m.get("name") == GCS_STORAGE_VOLUME or m.get("mountPath") == GCS_STORAGE_MOUNT_PATH
        for m in mounts
    ) or any(isinstance(v, dict) and v.get("name") == GCS_STORAGE_VOLUME for v in vols):
        out.append(
            f"{c.path}.headGroupSpec: volume {GCS_STORAGE_VOLUME!r} / mount "
            f"{GCS_STORAGE_MOUNT_PATH} is managed by KubeRay with backend rocksdb {src}"
        )
    return out


def redis_username(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: no ``rayStartParams.redis-username`` nor head env
    ``REDIS_USERNAME`` (use ``gcsFaultToleranceOptions.redisUsername``)."""
    if (c.head.get("rayStartParams") or {}).get("redis-username") or "REDIS_USERNAME" in c.head_env:
        return [
            f"{c.path}.headGroupSpec: redis username in rayStartParams or env is refused; use "
            "gcsFaultToleranceOptions.redisUsername (validation.go ValidateRayClusterSpec)"
        ]
    return []


def autoscaler_v2_env(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: without autoscaling the head env
    ``RAY_enable_autoscaler_v2`` is not ``1``/``true``; with autoscaling it is not set together
    with ``autoscalerOptions.version``."""
    env = c.head_env.get(AUTOSCALER_V2_ENV)
    src = "(validation.go ValidateRayClusterSpec)"
    if env is None:
        return []
    if not c.autoscaling and env.get("value") in ("1", "true"):
        return [
            f"{c.path}.headGroupSpec: env {AUTOSCALER_V2_ENV}={env.get('value')} needs "
            f"{c.path}.enableInTreeAutoscaling: true {src}"
        ]
    if c.autoscaling and (c.spec.get("autoscalerOptions") or {}).get("version") is not None:
        return [
            f"{c.path}.autoscalerOptions.version and head env {AUTOSCALER_V2_ENV} are both "
            f"set; use the former {src}"
        ]
    return []


def suspended_worker_with_autoscaling(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: a worker group with ``suspend: true`` is refused
    with autoscaling enabled (and needs the RayJobDeletionPolicy feature gate, not checked)."""
    if not c.autoscaling:
        return []
    return [
        f"{c.worker_path(i)}.suspend: true is refused with enableInTreeAutoscaling "
        "(validation.go ValidateRayClusterSpec)"
        for i, g in enumerate(c.workers)
        if g.get("suspend") is True
    ]


def autoscaler_v2_restart_policy(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: with autoscaling and autoscaler v2 the head and
    worker pods' ``restartPolicy`` is ``Never`` or unset."""
    if not (c.autoscaling and c.autoscaler_v2):
        return []
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    return [
        f"{p}.template.spec.restartPolicy {_restart_policy(g)!r} must be Never or unset with "
        "autoscaler v2 (validation.go ValidateRayClusterSpec)"
        for p, g in groups
        if _restart_policy(g) not in ("", "Never")
    ]


def autoscaler_options(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: ``autoscalerOptions.idleTimeoutSeconds`` >= 0."""
    opts = c.spec.get("autoscalerOptions") or {}
    t = opts.get("idleTimeoutSeconds")
    out = []
    if isinstance(t, int) and t < 0:
        out.append(
            f"{c.path}.autoscalerOptions.idleTimeoutSeconds {t} is negative "
            "(validation.go ValidateRayClusterSpec)"
        )
    return out


def autoscaler_start_cmd_env(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: ``autoscalerOptions.env`` has no
    ``KUBERAY_GEN_AUTOSCALER_START_CMD`` (KubeRay injects it)."""
    env = _env(c.spec.get("autoscalerOptions") or {})
    if AUTOSCALER_START_CMD_ENV in env:
        return [
            f"{c.path}.autoscalerOptions.env {AUTOSCALER_START_CMD_ENV} is managed by KubeRay "
            "(validation.go ValidateRayClusterSpec)"
        ]
    return []


def history_server(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec / validateCollectorOptions: with
    ``historyServerOptions`` the ``collectorOptions`` are set with an ``image``, their env has none
    of the KubeRay-managed names and has ``STORAGE_BACKEND``, and no pod has a container named
    ``ray-history-collector``. (The backend-specific env and the RayClusterHistoryServer feature
    gate are not checked.)"""
    h = c.spec.get("historyServerOptions")
    if h is None:
        return []
    p, src = f"{c.path}.historyServerOptions", "(validation.go validateCollectorOptions)"
    co = (h or {}).get("collectorOptions")
    if not isinstance(co, dict):
        return [f"{p}.collectorOptions must be set (validation.go ValidateRayClusterSpec)"]
    out = []
    if not co.get("image"):
        out.append(f"{p}.collectorOptions.image must be set {src}")
    env = _env(co)
    out += [
        f"{p}.collectorOptions.env {n} is managed by KubeRay {src}"
        for n in COLLECTOR_MANAGED_ENV
        if n in env
    ]
    if not (env.get("STORAGE_BACKEND") or {}).get("value"):
        out.append(f"{p}.collectorOptions.env needs STORAGE_BACKEND with a literal value {src}")
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    out += [
        f"{gp}: a container named {COLLECTOR_CONTAINER!r} is refused with "
        "historyServerOptions (validation.go ValidateRayClusterSpec)"
        for gp, g in groups
        if any(x.get("name") == COLLECTOR_CONTAINER for x in _containers(g))
    ]
    return out


def auth_options(c: ClusterSpec) -> list[str]:
    """validation.go ValidateRayClusterSpec: ``authOptions.mode: token`` needs a parseable
    ``rayVersion`` >= 2.52.0; ``enableK8sTokenAuth`` needs mode token, ``rayVersion`` >= 2.55.0 and
    no ``secretName``."""
    a, src = c.auth, "(validation.go ValidateRayClusterSpec)"
    k8s = a.get("enableK8sTokenAuth") is True
    p = f"{c.path}.authOptions"
    if a.get("mode") != "token":
        return [f"{p}.enableK8sTokenAuth needs {p}.mode: token {src}"] if k8s else []
    raw = str(c.spec.get("rayVersion") or "")
    v = _version_tuple(raw)
    if v is None:
        return [f"{p}.mode token needs {c.path}.rayVersion 2.52.0 or later (got {raw!r}) {src}"]
    out = []
    if v < (2, 52, 0):
        out.append(f"{p}.mode token needs {c.path}.rayVersion 2.52.0 or later, got {raw} {src}")
    if k8s and v < (2, 55, 0):
        out.append(
            f"{p}.enableK8sTokenAuth needs {c.path}.rayVersion 2.55.0 or later, got {raw} {src}"
        )
    if k8s and a.get("secretName"):
        out.append(f"{p}.enableK8sTokenAuth and {p}.secretName are both set {src}")
    return out


def network_policy(c: ClusterSpec) -> list[str]:
    """validation.go validateNetworkPolicy: ingress rules only when ingress is denied, egress rules
    only when egress is denied (mode default ``DenyAll``); worker group names are DNS-1123 labels;
    every ``workerGroups[]`` entry names a worker group. (The RayClusterNetworkPolicy feature gate
    is not checked.)"""
    np = c.spec.get("networkPolicy")
    if not isinstance(np, dict):
        return []
    mode, p = np.get("mode") or "DenyAll", f"{c.path}.networkPolicy"
    src = "(validation.go validateNetworkPolicy)"
    out = []
    scopes = [(f"{p}.head", np.get("head")), (f"{p}.worker", np.get("worker"))] + [
        (f"{p}.workerGroups[{i}]", wg) for i, wg in enumerate(np.get("workerGroups") or [])
    ]
    for sp, scope in scopes:
        scope = scope or {}
        if mode == "DenyAllEgress" and scope.get("ingressRules"):
            out.append(f"{sp}.ingressRules cannot be set with mode {mode} {src}")
        if mode == "DenyAllIngress" and scope.get("egressRules"):
            out.append(f"{sp}.egressRules cannot be set with mode {mode} {src}")
    names = set()
    for i, g in enumerate(c.workers):
        name = str(g.get("groupName", ""))
        names.add(name)
        if len(name) > 63 or not _DNS1123.fullmatch(name):
            out.append(
                f"{c.worker_path(i)}.groupName {name!r} must be a DNS-1123 label with "
                f"networkPolicy {src}"
            )
    for i, wg in enumerate(np.get("workerGroups") or []):
        if (wg or {}).get("groupName") not in names:
            out.append(
                f"{p}.workerGroups[{i}].groupName {(wg or {}).get('groupName')!r} matches "
                f"no worker group {src}"
            )
    return out


def tls_options(c: ClusterSpec) -> list[str]:
    """validation.go validateTLSOptions / validateNoConflictingTLSVolumeMount: with
    ``tlsOptions.enabled`` no Ray container and no ``autoscalerOptions`` sets the operator-managed
    TLS env (``RAY_USE_TLS``, ``RAY_TLS_*``) or a volume mount named ``ray-tls`` / at
    ``/etc/ray/tls``. (The RayClusterMTLS feature gate is not checked.)"""
    if (c.spec.get("tlsOptions") or {}).get("enabled") is not True:
        return []
    src = "(validation.go validateTLSOptions)"
    places = []
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    for gp, g in groups:
        cs = _containers(g)
        if cs:
            places.append((gp, cs[0]))
    if isinstance(c.spec.get("autoscalerOptions"), dict):
        places.append((f"{c.path}.autoscalerOptions", c.spec["autoscalerOptions"]))
    out = []
    for where, holder in places:
        env = _env(holder)
        out += [
            f"{where}: env {n} is managed by KubeRay with tlsOptions {src}"
            for n in TLS_MANAGED_ENV
            if n in env
        ]
        for m in holder.get("volumeMounts") or []:
            if isinstance(m, dict) and (
                m.get("name") == TLS_VOLUME or m.get("mountPath") == TLS_MOUNT_PATH
            ):
                out.append(
                    f"{where}: volume mount {m.get('name')!r} at {m.get('mountPath')} "
                    f"conflicts with the KubeRay-managed TLS mount {src}"
                )
    return out


# ------------------------------------------------------------------------------------ RayJob rules


def _selector_mode(o: Obj) -> bool:
    return bool(o.spec.get("clusterSelector"))


def rayjob_suspend_needs_shutdown(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec: ``suspend: true`` needs ``shutdownAfterJobFinishes:
    true``."""
    if o.spec.get("suspend") is True and o.spec.get("shutdownAfterJobFinishes") is not True:
        return [
            "spec.suspend true needs spec.shutdownAfterJobFinishes true "
            "(validation.go ValidateRayJobSpec)"
        ]
    return []


def rayjob_ttl(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec and validateDeletionConfiguration:
    ``ttlSecondsAfterFinished`` >= 0, and above 0 only with ``shutdownAfterJobFinishes: true``."""
    ttl = o.spec.get("ttlSecondsAfterFinished")
    if not isinstance(ttl, int):
        return []
    if ttl < 0:
        return [
            f"spec.ttlSecondsAfterFinished {ttl} is negative (validation.go ValidateRayJobSpec)"
        ]
    if ttl > 0 and o.spec.get("shutdownAfterJobFinishes") is not True:
        return [
            f"spec.ttlSecondsAfterFinished {ttl} needs spec.shutdownAfterJobFinishes true "
            "(KubeRay refuses a TTL when the job does not shut its cluster down; "
            "validation.go validateDeletionConfiguration)"
        ]
    return []


def rayjob_deletion_strategy(o: Obj) -> list[str]:
    """validation.go validateDeletionConfiguration and validateLegacyDeletionPolicies: with
    ``deletionStrategy``, ``deletionRules`` exclude ``shutdownAfterJobFinishes: true`` and the
    legacy ``onSuccess``/``onFailure``; one of the two forms is set; the legacy form sets both
    with a ``policy``, no DeleteCluster/DeleteWorkers with ``clusterSelector``, no DeleteWorkers
    with autoscaling, no DeleteNone with shutdown. (The RayJobDeletionPolicy feature gate is not
    checked.)"""
    ds = o.spec.get("deletionStrategy")
    if not isinstance(ds, dict):
        return []
    p, out = "spec.deletionStrategy", []
    src = "(validation.go validateDeletionConfiguration)"
    legacy = ds.get("onSuccess") is not None or ds.get("onFailure") is not None
    rules = bool(ds.get("deletionRules"))
    shutdown = o.spec.get("shutdownAfterJobFinishes") is True
    if rules and shutdown:
        return [f"{p}.deletionRules and spec.shutdownAfterJobFinishes true are exclusive {src}"]
    if rules and legacy:
        return [f"{p}: use either onSuccess/onFailure or deletionRules, not both {src}"]
    if not rules and not legacy:
        return [f"{p} needs both onSuccess and onFailure, or deletionRules {src}"]
    if rules:
        return []
    lsrc = "(validation.go validateLegacyDeletionPolicies)"
    if ds.get("onSuccess") is None or ds.get("onFailure") is None:
        return [f"{p}: onSuccess and onFailure must both be set {lsrc}"]
    policies = {}
    for key in ("onSuccess", "onFailure"):
        pol = (ds.get(key) or {}).get("policy")
        if pol is None:
            out.append(f"{p}.{key}.policy must be set {lsrc}")
        policies[key] = pol
    if out:
        return out
    c = o.cluster()
    for key, pol in policies.items():
        if _selector_mode(o) and pol in ("DeleteCluster", "DeleteWorkers"):
            out.append(f"{p}.{key}.policy {pol} is refused with spec.clusterSelector {lsrc}")
    if "DeleteWorkers" in policies.values() and c is not None and c.autoscaling:
        out.append(f"{p}: DeleteWorkers is refused with autoscaling enabled {lsrc}")
    if shutdown and "DeleteNone" in policies.values():
        out.append(f"{p}: DeleteNone is refused with spec.shutdownAfterJobFinishes true {lsrc}")
    return out


_DELETION_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")


def rayjob_deletion_rules(o: Obj) -> list[str]:
    """validation.go validateDeletionRules / validateDeletionCondition / validateTTLConsistency:
    each rule's condition sets exactly one of ``jobStatus`` / ``jobDeploymentStatus`` and a
    ``ttlSeconds`` >= 0; no DeleteCluster/DeleteWorkers with ``clusterSelector``; no DeleteWorkers
    with autoscaling; no two rules with the same (status, policy); per status the TTLs satisfy
    DeleteWorkers <= DeleteCluster <= DeleteSelf."""
    rules = (o.spec.get("deletionStrategy") or {}).get("deletionRules") or []
    c = o.cluster()
    src = "(validation.go validateDeletionRules)"
    out: list[str] = []
    seen: dict[tuple[str, str], dict[str, int]] = {}
    for i, r in enumerate(rules):
        p = f"spec.deletionStrategy.deletionRules[{i}]"
        cond = (r or {}).get("condition") or {}
        js, jds = cond.get("jobStatus"), cond.get("jobDeploymentStatus")
        if (js is None) == (jds is None):
            out.append(
                f"{p}.condition sets {'both' if js is not None else 'neither'} of "
                "jobStatus and jobDeploymentStatus; set exactly one "
                "(validation.go validateDeletionCondition)"
            )
            continue
        ttl = cond.get("ttlSeconds", 0)
        if isinstance(ttl, int) and ttl < 0:
            out.append(
                f"{p}.condition.ttlSeconds {ttl} is negative "
                "(validation.go validateDeletionCondition)"
            )
            continue
        policy = (r or {}).get("policy")
        if _selector_mode(o) and policy in ("DeleteCluster", "DeleteWorkers"):
            out.append(f"{p}.policy {policy} is refused with spec.clusterSelector {src}")
            continue
        if c is not None and c.autoscaling and policy == "DeleteWorkers":
            out.append(f"{p}.policy DeleteWorkers is refused with autoscaling enabled {src}")
            continue
        key = ("jobStatus", js) if js is not None else ("jobDeploymentStatus", jds)
        group = seen.setdefault(key, {})
        if policy in group:
            out.append(f"{p}: a second rule for policy {policy} and {key[0]} {key[1]} {src}")
            continue
        group[policy] = ttl if isinstance(ttl, int) else 0
    for (what, status), ttls in seen.items():
        prev = None
        for policy in _DELETION_ORDER:
            if policy not in ttls:
                continue
            if prev is not None and ttls[policy] < ttls[prev]:
                out.append(
                    f"spec.deletionStrategy.deletionRules for {what} {status}: {policy} TTL "
                    f"{ttls[policy]} < {prev} TTL {ttls[prev]} (validation.go "
                    "validateTTLConsistency)"
                )
            prev = policy
    return out


def rayjob_cluster_source(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec: one of ``rayClusterSpec`` / ``clusterSelector`` is set;
    with ``clusterSelector``: its ``ray.io/cluster`` is not empty, no ``suspend``, no
    SidecarMode, no ``backoffLimit`` above 0."""
    src = "(validation.go ValidateRayJobSpec)"
    if not _selector_mode(o):
        if o.spec.get("rayClusterSpec") is None:
            return [f"spec: one of rayClusterSpec or clusterSelector must be set {src}"]
        return []
    out = []
    if o.spec.get("suspend") is True:
        out.append(f"spec.suspend true is refused with spec.clusterSelector {src}")
    if not (o.spec.get("clusterSelector") or {}).get(CLUSTER_SELECTOR_KEY):
        out.append(f"spec.clusterSelector[{CLUSTER_SELECTOR_KEY}] must name a RayCluster {src}")
    if o.spec.get("submissionMode") == "SidecarMode":
        out.append(f"spec.submissionMode SidecarMode is refused with spec.clusterSelector {src}")
    b = o.spec.get("backoffLimit")
    if isinstance(b, int) and b > 0:
        out.append(
            f"spec.backoffLimit {b} is refused with spec.clusterSelector (retries need the "
            f"job's own cluster) {src}"
        )
    return out


def rayjob_submission_mode(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec: InteractiveMode takes no ``backoffLimit`` above 0
    (kuberay#3525); SidecarMode takes no ``submitterPodTemplate`` / ``submitterConfig`` and a head
    ``restartPolicy`` of ``Never`` or unset."""
    mode, src = o.spec.get("submissionMode"), "(validation.go ValidateRayJobSpec)"
    b = o.spec.get("backoffLimit")
    out = []
    if mode == "InteractiveMode" and isinstance(b, int) and b > 0:
        out.append(f"spec.backoffLimit {b} is refused with InteractiveMode {src}")
    if mode == "SidecarMode":
        for k in ("submitterPodTemplate", "submitterConfig"):
            if o.spec.get(k) is not None:
                out.append(f"spec.{k} is refused with SidecarMode {src}")
        head = (o.spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}
        if _restart_policy(head) not in ("", "Never"):
            out.append(
                "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy must be "
                f"Never or unset with SidecarMode {src}"
            )
    return out


def k8s_token_auth_unsupported(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec / ValidateRayServiceSpec: ``authOptions.enableK8sTokenAuth``
    is not supported for a RayJob's or RayService's cluster."""
    c = o.cluster()
    if o.kind != "RayCluster" and c is not None and c.auth.get("enableK8sTokenAuth") is True:
        return [
            f"{c.path}.authOptions.enableK8sTokenAuth is not supported for a {o.kind} "
            f"(validation.go Validate{o.kind}Spec)"
        ]
    return []


def rayjob_runtime_env_yaml(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec (dashboardclient.UnmarshalRuntimeEnvYAML):
    ``runtimeEnvYAML`` parses as YAML into a mapping (or is empty)."""
    text = o.spec.get("runtimeEnvYAML")
    if not text:
        return []
    try:
        doc = yaml.safe_load(str(text))
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0]
        return [
            f"spec.runtimeEnvYAML is not valid YAML ({first}) (validation.go ValidateRayJobSpec)"
        ]
    if doc is not None and not isinstance(doc, dict):
        return [
            f"spec.runtimeEnvYAML is a {type(doc).__name__}, not a mapping "
            "(validation.go ValidateRayJobSpec)"
        ]
    return []


def rayjob_deadlines_and_backoff(o: Obj) -> list[str]:
    """validation.go ValidateRayJobSpec: ``activeDeadlineSeconds`` and
    ``preRunningDeadlineSeconds`` are above 0; ``backoffLimit`` is not negative."""
    out = []
    for k in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        v = o.spec.get(k)
        if isinstance(v, int) and v <= 0:
            out.append(
                f"spec.{k} {v} must be a positive integer (validation.go ValidateRayJobSpec)"
            )
    b = o.spec.get("backoffLimit")
    if isinstance(b, int) and b < 0:
        out.append(f"spec.backoffLimit {b} is negative (validation.go ValidateRayJobSpec)")
    return out


# -------------------------------------------------------------------------------- RayService rules


def rayservice_head_service_name(o: Obj) -> list[str]:
    """validation.go ValidateRayServiceSpec: ``rayClusterConfig.headGroupSpec.headService``
    sets no ``metadata.name``."""
    head = (o.spec.get("rayClusterConfig") or {}).get("headGroupSpec") or {}
    if ((head.get("headService") or {}).get("metadata") or {}).get("name"):
        return [
            "spec.rayClusterConfig.headGroupSpec.headService.metadata.name must not be set "
            "(validation.go ValidateRayServiceSpec)"
        ]
    return []


def rayservice_upgrade_strategy(o: Obj) -> list[str]:
    """validation.go ValidateRayServiceSpec / ValidateClusterUpgradeOptions: ``upgradeStrategy.type``
    is ``NewClusterWithIncrementalUpgrade``, ``NewCluster`` or ``None``; the incremental upgrade
    needs autoscaling and ``clusterUpgradeOptions`` with ``maxSurgePercent`` (default 100) and
    ``stepSizePercent`` in 0..100, step <= max surge, ``intervalSeconds`` > 0 and a
    ``gatewayClassName``. (Checked regardless of the RayServiceIncrementalUpgrade feature gate.)"""
    us = o.spec.get("upgradeStrategy") or {}
    t = us.get("type")
    valid = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")
    if t is None:
        return []
    if t not in valid:
        return [
            f"spec.upgradeStrategy.type {t!r} is invalid; valid: {', '.join(valid)} "
            "(validation.go ValidateRayServiceSpec)"
        ]
    if t != "NewClusterWithIncrementalUpgrade":
        return []
    src = "(validation.go ValidateClusterUpgradeOptions)"
    c = o.cluster()
    out = []
    if c is None or not c.autoscaling:
        out.append(
            f"spec.upgradeStrategy.type {t} needs "
            f"spec.rayClusterConfig.enableInTreeAutoscaling: true {src}"
        )
    opts = us.get("clusterUpgradeOptions")
    p = "spec.upgradeStrategy.clusterUpgradeOptions"
    if not isinstance(opts, dict):
        return [*out, f"{p} must be set for {t} {src}"]
    surge, step, interval = (
        opts.get("maxSurgePercent", 100),
        opts.get("stepSizePercent"),
        opts.get("intervalSeconds"),
    )
    if not isinstance(surge, int) or not 0 <= surge <= 100:
        out.append(f"{p}.maxSurgePercent {surge} must be between 0 and 100 {src}")
    if not isinstance(step, int) or not 0 <= step <= 100:
        out.append(f"{p}.stepSizePercent {step} must be between 0 and 100 {src}")
    elif isinstance(surge, int) and step > surge:
        out.append(f"{p}.stepSizePercent {step} > maxSurgePercent {surge} {src}")
    if not isinstance(interval, int) or interval <= 0:
        out.append(f"{p}.intervalSeconds {interval} must be greater than 0 {src}")
    if not opts.get("gatewayClassName"):
        out.append(f"{p}.gatewayClassName must be set {src}")
    return out


def rayservice_deletion_delay(o: Obj) -> list[str]:
    """validation.go ValidateRayServiceSpec: ``rayClusterDeletionDelaySeconds`` >= 0."""
    v = o.spec.get("rayClusterDeletionDelaySeconds")
    if isinstance(v, int) and v < 0:
        return [
            f"spec.rayClusterDeletionDelaySeconds {v} is negative "
            "(validation.go ValidateRayServiceSpec)"
        ]
    return []


# --------------------------------------------------------------------------------------- tables


# Each operator rule is a components.problems.Rule(check, kinds, since): it applies to ``kinds``;
# ``since`` is the first carried KubeRay version with it.
ALL_KINDS = ("RayCluster", "RayJob", "RayService")
# Object rules: check(Obj). Cluster-spec rules (CLUSTER_RULES): check(ClusterSpec), run on the
# RayCluster spec of every kind (ValidateRayClusterSpec is called by the RayJob and RayService
# validation too).
OBJECT_RULES: tuple[Rule, ...] = (
    Rule(raycluster_name, ("RayCluster",)),
    Rule(cluster_upgrade_strategy, ("RayCluster",)),
    Rule(rayjob_name, ("RayJob",)),
    Rule(rayjob_suspend_needs_shutdown, ("RayJob",)),
    Rule(rayjob_ttl, ("RayJob",)),
    Rule(rayjob_deletion_strategy, ("RayJob",)),
    Rule(rayjob_deletion_rules, ("RayJob",)),
    Rule(rayjob_cluster_source, ("RayJob",)),
    Rule(rayjob_submission_mode, ("RayJob",)),
    Rule(rayjob_runtime_env_yaml, ("RayJob",)),
    Rule(rayjob_deadlines_and_backoff, ("RayJob",)),
    Rule(k8s_token_auth_unsupported, ("RayJob", "RayService")),
    Rule(rayservice_name, ("RayService",)),
    Rule(rayservice_initializing_timeout, ("RayService",)),
    Rule(rayservice_head_service_name, ("RayService",)),
    Rule(rayservice_upgrade_strategy, ("RayService",)),
    Rule(rayservice_deletion_delay, ("RayService",)),
)
CLUSTER_RULES: tuple[Rule, ...] = (
    Rule(head_has_container, ALL_KINDS),
    Rule(workers_have_container, ALL_KINDS),
    Rule(group_resources_once, ALL_KINDS),
    Rule(group_labels, ALL_KINDS),
    Rule(worker_replicas, ALL_KINDS),
    Rule(worker_idle_timeout, ALL_KINDS),
    Rule(worker_priority, ALL_KINDS, since="1.7.0"),
    Rule(ft_annotation_and_options, ALL_KINDS),
    Rule(redis_address_needs_ft, ALL_KINDS),
    Rule(ft_backend, ALL_KINDS, since="1.7.0"),
    Rule(redis_username, ALL_KINDS),
    Rule(autoscaler_v2_env, ALL_KINDS),
    Rule(suspended_worker_with_autoscaling, ALL_KINDS),
    Rule(autoscaler_v2_restart_policy, ALL_KINDS),
    Rule(autoscaler_options, ALL_KINDS),
    Rule(autoscaler_start_cmd_env, ALL_KINDS, since="1.7.0"),
    Rule(history_server, ALL_KINDS, since="1.7.0"),
    Rule(auth_options, ALL_KINDS),
    Rule(network_policy, ALL_KINDS, since="1.7.0"),
    Rule(tls_options, ALL_KINDS, since="1.7.0"),
)
DEFAULT_VERSION = "1.7.0"


def _applies(rule: Rule, version: str) -> bool:
    return (_version_tuple(version) or (0,)) >= (_version_tuple(rule.since) or (0,))


def rules_for(kind: str, version: str = DEFAULT_VERSION) -> list[Rule]:
    """The object and cluster-spec rules applied to ``kind`` at KubeRay ``version``."""
    return [r for r in (*OBJECT_RULES, *CLUSTER_RULES) if kind in r.kinds and _applies(r, version)]


def operator_problems(manifest: dict[str, Any], version: str = DEFAULT_VERSION) -> list[str]:
    """Problems the KubeRay operator at ``version`` would report for one rendered custom resource,
    one line each: ``<Kind> <name>: <field> <why> (validation.go <function>)``. Kinds other than
    RayCluster/RayJob/RayService get none (the CRD check reports them)."""
    o = Obj.of(manifest)
    if o.kind not in ALL_KINDS:
        return []
    c = o.cluster()
    out: list[str] = []
    for r in rules_for(o.kind, version):
        if r in CLUSTER_RULES:
            if c is not None:
                out += r.check(c)
        else:
            out += r.check(o)
    return [f"{o.kind} {o.name}: {line}" for line in out]


def operator_problems_all(
    manifests: Iterable[dict[str, Any]], version: str = DEFAULT_VERSION
) -> list[str]:
    """:func:`operator_problems` over several objects, in order."""
    out: list[str] = []
    for m in manifests:
        out += operator_problems(m, version)
    return out
