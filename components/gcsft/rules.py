"""Stack rules of GCS fault tolerance (:mod:`components.config.gcsft`), run only when it is on
(enabled, with a service: :func:`components.gcsft.render.ft_enabled`), each handed the blocks it
reads. KubeRay's own refusals of the rendered
``gcsFaultToleranceOptions`` (the ``ray.io/ft-enabled`` annotation beside it, ``RAY_REDIS_ADDRESS``
/ ``REDIS_PASSWORD`` / ``redis-password`` set by hand, the external-storage-namespace annotation,
the address forms, a backend's fields) are the operator rules ``raygke check`` applies to every
rendered RayService (:mod:`components.raycrs.operator.cluster`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING

from components.catalog.gke import GKE_OFFERED_MINORS, parse_gke_version
from components.gcsft.render import auth_secret_id, ft_enabled
from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig
    from components.config.gcsft import GcsFaultToleranceConfig
    from components.config.network import NetworkConfig
    from components.config.serve import ServiceConfig
    from components.config.storage import SecretConfig

# Kubernetes EnvFiles (``valueFrom.fileKeyRef``), which the head's Redis password is read
# through: alpha (off) in 1.34, beta and on by default from 1.35
# (https://kubernetes.io/docs/tasks/inject-data-application/define-environment-variable-via-file/).
ENV_FILES_MIN = (1, 35)


def gcs_ft_kubernetes_version(cluster: ClusterConfig) -> Iterable[Problem]:
    """The cluster runs Kubernetes 1.35 or later (:data:`ENV_FILES_MIN`): a
    ``cluster.min_master_version`` pinned below is refused; unset, a warning when the release
    channel still offers an older minor for new clusters
    (:data:`components.catalog.gke.GKE_OFFERED_MINORS`; GKE picks the channel's default)."""
    pinned = cluster.min_master_version
    channel = cluster.release_channel
    oldest = pinned or GKE_OFFERED_MINORS[channel][0]
    if parse_gke_version(oldest)[:2] >= ENV_FILES_MIN:
        return
    why = (
        "gcs_fault_tolerance needs Kubernetes 1.35 or later (the head reads the Redis AUTH "
        "string through an env file, valueFrom.fileKeyRef, on by default from 1.35)"
    )
    fix = 'set cluster.min_master_version: "1.35" or later, or gcs_fault_tolerance.enabled: false'
    if pinned:
        yield at(
            "cluster.min_master_version", f"{why} but cluster.min_master_version is {pinned}; {fix}"
        )
        return
    yield Problem(
        "cluster.min_master_version",
        f"{why}; the {channel} channel still offers {oldest} for new clusters: {fix}",
        "gcs_ft_kubernetes_version",
        "warning",
    )


def gcs_ft_psa_range(network: NetworkConfig) -> Iterable[Problem]:
    """``network.psa_cidr`` (the private services access range the Memorystore instance takes
    its address from) is disjoint from the subnet, Pod, Service, control-plane and GPU ranges:
    VPC peering refuses overlapping ranges
    (https://cloud.google.com/vpc/docs/configure-private-services-access)."""
    net = network
    psa = ipaddress.ip_network(net.psa_cidr)
    for key in ("subnet_cidr", "pods_cidr", "services_cidr", "master_ipv4_cidr", "gpu_cidr"):
        other = getattr(net, key)
        if psa.overlaps(ipaddress.ip_network(other)):
            yield at(
                "network.psa_cidr",
                f"network.psa_cidr {net.psa_cidr} overlaps network.{key} {other}; the ranges "
                "must be disjoint (set another private range, e.g. 10.24.0.0/20)",
            )


def gcs_ft_secret_name_free(
    cluster: ClusterConfig, secrets: list[SecretConfig]
) -> Iterable[Problem]:
    """No ``secrets:`` entry takes the name of the Secret Manager secret the stack creates for
    the instance's AUTH string (:func:`components.gcsft.render.auth_secret_id`)."""
    name = auth_secret_id(cluster.name)
    if any(s.name == name for s in secrets):
        yield at(
            f"secrets[{name}].name",
            f"secrets[{name}]: the stack creates this secret for the GCS fault tolerance "
            "Redis AUTH string; rename the entry (or set gcs_fault_tolerance.enabled: false)",
        )


def gcs_ft_rules(
    gcs_fault_tolerance: GcsFaultToleranceConfig,
    services: list[ServiceConfig],
    cluster: ClusterConfig,
    network: NetworkConfig,
    secrets: list[SecretConfig],
) -> Iterable[Problem]:
    """Every rule of :mod:`components.gcsft.rules` (GCS fault tolerance), in order, when it is on
    (:func:`components.gcsft.render.ft_enabled`)."""
    if not ft_enabled(gcs_fault_tolerance, services):
        return
    yield from gcs_ft_kubernetes_version(cluster)
    yield from gcs_ft_psa_range(network)
    yield from gcs_ft_secret_name_free(cluster, secrets)
