"""Does a training job fit its devices? The stack side of :mod:`contract.train_fit` (pure; no
Pulumi): the devices of a job's target and their memory, the job's model, batch and
parallelism from its arguments, and the rule ``job_memory_fits`` that refuses a job whose
estimate exceeds a device's usable memory. Where each fact comes from:
docs/sources.md#raycrs-training-fit
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.nodepools import GpuPool, TpuPool
from components.kernel.problems import Problem, at
from components.plan.resolve import ResolveError
from contract.train_fit import (
    GB,
    Estimate,
    LmShape,
    assumed_memory,
    auto_shard_degree,
    choose_parallelism,
    estimate,
    fixes,
)

if TYPE_CHECKING:
    from components.config.raycrs import JobConfig
    from components.plan.plan import Plan

# Trainers whose arguments give the model (contract/args/train.py) and their framework.
FIT_TRAINERS = {"train_lm": "torch", "train_lm_jax": "jax", "train_lm_tf": "tensorflow"}


@dataclass(frozen=True)
class JobDevices:
    """The devices a job trains on.

    Attributes:
        kind: ``gpu`` | ``tpu`` | ``cpu``.
        count: devices of the job (at its minimum size when elastic).
        per_worker: devices of one Ray Train worker (a TPU host's chips; else 1).
        memory: bytes of one device (0 when unknown).
        most: the most devices the job's pool holds (the "more chips" fix).
        what: one phrase for messages (``TPU v6e chip (32 GB HBM)``).
        per_slice: devices of one TPU slice (all of the job's elsewhere).
    """

    kind: str
    count: int
    per_worker: int
    memory: float
    most: int
    what: str
    per_slice: int = 0


def job_devices(p: Any, target: Any) -> JobDevices | None:
    """The devices of ``target`` (a :class:`components.plan.resolve.JobTarget` of plan ``p``);
    None when the worker pod's size is unknown (a stack that validated only in part)."""
    from components.raycrs.scaling import ScalingError, scaling_config_for_job

    try:
        scaling = scaling_config_for_job(target)
    except ScalingError:
        return None
    n = scaling["num_workers"]
    workers = int(n[0]) if isinstance(n, (list, tuple)) else int(n)
    pool = target.pool
    if isinstance(pool, TpuPool):
        s = pool.slice
        gen = catalog.tpu_generation(s.generation.name)
        return JobDevices(
            "tpu",
            workers * s.chips_per_host,
            s.chips_per_host,
            gen.hbm_gb * GB,
            pool.max_slices * s.chips,
            f"TPU {gen.name} chip ({gen.hbm_gb} GB HBM)",
            s.chips,
        )
    if isinstance(pool, GpuPool):
        g = catalog.GPU_TYPES[pool.gpu.type]
        return JobDevices(
            "gpu",
            workers,
            1,
            g.memory_gb * GB,
            pool.max_nodes * pool.gpu.count,
            f"{g.display} ({g.memory_gb} GB)",
        )
    memory = _pod_memory(p, pool.name, target.group)
    if memory is None:
        return None
    return JobDevices(
        "cpu", workers, 1, memory, pool.max_nodes, f"CPU worker pod ({memory / GB:.1f} GB)"
    )


def _pod_memory(p: Any, pool: str, group: Any) -> float | None:
    from components.raycrs.pod import ManifestError, worker_pod_size
    from contract.quantity import quantity_float

    try:
        specs = p.pool_specs.get(pool) or ()
    except ValueError:  # the stack validated only in part: its field errors are reported
        return None
    if not specs:
        return None
    try:
        _, memory = worker_pod_size(specs[0], group)
    except ManifestError:
        return None
    return quantity_float(memory)


@dataclass(frozen=True)
class JobFit:
    """A training job's estimate and what produced it."""

    job: str
    estimate: Estimate
    shape: LmShape
    devices: JobDevices
    options: dict[str, Any]
    fsdp_available: bool
    checkpointing_available: bool
    shard_problem: str | None = None
    shard_field: str = "shard_degree"
    shard_over: int = 0
    scope: str = "the job's {n} devices"


def job_fit(p: Plan, job: JobConfig, context: int) -> JobFit | None:
    """The fit of ``job`` on its target in plan ``p`` (``context``: the dataset's context
    length, for a trainer without its own: :func:`components.raycrs.serving.dataset_context`);
    None when it is not a trainer of :data:`FIT_TRAINERS`, its target or arguments do not
    resolve (their rules report them) or its devices are unknown."""
    from contract.args.base import ArgError
    from contract.registry import get_workload

    framework = FIT_TRAINERS.get(job.workload)
    if framework is None:
        return None
    try:
        target = p.job(job)
        a = get_workload(job.workload).parse(dict(job.args))
    except (ResolveError, ArgError, KeyError, TypeError, ValueError):
        return None
    dev = job_devices(p, target)
    if dev is None or getattr(a, "init_model", None):  # a fine-tune: training_fit_lines says so
        return None
    memory, _ = assumed_memory(dev.memory, getattr(a, "device_memory_gb", None))
    if memory != dev.memory:  # the run's rule: device_memory_gb when at most the device's
        dev = replace(dev, memory=memory, what=f"{dev.what} taken as {memory / GB:g} GB")
    shape = LmShape(a.d_model, a.n_layers, a.context_length or context, a.mlp_ratio)
    compute = _compute_dtype(a, dev.kind)
    options: dict[str, Any] = {
        "optimizer": a.optimizer,
        "compute": compute,
        "framework": framework,
        "kind": dev.kind,
    }
    rows = a.batch_size / dev.per_worker
    if framework == "jax":
        return _jax_fit(job.name, a, shape, dev, rows, options)
    parallelism = getattr(a, "parallelism", None)
    checkpointing = bool(getattr(a, "activation_checkpointing", False))
    replica = estimate(
        shape,
        rows=rows,
        memory=dev.memory,
        checkpointing=checkpointing,
        parallelism="ddp" if parallelism is not None else "replicated",
        **options,
    )
    shard_problem = None
    if parallelism is None:
        est = replica
    else:
        mode = choose_parallelism(replica) if parallelism == "auto" else parallelism
        degree = dev.count
        shard = getattr(a, "shard_degree", None)
        if mode == "fsdp" and shard is not None:
            if dev.count % shard:
                shard_problem = (
                    f"shard_degree {shard} does not divide the job's {dev.count} workers "
                    "(FSDP shards over groups of shard_degree workers and replicates across them)"
                )
            degree = min(shard, dev.count)
        est = (
            replica
            if mode == "ddp"
            else estimate(
                shape,
                rows=rows,
                memory=dev.memory,
                checkpointing=checkpointing,
                parallelism="fsdp",
                degree=degree,
                **options,
            )
        )
    return JobFit(
        job.name,
        est,
        shape,
        dev,
        options,
        fsdp_available=parallelism is not None,
        checkpointing_available=hasattr(a, "activation_checkpointing"),
        shard_problem=shard_problem,
    )


def _jax_fit(
    name: str, a: Any, shape: LmShape, dev: JobDevices, rows: float, options: dict[str, Any]
) -> JobFit:
    """The JAX trainer's fit: its mesh as the trainer sizes it (:func:`contract.mesh.mesh_shape`
    over the job's devices and slices, ``auto`` from the same estimate), the state divided by
    ``fsdp`` x ``tensor``; fsdp spans at most one slice (more slices add data parallelism)."""
    from contract.mesh import MeshError, mesh_shape

    per_slice = dev.per_slice or dev.count
    slices = max(1, dev.count // per_slice)
    t = a.tensor_degree

    def sharded(d: int) -> Estimate:
        return estimate(
            shape, rows=rows, memory=dev.memory, parallelism="fsdp", degree=d * t, **options
        )

    replica = estimate(shape, rows=rows, memory=dev.memory, parallelism="replicated", **options)
    problem, field, est = None, "shard_degree", replica
    try:
        m = mesh_shape(
            dev.count,
            slices=slices,
            parallelism=a.parallelism,
            shard_degree=a.shard_degree,
            tensor=t,
            n_heads=a.n_heads,
            auto=lambda c: auto_shard_degree(replica, sharded, c),
        )
    except MeshError as e:
        problem, field = str(e), e.field
    else:
        if m.fsdp * m.tensor > 1:
            est = sharded(m.fsdp)
    return JobFit(
        name,
        est,
        shape,
        dev,
        options,
        fsdp_available=True,
        checkpointing_available=False,
        shard_problem=problem,
        shard_field=field,
        shard_over=max(1, per_slice // t) if per_slice % t == 0 else 1,
        scope="a slice's {n} chips" if dev.kind == "tpu" else "the job's {n} devices",
    )


def _memory_problem(assumed: float, dev: JobDevices) -> str | None:
    """``device_memory_gb`` (``assumed``, GB) above the memory of one of the job's devices,
    where the run would use the device's own (:func:`contract.train_fit.assumed_memory`)."""
    if assumed_memory(dev.memory, assumed)[0] != assumed * GB:
        return (
            f"{assumed:g} GB is more than one {dev.what} holds (allowed: at most "
            f"{dev.memory / GB:g}; unset, the fit and the trainer use the device's own memory)"
        )
    return None


def device_memory_problems(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """A trainer's ``device_memory_gb`` no larger than its devices' memory (the catalog's GPU
    memory or TPU HBM per chip, a CPU worker pod's memory): ``parallelism: auto`` may assume a
    smaller device, never a bigger one."""
    from contract.args.base import ArgError
    from contract.registry import get_workload

    for job in jobs:
        assumed = job.args.get("device_memory_gb") if job.workload in FIT_TRAINERS else None
        if not isinstance(assumed, (int, float)) or isinstance(assumed, bool):
            continue
        try:
            get_workload(job.workload).parse(dict(job.args))
            dev = job_devices(p, p.job(job))
        except (ResolveError, ArgError, KeyError, TypeError, ValueError):
            continue
        problem = dev and _memory_problem(float(assumed), dev)
        if problem:
            field = f"jobs[{job.name}].args.device_memory_gb"
            yield at(field, f"{field}: {problem}")


def _compute_dtype(a: Any, kind: str) -> str:
    explicit = getattr(a, "compute_dtype", "auto")
    if explicit in ("bfloat16", "bf16"):
        return "bf16"
    if explicit == "float32":
        return "fp32"
    if a.precision != "auto":
        return a.precision
    return "fp32" if kind == "cpu" else "bf16"


def job_memory_fits(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """A training job (``train_lm``, ``train_lm_jax``, ``train_lm_tf``) fits the memory of each
    of its devices: parameters, gradients and optimizer state (divided by the sharding degree)
    plus activations at its batch and context, against the catalog's memory per chip or GPU (a
    CPU pool's worker pod) less the runtime's reserve (:mod:`contract.train_fit`, the estimate
    ``parallelism: auto`` also reads). The problem gives the bytes per device and the fixes in
    order: fsdp, more chips, activation checkpointing, a smaller batch. Also: a ``shard_degree``
    that does not divide the job's workers, or a ``device_memory_gb`` above the device's
    (:func:`device_memory_problems`)."""
    from components.raycrs.serving import dataset_context

    yield from device_memory_problems(p, jobs)
    context = dataset_context(jobs)
    for job in jobs:
        fit = job_fit(p, job, context)
        if fit is None:
            continue
        where = f"jobs[{job.name}]"
        if fit.shard_problem:
            field = f"{where}.args.{fit.shard_field}"
            yield at(field, f"{field}: {fit.shard_problem}")
        est = fit.estimate
        if est.fits:
            continue
        steps = fixes(
            est,
            fit.shape,
            # the JAX mesh shards within one slice: its fsdp axis, no "more chips" beyond it
            workers_degree=fit.shard_over or fit.devices.count,
            more_devices=None if fit.shard_over else fit.devices.most,
            fsdp_available=fit.fsdp_available,
            checkpointing_available=fit.checkpointing_available,
            scope=fit.scope,
            **fit.options,
        )
        listed = "; ".join(f"{i}) {s}" for i, s in enumerate(steps, 1))
        yield at(
            f"{where}.args",
            f"{where}: {job.workload} does not fit a {fit.devices.what}: {est.describe()} "
            f"(d_model {fit.shape.d_model}, n_layers {fit.shape.n_layers}, context "
            f"{fit.shape.context}, optimizer {fit.options['optimizer']}, "
            f"{fit.options['compute']} compute, {fit.devices.count} devices); fixes in order: "
            f"{listed}",
        )


def training_fit_lines(p: Plan, jobs: list[JobConfig]) -> list[str]:
    """One line per training job of ``jobs`` (the stack's, planned in ``p``): its bytes per
    device (``raygke check`` prints them)."""
    from components.raycrs.serving import dataset_context

    out = []
    context = dataset_context(jobs)
    for job in jobs:
        fit = job_fit(p, job, context)
        source = job.args.get("init_model") if job.workload in FIT_TRAINERS else None
        if fit is None and isinstance(source, str):
            out.append(
                f"job {job.name}: fit not checked: it fine-tunes {source}, whose config.json "
                "raygke check does not read (the trainer's parallelism auto measures it)"
            )
        elif fit is not None:
            out.append(
                f"job {job.name}: {fit.estimate.describe()} ({fit.devices.count} x "
                f"{fit.devices.what})"
            )
    return out


__all__ = [
    "FIT_TRAINERS",
    "JobDevices",
    "JobFit",
    "device_memory_problems",
    "job_fit",
    "job_memory_fits",
    "training_fit_lines",
]
