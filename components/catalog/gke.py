"""GKE versions offered per release channel (:func:`gke_version_problem`), GKE version ordering
(:func:`parse_gke_version`), and the resource types Node Auto Provisioning limits
(:data:`NAP_RESOURCE_TYPES`). Sources (the tags [GKE-VERSIONS], [NAP] cited below):
docs/sources.md#catalog-gke
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .gpu import GPU_TYPES
from .tpu import TPU_GENERATIONS

# Resource types Node Auto Provisioning accepts in resource limits [NAP].
NAP_RESOURCE_TYPES: tuple[str, ...] = (
    "cpu",
    "memory",
    *(g.gke_accelerator for g in TPU_GENERATIONS.values()),
    *GPU_TYPES,
)


def parse_gke_version(version: str) -> tuple[int, ...]:
    """``"1.31.2-gke.1115000"`` -> ``(1, 31, 2, 1115000)`` for ordering; a prefix such as ``"1.31"``
    compares as its padded form.

    Raises:
        ValueError: not a GKE version string.
    """
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?", version)
    if not m:
        raise ValueError(f"{version!r} is not a GKE version (e.g. 1.31.2-gke.1115000)")
    return tuple(int(g) if g is not None else 0 for g in m.groups())


# --------------------------------------------------------------------------------- GKE versions

# GKE minor versions offered for new clusters, per release channel, as recorded on the date below
# [GKE-VERSIONS]. Kubernetes 1.31 left extended support in late 2026; 1.32 and 1.33 remain only
# in the Extended channel; the GKE Ray TPU sample pins 1.35. Refresh this record (and its date)
# from `gcloud container get-server-config` when GKE moves on: a pin outside it is refused.
GKE_VERSIONS_RECORDED = "2026-11-30"
GKE_OFFERED_MINORS: Mapping[str, tuple[str, str]] = {
    "RAPID": ("1.34", "1.37"),
    "REGULAR": ("1.34", "1.36"),
    "STABLE": ("1.34", "1.35"),
    "EXTENDED": ("1.32", "1.36"),
}


def gke_version_problem(version: str, channel: str) -> str | None:
    """Why GKE would not create a cluster pinned to ``version`` in ``channel`` (by the record
    of :data:`GKE_OFFERED_MINORS`), else None.

    Raises:
        ValueError: ``version`` is not a GKE version string.
    """
    minor = parse_gke_version(version)[:2]
    oldest, newest = GKE_OFFERED_MINORS[channel]
    if parse_gke_version(oldest)[:2] <= minor <= parse_gke_version(newest)[:2]:
        return None
    return (
        f"{version} is not offered for new clusters in the {channel} channel: GKE offered "
        f"{oldest} to {newest} there as recorded on {GKE_VERSIONS_RECORDED} (catalog "
        "GKE_OFFERED_MINORS; check `gcloud container get-server-config`)"
    )
