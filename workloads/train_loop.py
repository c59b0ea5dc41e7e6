"""The training loop both trainers share (:mod:`workloads.train_lm` in PyTorch,
:mod:`workloads.train_lm_jax` in JAX); each brings only a :class:`Stepper` (load a batch, take
one optimisation step, save a checkpoint, extra metrics).

Shared here, so the two cannot drift:

* data: ``ray.data.read_parquet(<dataset>/train)`` as the ``"train"`` dataset, refused on the
  driver when it holds fewer rows than one batch per worker (:class:`DatasetTooSmall`, before
  any worker starts); each worker iterates ``ray.train.get_dataset_shard("train")`` in pyarrow
  batches of ``batch_size`` rows ``[B, context_length + 1]`` (``drop_last``), repeating epochs
  until ``steps``; an epoch that yields no batch at all ends the run with
  :class:`DatasetTooSmall` (never an endless loop of empty epochs);
* shuffle: Ray Data's local shuffle buffer (``8 * batch_size`` rows) seeded with
  :func:`shuffle_seed` ``= seed + 1000 * epoch + step + rank``;
* schedule: metrics every ``log_every`` steps, a checkpoint every ``checkpoint_every`` steps and
  at the last step (:func:`workloads.common.report_step`), written by rank 0 with
  :mod:`workloads.checkpoint`; resume from the verified checkpoint
  (:func:`workloads.common.restore_checkpoint`), the step counter continuing from its step;
  the last step's checkpoint also holds the Hugging Face model folder ``hf/``
  (:mod:`workloads.hf_export`, in the same atomic write and manifest);
* throughput: global tokens/s = local tokens x world size over step time, the first step of an
  attempt (warm-up / XLA compile) left out;
* scaling: ``ray.train.ScalingConfig(**scaling_kwargs(args))`` — the ``scaling`` argument
  (ScalingConfig kwargs of the node pool / slice, ``components/raycrs/scaling.py``) when set,
  else ``num_workers`` workers of ``cpus_per_worker`` CPUs (+1 GPU each with ``use_gpu``);
* run: ``RunConfig(name, storage_path, FailureConfig(max_failures),
  CheckpointConfig(num_to_keep=keep_checkpoints))``; the test log ``step_log``; a test's
  crash after a step comes from :mod:`workloads.faults`, not from the arguments.

Metrics per report: ``step``, ``loss`` (nats/byte), ``first_loss``, ``tokens_per_s``,
``step_time_s``, ``epoch`` plus the stepper's extras.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from contract.args.train import TrainArgs
from workloads.common import (
    InputError,
    dataset_context_length,
    dataset_manifest,
    join,
    report_step,
)
from workloads.faults import carry, crash_after_step


class DatasetTooSmall(InputError):
    """The training split is missing, empty, or holds fewer rows than one batch per worker."""


class Stepper(Protocol):
    """What a framework brings to :func:`run_loop`."""

    def load(self, batch: Any) -> Any:
        """A pyarrow batch ``[B, T+1]`` -> the framework's input (not timed)."""

    def step(self, tokens: Any) -> tuple[float, int]:
        """One optimisation step (timed; must block until done): ``(loss in nats/byte, tokens
        trained on by this worker)``."""

    def save(
        self, directory: str, *, step: int, first_loss: float | None, final: bool = False
    ) -> Any:
        """Write the checkpoint into ``directory`` (:mod:`workloads.checkpoint`); its path. The
        run's last checkpoint (``final``) also holds the Hugging Face model folder
        (:data:`contract.checkpoint.HF_SUBDIR`, :mod:`workloads.hf_export`)."""

    def extra_metrics(self, tokens_per_s: float) -> dict[str, Any]:
        """Metrics added to each report (e.g. ``mfu``, ``devices``).

        A stepper may also have ``gather()``, called on every rank at each checkpoint step
        before rank 0's ``save`` (FSDP gathers the full state there: collectives), and
        ``saves_on_every_rank`` (true: ``save`` runs on every rank, each writing its shard,
        and every rank reports its folder: Ray Train merges them into one checkpoint)."""


def shuffle_seed(seed: int, epoch: int, step: int, rank: int) -> int:
    """Local shuffle seed of one epoch on one worker (the same rule in both trainers)."""
    return seed + 1000 * epoch + step + rank


def resolve_args(args: TrainArgs) -> TrainArgs:
    """A copy with ``storage_path`` absolute when local (Ray Train resolves relative paths
    against each worker's own working directory) and ``context_length`` from the dataset's
    manifest (256 when it has none) when not given.

    Raises:
        InputError: ``context_length`` is shorter than the dataset's windows (the model could
            not take one row; every worker would fail at its first step, ``max_failures`` times).
    """
    changes: dict[str, Any] = {}
    if "://" not in args.storage_path:
        changes["storage_path"] = os.path.abspath(args.storage_path)
    recorded = dataset_context_length(args.dataset)
    if args.context_length is None:
        changes["context_length"] = recorded or 256
    elif recorded is not None and args.context_length < recorded:
        raise InputError(
            f"argument 'context_length' of workload {args.WORKLOAD} is {args.context_length}, "
            f"shorter than the windows of dataset {args.dataset} ({recorded} bytes, prepare's "
            f"_manifest.json): leave context_length unset (it follows the dataset), set it to "
            f"{recorded} or more, or prepare the dataset with context_length {args.context_length}"
        )
    return dataclasses.replace(args, **changes)


def scaling_kwargs(args: TrainArgs) -> dict[str, Any]:
    """``ray.train.ScalingConfig`` kwargs: ``args.scaling`` when given, else ``num_workers``
    workers with ``cpus_per_worker`` CPUs each (and one GPU each when ``use_gpu``)."""
    if args.scaling:
        out = json.loads(json.dumps(args.scaling))
        if isinstance(out.get("num_workers"), list):  # elastic (min, max): Ray wants a tuple
            out["num_workers"] = tuple(out["num_workers"])
        return out
    use_gpu = bool(getattr(args, "use_gpu", False))
    resources = {"CPU": float(args.cpus_per_worker)}
    if use_gpu:
        resources["GPU"] = 1.0
    return {"num_workers": args.num_workers, "use_gpu": use_gpu, "resources_per_worker": resources}


def max_workers(scaling: dict[str, Any]) -> int:
    """Most Ray Train workers of ``ScalingConfig(**scaling)``: ``num_workers``, or the ``max``
    of an elastic ``(min, max)`` pair (``ray/train/v2/api/config.py`` ``max_workers``)."""
    n = scaling["num_workers"]
    return int(n[1]) if isinstance(n, (list, tuple)) else int(n)


def train_dataset(args: TrainArgs, num_workers: int):
    """``ray.data.read_parquet(<dataset>/train)``, checked to hold one batch per worker.

    The row count is ``prepare``'s manifest's ``rows`` (the training windows it wrote) when the
    dataset has one; only a dataset without it is counted with ``Dataset.count()``, a Ray Data
    run of its own (about 5 s on 2 cores before training starts).

    Raises:
        DatasetTooSmall: no Parquet file under ``<dataset>/train``, or fewer than ``num_workers * batch_size`` rows (the message gives the
            counts and what to change).
    """
    import ray.data

    path = join(args.dataset, "train")
    try:
        ds = ray.data.read_parquet(path)
    except (ValueError, OSError) as e:  # Ray: "no files found under [...]"; a missing folder
        raise DatasetTooSmall(
            f"dataset {args.dataset} has no training data ({e}); run prepare first"
        ) from None
    rows = (dataset_manifest(args.dataset) or {}).get("rows")
    if not isinstance(rows, int) or isinstance(rows, bool):
        rows = ds.count()
    need = num_workers * args.batch_size
    if rows < need:
        raise DatasetTooSmall(
            f"dataset {args.dataset} has {rows} training rows; {num_workers} worker(s) x "
            f"batch_size {args.batch_size} need at least {need}: lower batch_size (or the "
            "number of workers) or prepare more data"
        )
    return ds


def run_config(args: TrainArgs):
    """``ray.train.RunConfig`` of both trainers."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig

    return RunConfig(
        name=args.name,
        storage_path=args.storage_path,
        failure_config=FailureConfig(max_failures=args.max_failures),
        checkpoint_config=CheckpointConfig(num_to_keep=args.keep_checkpoints),
    )


def fit(trainer_cls: Any, worker_fn: Callable[[dict[str, Any]], None], args: TrainArgs) -> Any:
    """Build ``trainer_cls`` (``TorchTrainer`` / ``JaxTrainer``) on the checked dataset and fit
    it; ``ray.init`` first when needed (and ``ray.shutdown`` after, so that the
    ``RAYGKE_RESULT`` line really is the last stdout line, not followed by worker logs).

    Returns:
        The ``ray.train.Result``.

    Raises:
        DatasetTooSmall: see :func:`train_dataset`.
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    import ray
    from ray.train import ScalingConfig

    from workloads.common import ensure_ray

    owns_ray = not ray.is_initialized()
    ensure_ray()
    try:
        args = resolve_args(args)
        scaling = scaling_kwargs(args)
        trainer = trainer_cls(
            carry(worker_fn),
            train_loop_config=args.to_dict(),
            scaling_config=ScalingConfig(**scaling),
            run_config=run_config(args),
            datasets={"train": train_dataset(args, max_workers(scaling))},
        )
        return trainer.fit()
    finally:
        if owns_ray:
            ray.shutdown()


def fit_summary(result: Any) -> dict[str, Any]:
    """The result keys every trainer returns, from a ``ray.train.Result``: ``steps``,
    ``first_loss``, ``last_loss``, ``tokens_per_s``, ``checkpoint`` (path or None), ``hf_model``
    (``<checkpoint>/hf``, the Hugging Face model folder a finished run writes into its last
    checkpoint, :mod:`workloads.hf_export`; None without a checkpoint) and the run's ``mfu``,
    ``peak_flops``, ``model_flops`` (FLOP/s) and ``precision``
    (:func:`workloads.precision.mfu_metrics`), ``parallelism`` (``ddp`` / ``fsdp``) and
    ``param_bytes`` (rank 0's parameter bytes: its shards under FSDP) (None where the trainer
    did not report them)."""
    from contract.checkpoint import HF_SUBDIR

    m = result.metrics or {}
    path = result.checkpoint.path if result.checkpoint else None
    return {
        "steps": int(m.get("step", 0)),
        "first_loss": m.get("first_loss"),
        "last_loss": m.get("loss"),
        "tokens_per_s": m.get("tokens_per_s"),
        "checkpoint": path,
        "hf_model": f"{path.rstrip('/')}/{HF_SUBDIR}" if path else None,
        **{
            k: m.get(k)
            for k in ("mfu", "peak_flops", "model_flops", "precision", "parallelism", "param_bytes")
        },
    }


def run_loop(
    args: TrainArgs,
    stepper: Stepper,
    *,
    rank: int,
    world: int,
    start_step: int = 0,
    first_loss: float | None = None,
    shard: Any = None,
    report: Callable[[dict[str, Any], str | None, str | None], None] | None = None,
) -> int:
    """Train from ``start_step`` to ``args.steps`` inside a Ray Train worker; return the last
    step. See the module docstring for the schedule.

    Outside Ray Train (a Ray Tune trial, :mod:`workloads.tune_lm`) the caller passes ``shard``
    (anything with Ray Data's ``iter_batches``, e.g. ``Dataset.iterator()``) and ``report``
    (see :func:`workloads.common.report_step`).

    Raises:
        DatasetTooSmall: an epoch of this worker's shard yields no full batch.
    """
    if shard is None:
        import ray.train

        shard = ray.train.get_dataset_shard("train")
    steps, batch_size = args.steps, args.batch_size
    ckpt_every = args.checkpoint_every or steps
    attempt = uuid.uuid4().hex[:8]
    step_log = args.step_log if rank == 0 else None
    step, epoch = start_step, 0
    tok_count, tok_time = 0, 0.0
    while step < steps:
        seen = 0
        for batch in shard.iter_batches(
            batch_size=batch_size,
            batch_format="pyarrow",
            drop_last=True,
            local_shuffle_buffer_size=8 * batch_size,
            local_shuffle_seed=shuffle_seed(args.seed, epoch, step, rank),
        ):
            seen += 1
            tokens = stepper.load(batch)
            t0 = time.perf_counter()
            loss, n_tokens = stepper.step(tokens)
            dt = time.perf_counter() - t0
            step += 1
            if first_loss is None:
                first_loss = loss
            if step > start_step + 1:  # the first step warms up / compiles: not throughput
                tok_count += n_tokens * world
                tok_time += dt
            if step_log:
                with open(step_log, "a") as f:
                    f.write(json.dumps({"attempt": attempt, "step": step, "loss": loss}) + "\n")
            crash_after_step(rank, step)
            gather = getattr(stepper, "gather", None)  # FSDP: every rank gathers the full state
            if gather is not None and (step % ckpt_every == 0 or step >= steps):
                gather()
            tps = tok_count / tok_time if tok_time else 0.0
            metrics = {
                "step": step,
                "loss": loss,
                "first_loss": first_loss,
                "tokens_per_s": tps,
                "step_time_s": dt,
                "epoch": epoch,
                **stepper.extra_metrics(tps),
            }
            report_step(
                metrics,
                step,
                steps=steps,
                checkpoint_every=ckpt_every,
                log_every=args.log_every,
                save=partial(stepper.save, step=step, first_loss=first_loss, final=step >= steps)
                if rank == 0 or getattr(stepper, "saves_on_every_rank", False)
                else None,
                report=report,
                rank=rank if report is not None else None,
            )
            if step >= steps:
                break
        if seen == 0:
            raise DatasetTooSmall(
                f"worker {rank}: its shard of dataset {args.dataset} yields no batch of "
                f"{batch_size} rows; lower batch_size or the number of workers"
            )
        epoch += 1
    return step
