"""The arguments every trainer takes (:mod:`workloads.train_lm`, :mod:`workloads.train_lm_jax`,
:mod:`workloads.train_lm_tf`), read by the shared loop :mod:`workloads.train_loop`, and the
``scaling`` argument's shape (``ray.train.ScalingConfig`` keyword arguments).

The fault-injection test hooks are not arguments: see :mod:`workloads.faults`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from contract.args.base import WorkloadArgs, arg

# ``ray.train.ScalingConfig`` keyword arguments a ``scaling`` mapping may hold
# (https://docs.ray.io/en/latest/train/api/doc/ray.train.ScalingConfig.html).
SCALING_KEYS = (
    "num_workers",
    "use_gpu",
    "use_tpu",
    "topology",
    "accelerator_type",
    "resources_per_worker",
    "placement_strategy",
)


# ``ScalingConfig(placement_strategy=...)`` values (Ray placement group strategies,
# https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html#placement-strategy).
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


def scaling_problem(value: Mapping[str, Any]) -> str | None:
    unknown = sorted(set(value) - set(SCALING_KEYS))
    if unknown:
        return (
            f"unknown ScalingConfig key(s) {', '.join(unknown)}; allowed: {', '.join(SCALING_KEYS)}"
        )
    n = value.get("num_workers")
    if isinstance(n, (list, tuple)):  # elastic: (min, max), ray/train/v2/api/config.py
        ok = len(n) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in n)
        if not (ok and 1 <= n[0] <= n[1]):
            return f"num_workers {list(n)} must be [min, max] ints with 1 <= min <= max"
    elif not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        return "needs num_workers, an int >= 1 (or [min, max] for elastic training)"
    strategy = value.get("placement_strategy", "PACK")
    if strategy not in PLACEMENT_STRATEGIES:
        return f"placement_strategy {strategy!r} is not one of {', '.join(PLACEMENT_STRATEGIES)}"
    res = value.get("resources_per_worker", {})
    if not isinstance(res, Mapping) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in res.values()
    ):
        return "resources_per_worker must map resource names to numbers"
    return None


# The trainers' optimizers (workloads/model_torch.py, model_jax.py, model_tf.py make_optimizer).
Optimizer = Literal["muon", "adamw"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)

# The model's default dimensions: ``workloads.lm_config.ModelConfig``'s defaults (the workloads
# side; tests/workloads/test_args.py asserts they agree).
D_MODEL, N_LAYERS, N_HEADS, MLP_RATIO, DROPOUT = 128, 4, 4, 4, 0.0


def hf_source_problem(value: Any) -> str | None:
    """A Hugging Face model source (``prepare``'s ``tokenizer``, ``train_lm``'s ``init_model``):
    a local folder, a ``gs://`` folder or a Hub repo id ``owner/name``."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        return "must be a folder, a gs:// folder or a Hugging Face Hub repo id owner/name"
    scheme = value.split("://", 1)[0] if "://" in value else None
    if scheme is not None and scheme != "gs":
        return (
            f"{value!r} has scheme {scheme}://; allowed: a local folder, a gs:// folder or a "
            "Hugging Face Hub repo id owner/name"
        )
    return None


def heads_divide_width(values: Mapping[str, Any]) -> str | None:
    """Multi-head attention splits ``d_model`` evenly over the heads."""
    d, h = values.get("d_model"), values.get("n_heads")
    if isinstance(d, int) and isinstance(h, int) and h > 0 and d % h:
        return f"n_heads {h} does not divide d_model {d} (each head gets d_model / n_heads units)"
    return None


def device_memory_arg() -> Any:
    """The ``device_memory_gb`` argument of the trainers whose ``parallelism: auto`` reads the
    fit estimate (:mod:`workloads.train_lm`, :mod:`workloads.train_lm_jax`): the memory of one
    device the choice assumes instead of the device's own (a GPU's total, TPU HBM's
    ``bytes_limit``, a CPU worker's share of its host). Below the device's it makes the run
    shard what a smaller device could not hold (a model meant for a bigger slice tried on a
    smaller one, or the tests' emulated devices); ``raygke check`` reads it too and refuses a
    value above the catalog's memory (components/raycrs/training_fit.py)."""
    return arg(
        None,
        "memory of one device (GB, 1e9 bytes) that parallelism auto and raygke check's fit "
        "assume instead of the device's own; at most the device's; None = the device's",
        "GB",
        minimum=0.001,
    )


@dataclass(frozen=True)
class TrainArgs(WorkloadArgs):
    """Arguments every trainer takes (:mod:`workloads.train_lm`, :mod:`workloads.train_lm_jax`,
    :mod:`workloads.train_lm_tf`),
    read by the shared loop :mod:`workloads.train_loop`."""

    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (heads_divide_width,)

    dataset: str = arg("/tmp/raygke/dataset", "dataset written by prepare", "path or URI")
    storage_path: str = arg(
        "/tmp/raygke/runs",
        "Ray Train storage root; runs go to <storage_path>/<name>",
        "path or URI",
    )
    name: str = arg("train", "experiment (run) name under storage_path")
    scaling: dict[str, Any] | None = arg(  # noqa: RUF009 (arg() returns a dataclasses.field)
        None,
        "ray.train.ScalingConfig kwargs derived from the node pool / TPU slice "
        "(components/raycrs/scaling.py); None = num_workers CPU workers",
        check=scaling_problem,
    )
    num_workers: int = arg(1, "Ray Train workers when scaling is None", "workers", minimum=1)
    cpus_per_worker: float = arg(
        1.0, "CPUs each worker asks for when scaling is None", "CPUs", minimum=0
    )
    steps: int = arg(
        450,
        "optimisation steps in total (resumed runs continue the count)",
        "steps",
        minimum=1,
        maximum=10**9,
    )
    batch_size: int = arg(32, "rows per worker per step", "rows", minimum=1)
    optimizer: Optimizer = arg(  # noqa: RUF009 (arg() returns a dataclasses.field)
        "muon",
        "muon: Muon for the 2-D weight matrices inside the transformer blocks and AdamW for the "
        "rest (embeddings, norms, biases); adamw: AdamW for every parameter",
    )
    lr: float = arg(4.5e-3, "peak learning rate of AdamW", "1/step", minimum=0)
    muon_lr: float = arg(
        0.03,
        "peak learning rate of Muon (optimizer muon; scaled per matrix by "
        "sqrt(max(1, fan_out / fan_in)))",
        "1/step",
        minimum=0,
    )
    ns_dtype: Literal["auto", "float32", "bfloat16"] = arg(
        "auto",
        "dtype of Muon's Newton-Schulz iterations; auto = float32 on CPU, bfloat16 on GPU/TPU "
        "(decided once per run, kept from the checkpoint on resume)",
    )
    precision: Literal["auto", "bf16", "fp32"] = arg(
        "auto",
        "compute dtype (autocast / mixed precision; weights, optimizer state and loss stay "
        "float32); auto = bf16 where the device multiplies it natively and measures faster "
        "(AMX / AVX512-BF16 CPUs, GPUs, TPUs), else fp32 (workloads/precision.py; decided once "
        "per run, recorded in the checkpoint, kept on resume)",
    )
    warmup: int = arg(50, "linear warm-up before cosine decay", "steps", minimum=0)
    checkpoint_every: int = arg(
        100,
        "checkpoint period; 0 = only at the end (the last step always checkpoints)",
        "steps",
        minimum=0,
    )
    keep_checkpoints: int | None = arg(
        None, "checkpoints Ray Train keeps; None = all", "checkpoints", minimum=1
    )
    max_failures: int = arg(
        2, "worker-group restarts from the last checkpoint", "restarts", minimum=0
    )
    seed: int = arg(0, "model init and shuffle seed")
    log_every: int = arg(
        10,
        "metrics report period (Ray Train takes one report per 2 s; more often slows training)",
        "steps",
        minimum=1,
    )
    d_model: int = arg(D_MODEL, "model width", "units", minimum=1)
    n_layers: int = arg(N_LAYERS, "transformer blocks", "layers", minimum=1)
    n_heads: int = arg(N_HEADS, "attention heads (must divide d_model)", "heads", minimum=1)
    context_length: int | None = arg(
        None,
        "sequence length T; None = the dataset's (prepare's manifest, else 256)",
        "bytes",
        minimum=1,
    )
    mlp_ratio: int = arg(MLP_RATIO, "MLP width / d_model", minimum=1)
    dropout: float = arg(
        DROPOUT, "dropout rate (PyTorch model only)", "fraction", minimum=0, maximum=1
    )
    step_log: str | None = arg(
        None, "local JSONL file: one line per step from rank 0 with its attempt id (tests)", "path"
    )
