"""Train the byte-level transformer LM with Ray Train (``TorchTrainer``, DDP or FSDP2).

The loop, data, shuffle, report/checkpoint schedule, resume rule and throughput are the shared
ones of :mod:`workloads.train_loop` (the same as :mod:`workloads.train_lm_jax`); this module
brings the PyTorch step: :func:`workloads.model_torch.train_step` on a model wrapped by
``ray.train.torch.prepare_model`` (DDP across workers) or sharded with FSDP2
(:mod:`workloads.fsdp`: ``parallelism`` ``ddp`` | ``fsdp`` | ``auto``, the last from the memory
estimate ``raygke check`` reads, :mod:`contract.train_fit`; rank 0 decides and prints one
``parallelism:`` line), checkpoints ``model.pt`` + optimizer / scheduler state
(:func:`workloads.model_torch.save_checkpoint`, format of :mod:`workloads.checkpoint`, written by
rank 0; under FSDP from the full state every rank helps gather, the same files). On (re)start the worker restores from
``ray.train.get_checkpoint()`` after verifying its manifest; if that one is damaged it falls
back to the newest checkpoint under ``<storage_path>/<name>`` that verifies. The step counter
continues from the checkpoint's step, so with ``FailureConfig(max_failures)`` every step is
counted exactly once across a failure and restore (steps run after the last checkpoint and
before a crash are redone, and logged again under the new attempt).

Fine-tuning (``init_model``, :mod:`workloads.hf_model`): the model is a Hugging Face causal LM
(GPT-2 or Llama architecture through ``transformers``, the trainers' own ``hf/`` exports
included) instead of the byte-level one; the dataset must hold its tokenizer's ids (prepare's
``tokenizer``; :func:`check_tokens` refuses a mismatch on the driver), the loss is then in nats
per token, FSDP shards its decoder layers, and every checkpoint holds its ``save_pretrained``
folder with the tokenizer (``hf/``) beside ``optimizer.pt``; a resume loads that folder. The
model's own dropout settings apply.

Arguments: :class:`contract.args.train_lm.TrainLmArgs` (names, types, defaults, units). Scaling: the
``scaling`` argument (ScalingConfig kwargs of a CPU/GPU node pool) or ``num_workers`` workers
(one GPU each with ``use_gpu``).

Precision: ``args.precision`` decided once per run by rank 0 (:mod:`workloads.precision`:
bf16 autocast where the CPU/GPU multiplies bf16 natively and measures faster, else fp32; a
checkpoint's recorded one kept under ``auto``), printed once, recorded in every checkpoint
(``precision``); the loss is float32 either way.

Metrics reported per logging step: ``step``, ``loss`` (nats/byte), ``first_loss``,
``tokens_per_s`` (global, this attempt's steady-state mean), ``step_time_s``, ``epoch``,
``mfu``, ``peak_flops`` (the workers' measured matmul peak in the run's dtype, FLOP/s),
``model_flops`` (achieved model FLOP/s), ``precision``, ``parallelism``, ``param_bytes``
(rank 0's parameter bytes: its shards under FSDP).
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "checkpoint", "hf_model", "mfu",
"peak_flops", "model_flops", "precision", "parallelism", "param_bytes"}`` (``hf_model``: ``<checkpoint>/hf``, the Hugging Face
model folder, :mod:`workloads.hf_export`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from contract.args.train_lm import TrainLmArgs
from workloads.common import (
    InputError,
    cpu_threads,
    dataset_manifest,
    restore_checkpoint,
    run_cli,
    set_torch_threads,
)
from workloads.fsdp import decide_parallelism, fsdp_wrap
from workloads.lm_config import ModelConfig
from workloads.precision import Precision, for_run, for_workers, matmul_shape, mfu_metrics
from workloads.train_loop import fit, fit_summary, run_loop


def decide_precision(
    args: TrainLmArgs, device_type: str, metadata: dict[str, Any] | None, source: str = ""
) -> Precision:
    """``args.precision`` for this run (:func:`workloads.precision.for_run`), measured at the
    model's widest matmul (the checkpoint's model when resuming)."""
    cfg = (
        ModelConfig(**metadata["model"])
        if metadata and "model" in metadata
        else ModelConfig.from_config(args.to_dict())
    )
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, args.batch_size, cfg.context_length)
    return for_run(args.precision, device_type, metadata, source, shape=shape)


class TorchStepper:
    """The PyTorch side of :func:`workloads.train_loop.run_loop`."""

    def __init__(
        self,
        model: Any,
        opt: Any,
        sched: Any,
        device: Any,
        ns_dtype: str,
        precision: Precision | None = None,
        devices: int = 1,
        rank: int = 0,
        sharded_checkpoints: bool = False,
    ) -> None:
        from workloads.fsdp import is_sharded, local_param_bytes

        self.model, self.opt, self.sched, self.device = model, opt, sched, device
        self.rank = rank
        # every rank writes its own shard of each checkpoint (workloads/sharded_checkpoint.py)
        self.saves_on_every_rank = sharded_checkpoints
        # FSDP2: every rank gathers the full state at a checkpoint step (gather), rank 0 writes it
        self.sharded = is_sharded(model)
        self.parallelism = "fsdp" if self.sharded else "ddp"
        self.param_bytes = local_param_bytes(model)  # this rank's parameters (its shards)
        self._full: tuple[dict[str, Any], Any] | None = None
        self.ns_dtype = ns_dtype  # Muon's Newton-Schulz dtype, recorded in every checkpoint
        # the run's compute dtype (recorded in every checkpoint) and its measured matmul peak
        self.precision = precision or Precision("fp32", "not decided")
        self.devices = devices  # workers the global tokens/s is spread over (MFU's peak x this)
        cfg = getattr(model, "module", model).cfg
        self.flops_per_token = cfg.flops_per_token()

    def load(self, batch: Any) -> Any:
        from workloads.model_torch import arrow_to_tokens

        return arrow_to_tokens(batch, self.device)

    def step(self, tokens: Any) -> tuple[float, int]:
        import torch

        from workloads.model_torch import train_step

        loss = train_step(self.model, self.opt, tokens, self.sched, precision=self.precision.dtype)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return loss, tokens.shape[0] * (tokens.shape[1] - 1)

    def gather(self) -> None:
        """On every rank before a checkpoint step's save: under FSDP the full state dicts are
        gathered (collectives; rank 0 keeps them, :func:`workloads.fsdp.full_state`)."""
        if self.sharded and not self.saves_on_every_rank:
            from workloads.fsdp import full_state

            self._full = full_state(self.model, self.opt, self.rank)

    def save(
        self, directory: str, *, step: int, first_loss: float | None, final: bool = False
    ) -> Any:
        from workloads.hf_model import is_hf
        from workloads.model_torch import save_checkpoint

        if self.saves_on_every_rank:
            return self._save_shards(directory, step=step, first_loss=first_loss, final=final)
        state = optimizer_state = None
        if self.sharded:
            if self._full is None:
                raise RuntimeError("a sharded model's checkpoint needs gather() on every rank")
            (state, optimizer_state), self._full = self._full, None
        common = {
            "model": self.model,
            "step": step,
            "optimizer": self.opt,
            "scheduler": self.sched,
            "extra": {
                "first_loss": first_loss,
                "ns_dtype": self.ns_dtype,
                "precision": self.precision.dtype,
                "parallelism": self.parallelism,
            },
            "state": state,
            "optimizer_state": optimizer_state,
        }
        if is_hf(self.model):  # a fine-tuning run: every checkpoint holds its hf/ folder
            from workloads import hf_model

            return hf_model.save_checkpoint(directory, **common)
        return save_checkpoint(directory, hf=final, **common)

    def _save_shards(
        self, directory: str, *, step: int, first_loss: float | None, final: bool
    ) -> Any:
        """This rank's part of a sharded checkpoint (:mod:`workloads.sharded_checkpoint`; every
        rank calls it). The last one also holds ``hf/`` from the full weights (gathered)."""
        from dataclasses import asdict

        from workloads import sharded_checkpoint
        from workloads.model_torch import jax_arrays, unwrap_model

        m = unwrap_model(self.model)
        hf = None
        if final:
            weights = m.state_dict()
            if self.sharded:  # a collective: every rank helps, rank 0 keeps it
                from torch.distributed.checkpoint.state_dict import (
                    StateDictOptions,
                    get_model_state_dict,
                )

                options = StateDictOptions(full_state_dict=True, cpu_offload=True)
                weights = get_model_state_dict(self.model, options=options)
            if self.rank == 0:
                from workloads.hf_export import hf_files

                hf = hf_files(jax_arrays(m, weights), m.cfg)
        meta = {
            "framework": "torch",
            "model": asdict(m.cfg),
            "first_loss": first_loss,
            "ns_dtype": self.ns_dtype,
            "precision": self.precision.dtype,
            "parallelism": self.parallelism,
        }
        return sharded_checkpoint.save(
            directory,
            model=self.model,
            optimizer=self.opt,
            scheduler=self.sched,
            step=step,
            metadata=meta,
            hf_files=hf,
        )

    def extra_metrics(self, tokens_per_s: float) -> dict[str, Any]:
        return {
            **mfu_metrics(tokens_per_s, self.flops_per_token, self.precision, self.devices),
            "parallelism": self.parallelism,
            "param_bytes": self.param_bytes,
        }


def build_stepper(
    args: TrainLmArgs,
    restored: str | None,
    device: Any,
    wrap: Any = None,
    precision: Precision | None = None,
    devices: int = 1,
    rank: int = 0,
) -> tuple[TorchStepper, int, float | None]:
    """The stepper, start step and first loss: from the verified checkpoint folder ``restored``
    (model, optimizer and scheduler state; the step counter continues) or fresh from
    ``args``; ``wrap`` (``ray.train.torch.prepare_model``, DDP, or
    :func:`workloads.fsdp.fsdp_wrap`) wraps the model before the optimizer is built. A sharded
    model loads the full checkpoint before sharding and its optimizer state is cut to the
    shards (:func:`workloads.fsdp.shard_optimizer_state`). ``args.activation_checkpointing``
    recomputes each block's activations in the backward pass.

    Muon's Newton-Schulz dtype is ``args.ns_dtype`` resolved for ``device`` once per run
    (:func:`workloads.common.ns_dtype_for_run`: a checkpoint's recorded one is kept under
    ``auto``). The compute dtype is ``precision`` (decided by the caller for the whole worker
    group), else :func:`decide_precision` here; ``devices``: the workers of the run (MFU).

    Raises:
        workloads.checkpoint.CheckpointError: ``restored`` was written with the other
            ``optimizer`` (its state cannot drive this one), or with another explicit
            ``ns_dtype``.
    """
    from workloads import hf_model
    from workloads.checkpoint import CheckpointError, read_manifest, verify_checkpoint
    from workloads.common import ns_dtype_for_run
    from workloads.model_torch import GPT, load_checkpoint, make_optimizer, optimizer_kind

    start_step, first_loss, opt_state, meta, shards = 0, None, None, None, None
    if restored is not None and args.init_model:
        model, meta, opt_state = hf_model.load_checkpoint(restored, args.init_model)
    elif restored is not None and read_manifest(restored).get("metadata", {}).get("sharded"):
        # every rank's shard: the model is built here, loaded after wrapping (any workers)
        meta = verify_checkpoint(restored)
        model, shards = GPT(ModelConfig(**meta["model"])), restored
    elif restored is not None:
        model, meta, opt_state = load_checkpoint(restored)
    elif args.init_model:  # fine-tuning (workloads/hf_model.py)
        model = hf_model.load_model(args.init_model)
    else:
        model = GPT(ModelConfig.from_config(args.to_dict()))
    if meta is not None:
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    if args.init_model and (args.context_length or 0) > model.cfg.context_length:
        raise InputError(
            f"argument 'context_length' of workload train_lm is {args.context_length}, more "
            f"than the {model.cfg.context_length} positions of init_model {args.init_model}"
        )
    model = model.to(device)
    model.checkpointing = args.activation_checkpointing
    if wrap is not None:
        model = wrap(model)
    ns_dtype = ns_dtype_for_run(args.ns_dtype, device.type, meta, str(restored))
    if precision is None:
        precision = decide_precision(args, device.type, meta, str(restored))
    opt, sched = make_optimizer(
        model,
        args.lr,
        args.steps,
        args.warmup,
        optimizer=args.optimizer,
        muon_lr=args.muon_lr,
        ns_dtype=ns_dtype,
    )
    if opt_state is not None:
        saved = optimizer_kind(opt_state["optimizer"])
        if saved != args.optimizer:
            raise CheckpointError(
                f"checkpoint {restored} was written with optimizer {saved}; this run has "
                f"optimizer {args.optimizer} (set optimizer={saved} to resume it, or use a new "
                "run name)"
            )
        from workloads.fsdp import is_sharded, shard_optimizer_state

        state = opt_state["optimizer"]
        opt.load_state_dict(shard_optimizer_state(opt, state) if is_sharded(model) else state)
        if "scheduler" in opt_state:
            sched.load_state_dict(opt_state["scheduler"])
    if shards is not None:
        from workloads.sharded_checkpoint import load_into

        load_into(shards, model, opt, sched)
    stepper = TorchStepper(
        model, opt, sched, device, ns_dtype, precision, devices, rank, args.sharded_checkpoints
    )
    return stepper, start_step, first_loss


def tune_stepper(
    args: TrainLmArgs, restored: str | None, threads: int, use_gpu: bool = False
) -> tuple[TorchStepper, int, float | None]:
    """The stepper of one Ray Tune trial (:mod:`workloads.tune_lm`; no Ray Train, no DDP): one
    process, ``threads`` torch threads, the GPU when ``use_gpu``. From a checkpoint (a resumed
    trial, or PBT's copy of a better trial) the learning rate is ``args.lr`` (PBT may have
    changed it), applied on the restored schedule position."""
    import torch

    set_torch_threads(max(1, threads))
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if use_gpu and torch.cuda.is_available() else "cpu")
    stepper, start_step, first_loss = build_stepper(args, restored, device)
    sched = stepper.sched
    peaks = [args.muon_lr if g.get("muon") else args.lr for g in stepper.opt.param_groups]
    sched.base_lrs = peaks
    for group, peak, factor in zip(stepper.opt.param_groups, peaks, sched.lr_lambdas, strict=True):
        group["initial_lr"] = peak
        group["lr"] = peak * factor(sched.last_epoch)
    return stepper, start_step, first_loss


def parallelism_for_workers(
    args: TrainLmArgs, device: Any, precision: Precision, ctx: Any
) -> dict[str, Any]:
    """DDP or FSDP for this run (:func:`workloads.fsdp.decide_parallelism`): rank 0 decides,
    prints one line and sends its choice to the other workers, as for the precision."""
    import sys

    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    chosen = None
    if rank == 0:
        shape = None
        if args.init_model:  # the fine-tuned model's sizes, from its config.json
            from workloads.hf_model import lm_shape

            shape = lm_shape(args.init_model, args.context_length or 256)
        chosen = decide_parallelism(
            args, device, world, ctx.get_local_world_size(), compute=precision.dtype, shape=shape
        )
        over = f" over {chosen['degree']} of {world} workers" if chosen["mode"] == "fsdp" else ""
        sys.stdout.write(f"parallelism: {chosen['mode']}{over} ({chosen['reason']})\n")
        sys.stdout.flush()
    if world > 1:
        import ray.train.collective

        chosen = ray.train.collective.broadcast_from_rank_zero(chosen)
    assert chosen is not None
    return chosen


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function (one per worker, DDP via ``prepare_model``); ``config`` is
    :meth:`TrainLmArgs.to_dict` of the resolved arguments."""
    import ray.train
    import ray.train.torch
    import torch

    args = TrainLmArgs.parse(config)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    set_torch_threads(cpu_threads(args.torch_threads))  # this worker's Ray CPUs
    torch.manual_seed(args.seed)
    device = ray.train.torch.get_device()

    restored = restore_checkpoint(args.storage_path, args.name)
    path, meta = restored if restored is not None else (None, None)
    precision = for_workers(
        lambda: decide_precision(args, device.type, meta, str(path)), rank, world
    )
    shard = parallelism_for_workers(args, device, precision, ctx)
    wrap = ray.train.torch.prepare_model
    if shard["mode"] == "fsdp":
        wrap = partial(
            fsdp_wrap, device=device, precision=precision.dtype, degree=shard["degree"], world=world
        )
    stepper, start_step, first_loss = build_stepper(
        args,
        path,
        device,
        wrap=wrap,
        precision=precision,
        devices=world,
        rank=rank,
    )
    run_loop(
        args,
        stepper,
        rank=rank,
        world=world,
        start_step=start_step,
        first_loss=first_loss,
    )


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for arguments and results.

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        workloads.train_loop.DatasetTooSmall: fewer rows than one batch per worker.
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    from ray.train.torch import TorchTrainer

    args = TrainLmArgs.parse(config)
    check_tokens(args)
    return fit_summary(fit(TorchTrainer, train_loop_per_worker, args))


def check_tokens(args: TrainLmArgs) -> None:
    """On the driver, before any worker starts: the dataset's token ids are the model's. A
    byte-level dataset trains the byte-level model only; one prepared with a Hugging Face
    tokenizer (its manifest's ``tokenizer`` and ``vocab_size``) trains ``init_model`` only, and
    its ids must fit the model's vocabulary.

    Raises:
        InputError: the dataset's tokens and the model do not match (what to change named).
    """
    manifest = dataset_manifest(args.dataset) or {}
    tokenizer, vocab = manifest.get("tokenizer"), manifest.get("vocab_size")
    if args.init_model is None:
        if tokenizer is not None:
            raise InputError(
                f"dataset {args.dataset} holds token ids of the tokenizer {tokenizer} "
                f"({vocab} ids); the byte-level model takes bytes: set init_model (the model "
                "to fine-tune) or prepare the dataset without tokenizer"
            )
        return
    if tokenizer is None:
        raise InputError(
            f"argument 'init_model' of workload train_lm is {args.init_model!r}, but dataset "
            f"{args.dataset} holds bytes (prepared without tokenizer); prepare it with "
            f"tokenizer={args.init_model}"
        )
    from transformers import AutoConfig

    from workloads.hf_model import local_folder

    model_vocab = int(AutoConfig.from_pretrained(local_folder(args.init_model)).vocab_size)
    if isinstance(vocab, int) and vocab > model_vocab:
        raise InputError(
            f"dataset {args.dataset} was prepared with the tokenizer of {tokenizer} ({vocab} "
            f"ids), more than the {model_vocab} of init_model {args.init_model}; prepare it "
            f"with tokenizer={args.init_model}"
        )


if __name__ == "__main__":
    run_cli("train_lm", main)
