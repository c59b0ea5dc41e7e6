"""Pure builders of the Google Cloud Managed Service for Prometheus ``PodMonitoring`` objects
(``monitoring.googleapis.com/v1``) that scrape every Ray cluster and Serve service of a stack.

Rendered only with ``cluster.managed_prometheus: true`` (GKE's managed collection installs the
CRD and the collectors; https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed).
Schema: ``components/monitoring/crds/monitoring.googleapis.com_podmonitorings.yaml``.

What is scraped: every Ray pod's metrics agent on port 8080 — KubeRay's ``DefaultMetricsPort``
(constant.go), which the operator passes to ``ray start`` as ``--metrics-export-port`` on head and
workers when rayStartParams do not set it (``setMissingRayStartParams`` in
ray-operator/controllers/ray/common/pod.go; KubeRay's rayStartParams guide; the head container
also declares it as port ``metrics``, HEAD_PORTS in :mod:`components.kernel.ray`;
https://docs.ray.io/en/latest/cluster/kubernetes/k8s-ecosystem/prometheus-grafana.html).
Ray's system metrics and the metrics of
Ray Serve (``ray_serve_*``: requests, latency, replicas; https://docs.ray.io/en/latest/serve/monitoring.html#built-in-ray-serve-metrics)
are exported there, by the node a process runs on. Selectors: ``ray.io/cluster: <name>`` (the
label KubeRay puts on a RayCluster's pods) for a long-lived RayCluster; ``ray-gke/service:
<name>`` (:data:`components.kernel.ray.SERVICE_LABEL`, set by :mod:`components.raycrs.serve` on the pod templates) for a service, whose
RayCluster name is generated and changes on every upgrade; ``ray-gke.io/job-cluster: <job>``
(:data:`components.kernel.ray.JOB_CLUSTER_LABEL`, set on the head and worker templates
of the job's ``rayClusterSpec``) for the RayCluster a RayJob with ``node_pool:`` brings.

A RayJob's own cluster: KubeRay names it ``<job>-<5 random chars>``
(``GenerateRayClusterName`` in ray-operator/controllers/ray/utils/util.go), so ``ray.io/cluster``
cannot be known at render time. KubeRay labels that RayCluster *object*
``ray.io/originated-from-crd: RayJob`` / ``ray.io/originated-from-cr-name: <job>``
(``constructRayClusterForRayJob`` in ray-operator/controllers/ray/rayjob_controller.go; keys in
utils/constant.go), but those labels do not reach its pods: a Ray pod's labels are its
template's labels plus KubeRay's fixed ``ray.io/cluster`` / ``ray.io/node-type`` /
``ray.io/group`` / ``ray.io/is-ray-node`` / ``ray.io/identifier`` / ``app.kubernetes.io/name`` /
``app.kubernetes.io/created-by`` (``labelPod`` in ray-operator/controllers/ray/common/pod.go,
called by ``DefaultHeadPodTemplate`` / ``DefaultWorkerPodTemplate`` with the template labels;
KubeRay only passes the originated-from pair to the containers as ``OWNER_KIND`` /
``OWNER_NAME`` env). So the selector is our own template label. One PodMonitoring per job, not
one for all job clusters: the same shape as the per-cluster monitors and NetworkPolicies, each
job's monitor comes and goes with the job's stack entry, and its series carry the job's name as
``ray_job`` (``targetLabels.fromPod`` copies ``ray-gke.io/job-cluster``), so two jobs'
metrics are told apart although their RayCluster names are random. The ``<name>-ray``
NetworkPolicy of each Ray cluster, job clusters included
(:func:`components.kuberay.namespace.network_policies`), opens 8080 to the ``gke-gmp-system``
namespace, where GKE runs the managed collectors
(:data:`components.kuberay.namespace.GMP_NAMESPACE`).
"""

from __future__ import annotations

from typing import Any

from components.config.stack import StackConfig
from components.kernel.ray import (
    CLUSTER_LABEL,
    JOB_CLUSTER_LABEL,
    METRICS_PORT,
    PART_OF,
    SERVICE_LABEL,
)
from components.plan.plan import plan

API_VERSION = "monitoring.googleapis.com/v1"
SCRAPE_INTERVAL = "30s"
# Pod labels copied onto the scraped series: head or worker, and the worker group
# (constant.go RayNodeTypeLabelKey, RayNodeGroupLabelKey).
TARGET_LABELS = [
    {"from": "ray.io/node-type", "to": "ray_node_type"},
    {"from": "ray.io/group", "to": "ray_group"},
]


# Also copied from a RayJob's own cluster's pods: the job's name.
JOB_TARGET_LABEL = {"from": JOB_CLUSTER_LABEL, "to": "ray_job"}


def pod_monitoring(
    namespace: str,
    name: str,
    selector: dict[str, str],
    extra_target_labels: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """One PodMonitoring ``<name>`` in the KubeRay namespace ``namespace`` scraping ``/metrics`` on port 8080
    every 30 s of the pods matching ``selector``, copying :data:`TARGET_LABELS` (and
    ``extra_target_labels``) from the pod onto its series."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitoring",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/part-of": PART_OF,
                "app.kubernetes.io/managed-by": "pulumi",
            },
        },
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "endpoints": [{"port": METRICS_PORT, "path": "/metrics", "interval": SCRAPE_INTERVAL}],
            "targetLabels": {
                "fromPod": [dict(t) for t in [*TARGET_LABELS, *(extra_target_labels or [])]]
            },
        },
    }


def render_monitoring(cfg: StackConfig) -> list[dict[str, Any]]:
    """``<cluster>-ray-metrics`` per RayCluster, then ``<service>-ray-metrics`` per service, then
    ``<job>-ray-metrics`` per RayJob that brings its own cluster (``node_pool:``; each group
    sorted by name); none without ``cluster.managed_prometheus``. Jobs on a long-lived cluster
    (``cluster:``) are scraped by that cluster's monitor."""
    if not cfg.cluster.managed_prometheus:
        return []
    ns = plan(cfg).context.namespace_of  # a gpudirect pool's clusters are in their own namespace
    out = [
        pod_monitoring(ns(rc.name), f"{rc.name}-ray-metrics", {CLUSTER_LABEL: rc.name})
        for rc in sorted(cfg.ray_clusters, key=lambda c: c.name)
    ]
    out += [
        pod_monitoring(ns(s.name), f"{s.name}-ray-metrics", {SERVICE_LABEL: s.name})
        for s in sorted(cfg.services, key=lambda s: s.name)
    ]
    out += [
        pod_monitoring(
            ns(j.name),
            f"{j.name}-ray-metrics",
            {JOB_CLUSTER_LABEL: j.name},
            [JOB_TARGET_LABEL],
        )
        for j in sorted(cfg.jobs, key=lambda j: j.name)
        if not j.cluster
    ]
    return out
