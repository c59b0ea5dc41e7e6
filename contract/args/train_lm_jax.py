"""Arguments of :mod:`workloads.train_lm_jax` (JAX, data-parallel)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from contract.args.base import arg
from contract.args.train import TrainArgs


@dataclass(frozen=True)
class TrainLmJaxArgs(TrainArgs):
    """Arguments of :mod:`workloads.train_lm_jax` (JAX, data-parallel on TPU slices or CPU)."""

    WORKLOAD: ClassVar[str] = "train_lm_jax"

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
