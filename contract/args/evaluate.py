"""Arguments of :mod:`workloads.evaluate` (validation loss and a sample)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from contract.args.base import WorkloadArgs, arg


@dataclass(frozen=True)
class EvaluateArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.evaluate`."""

    WORKLOAD: ClassVar[str] = "evaluate"

    dataset: str = arg("/tmp/raygke/dataset", "dataset written by prepare", "path or URI")
    storage_path: str = arg("/tmp/raygke/runs", "Ray Train storage root of the run", "path or URI")
    name: str = arg("train_lm", "run name under storage_path")
    checkpoint: str | None = arg(
        None,
        "checkpoint folder; None = newest valid one under <storage_path>/<name>",
        "path or URI",
    )
    prompt: str = arg("def ", "text the sample continues")
    sample_bytes: int = arg(200, "length of the sample", "bytes", minimum=0)
    temperature: float = arg(0.6, "sampling temperature; 0 = greedy", minimum=0)
    seed: int = arg(0, "sampling seed")
    batch_size: int = arg(32, "validation rows per forward pass", "rows", minimum=1)
    max_val_rows: int = arg(
        4096,
        "validation rows scored, drawn over all validation files; 0 = all",
        "rows",
        minimum=0,
    )
    val_seed: int = arg(0, "seed of the validation sample (the same rows each run)")
    precision: Literal["auto", "bf16", "fp32"] = arg(
        "auto",
        "compute dtype of the validation loss and the sample (loss summed in float32); auto = "
        "bf16 where the CPU/GPU multiplies it natively and measures faster, else fp32 "
        "(workloads/precision.py)",
    )
    torch_threads: int | None = arg(
        None,
        "torch threads; None = its Ray CPUs in a Ray worker, else all CPUs",
        "threads",
        minimum=1,
    )
