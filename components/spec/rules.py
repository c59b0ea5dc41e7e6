"""Cross-field rules of a stack: rules that span several fields, run once every field is valid."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components import catalog
from components.spec.base import _ZONE
from components.spec.pools import GpuPool, TpuPool
from components.spec.resolve import group_max_replicas, nap_needs, pool_capacity

if TYPE_CHECKING:
    from components.spec.stack import StackConfig


def _duplicates(names: Iterable[str]) -> list[str]:
    return sorted(n for n, c in Counter(names).items() if c > 1)


def _cross_problems(cfg: StackConfig) -> Iterable[str]:
    """Rules that span several fields. Yields one readable line per problem."""
    for z in cfg.zones:
        if not _ZONE.match(z) or not z.startswith(cfg.region + "-"):
            yield f"zones: {z!r} is not a zone of region {cfg.region} (e.g. {cfg.region}-a)"

    for what, names in (
        ("node_pools", [p.name for p in cfg.node_pools] + ["system"]),
        ("ray_clusters", [c.name for c in cfg.ray_clusters]),
        ("jobs", [j.name for j in cfg.jobs]),
        ("workload_identities", [w.name for w in cfg.workload_identities]),
        ("secrets", [s.name for s in cfg.secrets]),
    ):
        for dup in _duplicates(names):
            note = " ('system' is the built-in system pool)" if dup == "system" else ""
            yield f"{what}: name {dup!r} is used more than once{note}"

    # Zones offered per accelerator.
    for pool in cfg.node_pools:
        zones = cfg.pool_zones(pool)
        for z in zones:
            if pool.zones and not z.startswith(cfg.region + "-"):
                yield f"node_pools[{pool.name}].zones: {z!r} is not in region {cfg.region}"
        if isinstance(pool, TpuPool | GpuPool) and not pool.allow_unlisted_zone:
            acc = pool.slice.generation if isinstance(pool, TpuPool) else pool.gpu.gpu
            label = f"TPU {acc.name}" if isinstance(pool, TpuPool) else acc.name
            for z in zones:
                if z not in acc.zones:
                    yield (
                        f"node_pools[{pool.name}]: {label} is not offered in zone {z} per the "
                        f"catalog; offered in: {', '.join(acc.zones)} (set allow_unlisted_zone: "
                        "true if Google offers it there now)"
                    )
        if isinstance(pool, TpuPool) and cfg.cluster.min_master_version:
            need = pool.slice.generation.min_gke_version
            have = cfg.cluster.min_master_version
            if catalog.parse_gke_version(have) < catalog.parse_gke_version(need):
                yield (
                    f"cluster.min_master_version {have} is older than {need}, the oldest GKE "
                    f"version with TPU {pool.slice.generation.name} node pools "
                    f"(node_pools[{pool.name}])"
                )

    # NAP limits must cover what the declared pools can scale to.
    if cfg.nap.enabled:
        needed = nap_needs(cfg)
        for key, have in cfg.nap.resource_limits.items():
            if key in needed and have < needed[key]:
                yield (
                    f"nap.resource_limits[{key}] {have} is smaller than the declared node pools "
                    f"can scale to ({needed[key]}); raise it to at least {needed[key]}"
                )

    # References.
    pool_names = {p.name: p for p in cfg.node_pools}
    identity_names = {w.name for w in cfg.workload_identities}
    for rc in cfg.ray_clusters:
        if rc.service_account not in identity_names:
            yield (
                f"ray_clusters[{rc.name}].service_account {rc.service_account!r} is not a declared "
                f"workload identity; declared: {', '.join(sorted(identity_names)) or 'none'}"
            )
        for dup in _duplicates(g.name for g in rc.worker_groups):
            yield f"ray_clusters[{rc.name}].worker_groups: name {dup!r} is used more than once"
        for g in rc.worker_groups:
            where = f"ray_clusters[{rc.name}].worker_groups[{g.name}]"
            pool = pool_names.get(g.node_pool)
            if pool is None:
                yield (
                    f"{where}.node_pool {g.node_pool!r} is not a declared node pool; declared: "
                    f"{', '.join(pool_names) or 'none'}"
                )
                continue
            limit = pool_capacity(pool)
            mx = group_max_replicas(pool, g)
            if g.min_replicas > mx:
                yield f"{where}: min_replicas {g.min_replicas} > max_replicas {mx}"
            if mx > limit:
                unit = "slices" if isinstance(pool, TpuPool) else "nodes"
                yield (
                    f"{where}.max_replicas {mx} exceeds node pool {pool.name!r} capacity of "
                    f"{limit} {unit}"
                )
    if cfg.kuberay.mode == "helm" and not cfg.kuberay.tpu_webhook:
        users = [
            (f"ray_clusters[{rc.name}].worker_groups[{g.name}]", g.node_pool)
            for rc in cfg.ray_clusters
            for g in rc.worker_groups
        ] + [(f"jobs[{j.name}].node_pool", j.node_pool) for j in cfg.jobs if j.node_pool]
        for where, pool_name in users:
            pool = pool_names.get(pool_name or "")
            if isinstance(pool, TpuPool) and pool.slice.multi_host:
                yield (
                    f"{where}: the multi-host TPU slice {pool.tpu.generation} "
                    f"{pool.tpu.topology} needs the TPU initialization webhook, which "
                    "kuberay.mode 'helm' does not install; set kuberay.mode: gke-addon, or "
                    "kuberay.tpu_webhook: true once you have installed it"
                )
    cluster_names = {c.name: c for c in cfg.ray_clusters}
    for job in cfg.jobs:
        where = f"jobs[{job.name}]"
        if job.cluster and job.cluster not in cluster_names:
            yield (
                f"{where}.cluster {job.cluster!r} is not a declared ray cluster; declared: "
                f"{', '.join(cluster_names) or 'none'}"
            )
        if job.cluster in cluster_names and job.worker_group:
            groups = [g.name for g in cluster_names[job.cluster].worker_groups]
            if job.worker_group not in groups:
                yield (
                    f"{where}.worker_group {job.worker_group!r} is not a worker group of "
                    f"{job.cluster!r}; its groups: {', '.join(groups) or 'none'}"
                )
        if job.node_pool and job.node_pool not in pool_names:
            yield (
                f"{where}.node_pool {job.node_pool!r} is not a declared node pool; declared: "
                f"{', '.join(pool_names) or 'none'}"
            )
        if job.service_account not in identity_names:
            yield (
                f"{where}.service_account {job.service_account!r} is not a declared workload "
                f"identity; declared: {', '.join(sorted(identity_names))}"
            )
        problem = _workload_problem(job.workload)
        if problem:
            yield f"{where}.workload {problem}"
            continue
        workload = _workload(job.workload)
        for p in workload.arg_problems(job.args):
            yield f"{where}.args: {p}"
        # The job's processes run as the RayCluster's service account when it is submitted to a
        # long-lived cluster, else as its own; that account must be allowed to write what the
        # workload writes (bucket-level roles, components/iam.py).
        runs_as = (
            cluster_names[job.cluster].service_account
            if job.cluster in cluster_names
            else job.service_account
        )
        identity = next((w for w in cfg.workload_identities if w.name == runs_as), None)
        for purpose in workload.writes:
            if identity is not None and identity.buckets.get(purpose) != "write":
                yield (
                    f"{where}: workload {job.workload} writes to the {purpose} bucket but runs as "
                    f"{runs_as!r}, which has {identity.buckets.get(purpose) or 'no'} access there; "
                    f"set workload_identities[{runs_as}].buckets.{purpose}: write"
                )
    for secret in cfg.secrets:
        for r in secret.readers:
            if r not in identity_names:
                yield (
                    f"secrets[{secret.name}].readers: {r!r} is not a declared workload identity; "
                    f"declared: {', '.join(sorted(identity_names))}"
                )


def _workload(name: str) -> Any:
    from workloads.registry import get_workload

    return get_workload(name)


def _workload_problem(name: str) -> str | None:
    # workloads.registry is standard-library only (design: components may refer to workloads by
    # module path, never import ray/torch/jax).
    from workloads.registry import WORKLOADS

    if name not in WORKLOADS:
        return f"{name!r} is not a registered workload; registered: {', '.join(WORKLOADS)}"
    return None
