"""``ImageRegistry``: the stack's Artifact Registry Docker repository and the Ray images built
into it during ``pulumi up``. Constructor (called by ``__main__.py``):
``ImageRegistry(name, ImageRegistryArgs(...), opts)``; its children and outputs:
:class:`ImageRegistry`. Sources: docs/sources.md#images-component
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_docker_build as docker_build
import pulumi_gcp as gcp

from components.config.cluster import ClusterConfig
from components.config.raycrs import RayConfig
from components.images import render as images
from components.plan.plan import Plan
from components.security.iam import REGISTRY_READER_ROLE

DAY_SECONDS = 86400


@dataclass
class ImageRegistryArgs:
    """Inputs of :class:`ImageRegistry`: ``plan`` (the stack's plan), ``ray`` (the ray block:
    images, cleanup age), ``cluster`` (the cluster block: deletion_protection), ``kms_key_id``
    (``Security.registry_key.id``, the region's ring), ``node_service_account`` (node SA email:
    the repository's reader), ``depends_on`` (``Security.registry_key_grant``)."""

    plan: Plan
    ray: RayConfig
    cluster: ClusterConfig
    kms_key_id: pulumi.Input[str]
    node_service_account: pulumi.Input[str]
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def _context_path(rel: str) -> str:
    """``rel`` relative to the project root when Pulumi runs there (the rendered inputs are then
    the same on every machine), else absolute."""
    root = images.ROOT
    return rel if Path.cwd().resolve() == root else str(root / rel)


class ImageRegistry(pulumi.ComponentResource):
    """``ray-gke:images:ImageRegistry``: repository, its reader grant, the built images.

    Children:

    * ``gcp.artifactregistry.Repository`` ``<cluster name>`` (format ``DOCKER``) in the stack's
      region, encrypted with the CMEK key, with a cleanup policy that deletes untagged images
      older than ``ray.delete_untagged_images_after_days``.
    * ``gcp.artifactregistry.RepositoryIamMember``: the node service account may read this
      repository only (``roles/artifactregistry.reader``; the kubelet pulls with the node's
      identity).
    * one ``pulumi_docker_build.Image`` per image kind the stack uses without a prebuilt image in
      ``ray.images`` (:func:`components.images.render.kinds_to_build`): ``images/<kind>/Dockerfile``,
      the repository root as context, build argument ``RAY_VERSION``, platform ``linux/amd64``,
      pushed as ``<repo>/ray-<kind>:<ray.version>``, build cache in the registry (``:buildcache``,
      ``mode=max``, image manifest), label ``ray-gke/content``
      (:func:`~components.images.render.content_hash`). buildx authenticates to
      ``<region>-docker.pkg.dev`` with the access token of the credentials running Pulumi (user
      ``oauth2accesstoken``), so no docker credential helper is needed.

    Outputs (attributes and ``register_outputs``):

    * ``url``: ``<region>-docker.pkg.dev/<project>/<repository id>``;
    * ``refs``: image kind (those the stack uses) -> the reference pods use: ``Image.ref``
      (``<repo>/ray-<kind>@sha256:...``, the pushed digest) for built kinds, the prebuilt
      reference otherwise.
    """

    def __init__(
        self, name: str, args: ImageRegistryArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:images:ImageRegistry", name, None, opts)
        p, ray = args.plan, args.ray
        ctx = p.context
        self.url = images.repository_url(ctx)
        self.repository = gcp.artifactregistry.Repository(
            f"{name}-repository",
            project=ctx.project,
            location=ctx.region,
            repository_id=images.repository_id(ctx),
            format="DOCKER",
            description=f"Ray images of {ctx.cluster} (ray-gke)",
            kms_key_name=args.kms_key_id,
            labels=dict(ctx.labels),
            cleanup_policy_dry_run=False,
            cleanup_policies=[
                gcp.artifactregistry.RepositoryCleanupPolicyArgs(
                    id="delete-untagged",
                    action="DELETE",
                    condition=gcp.artifactregistry.RepositoryCleanupPolicyConditionArgs(
                        tag_state="UNTAGGED",
                        older_than=f"{ray.delete_untagged_images_after_days * DAY_SECONDS}s",
                    ),
                )
            ],
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(args.depends_on),
                protect=args.cluster.deletion_protection,
            ),
        )
        self.reader = gcp.artifactregistry.RepositoryIamMember(
            f"{name}-node-sa-reader",
            project=ctx.project,
            location=ctx.region,
            repository=self.repository.repository_id,
            role=REGISTRY_READER_ROLE,
            member=pulumi.Output.from_input(args.node_service_account).apply(
                lambda e: f"serviceAccount:{e}"
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        token = gcp.organizations.get_client_config_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        ).access_token
        self.images: dict[str, docker_build.Image] = {}
        for kind in images.kinds_to_build(p, ray.images):
            cache = images.cache_ref(ctx, kind)
            self.images[kind] = docker_build.Image(
                f"{name}-{kind}",
                tags=[images.image_tag_ref(ctx, kind)],
                context=docker_build.BuildContextArgs(location=_context_path(".")),
                dockerfile=docker_build.DockerfileArgs(
                    location=_context_path(images.dockerfile_path(kind))
                ),
                build_args={"RAY_VERSION": ctx.ray_version},
                labels={"ray-gke/content": images.content_hash(ctx, kind)},
                platforms=[docker_build.Platform.LINUX_AMD64],
                push=True,
                registries=[
                    docker_build.RegistryArgs(
                        address=images.registry_host(ctx),
                        username="oauth2accesstoken",
                        password=pulumi.Output.secret(token),
                    )
                ],
                cache_from=[
                    docker_build.CacheFromArgs(
                        registry=docker_build.CacheFromRegistryArgs(ref=cache)
                    )
                ],
                cache_to=[
                    docker_build.CacheToArgs(
                        registry=docker_build.CacheToRegistryArgs(
                            ref=cache,
                            mode=docker_build.CacheMode.MAX,
                            image_manifest=True,
                            oci_media_types=True,
                        )
                    )
                ],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.repository]),
            )
        planned = images.planned_refs(ctx, ray.images)
        self.refs: dict[str, Any] = {
            kind: self.images[kind].ref if kind in self.images else planned[kind]
            for kind in images.kinds_used(p)
        }
        self.register_outputs({"url": self.url, "refs": self.refs})
