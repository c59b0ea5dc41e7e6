"""``ray-gke:capacity:Kueue`` (:class:`Kueue`): Kueue's Helm release (values:
:func:`components.capacity.render.helm_values`) and every object of
:func:`components.capacity.render.render_capacity` as a ``CustomResource`` depending on the
release (its CRDs and webhooks must exist first). Sources: docs/sources.md#capacity-component
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.capacity.render import helm_values, render_capacity
from components.config.capacity import KUEUE_CHART, CapacityConfig
from components.plan.plan import Plan


@dataclass
class KueueArgs:
    """Inputs of :class:`Kueue`.

    Attributes:
        stack_plan: the stack's plan (:mod:`components.plan.plan`).
        capacity: the ``capacity`` block.
        provider: the cluster's Kubernetes provider.
        depends_on: what the release waits for (the KubeRay operator, the cluster).
    """

    stack_plan: Plan
    capacity: CapacityConfig
    provider: pulumi.ProviderResource
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class Kueue(pulumi.ComponentResource):
    """Kueue and its queues. Attributes: ``release`` (``helm.v3.Release`` or None without
    queues), ``objects`` (``"<Kind>/<name>"`` -> the Kubernetes resource), ``ready`` (what the
    Ray objects must wait for: a queued RayJob created before Kueue's webhook is up would run at
    once, outside its queue)."""

    def __init__(
        self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:capacity:Kueue", name, None, opts)
        stack_plan, capacity = args.stack_plan, args.capacity
        provider, depends_on = args.provider, args.depends_on
        self.release: k8s.helm.v3.Release | None = None
        self.objects: dict[str, pulumi.CustomResource] = {}
        self.ready: list[pulumi.Resource] = []
        if not capacity.enabled:
            self.register_outputs({})
            return
        kueue = capacity.kueue
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="kueue",
            chart=KUEUE_CHART,
            version=kueue.version,
            namespace=kueue.namespace,
            create_namespace=True,
            values=helm_values(kueue.elastic_jobs),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on),
        )
        ray_ns = stack_plan.context.namespace
        for m in render_capacity(stack_plan, capacity):
            kind, mname = m["kind"], m["metadata"]["name"]
            obj_opts = pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[self.release]
            )
            ns = m["metadata"].get("namespace")
            if ns not in (None, ray_ns):  # a LocalQueue of the gpudirect namespace
                self.objects[f"{ns}/{kind}/{mname}"] = k8s.apiextensions.CustomResource(
                    f"{name}-gpudirect-{kind.lower()}-{mname}",
                    api_version=m["apiVersion"],
                    kind=kind,
                    metadata=m["metadata"],
                    spec=m["spec"],
                    opts=obj_opts,
                )
            elif "spec" in m:
                self.objects[f"{kind}/{mname}"] = k8s.apiextensions.CustomResource(
                    f"{name}-{kind.lower()}-{mname}",
                    api_version=m["apiVersion"],
                    kind=kind,
                    metadata=m["metadata"],
                    spec=m["spec"],
                    opts=obj_opts,
                )
            else:  # WorkloadPriorityClass: value/description at the top level, no spec
                self.objects[f"{kind}/{mname}"] = pulumi.CustomResource(
                    f"kubernetes:{m['apiVersion']}:{kind}",
                    f"{name}-{kind.lower()}-{mname}",
                    dict(m),
                    pulumi.ResourceOptions.merge(
                        obj_opts, pulumi.ResourceOptions(version=k8s._utilities.get_version())
                    ),
                )
        self.ready = [self.release, *self.objects.values()]
        self.register_outputs({"queues": sorted(self.objects)})
