"""The rules the KubeRay operator applies to a RayCluster, RayJob or RayService when it reconciles
(KubeRay v1.7.0 ``validation.go``, decided from the manifest alone), each returning
``list[Problem]`` with the object field it is about. One module per kind:
:mod:`~components.raycrs.operator.cluster` (and :mod:`~components.raycrs.operator.features`),
:mod:`~components.raycrs.operator.job`, :mod:`~components.raycrs.operator.service`, on the views
of :mod:`~components.raycrs.operator.common`; this module holds the rule tables and runs them.
Scope, versions and sources: docs/sources.md#raycrs-operator
"""

from __future__ import annotations

from typing import Any

from components.kernel.problems import Problem, Rule
from components.raycrs.operator.cluster import (
    autoscaler_options,
    autoscaler_start_cmd_env,
    autoscaler_v2_env,
    autoscaler_v2_restart_policy,
    cluster_upgrade_strategy,
    ft_annotation_and_options,
    ft_backend,
    group_labels,
    group_resources_once,
    head_has_container,
    raycluster_name,
    redis_address_needs_ft,
    redis_username,
    suspended_worker_with_autoscaling,
    unique_worker_group_names,
    worker_idle_timeout,
    worker_priority,
    worker_replicas,
    workers_have_container,
)
from components.raycrs.operator.common import Obj, version_tuple
from components.raycrs.operator.features import (
    auth_options,
    history_server,
    network_policy,
    tls_options,
)
from components.raycrs.operator.job import (
    k8s_token_auth_unsupported,
    rayjob_cluster_source,
    rayjob_deadlines_and_backoff,
    rayjob_deletion_rules,
    rayjob_deletion_strategy,
    rayjob_name,
    rayjob_runtime_env_yaml,
    rayjob_submission_mode,
    rayjob_suspend_needs_shutdown,
    rayjob_ttl,
)
from components.raycrs.operator.service import (
    rayservice_deletion_delay,
    rayservice_head_service_name,
    rayservice_initializing_timeout,
    rayservice_name,
    rayservice_upgrade_strategy,
)

# --------------------------------------------------------------------------------------- tables


# Each operator rule is a components.kernel.problems.Rule(check, kinds, since): it applies to ``kinds``;
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
    Rule(unique_worker_group_names, ALL_KINDS),
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
    return (version_tuple(version) or (0,)) >= (version_tuple(rule.since) or (0,))


def rules_for(kind: str, version: str = DEFAULT_VERSION) -> list[Rule]:
    """The object and cluster-spec rules applied to ``kind`` at KubeRay ``version``."""
    return [r for r in (*OBJECT_RULES, *CLUSTER_RULES) if kind in r.kinds and _applies(r, version)]


def operator_problems(manifest: dict[str, Any], version: str = DEFAULT_VERSION) -> list[Problem]:
    """Problems the KubeRay operator at ``version`` would report for one rendered custom resource,
    one line each: ``<Kind> <name>: <field> <why> (validation.go <function>)``, a
    :class:`~components.kernel.problems.Problem` whose ``object_field`` is the object field the rule
    found it at (a path into the object, ``spec.workerGroupSpecs[0].minReplicas``; every rule
    returns its lines with their field). Kinds other than RayCluster/RayJob/RayService get none
    (the CRD check reports them)."""
    o = Obj.of(manifest)
    if o.kind not in ALL_KINDS:
        return []
    c = o.cluster()
    out: list[Problem] = []
    for r in rules_for(o.kind, version):
        if r in CLUSTER_RULES:
            if c is not None:
                out += r.check(c)
        else:
            out += r.check(o)
    return [p.changed(message=f"{o.kind} {o.name}: {p}") for p in out]
