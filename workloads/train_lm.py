"""Train the byte-level transformer LM with Ray Train (``TorchTrainer``, DDP).

The loop, data, shuffle, report/checkpoint schedule, resume rule and throughput are the shared
ones of :mod:`workloads.train_loop` (the same as :mod:`workloads.train_lm_jax`); this module
brings the PyTorch step: :func:`workloads.model_torch.train_step` on a model wrapped by
``ray.train.torch.prepare_model`` (DDP across workers), checkpoints ``model.pt`` + optimizer /
scheduler state (:func:`workloads.model_torch.save_checkpoint`, format of
:mod:`workloads.checkpoint`, written by rank 0). On (re)start the worker restores from
``ray.train.get_checkpoint()`` after verifying its manifest; if that one is damaged it falls
back to the newest checkpoint under ``<storage_path>/<name>`` that verifies. The step counter
continues from the checkpoint's step, so with ``FailureConfig(max_failures)`` every step is
counted exactly once across a failure and restore (steps run after the last checkpoint and
before a crash are redone, and logged again under the new attempt).

Arguments: :class:`workloads.args.TrainLmArgs` (names, types, defaults, units). Scaling: the
``scaling`` argument (ScalingConfig kwargs of a CPU/GPU node pool) or ``num_workers`` workers
(one GPU each with ``use_gpu``).

Metrics reported per logging step: ``step``, ``loss`` (nats/byte), ``first_loss``,
``tokens_per_s`` (global, this attempt's steady-state mean), ``step_time_s``, ``epoch``.
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "checkpoint"}``.
"""

from __future__ import annotations

import os
from typing import Any

from workloads.args import TrainLmArgs
from workloads.common import restore_checkpoint, run_cli
from workloads.train_loop import fit, fit_summary, run_loop


class TorchStepper:
    """The PyTorch side of :func:`workloads.train_loop.run_loop`."""

    def __init__(self, model: Any, opt: Any, sched: Any, device: Any) -> None:
        self.model, self.opt, self.sched, self.device = model, opt, sched, device

    def load(self, batch: Any) -> Any:
        from workloads.model_torch import arrow_to_tokens

        return arrow_to_tokens(batch, self.device)

    def step(self, tokens: Any) -> tuple[float, int]:
        import torch

        from workloads.model_torch import train_step

        loss = train_step(self.model, self.opt, tokens, self.sched)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return loss, tokens.shape[0] * (tokens.shape[1] - 1)

    def save(self, directory: str, *, step: int, first_loss: float | None) -> Any:
        from workloads.model_torch import save_checkpoint

        return save_checkpoint(
            directory,
            model=self.model,
            step=step,
            optimizer=self.opt,
            scheduler=self.sched,
            extra={"first_loss": first_loss},
        )

    def extra_metrics(self, tokens_per_s: float) -> dict[str, Any]:
        return {}


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function (one per worker, DDP via ``prepare_model``); ``config`` is
    :meth:`TrainLmArgs.to_dict` of the resolved arguments."""
    import ray.train
    import ray.train.torch
    import torch

    from workloads.model_torch import GPT, load_checkpoint, make_optimizer

    args = TrainLmArgs.parse(config)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    threads = args.torch_threads or max(
        1, (os.cpu_count() or 1) // max(1, ctx.get_local_world_size())
    )
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    device = ray.train.torch.get_device()

    restored = restore_checkpoint(args.storage_path, args.name)
    start_step, first_loss, opt_state = 0, None, None
    if restored is not None:
        model, meta, opt_state = load_checkpoint(restored[0])
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    else:
        model = GPT(args.model_config())
    model = ray.train.torch.prepare_model(model)
    opt, sched = make_optimizer(model, args.lr, args.steps, args.warmup)
    if opt_state is not None:
        opt.load_state_dict(opt_state["optimizer"])
        if "scheduler" in opt_state:
            sched.load_state_dict(opt_state["scheduler"])
    run_loop(
        args,
        TorchStepper(model, opt, sched, device),
        rank=rank,
        world=world,
        start_step=start_step,
        first_loss=first_loss,
    )


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for arguments and results.

    Raises:
        workloads.args.ArgError: bad arguments (one line each).
        workloads.train_loop.DatasetTooSmall: fewer rows than one batch per worker.
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    from ray.train.torch import TorchTrainer

    args = TrainLmArgs.parse(config)
    return fit_summary(fit(TorchTrainer, train_loop_per_worker, args))


if __name__ == "__main__":
    run_cli("train_lm", main)
