"""The names of GCS fault tolerance's GCP objects, and whether a stack creates them (standard
pieces of :mod:`components.gcsft.render`, which re-exports them; here so that
:func:`components.stack.name_checks.derived_names` lists them without importing the render)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from components.kernel.base import GKE_NAME_MAX

if TYPE_CHECKING:
    from components.config.gcsft import GcsFaultToleranceConfig


def ft_enabled(gcs_fault_tolerance: GcsFaultToleranceConfig, services: list[Any]) -> bool:
    """Whether the stack's RayServices get GCS fault tolerance: ``gcs_fault_tolerance.enabled``
    and at least one of ``services`` (nothing is created without one)."""
    return gcs_fault_tolerance.enabled and bool(services)


def _bounded(name: str, limit: int) -> str:
    """``name`` when it fits ``limit`` characters, else its start and a stable 4-hex hash."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:4]
    return f"{name[: limit - 5].rstrip('-')}-{digest}"


def instance_name(cluster: str) -> str:
    """The Memorystore instance id ``<cluster>-gcs`` (``cluster.name``; 1-40 lowercase letters,
    digits and hyphens, https://cloud.google.com/memorystore/docs/redis/create-manage-instances)."""
    return _bounded(f"{cluster}-gcs", GKE_NAME_MAX)


def auth_secret_id(cluster: str) -> str:
    """The Secret Manager secret holding the instance's AUTH string: ``<cluster>-redis-auth``
    (``cluster.name``)."""
    return f"{cluster}-redis-auth"


def psa_range_name(network: str) -> str:
    """The global address reserved for private services access: ``<network>-psa``
    (``network.name``; at most 63 characters, a Compute Engine name)."""
    return _bounded(f"{network}-psa", 63)
