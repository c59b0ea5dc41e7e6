"""Whether a local job can run: what it asks Ray for against what the cluster has free, and a
watch that stops a job that makes no progress.

What a job asks for (:func:`job_need`), by its role (``contract.registry``):

* data (prepare): Ray Data ``map_batches`` tasks, one CPU each (Ray Data's default
  ``num_cpus=1`` per task: https://docs.ray.io/en/latest/data/api/doc/ray.data.Dataset.map_batches.html);
* trainer: Ray Train's workers, ``ScalingConfig(**scaling_kwargs(args))``
  (:func:`workloads.train_loop.scaling_kwargs`: ``num_workers`` x ``resources_per_worker``, the
  fewest of an elastic ``(min, max)``), placed as a placement group of one bundle per worker
  (``placement_strategy``), plus :data:`READ_CPUS` CPU free beside them for Ray Data's read tasks
  that feed the workers (without it the read "can never be scheduled": Ray Data's own warning,
  "Cluster resources are not enough to run any task ... The job may hang forever",
  ``ray/data/_internal/execution/resource_manager.py``, Ray 2.60);
* tuner: one trial's resources (:func:`workloads.tune_lm.trial_resources`), so that at least one
  trial runs;
* inference (batch_generate): its vLLM engines, Ray Data's actor pool (``concurrency`` engines
  of ``num_cpus`` CPUs on ``cpu``; of ``tensor_parallel_size`` GPUs or TPU chips otherwise, as
  :func:`workloads.batch_generate.processor_settings` asks), plus :data:`READ_CPUS` CPU for
  Ray Data's read and map tasks around them;
* evaluator: nothing: it runs in the job's driver, which asks Ray for no CPU (the Jobs API's
  ``entrypoint_num_cpus`` defaults to 0:
  https://docs.ray.io/en/latest/cluster/running-applications/job-submission/doc/ray.job_submission.JobSubmissionClient.submit_job.html).

What the cluster has free is Ray's own per-node account (:func:`cluster_resources`): a Serve
application's replicas and proxy hold their CPUs there, so a ``raygke local serve`` still up
shows as CPUs in use. :func:`refusal` compares the two before a run starts and names the numbers
and the fixes; :class:`StallWatch` fails a running job on Ray's "not enough resources" signal in
its log or after a set time without a progress line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from raygke.local.cluster import LocalError, LocalTarget, use_cluster_auth

READ_CPUS = 1.0  # CPUs Ray Data's read tasks need free beside a trainer's workers
# Resource lines of Ray's that mean a job waits for resources the cluster lacks. The first is
# Ray Data's after 60 s of starvation (``STARVATION_WARNING_DELAY_S``, Ray 2.60: "The job may
# hang forever"): the job fails at once. The others (the raylet's "... cannot be scheduled right
# now" warning, a string of Ray 2.60's raylet, ``src/ray/raylet/``; Ray Train v2's
# ``WorkerGroupStartupTimeoutError``, ``ray/train/v2/_internal/exceptions.py``) can pass: the
# job fails when no progress line follows within :data:`SIGNAL_GRACE_S` seconds.
HANG_FOREVER = "Cluster resources are not enough to run any task"
WAITING_SIGNALS = ("cannot be scheduled right now", "The worker group startup timed out")
SIGNAL_GRACE_S = 120.0
STALL_MINUTES = 10.0  # default of `raygke local run --stall-minutes`


@dataclass(frozen=True)
class Need:
    """What one job asks Ray for.

    Attributes:
        job: the job's name.
        workers: bundles placed together (Ray Train workers, Tune trials); 0 for none.
        per_worker: resources of each bundle (``{"CPU": 1.0}``).
        task_cpus: CPUs that must stay free beside the bundles, on one node (Ray Data's tasks).
        placement: the bundles' placement strategy (PACK, SPREAD, STRICT_PACK, STRICT_SPREAD).
        unit: what a bundle is called in messages (``worker``, ``trial``).
        sets_workers: the job takes ``num_workers`` (so ``--set JOB.num_workers=N`` is a fix).
    """

    job: str
    workers: int = 0
    per_worker: Mapping[str, float] = field(default_factory=dict)
    task_cpus: float = 0.0
    placement: str = "PACK"
    unit: str = "worker"
    sets_workers: bool = False

    def total(self) -> dict[str, float]:
        """Every resource asked for: bundles x ``per_worker``, plus ``task_cpus`` CPUs."""
        out = {k: v * self.workers for k, v in self.per_worker.items() if v}
        if self.task_cpus:
            out["CPU"] = out.get("CPU", 0.0) + self.task_cpus
        return out

    def describe(self) -> str:
        """``"2 workers x 1 CPU + 1 CPU for Ray Data's tasks = 3 CPU"``."""
        parts = []
        if self.workers:
            s = "" if self.workers == 1 else "s"
            parts.append(f"{self.workers} {self.unit}{s} x {fmt(self.per_worker)}")
        if self.task_cpus:
            parts.append(f"{self.task_cpus:g} CPU for Ray Data's tasks")
        return " + ".join(parts) + f" = {fmt(self.total())}" if len(parts) > 1 else " ".join(parts)


def fmt(resources: Mapping[str, float]) -> str:
    """``{"CPU": 2.0, "GPU": 1.0}`` -> ``"2 CPU, 1 GPU"`` (``"nothing"`` when empty)."""
    return ", ".join(f"{v:g} {k}" for k, v in sorted(resources.items()) if v) or "nothing"


def job_need(name: str, args: Mapping[str, Any]) -> Need:
    """What job ``name`` with its bound ``args`` asks Ray for (the rules in the module's
    docstring)."""
    from contract.registry import get_workload

    workload = get_workload(name)
    if workload.role == "data":
        return Need(name, task_cpus=READ_CPUS)
    if workload.role == "trainer":
        from workloads.train_loop import scaling_kwargs

        scaling = scaling_kwargs(workload.parse(dict(args)))
        n = scaling["num_workers"]
        per = dict(scaling.get("resources_per_worker") or {"CPU": 1.0})
        if scaling.get("use_gpu") and "GPU" not in per:
            per["GPU"] = 1.0
        return Need(
            name,
            workers=int(n[0] if isinstance(n, list | tuple) else n),
            per_worker={k: float(v) for k, v in per.items()},
            task_cpus=READ_CPUS,
            placement=str(scaling.get("placement_strategy") or "PACK"),
            sets_workers=not args.get("scaling"),
        )
    if workload.role == "inference":
        a = workload.parse(dict(args))
        device = {"gpu": "GPU", "tpu": "TPU"}.get(a.accelerator)
        per = {"CPU": a.num_cpus} if device is None else {device: float(a.tensor_parallel_size)}
        return Need(name, a.concurrency, per, task_cpus=READ_CPUS, unit="engine")
    if workload.role == "tuner":
        from workloads.tune_lm import trial_resources

        return Need(name, 1, trial_resources(workload.parse(dict(args))), unit="trial")
    return Need(name)


def _fits(per: Mapping[str, float], free: Mapping[str, float]) -> int:
    """How many bundles ``per`` fit in ``free`` (a node's resources)."""
    counts = [math.floor(free.get(k, 0.0) / v + 1e-9) for k, v in per.items() if v > 0]
    return min(counts) if counts else 1 << 30


def fits(need: Need, free: Sequence[Mapping[str, float]]) -> bool:
    """Whether ``need`` can start on nodes with ``free`` resources (one mapping per node):
    its bundles placed node by node as its strategy allows (PACK and SPREAD: anywhere;
    STRICT_PACK: all on one node; STRICT_SPREAD: one per node), then ``task_cpus`` CPUs still
    free on one node."""
    left = [dict(f) for f in free]
    todo = need.workers
    if need.placement == "STRICT_PACK" and todo:
        node = next((f for f in left if _fits(need.per_worker, f) >= todo), None)
        if node is None:
            return False
        for k, v in need.per_worker.items():
            node[k] = node.get(k, 0.0) - v * todo
        todo = 0
    for node in left:
        if not todo:
            break
        k = _fits(need.per_worker, node)
        k = min(k, 1) if need.placement == "STRICT_SPREAD" else k
        placed = min(k, todo)
        for r, v in need.per_worker.items():
            node[r] = node.get(r, 0.0) - v * placed
        todo -= placed
    if todo:
        return False
    return not need.task_cpus or any(n.get("CPU", 0.0) + 1e-9 >= need.task_cpus for n in left)


def _sum(nodes: Sequence[Mapping[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {k: sum(n.get(k, 0.0) for n in nodes) for k in keys}


def refusal(
    need: Need,
    free: Sequence[Mapping[str, float]],
    total: Sequence[Mapping[str, float]],
    *,
    workers: int,
    cpus_per_node: int,
    serving: bool,
) -> str | None:
    """None when ``need`` fits the ``free`` resources (one mapping per node, :func:`fits`),
    else the one-line refusal: what the job needs, what the cluster has free of its ``total``,
    and the fixes with their numbers: ``raygke local serve --stop`` when a Serve application
    holds resources (``serving``), the ``--workers`` that would fit (the cluster has ``workers``
    worker nodes of ``cpus_per_node`` CPUs), and ``--set JOB.num_workers=N`` for the most
    workers that fit now."""
    if fits(need, free):
        return None
    asked = need.total()
    have, of = _sum(free, list(asked)), _sum(total, list(asked))
    held = ", ".join(f"{max(of[k] - have[k], 0):g} {k}" for k in sorted(asked))
    text = (
        f"job {need.job} needs {need.describe()}; the local cluster has {fmt(have)} free of "
        f"{fmt(of)} ({held} in use{', a Serve application among them' if serving else ''})"
    )
    fixes = []
    if serving:
        fixes.append("`raygke local serve --stop` frees what Serve holds")
    short = asked.get("CPU", 0.0) - of.get("CPU", 0.0)
    if short > 0 and cpus_per_node:
        more = workers + math.ceil(short / cpus_per_node)
        fixes.append(f"`raygke local down` and `raygke local up --workers {more}` (more CPUs)")
    if need.sets_workers and need.workers > 1:
        fewer = next(
            (m for m in range(need.workers - 1, 0, -1) if fits(replace(need, workers=m), free)),
            None,
        )
        if fewer is not None:
            fixes.append(f"`--set {need.job}.num_workers={fewer}` (fewer workers)")
    return text + ("; fix: " + "; or ".join(fixes) if fixes else "")


def cluster_resources(
    target: LocalTarget, address: str
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """``(free, total)``: each live node's available and total resources, as Ray's GCS
    accounts them now (``ray._private.state.GlobalState.available_resources_per_node`` /
    ``total_resources_per_node``, Ray 2.60: what ``ray.available_resources()`` sums, without
    connecting a driver).

    Raises:
        Exception: the GCS does not answer (the caller says so and goes on).
    """
    use_cluster_auth(target)
    from ray._private.state import GlobalState
    from ray._raylet import GcsClientOptions

    state = GlobalState()
    state._initialize_global_state(
        GcsClientOptions.create(
            address, None, allow_cluster_id_nil=True, fetch_cluster_id_if_nil=False
        )
    )
    try:
        totals = state.total_resources_per_node()
        free = state.available_resources_per_node()
    finally:
        state.disconnect()
    ids = sorted(totals)
    return [dict(free.get(i, {})) for i in ids], [dict(totals[i]) for i in ids]


class JobStalled(LocalError):
    """A running job waits for resources the cluster lacks, or made no progress for the set
    time; ``str(e)`` says which, with the numbers."""


@dataclass
class StallWatch:
    """Watches one running job's log lines (:meth:`line`) and the clock (:meth:`check`);
    raises :class:`JobStalled` on :data:`HANG_FOREVER`, on a :data:`WAITING_SIGNALS` line not
    followed by a progress line within ``grace_s`` seconds, or after ``stall_s`` seconds (None:
    never) without a progress line (since the job was submitted or its last one). ``describe``
    gives the numbers for the message (what is free now)."""

    job: str
    stall_s: float | None
    grace_s: float = SIGNAL_GRACE_S
    describe: Callable[[], str] = lambda: ""
    clock: Callable[[], float] = time.monotonic
    last: float = field(default=0.0, init=False)
    signal: tuple[str, float] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.last = self.clock()

    def _fail(self, why: str) -> JobStalled:
        numbers = self.describe()
        return JobStalled(f"{self.job} {why}" + (f"; {numbers}" if numbers else ""))

    def line(self, text: str, progress: bool) -> None:
        """Look at one log line (``progress``: it is a progress line)."""
        if progress:
            self.last, self.signal = self.clock(), None
            return
        if HANG_FOREVER in text:
            raise self._fail(f"cannot get the resources it needs; Ray: {text.strip()}")
        if self.signal is None and any(s in text for s in WAITING_SIGNALS):
            self.signal = (text.strip(), self.clock())

    def check(self) -> None:
        """Raise when the job waited too long (see the class)."""
        now = self.clock()
        if self.signal is not None and now - self.signal[1] >= self.grace_s:
            raise self._fail(
                f"made no progress for {self.grace_s:.0f} s after Ray said: {self.signal[0]}"
            )
        if self.stall_s is not None and now - self.last >= self.stall_s:
            raise self._fail(
                f"made no progress for {self.stall_s / 60:g} min (no progress line; "
                "--stall-minutes sets the limit, 0 waits forever)"
            )
