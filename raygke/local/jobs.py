"""``raygke local run``: submit registry workloads to the local cluster through the Ray Jobs API.

Each job's entrypoint comes from :mod:`contract.registry`; its arguments are wired to the
stack's bucket folders (:func:`job_args`). Nothing here names a workload: roles, local variants
(``--accelerator tpu`` runs train_lm's JAX variant), per-accelerator arguments and frameworks come
from the registry entries (:class:`contract.workload.Workload`). The ``workloads/`` and
``contract/`` packages are staged, content addressed, under ``<artifacts>/working_dir/<sha>/`` and
passed as the job's ``runtime_env`` ``working_dir`` — the same shape as the RayJob on GKE, whose
working_dir is the same archive in the artifacts bucket. Results come from each job's last log line
``RAYGKE_RESULT {json}``.

Ray is imported lazily (inside the functions that submit jobs).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.args.base import ArgError, JobContext, parse_value
from contract.registry import (
    FAULTS_ENV,
    PROGRESS_PREFIX,
    RESULT_PREFIX,
    WORKLOADS,
    bind_job_args,
    get_workload,
    with_role,
)
from raygke.local.cluster import LocalError, LocalTarget, use_cluster_auth

ACCELERATORS = ("cpu", "gpu", "tpu")
# The packages a job's working_dir holds (the repository's folders of these names).
PACKAGES = ("workloads", "contract")
ROOT = Path(__file__).resolve().parents[2]
TPU_HINT = "no emulated TPU hosts; run `raygke local up --tpu v5e:2x2`"
# Roles that read the checkpoint this run trained (job_args binds it as their `checkpoint`).
READS_TRAINED = ("evaluator", "inference")


def dataset_name(data: str | None) -> str:
    """Folder name under the datasets bucket for a corpus URI: ``stdlib`` for the default corpus,
    else ``<basename>-<sha1(uri)[:8]>`` (deterministic, so later jobs find it)."""
    if not data:
        return "stdlib"
    base = re.sub(r"[^A-Za-z0-9]+", "-", os.path.basename(data.rstrip("/")) or "corpus")
    return f"{base.strip('-')[:40] or 'corpus'}-{hashlib.sha1(data.encode()).hexdigest()[:8]}"


def absolute_data(data: str | None) -> str | None:
    """A local path or glob made absolute (jobs run in their working_dir); URIs unchanged."""
    if not data or "://" in data:
        return data
    return os.path.abspath(os.path.expanduser(data))


def parse_overrides(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["train_lm.steps=20", ...]`` -> ``{"train_lm": {"steps": 20}}``; values parsed as JSON
    when they parse, else kept as strings.

    The values for one job are checked together (``report_every`` against ``steps``,
    ``n_heads`` against ``d_model``: the workload's cross-argument rules,
    :attr:`contract.args.base.WorkloadArgs.RULES`), as the ``args:`` of a stack file's job are, so
    ``--set train_lm.d_model=96 --set train_lm.n_heads=3`` is accepted in either order.

    Raises:
        LocalError: an item is not ``JOB.KEY=VALUE``, names an unknown job, or an argument the
            workload does not accept (or a value of the wrong type), or the job's values
            together break one of its rules.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        m = re.fullmatch(r"([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)=(.*)", item, flags=re.S)
        if not m:
            raise LocalError(f"--set {item!r} is not JOB.KEY=VALUE (e.g. train_lm.steps=50)")
        job, key, raw = m.groups()
        if job not in WORKLOADS:
            raise LocalError(f"--set {item!r}: unknown job {job!r}; valid: {', '.join(WORKLOADS)}")
        value = parse_value(raw)
        # each value alone first (names the item), the job's values together below
        alone = WORKLOADS[job].arg_problems({key: value})
        problems = [p for p in alone if p.path]  # the argument's own, not the workload's rules
        if problems:
            raise LocalError(f"--set {item!r}: {problems[0]}")
        out.setdefault(job, {})[key] = value
    for job, values in out.items():
        problems = WORKLOADS[job].arg_problems(values)
        if problems:
            shown = " ".join(f"{job}.{k}={json.dumps(v)}" for k, v in values.items())
            raise LocalError(f"--set {shown}: {problems[0]}")
    return out


def variant_of(name: str) -> str | None:
    """The workload whose local variant ``name`` is (train_lm for train_lm_jax), or None."""
    return next((w.name for w in WORKLOADS.values() if name in w.local_variants.values()), None)


def check_overrides(names: Sequence[str], overrides: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse, before any job runs, an override for a job that a local variant replaces here
    (train_lm's, when train_lm_jax runs instead with ``--accelerator tpu``) that the variant
    does not accept.

    Raises:
        LocalError: naming the override and the accepted arguments.
    """
    for name in names:
        original = variant_of(name)
        if original is None or original not in overrides:
            continue
        problems = WORKLOADS[name].arg_problems(overrides[original])
        if problems:
            raise LocalError(f"--set {original}.* applies to {name} here: {problems[0]}")


def resolve_jobs(jobs: Sequence[str], accelerator: str) -> list[str]:
    """Validate job names; map each to its local variant for ``accelerator``
    (:attr:`contract.workload.Workload.local_variants`: train_lm -> train_lm_jax on ``tpu``).

    Raises:
        LocalError: unknown job, unknown accelerator, a variant that is not registered, a
            trainer asked to run on an accelerator it does not support (``train_lm_tf`` on
            ``tpu``), or a TensorFlow job on ``gpu`` without TensorFlow's CUDA build here.
    """
    if accelerator not in ACCELERATORS:
        raise LocalError(f"--accelerator {accelerator!r} is not one of {', '.join(ACCELERATORS)}")
    out = []
    for name in jobs:
        if name not in WORKLOADS:
            raise LocalError(f"unknown job {name!r}; valid: {', '.join(sorted(WORKLOADS))}")
        if WORKLOADS[name].is_service:
            raise LocalError(
                f"{name} is a Ray Serve application, not a job; deploy it with `raygke local serve`"
            )
        variant = WORKLOADS[name].local_variants.get(accelerator)
        if variant is not None:
            if variant not in WORKLOADS:
                raise LocalError(
                    f"--accelerator {accelerator} runs {name} as the workload {variant}, which "
                    "is not registered"
                )
            name = variant
        workload = get_workload(name)
        refusal = workload.refusal(accelerator) if workload.role == "trainer" else None
        if refusal:
            raise LocalError(f"--accelerator {accelerator}: {refusal}")
        if accelerator == "gpu" and workload.framework == "tensorflow":
            tf_gpu_problem = local_tensorflow_gpu_problem()
            if tf_gpu_problem:
                raise LocalError(f"--accelerator gpu: {name}: {tf_gpu_problem}")
        out.append(name)
    return out


def local_tensorflow_gpu_problem() -> str | None:
    """Why this environment cannot run TensorFlow on GPUs, or None: it needs TensorFlow's CUDA
    build (the ``tensorflow`` distribution, pyproject extra ``tf-gpu``), not the CPU build
    ``tensorflow-cpu`` (extra ``tf``) the dev environment installs beside PyTorch; the two CUDA
    stacks cannot share an environment (:data:`contract.registry.TF_GPU_CONFLICT`)."""
    import importlib.metadata

    try:
        importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return (
            "this environment has no TensorFlow GPU build (the tensorflow distribution, "
            "pyproject extra tf-gpu; the dev environment's tf extra is tensorflow-cpu, and the "
            "GPU build cannot sit beside PyTorch's CUDA wheels); run it with --accelerator cpu "
            "here, or on a stack's GPU pool (the gpu-tf image)"
        )
    return None


def tpu_args(state: Mapping[str, Any]) -> dict[str, Any]:
    """Scaling arguments for a JAX job on the emulated TPU hosts recorded in ``state``.

    Delegates to ``raygke.local.tpu_emulation.tpu_job_args(state)`` (owned by the TPU emulation).

    Raises:
        LocalError: that module is absent, or the cluster has no emulated TPU hosts.
    """
    if not state.get("tpu"):
        raise LocalError(TPU_HINT)
    from raygke.local.tpu_emulation import tpu_job_args

    try:
        return dict(tpu_job_args(state))
    except ValueError as e:
        raise LocalError(str(e)) from None


def job_args(
    name: str,
    state: Mapping[str, Any],
    data: str | None,
    run_name: str,
    results: Mapping[str, Mapping[str, Any]],
    accelerator: str = "cpu",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Arguments for job ``name`` wired to the local bucket folders, bound by
    :func:`contract.registry.bind_job_args` (the one binding the GKE RayJobs use too).

    The data job (prepare) writes ``<datasets>/<dataset_name(data)>``; a trainer or tuner reads
    it and stores checkpoints under ``<checkpoints>/<run_name>``; an evaluator reads the
    checkpoint the trainer reported in this run (``results``), else the newest valid one of
    ``run_name``, and so does a batch-inference job (role ``inference``), which writes under
    ``<artifacts>``. Each value reaches a job only where its arguments have the field
    (:func:`contract.registry.bind_job_args`). On ``tpu`` a job taking ``scaling`` gets the
    emulated TPU hosts'. Then the entry's :attr:`~contract.workload.Workload.local_args` for
    ``accelerator`` (``use_gpu`` on ``gpu``; tune_lm's ``trainer: jax`` on ``tpu``), then the
    ``overrides`` (``--set``, :func:`parse_overrides`): those of the job a local variant
    replaces first (``train_lm``'s apply to ``train_lm_jax``), then the job's own.

    Raises:
        LocalError: no emulated TPU hosts for ``accelerator="tpu"``, an override the workload
            does not accept, or a batch-inference job without its ``prompts``.
    """
    buckets = state["buckets"]
    trained = trained_result(results)
    workload = get_workload(name)
    takes_scaling = "scaling" in workload.args.names()
    scaling = tpu_args(state)["scaling"] if accelerator == "tpu" and takes_scaling else None
    context = JobContext(
        dataset=os.path.join(buckets["datasets"], dataset_name(data)),
        storage_path=buckets["checkpoints"],
        name=run_name,
        scaling=scaling,
        data=data,
        checkpoint=trained.get("checkpoint") if workload.role in READS_TRAINED else None,
        artifacts=buckets["artifacts"],
    )
    args: dict[str, Any] = json.loads(json.dumps(dict(workload.local_args.get(accelerator, {}))))
    overrides = overrides or {}
    original = variant_of(name)
    if original is not None:
        args.update(overrides.get(original, {}))
    args.update(overrides.get(name, {}))
    try:
        bound = bind_job_args(name, context, args)
    except ArgError as e:
        raise LocalError(f"job {name}: {e.problems[0]}") from None
    if workload.role == "inference" and not bound.get("prompts"):
        raise LocalError(
            f"job {name}: prompts: required (a folder, glob or gs:// prefix of .jsonl or .txt "
            f"files); give it with --set {name}.prompts=PATH"
        )
    return bound


def trained_result(results: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The result of this run's trainer (the first registered trainer, then tuner (its best
    trial), that ran), or an empty mapping."""
    names = (*with_role("trainer"), *with_role("tuner"))
    return next((results[t] for t in names if results.get(t)), {})


def parse_result(logs: str) -> dict[str, Any] | None:
    """The JSON of the last ``RAYGKE_RESULT {json}`` line of a job's logs, or None."""
    for line in reversed(logs.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                value = json.loads(line[len(RESULT_PREFIX) :])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


def stage_working_dir(artifacts: str, root: Path = ROOT) -> str:
    """Copy the :data:`PACKAGES` (``workloads``, ``contract``) of ``root`` to
    ``<artifacts>/working_dir/<sha256[:16]>/<package>``.

    The digest covers every file's package, relative path and bytes (``__pycache__`` excluded),
    so unchanged packages reuse their folder. Returns the folder to use as ``working_dir``.
    """
    h = hashlib.sha256()
    for package in PACKAGES:
        src = root / package
        files = sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for p in files:
            h.update(f"{package}/{p.relative_to(src)}".encode() + b"\0" + p.read_bytes() + b"\0")
    dest = Path(artifacts) / "working_dir" / h.hexdigest()[:16]
    if not all((dest / package).is_dir() for package in PACKAGES):
        tmp = dest.with_name(dest.name + f".tmp-{uuid.uuid4().hex[:6]}")
        for package in PACKAGES:
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(root / package, tmp / package, ignore=ignore)
        try:
            tmp.rename(dest)
        except OSError:  # a concurrent run staged it first (or an older layout is there)
            shutil.rmtree(tmp, ignore_errors=True)
    return str(dest)


@dataclass
class JobOutcome:
    """What one submitted job ended with."""

    name: str
    job_id: str
    status: str
    seconds: float
    result: dict[str, Any] | None = None
    message: str = ""
    log_tail: list[str] = field(default_factory=list)
    reused: bool = False  # not run: its result from the interrupted run (:func:`reusable`)


def run_job(
    target: LocalTarget,
    state: Mapping[str, Any],
    name: str,
    args: Mapping[str, Any],
    working_dir: str,
    on_log: Callable[[str], None],
    on_status: Callable[[str], None],
    poll_s: float = 0.5,
    tail_lines: int = 40,
    watch: Any = None,
) -> JobOutcome:
    """Submit one job, stream its logs line by line to ``on_log``, wait for a terminal status;
    with ``watch`` (:class:`raygke.local.capacity.StallWatch`), every line and poll pass it
    first, and a job it finds stalled is stopped.

    Returns:
        A :class:`JobOutcome`; ``status`` is Ray's (SUCCEEDED, FAILED, STOPPED), or STALLED with
        the watch's message; ``result`` the parsed ``RAYGKE_RESULT`` (None when missing),
        ``log_tail`` the last ``tail_lines`` lines.
    """
    from raygke.local.capacity import JobStalled

    use_cluster_auth(target)
    from ray.job_submission import JobStatus, JobSubmissionClient

    client = JobSubmissionClient(state["dashboard_url"])
    job_id = f"raygke-{name}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"
    started = time.monotonic()
    client.submit_job(
        entrypoint=get_workload(name).entrypoint(args),
        submission_id=job_id,
        # RAY_ADDRESS for every process of the job: Ray Train's own helper actors look the
        # cluster up "automatically" otherwise, which finds other clusters on a shared machine.
        runtime_env={
            "working_dir": working_dir,
            "env_vars": {
                "PYTHONUNBUFFERED": "1",
                "RAY_ADDRESS": state["address"],
                # test-only fault injection (workloads/faults.py), only when this process has it
                **({FAULTS_ENV: os.environ[FAULTS_ENV]} if os.environ.get(FAULTS_ENV) else {}),
            },
        },
        metadata={"raygke_stack": target.stack, "raygke_job": name},
    )
    printed = 0
    pending = ""
    status = JobStatus.PENDING
    try:
        while True:
            status = client.get_job_status(job_id)
            on_status(str(status.value))
            logs = client.get_job_logs(job_id)
            if len(logs) > printed:
                chunk = pending + logs[printed:]
                printed = len(logs)
                *lines, pending = chunk.split("\n")
                for line in lines:
                    if watch is not None:
                        watch.line(line, PROGRESS_PREFIX in line)
                    on_log(line)
            if status.is_terminal():
                break
            if watch is not None:
                watch.check()
            time.sleep(poll_s)
    except JobStalled as e:
        client.stop_job(job_id)
        logs = client.get_job_logs(job_id)
        return JobOutcome(
            name, job_id, "STALLED", time.monotonic() - started, None, str(e),
            logs.splitlines()[-tail_lines:],
        )  # fmt: skip
    except (KeyboardInterrupt, SystemExit):
        client.stop_job(job_id)
        raise
    logs = client.get_job_logs(job_id)
    if pending:
        on_log(pending)
    info = client.get_job_info(job_id)
    return JobOutcome(
        name=name,
        job_id=job_id,
        status=str(status.value),
        seconds=time.monotonic() - started,
        result=parse_result(logs),
        message=(info.message or "").strip(),
        log_tail=logs.splitlines()[-tail_lines:],
    )


# ------------------------------------------------------------------------------ resume, retries

PENDING_FILE = "pending_run.json"


def pipeline_key(
    names: Sequence[str],
    data: str | None,
    overrides: Mapping[str, Mapping[str, Any]],
    accelerator: str,
) -> str:
    """What makes two ``raygke local run`` calls "the same pipeline": the jobs, the corpus, the
    ``--set`` values and the accelerator (sha256 of their JSON, 16 hex digits)."""
    blob = json.dumps([list(names), data, overrides, accelerator], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def read_pending(target: LocalTarget) -> dict[str, Any] | None:
    """The record of the last run that started training and did not finish
    (``<root>/<stack>/runs/pending_run.json``: ``key``, ``run_name``, ``jobs``, ``started``, and
    ``done``: the jobs that succeeded in it, :func:`done_entry`), or None. Kept beside the runs,
    not in state.json, so it survives ``raygke local down``; an unreadable record is ignored (the
    run then starts fresh)."""
    try:
        value = json.loads((target.dir / "runs" / PENDING_FILE).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and {"key", "run_name"} <= set(value) else None


def write_pending(target: LocalTarget, record: Mapping[str, Any] | None) -> None:
    """Record (or with None, forget) the run that is training now; see :func:`read_pending`."""
    path = target.dir / "runs" / PENDING_FILE
    if record is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(record), indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def args_digest(args: Mapping[str, Any]) -> str:
    """sha256 (16 hex digits) of a job's bound arguments as JSON: what a reused result must have
    been produced with (:func:`reusable`)."""
    blob = json.dumps(dict(args), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def done_entry(outcome: JobOutcome, args: Mapping[str, Any]) -> dict[str, Any]:
    """What the pending record keeps of a job that succeeded: ``job_id``, ``seconds``,
    ``result`` and ``args`` (:func:`args_digest`)."""
    return {
        "job_id": outcome.job_id,
        "seconds": round(outcome.seconds, 2),
        "result": outcome.result,
        "args": args_digest(args),
    }


def reusable(name: str, entry: Any, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The result of job ``name`` recorded in the pending run (``entry``, :func:`done_entry`)
    when a resumed run may use it instead of running the job again, else None.

    It may when the job succeeded there with the same bound arguments (``args``) and its
    outputs are still there: a data job's dataset (``<dataset>/_manifest.json``, which prepare
    writes last), a job's reported ``checkpoint`` folder when local. A job that must run again
    (the dataset deleted, the arguments changed because an earlier job ran again) simply runs.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("result"), dict):
        return None
    if entry.get("args") != args_digest(args):
        return None
    result = entry["result"]
    if get_workload(name).role == "data":
        from workloads.common import dataset_manifest

        if not args.get("dataset") or dataset_manifest(str(args["dataset"])) is None:
            return None
    ckpt = result.get("checkpoint")
    if isinstance(ckpt, str) and "://" not in ckpt and not os.path.isdir(ckpt):
        return None
    return result


def resume_point(checkpoints: str, run_name: str) -> tuple[int, str] | None:
    """``(step, path)`` of the newest verifying checkpoint of ``run_name`` under the checkpoints
    folder — where a resumed trainer continues (Ray Train restores the latest checkpoint of a
    run with the same ``RunConfig(name, storage_path)``,
    https://docs.ray.io/en/latest/train/user-guides/fault-tolerance.html; the workloads verify it,
    :func:`workloads.common.restore_checkpoint`) — or None when it has none."""
    from workloads.checkpoint import latest_valid_checkpoint

    found = latest_valid_checkpoint(os.path.join(checkpoints, run_name))
    if found is None:
        return None
    return int(found[1].get("step", 0)), str(found[0])


_FAILURE_POLICY = re.compile(r"\[FailurePolicy\] (RETRY|RAISE)")
_ERROR_COUNT = re.compile(r"Error count: (\d+) \(max allowed: ([^)]+)\)")


class RetryWatch:
    """Spots Ray Train's retries in a job's log lines, for the console.

    Ray Train (v2) logs its failure decision as ``[FailurePolicy] RETRY`` followed by
    ``Error count: N (max allowed: M)`` (``ray/train/v2/_internal/execution/failure_handling/
    default.py``, Ray 2.60); independently, a trainer's progress step going backwards means its
    workers restarted from a checkpoint. :meth:`line` and :meth:`progress` return the text to
    show, or None.
    """

    def __init__(self, job: str) -> None:
        self.job = job
        self.decision: str | None = None
        self.last_step: int | None = None
        self.restarts = 0

    def line(self, text: str) -> str | None:
        m = _FAILURE_POLICY.search(text)
        if m:
            self.decision = m.group(1)
            return None
        m = _ERROR_COUNT.search(text)
        if m and self.decision:
            decision, self.decision = self.decision, None
            n, limit = m.groups()
            if decision == "RETRY":
                return f"{self.job}: a training worker failed; Ray Train retries ({n} of {limit})"
            return f"{self.job}: a training worker failed {n} time(s); no retry left ({limit})"
        return None

    def progress(self, event: Mapping[str, Any]) -> str | None:
        if event.get("stage") != "train":
            return None
        step = int(event["done"])
        back = self.last_step is not None and step < self.last_step
        previous, self.last_step = self.last_step, step
        if back:
            self.restarts += 1
            return f"{self.job}: workers restarted at step {step} (were at step {previous})"
        return None
