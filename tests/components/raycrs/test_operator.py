"""KubeRay operator rules (components/raycrs/operator/), one case per rule, each citing the
function of KubeRay v1.7.0 ray-operator/controllers/ray/utils/validation.go it comes from."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from components.kernel.problems import Problem, in_object
from components.raycrs import operator as op
from components.raycrs.operator import common
from components.raycrs.render import render_manifests
from components.stack import checks
from components.stack.checks import check_manifests
from tests.helpers import STACKS, WORKING_DIR, stack


def _dev() -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (m["kind"], m["metadata"]["name"]): m for m in render_manifests(stack("dev"), WORKING_DIR)
    }


DEV = _dev()


def cluster() -> dict[str, Any]:
    """The dev RayCluster (autoscaling on)."""
    return copy.deepcopy(DEV[("RayCluster", "research")])


def own_job() -> dict[str, Any]:
    """A dev RayJob with its own cluster (autoscaling off)."""
    return copy.deepcopy(DEV[("RayJob", "train-lm-l4")])


def selector_job() -> dict[str, Any]:
    """A dev RayJob on the long-lived cluster (clusterSelector)."""
    return copy.deepcopy(DEV[("RayJob", "train-lm-jax-v5e")])


def own_job_no_shutdown() -> dict[str, Any]:
    """:func:`own_job` kept after it finishes (shutdown false, TTL 0)."""
    m = own_job()
    m["spec"]["shutdownAfterJobFinishes"] = False
    m["spec"]["ttlSecondsAfterFinished"] = 0
    return m


def service() -> dict[str, Any]:
    """A RayService around the dev RayCluster spec."""
    rc = cluster()
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve", "namespace": "ray"},
        "spec": {"rayClusterConfig": rc["spec"]},
    }


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation setting a dotted path (``[i]`` for list items) in the manifest."""

    def mutate(m: dict) -> None:
        keys: list[Any] = []
        for part in path.split("."):
            name, _, rest = part.partition("[")
            keys.append(name)
            if rest:
                keys.append(int(rest.rstrip("]")))
        node: Any = m
        for k in keys[:-1]:
            node = node.setdefault(k, {}) if isinstance(k, str) else node[k]
        node[keys[-1]] = value

    return mutate


def _all(*fs: Callable[[dict], None]) -> Callable[[dict], None]:
    def mutate(m: dict) -> None:
        for f in fs:
            f(m)

    return mutate


HEAD = "spec.headGroupSpec.template.spec"
JHEAD = "spec.rayClusterSpec.headGroupSpec.template.spec"
W0 = "spec.workerGroupSpecs[0]"
JW0 = "spec.rayClusterSpec.workerGroupSpecs[0]"


def _env(path: str, *pairs: tuple[str, str]) -> Callable[[dict], None]:
    return _set(f"{path}.containers[0].env", [{"name": n, "value": v} for n, v in pairs])


# (rule, base manifest, mutation, expected text in the problem line, validation.go function)
CASES: list[tuple[Callable, Callable[[], dict], Callable[[dict], None], str, str]] = [
    (
        op.raycluster_name,
        cluster,
        _set("metadata.name", "r" * 54),
        "at most 53",
        "ValidateRayClusterMetadata",
    ),
    (
        op.raycluster_name,
        cluster,
        _set("metadata.name", "9research"),
        "DNS-1035",
        "ValidateRayClusterMetadata",
    ),
    (
        op.rayjob_name,
        own_job,
        _set("metadata.name", "j" * 48),
        "at most 47",
        "ValidateRayJobMetadata",
    ),
    (op.rayjob_name, own_job, _set("metadata.name", "Train"), "DNS-1035", "ValidateRayJobMetadata"),
    (
        op.rayservice_name,
        service,
        _set("metadata.name", "s" * 48),
        "at most 47",
        "ValidateRayServiceMetadata",
    ),
    (
        op.rayservice_initializing_timeout,
        service,
        _set("metadata.annotations", {"ray.io/initializing-timeout": "0s"}),
        "positive duration",
        "validateInitializingTimeout",
    ),
    (
        op.rayservice_initializing_timeout,
        service,
        _set("metadata.annotations", {"ray.io/initializing-timeout": "soon"}),
        "neither a Go duration",
        "validateInitializingTimeout",
    ),
    (
        op.cluster_upgrade_strategy,
        cluster,
        _set("spec.upgradeStrategy", {"type": "Rolling"}),
        "valid: Recreate, None",
        "ValidateRayClusterUpgradeOptions",
    ),
    (
        op.cluster_upgrade_strategy,
        cluster,
        _all(
            _set("spec.upgradeStrategy", {"type": "Recreate"}),
            _set("metadata.labels", {"ray.io/originated-from-crd": "RayJob"}),
        ),
        "created by RayJob",
        "ValidateRayClusterUpgradeOptions",
    ),
    (
        op.head_has_container,
        cluster,
        _set(f"{HEAD}.containers", []),
        "the head needs one",
        "ValidateRayClusterSpec",
    ),
    (
        op.workers_have_container,
        cluster,
        _set(f"{W0}.template.spec.containers", []),
        "a worker group needs one",
        "ValidateRayClusterSpec",
    ),
    (
        op.group_resources_once,
        cluster,
        _set("spec.headGroupSpec.resources", {"CPU": "1"}),
        "both rayStartParams and resources",
        "validateRayGroupResources",
    ),
    (
        op.group_labels,
        cluster,
        _set(f"{W0}.rayStartParams", {"labels": "a=b"}),
        "rayStartParams.labels is not supported",
        "validateRayGroupLabels",
    ),
    (
        op.group_labels,
        cluster,
        _set(f"{W0}.labels", {"bad key!": "x"}),
        "not a valid label key",
        "validateRayGroupLabels",
    ),
    (
        op.group_labels,
        cluster,
        _set(f"{W0}.labels", {"zone": "-x-"}),
        "not a valid label value",
        "validateRayGroupLabels",
    ),
    (
        op.worker_replicas,
        own_job,
        _set(f"{JW0}.minReplicas", None),
        "must both be set",
        "ValidateRayClusterSpec",
    ),
    (
        op.worker_replicas,
        cluster,
        _set(f"{W0}.maxReplicas", -1),
        "is negative",
        "ValidateRayClusterSpec",
    ),
    (
        op.worker_replicas,
        cluster,
        _all(_set(f"{W0}.minReplicas", 3), _set(f"{W0}.maxReplicas", 2)),
        "minReplicas 3 > maxReplicas 2",
        "ValidateRayClusterSpec",
    ),
    (
        op.worker_idle_timeout,
        cluster,
        _set(f"{W0}.idleTimeoutSeconds", 60),
        "needs autoscaler v2",
        "validateWorkerGroupIdleTimeout",
    ),
    (
        op.worker_idle_timeout,
        cluster,
        _set(f"{W0}.idleTimeoutSeconds", -1),
        "is negative",
        "validateWorkerGroupIdleTimeout",
    ),
    (
        op.worker_priority,
        cluster,
        _all(_set(f"{W0}.priority", 5), _set("spec.rayVersion", "2.55.0")),
        "2.56.0 or later",
        "validateWorkerGroupPriority",
    ),
    (
        op.worker_priority,
        cluster,
        _set(f"{W0}.priority", 5),
        "needs autoscaler v2",
        "validateWorkerGroupPriority",
    ),
    (
        op.ft_annotation_and_options,
        cluster,
        _all(
            _set("metadata.annotations", {"ray.io/ft-enabled": "true"}),
            _set("spec.gcsFaultToleranceOptions", {"redisAddress": "r:6379"}),
        ),
        "are both set",
        "ValidateRayClusterSpec",
    ),
    (
        op.redis_address_needs_ft,
        cluster,
        _env(HEAD, ("RAY_REDIS_ADDRESS", "r:6379")),
        "enables GCS fault tolerance implicitly",
        "ValidateRayClusterSpec",
    ),
    (
        op.redis_address_needs_ft,
        cluster,
        _all(
            _set("spec.gcsFaultToleranceOptions", {"redisAddress": "r:6379"}),
            _env(HEAD, ("REDIS_PASSWORD", "x")),
        ),
        "env REDIS_PASSWORD is refused",
        "ValidateRayClusterSpec",
    ),
    (
        op.redis_address_needs_ft,
        cluster,
        _all(
            _set("spec.gcsFaultToleranceOptions", {"redisAddress": "r:6379"}),
            _set("spec.headGroupSpec.rayStartParams.redis-password", "x"),
        ),
        "redis-password is refused",
        "ValidateRayClusterSpec",
    ),
    (
        op.ft_backend,
        cluster,
        _set("spec.gcsFaultToleranceOptions", {"backend": "rocksdb", "redisAddress": "r:6379"}),
        "redisAddress is refused with backend rocksdb",
        "validateGcsFaultToleranceBackend",
    ),
    (
        op.ft_backend,
        cluster,
        _set(
            "spec.gcsFaultToleranceOptions", {"redisAddress": "r:6379", "storage": {"size": "1Gi"}}
        ),
        "storage applies only to backend rocksdb",
        "validateGcsFaultToleranceBackend",
    ),
    (
        op.redis_username,
        cluster,
        _env(HEAD, ("REDIS_USERNAME", "u")),
        "redis username",
        "ValidateRayClusterSpec",
    ),
    (
        op.autoscaler_v2_env,
        own_job,
        _env(JHEAD, ("RAY_enable_autoscaler_v2", "1")),
        "needs spec.rayClusterSpec.enableInTreeAutoscaling: true",
        "ValidateRayClusterSpec",
    ),
    (
        op.autoscaler_v2_env,
        cluster,
        _all(
            _set("spec.autoscalerOptions.version", "v2"),
            _env(HEAD, ("RAY_enable_autoscaler_v2", "1")),
        ),
        "are both set",
        "ValidateRayClusterSpec",
    ),
    (
        op.suspended_worker_with_autoscaling,
        cluster,
        _set(f"{W0}.suspend", True),
        "refused with enableInTreeAutoscaling",
        "ValidateRayClusterSpec",
    ),
    (
        op.autoscaler_v2_restart_policy,
        cluster,
        _all(_set("spec.autoscalerOptions.version", "v2"), _set(f"{HEAD}.restartPolicy", "Always")),
        "Never or unset with autoscaler v2",
        "ValidateRayClusterSpec",
    ),
    (
        op.autoscaler_options,
        cluster,
        _set("spec.autoscalerOptions.idleTimeoutSeconds", -5),
        "is negative",
        "ValidateRayClusterSpec",
    ),
    (
        op.autoscaler_start_cmd_env,
        cluster,
        _set(
            "spec.autoscalerOptions.env",
            [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}],
        ),
        "managed by KubeRay",
        "ValidateRayClusterSpec",
    ),
    (
        op.history_server,
        cluster,
        _set("spec.historyServerOptions", {}),
        "collectorOptions must be set",
        "ValidateRayClusterSpec",
    ),
    (
        op.history_server,
        cluster,
        _set(
            "spec.historyServerOptions",
            {"collectorOptions": {"env": [{"name": "POD_IP", "value": "x"}]}},
        ),
        "env POD_IP is managed by KubeRay",
        "validateCollectorOptions",
    ),
    (
        op.history_server,
        cluster,
        _set(
            "spec.historyServerOptions",
            {
                "collectorOptions": {
                    "image": "collector:1",
                    "env": [{"name": "STORAGE_BACKEND", "value": "gcs"}],
                }
            },
        ),
        "GCS_BUCKET must be set when STORAGE_BACKEND is gcs",
        "validateCollectorOptions",
    ),
    (
        op.unique_worker_group_names,
        own_job,
        lambda m: m["spec"]["rayClusterSpec"]["workerGroupSpecs"].append(
            copy.deepcopy(m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0])
        ),
        "worker group names must be unique",
        "raycluster_webhook.go validateWorkerGroups",
    ),
    (
        op.auth_options,
        cluster,
        _all(_set("spec.authOptions", {"mode": "token"}), _set("spec.rayVersion", "2.51.0")),
        "2.52.0 or later",
        "ValidateRayClusterSpec",
    ),
    (
        op.auth_options,
        cluster,
        _set("spec.authOptions", {"enableK8sTokenAuth": True}),
        "needs spec.authOptions.mode: token",
        "ValidateRayClusterSpec",
    ),
    (
        op.auth_options,
        cluster,
        _set("spec.authOptions", {"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"}),
        "are both set",
        "ValidateRayClusterSpec",
    ),
    (
        op.network_policy,
        cluster,
        _set("spec.networkPolicy", {"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}}),
        "ingressRules cannot be set with mode DenyAllEgress",
        "validateNetworkPolicy",
    ),
    (
        op.network_policy,
        cluster,
        _set("spec.networkPolicy", {"workerGroups": [{"groupName": "gpu"}]}),
        "matches no worker group",
        "validateNetworkPolicy",
    ),
    (
        op.tls_options,
        cluster,
        _all(_set("spec.tlsOptions", {"enabled": True}), _env(HEAD, ("RAY_USE_TLS", "1"))),
        "env RAY_USE_TLS is managed by KubeRay",
        "validateTLSOptions",
    ),
    (
        op.rayjob_suspend_needs_shutdown,
        own_job,
        _all(
            _set("spec.suspend", True),
            _set("spec.shutdownAfterJobFinishes", False),
            _set("spec.ttlSecondsAfterFinished", 0),
        ),
        "needs spec.shutdownAfterJobFinishes true",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_ttl,
        own_job,
        _set("spec.ttlSecondsAfterFinished", -1),
        "is negative",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_ttl,
        selector_job,
        _set("spec.ttlSecondsAfterFinished", 3600),
        "needs spec.shutdownAfterJobFinishes true",
        "validateDeletionConfiguration",
    ),
    (
        op.rayjob_deletion_strategy,
        own_job,
        _set(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}
                ]
            },
        ),
        "are exclusive",
        "validateDeletionConfiguration",
    ),
    (
        op.rayjob_deletion_strategy,
        own_job,
        _set("spec.deletionStrategy", {}),
        "needs both onSuccess and onFailure, or deletionRules",
        "validateDeletionConfiguration",
    ),
    (
        op.rayjob_deletion_strategy,
        own_job,
        _set(
            "spec.deletionStrategy",
            {"onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteCluster"}},
        ),
        "DeleteNone is refused with spec.shutdownAfterJobFinishes true",
        "validateLegacyDeletionPolicies",
    ),
    (
        op.rayjob_deletion_strategy,
        selector_job,
        _set(
            "spec.deletionStrategy",
            {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"}},
        ),
        "refused with spec.clusterSelector",
        "validateLegacyDeletionPolicies",
    ),
    (
        op.rayjob_deletion_rules,
        selector_job,
        _set(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {
                        "policy": "DeleteSelf",
                        "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"},
                    }
                ]
            },
        ),
        "set exactly one",
        "validateDeletionCondition",
    ),
    (
        op.rayjob_deletion_rules,
        own_job_no_shutdown,
        _set(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {
                        "policy": "DeleteSelf",
                        "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10},
                    },
                    {
                        "policy": "DeleteCluster",
                        "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60},
                    },
                ]
            },
        ),
        "DeleteSelf TTL 10 < DeleteCluster TTL 60",
        "validateTTLConsistency",
    ),
    (
        op.rayjob_deletion_rules,
        selector_job,
        _set(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}
                ]
            },
        ),
        "refused with spec.clusterSelector",
        "validateDeletionRules",
    ),
    (
        op.rayjob_deletion_rules,
        selector_job,
        _set(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}},
                    {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}},
                ]
            },
        ),
        "a second rule",
        "validateDeletionRules",
    ),
    (
        op.rayjob_cluster_source,
        own_job,
        _set("spec.rayClusterSpec", None),
        "one of rayClusterSpec or clusterSelector",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_cluster_source,
        selector_job,
        _set("spec.backoffLimit", 2),
        "refused with spec.clusterSelector",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_cluster_source,
        selector_job,
        _set("spec.clusterSelector", {"ray.io/cluster": "", "x": "y"}),
        "must name a RayCluster",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_cluster_source,
        selector_job,
        _set("spec.submissionMode", "SidecarMode"),
        "SidecarMode is refused with spec.clusterSelector",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_submission_mode,
        own_job,
        _all(_set("spec.submissionMode", "InteractiveMode"), _set("spec.backoffLimit", 1)),
        "refused with InteractiveMode",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_submission_mode,
        own_job,
        _set("spec.submissionMode", "SidecarMode"),
        "submitterPodTemplate is refused with SidecarMode",
        "ValidateRayJobSpec",
    ),
    (
        op.k8s_token_auth_unsupported,
        own_job,
        _set("spec.rayClusterSpec.authOptions", {"mode": "token", "enableK8sTokenAuth": True}),
        "not supported for a RayJob",
        "ValidateRayJobSpec",
    ),
    (
        op.k8s_token_auth_unsupported,
        service,
        _set("spec.rayClusterConfig.authOptions", {"mode": "token", "enableK8sTokenAuth": True}),
        "not supported for a RayService",
        "ValidateRayServiceSpec",
    ),
    (
        op.rayjob_runtime_env_yaml,
        own_job,
        _set("spec.runtimeEnvYAML", "working_dir: [unclosed"),
        "not valid YAML",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_runtime_env_yaml,
        own_job,
        _set("spec.runtimeEnvYAML", "- a\n- b\n"),
        "not a mapping",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_deadlines_and_backoff,
        own_job,
        _set("spec.activeDeadlineSeconds", 0),
        "must be a positive integer",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_deadlines_and_backoff,
        own_job,
        _set("spec.preRunningDeadlineSeconds", -1),
        "must be a positive integer",
        "ValidateRayJobSpec",
    ),
    (
        op.rayjob_deadlines_and_backoff,
        own_job,
        _set("spec.backoffLimit", -1),
        "is negative",
        "ValidateRayJobSpec",
    ),
    (
        op.rayservice_head_service_name,
        service,
        _set("spec.rayClusterConfig.headGroupSpec.headService", {"metadata": {"name": "x"}}),
        "must not be set",
        "ValidateRayServiceSpec",
    ),
    (
        op.rayservice_upgrade_strategy,
        service,
        _set("spec.upgradeStrategy", {"type": "Rolling"}),
        "valid: NewClusterWithIncrementalUpgrade",
        "ValidateRayServiceSpec",
    ),
    (
        op.rayservice_upgrade_strategy,
        service,
        _set(
            "spec.upgradeStrategy",
            {
                "type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {
                    "maxSurgePercent": 50,
                    "stepSizePercent": 60,
                    "intervalSeconds": 0,
                },
            },
        ),
        "stepSizePercent 60 > maxSurgePercent 50",
        "ValidateClusterUpgradeOptions",
    ),
    (
        op.head_has_container,
        service,
        _set("spec.rayClusterConfig.headGroupSpec.template.spec.containers", []),
        "the head needs one",
        "ValidateRayClusterSpec",
    ),
    (
        op.rayservice_deletion_delay,
        service,
        _set("spec.rayClusterDeletionDelaySeconds", -1),
        "is negative",
        "ValidateRayServiceSpec",
    ),
]


def _id(case: tuple) -> str:
    return f"{case[0].__name__}-{case[4]}-{case[3][:24]}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_rule_refuses_what_the_operator_refuses(case) -> None:
    """Each case breaks one rule of KubeRay v1.7.0 validation.go (the function named in the
    case, e.g. ``ValidateRayJobSpec``): the base manifest passes that rule, the mutated one gets
    a problem line naming the kind, the object and the Go function, and the line also comes out
    of :func:`operator_problems`."""
    rule, base, mutate, expected, go = case
    m = base()
    obj = op.Obj.of(m)
    target = obj.cluster() if any(r.check is rule for r in op.CLUSTER_RULES) else obj
    assert rule(target) == []
    mutate(m)
    obj = op.Obj.of(m)
    target = obj.cluster() if any(r.check is rule for r in op.CLUSTER_RULES) else obj
    lines = rule(target)
    assert any(expected in line and go in line for line in lines), lines
    every = op.operator_problems(m)
    head = f"{m['kind']} {m['metadata']['name']}: "
    assert any(p.startswith(head) and expected in p for p in every), every


def test_every_rule_has_a_case_and_cites_validation_go() -> None:
    """Every rule of the tables is exercised above and its docstring names its validation.go
    function."""
    tested = {c[0] for c in CASES}
    for r in (*op.OBJECT_RULES, *op.CLUSTER_RULES):
        assert r.check in tested, r.check.__name__
        doc = r.check.__doc__ or ""  # validation.go, or KubeRay's webhook for what it lacks
        assert "validation.go " in doc or "raycluster_webhook.go" in doc, r.check.__name__


@pytest.mark.parametrize("name", STACKS)
def test_shipped_stacks_pass_every_operator_rule(name: str) -> None:
    """The dev and prod renders pass every rule of validation.go that the tables carry."""
    manifests = render_manifests(stack(name), WORKING_DIR)
    assert [p for m in manifests for p in op.operator_problems(m)] == []
    assert check_manifests(stack(name), manifests) == []


def test_old_rendering_of_a_job_on_a_named_cluster_is_refused() -> None:
    """Before this check, a job on a named cluster was rendered with shutdownAfterJobFinishes
    false and ttlSecondsAfterFinished 3600; KubeRay v1.7.0 refuses that (validation.go
    validateDeletionConfiguration), and so does ``raygke check``."""
    m = selector_job()
    assert (m["spec"]["shutdownAfterJobFinishes"], m["spec"]["ttlSecondsAfterFinished"]) == (
        False,
        0,
    )
    m["spec"]["ttlSecondsAfterFinished"] = 3600
    line = (
        "RayJob train-lm-jax-v5e: spec.ttlSecondsAfterFinished 3600 needs "
        "spec.shutdownAfterJobFinishes true"
    )
    assert any(p.startswith(line) for p in op.operator_problems(m))
    assert any(p.startswith(line) for p in check_manifests(stack("dev"), [m]))


def test_rules_of_fields_new_in_1_7_0_are_skipped_for_1_6_2() -> None:
    """Rules on fields the v1.6.2 CRDs do not have (tlsOptions, networkPolicy, priority...) apply
    from 1.7.0 only; the rest apply to both carried versions."""
    m = cluster()
    m["spec"]["tlsOptions"] = {"enabled": True}
    m["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_USE_TLS", "value": "1"}
    ]
    m["spec"]["workerGroupSpecs"][0]["maxReplicas"] = -1
    new = op.operator_problems(m, "1.7.0")
    old = op.operator_problems(m, "1.6.2")
    assert any("RAY_USE_TLS" in p for p in new) and not any("RAY_USE_TLS" in p for p in old)
    assert any("maxReplicas -1 is negative" in p for p in old)
    names = {r.check.__name__ for r in op.rules_for("RayCluster", "1.6.2")}
    assert "tls_options" not in names and "worker_replicas" in names


def test_durations_follow_go() -> None:
    """Go's time.ParseDuration, as validation.go uses it."""
    assert common.go_duration_seconds("1h30m") == 5400 and common.go_duration_seconds("-5s") == -5
    assert common.go_duration_seconds("0") == 0 and common.go_duration_seconds("5") is None


_FIELD = re.compile(r"(metadata|spec)(\.[\w-]+|\[[^\]\s]+\])*")


def _target(rule: Callable, m: dict) -> Any:
    obj = op.Obj.of(m)
    return obj.cluster() if any(r.check is rule for r in op.CLUSTER_RULES) else obj


def test_every_rule_module_gives_each_finding_with_its_object_field() -> None:
    """Every operator rule returns its lines as Problems: ``object_field`` is a path into the object
    (``spec.workerGroupSpecs[0].minReplicas``), given by the rule (the data), and it is the field
    the line opens with; :func:`operator_problems` keeps it under the ``<Kind> <name>: `` head.
    Checked per rule module (cluster, features, job, service, and the name rule of common)."""
    modules: set[str] = set()
    for rule, base, mutate, _expected, _go in CASES:
        m = base()
        mutate(m)
        lines = rule(_target(rule, m))
        assert lines, rule.__name__
        for line in lines:
            assert isinstance(line, Problem), (rule.__name__, line)
            assert _FIELD.fullmatch(line.object_field), (rule.__name__, line.object_field)
            assert line.startswith(line.object_field), (rule.__name__, line.object_field, line)
        modules.add(rule.__module__)
        head = f"{m['kind']} {m['metadata']['name']}: "
        every = {str(p): p for p in op.operator_problems(m)}
        for line in lines:
            p = every[head + line]
            assert isinstance(p, Problem) and p.object_field == line.object_field
    assert modules == {
        f"components.raycrs.operator.{name}"
        for name in ("cluster", "features", "job", "service", "common")
    }


def test_the_worker_group_of_an_operator_problem_comes_from_its_field() -> None:
    """``_object_problem`` places a problem by the field it carries and reads no words of it: a
    finding of worker group 1 whose text names group 0 (or no field at all) is a problem of group
    1; one whose field is the head is the head's; one of an object field outside the RayCluster
    spec is the object's."""
    m = cluster()
    groups = m["spec"]["workerGroupSpecs"]
    assert len(groups) >= 2
    groups[1]["maxReplicas"] = -1
    lines = op.operator_problems(m)
    (line,) = [x for x in lines if x.object_field == "spec.workerGroupSpecs[1].maxReplicas"]
    group1 = f"ray_clusters[research].worker_groups[{groups[1]['groupName']}]"
    assert checks._object_problem(m, line, "kuberay-operator").path == group1
    found = [p for p in check_manifests(stack("dev"), [m]) if p.rule == "kuberay-operator"]
    assert len(found) == len(lines) and {p.path for p in found} == {group1}
    for words in ("RayCluster research: spec.workerGroupSpecs[0].maxReplicas -1", "no field"):
        misleading = in_object(line.object_field, words)
        assert checks._object_problem(m, misleading, "kuberay-operator").path == group1
    head = in_object("spec.headGroupSpec.template.spec.containers", line)
    assert checks._object_problem(m, head, "kuberay-operator").path == (
        "ray_clusters[research].head"
    )
    meta = in_object("metadata.name", line)
    assert checks._object_problem(m, meta, "kuberay-operator").path == "ray_clusters[research]"
    # a group index past the end is no group (the object's own path)
    past = in_object(f"spec.workerGroupSpecs[{len(groups)}].x", line)
    assert checks._object_problem(m, past, "kuberay-operator").path == "ray_clusters[research]"


def test_a_rayservice_without_its_cluster_is_refused_as_the_operator_does() -> None:
    """A RayService's ``rayClusterConfig`` is a value (``RayServiceSpec.RayClusterSpec``), so
    KubeRay validates a missing one as an empty spec and refuses its head without a container
    (validation.go ``ValidateRayServiceSpec`` -> ``ValidateRayClusterSpec``, issue 49)."""
    m = service()
    del m["spec"]["rayClusterConfig"]
    lines = op.operator_problems(m)
    assert any(
        "spec.rayClusterConfig.headGroupSpec.template.spec.containers is empty" in p for p in lines
    ), lines
    # a RayJob's rayClusterSpec is optional: a job on a running cluster selects it instead
    job = service()
    job["kind"], job["spec"] = "RayJob", {"entrypoint": "python x.py"}
    assert op.Obj.of(job).cluster() is None
