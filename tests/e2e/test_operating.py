"""Issue 22 item 7: operating it - the GKE Ray add-on's log and metric collection, Ray's
dashboards in Cloud Monitoring as stack resources with their URLs in the outputs (image
streaming on accelerator pools: tests/e2e/test_upgrades.py)."""

from __future__ import annotations

import copy
import json

from components.monitoring.dashboards import CONSOLE
from raygke import synth as rsynth
from tests.e2e.day2 import ROOT, stack_data

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"


def _run(data: dict) -> tuple[list[dict], dict]:
    entries = rsynth.read_stack_config(ROOT / "Pulumi.prod.yaml")
    gcp = {k.split(":", 1)[1]: v for k, v in entries.items() if k.startswith("gcp:")}
    return rsynth.run_program(rsynth.config_entries(data, gcp), "prod")


def test_ray_dashboards_are_stack_resources_with_urls_in_the_outputs() -> None:
    records, outputs = _run(copy.deepcopy(stack_data("prod")))
    boards = {r["name"]: r for r in records if r["type"] == DASHBOARD}
    assert set(boards) == {"monitoring-ray-cluster", "monitoring-ray-serve"}
    serve = json.loads(boards["monitoring-ray-serve"]["inputs"]["dashboardJson"])
    assert serve["displayName"] == "Ray Serve (ray-prod/ray)"
    queries = [
        ds["timeSeriesQuery"]["prometheusQuery"]
        for t in serve["mosaicLayout"]["tiles"]
        for ds in t["widget"]["xyChart"]["dataSets"]
    ]
    assert any("ray_serve_http_request_latency_ms_bucket" in q for q in queries)
    assert all('namespace="ray"' in q for q in queries)
    cluster = json.loads(boards["monitoring-ray-cluster"]["inputs"]["dashboardJson"])
    assert len(cluster["mosaicLayout"]["tiles"]) == 8
    assert boards["monitoring-ray-cluster"]["inputs"]["project"] == "ray-gke-prod"
    urls = outputs["dashboards"]
    assert set(urls) == {"ray-cluster", "ray-serve"}
    for url in urls.values():
        assert url.startswith(CONSOLE + "/") and url.endswith("?project=ray-gke-prod")
        assert "/dashboards/" not in url.removeprefix(CONSOLE)  # the id, not the resource name


def test_no_managed_prometheus_means_no_dashboards_and_no_addon_metrics() -> None:
    data = copy.deepcopy(stack_data("prod"))
    data["cluster"]["managed_prometheus"] = False
    records, outputs = _run(data)
    assert not [r for r in records if r["type"] == DASHBOARD]
    assert "dashboards" not in outputs
    (cl,) = [r for r in records if r["type"] == "gcp:container/cluster:Cluster"]
    (ray,) = cl["inputs"]["addonsConfig"]["rayOperatorConfigs"]
    assert ray["rayClusterMonitoringConfig"] == {"enabled": False}
    assert ray["rayClusterLoggingConfig"] == {"enabled": True}


def test_the_ray_addon_collects_logs_and_metrics(base_render) -> None:
    (cl,) = [r for r in base_render["prod"] if r["type"] == "gcp:container/cluster:Cluster"]
    (ray,) = cl["inputs"]["addonsConfig"]["rayOperatorConfigs"]
    assert ray == {
        "enabled": True,
        "rayClusterLoggingConfig": {"enabled": True},
        "rayClusterMonitoringConfig": {"enabled": True},
    }
    assert cl["inputs"]["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    # helm mode: no add-on; the PodMonitorings scrape the Ray pods instead
    dev = base_render["dev"]
    (dcl,) = [r for r in dev if r["type"] == "gcp:container/cluster:Cluster"]
    assert not dcl["inputs"]["addonsConfig"].get("rayOperatorConfigs")
    assert [r for r in dev if r["type"].endswith(":PodMonitoring")]
