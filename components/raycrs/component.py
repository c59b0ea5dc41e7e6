"""``RayResources``: the stack's RayClusters, RayJobs and RayServices on the cluster, plus the
workloads archive they run. Constructor (called by ``__main__.py``):
``RayResources(name, RayResourcesArgs(...), opts)``; its children and outputs:
:class:`RayResources`. The component only calls the pure builders; everything it creates is in
the rendered manifests. Sources: docs/sources.md#raycrs-component
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.computeclass.render import render_compute_classes
from components.config.stack import StackConfig
from components.gcsft.render import ca_config_map, ft_enabled, redis_namespaces, redis_objects
from components.kernel.ray import AUTH_TOKEN_KEY
from components.monitoring.render import render_monitoring
from components.plan.plan import Plan, plan
from components.raycrs.archive import archive_object_name, working_dir_uri, workloads_archive
from components.raycrs.ingress import render_service_objects
from components.raycrs.render import cluster_endpoints, render_manifests
from components.raycrs.serve import service_url

TYPE_TOKEN = "ray-gke:ray:RayResources"
AUTH_TOKEN_LENGTH = 48  # letters and digits: ~285 bits


def auth_secret_names(manifests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(namespace, name)`` of the ``authOptions.secretName`` of every Ray cluster spec in
    ``manifests`` (a RayCluster's ``spec``, a RayJob's ``rayClusterSpec``, a RayService's
    ``rayClusterConfig``), in order: the Secrets the stack creates, each in the namespace of the
    object that names it (``kuberay.namespace``, or its ``-gpudirect`` namespace)."""
    out: list[tuple[str, str]] = []
    for m in manifests:
        spec = m.get("spec") or {}
        cluster = {"RayJob": spec.get("rayClusterSpec"), "RayService": spec.get("rayClusterConfig")}
        secret = ((cluster.get(m["kind"], spec) or {}).get("authOptions") or {}).get("secretName")
        key = (str((m.get("metadata") or {}).get("namespace")), secret)
        if secret and key not in out:
            out.append(key)
    return out


@dataclass
class RayResourcesArgs:
    """Inputs of :class:`RayResources`.

    Attributes:
        cfg: the validated stack config.
        provider: the cluster's Kubernetes provider.
        artifacts_bucket: the artifacts bucket's name (or the ``gcp.storage.Bucket``).
        images: image kind -> reference (:attr:`components.images.component.ImageRegistry.refs`,
            the pushed digests); None: the references of ``ray.images`` / the project's.
        depends_on: what the Ray objects wait for (``KubeRay.ready``: CRDs, operator; the
            cluster; Kueue's webhook).
        stack_plan: the stack's plan (:mod:`components.plan.plan`); None: ``plan(cfg)``.
        redis_address / redis_ca: with GCS fault tolerance, the stack's Redis address and CA
            certificate (:class:`components.gcsft.component.GcsFaultTolerance`): the RayServices'
            ``gcsFaultToleranceOptions`` and the CA ConfigMap their heads mount.
    """

    cfg: StackConfig
    provider: k8s.Provider
    artifacts_bucket: pulumi.Input[str] | Any
    images: Mapping[str, pulumi.Input[str]] | None = None
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    stack_plan: Plan | None = None
    redis_address: pulumi.Input[str] | None = None
    redis_ca: pulumi.Input[str] | None = None


class RayResources(pulumi.ComponentResource):
    """The RayClusters and RayJobs of a stack.

    Children:

    * ``gcp.storage.BucketObject`` ``workloads/<sha256[:16]>.zip`` in the artifacts bucket: the
      deterministic zip of ``workloads/`` (:mod:`components.raycrs.archive`). The name carries the
      content hash, so a changed workload is a replace in the preview diff, and every RayJob's
      ``runtimeEnvYAML`` ``working_dir`` points at exactly that object.
    * per Ray cluster (RayCluster, or RayJob with its own cluster) a ``random.RandomPassword`` and
      the ``v1`` Secret ``<name>-ray-auth`` (key ``auth_token``) its ``authOptions.secretName``
      names (:func:`components.kernel.ray.auth_options`); the Ray objects wait for it.
    * one ``pulumi_kubernetes.apiextensions.CustomResource`` per GKE ComputeClass
      (:func:`components.computeclass.render.render_compute_classes`, cluster-scoped, first) and
      per object from :func:`components.raycrs.render.render_manifests` (RayClusters, then
      RayJobs), depending on ``depends_on`` and on the archive object; every head, worker group
      and submitter container uses ``images[kind]`` (the pushed digests of
      :class:`components.images.component.ImageRegistry`, so a rebuilt image updates the Ray
      resources that run it); a RayJob whose spec changes is replaced (a re-run,
      :func:`rerun_options`).
    * per service, before the Ray objects, its Hugging Face token's ``SecretProviderClass`` and
      its Gateway API ``Gateway`` and ``HTTPRoute``
      (:func:`components.raycrs.ingress.render_service_objects`), then the GCS fault tolerance
      Redis AUTH string's (:func:`components.gcsft.render.redis_objects`), as custom resources
      too.

    Outputs (``register_outputs`` and attributes):

    * ``ray_clusters``: ``{name: {"dashboard": "http://<name>-head-svc.<ns>.svc.cluster.local:8265",
      "client": "ray://<name>-head-svc.<ns>.svc.cluster.local:10001"}}`` (in-cluster addresses
      only; KubeRay names the head Service ``<name>-head-svc``).
    * ``jobs``: the RayJob names.
    * ``services``: ``{name: "http://<name>-serve-svc.<ns>.svc.cluster.local:8000"}``, each
      RayService's Serve endpoint in the cluster (:func:`components.raycrs.serve.service_url`).
    * ``compute_classes``: the ComputeClass names.
    * ``pod_monitorings``: the Managed Prometheus PodMonitoring names
      (:func:`components.monitoring.render.render_monitoring`; created with the RayClusters and
      RayServices they scrape).
    * ``archive_object``: the object name; ``working_dir``: its ``gs://`` URI.
    """

    def __init__(
        self, name: str, args: RayResourcesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        cfg, provider, images, depends_on = args.cfg, args.provider, args.images, args.depends_on
        artifacts_bucket, stack_plan = args.artifacts_bucket, args.stack_plan
        stack_plan = stack_plan or plan(cfg)
        ctx = stack_plan.context
        bucket = getattr(artifacts_bucket, "name", artifacts_bucket)
        data, sha = workloads_archive()
        self.archive_object_name = archive_object_name(sha)
        self.working_dir = working_dir_uri(ctx, sha)
        self.archive = gcp.storage.BucketObject(
            f"{name}-workloads",
            bucket=bucket,
            name=self.archive_object_name,
            source=_asset(data, sha),
            content_type="application/zip",
            opts=pulumi.ResourceOptions(parent=self),
        )
        # ComputeClasses first: the Ray pods that select one are created after it.
        self.manifests = (
            render_compute_classes(stack_plan)
            + render_service_objects(ctx, cfg.services, cfg.jobs)
            + redis_objects(stack_plan, ft_enabled(cfg.gcs_fault_tolerance, cfg.services))
            + render_manifests(cfg, self.working_dir, images, args.redis_address)
            + render_monitoring(stack_plan, cfg.cluster)
        )
        # One Ray auth token per Ray cluster (long-lived RayCluster, or a RayJob's own cluster),
        # random, in the Secret its authOptions.secretName names; never exported or printed
        # (RandomPassword.result is a secret output, and so is the Secret's data).
        self.auth_secrets: dict[str, k8s.core.v1.Secret] = {}
        for namespace, secret in auth_secret_names(self.manifests):
            token = random.RandomPassword(
                f"{name}-token-{secret}",
                length=AUTH_TOKEN_LENGTH,
                special=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.auth_secrets[secret] = k8s.core.v1.Secret(
                f"{name}-secret-{secret}",
                metadata={
                    "name": secret,
                    "namespace": namespace,
                    "labels": {"app.kubernetes.io/part-of": "ray-gke"},
                },
                type="Opaque",
                string_data={AUTH_TOKEN_KEY: token.result},
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=list(depends_on)
                ),
            )
        # GCS fault tolerance: in each namespace of a RayService, the Redis CA its head mounts
        # (components.gcsft.render; the AUTH string's SecretProviderClass is a manifest above).
        self.redis_objects: list[pulumi.Resource] = []
        after = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        for ns in (
            redis_namespaces(stack_plan)
            if ft_enabled(cfg.gcs_fault_tolerance, cfg.services)
            else []
        ):
            suffix = "" if ns == cfg.kuberay.namespace else f"-{ns}"
            ca = ca_config_map(ns, args.redis_ca)
            self.redis_objects.append(
                k8s.core.v1.ConfigMap(
                    f"{name}-redis-ca{suffix}", metadata=ca["metadata"], data=ca["data"], opts=after
                )
            )
        ready = self.redis_objects
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
                    depends_on=[
                        *depends_on,
                        self.archive,
                        *self.auth_secrets.values(),
                        *ready,
                    ],
                    **rerun_options(kind),
                ),
            )
        self.ray_clusters = {
            m["metadata"]["name"]: cluster_endpoints(ctx, m["metadata"]["name"])
            for m in self.manifests
            if m["kind"] == "RayCluster"
        }
        self.jobs = [m["metadata"]["name"] for m in self.manifests if m["kind"] == "RayJob"]
        self.services = {
            m["metadata"]["name"]: service_url(ctx, m["metadata"]["name"])
            for m in self.manifests
            if m["kind"] == "RayService"
        }
        self.pod_monitorings = [
            m["metadata"]["name"] for m in self.manifests if m["kind"] == "PodMonitoring"
        ]
        self.compute_classes = [
            m["metadata"]["name"] for m in self.manifests if m["kind"] == "ComputeClass"
        ]
        self.register_outputs(
            {
                "ray_clusters": self.ray_clusters,
                "jobs": self.jobs,
                "services": self.services,
                "pod_monitorings": self.pod_monitorings,
                "compute_classes": self.compute_classes,
                "archive_object": self.archive_object_name,
                "working_dir": self.working_dir,
            }
        )


RAYJOB_REPLACE_ON = ["spec", 'metadata.labels["kueue.x-k8s.io/queue-name"]']


def rerun_options(kind: str) -> dict[str, Any]:
    """Resource options of a custom resource of ``kind``: a RayJob is replaced when its spec
    changes (``replace_on_changes=["spec"]``), deleted first because its name is fixed
    (``delete_before_replace``), so the job runs again. KubeRay does not re-run a submitted RayJob
    whose spec is updated in place (https://github.com/ray-project/kuberay/issues/1776), so an
    update would change nothing. A change of its Kueue queue (the ``kueue.x-k8s.io/queue-name``
    label) replaces it too: Kueue's webhook refuses that label's change on a job that is not
    suspended (``validateUpdateForQueueName``, kubernetes-sigs/kueue
    ``pkg/controller/jobframework/validation.go``), so an in-place update of an admitted RayJob
    would fail. RayClusters keep in-place updates (KubeRay reconciles replicas and worker groups
    of a running cluster)."""
    if kind == "RayJob":
        return {"replace_on_changes": list(RAYJOB_REPLACE_ON), "delete_before_replace": True}
    return {}


def _asset(data: bytes, sha: str) -> pulumi.Asset:
    """The archive as a file asset at a content-addressed path inside the project,
    ``.raygke/build/workloads-<sha>.zip`` (``sha``: the sha256 hex digest of ``data``; Pulumi
    assets are path- or text-based, and zip bytes are not text). The path is relative to the
    project root, where Pulumi runs the program, so the rendered inputs are the same on every
    machine."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]  # the project root (components/raycrs/ -> .)
    rel = Path(".raygke") / "build" / f"workloads-{sha}.zip"
    path = root / rel
    if not path.is_file() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return pulumi.FileAsset(str(rel) if Path.cwd().resolve() == root else str(path))
