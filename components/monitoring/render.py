"""Pure builders of the Managed Service for Prometheus ``PodMonitoring`` objects
(``monitoring.googleapis.com/v1``) scraping every Ray cluster, job and service of a stack on the
metrics port 8080: :func:`render_monitoring` (only with ``cluster.managed_prometheus: true``).
Schema: ``components/monitoring/crds/monitoring.googleapis.com_podmonitorings.yaml``.
Sources (the port, the labels KubeRay puts on a job's pods): docs/sources.md#monitoring-render
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.kernel.ray import (
    CLUSTER_LABEL,
    JOB_CLUSTER_LABEL,
    METRICS_PORT,
    PART_OF,
    SERVICE_LABEL,
)

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig
    from components.plan.plan import Plan

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


def render_monitoring(p: Plan, cluster: ClusterConfig) -> list[dict[str, Any]]:
    """``<cluster>-ray-metrics`` per RayCluster, then ``<service>-ray-metrics`` per service, then
    ``<job>-ray-metrics`` per RayJob that brings its own cluster (``node_pool:``; each group
    sorted by name) of plan ``p``; none without ``cluster.managed_prometheus`` (``cluster``: the
    ``cluster`` block). Jobs on a long-lived cluster (``cluster:``) are scraped by that cluster's
    monitor.

    Selectors: ``ray.io/cluster: <name>`` for a RayCluster; ``ray-gke/service: <name>``
    (:data:`components.kernel.ray.SERVICE_LABEL`, set by :mod:`components.raycrs.serve`) for a
    service, whose RayCluster name changes on every upgrade; ``ray-gke.io/job-cluster: <job>``
    (:data:`components.kernel.ray.JOB_CLUSTER_LABEL`) for a job's own RayCluster, whose name is
    random, its series labelled ``ray_job``. The ``<name>-ray`` NetworkPolicies open 8080 to
    ``gke-gmp-system`` (:data:`components.kuberay.namespace.GMP_NAMESPACE`)."""
    if not cluster.managed_prometheus:
        return []
    ns = p.context.namespace_of  # a gpudirect pool's clusters are in their own namespace
    out = [
        pod_monitoring(ns(rc.name), f"{rc.name}-ray-metrics", {CLUSTER_LABEL: rc.name})
        for rc in sorted(p.clusters.values(), key=lambda c: c.name)
    ]
    out += [
        pod_monitoring(ns(s.name), f"{s.name}-ray-metrics", {SERVICE_LABEL: s.name})
        for s in sorted((s for s, _ in p.services), key=lambda s: s.name)
    ]
    out += [
        pod_monitoring(
            ns(j.name),
            f"{j.name}-ray-metrics",
            {JOB_CLUSTER_LABEL: j.name},
            [JOB_TARGET_LABEL],
        )
        for j in sorted((t.job for t in p.jobs), key=lambda j: j.name)
        if not j.cluster
    ]
    return out
