"""A batch-inference job (a workload of role ``inference``: ``batch_generate``, vLLM under Ray
Data, :mod:`workloads.batch_generate`) on its node pool: what the platform sets in its
arguments (:func:`batch_platform_args`) and what ``raygke check`` refuses
(:func:`batch_job_problems`). Pure; no Pulumi. Each setting and refusal, and why:
docs/sources.md#raycrs-batch-fit
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.raycrs import JobConfig
    from components.plan.plan import Plan
    from components.plan.resolve import JobTarget

INFERENCE = "inference"
PLATFORM_BOUND_BATCH_ARGS: Mapping[str, str] = {
    "accelerator": "the node pool's kind",
    "accelerator_type": "the node pool's GPU type or TPU generation (the catalog)",
    "storage_path": "the checkpoints bucket's GCS FUSE mount",
    "artifacts": "the artifacts bucket",
}


def is_batch(workload: str) -> bool:
    """Whether ``workload`` is a registered batch-inference workload (role ``inference``)."""
    from contract.registry import WORKLOADS

    w = WORKLOADS.get(workload)
    return w is not None and w.role == INFERENCE


def engines_that_fit(target: JobTarget, tp: int) -> int:
    """Engines of ``tp`` devices the job's worker group holds (at least 1)."""
    from components.raycrs.serving import serve_devices

    dev = serve_devices(target.pool)
    per_pod = 1 if dev.kind == "cpu" else dev.per_pod // max(1, tp)
    return max(1, target.replicas * per_pod)


def batch_platform_args(
    bucket_url: str, target: JobTarget, args: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments the platform gives a batch-inference job on ``target`` (the module
    docstring), ``args`` (the job's own) on top where they may be set. ``bucket_url``: the
    artifacts bucket's URL."""
    from components.raycrs.pod import MOUNT_ROOT
    from components.raycrs.serving import serve_devices, tensor_parallel_size

    dev = serve_devices(target.pool)
    tp = 1 if dev.kind == "cpu" else tensor_parallel_size(args, dev)
    out: dict[str, Any] = {**args, "accelerator": dev.kind, "tensor_parallel_size": tp}
    if dev.ray_accelerator_type is not None:
        out["accelerator_type"] = dev.ray_accelerator_type
    out.setdefault("concurrency", engines_that_fit(target, tp))
    out["storage_path"] = f"{MOUNT_ROOT}/checkpoints"
    out["artifacts"] = bucket_url
    return out


def batch_job_problems(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """What of a batch-inference job cannot run (:mod:`components.raycrs.batch_fit`'s docstring;
    https://docs.ray.io/en/latest/data/working-with-llms.html), one Problem each."""
    from components.plan.resolve import ResolveError
    from components.raycrs.serving import serve_devices

    for job in jobs:
        if not is_batch(job.workload):
            continue
        where = f"jobs[{job.name}]"
        for key in sorted(set(job.args) & set(PLATFORM_BOUND_BATCH_ARGS)):
            yield at(
                f"{where}.args.{key}",
                f"{where}.args.{key}: {job.args[key]!r} (allowed: unset; the platform sets it "
                f"from {PLATFORM_BOUND_BATCH_ARGS[key]})",
            )
        try:
            target = p.job(job)
        except (ResolveError, KeyError):
            continue
        if job.cluster:
            yield at(
                f"{where}.cluster",
                f"{where}.cluster: {job.cluster!r} (allowed: unset, with node_pool: a "
                f"{job.workload} job brings its own cluster, whose pods run a vLLM image; a "
                "long-lived cluster's pods run the pool's image)",
            )
            continue
        dev = serve_devices(target.pool)
        if dev.hosts > 1:
            yield at(
                f"{where}.node_pool",
                f"{where}.node_pool: {target.pool.name!r}, a multi-host "
                f"{target.pool.slice.topology} slice (allowed: a GPU pool, a CPU pool or a "
                "single-host TPU slice: Ray 2.60's vLLMEngineProcessorConfig has no TPU "
                "topology, so one engine cannot span the slice's hosts; multi-host TPU batch "
                "inference is ray-project/ray#65422)",
            )
            continue
        tp = job.args.get("tensor_parallel_size")
        if dev.kind == "cpu" and tp not in (None, 1):
            yield at(
                f"{where}.args.tensor_parallel_size",
                f"{where}.args.tensor_parallel_size: {tp!r} (allowed: 1 on CPU pool "
                f"{target.pool.name!r}: an engine of vLLM's CPU build is one process; give it "
                "more CPUs with args.num_cpus)",
            )
            continue
        if dev.kind != "cpu" and isinstance(tp, int) and tp > dev.per_pod:
            yield at(
                f"{where}.args.tensor_parallel_size",
                f"{where}.args.tensor_parallel_size: {tp} (allowed: at most the {dev.per_pod} "
                f"{dev.kind.upper()} device(s) of one node of pool {target.pool.name!r})",
            )
            continue
        most = engines_that_fit(target, tp if isinstance(tp, int) else dev.per_pod)
        want = job.args.get("concurrency")
        if isinstance(want, int) and want > most:
            yield at(
                f"{where}.args.concurrency",
                f"{where}.args.concurrency: {want} (allowed: at most {most}, the engines the "
                f"job's {target.replicas} pod(s) of pool {target.pool.name!r} hold)",
            )


__all__ = [
    "PLATFORM_BOUND_BATCH_ARGS",
    "batch_job_problems",
    "batch_platform_args",
    "engines_that_fit",
    "is_batch",
]
