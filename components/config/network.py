"""The ``network`` block: VPC, subnet ranges, private nodes, control-plane access."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.kernel.base import StrictModel, cidr, gke_name, one_line

# --------------------------------------------------------------------------------------- network


# Internal address ranges: RFC 1918 private IPv4 (https://www.rfc-editor.org/rfc/rfc1918#section-3),
# RFC 6598 shared address space 100.64.0.0/10 (https://www.rfc-editor.org/rfc/rfc6598), both
# valid VPC subnet ranges (https://cloud.google.com/vpc/docs/subnets#valid-ranges), and RFC 4193
# unique local IPv6 fc00::/7. Not Python's ``ipaddress.is_private``, which also counts the
# documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24; RFC 5737), loopback
# (127.0.0.0/8) and link-local (169.254.0.0/16): no client inside a VPC has such an address.
INTERNAL_RANGES: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)
_INTERNAL_TEXT = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598)"


def is_internal(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    """Whether ``net`` lies inside one of :data:`INTERNAL_RANGES` (RFC 1918, RFC 6598, RFC 4193)."""
    return any(net.version == r.version and net.subnet_of(r) for r in INTERNAL_RANGES)  # type: ignore[arg-type]


class AuthorizedNetwork(StrictModel):
    """A CIDR allowed to reach the GKE control plane."""

    name: str = Field(
        description="Display name of the entry (GKE `masterAuthorizedNetworksConfig.cidrBlocks"
        "[].displayName`), e.g. `corp-vpn`.",
    )
    cidr: str = Field(
        description="IPv4 or IPv6 network allowed to reach the control plane, e.g. "
        "`203.0.113.0/24` (https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "authorized-networks).",
    )

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        cidr(v, "cidr", example="203.0.113.0/24")  # GKE takes CIDR blocks (cidrBlock)
        return v


class FlowLogsConfig(StrictModel):
    """VPC Flow Logs of the subnet (``log_config`` of the subnetwork,
    https://cloud.google.com/vpc/docs/flow-logs#key_properties). The defaults are Compute Engine's
    own (5-second aggregation, half the flows sampled, all metadata). The GPU NIC subnets of
    ``gpu_networking`` record them too, with the same interval and metadata and their own
    sampling (``gpu_flow_sampling``); not the RDMA VPC's subnets (components/gpunet/render.py
    ``subnet_flow_logs``). Adding or changing ``log_config`` updates a subnet in place (the
    provider's ``log_config`` is not ForceNew: raygke/diff/replacement.py)."""

    enabled: bool = Field(
        True,
        description="Record VPC Flow Logs for the subnet (who talked to which node and pod IP; "
        "what a security review reads after an incident).",
    )
    aggregation_interval: Literal[
        "INTERVAL_5_SEC",
        "INTERVAL_30_SEC",
        "INTERVAL_1_MIN",
        "INTERVAL_5_MIN",
        "INTERVAL_10_MIN",
        "INTERVAL_15_MIN",
    ] = Field(
        "INTERVAL_5_SEC",
        description="How long flows are aggregated into one log entry (`aggregationInterval`); "
        "longer intervals write fewer entries.",
    )
    flow_sampling: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Fraction of the flows that are logged, 0.0-1.0 (`flowSampling`; 0.0 logs "
        "none, 1.0 all). Log volume and cost scale with it.",
    )
    metadata: Literal["INCLUDE_ALL_METADATA", "EXCLUDE_ALL_METADATA"] = Field(
        "INCLUDE_ALL_METADATA",
        description="Whether entries carry metadata such as the VM and GKE names (`metadata`).",
    )
    gpu_flow_sampling: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Fraction of the flows logged on the GPU NIC subnets of `gpu_networking` "
        "(GPUDirect-TCPX/TCPXO and the RDMA pools' second gVNIC; not the RDMA VPC's subnets, "
        "whose RoCE traffic between CX-7 NICs the stack leaves unlogged), 0.0-1.0. Those VPCs "
        "carry only the collectives between the stack's GPU nodes, a few long-lived flows per "
        "NIC at up to 200 Gbps each, so a tenth still shows which nodes talked; raise it for "
        "a full record. Adding the logs to existing GPU subnets updates them in place.",
    )

    @model_validator(mode="after")
    def _settings_need_logs(self) -> FlowLogsConfig:
        # every key has an effect or is refused: with logs off the settings would do nothing
        ignored = sorted(self.model_fields_set - {"enabled"})
        if not self.enabled and ignored:
            raise ValueError(
                f"{', '.join(ignored)} set but enabled is false (no flow logs to configure); "
                "remove them or set enabled: true"
            )
        return self


class NetworkConfig(StrictModel):
    """VPC, subnet and its secondary ranges, private nodes, control-plane access."""

    name: str = Field(
        "ray",
        description="Name of the VPC network; the subnet, router and NAT are named after it. "
        "1-63 lowercase letters, digits and hyphens.",
    )
    subnet_cidr: str = Field(
        "10.10.0.0/20",
        description="Primary IPv4 range of the subnet (node IPs). Private (RFC 1918), disjoint "
        "from the other ranges (https://cloud.google.com/kubernetes-engine/docs/concepts/"
        "alias-ips).",
    )
    pods_cidr: str = Field(
        "10.16.0.0/14",
        description="Secondary range of the subnet for Pod IPs (VPC-native cluster). A /14 gives "
        "about 1000 nodes at 110 Pods each (https://cloud.google.com/kubernetes-engine/docs/"
        "concepts/alias-ips).",
    )
    services_cidr: str = Field(
        "10.20.0.0/20",
        description="Secondary range of the subnet for Service ClusterIPs "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips).",
    )
    master_ipv4_cidr: str = Field(
        "172.16.0.0/28",
        description="The /28 private range of the control plane (`masterIpv4CidrBlock`), "
        "disjoint from the subnet ranges (https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "private-clusters).",
    )
    gpu_cidr: str = Field(
        "192.168.0.0/16",
        description="Range the extra VPCs of GPU networking take their subnets from, one /22 "
        "(1,020 nodes) per GPU NIC network in order (4 for GPUDirect-TCPX, 8 for TCPXO, 1 gVNIC "
        "+ 8 RDMA for GPUDirect RDMA; docs/deploying.md, GPU networking); used only when a GPU "
        "pool has `gpu_networking`. Private, disjoint from the other ranges.",
    )
    psa_cidr: str = Field(
        "10.24.0.0/20",
        description="Range allocated to private services access (a `VPC_PEERING` global address "
        "and the `servicenetworking` connection of the VPC), from which Google-managed services "
        "take their addresses: the Memorystore for Redis of `gcs_fault_tolerance` (used only "
        "with it). A /24 or larger, private, disjoint from the other ranges "
        "(https://cloud.google.com/vpc/docs/configure-private-services-access).",
    )
    private_nodes: bool = Field(
        True,
        description="Nodes get internal IPs only and reach the internet through Cloud NAT "
        "(`enablePrivateNodes`, https://cloud.google.com/kubernetes-engine/docs/how-to/"
        "private-clusters).",
    )
    private_endpoint: bool = Field(
        False,
        description="The control plane has no public endpoint; kubectl and Pulumi must run from "
        "inside the VPC (`enablePrivateEndpoint`, https://cloud.google.com/kubernetes-engine/docs/"
        "how-to/private-clusters).",
    )
    master_authorized_networks: list[AuthorizedNetwork] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the control plane besides the VPC; empty means none "
        "from outside the VPC; each name and range once; with `private_endpoint` only internal "
        "ranges (RFC 1918, RFC 6598 100.64.0.0/10) (https://cloud.google.com/kubernetes-engine/"
        "docs/how-to/authorized-networks).",
    )
    flow_logs: FlowLogsConfig = Field(
        default_factory=FlowLogsConfig,
        description="VPC Flow Logs of the subnet (https://cloud.google.com/vpc/docs/flow-logs).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return gke_name(v, "network.name", 63)

    @field_validator(
        "subnet_cidr", "pods_cidr", "services_cidr", "master_ipv4_cidr", "gpu_cidr", "psa_cidr"
    )
    @classmethod
    def _cidrs(cls, v: str, info: Any) -> str:
        net = cidr(v, info.field_name, example="10.10.0.0/20", ipv4_only=True)
        if not is_internal(net):
            raise ValueError(
                f"{info.field_name} {v!r} is not a private range: use one inside {_INTERNAL_TEXT}"
            )
        if info.field_name == "master_ipv4_cidr" and net.prefixlen != 28:
            raise ValueError(f"master_ipv4_cidr {v!r} must be a /28 (GKE private control plane)")
        if info.field_name == "psa_cidr" and net.prefixlen > 24:
            raise ValueError(
                f"psa_cidr {v!r} is smaller than a /24, the least private services access "
                "allocates (https://cloud.google.com/vpc/docs/configure-private-services-access)"
            )
        return v

    @model_validator(mode="after")
    def _authorized_networks(self) -> NetworkConfig:
        """Authorized networks GKE accepts and that keep the control plane closed: at most 50
        CIDR ranges for public clusters and 100 for private ones
        (https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks#limitations);
        no range that covers the whole internet; with ``private_endpoint`` only internal
        addresses can reach the endpoint, so public ranges would authorize nothing
        (https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters)."""
        limit = 100 if self.private_nodes else 50
        nets = self.master_authorized_networks
        problems = []
        if len(nets) > limit:
            problems.append(
                f"master_authorized_networks has {len(nets)} ranges; GKE allows at most {limit} "
                f"for a {'private' if self.private_nodes else 'public'} cluster"
            )
        for n in nets:
            net = ipaddress.ip_network(n.cidr, strict=False)
            if net.prefixlen < 8:
                problems.append(
                    f"master_authorized_networks[{one_line(n.name)}].cidr {n.cidr} opens the "
                    "control plane "
                    "to a large part of the internet; list the ranges you deploy from (/8 or "
                    "narrower)"
                )
            elif self.private_endpoint and not is_internal(net):
                problems.append(
                    f"master_authorized_networks[{one_line(n.name)}].cidr {n.cidr} is not an "
                    "internal range, but private_endpoint: true lets only internal addresses "
                    f"reach the control plane; list internal ranges ({_INTERNAL_TEXT}: VPC, VPN, "
                    "interconnect)"
                )
        for dup in sorted({n.name for n in nets if [m.name for m in nets].count(n.name) > 1}):
            problems.append(f"master_authorized_networks: name {dup!r} is used more than once")
        cidrs = [str(ipaddress.ip_network(n.cidr, strict=False)) for n in nets]
        for dup in sorted({c for c in cidrs if cidrs.count(c) > 1}):
            problems.append(f"master_authorized_networks: cidr {dup} is listed more than once")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkConfig:
        ranges = {
            "subnet_cidr": self.subnet_cidr,
            "pods_cidr": self.pods_cidr,
            "services_cidr": self.services_cidr,
            "master_ipv4_cidr": self.master_ipv4_cidr,
            "gpu_cidr": self.gpu_cidr,
        }
        nets = {k: ipaddress.IPv4Network(v) for k, v in ranges.items()}
        keys = list(nets)
        problems = [
            f"{a} {ranges[a]} overlaps {b} {ranges[b]}; the ranges must be disjoint"
            for i, a in enumerate(keys)
            for b in keys[i + 1 :]
            if nets[a].overlaps(nets[b])
        ]
        if problems:
            raise ValueError("\n".join(problems))
        return self
