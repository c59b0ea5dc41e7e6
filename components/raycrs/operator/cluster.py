"""KubeRay operator rules of a RayCluster spec: ``ValidateRayClusterSpec``,
``ValidateRayClusterUpgradeOptions`` and ``ValidateRayClusterMetadata`` of KubeRay v1.7.0
``ray-operator/controllers/ray/utils/validation.go``. The spec rules (``check(ClusterSpec)``) run on
the RayCluster spec of every kind: a RayJob's ``rayClusterSpec`` and a RayService's
``rayClusterConfig`` are validated by the same function.
"""

from __future__ import annotations

from components.kernel.labels import is_label_value, is_qualified_name
from components.kernel.problems import Problem, in_object
from components.raycrs.operator.common import (
    AUTOSCALER_START_CMD_ENV,
    AUTOSCALER_V2_ENV,
    EXTERNAL_STORAGE_NS_ANNOTATION,
    FT_ANNOTATION,
    GCS_STORAGE_ENV,
    GCS_STORAGE_MOUNT_PATH,
    GCS_STORAGE_VOLUME,
    MAX_RAYCLUSTER_NAME,
    ORIGINATED_FROM_CRD_LABEL,
    ClusterSpec,
    Obj,
    containers_of,
    env_by_name,
    name_rule,
    restart_policy_of,
    version_tuple,
)

raycluster_name = name_rule("RayCluster", MAX_RAYCLUSTER_NAME, "ValidateRayClusterMetadata")

# --------------------------------------------------------------------------- RayCluster spec rules


def cluster_upgrade_strategy(o: Obj) -> list[Problem]:
    """validation.go ValidateRayClusterUpgradeOptions: ``spec.upgradeStrategy.type`` is
    ``Recreate`` or ``None``, and is not set on a RayCluster created by a RayJob or RayService
    (label ``ray.io/originated-from-crd``)."""
    t = (o.spec.get("upgradeStrategy") or {}).get("type")
    if t is None:
        return []
    out: list[Problem] = []
    if t not in ("Recreate", "None"):
        out.append(
            in_object(
                "spec.upgradeStrategy.type",
                f"spec.upgradeStrategy.type {t!r} is invalid; valid: Recreate, None "
                "(validation.go ValidateRayClusterUpgradeOptions)",
            )
        )
    creator = (o.metadata.get("labels") or {}).get(ORIGINATED_FROM_CRD_LABEL)
    if creator in ("RayJob", "RayService"):
        out.append(
            in_object(
                "spec.upgradeStrategy",
                f"spec.upgradeStrategy cannot be set on a RayCluster created by {creator} "
                "(validation.go ValidateRayClusterUpgradeOptions)",
            )
        )
    return out


def head_has_container(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: the head pod template has at least one container."""
    if not containers_of(c.head):
        f = f"{c.path}.headGroupSpec.template.spec.containers"
        return [
            in_object(f, f"{f} is empty; the head needs one (validation.go ValidateRayClusterSpec)")
        ]
    return []


def workers_have_container(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: every worker pod template has a container."""
    return [
        in_object(
            f"{c.worker_path(i)}.template.spec.containers",
            f"{c.worker_path(i)}.template.spec.containers is empty; a worker group needs one "
            "(validation.go ValidateRayClusterSpec)",
        )
        for i, g in enumerate(c.workers)
        if not containers_of(g)
    ]


def group_resources_once(c: ClusterSpec) -> list[Problem]:
    """validation.go validateRayGroupResources: a group sets resources either in
    ``rayStartParams`` (num-cpus, num-gpus, memory, resources) or in ``resources``, not both."""
    out: list[Problem] = []
    for path, g in [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), w) for i, w in enumerate(c.workers)
    ]:
        params = g.get("rayStartParams") or {}
        if any(params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")) and g.get(
            "resources"
        ):
            out.append(
                in_object(
                    path,
                    f"{path}: resources are set in both rayStartParams and resources; use one "
                    "(validation.go validateRayGroupResources)",
                )
            )
    return out


def group_labels(c: ClusterSpec) -> list[Problem]:
    """validation.go validateRayGroupLabels: no ``rayStartParams['labels']`` (use ``labels``);
    ``labels`` keys are qualified names and values valid label values."""
    out: list[Problem] = []
    for path, g in [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), w) for i, w in enumerate(c.workers)
    ]:
        if "labels" in (g.get("rayStartParams") or {}):
            out.append(
                in_object(
                    f"{path}.rayStartParams.labels",
                    f"{path}.rayStartParams.labels is not supported; use {path}.labels "
                    "(validation.go validateRayGroupLabels)",
                )
            )
        for k, v in (g.get("labels") or {}).items():
            if not is_qualified_name(str(k)):
                out.append(
                    in_object(
                        f"{path}.labels",
                        f"{path}.labels key {k!r} is not a valid label key "
                        "(validation.go validateRayGroupLabels)",
                    )
                )
            if not is_label_value(str(v)):
                out.append(
                    in_object(
                        f"{path}.labels[{k}]",
                        f"{path}.labels[{k}] value {v!r} is not a valid label value "
                        "(validation.go validateRayGroupLabels)",
                    )
                )
    return out


def worker_replicas(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: without autoscaling both ``minReplicas`` and
    ``maxReplicas`` are set; neither is negative; ``minReplicas <= maxReplicas``."""
    out: list[Problem] = []
    src = "(validation.go ValidateRayClusterSpec)"
    for i, g in enumerate(c.workers):
        p, lo, hi = c.worker_path(i), g.get("minReplicas"), g.get("maxReplicas")
        if not c.autoscaling and (lo is None or hi is None):
            out.append(
                in_object(
                    p,
                    f"{p}: minReplicas and maxReplicas must both be set when "
                    f"enableInTreeAutoscaling is not true {src}",
                )
            )
        for key, v in (("minReplicas", lo), ("maxReplicas", hi)):
            if isinstance(v, int) and v < 0:
                out.append(in_object(f"{p}.{key}", f"{p}.{key} {v} is negative {src}"))
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            out.append(in_object(p, f"{p}: minReplicas {lo} > maxReplicas {hi} {src}"))
    return out


def unique_worker_group_names(c: ClusterSpec) -> list[Problem]:
    """KubeRay's validating webhook (``ray-operator/pkg/webhooks/v1/raycluster_webhook.go``
    ``validateWorkerGroups``, on every RayCluster create and update, the ones the operator creates
    for a RayJob or RayService included): "worker group names must be unique", at the second
    group of a name. The stack refuses the same earlier, at
    ``ray_clusters[<name>].worker_groups[<group>]`` (:func:`components.stack.rules.unique_names`);
    this rule holds for any manifest checked with the stack's rules."""
    seen: set[str] = set()
    out: list[Problem] = []
    for i, g in enumerate(c.workers):
        name = str(g.get("groupName", ""))
        if name in seen:
            p = c.worker_path(i)
            out.append(
                in_object(
                    p,
                    f"{p}.groupName {name!r}: worker group names must be unique "
                    "(raycluster_webhook.go validateWorkerGroups)",
                )
            )
        seen.add(name)
    return out


def worker_idle_timeout(c: ClusterSpec) -> list[Problem]:
    """validation.go validateWorkerGroupIdleTimeout: a group's ``idleTimeoutSeconds`` is >= 0 and
    needs autoscaler v2 (``autoscalerOptions.version: v2`` or the head env
    ``RAY_enable_autoscaler_v2``)."""
    out: list[Problem] = []
    for i, g in enumerate(c.workers):
        t = g.get("idleTimeoutSeconds")
        if t is None:
            continue
        p = f"{c.worker_path(i)}.idleTimeoutSeconds"
        if isinstance(t, int) and t < 0:
            out.append(
                in_object(p, f"{p} {t} is negative (validation.go validateWorkerGroupIdleTimeout)")
            )
        elif not (c.autoscaler_v2 or c.v2_by_env):
            out.append(
                in_object(
                    p,
                    f"{p} needs autoscaler v2: set {c.path}.autoscalerOptions.version: v2 "
                    "(validation.go validateWorkerGroupIdleTimeout)",
                )
            )
    return out


def worker_priority(c: ClusterSpec) -> list[Problem]:
    """validation.go validateWorkerGroupPriority: a non-zero ``priority`` needs ``rayVersion`` >=
    2.56.0 and autoscaler v2."""
    out: list[Problem] = []
    src = "(validation.go validateWorkerGroupPriority)"
    for i, g in enumerate(c.workers):
        if not g.get("priority"):
            continue
        p = f"{c.worker_path(i)}.priority"
        v = version_tuple(str(c.spec.get("rayVersion") or ""))
        if v is None:
            out.append(
                in_object(
                    p,
                    f"{p} needs {c.path}.rayVersion 2.56.0 or later (unset or unparseable) {src}",
                )
            )
        elif v < (2, 56, 0):
            out.append(
                in_object(
                    p,
                    f"{p} needs {c.path}.rayVersion 2.56.0 or later, got "
                    f"{c.spec.get('rayVersion')} {src}",
                )
            )
        elif not (c.autoscaler_v2 or c.v2_by_env):
            out.append(
                in_object(p, f"{p} needs autoscaler v2 (autoscalerOptions.version: v2) {src}")
            )
    return out


def ft_annotation_and_options(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: annotation ``ray.io/ft-enabled`` and
    ``gcsFaultToleranceOptions`` are not both set."""
    if c.annotations.get(FT_ANNOTATION) and c.spec.get("gcsFaultToleranceOptions") is not None:
        return [
            in_object(
                f"metadata.annotations[{FT_ANNOTATION}]",
                f"metadata.annotations[{FT_ANNOTATION}] and {c.path}.gcsFaultToleranceOptions "
                "are both set; use gcsFaultToleranceOptions (validation.go ValidateRayClusterSpec)",
            )
        ]
    return []


def redis_address_needs_ft(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: head env ``RAY_REDIS_ADDRESS`` without GCS fault
    tolerance enabled is refused; with ``gcsFaultToleranceOptions`` the head sets neither
    ``RAY_REDIS_ADDRESS`` nor ``REDIS_PASSWORD`` env, nor ``rayStartParams.redis-password``, nor
    the ``ray.io/external-storage-namespace`` annotation (use the options' fields)."""
    env, out = c.head_env, []
    src = "(validation.go ValidateRayClusterSpec)"
    head = f"{c.path}.headGroupSpec"
    if not c.ft_enabled and "RAY_REDIS_ADDRESS" in env:
        out.append(
            in_object(
                head,
                f"{head}: env RAY_REDIS_ADDRESS enables GCS fault tolerance implicitly; set "
                f"{c.path}.gcsFaultToleranceOptions instead {src}",
            )
        )
    if c.spec.get("gcsFaultToleranceOptions") is not None:
        if (c.head.get("rayStartParams") or {}).get("redis-password"):
            out.append(
                in_object(
                    f"{head}.rayStartParams.redis-password",
                    f"{head}.rayStartParams.redis-password is refused with "
                    f"gcsFaultToleranceOptions; use its redisPassword {src}",
                )
            )
        for name, use in (
            ("REDIS_PASSWORD", "redisPassword"),
            ("RAY_REDIS_ADDRESS", "redisAddress"),
        ):
            if name in env:
                out.append(
                    in_object(
                        head,
                        f"{head}: env {name} is refused with gcsFaultToleranceOptions; use "
                        f"its {use} {src}",
                    )
                )
        if c.annotations.get(EXTERNAL_STORAGE_NS_ANNOTATION):
            out.append(
                in_object(
                    f"metadata.annotations[{EXTERNAL_STORAGE_NS_ANNOTATION}]",
                    f"metadata.annotations[{EXTERNAL_STORAGE_NS_ANNOTATION}] is refused with "
                    f"gcsFaultToleranceOptions; use its externalStorageNamespace {src}",
                )
            )
    return out


def ft_backend(c: ClusterSpec) -> list[Problem]:
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
        if "storage" not in ft:
            return []
        return [in_object(f"{p}.storage", f"{p}.storage applies only to backend rocksdb {src}")]
    out = [
        in_object(f"{p}.{k}", f"{p}.{k} is refused with backend rocksdb {src}")
        for k in ("redisAddress", "redisUsername", "redisPassword", "externalStorageNamespace")
        if ft.get(k) not in (None, "")
    ]
    storage = ft.get("storage") or {}
    if storage.get("claimName") and any(
        storage.get(k) not in (None, [], "") for k in ("size", "storageClassName", "accessModes")
    ):
        out.append(
            in_object(
                f"{p}.storage.claimName",
                f"{p}.storage.claimName excludes size, storageClassName and accessModes {src}",
            )
        )
    cs = containers_of(c.head)
    head = cs[0] if cs else {}
    if any(n in env_by_name(head) for n in GCS_STORAGE_ENV):
        out.append(
            in_object(
                f"{c.path}.headGroupSpec",
                f"{c.path}.headGroupSpec: env {' / '.join(GCS_STORAGE_ENV)} is managed by "
                f"KubeRay with backend rocksdb {src}",
            )
        )
    mounts = [m for m in head.get("volumeMounts") or [] if isinstance(m, dict)]
    vols = ((c.head.get("template") or {}).get("spec") or {}).get("volumes") or []
    if any(
        m.get("name") == GCS_STORAGE_VOLUME or m.get("mountPath") == GCS_STORAGE_MOUNT_PATH
        for m in mounts
    ) or any(isinstance(v, dict) and v.get("name") == GCS_STORAGE_VOLUME for v in vols):
        out.append(
            in_object(
                f"{c.path}.headGroupSpec",
                f"{c.path}.headGroupSpec: volume {GCS_STORAGE_VOLUME!r} / mount "
                f"{GCS_STORAGE_MOUNT_PATH} is managed by KubeRay with backend rocksdb {src}",
            )
        )
    return out


def redis_username(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: no ``rayStartParams.redis-username`` nor head env
    ``REDIS_USERNAME`` (use ``gcsFaultToleranceOptions.redisUsername``)."""
    if (c.head.get("rayStartParams") or {}).get("redis-username") or "REDIS_USERNAME" in c.head_env:
        return [
            in_object(
                f"{c.path}.headGroupSpec",
                f"{c.path}.headGroupSpec: redis username in rayStartParams or env is refused; use "
                "gcsFaultToleranceOptions.redisUsername (validation.go ValidateRayClusterSpec)",
            )
        ]
    return []


def autoscaler_v2_env(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: without autoscaling the head env
    ``RAY_enable_autoscaler_v2`` is not ``1``/``true``; with autoscaling it is not set together
    with ``autoscalerOptions.version``."""
    env = c.head_env.get(AUTOSCALER_V2_ENV)
    src = "(validation.go ValidateRayClusterSpec)"
    if env is None:
        return []
    if not c.autoscaling and env.get("value") in ("1", "true"):
        return [
            in_object(
                f"{c.path}.headGroupSpec",
                f"{c.path}.headGroupSpec: env {AUTOSCALER_V2_ENV}={env.get('value')} needs "
                f"{c.path}.enableInTreeAutoscaling: true {src}",
            )
        ]
    if c.autoscaling and (c.spec.get("autoscalerOptions") or {}).get("version") is not None:
        return [
            in_object(
                f"{c.path}.autoscalerOptions.version",
                f"{c.path}.autoscalerOptions.version and head env {AUTOSCALER_V2_ENV} are both "
                f"set; use the former {src}",
            )
        ]
    return []


def suspended_worker_with_autoscaling(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: a worker group with ``suspend: true`` is refused
    with autoscaling enabled (and needs the RayJobDeletionPolicy feature gate, not checked)."""
    if not c.autoscaling:
        return []
    return [
        in_object(
            f"{c.worker_path(i)}.suspend",
            f"{c.worker_path(i)}.suspend: true is refused with enableInTreeAutoscaling "
            "(validation.go ValidateRayClusterSpec)",
        )
        for i, g in enumerate(c.workers)
        if g.get("suspend") is True
    ]


def autoscaler_v2_restart_policy(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: with autoscaling and autoscaler v2 the head and
    worker pods' ``restartPolicy`` is ``Never`` or unset."""
    if not (c.autoscaling and c.autoscaler_v2):
        return []
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    return [
        in_object(
            f"{p}.template.spec.restartPolicy",
            f"{p}.template.spec.restartPolicy {restart_policy_of(g)!r} must be Never or unset "
            "with autoscaler v2 (validation.go ValidateRayClusterSpec)",
        )
        for p, g in groups
        if restart_policy_of(g) not in ("", "Never")
    ]


def autoscaler_options(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: ``autoscalerOptions.idleTimeoutSeconds`` >= 0."""
    opts = c.spec.get("autoscalerOptions") or {}
    t = opts.get("idleTimeoutSeconds")
    out: list[Problem] = []
    if isinstance(t, int) and t < 0:
        out.append(
            in_object(
                f"{c.path}.autoscalerOptions.idleTimeoutSeconds",
                f"{c.path}.autoscalerOptions.idleTimeoutSeconds {t} is negative "
                "(validation.go ValidateRayClusterSpec)",
            )
        )
    return out


def autoscaler_start_cmd_env(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: ``autoscalerOptions.env`` has no
    ``KUBERAY_GEN_AUTOSCALER_START_CMD`` (KubeRay injects it)."""
    env = env_by_name(c.spec.get("autoscalerOptions") or {})
    if AUTOSCALER_START_CMD_ENV in env:
        return [
            in_object(
                f"{c.path}.autoscalerOptions.env",
                f"{c.path}.autoscalerOptions.env {AUTOSCALER_START_CMD_ENV} is managed by KubeRay "
                "(validation.go ValidateRayClusterSpec)",
            )
        ]
    return []
