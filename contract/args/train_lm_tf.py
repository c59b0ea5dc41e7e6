"""Arguments of :mod:`workloads.train_lm_tf` (Keras 3 on TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from contract.args.base import arg
from contract.args.train import TrainArgs


@dataclass(frozen=True)
class TrainLmTfArgs(TrainArgs):
    """Arguments of :mod:`workloads.train_lm_tf` (Keras 3 on TensorFlow,
    MultiWorkerMirroredStrategy under Ray Train's TensorflowTrainer)."""

    WORKLOAD: ClassVar[str] = "train_lm_tf"

    name: str = arg("train_lm_tf", "experiment (run) name under storage_path")
    use_gpu: bool = arg(False, "one GPU per worker when scaling is None (NCCL collectives)")
    grad_clip: float = arg(
        1.0, "global gradient-norm clip (after the all-reduce)", "norm", minimum=0
    )
    tf_threads: int | None = arg(
        None,
        "TensorFlow intra/inter-op threads; None = the CPUs Ray gave the worker",
        "threads",
        minimum=1,
    )
    weights_log: str | None = arg(
        None, "local JSONL file: one line per worker with its final weights' sha256 (tests)", "path"
    )
