"""Arguments of :mod:`workloads.train_lm_jax` (JAX, a data x fsdp x tensor mesh)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contract.args.base import arg
from contract.args.train import N_HEADS, TrainArgs, device_memory_arg, heads_divide_width


def _shard_degree_needs_fsdp(values: Mapping[str, Any]) -> str | None:
    """``shard_degree`` only with ``parallelism: fsdp`` (or ``auto``, which may pick it)."""
    if values.get("shard_degree") is not None and values.get("parallelism") == "data":
        return "shard_degree is for parallelism fsdp (or auto); data replicates the model"
    return None


def _tensor_divides_heads(values: Mapping[str, Any]) -> str | None:
    """The tensor axis splits the attention heads: it must divide ``n_heads``."""
    t, h = values.get("tensor_degree"), values.get("n_heads", N_HEADS)
    if isinstance(t, int) and isinstance(h, int) and t > 0 and h % t:
        return f"tensor_degree {t} does not divide n_heads {h} (each device takes whole heads)"
    return None


@dataclass(frozen=True)
class TrainLmJaxArgs(TrainArgs):
    """Arguments of :mod:`workloads.train_lm_jax` (JAX on TPU slices or CPU: a mesh of
    ``data`` x ``fsdp`` x ``tensor`` axes, :mod:`contract.mesh`)."""

    WORKLOAD: ClassVar[str] = "train_lm_jax"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        heads_divide_width,
        _shard_degree_needs_fsdp,
        _tensor_divides_heads,
    )

    name: str = arg("train_lm_jax", "experiment (run) name under storage_path")
    steps: int = arg(
        600,
        "optimisation steps in total (resumed runs continue the count)",
        "steps",
        minimum=1,
        maximum=10**9,
    )
    checkpoint_every: int = arg(
        200,
        "checkpoint period; 0 = only at the end (the last step always checkpoints)",
        "steps",
        minimum=0,
    )
    grad_clip: float = arg(1.0, "global gradient-norm clip", "norm", minimum=0)
    compute_dtype: Literal["auto", "bfloat16", "bf16", "float32"] = arg(
        "auto", "matmul dtype; auto = the precision argument's choice (workloads/precision.py)"
    )
    peak_flops_per_device: float | None = arg(
        None,
        "peak FLOP/s of one chip/GPU (catalog) for MFU; None = measured at start (jnp.dot)",
        "FLOP/s",
        minimum=0,
    )
    placement_log: str | None = arg(
        None, "local JSONL file: one line per worker with where it ran (tests)", "path"
    )
    parallelism: Literal["auto", "data", "fsdp"] = arg(
        "auto",
        "data: every device holds a replica; fsdp: parameters and optimizer state sharded over "
        "shard_degree devices of a slice (the mesh's fsdp axis; slices stay on the data axis); "
        "auto: data when a replica fits a device with margin, else the smallest fsdp degree "
        "that does (contract/train_fit.py, the estimate raygke check reads; contract/mesh.py)",
    )
    shard_degree: int | None = arg(
        None,
        "devices of the fsdp mesh axis (must divide a slice's devices / tensor_degree; "
        "replicated across the data axis); None = all of a slice's (fsdp) or the estimate's "
        "pick (auto)",
        "devices",
        minimum=1,
    )
    device_memory_gb: float | None = device_memory_arg()
    tensor_degree: int = arg(
        1,
        "devices of the tensor mesh axis: attention heads and MLP hidden units split over them "
        "(must divide n_heads and a slice's devices); 1 = none",
        "devices",
        minimum=1,
    )
