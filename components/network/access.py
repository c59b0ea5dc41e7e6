"""Can anyone deploy this stack? ``pulumi up`` must reach the cluster's control plane for the
Kubernetes half of the program: :func:`reachability_problems` refuses a stack with the DNS-based
endpoint off and only documentation ranges (:data:`DOCUMENTATION_RANGES`) authorized.
Sources: docs/sources.md#network-access
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING

from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.config.network import AuthorizedNetwork

DOCUMENTATION_RANGES = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def is_documentation_range(cidr: str) -> bool:
    """True when ``cidr`` lies inside an RFC 5737 / RFC 3849 documentation range.

    Raises:
        ValueError: ``cidr`` is not an IP network.
    """
    net = ipaddress.ip_network(cidr, strict=False)
    return any(net.version == d.version and net.subnet_of(d) for d in DOCUMENTATION_RANGES)


def reachability_problems(dns_endpoint: bool, nets: Sequence[AuthorizedNetwork]) -> list[Problem]:
    """One Problem (of ``network``, rule ``reachability``) when no deployer outside the VPC could reach the Kubernetes API: the DNS-based
    endpoint is off (``dns_endpoint``: ``cluster.dns_endpoint``) and every authorized network of
    ``nets`` (``network.master_authorized_networks``), if any, is a documentation range. Empty
    otherwise (the DNS endpoint is on, or a real range is authorized)."""
    if dns_endpoint:
        return []
    real = [n for n in nets if not is_documentation_range(n.cidr)]
    if real:
        return []
    listed = (
        "lists only documentation ranges ("
        + ", ".join(f"{n.name} {n.cidr}" for n in nets)
        + "), which no client has"
        if nets
        else "is empty"
    )
    line = (
        "cluster.dns_endpoint: false and network.master_authorized_networks "
        f"{listed}: no `pulumi up` outside the VPC can reach the Kubernetes API that the "
        "namespace, service accounts, KubeRay and Ray resources are created through; set "
        "cluster.dns_endpoint: true (IAM-gated DNS endpoint, no IP allow-list) or list the CIDR "
        "you deploy from in network.master_authorized_networks"
    )
    return [Problem("network", line, "reachability")]
