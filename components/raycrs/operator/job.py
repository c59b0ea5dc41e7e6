"""KubeRay operator rules of a RayJob: ``ValidateRayJobMetadata`` and ``ValidateRayJobSpec`` of
KubeRay v1.7.0 ``ray-operator/controllers/ray/utils/validation.go``.
"""

from __future__ import annotations

import yaml

from components.kernel.problems import Problem, in_object
from components.raycrs.operator.common import (
    CLUSTER_SELECTOR_KEY,
    MAX_RAYJOB_NAME,
    Obj,
    name_rule,
    restart_policy_of,
)

rayjob_name = name_rule("RayJob", MAX_RAYJOB_NAME, "ValidateRayJobMetadata")

# ------------------------------------------------------------------------------------ RayJob rules


def _selector_mode(o: Obj) -> bool:
    return bool(o.spec.get("clusterSelector"))


def rayjob_suspend_needs_shutdown(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec: ``suspend: true`` needs ``shutdownAfterJobFinishes:
    true``."""
    if o.spec.get("suspend") is True and o.spec.get("shutdownAfterJobFinishes") is not True:
        return [
            in_object(
                "spec.suspend",
                "spec.suspend true needs spec.shutdownAfterJobFinishes true "
                "(validation.go ValidateRayJobSpec)",
            )
        ]
    return []


def rayjob_ttl(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec and validateDeletionConfiguration:
    ``ttlSecondsAfterFinished`` >= 0, and above 0 only with ``shutdownAfterJobFinishes: true``."""
    ttl = o.spec.get("ttlSecondsAfterFinished")
    if not isinstance(ttl, int):
        return []
    if ttl < 0:
        return [
            in_object(
                "spec.ttlSecondsAfterFinished",
                f"spec.ttlSecondsAfterFinished {ttl} is negative (validation.go ValidateRayJobSpec)",
            )
        ]
    if ttl > 0 and o.spec.get("shutdownAfterJobFinishes") is not True:
        return [
            in_object(
                "spec.ttlSecondsAfterFinished",
                f"spec.ttlSecondsAfterFinished {ttl} needs spec.shutdownAfterJobFinishes true "
                "(KubeRay refuses a TTL when the job does not shut its cluster down; "
                "validation.go validateDeletionConfiguration)",
            )
        ]
    return []


def rayjob_deletion_strategy(o: Obj) -> list[Problem]:
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
        f = f"{p}.deletionRules"
        return [in_object(f, f"{f} and spec.shutdownAfterJobFinishes true are exclusive {src}")]
    if rules and legacy:
        return [
            in_object(p, f"{p}: use either onSuccess/onFailure or deletionRules, not both {src}")
        ]
    if not rules and not legacy:
        return [in_object(p, f"{p} needs both onSuccess and onFailure, or deletionRules {src}")]
    if rules:
        return []
    lsrc = "(validation.go validateLegacyDeletionPolicies)"
    if ds.get("onSuccess") is None or ds.get("onFailure") is None:
        return [in_object(p, f"{p}: onSuccess and onFailure must both be set {lsrc}")]
    policies = {}
    for key in ("onSuccess", "onFailure"):
        pol = (ds.get(key) or {}).get("policy")
        if pol is None:
            out.append(in_object(f"{p}.{key}.policy", f"{p}.{key}.policy must be set {lsrc}"))
        policies[key] = pol
    if out:
        return out
    c = o.cluster()
    for key, pol in policies.items():
        if _selector_mode(o) and pol in ("DeleteCluster", "DeleteWorkers"):
            out.append(
                in_object(
                    f"{p}.{key}.policy",
                    f"{p}.{key}.policy {pol} is refused with spec.clusterSelector {lsrc}",
                )
            )
    if "DeleteWorkers" in policies.values() and c is not None and c.autoscaling:
        out.append(in_object(p, f"{p}: DeleteWorkers is refused with autoscaling enabled {lsrc}"))
    if shutdown and "DeleteNone" in policies.values():
        out.append(
            in_object(
                p, f"{p}: DeleteNone is refused with spec.shutdownAfterJobFinishes true {lsrc}"
            )
        )
    return out


_DELETION_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")


def rayjob_deletion_rules(o: Obj) -> list[Problem]:
    """validation.go validateDeletionRules / validateDeletionCondition / validateTTLConsistency:
    each rule's condition sets exactly one of ``jobStatus`` / ``jobDeploymentStatus`` and a
    ``ttlSeconds`` >= 0; no DeleteCluster/DeleteWorkers with ``clusterSelector``; no DeleteWorkers
    with autoscaling; no two rules with the same (status, policy); per status the TTLs satisfy
    DeleteWorkers <= DeleteCluster <= DeleteSelf."""
    rules = (o.spec.get("deletionStrategy") or {}).get("deletionRules") or []
    c = o.cluster()
    src = "(validation.go validateDeletionRules)"
    out: list[Problem] = []
    seen: dict[tuple[str, str], dict[str, int]] = {}
    for i, r in enumerate(rules):
        p = f"spec.deletionStrategy.deletionRules[{i}]"
        cond = (r or {}).get("condition") or {}
        js, jds = cond.get("jobStatus"), cond.get("jobDeploymentStatus")
        if (js is None) == (jds is None):
            out.append(
                in_object(
                    f"{p}.condition",
                    f"{p}.condition sets {'both' if js is not None else 'neither'} of "
                    "jobStatus and jobDeploymentStatus; set exactly one "
                    "(validation.go validateDeletionCondition)",
                )
            )
            continue
        ttl = cond.get("ttlSeconds", 0)
        if isinstance(ttl, int) and ttl < 0:
            out.append(
                in_object(
                    f"{p}.condition.ttlSeconds",
                    f"{p}.condition.ttlSeconds {ttl} is negative "
                    "(validation.go validateDeletionCondition)",
                )
            )
            continue
        policy = (r or {}).get("policy")
        if _selector_mode(o) and policy in ("DeleteCluster", "DeleteWorkers"):
            out.append(
                in_object(
                    f"{p}.policy", f"{p}.policy {policy} is refused with spec.clusterSelector {src}"
                )
            )
            continue
        if c is not None and c.autoscaling and policy == "DeleteWorkers":
            out.append(
                in_object(
                    f"{p}.policy",
                    f"{p}.policy DeleteWorkers is refused with autoscaling enabled {src}",
                )
            )
            continue
        key = ("jobStatus", js) if js is not None else ("jobDeploymentStatus", jds)
        group = seen.setdefault(key, {})
        if policy in group:
            out.append(
                in_object(p, f"{p}: a second rule for policy {policy} and {key[0]} {key[1]} {src}")
            )
            continue
        group[policy] = ttl if isinstance(ttl, int) else 0
    for (what, status), ttls in seen.items():
        prev = None
        for policy in _DELETION_ORDER:
            if policy not in ttls:
                continue
            if prev is not None and ttls[policy] < ttls[prev]:
                out.append(
                    in_object(
                        "spec.deletionStrategy.deletionRules",
                        f"spec.deletionStrategy.deletionRules for {what} {status}: {policy} TTL "
                        f"{ttls[policy]} < {prev} TTL {ttls[prev]} (validation.go "
                        "validateTTLConsistency)",
                    )
                )
            prev = policy
    return out


def rayjob_cluster_source(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec: one of ``rayClusterSpec`` / ``clusterSelector`` is set;
    with ``clusterSelector``: its ``ray.io/cluster`` is not empty, no ``suspend``, no
    SidecarMode, no ``backoffLimit`` above 0."""
    src = "(validation.go ValidateRayJobSpec)"
    if not _selector_mode(o):
        if o.spec.get("rayClusterSpec") is None:
            return [
                in_object(
                    "spec", f"spec: one of rayClusterSpec or clusterSelector must be set {src}"
                )
            ]
        return []
    out: list[Problem] = []
    if o.spec.get("suspend") is True:
        out.append(
            in_object(
                "spec.suspend", f"spec.suspend true is refused with spec.clusterSelector {src}"
            )
        )
    if not (o.spec.get("clusterSelector") or {}).get(CLUSTER_SELECTOR_KEY):
        f = f"spec.clusterSelector[{CLUSTER_SELECTOR_KEY}]"
        out.append(in_object(f, f"{f} must name a RayCluster {src}"))
    if o.spec.get("submissionMode") == "SidecarMode":
        out.append(
            in_object(
                "spec.submissionMode",
                f"spec.submissionMode SidecarMode is refused with spec.clusterSelector {src}",
            )
        )
    b = o.spec.get("backoffLimit")
    if isinstance(b, int) and b > 0:
        out.append(
            in_object(
                "spec.backoffLimit",
                f"spec.backoffLimit {b} is refused with spec.clusterSelector (retries need the "
                f"job's own cluster) {src}",
            )
        )
    return out


def rayjob_submission_mode(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec: InteractiveMode takes no ``backoffLimit`` above 0
    (kuberay#3525); SidecarMode takes no ``submitterPodTemplate`` / ``submitterConfig`` and a head
    ``restartPolicy`` of ``Never`` or unset."""
    mode, src = o.spec.get("submissionMode"), "(validation.go ValidateRayJobSpec)"
    b = o.spec.get("backoffLimit")
    out: list[Problem] = []
    if mode == "InteractiveMode" and isinstance(b, int) and b > 0:
        out.append(
            in_object(
                "spec.backoffLimit", f"spec.backoffLimit {b} is refused with InteractiveMode {src}"
            )
        )
    if mode == "SidecarMode":
        for k in ("submitterPodTemplate", "submitterConfig"):
            if o.spec.get(k) is not None:
                out.append(in_object(f"spec.{k}", f"spec.{k} is refused with SidecarMode {src}"))
        head = (o.spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}
        if restart_policy_of(head) not in ("", "Never"):
            f = "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy"
            out.append(in_object(f, f"{f} must be Never or unset with SidecarMode {src}"))
    return out


def k8s_token_auth_unsupported(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec / ValidateRayServiceSpec: ``authOptions.enableK8sTokenAuth``
    is not supported for a RayJob's or RayService's cluster."""
    c = o.cluster()
    if o.kind != "RayCluster" and c is not None and c.auth.get("enableK8sTokenAuth") is True:
        f = f"{c.path}.authOptions.enableK8sTokenAuth"
        return [
            in_object(
                f, f"{f} is not supported for a {o.kind} (validation.go Validate{o.kind}Spec)"
            )
        ]
    return []


def rayjob_runtime_env_yaml(o: Obj) -> list[Problem]:
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
            in_object(
                "spec.runtimeEnvYAML",
                f"spec.runtimeEnvYAML is not valid YAML ({first}) (validation.go ValidateRayJobSpec)",
            )
        ]
    if doc is not None and not isinstance(doc, dict):
        return [
            in_object(
                "spec.runtimeEnvYAML",
                f"spec.runtimeEnvYAML is a {type(doc).__name__}, not a mapping "
                "(validation.go ValidateRayJobSpec)",
            )
        ]
    return []


def rayjob_deadlines_and_backoff(o: Obj) -> list[Problem]:
    """validation.go ValidateRayJobSpec: ``activeDeadlineSeconds`` and
    ``preRunningDeadlineSeconds`` are above 0; ``backoffLimit`` is not negative."""
    out: list[Problem] = []
    for k in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        v = o.spec.get(k)
        if isinstance(v, int) and v <= 0:
            out.append(
                in_object(
                    f"spec.{k}",
                    f"spec.{k} {v} must be a positive integer (validation.go ValidateRayJobSpec)",
                )
            )
    b = o.spec.get("backoffLimit")
    if isinstance(b, int) and b < 0:
        out.append(
            in_object(
                "spec.backoffLimit",
                f"spec.backoffLimit {b} is negative (validation.go ValidateRayJobSpec)",
            )
        )
    return out
