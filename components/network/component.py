"""Network: VPC, one subnet with pod and service secondary ranges, Cloud Router + NAT.

Private GKE nodes have no external IPs; Cloud NAT lets them pull images from registries outside
Google (Docker Hub ``rayproject/ray``), and private Google access lets them reach Google APIs
(Artifact Registry, GCS) without NAT
(https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters,
https://cloud.google.com/nat/docs/gke-example). The secondary ranges are the VPC-native cluster's
pod and service ranges (https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips).
The subnet records VPC Flow Logs (``log_config``; ``network.flow_logs``,
https://cloud.google.com/vpc/docs/flow-logs).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.network import NetworkConfig
from components.plan import naming
from components.plan.context import Context

PODS_RANGE = "pods"
SERVICES_RANGE = "services"


@dataclass
class NetworkArgs:
    """Inputs of :class:`Network`.

    Attributes:
        context: the stack's context (its ``project`` and ``region``).
        network: the ``network`` block.
    """

    context: Context
    network: NetworkConfig


class Network(pulumi.ComponentResource):
    """``ray-gke:network:Network``: VPC (custom subnets), subnet, router, NAT.

    Outputs: ``network`` (self link), ``subnetwork`` (self link), ``pods_range_name``,
    ``services_range_name`` (secondary range names for the cluster's ``ip_allocation_policy``).
    """

    network_self_link: pulumi.Output[str]
    subnetwork_self_link: pulumi.Output[str]

    def __init__(
        self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:network:Network", name, None, opts)
        ctx, net = args.context, args.network
        child = pulumi.ResourceOptions(parent=self)
        self.vpc = gcp.compute.Network(
            f"{name}-vpc",
            name=net.name,
            project=ctx.project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=child,
        )
        self.subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            name=naming.subnet_name(net.name, ctx.region),
            project=ctx.project,
            region=ctx.region,
            network=self.vpc.id,
            ip_cidr_range=net.subnet_cidr,
            private_ip_google_access=True,
            log_config=gcp.compute.SubnetworkLogConfigArgs(
                aggregation_interval=net.flow_logs.aggregation_interval,
                flow_sampling=net.flow_logs.flow_sampling,
                metadata=net.flow_logs.metadata,
            )
            if net.flow_logs.enabled
            else None,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=PODS_RANGE, ip_cidr_range=net.pods_cidr
                ),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=SERVICES_RANGE, ip_cidr_range=net.services_cidr
                ),
            ],
            opts=child,
        )
        self.router = gcp.compute.Router(
            f"{name}-router",
            name=naming.router_name(net.name),
            project=ctx.project,
            region=ctx.region,
            network=self.vpc.id,
            opts=child,
        )
        self.nat = gcp.compute.RouterNat(
            f"{name}-nat",
            name=naming.nat_name(net.name),
            project=ctx.project,
            region=ctx.region,
            router=self.router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=child,
        )
        self.network_self_link = self.vpc.self_link
        self.subnetwork_self_link = self.subnet.self_link
        self.pods_range_name = PODS_RANGE
        self.services_range_name = SERVICES_RANGE
        self.register_outputs(
            {
                "network": self.vpc.self_link,
                "subnetwork": self.subnet.self_link,
                "pods_range_name": PODS_RANGE,
                "services_range_name": SERVICES_RANGE,
            }
        )
