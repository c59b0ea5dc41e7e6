"""Secure by default (issue 12, Kubernetes side): the shipped stacks' renders under Pulumi mocks
pass the rules of :mod:`components.security.rules`, and each rule fails a render weakened for it
with the rule's message."""

from __future__ import annotations

import copy
import json
from typing import Any

import kubernetes_validate
import pytest

from components.kernel.ray import AUTH_TOKEN_KEY
from components.security.rules import (
    RULES,
    check_network_policy,
    check_pod_security,
    check_ray_auth,
    pod_templates,
    security_problems,
)
from components.stack.checks import check_stack
from components.stack.loader import stack_data_from_yaml
from raygke.mocks import MOCK_TOKEN
from raygke.synth import config_entries, run_program
from tests.helpers import ROOT, STACKS, of_type, stack

K8S_VERSION = "1.35"  # prod's min_master_version


def _k8s_objects(records: list[dict]) -> list[dict[str, Any]]:
    """The Kubernetes objects of a render as the API server would get them."""
    skip = ("kubernetes:helm.sh", "pulumi:providers", "kubernetes:apiextensions.k8s.io")
    return [
        r["inputs"]
        for r in records
        if r["type"].startswith("kubernetes:") and not r["type"].startswith(skip)
    ]


@pytest.fixture(scope="module", params=STACKS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict], dict]:
    name = request.param
    data = stack_data_from_yaml((ROOT / f"Pulumi.{name}.yaml").read_text())
    records, outputs = run_program(
        config_entries(data, {"project": data["project"], "region": data["region"]}), name
    )
    return name, records, outputs


def _kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o.get("kind") == kind]


def test_every_rule_passes_on_the_shipped_renders(rendered) -> None:
    _, records, _ = rendered
    objects = _k8s_objects(records)
    assert {o["kind"] for o in objects} >= {"RayCluster", "RayJob", "NetworkPolicy", "Namespace"}
    for name, rule in RULES.items():
        assert rule(objects) == [], name


def test_every_ray_cluster_has_token_auth_with_a_stack_secret(rendered) -> None:
    _, records, outputs = rendered
    objects = _k8s_objects(records)
    secrets = {s["metadata"]["name"]: s for s in _kind(objects, "Secret")}
    clusters = 0
    for o in _kind(objects, "RayCluster") + _kind(objects, "RayJob") + _kind(objects, "RayService"):
        spec = {
            "RayCluster": o["spec"],
            "RayJob": o["spec"].get("rayClusterSpec"),
            "RayService": o["spec"].get("rayClusterConfig"),
        }[o["kind"]]
        if spec is None:
            assert "clusterSelector" in o["spec"]  # runs on a RayCluster checked above
            continue
        clusters += 1
        auth = spec["authOptions"]
        assert auth["mode"] == "token"
        secret = secrets[auth["secretName"]]
        assert secret["metadata"]["namespace"] == o["metadata"]["namespace"]
        # the token is a secret output: the render never holds it in the clear
        assert secret["stringData"] == "[secret]"
    assert clusters >= 2  # the long-lived cluster and a job's own cluster
    passwords = of_type(records, "random:index/randomPassword:RandomPassword")
    assert len(passwords) == len(secrets) == clusters
    assert all(p["inputs"]["length"] >= 32 and not p["inputs"]["special"] for p in passwords)
    assert MOCK_TOKEN not in json.dumps(records) + json.dumps(outputs)
    assert AUTH_TOKEN_KEY == "auth_token"  # KubeRay's RAY_AUTH_TOKEN_SECRET_KEY


def test_every_pod_template_has_the_restricted_security_context(rendered) -> None:
    _, records, _ = rendered
    objects = _k8s_objects(records)
    roles: dict[str, int] = {}
    for o in _kind(objects, "RayCluster") + _kind(objects, "RayJob"):
        for _path, role, tmpl in pod_templates(o):
            roles[role] = roles.get(role, 0) + 1
            spec = tmpl["spec"]
            assert spec["securityContext"]["runAsNonRoot"] is True
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            for c in spec["containers"]:
                assert c["securityContext"] == {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "runAsNonRoot": True,
                    "runAsUser": 1000,
                    "runAsGroup": 100,
                    "seccompProfile": {"type": "RuntimeDefault"},
                }
            if role != "submitter":
                (shm,) = [v for v in spec["volumes"] if v["name"] == "dshm"]
                assert shm["emptyDir"]["medium"] == "Memory" and shm["emptyDir"]["sizeLimit"]
    jobs = _kind(objects, "RayJob")
    assert roles["head"] >= 2 and roles["worker"] >= 3 and roles["submitter"] == len(jobs) >= 3


def test_head_and_workers_run_as_separate_accounts(rendered) -> None:
    _, records, _ = rendered
    objects = _k8s_objects(records)
    ksas = {s["metadata"]["name"]: s for s in _kind(objects, "ServiceAccount")}
    (rc,) = _kind(objects, "RayCluster")
    head = rc["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["serviceAccountName"] == "ray-train-head"
    assert head["automountServiceAccountToken"] is True  # the autoscaler calls the API
    assert rc["spec"]["autoscalerOptions"]["securityContext"]["allowPrivilegeEscalation"] is False
    for g in rc["spec"]["workerGroupSpecs"]:
        assert g["template"]["spec"]["serviceAccountName"] == "ray-train"
        assert g["template"]["spec"]["automountServiceAccountToken"] is False
    for job in _kind(objects, "RayJob"):
        sub = job["spec"]["submitterPodTemplate"]["spec"]
        assert sub["serviceAccountName"] == "ray-train" and not sub["automountServiceAccountToken"]
        own = job["spec"].get("rayClusterSpec")
        if own:  # the head's token only for the autoscaler (an elastic job's own cluster)
            token = own["headGroupSpec"]["template"]["spec"]["automountServiceAccountToken"]
            assert token is bool(own.get("enableInTreeAutoscaling"))
    gsa = "iam.gke.io/gcp-service-account"
    assert ksas["ray-train-head"]["metadata"]["annotations"][gsa].startswith("ray-train-head@")
    assert ksas["ray-train"]["metadata"]["annotations"][gsa].startswith("ray-train@")
    wi = {
        r["inputs"]["member"].split("[")[1].rstrip("]"): r["inputs"]["serviceAccountId"]
        for r in of_type(records, "gcp:serviceaccount/iAMMember:IAMMember")
    }
    assert wi["ray/ray-train-head"].split("/")[-1].startswith("ray-train-head@")
    assert wi["ray/ray-train"].split("/")[-1].startswith("ray-train@")


def test_namespace_psa_labels_quota_and_limit_range(rendered) -> None:
    _, records, _ = rendered
    objects = _k8s_objects(records)
    (ns,) = _kind(objects, "Namespace")
    labels = ns["metadata"]["labels"]
    for mode in ("enforce", "warn", "audit"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
        assert labels[f"pod-security.kubernetes.io/{mode}-version"]
    (quota,) = _kind(objects, "ResourceQuota")
    assert {"requests.cpu", "requests.memory", "limits.memory"} <= set(quota["spec"]["hard"])
    (lr,) = _kind(objects, "LimitRange")
    assert lr["spec"]["limits"][0]["defaultRequest"]["cpu"] == "100m"


def test_rendered_guard_objects_validate_against_the_kubernetes_schemas(rendered) -> None:
    _, records, _ = rendered
    objects = _k8s_objects(records)
    kinds = ("NetworkPolicy", "ResourceQuota", "LimitRange", "Namespace", "ServiceAccount")
    checked = [o for o in objects if o["kind"] in kinds]
    assert len(_kind(checked, "NetworkPolicy")) >= 5
    for o in checked:
        kubernetes_validate.validate(o, K8S_VERSION, strict=True)
    broken = copy.deepcopy(_kind(checked, "NetworkPolicy")[1])
    broken["spec"]["ingress"][0]["form"] = broken["spec"]["ingress"][0].pop("from")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


# ------------------------------------------------------------------------- weakened renders fail


@pytest.fixture(scope="module")
def prod_objects() -> list[dict[str, Any]]:
    from components.kuberay.namespace import namespace_manifest
    from components.raycrs.render import render_manifests
    from tests.components.kuberay.test_namespace import guards
    from tests.helpers import WORKING_DIR

    cfg = stack("prod")
    return [
        namespace_manifest(cfg.kuberay),
        *guards(cfg),
        *render_manifests(cfg, WORKING_DIR),
    ]


def _weaken(objects: list[dict], kind: str, fn) -> list[dict]:
    out = copy.deepcopy(objects)
    fn(next(o for o in out if o["kind"] == kind))
    return out


def test_ray_auth_fails_without_token_mode(prod_objects) -> None:
    assert check_ray_auth(prod_objects) == []
    weak = _weaken(prod_objects, "RayCluster", lambda o: o["spec"].pop("authOptions"))
    (line,) = check_ray_auth(weak)
    assert line.startswith("ray-auth: RayCluster ray/training: spec.authOptions.mode is None")
    own = next(o for o in prod_objects if o["kind"] == "RayJob" and "rayClusterSpec" in o["spec"])
    weak = copy.deepcopy(prod_objects)
    job = next(o for o in weak if o["metadata"]["name"] == own["metadata"]["name"])
    job["spec"]["rayClusterSpec"]["authOptions"]["mode"] = "disabled"
    (line,) = check_ray_auth(weak)
    assert "spec.rayClusterSpec.authOptions.mode is 'disabled'" in line


@pytest.mark.parametrize(
    ("weaken", "expected"),
    [
        (
            lambda rc: rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0][
                "securityContext"
            ].pop("allowPrivilegeEscalation"),
            "workerGroupSpecs[cpu].template container 'ray-worker': "
            "securityContext.allowPrivilegeEscalation is not false",
        ),
        (
            lambda rc: rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0][
                "securityContext"
            ].update(capabilities={"drop": ["NET_RAW"]}),
            "headGroupSpec.template container 'ray-head': securityContext.capabilities.drop",
        ),
        (
            lambda rc: rc["spec"]["autoscalerOptions"].pop("securityContext"),
            "autoscalerOptions (autoscaler sidecar): securityContext.allowPrivilegeEscalation",
        ),
        (
            lambda rc: rc["spec"]["workerGroupSpecs"][0]["template"]["spec"].update(
                automountServiceAccountToken=True
            ),
            "automountServiceAccountToken is not false (worker pods",
        ),
        (
            lambda rc: rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["volumes"][-1][
                "emptyDir"
            ].pop("sizeLimit"),
            "volume 'dshm': memory-backed emptyDir without sizeLimit",
        ),
        (
            lambda rc: rc["spec"]["workerGroupSpecs"][0]["template"]["spec"].update(
                serviceAccountName="ray-train-head"
            ),
            "runs as the head's service account 'ray-train-head'",
        ),
    ],
)
def test_pod_security_fails_each_weakening(prod_objects, weaken, expected) -> None:
    assert check_pod_security(prod_objects) == []
    lines = check_pod_security(_weaken(prod_objects, "RayCluster", weaken))
    assert lines and all(ln.startswith("pod-security: RayCluster ray/training") for ln in lines)
    assert any(expected in ln for ln in lines), lines


def test_pod_security_checks_submitters_and_the_namespace_label(prod_objects) -> None:
    def weaken(job):
        job["spec"]["submitterPodTemplate"]["spec"]["containers"][0].pop("securityContext")
        job["spec"]["submitterPodTemplate"]["spec"]["securityContext"].pop("seccompProfile")

    lines = check_pod_security(_weaken(prod_objects, "RayJob", weaken))
    assert any("spec.submitterPodTemplate container 'ray-job-submitter'" in ln for ln in lines)
    assert any("seccompProfile.type is None" in ln for ln in lines)
    weak = _weaken(
        prod_objects,
        "Namespace",
        lambda ns: ns["metadata"]["labels"].pop("pod-security.kubernetes.io/enforce"),
    )
    assert check_pod_security(weak) == [
        "pod-security: Namespace default/ray: label pod-security.kubernetes.io/enforce is None, "
        "not restricted or baseline"
    ]


def test_network_policy_fails_without_default_deny_or_cluster_policy(prod_objects) -> None:
    assert check_network_policy(prod_objects) == []
    no_deny = [o for o in prod_objects if o["metadata"]["name"] != "default-deny-ingress"]
    assert check_network_policy(no_deny) == [
        "network-policy: namespace ray: no default-deny ingress NetworkPolicy (empty "
        "podSelector, policyTypes [Ingress], no ingress rule)"
    ]
    no_head = [
        o
        for o in prod_objects
        if not (o["kind"] == "NetworkPolicy" and o["metadata"]["name"].startswith("training-"))
    ]
    (line,) = check_network_policy(no_head)
    assert line.startswith("network-policy: RayCluster ray/training: no NetworkPolicy selects")


def test_network_policy_fails_a_head_open_to_everyone(prod_objects) -> None:
    weak = copy.deepcopy(prod_objects)
    pol = next(o for o in weak if o["metadata"]["name"] == "training-ray-head")
    pol["spec"]["ingress"].append({"ports": [{"protocol": "TCP", "port": 8265}]})
    (line,) = check_network_policy(weak)
    assert line.startswith("network-policy: NetworkPolicy ray/training-ray-head opens the head")


def test_raygke_check_reports_the_rule_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import components.stack.checks as stack_checks

    cfg = stack("dev")
    assert [p for p in check_stack(cfg) if p.split(":")[0] in RULES] == []
    real = stack_checks.render_manifests

    def weakened(cfg, uri):
        out = real(cfg, uri)
        out[0]["spec"].pop("authOptions")
        return out

    monkeypatch.setattr(stack_checks, "render_manifests", weakened)
    assert any(p.startswith("ray-auth: RayCluster") for p in check_stack(cfg))
    assert security_problems([]) == []
