"""Every Ray object of a stack: the RayClusters and RayJobs (:mod:`components.raycrs.render`),
then the RayServices (:mod:`components.raycrs.serve`, which builds on the former); pure.

Its own module so that ``render`` and ``serve`` do not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.raycrs.render import _name, ray_cluster_manifest, ray_job_manifest
from components.raycrs.serve import render_services
from components.stack import StackConfig


def render_manifests(
    cfg: StackConfig, working_dir_uri: str, images: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every RayCluster (sorted by name), then every RayJob, then every RayService
    (:func:`components.raycrs.serve.render_services`), each sorted by name.

    ``images``: image kind (``cpu``, ``gpu``, ``gpu-tf``, ``tpu``) -> the reference every head, worker group
    and submitter of that kind uses; the Pulumi program passes the pushed digests
    (``pulumi.Output`` values, resolved by the engine). Unset:
    :func:`components.images.render.planned_refs` (the offline render of ``raygke check``).
    """
    clusters = [ray_cluster_manifest(cfg, rc, images) for rc in sorted(cfg.ray_clusters, key=_name)]
    jobs = [ray_job_manifest(cfg, j, working_dir_uri, images) for j in sorted(cfg.jobs, key=_name)]
    return clusters + jobs + render_services(cfg, working_dir_uri, images)
