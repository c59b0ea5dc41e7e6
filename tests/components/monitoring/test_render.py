"""Managed Prometheus PodMonitorings of the RayClusters RayJobs bring (``node_pool:`` jobs):
their selectors match the labels KubeRay gives those pods, they validate against the carried GMP
CRD, and the NetworkPolicies let the ``gmp-system`` collectors reach the metrics port."""

from __future__ import annotations

from typing import Any

from components.kernel.ray import METRICS_PORT
from components.kuberay.namespace import GMP_NAMESPACE, NS_NAME_LABEL
from components.monitoring.render import render_monitoring
from components.plan.plan import plan
from components.raycrs.crd import validate_other
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.components.kuberay.test_namespace import policies as network_policies
from tests.helpers import WORKING_DIR, config, stack


def kuberay_pod_labels(
    template: dict[str, Any], cluster: str, node_type: str, group: str
) -> dict[str, str]:
    """The labels KubeRay v1.7.0 gives a Ray pod built from ``template``: ``labelPod`` in
    ray-operator/controllers/ray/common/pod.go (its fixed labels, the template's labels on top,
    except ``ray.io/node-type`` / ``ray.io/group`` / ``ray.io/cluster``, which are not
    overridable). The RayCluster object's own labels (``ray.io/originated-from-*``) are not
    copied to pods."""
    fixed = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": cluster,
        "ray.io/node-type": node_type,
        "ray.io/group": group,
        "ray.io/identifier": f"{cluster}-{node_type}",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    own = (template.get("metadata") or {}).get("labels") or {}
    keep = ("ray.io/node-type", "ray.io/group", "ray.io/cluster")
    return {**fixed, **{k: v for k, v in own.items() if k not in keep}}


def job_cluster_pods(job: dict[str, Any]) -> list[dict[str, str]]:
    """Labels of the head and of each worker group's pods of the RayCluster KubeRay creates for
    RayJob ``job``, named ``<job>-<5 random chars>`` (``GenerateRayClusterName``, utils/util.go)."""
    cluster = f"{job['metadata']['name']}-x7k2q"
    spec = job["spec"]["rayClusterSpec"]
    pods = [kuberay_pod_labels(spec["headGroupSpec"]["template"], cluster, "head", "headgroup")]
    for g in spec["workerGroupSpecs"]:
        pods.append(kuberay_pod_labels(g["template"], cluster, "worker", g["groupName"]))
    return pods


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}  # all our selectors are plain matchLabels
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def _own_cluster_jobs(cfg: Any) -> list[dict[str, Any]]:
    return [
        m
        for m in render_manifests(cfg, WORKING_DIR)
        if m["kind"] == "RayJob" and "rayClusterSpec" in m["spec"]
    ]


def test_each_rayjob_cluster_is_scraped_by_its_own_pod_monitoring() -> None:
    cfg = stack("prod")
    jobs = _own_cluster_jobs(cfg)
    assert [j["metadata"]["name"] for j in jobs] == [
        "finetune-llama-h100",
        "prepare-corpus",
        "tokenize-llama",
        "train-lm-h100",
        "train-lm-jax-v6e",
    ]  # prod queues every RayJob, each with its own cluster (Kueue needs that)
    monitors = render_monitoring(plan(cfg), cfg.cluster)
    for job in jobs:
        name = job["metadata"]["name"]
        (monitor,) = [m for m in monitors if m["metadata"]["name"] == f"{name}-ray-metrics"]
        assert validate_other(monitor) == []
        assert monitor["spec"]["endpoints"][0]["port"] == METRICS_PORT == 8080
        assert {"from": "ray-gke.io/job-cluster", "to": "ray_job"} in monitor["spec"][
            "targetLabels"
        ]["fromPod"]
        pods = job_cluster_pods(job)
        assert len(pods) == 2  # head + the one worker group
        for labels in pods:
            assert _selects(monitor["spec"]["selector"], labels), labels
            # KubeRay's labels on the RayCluster object never reach the pods: a selector on
            # them would match nothing.
            assert "ray.io/originated-from-cr-name" not in labels


def test_job_monitors_do_not_select_other_jobs_clusters() -> None:
    jobs = [
        {"name": "train-a", "workload": "train_lm", "node_pool": "cpu"},
        {"name": "train-b", "workload": "train_lm", "node_pool": "cpu"},
    ]
    identities = [
        {
            "name": "ray-train",
            "buckets": {"datasets": "read", "checkpoints": "write", "artifacts": "read"},
        }
    ]
    cfg = validate(config(jobs=jobs, workload_identities=identities))
    monitors = {m["metadata"]["name"]: m for m in render_monitoring(plan(cfg), cfg.cluster)}
    assert sorted(monitors) == ["train-a-ray-metrics", "train-b-ray-metrics"]
    for job in _own_cluster_jobs(cfg):
        name = job["metadata"]["name"]
        for labels in job_cluster_pods(job):
            selecting = [n for n, m in monitors.items() if _selects(m["spec"]["selector"], labels)]
            assert selecting == [f"{name}-ray-metrics"]


def test_jobs_on_a_long_lived_cluster_get_no_monitor_of_their_own() -> None:
    dev = stack("dev")
    names = [m["metadata"]["name"] for m in render_monitoring(plan(dev), dev.cluster)]
    assert "prepare-stdlib-ray-metrics" not in names  # runs on `research`, scraped there
    assert "train-lm-jax-v5e-ray-metrics" not in names
    assert "research-ray-metrics" in names


def test_gmp_collectors_may_reach_the_metrics_port_of_job_cluster_pods() -> None:
    cfg = stack("prod")
    policies = network_policies(cfg)
    gmp_peer = {"namespaceSelector": {"matchLabels": {NS_NAME_LABEL: GMP_NAMESPACE}}}
    for job in _own_cluster_jobs(cfg):
        for labels in job_cluster_pods(job):
            allowed = [
                p["metadata"]["name"]
                for p in policies
                if p["spec"]["podSelector"]
                and _selects(p["spec"]["podSelector"], labels)
                and any(
                    gmp_peer in rule.get("from", [])
                    and {"protocol": "TCP", "port": METRICS_PORT} in rule.get("ports", [])
                    for rule in p["spec"].get("ingress", [])
                )
            ]
            assert allowed == [f"{job['metadata']['name']}-ray"], labels
