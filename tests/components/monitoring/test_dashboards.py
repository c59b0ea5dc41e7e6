"""components/monitoring/dashboards.py: every Ray metric a tile queries is one Ray 2.60 exports and
charts in its own Grafana dashboards (ray/dashboard/modules/metrics/dashboards/*_panels.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.monitoring.dashboards import cluster_panels, serve_panels

METRIC = re.compile(r"\bray_[a-z_]+[a-z]\b")


def _ray_panel_sources() -> str:
    ray = pytest.importorskip("ray")
    folder = Path(ray.__file__).parent / "dashboard" / "modules" / "metrics" / "dashboards"
    files = sorted(folder.glob("*_panels.py"))
    assert files, folder
    return "\n".join(f.read_text() for f in files)


def test_every_queried_metric_is_in_rays_own_dashboards() -> None:
    ray_sources = _ray_panel_sources()
    queried = {
        m
        for _, promql, _ in [*cluster_panels("ray"), *serve_panels("ray")]
        for m in METRIC.findall(promql)
    }
    assert len(queried) >= 10, queried  # the tiles do query Ray's metrics
    missing = sorted(m for m in queried if not re.search(rf"\b{m}\b", ray_sources))
    assert missing == [], f"not a metric Ray's dashboards chart: {missing}"


def test_a_made_up_metric_is_caught() -> None:
    assert not re.search(r"\bray_node_made_up_metric\b", _ray_panel_sources())
