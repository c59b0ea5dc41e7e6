"""Cloud Storage FUSE tuned for training: a mount's options by the bucket's profile
(:func:`mount_options`, :func:`pod_mounts`), the file cache's pod settings
(:func:`cache_pod_settings`) and its size (:func:`cache_problems`).
Sources: docs/sources.md#storage-fuse
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from components.config.storage import BucketConfig, BucketsConfig, hns_by_purpose
from components.config.storage import hns_of as hns_of  # the storage component's import
from contract.quantity import quantity_float
from contract.storage import HNS_MOUNTS_ENV

if TYPE_CHECKING:
    from components.kernel.problems import Problem
    from components.plan.plan import Plan

FuseProfile = Literal["dataset", "checkpoints", "model", "plain"]
PURPOSE_PROFILE: dict[str, FuseProfile] = {
    "datasets": "dataset",
    "checkpoints": "checkpoints",
    "artifacts": "plain",
}
"""A bucket's profile when ``fuse_profile`` is unset, by its purpose."""
PROFILE_CACHE: dict[FuseProfile, str | None] = {
    "dataset": "20Gi",
    "checkpoints": "20Gi",
    "model": "20Gi",
    "plain": None,
}
"""The file cache size when ``file_cache_size`` is unset (None: no file cache)."""

CACHE_VOLUME = "gke-gcsfuse-cache"
EPHEMERAL_LIMIT_ANNOTATION = "gke-gcsfuse/ephemeral-storage-limit"
WRITABLE_TTL_SECONDS = 60
RENAME_DIR_LIMIT = 200000
READ_AHEAD_KB = 1024
EPHEMERAL_SHARE = 0.5
# Room above the caches in the sidecar's ephemeral-storage limit / the RAM cache volume (the
# limit "must be larger than" the cache): the sidecar's own buffers and logs.
CACHE_HEADROOM_MIB = 1024
DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-perf"


def profile_of(purpose: str, bucket: BucketConfig) -> FuseProfile:
    """The bucket's FUSE profile: its ``fuse_profile``, else :data:`PURPOSE_PROFILE`."""
    return bucket.fuse_profile or PURPOSE_PROFILE[purpose]


def cache_mib(purpose: str, bucket: BucketConfig) -> int:
    """The bucket's file cache in MiB (``file-cache:max-size-mb``), 0 for none: its
    ``file_cache_size`` quantity, else :data:`PROFILE_CACHE` of its profile."""
    size = bucket.file_cache_size
    if size is None:
        size = PROFILE_CACHE[profile_of(purpose, bucket)]
    return 0 if size is None else math.ceil(quantity_float(size) / 2**20)


def mount_options(profile: FuseProfile, *, read_only: bool, cache: int, hns: bool) -> str:
    """The ``mountOptions`` string of one mount (comma-separated, no spaces, as the CSI driver
    takes it) for ``profile``, a ``read_only`` mount, a file cache of ``cache`` MiB (0: none) on
    an HNS bucket or not (``hns``); each choice and its source: docs/sources.md#storage-fuse.
    Every bucket a workload identity names is mounted into its Ray pods as a CSI ephemeral
    volume (:func:`components.raycrs.pod.gcs_fuse_volumes`) with these options as its
    ``volumeAttributes.mountOptions``, the profile chosen by :func:`profile_of`."""
    opts = ["implicit-dirs"]
    if profile == "plain":
        return ",".join(opts)
    ttl = -1 if read_only else WRITABLE_TTL_SECONDS
    opts += [
        f"metadata-cache:ttl-secs:{ttl}",
        "metadata-cache:stat-cache-max-size-mb:-1",
        "metadata-cache:type-cache-max-size-mb:-1",
    ]
    if read_only and profile in ("dataset", "model"):
        opts.append("file-system:kernel-list-cache-ttl-secs:-1")
    if cache:
        opts.append(f"file-cache:max-size-mb:{cache}")
        if profile in ("dataset", "model"):
            opts.append("file-cache:cache-file-for-range-read:true")
        if profile in ("checkpoints", "model"):
            opts.append("file-cache:enable-parallel-downloads:true")
    if profile in ("checkpoints", "model"):
        opts.append(f"read_ahead_kb={READ_AHEAD_KB}")
    if profile == "checkpoints" and not hns:
        opts.append(f"file-system:rename-dir-limit:{RENAME_DIR_LIMIT}")
    return ",".join(opts)


@dataclass(frozen=True)
class Mount:
    """One bucket mount of a pod: ``purpose``, ``read_only``, its ``options`` string, its file
    cache (MiB, 0: none) and whether its bucket has hierarchical namespace."""

    purpose: str
    read_only: bool
    options: str
    cache: int
    hns: bool


def mounts(buckets: BucketsConfig, access: Mapping[str, str]) -> list[Mount]:
    """The mounts of an identity with bucket ``access`` (purpose -> ``read`` | ``write``), sorted
    by purpose."""
    out = []
    hierarchical = hns_by_purpose(buckets)
    for purpose, role in sorted(access.items()):
        bc = getattr(buckets, purpose)
        cache, hns, ro = cache_mib(purpose, bc), hierarchical[purpose], role == "read"
        opts = mount_options(profile_of(purpose, bc), read_only=ro, cache=cache, hns=hns)
        out.append(Mount(purpose, ro, opts, cache, hns))
    return out


def cache_pod_settings(
    medium: str, ms: Iterable[Mount], mount_root: str
) -> tuple[dict[str, str], list[dict[str, Any]], list[dict[str, str]]]:
    """``(annotations, volumes, env)`` a pod with mounts ``ms`` (under ``mount_root``) needs:
    with a file cache on ``ephemeral`` storage the sidecar's
    ``gke-gcsfuse/ephemeral-storage-limit`` above the caches' sum; on ``memory`` the
    ``gke-gcsfuse-cache`` memory ``emptyDir`` of that size; and ``RAYGKE_HNS_MOUNTS`` naming the
    HNS mounts (:mod:`contract.storage`)."""
    ms = list(ms)
    total = sum(m.cache for m in ms)
    annotations: dict[str, str] = {}
    volumes: list[dict[str, Any]] = []
    if total:
        size = f"{total + CACHE_HEADROOM_MIB}Mi"
        if medium == "memory":
            volumes.append(
                {"name": CACHE_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}
            )
        else:
            annotations[EPHEMERAL_LIMIT_ANNOTATION] = size
    hns = [f"{mount_root}/{m.purpose}" for m in ms if m.hns]
    env = [{"name": HNS_MOUNTS_ENV, "value": ":".join(hns)}] if hns else []
    return annotations, volumes, env


def pod_mounts(
    buckets: BucketsConfig, access: Mapping[str, str], mount_root: str
) -> tuple[list[Mount], tuple[dict[str, str], list[dict[str, Any]], list[dict[str, str]]]]:
    """What a pod of an identity with bucket ``access`` (purpose -> ``read`` | ``write``; the
    ``buckets`` block's buckets, mounted under ``mount_root``) gets in one call: its
    :func:`mounts` and their :func:`cache_pod_settings` on ``buckets.file_cache_medium``."""
    ms = mounts(buckets, access)
    return ms, cache_pod_settings(buckets.file_cache_medium, ms, mount_root)


def cache_problems(buckets: BucketsConfig, p: Plan) -> Iterable[Problem]:
    """For the stack's ``buckets`` block and its Plan ``p``: caches on ``ephemeral`` storage that take more than :data:`EPHEMERAL_SHARE` of the boot
    disk of a pool a worker group or job of the identity runs on, one problem per (identity,
    pool), at ``buckets`` (caches in ``memory``: :mod:`components.raycrs.cache_fit`)."""
    from components.kernel.problems import Problem

    if buckets.file_cache_medium != "ephemeral":
        return  # in memory: components.raycrs.cache_fit
    seen: set[tuple[str, str]] = set()
    targets = [(g.cluster.service_account if g.cluster else None, g.pool) for g in p.groups]
    targets += [(j.runs_as, j.pool) for j in p.jobs]
    for identity, pool in targets:
        ident = p.identities.get(identity) if identity else None
        if ident is None or (identity, pool.name) in seen:
            continue
        seen.add((identity, pool.name))
        ms = mounts(buckets, ident.buckets)
        total_gb = sum(m.cache for m in ms) * 2**20 / 1e9
        allowed = pool.disk_size_gb * EPHEMERAL_SHARE
        if total_gb > allowed:
            caches = ", ".join(f"{m.purpose} {m.cache} MiB" for m in ms if m.cache)
            yield Problem(
                "buckets",
                f"buckets: the GCS FUSE file caches of identity {identity} ({caches}: "
                f"{total_gb:.1f} GB) take more than {EPHEMERAL_SHARE:.0%} of pool {pool.name}'s "
                f"{pool.disk_size_gb} GB boot disk, which also holds images, logs and Ray's "
                "spill; lower buckets.<purpose>.file_cache_size, raise the pool's disk_size_gb "
                f"or set buckets.file_cache_medium: memory ({DOC})",
                "fuse-cache-size",
            )
