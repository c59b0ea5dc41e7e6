"""The ``gcs_fault_tolerance`` block (:class:`GcsFaultToleranceConfig`): GCS fault tolerance of the
stack's RayServices and the external Redis the stack creates for it (Memorystore for Redis,
:mod:`components.gcsft.render`). New default: on for stacks written for defaults 2026-12-08 or
later; older stacks keep it off (:mod:`components.config.epochs`).
Sources (why, and how KubeRay does it): docs/sources.md#config-gcsft
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.kernel.base import StrictModel

# Memorystore for Redis capacity per instance: 1-300 GB (https://cloud.google.com/memorystore/
# docs/redis/pricing, "capacity tiers"; the API's memorySizeGb).
REDIS_MEMORY_GB_MAX = 300
REDIS_VERSIONS = ("REDIS_7_2", "REDIS_7_0", "REDIS_6_X")


class GcsFaultToleranceConfig(StrictModel):
    """GCS fault tolerance of the RayServices (KubeRay's ``gcsFaultToleranceOptions``) and the
    Memorystore for Redis the stack creates for it: private services access, AUTH, TLS, CMEK
    (docs/deploying.md, "GCS fault tolerance")."""

    enabled: bool = Field(
        True,
        description="Give every RayService `gcsFaultToleranceOptions` backed by a Memorystore "
        "for Redis instance the stack creates (private services access, AUTH with the password "
        "in Secret Manager, TLS, CMEK): a RayService's head can restart without losing its "
        "Serve applications (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/"
        "kuberay-gcs-ft.html). Nothing is created without `services`. Default `true` for stacks "
        "written for defaults 2026-12-08 or later, `false` before. Needs Kubernetes 1.35 or "
        "later (`cluster.min_master_version`): the head reads the password through an env "
        "file (`fileKeyRef`, beta and on by default from 1.35).",
    )
    tier: Literal["BASIC", "STANDARD_HA"] = Field(
        "STANDARD_HA",
        description="Memorystore tier: `STANDARD_HA` (a replica in another zone, automatic "
        "failover) or `BASIC` (one node; its failure loses the GCS state it holds) "
        "(https://cloud.google.com/memorystore/docs/redis/redis-tiers).",
    )
    memory_size_gb: int = Field(
        1,
        ge=1,
        le=REDIS_MEMORY_GB_MAX,
        description="Memorystore capacity in GB (1-300); the GCS of a serving cluster holds "
        "megabytes (node, actor, job and placement-group tables, Serve's key-value state).",
    )
    redis_version: Literal["REDIS_7_2", "REDIS_7_0", "REDIS_6_X"] = Field(
        "REDIS_7_2",
        description="Redis version of the instance (https://cloud.google.com/memorystore/docs/"
        "redis/supported-versions).",
    )
