"""Ray's dashboards in Cloud Monitoring: pure builders of the ``dashboard_json`` of the
``gcp.monitoring.Dashboard`` resources a stack creates (:func:`dashboards`, :func:`dashboard_json`;
URLs: :func:`dashboard_url`): Ray's Grafana panels as tiles running their PromQL against Managed
Service for Prometheus. Sources: docs/sources.md#monitoring-dashboards
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig
    from components.plan.plan import Plan

CONSOLE = "https://console.cloud.google.com/monitoring/dashboards/builder"


def _tile(title: str, promql: str, x: int, y: int, unit: str = "") -> dict[str, Any]:
    chart: dict[str, Any] = {
        "dataSets": [
            {"timeSeriesQuery": {"prometheusQuery": promql}, "plotType": "LINE"},
        ],
        "timeshiftDuration": "0s",
        "yAxis": {"scale": "LINEAR", **({"label": unit} if unit else {})},
    }
    return {
        "xPos": x,
        "yPos": y,
        "width": 6,
        "height": 4,
        "widget": {"title": title, "xyChart": chart},
    }


def _grid(panels: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [
        _tile(title, q, (i % 2) * 6, (i // 2) * 4, unit)
        for i, (title, q, unit) in enumerate(panels)
    ]


def _namespace_matcher(namespace: str) -> str:
    """The PromQL matcher of ``namespace``: ``namespace="ray"``, or for several, joined by
    ``|`` (the Ray namespace and its ``-gpudirect`` one), ``namespace=~"ray|ray-gpudirect"``."""
    return f'namespace=~"{namespace}"' if "|" in namespace else f'namespace="{namespace}"'


def cluster_panels(namespace: str) -> list[tuple[str, str, str]]:
    """``(title, PromQL, unit)`` of the "Ray cluster" dashboard, after Ray's default Grafana
    dashboard (default_dashboard_panels.py: node CPU, memory, GPU, object store, tasks, actors),
    by Ray cluster (``ray_io_cluster``, the pod label ``ray.io/cluster``) in ``namespace``
    (several joined by ``|``)."""
    ns = _namespace_matcher(namespace)
    return [
        (
            "Node CPU utilization (%)",
            f"avg by (ray_io_cluster) (ray_node_cpu_utilization{{{ns}}})",
            "%",
        ),
        ("Node memory used (bytes)", f"sum by (ray_io_cluster) (ray_node_mem_used{{{ns}}})", "By"),
        (
            "GPU utilization (%)",
            f"avg by (ray_io_cluster) (ray_node_gpus_utilization{{{ns}}})",
            "%",
        ),
        (
            "Object store memory (bytes)",
            f"sum by (ray_io_cluster, Location) (ray_object_store_memory{{{ns}}})",
            "By",
        ),
        ("Tasks by state", f"sum by (ray_io_cluster, State) (ray_tasks{{{ns}}})", ""),
        ("Actors by state", f"sum by (ray_io_cluster, State) (ray_actors{{{ns}}})", ""),
        (
            "Resources used (CPU, GPU, TPU)",
            f'sum by (ray_io_cluster, Name) (ray_resources{{{ns},State="USED"}})',
            "",
        ),
        ("Nodes alive", f"count by (ray_io_cluster) (ray_node_cpu_count{{{ns}}})", ""),
    ]


def serve_panels(namespace: str) -> list[tuple[str, str, str]]:
    """``(title, PromQL, unit)`` of the "Ray Serve" dashboard, after Ray's Serve Grafana dashboard
    (serve_dashboard_panels.py: QPS, errors, P50/P99 latency, replicas) per application."""
    ns = _namespace_matcher(namespace)
    lat = f"ray_serve_http_request_latency_ms_bucket{{{ns}}}"
    return [
        (
            "Requests per second",
            f"sum by (application) (rate(ray_serve_num_http_requests_total{{{ns}}}[5m]))",
            "1/s",
        ),
        (
            "Errors per second",
            f"sum by (application) (rate(ray_serve_num_http_error_requests_total{{{ns}}}[5m]))",
            "1/s",
        ),
        (
            "P50 latency (ms)",
            f"histogram_quantile(0.5, sum by (application, le) (rate({lat}[5m])))",
            "ms",
        ),
        (
            "P99 latency (ms)",
            f"histogram_quantile(0.99, sum by (application, le) (rate({lat}[5m])))",
            "ms",
        ),
        (
            "Healthy replicas",
            f"sum by (application, deployment) (ray_serve_deployment_replica_healthy{{{ns}}})",
            "",
        ),
        (
            "Ongoing requests per replica",
            f"avg by (application, deployment) (ray_serve_replica_processing_queries{{{ns}}})",
            "",
        ),
    ]


def dashboards(p: Plan, cluster: ClusterConfig) -> dict[str, dict[str, Any]]:
    """``{key: dashboard JSON object}`` for the stack of plan ``p``: ``ray-cluster`` always and
    ``ray-serve`` with services, empty without ``cluster.managed_prometheus`` (``cluster``: the
    ``cluster`` block). Display names carry the cluster name, so two stacks in one project keep
    apart."""
    if not cluster.managed_prometheus:
        return {}
    ns = p.context.namespace
    matched = "|".join(p.context.namespaces)  # with the gpudirect namespace, both
    out = {
        "ray-cluster": {
            "displayName": f"Ray cluster ({cluster.name}/{ns})",
            "mosaicLayout": {"columns": 12, "tiles": _grid(cluster_panels(matched))},
        }
    }
    if p.services:
        out["ray-serve"] = {
            "displayName": f"Ray Serve ({cluster.name}/{ns})",
            "mosaicLayout": {"columns": 12, "tiles": _grid(serve_panels(matched))},
        }
    return out


def dashboard_json(doc: dict[str, Any]) -> str:
    """The ``dashboard_json`` input: the dashboard as sorted, compact JSON (stable bytes)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def dashboard_url(dashboard_id: str, project: str) -> str:
    """The Cloud Console URL of a dashboard from its resource id
    (``projects/<number>/dashboards/<id>``, the provider's id): ``<CONSOLE>/<id>?project=<p>``."""
    return f"{CONSOLE}/{dashboard_id.rsplit('/', 1)[-1]}?project={project}"
