"""GPU networking resources (:mod:`components.gpunet.render` says what and why):
:class:`GpuNetworks` (the extra VPCs, subnets and firewall rules) and :class:`GpuNetworkObjects`
(GKE's network objects, the installer DaemonSets, the ``gpudirect`` namespace's admission
policy). Sources: docs/sources.md#gpunet-component
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.config.network import NetworkConfig
from components.gpunet.render import GpuVpc, subnet_flow_logs
from components.plan.context import Context

# The gpudirect namespace's admission policy (components/gpunet/gpudirect.py).
_ADMISSION = {
    "ValidatingAdmissionPolicy": k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicyBinding": k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
}


@dataclass
class GpuNetworksArgs:
    """Inputs of :class:`GpuNetworks`.

    Attributes:
        context: the stack's context (its ``project`` and ``region``).
        network: the ``network`` block (its flow logs).
        vpcs: the extra VPCs (:func:`components.gpunet.render.gpu_vpcs`).
    """

    context: Context
    network: NetworkConfig
    vpcs: Sequence[GpuVpc]


@dataclass
class GpuNetworkObjectsArgs:
    """Inputs of :class:`GpuNetworkObjects`.

    Attributes:
        objects: the Kubernetes objects of GPU networking
            (:func:`components.gpunet.render.gpunet_objects`).
        provider: the cluster's Kubernetes provider.
        depends_on: what the objects wait for (the cluster, the extra VPCs).
    """

    objects: Sequence[dict[str, Any]]
    provider: pulumi.ProviderResource
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class GpuNetworks(pulumi.ComponentResource):
    """The extra VPCs and subnets. Attributes: ``networks`` (VPC name -> Network), ``subnets``
    (subnet name -> Subnetwork), ``resources`` (every one, for ``depends_on``)."""

    def __init__(
        self, name: str, args: GpuNetworksArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:gpunet:GpuNetworks", name, None, opts)
        ctx = args.context
        child = pulumi.ResourceOptions(parent=self)
        self.networks: dict[str, gcp.compute.Network] = {}
        self.subnets: dict[str, gcp.compute.Subnetwork] = {}
        self.resources: list[pulumi.Resource] = []
        for vpc in args.vpcs:
            net = gcp.compute.Network(
                f"{name}-{vpc.name}",
                name=vpc.name,
                project=ctx.project,
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                mtu=vpc.mtu,
                network_profile=vpc.network_profile(ctx.project),
                opts=child,
            )
            self.networks[vpc.name] = net
            self.resources.append(net)
            logs = subnet_flow_logs(args.network, vpc)
            for s in vpc.subnets:
                sub = gcp.compute.Subnetwork(
                    f"{name}-{s.name}",
                    name=s.name,
                    project=ctx.project,
                    region=ctx.region,
                    network=net.id,
                    ip_cidr_range=s.cidr,
                    private_ip_google_access=vpc.profile_zone is None,
                    log_config=(
                        None if logs is None else gcp.compute.SubnetworkLogConfigArgs(**logs)
                    ),
                    opts=child,
                )
                self.subnets[s.name] = sub
                self.resources.append(sub)
            if vpc.firewall:
                self.resources.append(
                    gcp.compute.Firewall(
                        f"{name}-{vpc.firewall}",
                        name=vpc.firewall,
                        project=ctx.project,
                        network=net.id,
                        direction="INGRESS",
                        source_ranges=[s.cidr for s in vpc.subnets],
                        allows=[
                            gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
                            gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
                            gcp.compute.FirewallAllowArgs(protocol="icmp"),
                        ],
                        opts=child,
                    )
                )
        self.register_outputs({"networks": list(self.networks)})


class GpuNetworkObjects(pulumi.ComponentResource):
    """The multi-networking objects and the installers, on the cluster of ``provider``.
    Attributes: ``objects`` (``"<Kind>/<name>"`` -> resource)."""

    def __init__(
        self, name: str, args: GpuNetworkObjectsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:gpunet:GpuNetworkObjects", name, None, opts)
        provider, depends_on = args.provider, args.depends_on
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        self.objects: dict[str, pulumi.CustomResource] = {}
        for doc in args.objects:
            kind, oname = doc["kind"], doc["metadata"]["name"]
            rname = f"{name}-{kind.lower()}-{oname}"
            if kind == "DaemonSet":
                res: pulumi.CustomResource = k8s.apps.v1.DaemonSet(
                    rname, metadata=doc["metadata"], spec=doc["spec"], opts=k8s_opts
                )
            elif kind in _ADMISSION:
                res = _ADMISSION[kind](
                    rname, metadata=doc["metadata"], spec=doc["spec"], opts=k8s_opts
                )
            else:
                res = k8s.apiextensions.CustomResource(
                    rname,
                    api_version=doc["apiVersion"],
                    kind=kind,
                    metadata=doc["metadata"],
                    spec=doc["spec"],
                    opts=k8s_opts,
                )
            self.objects[f"{kind}/{oname}"] = res
        self.register_outputs({"objects": sorted(self.objects)})
