"""Pure builders of the Google Cloud Managed Service for Prometheus ``PodMonitoring`` objects
(``monitoring.googleapis.com/v1``) that scrape every Ray cluster and Serve service of a stack.

Rendered only with ``cluster.managed_prometheus: true`` (GKE's managed collection installs the
CRD and the collectors; https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed).
Schema: ``components/checks/crds/gmp/monitoring.googleapis.com_podmonitorings.yaml``.

What is scraped: every Ray pod's metrics agent on port 8080 — KubeRay's ``DefaultMetricsPort``
(constant.go), which the operator passes to ``ray start`` as ``--metrics-export-port`` on head and
workers when rayStartParams do not set it (``setMissingRayStartParams`` in
ray-operator/controllers/ray/common/pod.go; KubeRay's rayStartParams guide; the head container
also declares it as port ``metrics``, HEAD_PORTS in :mod:`components.builders.manifests`;
https://docs.ray.io/en/latest/cluster/kubernetes/k8s-ecosystem/prometheus-grafana.html).
Ray's system metrics and the metrics of
Ray Serve (``ray_serve_*``: requests, latency, replicas; https://docs.ray.io/en/latest/serve/monitoring.html#built-in-ray-serve-metrics)
are exported there, by the node a process runs on. Selectors: ``ray.io/cluster: <name>`` (the
label KubeRay puts on a RayCluster's pods) for a long-lived RayCluster; ``ray-gke/service:
<name>`` (set by :mod:`components.builders.serve` on the pod templates) for a service, whose
RayCluster name is generated and changes on every upgrade. The NetworkPolicy opens 8080 to the
``gmp-system`` namespace, where the managed collectors run. RayJobs' own clusters are not
scraped (short-lived).
"""

from __future__ import annotations

from typing import Any

from components.builders.manifests import PART_OF
from components.builders.serve import SERVICE_LABEL
from components.spec import StackConfig

API_VERSION = "monitoring.googleapis.com/v1"
METRICS_PORT = 8080  # KubeRay constant.go DefaultMetricsPort
SCRAPE_INTERVAL = "30s"
CLUSTER_LABEL = "ray.io/cluster"  # constant.go RayClusterLabelKey
# Pod labels copied onto the scraped series: head or worker, and the worker group
# (constant.go RayNodeTypeLabelKey, RayNodeGroupLabelKey).
TARGET_LABELS = [
    {"from": "ray.io/node-type", "to": "ray_node_type"},
    {"from": "ray.io/group", "to": "ray_group"},
]


def pod_monitoring(cfg: StackConfig, name: str, selector: dict[str, str]) -> dict[str, Any]:
    """One PodMonitoring ``<name>`` in the KubeRay namespace scraping ``/metrics`` on port 8080
    every 30 s of the pods matching ``selector``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitoring",
        "metadata": {
            "name": name,
            "namespace": cfg.kuberay.namespace,
            "labels": {
                "app.kubernetes.io/part-of": PART_OF,
                "app.kubernetes.io/managed-by": "pulumi",
            },
        },
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "endpoints": [{"port": METRICS_PORT, "path": "/metrics", "interval": SCRAPE_INTERVAL}],
            "targetLabels": {"fromPod": [dict(t) for t in TARGET_LABELS]},
        },
    }


def render_monitoring(cfg: StackConfig) -> list[dict[str, Any]]:
    """``<cluster>-ray-metrics`` per RayCluster, then ``<service>-ray-metrics`` per service
    (each sorted by name); none without ``cluster.managed_prometheus``."""
    if not cfg.cluster.managed_prometheus:
        return []
    out = [
        pod_monitoring(cfg, f"{rc.name}-ray-metrics", {CLUSTER_LABEL: rc.name})
        for rc in sorted(cfg.ray_clusters, key=lambda c: c.name)
    ]
    out += [
        pod_monitoring(cfg, f"{s.name}-ray-metrics", {SERVICE_LABEL: s.name})
        for s in sorted(cfg.services, key=lambda s: s.name)
    ]
    return out
