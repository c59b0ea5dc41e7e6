"""``RayResources``: the stack's RayClusters and RayJobs on the cluster, plus the workloads
archive they run.

Constructor (called by ``__main__.py``)::

    RayResources(
        name: str,
        cfg: StackConfig,
        *,
        provider: pulumi_kubernetes.Provider,      # the cluster's Kubernetes provider
        artifacts_bucket: pulumi.Input[str] | gcp.storage.Bucket,  # bucket name (or the Bucket)
        depends_on: list[pulumi.Resource],          # KubeRay.ready (CRDs, operator) and cluster
        opts: pulumi.ResourceOptions | None = None,
    )

Children:

* ``gcp.storage.BucketObject`` ``workloads/<sha256[:16]>.zip`` in the artifacts bucket: the
  deterministic zip of ``workloads/`` (:mod:`components.builders.archive`). The name carries the content
  hash, so a changed workload is a replace in the preview diff, and every RayJob's
  ``runtimeEnvYAML`` ``working_dir`` points at exactly that object.
* one ``pulumi_kubernetes.apiextensions.CustomResource`` per object from
  :func:`components.builders.manifests.render_manifests` (RayClusters, then RayJobs), depending on
  ``depends_on`` and on the archive object
  (https://www.pulumi.com/registry/packages/kubernetes/api-docs/apiextensions/customresource/).

Outputs (``register_outputs`` and attributes):

* ``ray_clusters``: ``{name: {"dashboard": "http://<name>-head-svc.<ns>.svc.cluster.local:8265",
  "client": "ray://<name>-head-svc.<ns>.svc.cluster.local:10001"}}`` (in-cluster addresses only;
  KubeRay names the head Service ``<name>-head-svc``,
  https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/raycluster-quick-start.html).
* ``jobs``: the RayJob names.
* ``services``: ``{name: "http://<name>-serve-svc.<ns>.svc.cluster.local:8000"}``, each
  RayService's Serve endpoint in the cluster (:func:`components.builders.serve.service_url`).
* ``pod_monitorings``: the Managed Prometheus PodMonitoring names
  (:func:`components.builders.monitoring.render_monitoring`; created with the RayClusters and
  RayServices they scrape).
* ``archive_object``: the object name; ``working_dir``: its ``gs://`` URI.

The component only calls the pure builders; everything it creates is in the rendered manifests.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.builders.archive import archive_object_name, working_dir_uri, workloads_archive
from components.builders.manifests import cluster_endpoints, render_manifests
from components.builders.monitoring import render_monitoring
from components.builders.serve import service_url
from components.spec import StackConfig

TYPE_TOKEN = "ray-gke:ray:RayResources"


class RayResources(pulumi.ComponentResource):
    """The RayClusters and RayJobs of a stack (see the module docstring for the signature)."""

    def __init__(
        self,
        name: str,
        cfg: StackConfig,
        *,
        provider: k8s.Provider,
        artifacts_bucket: pulumi.Input[str] | Any,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        bucket = getattr(artifacts_bucket, "name", artifacts_bucket)
        data, sha = workloads_archive()
        self.archive_object_name = archive_object_name(sha)
        self.working_dir = working_dir_uri(cfg, sha)
        self.archive = gcp.storage.BucketObject(
            f"{name}-workloads",
            bucket=bucket,
            name=self.archive_object_name,
            source=_asset(data, sha),
            content_type="application/zip",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.manifests = render_manifests(cfg, self.working_dir) + render_monitoring(cfg)
        self.custom_resources: dict[str, k8s.apiextensions.CustomResource] = {}
        for m in self.manifests:
            kind, mname = m["kind"], m["metadata"]["name"]
            self.custom_resources[f"{kind}/{mname}"] = k8s.apiextensions.CustomResource(
                f"{name}-{kind.lower()}-{mname}",
                api_version=m["apiVersion"],
                kind=kind,
                metadata=m["metadata"],
                spec=m["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=provider,
                    depends_on=[*depends_on, self.archive],
                ),
            )
        self.ray_clusters = {
            m["metadata"]["name"]: cluster_endpoints(cfg, m["metadata"]["name"])
            for m in self.manifests
            if m["kind"] == "RayCluster"
        }
        self.jobs = [m["metadata"]["name"] for m in self.manifests if m["kind"] == "RayJob"]
        self.services = {
            m["metadata"]["name"]: service_url(cfg, m["metadata"]["name"])
            for m in self.manifests
            if m["kind"] == "RayService"
        }
        self.pod_monitorings = [
            m["metadata"]["name"] for m in self.manifests if m["kind"] == "PodMonitoring"
        ]
        self.register_outputs(
            {
                "ray_clusters": self.ray_clusters,
                "jobs": self.jobs,
                "services": self.services,
                "pod_monitorings": self.pod_monitorings,
                "archive_object": self.archive_object_name,
                "working_dir": self.working_dir,
            }
        )


def _asset(data: bytes, sha: str) -> pulumi.Asset:
    """The archive as a file asset at a content-addressed path inside the project,
    ``.raygke/build/workloads-<sha>.zip`` (``sha``: the sha256 hex digest of ``data``; Pulumi
    assets are path- or text-based, and zip bytes are not text). The path is relative to the
    project root, where Pulumi runs the program, so the rendered inputs are the same on every
    machine."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    rel = Path(".raygke") / "build" / f"workloads-{sha}.zip"
    path = root / rel
    if not path.is_file() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return pulumi.FileAsset(str(rel) if Path.cwd().resolve() == root else str(path))
