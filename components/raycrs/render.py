"""Pure builders of the KubeRay custom resources (RayCluster, RayJob, RayService) a stack declares.

Config in, plain ``dict`` out — no Pulumi resources, no Ray import — so the same objects are
rendered offline (``raygke check``, ``raygke synth``), validated against the KubeRay CRD schemas
(:mod:`components.raycrs.crd`) and created by :class:`components.raycrs.component.RayResources`.
The pieces: :mod:`components.raycrs.pod` (the pod template every Ray pod shares),
:mod:`components.raycrs.raycluster` (RayCluster), :mod:`components.raycrs.rayjob` (RayJob),
:mod:`components.raycrs.serve` (RayService); this module puts them in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.config.stack import StackConfig
from components.gcsft.render import ft_enabled, planned_address
from components.images.render import pod_images
from components.kernel.ray import CLIENT_PORT, DASHBOARD_PORT
from components.plan.plan import Context, plan
from components.raycrs.raycluster import ray_cluster_manifest
from components.raycrs.rayjob import ray_job_manifest
from components.raycrs.serve import render_services


def render_manifests(
    cfg: StackConfig,
    working_dir_uri: str,
    images: Mapping[str, Any] | None = None,
    redis_address: Any = None,
) -> list[dict[str, Any]]:
    """Every RayCluster (sorted by name), then every RayJob, then every RayService
    (:func:`components.raycrs.serve.render_services`), each sorted by name.

    ``images``: image kind (``cpu``, ``gpu``, ``gpu-tf``, ``tpu``) -> the reference every head, worker group
    and submitter of that kind uses; the Pulumi program passes the pushed digests
    (``pulumi.Output`` values, resolved by the engine). Unset:
    :func:`components.images.render.planned_refs` (the offline render of ``raygke check``).
    ``redis_address``: the address of the stack's Redis the RayServices' GCS fault tolerance uses
    (the program passes the Memorystore instance's, :class:`components.gcsft.component.
    GcsFaultTolerance`); unset: :func:`components.gcsft.render.planned_address`; none without
    GCS fault tolerance (:func:`components.gcsft.render.ft_enabled`).
    """
    p = plan(cfg)  # the records of every worker group, job and service, resolved once
    refs = pod_images(p.context, cfg.ray.images, images)
    clusters = [ray_cluster_manifest(p, rc, refs) for rc in sorted(cfg.ray_clusters, key=_name)]
    jobs = [
        ray_job_manifest(p, p.job(j), working_dir_uri, refs) for j in sorted(cfg.jobs, key=_name)
    ]
    if not ft_enabled(cfg.gcs_fault_tolerance, cfg.services):
        redis_address = None
    elif redis_address is None:
        redis_address = planned_address(cfg.network.psa_cidr)
    return clusters + jobs + render_services(p, cfg.services, working_dir_uri, refs, redis_address)


def _name(x: Any) -> str:
    return x.name


def head_service_host(ctx: Context, cluster_name: str) -> str:
    """In-cluster DNS name of a RayCluster's head Service (KubeRay names it ``<name>-head-svc``)."""
    return f"{cluster_name}-head-svc.{ctx.namespace_of(cluster_name)}.svc.cluster.local"


def cluster_endpoints(ctx: Context, cluster_name: str) -> dict[str, str]:
    """``{"dashboard": "http://<svc>:8265", "client": "ray://<svc>:10001"}`` (in-cluster only)."""
    host = head_service_host(ctx, cluster_name)
    return {"dashboard": f"http://{host}:{DASHBOARD_PORT}", "client": f"ray://{host}:{CLIENT_PORT}"}
