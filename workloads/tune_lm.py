"""Hyperparameter search for the byte-level LM with Ray Tune: ASHA (default) or PBT over the
peak learning rate, warm-up, width, depth and batch size.

Each trial is one process (a Tune function trainable) running the SAME loop as the trainers
(:func:`workloads.train_loop.run_loop`: batches, seeded shuffle, schedule, throughput) with the
chosen trainer's stepper: the registry entry's ``tune_stepper``
(``module:function(args, restored, threads, use_gpu)``) of the trainer whose ``tune_name`` the
``trainer`` argument gives (:func:`contract.workload.tune_trainers`; torch =
:mod:`workloads.train_lm`, jax = :mod:`workloads.train_lm_jax`, tf = :mod:`workloads.train_lm_tf`,
one device through ``OneDeviceStrategy``; a trainer registered later is a choice too). No Ray Train worker group per trial: on 2 cores its
start-up would cost more than a short trial.

Reports and checkpoints: every ``report_every`` steps (and at the trial's last step) the trial
writes a checkpoint with the trainer's own ``save`` (:mod:`workloads.checkpoint`: atomic,
sha256 manifest), scores ``val_loss`` (nats/byte) on ``val_rows`` validation rows (a seeded
sample over all validation files) with :func:`workloads.evaluate.validation_loss` (the checkpoint loaded by
:func:`workloads.model_torch.load_checkpoint`, so every trainer's checkpoints are scored the same
way), and reports both with ``ray.tune.report(metrics, checkpoint=...)``
(https://docs.ray.io/en/latest/tune/api/doc/ray.tune.report.html). A trial (re)starting from a
checkpoint (its own after a failure or a restored experiment, or a better trial's after a PBT
exploit) verifies it first; a damaged one is replaced by the newest verifying checkpoint in the
trial's folder, else the trial starts fresh. The step counter continues from the checkpoint.

Schedulers (https://docs.ray.io/en/latest/tune/api/schedulers.html), both on ``val_loss``
(min) with ``time_attr="step"``:

* ASHA: ``ASHAScheduler(max_t=steps, grace_period, reduction_factor)``: trials below the
  rung's top 1/reduction_factor are stopped early.
* PBT: ``PopulationBasedTraining(perturbation_interval, hyperparam_mutations={"lr": ...},
  synch=True)``: once every trial has reached a perturbation point, the bottom quarter copies a
  top-quarter trial's checkpoint and config (width, depth, batch and optimizer come with the
  checkpoint), then perturbs ``lr`` (x0.8 / x1.2 or resampled). A trial that resumed from
  another trial's checkpoint reports that trial's id as ``donor``. Synchronous because Ray's
  asynchronous PBT exploits a trial only from a donor that was in the upper quantile at the
  donor's own last perturbation point (``pbt.py`` ``_checkpoint_or_exploit``: "no checkpoint for
  trial ... Skip exploit"), and the first trial to reach a point is alone there: with a handful
  of trials it often exploits none. Synchronous PBT checkpoints the upper quantile first, so
  every perturbation point exploits the bottom quarter. A perturbation point on the last step
  (``steps`` a multiple of ``perturbation_interval``) copies the donor's final state: that
  trial ends with the donor's ``val_loss``.

Budget: ``trials`` x ``steps`` (ASHA spends less by stopping trials). Resume: when
``<storage_path>/<name>`` holds an experiment and ``resume`` is true, ``Tuner.restore`` continues
it (finished trials are not re-run; unfinished ones resume from their checkpoints;
https://docs.ray.io/en/latest/tune/tutorials/tune-fault-tolerance.html).

Resources: a trial asks for ``cpus_per_trial`` CPUs, plus ONE worker's accelerators from
``scaling`` (the pool's ``ScalingConfig`` kwargs, :mod:`components.raycrs.scaling`): one GPU
(``use_gpu``) or one TPU host's chips (``resources_per_worker={"TPU": n}``; single-host slices:
a trial on one host of a multi-host slice cannot start the slice's runtime alone).
Trainer ``jax`` runs on TPU slices and CPUs; ``tf`` where its workload ``train_lm_tf`` runs
(``Workload.accelerators`` in :mod:`contract.registry`; TPU slices take trainer ``jax``).

Result: ``best`` (trial id, config, ``val_loss``, steps, checkpoint), ``trials`` (one row per
trial: id, config, steps run, ``val_loss`` last and best, status: finished, stopped early,
interrupted, not started or error), ``val_loss`` and
``checkpoint`` of the best trial, ``budget_steps`` / ``steps_run``, and ``table`` (the rows as
text, also printed).
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import signal
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from contract.args.train import TrainArgs
from contract.args.tune_lm import TuneLmArgs
from contract.registry import args_classes, tune_trainers
from workloads.common import (
    InputError,
    cpu_threads,
    dataset_context_length,
    join,
    ray_cpus,
    run_cli,
)
from workloads.faults import interrupt_after

log = logging.getLogger(__name__)

SEARCHED = ("lr", "warmup", "d_model", "n_layers", "batch_size", "optimizer")


class TrainerUnavailable(InputError):
    """The trainer's registry entry names a ``tune_stepper`` that does not import."""


def search_space(args: TuneLmArgs) -> dict[str, Any]:
    """The Tune ``param_space``: ``lr`` log-uniform in ``[lr_min, lr_max]``; ``warmup``,
    ``d_model``, ``n_layers``, ``batch_size`` and ``optimizer`` uniform over the listed values."""
    from ray import tune

    return {
        "lr": tune.loguniform(args.lr_min, args.lr_max),
        "warmup": tune.choice(list(args.warmups)),
        "d_model": tune.choice(list(args.widths)),
        "n_layers": tune.choice(list(args.depths)),
        "batch_size": tune.choice(list(args.batch_sizes)),
        "optimizer": tune.choice(list(args.optimizers)),
    }


def trial_resources(args: TuneLmArgs) -> dict[str, float]:
    """Resources of one trial: ``{"CPU": cpus_per_trial}`` plus one worker's accelerators from
    ``scaling`` (``resources_per_worker`` without its CPU entry; ``GPU: 1`` when ``use_gpu``)."""
    out = {"CPU": float(args.cpus_per_trial)}
    scaling = args.scaling or {}
    for key, value in (scaling.get("resources_per_worker") or {}).items():
        if key != "CPU":
            out[key] = float(value)
    if scaling.get("use_gpu"):
        out.setdefault("GPU", 1.0)
    return out


def trainer_stepper(trainer: str) -> Any:
    """The ``tune_stepper`` function of ``trainer`` (a tune name): the registry entry's
    ``module:function`` (:attr:`contract.workload.Workload.tune_stepper`), imported.

    Raises:
        KeyError: ``trainer`` is no registered trainer's tune name.
        TrainerUnavailable: the module or the function does not exist.
    """
    from contract.registry import get_workload

    spec = get_workload(tune_trainers()[trainer]).tune_stepper or ""
    module_name, _, function = spec.partition(":")
    try:
        return getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as e:
        raise TrainerUnavailable(
            f"trainer {trainer!r}: its tune_stepper {spec!r} does not load ({e})"
        ) from None


def trial_args(args: TuneLmArgs, config: Mapping[str, Any], context_length: int) -> TrainArgs:
    """The trainer's typed arguments of one trial: the sampled ``config`` on the sweep's
    settings (a checkpoint and a report every ``report_every`` steps). The sampled ``lr`` is
    AdamW's; Muon's peak lr (the trainers' default optimizer) follows it at the trainers'
    default ratio ``muon_lr / lr``, so one searched (and PBT-perturbed) value scales both."""
    cls = args_classes()[tune_trainers()[args.trainer]]
    defaults = cls.defaults()
    return cls.parse(
        {
            "muon_lr": config["lr"] * defaults["muon_lr"] / defaults["lr"],
            "dataset": args.dataset,
            "storage_path": args.storage_path,
            "name": args.name,
            "steps": args.steps,
            "checkpoint_every": args.report_every,
            "log_every": args.report_every,
            "n_heads": args.n_heads,
            "context_length": context_length,
            "seed": args.seed,
            **{k: config[k] for k in SEARCHED if k in config},
        }
    )


def _restore() -> tuple[str | None, str | None]:
    """Inside a trial: the verified local folder of the checkpoint to resume from (or None) and
    the id of the trial that wrote it when that is another trial (PBT), else None."""
    from ray import tune

    from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, verify_checkpoint

    ckpt = tune.get_checkpoint()
    if ckpt is None:
        return None, None
    ctx = tune.get_context()
    own = ctx.get_trial_id()
    donor = None if own in ckpt.path else trial_id(os.path.dirname(ckpt.path))
    local = ckpt.to_directory(tempfile.mkdtemp(prefix="raygke-tune-restore-"))
    try:
        verify_checkpoint(local)
        return local, donor
    except CheckpointError as e:
        log.warning("checkpoint %s is damaged: %s; scanning the trial folder", ckpt.path, e)
    found = latest_valid_checkpoint(os.path.dirname(ckpt.path))
    return (str(found[0]), donor) if found is not None else (None, None)


def trainable(
    config: dict[str, Any], *, sweep: dict[str, Any], context_length: int, train_ds: Any
) -> None:
    """One trial (a Tune function trainable; see the module docstring)."""
    import torch
    from ray import tune

    from workloads.evaluate import load_validation, validation_loss
    from workloads.model_torch import load_checkpoint
    from workloads.train_loop import run_loop

    args = TuneLmArgs.parse(sweep)
    targs = trial_args(args, config, context_length)
    tune_stepper = trainer_stepper(args.trainer)
    restored, donor = _restore()
    threads = cpu_threads(cpus=ray_cpus() or max(1.0, args.cpus_per_trial))  # its Ray CPUs
    use_gpu = "GPU" in trial_resources(args)
    stepper, start_step, first_loss = tune_stepper(targs, restored, threads, use_gpu)
    rows = load_validation(args.dataset, args.val_rows)[:, : targs.context_length + 1]

    def report(metrics: dict[str, Any], path: str | None, dir_name: str | None) -> None:
        if path is None:  # not reached: every report checkpoints (log_every == checkpoint_every)
            tune.report(metrics)
            return
        torch.set_num_threads(threads)
        model, _, _ = load_checkpoint(path)
        metrics = {**metrics, "val_loss": validation_loss(model, rows), "donor": donor}
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(path))

    run_loop(
        targs,
        stepper,
        rank=0,
        world=1,
        start_step=start_step,
        first_loss=first_loss,
        shard=train_ds.iterator(),
        report=report,
    )


def make_scheduler(args: TuneLmArgs) -> Any:
    """``ASHAScheduler`` or ``PopulationBasedTraining`` (see the module docstring)."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

    if args.scheduler == "pbt":
        return PopulationBasedTraining(
            time_attr="step",
            perturbation_interval=args.perturbation_interval,
            hyperparam_mutations={"lr": tune.loguniform(args.lr_min, args.lr_max)},
            quantile_fraction=0.25,
            resample_probability=0.25,
            synch=True,  # see the module docstring: asynchronous PBT skips most exploits here
        )
    return ASHAScheduler(
        time_attr="step",
        max_t=args.steps,
        grace_period=min(args.grace_period, args.steps),
        reduction_factor=args.reduction_factor,
    )


class _InterruptAfter:
    """Test hook: SIGINT to this process after ``n`` trials completed (Tune then saves the
    experiment and returns, as after Ctrl+C)."""

    def __init__(self, n: int) -> None:
        self.n, self.done = n, 0

    def __call__(self) -> Any:
        from ray.tune import Callback

        hook = self

        class _Cb(Callback):
            armed = True

            def __getstate__(self):  # Tuner.restore unpickles the run config: disarmed there
                return {"armed": False}

            def on_trial_complete(self, iteration, trials, trial, **info):
                if not self.armed:
                    return
                hook.done += 1
                if hook.done == hook.n and threading.current_thread() is threading.main_thread():
                    os.kill(os.getpid(), signal.SIGINT)

        return _Cb()


def trial_id(path: str) -> str:
    """The trial id in a trial folder name (``trainable_<id>_<n>_<params>_<date>``)."""
    m = re.search(r"_([0-9a-f]{5}_\d{5})_", os.path.basename(path))
    return m.group(1) if m else os.path.basename(path)


def _row(result: Any, steps: int) -> dict[str, Any]:
    m = result.metrics or {}
    df = result.metrics_dataframe
    vals = [] if df is None or "val_loss" not in df else [float(v) for v in df["val_loss"]]
    step = int(m.get("step", 0) or 0)
    config = result.config or {}  # None for a trial that never started (an interrupted sweep)
    # Tune sets ``done`` when it ends a trial (its function returned, or the scheduler stopped
    # it). A trial interrupted after its last report but before Tune processed that report's
    # checkpoint has every step's metrics and no ``done``: a restore runs it again from its
    # previous checkpoint (tune_controller.py ``_process_trial_result`` then
    # ``_schedule_trial_save``), so it is not finished.
    if result.error is not None:
        status = "error"
    elif not m:
        status = "not started"
    elif not m.get("done"):
        status = "interrupted"
    elif step >= steps:
        status = "finished"
    else:
        status = "stopped early"
    return {
        "trial": trial_id(result.path),
        **{k: config.get(k) for k in SEARCHED},
        "steps": step,
        "val_loss": m.get("val_loss"),
        "best_val_loss": min(vals) if vals else None,
        "exploited": bool(df is not None and "donor" in df and df["donor"].notna().any()),
        "status": status,
        "checkpoint": result.checkpoint.path if result.checkpoint else None,
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    """The trials as a Markdown table, best ``val_loss`` first."""
    head = (
        "| trial | optimizer | lr | warmup | d_model | n_layers | batch | steps | val_loss "
        "| status |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["val_loss"] is None, r["val_loss"] or 0.0)  # noqa: E731
    for r in sorted(rows, key=key):
        v = "-" if r["val_loss"] is None else f"{r['val_loss']:.4f}"
        lr = "-" if r["lr"] is None else f"{r['lr']:.2e}"
        lines.append(
            f"| {r['trial']} | {r.get('optimizer') or '-'} | {lr} | {r['warmup']} | {r['d_model']} | {r['n_layers']} "
            f"| {r['batch_size']} | {r['steps']} | {v} | {r['status']}"
            f"{' (exploited)' if r['exploited'] else ''} |"
        )
    return "\n".join(lines)


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run (or resume) the sweep; see the module docstring for arguments and results. A test
    can interrupt it after some trials completed (:func:`workloads.faults.interrupt_after`).

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        TrainerUnavailable: the trainer cannot run Tune trials.
        workloads.train_loop.DatasetTooSmall: the training split is missing or too small.
    """
    import ray
    from ray import tune

    from workloads.common import ensure_ray
    from workloads.train_loop import train_dataset

    args = TuneLmArgs.parse(config)
    trainer_stepper(args.trainer)  # fail before Ray starts
    if "://" not in args.storage_path:
        config = {**config, "storage_path": os.path.abspath(args.storage_path)}
        args = TuneLmArgs.parse(config)
    owns_ray = not ray.is_initialized()
    ensure_ray()
    try:
        ctx_len = args.context_length or dataset_context_length(args.dataset) or 256
        probe = args_classes()[tune_trainers()[args.trainer]].parse(
            {"dataset": args.dataset, "batch_size": max(args.batch_sizes)}
        )
        # materialised once: iterating it in a trial needs no Ray Data task (no CPU the
        # trials hold), https://docs.ray.io/en/latest/data/api/doc/ray.data.Dataset.materialize.html
        train_ds = train_dataset(probe, 1).materialize()
        fn = tune.with_resources(
            tune.with_parameters(
                trainable, sweep=args.to_dict(), context_length=ctx_len, train_ds=train_ds
            ),
            trial_resources(args),
        )
        path = join(args.storage_path, args.name)
        stop_after = interrupt_after()
        callbacks = [_InterruptAfter(stop_after)()] if stop_after else []
        if args.resume and tune.Tuner.can_restore(path):
            log.warning("resuming the experiment at %s", path)
            tuner = tune.Tuner.restore(path, trainable=fn, resume_errored=True)
        else:
            from ray.tune.search import BasicVariantGenerator

            tuner = tune.Tuner(
                fn,
                param_space=search_space(args),
                tune_config=tune.TuneConfig(
                    metric="val_loss",
                    mode="min",
                    num_samples=args.trials,
                    scheduler=make_scheduler(args),
                    search_alg=BasicVariantGenerator(
                        random_state=args.seed, max_concurrent=args.max_concurrent
                    ),
                    max_concurrent_trials=args.max_concurrent or None,
                    # a trial's actor (a process that has imported torch) runs the next trial
                    # and takes PBT's exploits, instead of a new process each time (Tune's
                    # advice for PBT; every trial asks for the same resources here):
                    # https://docs.ray.io/en/latest/tune/api/doc/ray.tune.TuneConfig.html
                    reuse_actors=True,
                ),
                run_config=tune.RunConfig(
                    name=args.name,
                    storage_path=args.storage_path,
                    failure_config=tune.FailureConfig(max_failures=args.max_failures),
                    # PBT restores a donor trial's checkpoint after the donor has moved on: keep
                    # them all, or the one it picked may be gone ("does not exist on storage")
                    checkpoint_config=tune.CheckpointConfig(
                        num_to_keep=None if args.scheduler == "pbt" else args.keep_checkpoints
                    ),
                    callbacks=callbacks,
                    verbose=0,
                ),
            )
        grid = tuner.fit()
    finally:
        if owns_ray:
            ray.shutdown()
    return summarize(grid, args)


def summarize(grid: Any, args: TuneLmArgs) -> dict[str, Any]:
    """The result dict (see the module docstring) of a ``ray.tune.ResultGrid``."""
    rows = [_row(r, args.steps) for r in grid]
    scored = [r for r in rows if r["val_loss"] is not None]
    best = min(scored, key=lambda r: r["val_loss"]) if scored else None
    table = format_table(rows)
    print(table, flush=True)
    return {
        "best": None
        if best is None
        else {
            "trial": best["trial"],
            "config": {k: best.get(k) for k in SEARCHED},
            "val_loss": best["val_loss"],
            "steps": best["steps"],
            "checkpoint": best["checkpoint"],
        },
        "trials": rows,
        "table": table,
        "val_loss": best["val_loss"] if best else None,
        "checkpoint": best["checkpoint"] if best else None,
        "budget_steps": args.trials * args.steps,
        "steps_run": sum(r["steps"] for r in rows),
        "stopped_early": sum(r["status"] == "stopped early" for r in rows),
        "interrupted": sum(r["status"] == "interrupted" for r in rows),
        "errors": sum(r["status"] == "error" for r in rows),
    }


if __name__ == "__main__":
    run_cli("tune_lm", main)
