"""The Ray namespace's guard rails (components/kuberay/namespace.py) and the naming of the
heads' own accounts."""

from __future__ import annotations

import kubernetes_validate
import pytest

from components.cluster.render import nap_resource_limits
from components.kernel.base import StackConfigError
from components.kuberay.namespace import (
    limit_range,
    namespace_manifests,
    namespace_objects,
    network_policies,
    psa_labels,
    ray_cluster_selectors,
    resource_quota,
)
from components.plan.naming import head_account_id, workload_accounts
from components.plan.plan import plan
from components.plan.resolve import nap_needs
from components.stack.loader import validate
from tests.helpers import config, stack

RC = {"name": "rc", "worker_groups": [{"name": "cpu", "node_pool": "cpu"}]}
JOBS = [
    {"name": "on-rc", "workload": "train_lm", "cluster": "rc", "worker_group": "cpu"},
    {"name": "own", "workload": "train_lm", "node_pool": "cpu"},
]


def policies(cfg, namespace=None):
    """:func:`network_policies` of ``cfg``."""
    return network_policies(plan(cfg), cfg.kuberay, cfg.network.master_ipv4_cidr, namespace)


def quota(cfg, namespace=None):
    """:func:`resource_quota` of ``cfg`` (its NAP limits)."""
    limits = nap_resource_limits(
        cfg.nap.effective_limits, nap_needs(cfg.cluster.system_pool, cfg.node_pools)
    )
    return resource_quota(cfg.kuberay, limits, namespace)


def namespaces(cfg):
    """:func:`namespace_manifests` of ``cfg``."""
    return namespace_manifests(plan(cfg).context, cfg.kuberay)


def guards(cfg):
    """:func:`namespace_objects` of ``cfg``."""
    limits = nap_resource_limits(
        cfg.nap.effective_limits, nap_needs(cfg.cluster.system_pool, cfg.node_pools)
    )
    return namespace_objects(plan(cfg), cfg.kuberay, cfg.network.master_ipv4_cidr, limits)


def _cfg(**kuberay):
    return validate(config(ray_clusters=[RC], jobs=JOBS, kuberay={"mode": "helm", **kuberay}))


def _pol(policies, name):
    return next(p for p in policies if p["metadata"]["name"] == name)


def test_policies_per_cluster_and_default_deny():
    pols = policies(_cfg())
    assert [p["metadata"]["name"] for p in pols] == [
        "default-deny-ingress",
        "own-ray",
        "own-ray-head",
        "rc-ray",
        "rc-ray-head",
    ]
    deny = pols[0]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert ray_cluster_selectors(plan(_cfg())) == {
        "rc": {"ray.io/cluster": "rc"},
        "own": {"ray-gke.io/job-cluster": "own"},
    }
    rc = _pol(pols, "rc-ray")["spec"]
    assert rc["podSelector"] == {"matchLabels": {"ray.io/cluster": "rc"}}
    own_pods, gmp = rc["ingress"]
    assert own_pods == {"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rc"}}}]}
    assert gmp["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gke-gmp-system"}}}
    ]
    assert gmp["ports"] == [{"protocol": "TCP", "port": 8080}]
    for p in pols:
        kubernetes_validate.validate(p, "1.35", strict=True)


def test_head_ports_only_from_operator_and_own_submitters():
    head = _pol(policies(_cfg()), "rc-ray-head")["spec"]
    assert head["podSelector"] == {
        "matchLabels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"}
    }
    (rule,) = head["ingress"]
    assert [p["port"] for p in rule["ports"]] == [6379, 8265, 10001]
    assert rule["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}}},
        {"podSelector": {"matchLabels": {"ray-gke.io/submits-to": "rc"}}},
    ]
    # the GKE add-on runs the operator off the cluster's nodes: the control plane's range
    addon = validate(config(ray_clusters=[RC], kuberay={"mode": "gke-addon"}))
    (rule,) = _pol(policies(addon), "rc-ray-head")["spec"]["ingress"]
    assert rule["from"][0] == {"ipBlock": {"cidr": addon.network.master_ipv4_cidr}}


def test_serve_port_only_from_the_named_namespaces_and_cidrs():
    assert all(
        8000 not in [p["port"] for r in pol["spec"].get("ingress", []) for p in r.get("ports", [])]
        for pol in policies(_cfg())
    )
    cfg = _cfg(serve_from={"namespaces": ["gateway"], "cidrs": ["10.128.0.0/16"]})
    rule = _pol(policies(cfg), "rc-ray")["spec"]["ingress"][-1]
    assert rule == {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}},
            {"ipBlock": {"cidr": "10.128.0.0/16"}},
        ],
        "ports": [{"protocol": "TCP", "port": 8000}],
    }


def test_submitter_and_own_cluster_pods_carry_the_selected_labels():
    from components.raycrs.render import render_manifests
    from tests.helpers import WORKING_DIR

    by = {m["metadata"]["name"]: m for m in render_manifests(_cfg(), WORKING_DIR)}
    sub = by["on-rc"]["spec"]["submitterPodTemplate"]["metadata"]["labels"]
    assert sub["ray-gke.io/submits-to"] == "rc"
    own = by["own"]["spec"]
    assert own["submitterPodTemplate"]["metadata"]["labels"]["ray-gke.io/submits-to"] == "own"
    head = own["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"]["labels"]
    worker = own["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["metadata"]["labels"]
    assert head["ray-gke.io/job-cluster"] == worker["ray-gke.io/job-cluster"] == "own"


def test_quota_follows_nap_limits_unless_set():
    cfg = stack("prod")
    assert quota(cfg)["spec"]["hard"] == {
        "requests.cpu": "4096",
        "requests.memory": "20480Gi",
        "limits.memory": "20480Gi",
        "requests.nvidia.com/gpu": "36",  # 32 H100 + 4 L4 (the l4-serve pool)
        "requests.google.com/tpu": "64",
    }
    # TPU7x's resource-limit type is ``tpu7x`` (no ``tpu-`` prefix): its chips count too
    hard = quota(stack("scale"))["spec"]["hard"]
    assert hard["requests.google.com/tpu"] == "128" and hard["requests.nvidia.com/gpu"] == "32"
    cfg = _cfg(quota={"cpu": "500", "memory": "2Ti", "gpus": 2, "tpus": 0, "pods": 300})
    assert quota(cfg)["spec"]["hard"] == {
        "requests.cpu": "500",
        "requests.memory": "2Ti",
        "limits.memory": "2Ti",
        "requests.nvidia.com/gpu": "2",
        "requests.google.com/tpu": "0",
        "pods": "300",
    }
    lr = limit_range(_cfg(limit_range={"default_cpu": "2", "default_request_cpu": "250m"}).kuberay)
    assert lr["spec"]["limits"][0]["default"] == {"cpu": "2", "memory": "1Gi"}
    assert lr["spec"]["limits"][0]["defaultRequest"] == {"cpu": "250m", "memory": "256Mi"}
    kubernetes_validate.validate(quota(cfg), "1.35", strict=True)
    kubernetes_validate.validate(lr, "1.35", strict=True)


@pytest.mark.parametrize(
    ("kuberay", "line"),
    [
        (
            {"serve_from": {"cidrs": ["10.0.0.1/8"]}},
            "kuberay.serve_from.cidrs entry '10.0.0.1/8' has host bits set; the network is 10.0.0.0/8",
        ),
        (
            {"serve_from": {"namespaces": ["Gateway"]}},
            "kuberay.serve_from.namespaces entry 'Gateway' is not a valid Kubernetes name",
        ),
        ({"quota": {"cpu": "lots"}}, "kuberay.quota.cpu 'lots' is not a Kubernetes quantity"),
        (
            {"limit_range": {"default_request_memory": "2Gi"}},
            "kuberay.limit_range.default_request_memory 2Gi is above default_memory 1Gi",
        ),
    ],
)
def test_bad_guard_config_is_one_clear_line(kuberay, line):
    with pytest.raises(StackConfigError) as e:
        validate(config(kuberay=kuberay))
    assert any(line in p for p in e.value.problems), e.value.problems
    assert "Traceback" not in str(e.value)


def test_psa_labels_and_head_accounts():
    assert psa_labels()["pod-security.kubernetes.io/enforce"] == "restricted"
    assert psa_labels()["pod-security.kubernetes.io/audit"] == "restricted"
    assert head_account_id("ray-train") == "ray-train-head"
    long = "a" * 28
    short = head_account_id(long)
    assert len(short) <= 30 and short.endswith("-head") and short != head_account_id("a" * 27)
    accts = workload_accounts(stack("dev").workload_identities)
    assert [(a.name, a.role) for a in accts][:2] == [
        ("ray-train", "workers"),
        ("ray-train-head", "head"),
    ]


def test_in_cluster_client_env_reads_the_cluster_secret():
    from components.kernel.ray import auth_client_env, auth_options

    env = auth_client_env("rc")
    assert env[0] == {"name": "RAY_AUTH_MODE", "value": "token"}
    ref = env[1]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": auth_options("rc")["secretName"], "key": "auth_token"}


def test_pod_security_enforce_level_from_config():
    from components.kuberay.namespace import namespace_manifest

    labels = namespace_manifest(_cfg(pod_security="baseline").kuberay)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    with pytest.raises(StackConfigError) as e:
        validate(config(kuberay={"pod_security": "privileged"}))
    assert any("kuberay.pod_security" in p for p in e.value.problems), e.value.problems


@pytest.mark.parametrize("mode", ["helm", "gke-addon"])
def test_operator_reaches_a_rayservice_heads_serve_port_for_its_health_probe(mode):
    """KubeRay's RayService controller GETs ``http://<head IP>:8000/-/healthz``
    (CheckProxyActorHealth, ray-operator/controllers/ray/utils/httpproxy_httpclient.go) and only
    then labels the head to serve; the head policy admits the operator there, and only there."""
    svc = {"name": "lm", "checkpoint": "gs://x/y", "node_pool": "l4"}
    cfg = validate(config(ray_clusters=[RC], services=[svc], kuberay={"mode": mode}))
    pols = policies(cfg)
    operator = (
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}}}
        if mode == "helm"
        else {"ipBlock": {"cidr": cfg.network.master_ipv4_cidr}}
    )
    rules = _pol(pols, "lm-ray-head")["spec"]["ingress"]
    assert {"from": [operator], "ports": [{"protocol": "TCP", "port": 8000}]} in rules
    # a plain RayCluster's head serves nothing: its port 8000 stays closed to the operator
    assert all(
        8000 not in [p["port"] for p in r["ports"]]
        for r in _pol(pols, "rc-ray-head")["spec"]["ingress"]
    )
    for pol in pols:  # still valid NetworkPolicy objects
        kubernetes_validate.validate(pol, "1.35", strict=True)
