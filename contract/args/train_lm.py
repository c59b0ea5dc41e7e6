"""Arguments of :mod:`workloads.train_lm` (PyTorch, DDP or FSDP2 under Ray Train)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contract.args.base import arg
from contract.args.train import TrainArgs, device_memory_arg, heads_divide_width, hf_source_problem


def _sharded_checkpoints_of_the_byte_model(values: Mapping[str, Any]) -> str | None:
    """Sharded checkpoints hold the byte-level model's state (a fine-tuning run writes its
    Hugging Face folder into every checkpoint)."""
    if values.get("sharded_checkpoints") and values.get("init_model"):
        return (
            "sharded_checkpoints is for the byte-level model; a fine-tuning run (init_model) "
            "writes its Hugging Face folder into every checkpoint: leave sharded_checkpoints false"
        )
    return None


def _shard_degree_needs_fsdp(values: Mapping[str, Any]) -> str | None:
    """``shard_degree`` only with ``parallelism: fsdp`` (or ``auto``, which may pick it)."""
    if values.get("shard_degree") is not None and values.get("parallelism") == "ddp":
        return "shard_degree is for parallelism fsdp (or auto); ddp replicates the model"
    return None


@dataclass(frozen=True)
class TrainLmArgs(TrainArgs):
    """Arguments of :mod:`workloads.train_lm` (PyTorch, DDP or FSDP2)."""

    WORKLOAD: ClassVar[str] = "train_lm"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        heads_divide_width,
        _shard_degree_needs_fsdp,
        _sharded_checkpoints_of_the_byte_model,
    )

    name: str = arg("train_lm", "experiment (run) name under storage_path")
    use_gpu: bool = arg(False, "one GPU per worker when scaling is None")
    torch_threads: int | None = arg(
        None,
        "torch intra-/inter-op threads; None = the CPUs Ray gave the worker",
        "threads",
        minimum=1,
    )
    parallelism: Literal["auto", "ddp", "fsdp"] = arg(
        "auto",
        "ddp: every worker holds a replica (Ray Train's prepare_model); fsdp: FSDP2 fully_shard "
        "per transformer block and the root, over shard_degree workers; auto: ddp when a replica "
        "fits a device with margin, else fsdp (contract/train_fit.py, the estimate raygke check "
        "reads)",
    )
    shard_degree: int | None = arg(
        None,
        "workers FSDP shards the model over (must divide the workers; replicated across the "
        "groups, HSDP); None = all workers",
        "workers",
        minimum=1,
    )
    device_memory_gb: float | None = device_memory_arg()
    activation_checkpointing: bool = arg(
        False,
        "recompute each transformer block's activations in the backward pass instead of keeping "
        "them (less memory, about a third more compute)",
    )
    init_model: str | None = arg(
        None,
        "fine-tune this Hugging Face causal LM (a folder, a gs:// folder or a Hub repo id "
        "owner/name; GPT-2 or Llama architecture, the trainers' own hf/ exports included) "
        "instead of training the byte-level model from scratch; the dataset must be prepared "
        "with its tokenizer (prepare's tokenizer), the model-size arguments are then unused and "
        "every checkpoint holds its Hugging Face folder (hf/, with the tokenizer)",
        "path, URI or Hub id",
        check=hf_source_problem,
    )
    sharded_checkpoints: bool = arg(
        False,
        "every worker writes its own shard of each checkpoint with torch.distributed.checkpoint "
        "(in parallel, no gather to rank 0; workloads/sharded_checkpoint.py), the manifest over "
        "all shards written last; a resume reshards to any number of workers; false = rank 0 "
        "writes the full state (model.pt, optimizer.pt)",
    )
