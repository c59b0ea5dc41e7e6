"""Train the byte-level transformer LM with Ray Train (``TorchTrainer``, DDP).

Data: ``ray.data.read_parquet(<dataset>/train)`` (written by :mod:`workloads.prepare`) is passed
as the ``"train"`` dataset; each worker iterates ``ray.train.get_dataset_shard("train")`` in
pyarrow batches of ``batch_size`` rows ``[B, context_length + 1]`` and repeats epochs until
``steps`` optimisation steps are done.

Checkpoints (format of :mod:`workloads.checkpoint`, written by rank 0) every
``checkpoint_every`` steps and at the end, reported with ``ray.train.report(..., checkpoint=...)``
as ``checkpoint_<step:08d>`` under ``RunConfig(storage_path, name)``. On (re)start the worker
restores from ``ray.train.get_checkpoint()`` after verifying its manifest; if that one is damaged
it falls back to the newest checkpoint under ``<storage_path>/<name>`` that verifies. The step
counter continues from the checkpoint's step, so with ``FailureConfig(max_failures)`` every step
is counted exactly once across a failure and restore (steps run after the last checkpoint and
before a crash are redone, and logged again under the new attempt).

Config keys: ``dataset``, ``storage_path``, ``name``, ``num_workers`` (1), ``use_gpu`` (False),
``cpus_per_worker`` (1), ``torch_threads`` (None = node CPUs / local workers), ``steps``,
``batch_size`` (rows per worker), ``lr``, ``warmup`` (50), ``d_model``, ``n_layers``,
``n_heads``, ``context_length`` (default: the dataset's), ``checkpoint_every``,
``keep_checkpoints`` (None = all), ``max_failures``, ``seed``, ``log_every`` (10),
``step_log`` (optional local JSONL file: one line per step from rank 0 with its attempt id),
test hooks ``fail_at_step`` + ``fail_marker`` (the rank-0 worker ``os._exit(1)``s once after
that step, creating ``fail_marker`` so it happens only once).

Metrics reported per logging step: ``step``, ``loss`` (nats/byte), ``tokens_per_s`` (global,
this attempt's steady-state mean), ``step_time_s``, ``epoch``.
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "checkpoint"}``.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from functools import partial
from typing import Any

from workloads.common import (
    ensure_ray,
    fit_summary,
    join,
    report_step,
    restore_checkpoint,
    run_cli,
    run_config,
    with_absolute_storage,
    with_model_defaults,
)
from workloads.registry import get_workload

log = logging.getLogger(__name__)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function (one per worker, DDP via ``prepare_model``)."""
    import ray.train
    import ray.train.torch
    import torch

    from workloads.model_torch import (
        GPT,
        ModelConfig,
        arrow_to_tokens,
        load_checkpoint,
        make_optimizer,
        save_checkpoint,
        train_step,
    )

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    threads = config.get("torch_threads") or max(
        1, (os.cpu_count() or 1) // max(1, ctx.get_local_world_size())
    )
    torch.set_num_threads(int(threads))
    torch.manual_seed(int(config["seed"]))
    device = ray.train.torch.get_device()
    steps = int(config["steps"])

    restored = restore_checkpoint(str(config["storage_path"]), str(config["name"]))
    start_step, first_loss, opt_state = 0, None, None
    if restored is not None:
        model, meta, opt_state = load_checkpoint(restored[0])
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    else:
        model = GPT(ModelConfig.from_config(config))
    model = ray.train.torch.prepare_model(model)
    opt, sched = make_optimizer(model, float(config["lr"]), steps, int(config.get("warmup", 50)))
    if opt_state is not None:
        opt.load_state_dict(opt_state["optimizer"])
        if "scheduler" in opt_state:
            sched.load_state_dict(opt_state["scheduler"])

    attempt = uuid.uuid4().hex[:8]
    step_log = config.get("step_log") if rank == 0 else None
    shard = ray.train.get_dataset_shard("train")
    batch_size = int(config["batch_size"])
    ckpt_every = int(config["checkpoint_every"]) or steps
    log_every = max(1, int(config.get("log_every", 10)))
    step, epoch = start_step, 0
    tok_count, tok_time = 0, 0.0
    while step < steps:
        batches = shard.iter_batches(
            batch_size=batch_size,
            batch_format="pyarrow",
            drop_last=True,
            local_shuffle_buffer_size=8 * batch_size,
            local_shuffle_seed=int(config["seed"]) + 1000 * epoch + step,
        )
        for batch in batches:
            tokens = arrow_to_tokens(batch, device)
            t0 = time.perf_counter()
            loss = train_step(model, opt, tokens, sched)
            if device.type == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            step += 1
            if first_loss is None:
                first_loss = loss
            if step > start_step + 1:  # skip the warm-up step in the throughput figure
                tok_count += tokens.shape[0] * (tokens.shape[1] - 1) * world
                tok_time += dt
            if step_log:
                with open(step_log, "a") as f:
                    f.write(json.dumps({"attempt": attempt, "step": step, "loss": loss}) + "\n")
            if (
                rank == 0
                and config.get("fail_at_step") == step
                and config.get("fail_marker")
                and not os.path.exists(config["fail_marker"])
            ):
                open(config["fail_marker"], "w").close()
                os._exit(1)  # simulate a worker crash (test hook)
            metrics = {
                "step": step,
                "loss": loss,
                "first_loss": first_loss,
                "tokens_per_s": tok_count / tok_time if tok_time else 0.0,
                "step_time_s": dt,
                "epoch": epoch,
            }
            report_step(
                metrics,
                step,
                steps=steps,
                checkpoint_every=ckpt_every,
                log_every=log_every,
                save=partial(
                    save_checkpoint,
                    model=model,
                    step=step,
                    optimizer=opt,
                    scheduler=sched,
                    extra={"first_loss": first_loss},
                )
                if rank == 0
                else None,
            )
            if step >= steps:
                break
        epoch += 1


def build_trainer(config: dict[str, Any]):
    """The configured ``TorchTrainer`` (not yet fitted)."""
    import ray.data
    from ray.train import ScalingConfig
    from ray.train.torch import TorchTrainer

    config = with_model_defaults(config)
    train_ds = ray.data.read_parquet(join(config["dataset"], "train"))
    use_gpu = bool(config.get("use_gpu"))
    resources = {"CPU": float(config.get("cpus_per_worker", 1))}
    if use_gpu:
        resources["GPU"] = 1.0
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config=config,
        scaling_config=ScalingConfig(
            num_workers=int(config["num_workers"]),
            use_gpu=use_gpu,
            resources_per_worker=resources,
        ),
        run_config=run_config(config),
        datasets={"train": train_ds},
    )


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for keys and results.

    Raises:
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    config = get_workload("train_lm").config(config)
    ensure_ray()
    return fit_summary(build_trainer(with_absolute_storage(config)).fit())


if __name__ == "__main__":
    run_cli("train_lm", main)
