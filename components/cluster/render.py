"""Pure pieces of the GKE cluster: Node Auto Provisioning resource limits, the Gateway API channel.

Sources: https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning;
https://cloud.google.com/kubernetes-engine/docs/how-to/deploying-gateways (enable the Gateway API).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from components import catalog

if TYPE_CHECKING:
    from components.config.cluster import NapConfig, SystemPool
    from components.config.nodepools import NodePool
    from components.config.raycrs import JobConfig
    from components.config.serve import ServiceConfig

_ACCELERATOR_TYPES = frozenset(catalog.NAP_RESOURCE_TYPES) - {"cpu", "memory"}


def nap_resource_limits(
    limits: Mapping[str, int], needs: Mapping[str, int]
) -> list[dict[str, object]]:
    """NAP resource limits: ``[{"resource_type", "minimum", "maximum"}]``, cpu and memory first.

    cpu (vCPUs) and memory (GB) come from ``limits`` (``nap.effective_limits``: the
    ``nap.resource_limits`` with defaults 256 / 1024). Every accelerator named in ``limits`` or
    in ``needs`` (what the declared pools can scale to, chips or GPUs:
    :func:`components.plan.resolve.nap_needs`) gets ``max(config limit, need)``.
    """
    accelerators = sorted(
        {k for k in limits if k in _ACCELERATOR_TYPES}
        | {k for k in needs if k in _ACCELERATOR_TYPES}
    )
    out: list[dict[str, object]] = [
        {"resource_type": "cpu", "minimum": 0, "maximum": limits["cpu"]},
        {"resource_type": "memory", "minimum": 0, "maximum": limits["memory"]},
    ]
    for acc in accelerators:
        out.append(
            {
                "resource_type": acc,
                "minimum": 0,
                "maximum": max(limits.get(acc, 0), needs.get(acc, 0)),
            }
        )
    return out


GATEWAY_API_CHANNEL = "CHANNEL_STANDARD"


def stack_nap_limits(
    nap: NapConfig, system_pool: SystemPool, node_pools: list[NodePool]
) -> list[dict[str, object]]:
    """:func:`nap_resource_limits` of a stack: its ``nap`` block's limits and what its system
    pool and declared pools can scale to (:func:`components.plan.resolve.nap_needs`); the
    cluster's autoscaling and the Ray namespaces' ResourceQuota read it."""
    from components.plan.resolve import nap_needs

    return nap_resource_limits(nap.effective_limits, nap_needs(system_pool, node_pools))


def gateway_api_channel(services: Iterable[ServiceConfig]) -> str | None:
    """The cluster's ``gatewayApiConfig.channel``: ``CHANNEL_STANDARD`` when one of ``services``
    (the stack's ``services``) uses
    ``upgrade_strategy: NewClusterWithIncrementalUpgrade``, else None (left as GKE has it).

    KubeRay's incremental upgrade moves traffic through a Gateway and an HTTPRoute it creates
    (``gateway.networking.k8s.io/v1``), so the cluster needs the Gateway API CRDs and a controller
    for ``gateway_class_name``
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html,
    "Prerequisites"). On a GKE Standard cluster the standard channel installs both: the v1 CRDs and
    the GKE Gateway controller with its GatewayClasses (``gke-l7-rilb``,
    ``gke-l7-regional-external-managed``, ``gke-l7-global-external-managed``, ...)
    (https://cloud.google.com/kubernetes-engine/docs/how-to/deploying-gateways#enable-gateway,
    https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api). Enabling it is an
    in-place cluster update.

    Also when a service has ``gateway`` (its Gateway and HTTPRoute,
    :func:`components.raycrs.ingress.gateway_manifests`, need the same CRDs and controller).
    """
    needed = any(
        s.strategy == "NewClusterWithIncrementalUpgrade" or s.gateway is not None for s in services
    )
    return GATEWAY_API_CHANNEL if needed else None


def secret_manager_enabled(services: Iterable[ServiceConfig | JobConfig]) -> bool:
    """Whether the cluster turns on GKE's Secret Manager add-on (``secretManagerConfig.enabled``,
    pulumi-gcp ``gcp.container.Cluster(secret_manager_config=...)``): when one of ``services``
    (services and jobs) mounts a Hugging Face token (``hf_token_secret``) through its CSI driver
    ``secrets-store-gke.csi.k8s.io``
    (https://cloud.google.com/secret-manager/docs/secret-manager-managed-csi-component). Else
    False (the add-on stays off)."""
    return any(s.hf_token_secret is not None for s in services)
