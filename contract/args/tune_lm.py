"""Arguments of :mod:`workloads.tune_lm` (Ray Tune, ASHA or PBT, over a trainer).

The ``trainer`` argument names a registered trainer by its tune name
(:attr:`contract.workload.Workload.tune_name`); the choices are read from the registry when the
arguments are checked, so a trainer registered later is a valid choice (the built-in entries
are registered by importing :mod:`contract.registry`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contract.args.base import WorkloadArgs, arg
from contract.args.train import OPTIMIZERS, scaling_problem
from contract.workload import WORKLOADS, tune_trainers


def _tune_trainer_problem(value: str) -> str | None:
    usable = list(tune_trainers())
    return None if value in usable else f"must be one of {', '.join(usable)}"


def _positive_ints(value: list[int]) -> str | None:
    if not value:
        return "must list at least one value"
    return None if all(v >= 1 for v in value) else "every value must be >= 1"


def _non_negative_ints(value: list[int]) -> str | None:
    if not value:
        return "must list at least one value"
    return None if all(v >= 0 for v in value) else "every value must be >= 0"


def _optimizer_names(value: list[str]) -> str | None:
    if not value:
        return "must list at least one value"
    bad = [v for v in value if v not in OPTIMIZERS]
    return f"{bad[0]!r} is not one of {', '.join(map(repr, OPTIMIZERS))}" if bad else None


def _tune_heads_divide_widths(values: Mapping[str, Any]) -> str | None:
    h, widths = values.get("n_heads"), values.get("widths") or []
    bad = [w for w in widths if isinstance(h, int) and h > 0 and w % h]
    if bad:
        return f"n_heads {h} does not divide width(s) {', '.join(map(str, bad))} (d_model)"
    return None


def _tune_lr_range(values: Mapping[str, Any]) -> str | None:
    lo, hi = values.get("lr_min"), values.get("lr_max")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        return f"lr_min {lo:g} is above lr_max {hi:g}"
    return None


def _tune_tpu_needs_jax(values: Mapping[str, Any]) -> str | None:
    scaling = values.get("scaling") or {}
    if isinstance(scaling, Mapping) and scaling.get("use_tpu") and values.get("trainer") != "jax":
        return f"a TPU slice needs trainer 'jax', not {values.get('trainer')!r}"
    return None


def _tune_pool_fits_trainer(values: Mapping[str, Any]) -> str | None:
    """A trial takes one worker of its pool: on TPU, one host of a single-host slice (one host of
    a multi-host slice cannot start the slice's runtime alone); trainer jax not on GPU pools (the
    project's GPU image carries PyTorch's CUDA stack, no JAX); any other trainer only on the
    accelerators its workload supports (``Workload.accelerators`` in :mod:`contract.workload`,
    e.g. ``train_lm_tf``'s)."""
    scaling = values.get("scaling") or {}
    if not isinstance(scaling, Mapping):
        return None
    trainer = values.get("trainer")
    if scaling.get("use_gpu") and trainer == "jax":
        return "trainer 'jax' runs on TPU slices and CPUs, not GPU pools; use trainer 'torch'"
    if scaling.get("use_gpu") and isinstance(trainer, str) and trainer in tune_trainers():
        workload = WORKLOADS.get(tune_trainers()[trainer])
        refusal = workload.refusal("gpu") if workload is not None else None
        if refusal:
            return f"trainer {trainer!r} on a GPU pool: {refusal}"
    topology, per_host = scaling.get("topology"), (scaling.get("resources_per_worker") or {})
    if scaling.get("use_tpu") and isinstance(topology, str) and per_host.get("TPU"):
        try:
            chips = math.prod(int(d) for d in topology.split("x"))
        except ValueError:
            return None
        hosts = chips // int(per_host["TPU"])
        if hosts > 1:
            return (
                f"a trial runs on one TPU host, but topology {topology} is a {hosts}-host slice; "
                "use a single-host slice pool"
            )
    return None


def _tune_report_fits(values: Mapping[str, Any]) -> str | None:
    every, steps = values.get("report_every"), values.get("steps")
    if isinstance(every, int) and isinstance(steps, int) and every > steps:
        return f"report_every {every} is above steps {steps} (a trial reports at least once)"
    return None


@dataclass(frozen=True)
class TuneLmArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.tune_lm` (Ray Tune, ASHA or PBT, over a trainer)."""

    WORKLOAD: ClassVar[str] = "tune_lm"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        _tune_heads_divide_widths,
        _tune_lr_range,
        _tune_tpu_needs_jax,
        _tune_pool_fits_trainer,
        _tune_report_fits,
    )

    trainer: str = arg(
        "torch",
        "trainer whose model and step each trial runs: the tune name of a registered trainer "
        "(contract.registry: torch = train_lm, jax = train_lm_jax, tf = train_lm_tf)",
        check=_tune_trainer_problem,
    )
    scheduler: Literal["asha", "pbt"] = arg(
        "asha", "trial scheduler: ASHA (early stopping) or PBT (exploit + explore of lr)"
    )
    trials: int = arg(
        8, "trials (sampled configurations; PBT: the population)", "trials", minimum=1
    )
    steps: int = arg(
        200,
        "steps of a trial that is never stopped (budget = trials x steps)",
        "steps",
        minimum=1,
        maximum=10**9,
    )
    report_every: int = arg(
        50,
        "steps between a trial's reports; each report checkpoints and scores validation loss",
        "steps",
        minimum=1,
    )
    grace_period: int = arg(
        50, "ASHA: steps every trial runs before it may be stopped", "steps", minimum=1
    )
    reduction_factor: float = arg(
        3.0, "ASHA: 1 / share of trials promoted at each rung", minimum=1.01
    )
    perturbation_interval: int = arg(
        50, "PBT: steps between exploit/explore decisions", "steps", minimum=1
    )
    lr_min: float = arg(
        1e-3, "smallest peak learning rate sampled (log-uniform)", "1/step", minimum=1e-6
    )
    lr_max: float = arg(1e-2, "largest peak learning rate sampled", "1/step", maximum=1.0)
    warmups: list[int] = arg(  # noqa: RUF009 (arg() returns a dataclasses.field)
        [10, 25, 50], "warm-up lengths sampled", "steps", check=_non_negative_ints
    )
    widths: list[int] = arg(  # noqa: RUF009
        [96, 128], "model widths (d_model) sampled", "units", check=_positive_ints
    )
    depths: list[int] = arg(  # noqa: RUF009
        [2, 3, 4], "transformer depths (n_layers) sampled", "layers", check=_positive_ints
    )
    batch_sizes: list[int] = arg(  # noqa: RUF009
        [16, 32], "batch sizes sampled (rows per step)", "rows", check=_positive_ints
    )
    optimizers: list[str] = arg(  # noqa: RUF009
        ["muon"],
        "trainer optimizers sampled (muon, adamw; see the trainers' optimizer argument)",
        check=_optimizer_names,
    )
    n_heads: int = arg(
        4, "attention heads of every trial (must divide each width)", "heads", minimum=1
    )
    context_length: int | None = arg(
        None, "sequence length T; None = the dataset's", "bytes", minimum=1
    )
    val_rows: int = arg(
        256,
        "validation rows scored at each report (a seeded sample over all validation files)",
        "rows",
        minimum=1,
    )
    cpus_per_trial: float = arg(
        1.0, "CPUs each trial asks for (also its torch threads)", "CPUs", minimum=0
    )
    max_concurrent: int = arg(
        0,
        "trials run at once; 0 = as many as the cluster's resources allow",
        "trials",
        minimum=0,
    )
    scaling: dict[str, Any] | None = arg(  # noqa: RUF009
        None,
        "ScalingConfig kwargs of the pool (components/raycrs/scaling.py); each trial asks for "
        "ONE worker's resources (one GPU, or one TPU host's chips); None = cpus_per_trial CPUs",
        check=scaling_problem,
    )
    max_failures: int = arg(
        2, "retries of a failed trial from its checkpoint", "retries", minimum=0
    )
    keep_checkpoints: int = arg(
        2,
        "checkpoints kept per trial (ASHA; PBT keeps all: a donor's may be restored later)",
        "checkpoints",
        minimum=1,
    )
    resume: bool = arg(
        True, "continue the experiment <storage_path>/<name> when it exists (Tuner.restore)"
    )
    dataset: str = arg("/tmp/raygke/dataset", "dataset written by prepare", "path or URI")
    storage_path: str = arg("/tmp/raygke/runs", "Ray Tune storage root", "path or URI")
    name: str = arg("tune_lm", "experiment name under storage_path")
    seed: int = arg(0, "search seed (sampling) and every trial's init seed")
