"""A memory-medium GCS FUSE file cache fits each Ray pod that mounts it
(``buckets.file_cache_medium: memory``): the caches' RAM disk beside Ray's object store."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components.kernel.problems import Problem
from components.storage.fuse import CACHE_HEADROOM_MIB, DOC, mounts

if TYPE_CHECKING:
    from components.config.raycrs import RayClusterConfig
    from components.config.storage import BucketsConfig
    from components.plan.plan import Plan


def _ray_pods(
    ray_clusters: list[RayClusterConfig], p: Plan
) -> Iterable[tuple[str, str, str, str | None]]:
    """``(identity, where, memory, object_store_memory)`` of every Ray pod that mounts the
    buckets: the long-lived clusters' and services' heads and worker groups, the jobs' own
    clusters' heads and workers (a worker fills one node of its pool,
    :func:`components.raycrs.pod.worker_pod_size`)."""
    from components.config.raycrs import HeadConfig
    from components.raycrs.pod import ManifestError, worker_pod_size

    def worker(pool: Any, group: Any) -> str | None:
        specs = p.pool_specs.get(pool.name) or ()
        try:
            return worker_pod_size(specs[0], group)[1] if specs else None
        except ManifestError:
            return None  # reported by the pod rules

    for rc in ray_clusters:
        yield rc.service_account, f"ray_clusters[{rc.name}] head", rc.head.memory, None
    for g in p.groups:
        if g.cluster is not None and (memory := worker(g.pool, g.group)):
            yield g.cluster.service_account, g.field, memory, g.group.object_store_memory
    for j in p.jobs:
        if j.own_cluster:
            yield j.runs_as, f"jobs[{j.job.name}] head", HeadConfig().memory, None
            if memory := worker(j.pool, j.group):
                yield j.runs_as, f"jobs[{j.job.name}]", memory, j.group.object_store_memory
    for svc, g in p.services:
        yield svc.service_account, f"services[{svc.name}] head", svc.head.memory, None
        if memory := worker(g.pool, g.group):
            yield svc.service_account, f"services[{svc.name}]", memory, g.group.object_store_memory


def memory_cache_problems(
    buckets: BucketsConfig, ray_clusters: list[RayClusterConfig], p: Plan
) -> Iterable[Problem]:
    """``file_cache_medium: memory``: each Ray pod's file caches are a RAM disk (a memory
    ``emptyDir``, whose pages count against the pod's memory limit,
    https://kubernetes.io/docs/concepts/storage/volumes/#emptydir) beside Ray's object store in
    ``/dev/shm`` (its ``object_store_memory``, else Ray's default 30 % of the pod, at most 200 GB:
    ``ray_constants.DEFAULT_OBJECT_STORE_MEMORY_PROPORTION``); both together may take at most
    :data:`components.config.raycrs.OBJECT_STORE_MAX_FRACTION` of the pod's memory, the rest being
    the Ray processes'. One problem per pod that cannot hold them, at ``buckets``; read from the
    stack's ``buckets`` and ``ray_clusters`` blocks and its Plan ``p``."""
    from components.config.raycrs import OBJECT_STORE_MAX_FRACTION
    from components.kernel.base import quantity_value
    from components.raycrs.serving import default_object_store_gb

    if buckets.file_cache_medium != "memory":
        return
    gib = 2**30
    for identity, where, memory, store in _ray_pods(ray_clusters, p):
        ident = p.identities.get(identity)
        if ident is None:
            continue
        ms = mounts(buckets, ident.buckets)
        total = sum(m.cache for m in ms)
        if not total:
            continue
        ram_disk = (total + CACHE_HEADROOM_MIB) * 2**20
        pod = quantity_value(memory)
        objects = (
            quantity_value(store) if store is not None else default_object_store_gb(pod / 1e9) * 1e9
        )
        if ram_disk + objects <= pod * OBJECT_STORE_MAX_FRACTION:
            continue
        caches = ", ".join(f"{m.purpose} {m.cache} MiB" for m in ms if m.cache)
        yield Problem(
            "buckets",
            f"buckets: file_cache_medium memory: the GCS FUSE file caches of identity {identity} "
            f"({caches}, with {CACHE_HEADROOM_MIB} MiB headroom: a {ram_disk / gib:.1f} GiB RAM "
            f"disk) and Ray's object store ({objects / gib:.1f} GiB) take more than "
            f"{OBJECT_STORE_MAX_FRACTION:.0%} of the {pod / gib:.1f} GiB memory of {where}'s pods; "
            "lower buckets.<purpose>.file_cache_size, give those pods more memory, or set "
            f"buckets.file_cache_medium: ephemeral ({DOC})",
            "fuse-cache-memory",
        )
