"""Arguments of :mod:`workloads.train_lm` (PyTorch, DDP under Ray Train)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from contract.args.base import arg
from contract.args.train import TrainArgs


@dataclass(frozen=True)
class TrainLmArgs(TrainArgs):
    """Arguments of :mod:`workloads.train_lm` (PyTorch, DDP)."""

    WORKLOAD: ClassVar[str] = "train_lm"

    name: str = arg("train_lm", "experiment (run) name under storage_path")
    use_gpu: bool = arg(False, "one GPU per worker when scaling is None")
    torch_threads: int | None = arg(
        None,
        "torch intra-/inter-op threads; None = the CPUs Ray gave the worker",
        "threads",
        minimum=1,
    )
