"""``ray-gke:project:Apis``: the Google Cloud APIs the stack needs, enabled before anything that
calls them (:mod:`components.apis.render` lists them, with sources)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.apis.render import GCS_FT_APIS, REQUIRED_APIS, apis_for_type


@dataclass
class ApisArgs:
    """Inputs of :class:`Apis`.

    Attributes:
        project: the GCP project id.
        gcs_fault_tolerance: whether the stack creates its Redis
            (:func:`components.gcsft.render.ft_enabled`): the APIs of
            :data:`~components.apis.render.GCS_FT_APIS` too.
    """

    project: str
    gcs_fault_tolerance: bool = False


class Apis(pulumi.ComponentResource):
    """One ``gcp.projects.Service`` per API of :data:`REQUIRED_APIS` (and of
    :data:`~components.apis.render.GCS_FT_APIS` when the stack creates its Redis,
    :func:`components.gcsft.render.ft_enabled`) with
    ``disable_on_destroy=False`` (destroying the stack leaves them on) and
    ``disable_dependent_services=False``.

    Attributes: ``services`` (API name -> ``gcp.projects.Service``).
    """

    def __init__(
        self, name: str, args: ApisArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:project:Apis", name, None, opts)
        self.services: dict[str, gcp.projects.Service] = {
            api: gcp.projects.Service(
                f"{name}-{api.split('.', 1)[0]}",
                project=args.project,
                service=api,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in [*REQUIRED_APIS, *(GCS_FT_APIS if args.gcs_fault_tolerance else ())]
        }
        self.register_outputs({"services": list(self.services)})

    def wait_for_apis(self) -> None:
        """Make every GCP resource constructed from now on depend on the API services its type
        needs (:func:`components.apis.render.apis_for_type`), through a stack transformation
        (it reaches the children of every component)."""
        services = self.services

        def transformation(
            args: pulumi.ResourceTransformationArgs,
        ) -> pulumi.ResourceTransformationResult | None:
            deps = [services[a] for a in apis_for_type(args.type_) if a in services]
            if not deps:
                return None
            return pulumi.ResourceTransformationResult(
                args.props,
                pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(depends_on=deps)),
            )

        pulumi.runtime.register_stack_transformation(transformation)
