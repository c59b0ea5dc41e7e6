"""``ray-gke:monitoring:Dashboards``: Ray's dashboards as Cloud Monitoring dashboards
(``gcp.monitoring.Dashboard``), their JSON from :mod:`components.monitoring.dashboards`.

Resource: https://www.pulumi.com/registry/packages/gcp/api-docs/monitoring/dashboard/ (id
``projects/<number>/dashboards/<id>``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.cluster import ClusterConfig
from components.monitoring.dashboards import dashboard_json, dashboard_url, dashboards
from components.plan.plan import Plan


@dataclass
class DashboardsArgs:
    """Inputs of :class:`Dashboards`.

    Attributes:
        plan: the stack's plan (its context and services).
        cluster: the ``cluster`` block (its name and ``managed_prometheus``).
    """

    plan: Plan
    cluster: ClusterConfig


class Dashboards(pulumi.ComponentResource):
    """``ray-gke:monitoring:Dashboards``.

    Attributes: ``dashboards`` (key -> ``gcp.monitoring.Dashboard``), ``urls`` (key ->
    Output[str], the Cloud Console URL); both empty without ``cluster.managed_prometheus``.
    """

    def __init__(
        self, name: str, args: DashboardsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:monitoring:Dashboards", name, None, opts)
        project = args.plan.context.project
        self.dashboards: dict[str, gcp.monitoring.Dashboard] = {}
        self.urls: dict[str, pulumi.Output[str]] = {}
        for key, doc in dashboards(args.plan, args.cluster).items():
            d = gcp.monitoring.Dashboard(
                f"{name}-{key}",
                project=project,
                dashboard_json=dashboard_json(doc),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.dashboards[key] = d
            self.urls[key] = d.id.apply(lambda i, p=project: dashboard_url(i, p))
        self.register_outputs({"urls": self.urls})
