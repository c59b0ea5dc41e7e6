"""Ray Train ``ScalingConfig`` arguments derived from a job's target capacity (pure, no Ray import).

A job runs either on a worker group of a long-lived RayCluster (``cluster`` + ``worker_group``) or
on its own RayCluster built from a node pool (``node_pool``). Either way the node pool it lands on
is a declared pool, and the ``ScalingConfig`` keyword arguments come from the catalog's entry for
that pool's shape — never typed a second time:

* TPU: :meth:`components.catalog.TpuSlice.scaling_config` with ``slices`` = the worker group's
  ``max_replicas`` (each replica is one slice, KubeRay TPU guide
  https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html) -> ``use_tpu``,
  ``topology``, ``accelerator_type``, ``num_workers`` = hosts x slices,
  ``resources_per_worker = {"TPU": chips_per_host}``
  (https://docs.ray.io/en/latest/train/getting-started-jax.html).
* GPU: :meth:`components.catalog.GpuType.scaling_config` -> ``use_gpu``, ``num_workers`` = nodes x
  GPUs per node, ``resources_per_worker = {"GPU": 1}``
  (https://docs.ray.io/en/latest/train/api/doc/ray.train.ScalingConfig.html).
* CPU: ``num_workers`` = nodes, ``use_gpu = False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.spec import (
    CpuPool,
    GpuPool,
    JobConfig,
    StackConfig,
    TpuPool,
    WorkerGroupConfig,
    group_max_replicas,
    pool_capacity,
)


class ScalingError(ValueError):
    """A job whose target capacity cannot be resolved; the message names the field and value."""


@dataclass(frozen=True)
class JobTarget:
    """Where a job's Ray Train workers run.

    Attributes:
        pool: the declared node pool.
        replicas: worker-group replicas the job may use (slices for TPU, nodes/pods otherwise).
        worker_group: the RayCluster worker group (None when the job brings its own RayCluster).
    """

    pool: CpuPool | TpuPool | GpuPool
    replicas: int
    worker_group: WorkerGroupConfig | None = None


def job_target(cfg: StackConfig, job: JobConfig) -> JobTarget:
    """Resolve the node pool and replica count a job trains on.

    Raises:
        ScalingError: unknown cluster / worker group / node pool, or a cluster job without
            ``worker_group`` on a cluster with several worker groups (ambiguous).
    """
    where = f"jobs[{job.name}]"
    if job.node_pool:
        try:
            pool = cfg.pool(job.node_pool)
        except KeyError:
            raise ScalingError(
                f"{where}.node_pool {job.node_pool!r} is not a declared node pool; declared: "
                f"{', '.join(p.name for p in cfg.node_pools) or 'none'}"
            ) from None
        return JobTarget(pool=pool, replicas=pool_capacity(pool))
    if not job.cluster:
        raise ScalingError(f"{where}: set cluster (+ worker_group) or node_pool")
    try:
        rc = cfg.ray_cluster(job.cluster)
    except KeyError:
        raise ScalingError(
            f"{where}.cluster {job.cluster!r} is not a declared ray cluster; declared: "
            f"{', '.join(c.name for c in cfg.ray_clusters) or 'none'}"
        ) from None
    groups = {g.name: g for g in rc.worker_groups}
    if job.worker_group is None:
        if len(groups) != 1:
            raise ScalingError(
                f"{where}.worker_group is not set and ray cluster {rc.name!r} has "
                f"{len(groups)} worker groups; set one of: {', '.join(groups) or 'none'}"
            )
        group = next(iter(groups.values()))
    else:
        if job.worker_group not in groups:
            raise ScalingError(
                f"{where}.worker_group {job.worker_group!r} is not a worker group of "
                f"{rc.name!r}; its groups: {', '.join(groups) or 'none'}"
            )
        group = groups[job.worker_group]
    try:
        pool = cfg.pool(group.node_pool)
    except KeyError:
        raise ScalingError(
            f"ray_clusters[{rc.name}].worker_groups[{group.name}].node_pool {group.node_pool!r} "
            "is not a declared node pool"
        ) from None
    return JobTarget(pool=pool, replicas=group_max_replicas(pool, group), worker_group=group)


def scaling_config_for_pool(pool: CpuPool | TpuPool | GpuPool, replicas: int) -> dict[str, Any]:
    """``ray.train.ScalingConfig`` kwargs for ``replicas`` slices (TPU) or nodes (GPU/CPU) of
    ``pool``.

    Raises:
        ScalingError: ``replicas`` < 1.
    """
    if replicas < 1:
        raise ScalingError(f"replicas {replicas} must be >= 1 (node pool {pool.name!r})")
    if isinstance(pool, TpuPool):
        return pool.slice.scaling_config(replicas)
    if isinstance(pool, GpuPool):
        return pool.gpu.gpu.scaling_config(pool.gpu.count, replicas)
    return {"use_gpu": False, "num_workers": replicas}


def peak_flops_per_device(pool: CpuPool | TpuPool | GpuPool) -> float | None:
    """Peak dense bf16 FLOP/s of one accelerator of ``pool`` (a TPU chip or a GPU) from the
    catalog, for model FLOPs utilisation; None for CPU pools (no catalog peak)."""
    if isinstance(pool, TpuPool):
        return pool.slice.generation.peak_bf16_tflops * 1e12
    if isinstance(pool, GpuPool):
        return pool.gpu.gpu.peak_bf16_tflops * 1e12
    return None


def scaling_config_for_job(cfg: StackConfig, job: JobConfig) -> dict[str, Any]:
    """``ray.train.ScalingConfig`` keyword arguments for ``job`` (see the module docstring).

    Returns e.g. for a v6e 4x4 worker group with ``max_replicas: 2``::

        {"use_tpu": True, "topology": "4x4", "accelerator_type": "TPU-V6E",
         "num_workers": 8, "resources_per_worker": {"TPU": 4}}

    Raises:
        ScalingError: the job's target cannot be resolved (see :func:`job_target`).
    """
    target = job_target(cfg, job)
    return scaling_config_for_pool(target.pool, target.replicas)
