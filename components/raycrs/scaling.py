"""Ray Train ``ScalingConfig`` arguments of a job (:func:`scaling_config_for_job`,
:func:`job_workers`), from the catalog's entry for its pool's shape (pure, no Ray import; never
typed a second time). Sources: docs/sources.md#raycrs-scaling
"""

from __future__ import annotations

from typing import Any

from components.config.nodepools import CpuPool, GpuPool, TpuPool
from components.plan.resolve import JobTarget, PoolFacts, pool_facts
from contract.errors import ConfigurationError


class ScalingError(ConfigurationError):
    """``ScalingConfig`` arguments that cannot be built (fewer than one replica); unresolvable
    targets raise :class:`components.plan.resolve.ResolveError` (see :func:`components.plan.resolve.resolve_job`)."""


def scaling_config_for_pool(
    pool: CpuPool | TpuPool | GpuPool, replicas: int, facts: PoolFacts | None = None
) -> dict[str, Any]:
    """``ray.train.ScalingConfig`` kwargs for ``replicas`` slices (TPU) or nodes (GPU/CPU) of
    ``pool``, whose catalog facts are ``facts`` (a target's, :attr:`JobTarget.facts`; looked up
    when None).

    Raises:
        ScalingError: ``replicas`` < 1.
    """
    if replicas < 1:
        raise ScalingError(f"replicas {replicas} must be >= 1 (node pool {pool.name!r})")
    facts = facts or pool_facts(pool)
    if facts.slice is not None:
        return facts.slice.scaling_config(replicas)
    if facts.gpu is not None and isinstance(pool, GpuPool):
        return facts.gpu.scaling_config(pool.gpu.count, replicas)
    return {"use_gpu": False, "num_workers": replicas}


def peak_flops_per_device(facts: PoolFacts) -> float | None:
    """Peak dense bf16 FLOP/s of one accelerator (a TPU chip or a GPU) of a pool with the
    catalog facts ``facts`` (:func:`components.plan.resolve.pool_facts`), for model FLOPs
    utilisation; None for CPU pools (no catalog peak)."""
    if facts.slice is not None:
        return facts.slice.generation.peak_bf16_tflops * 1e12
    if facts.gpu is not None:
        return facts.gpu.peak_bf16_tflops * 1e12
    return None


def scaling_config_for_job_target(target: JobTarget) -> dict[str, Any]:
    """:func:`scaling_config_for_pool` of ``target``'s pool and replicas plus the job's
    ``placement_strategy`` when set; a TPU job's ``slices: {min, max}`` gives ``max`` slices,
    elastic down to ``min`` (``num_workers`` a ``(min, max)`` tuple,
    :meth:`components.catalog.TpuSlice.scaling_config`).

    Raises:
        ScalingError: ``replicas`` < 1.
    """
    job, replicas, s = target.job, target.replicas, target.slice
    if job.slices is not None and s is not None:
        # elastic slices: (hosts x min, hosts x max) workers, catalog.TpuSlice.scaling_config
        out = s.scaling_config(min(job.slices.max, replicas), job.slices.min)
    else:
        out = scaling_config_for_pool(target.pool, replicas, target.facts)
    if job.placement_strategy is not None:
        out["placement_strategy"] = job.placement_strategy
    return out


def scaling_config_for_job(target: JobTarget) -> dict[str, Any]:
    """``ray.train.ScalingConfig`` keyword arguments for a job's target (``plan(cfg).job(job)``,
    :meth:`components.plan.plan.Plan.job`).

    A job runs either on a worker group of a long-lived RayCluster (``cluster`` +
    ``worker_group``) or on its own RayCluster built from a node pool (``node_pool``); its
    :class:`~components.plan.resolve.JobTarget` (resolved once by
    :func:`components.plan.resolve.resolve_job`) says which pool and how many replicas. Either
    way the pool is a declared one, and the arguments come from the catalog's entry for its
    shape (per kind: docs/sources.md#raycrs-scaling).

    Returns e.g. for a v6e 4x4 worker group with ``max_replicas: 2``::

        {"use_tpu": True, "topology": "4x4", "accelerator_type": "TPU-V6E",
         "num_workers": 8, "resources_per_worker": {"TPU": 4}}

    Raises:
        ScalingError: fewer than one replica.
    """
    return scaling_config_for_job_target(target)


def job_workers(target: JobTarget) -> tuple[dict[str, Any], float | None]:
    """What a job's workload is told of its workers: the ``ScalingConfig`` kwargs of its target
    (:func:`scaling_config_for_job`) and the peak FLOP/s of one of their accelerators
    (:func:`peak_flops_per_device`, None on a CPU pool).

    Raises:
        ScalingError: fewer than one replica.
    """
    return scaling_config_for_job(target), peak_flops_per_device(target.facts)
