"""Typed arguments of every workload: one dataclass each, the one source of their names, types,
defaults, units and meanings.

Standard library only (the Pulumi side and ``raygke`` import it; it must not load
ray/torch/jax/pulumi). From each dataclass are derived:

* the defaults merged into a job's JSON config (:meth:`WorkloadArgs.defaults`);
* the type and range checks, one readable line per problem, optional fields included
  (:meth:`WorkloadArgs.problems`; :meth:`WorkloadArgs.parse` raises :class:`ArgError`);
* the ``--set JOB.KEY=VALUE`` value parser (:func:`parse_value`);
* the job-argument binding used both by the RayJob manifests on GKE
  (``components/raycrs/rayjob.py`` ``job_args``) and by ``raygke local run``
  (``raygke/local_jobs.py`` ``job_args``): :func:`bind_job_args`;
* the documentation rows (:meth:`WorkloadArgs.rows`: name, type, default, unit, meaning).

A workload module reads its typed object (``args.steps``), never ``config.get(key, default)``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from workloads.lm_config import ModelConfig

# Largest integer argument: exact in JSON (IEEE double) and in every framework's int64.
MAX_INT = 2**53


class ArgError(ValueError):
    """Workload arguments that do not fit the workload's dataclass. ``problems`` holds one
    readable line per problem (field named, value shown, what is allowed); ``str()`` joins
    them with ``"; "``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def arg(
    default: Any,
    doc: str,
    unit: str = "",
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Any:
    """A dataclass field of a workload's arguments.

    Args:
        default: the default value (a list is copied per instance).
        doc: the meaning, one sentence.
        unit: the unit of the value ("steps", "rows", "bytes", "FLOP/s", "path or URI", ...).
        minimum: smallest allowed number (checked for int/float values).
        maximum: largest allowed number (likewise).
        check: extra rule, ``value -> problem text or None`` (e.g. the ``scaling`` shape).
    """
    meta = {
        "doc": doc,
        "unit": unit,
        "minimum": minimum,
        "maximum": maximum,
        "check": check,
        "default": default,
    }
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: json.loads(json.dumps(default)), metadata=meta)
    return field(default=default, metadata=meta)


# ---------------------------------------------------------------------------------- type checks


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is type(None):
        return "None"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin is list:
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin in (dict, Mapping):
        return "mapping"
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


def _accepts(tp: Any, value: Any) -> bool:
    """Whether ``value`` (as JSON/YAML gives it) fits the annotation ``tp``. An int is a fine
    float; a bool is never an int or float."""
    origin = get_origin(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(_accepts(a, value) for a in get_args(tp))
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in get_args(tp))
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = get_args(tp)
        return isinstance(value, (list, tuple)) and all(_accepts(item, v) for v in value)
    if origin in (dict, Mapping):
        key_t, val_t = get_args(tp) or (str, Any)
        return isinstance(value, Mapping) and all(
            _accepts(key_t, k) and _accepts(val_t, v) for k, v in value.items()
        )
    return isinstance(value, tp)


def _show(value: Any) -> str:
    """A value for a problem line: its repr, plus its type when that is not a JSON type (e.g.
    a YAML date ``2001-12-14`` -> ``datetime.date(2001, 12, 14) (a date)``)."""
    if isinstance(value, (str, int, float, bool, list, dict, type(None))):
        return repr(value)
    return f"{value!r} (a {type(value).__name__})"


def parse_value(raw: str) -> Any:
    """Parse a command-line value (``--set job.key=VALUE``, ``--key VALUE``): JSON when it
    parses (``10`` -> 10, ``true`` -> True, ``[1,2]`` -> list), else the string itself."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# ------------------------------------------------------------------------------------ the base


@dataclass(frozen=True)
class ArgRow:
    """One documented argument: ``type`` as text ("int", "str or None"), ``default`` as JSON
    text, ``unit`` ("" when unitless), ``doc`` the meaning."""

    name: str
    type: str
    default: str
    unit: str
    doc: str


_HINTS: dict[type, dict[str, Any]] = {}


@dataclass(frozen=True)
class WorkloadArgs:
    """Base of every workload's argument dataclass. ``WORKLOAD`` is the registry name."""

    WORKLOAD: ClassVar[str] = ""
    # Rules across arguments, over the defaults updated with the given values: each returns a
    # problem text or None.
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = ()

    @classmethod
    def _hints(cls) -> dict[str, Any]:
        if cls not in _HINTS:
            _HINTS[cls] = get_type_hints(cls)
        return _HINTS[cls]

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The argument names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every argument's default (a new dict, JSON-serialisable)."""
        return {
            f.name: json.loads(json.dumps(f.metadata["default"])) for f in dataclasses.fields(cls)
        }

    @classmethod
    def problems(cls, values: Mapping[str, Any]) -> list[str]:
        """Problems with ``values`` (a subset of the arguments), one line each: an unknown name
        (the accepted ones listed), a value of the wrong type (``None`` only where the type
        allows it), a number under its minimum, or a field rule's complaint."""
        hints = cls._hints()
        fields = {f.name: f for f in dataclasses.fields(cls)}
        out = []
        for key, value in values.items():
            f = fields.get(key)
            if f is None:
                out.append(
                    f"unknown argument {key!r} for workload {cls.WORKLOAD}; accepted: "
                    f"{', '.join(sorted(fields))}"
                )
                continue
            where = f"argument {key!r} of workload {cls.WORKLOAD} is {_show(value)}"
            tp = hints[key]
            if not _accepts(tp, value):
                default = f.metadata["default"]
                eg = f" (e.g. {default!r})" if default is not None else ""
                out.append(f"{where}; expected {_type_name(tp)}{eg}")
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and isinstance(value, float) and not math.isfinite(value):
                out.append(f"{where}; must be a finite number")
                continue
            if number and isinstance(value, int) and abs(value) > MAX_INT:
                out.append(f"{where}; must be at most {MAX_INT} in size (an exact JSON integer)")
                continue
            minimum, maximum = f.metadata["minimum"], f.metadata["maximum"]
            if number and minimum is not None and value < minimum:
                out.append(f"{where}; must be >= {minimum:g}")
                continue
            if number and maximum is not None and value > maximum:
                out.append(f"{where}; must be <= {maximum:g}")
                continue
            check = f.metadata["check"]
            why = check(value) if check is not None and value is not None else None
            if why:
                out.append(f"{where}; {why}")
        if not out:
            merged = {**cls.defaults(), **values}
            out += [
                f"workload {cls.WORKLOAD}: {why}" for rule in cls.RULES if (why := rule(merged))
            ]
        return out

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None) -> Any:
        """The typed arguments: defaults updated with ``values``.

        Raises:
            ArgError: :meth:`problems` found any (all of them listed).
        """
        values = dict(values or {})
        problems = cls.problems(values)
        if problems:
            raise ArgError(problems)
        return cls(**values)

    @classmethod
    def rows(cls) -> list[ArgRow]:
        """One documentation row per argument (for a docs generator or ``--help`` text)."""
        hints = cls._hints()
        return [
            ArgRow(
                name=f.name,
                type=_type_name(hints[f.name]),
                default=json.dumps(f.metadata["default"]),
                unit=f.metadata["unit"],
                doc=f.metadata["doc"],
            )
            for f in dataclasses.fields(cls)
        ]

    def to_dict(self) -> dict[str, Any]:
        """All arguments as a plain JSON-able dict (what travels to Ray Train workers)."""
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------ prepare


def _fraction(value: float) -> str | None:
    return None if 0 <= value < 1 else "must be >= 0 and < 1"


@dataclass(frozen=True)
class PrepareArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.prepare`."""

    WORKLOAD: ClassVar[str] = "prepare"

    data: str | None = arg(
        None,
        "corpus: folder, glob, single file or gs:// URI; None = this interpreter's standard "
        "library source folder",
        "path or URI",
    )
    dataset: str = arg("/tmp/raygke/dataset", "output dataset folder", "path or URI")
    include: str | None = arg(
        None,
        "glob on the corpus files' relative paths (a folder corpus); None = every file of a "
        "given corpus (the text policy keeps UTF-8 text without NUL bytes), *.py for the "
        "default corpus (the standard library's Python sources)",
    )
    exclude: str | list[str] = arg(  # noqa: RUF009 (arg() returns a dataclasses.field)
        ["site-packages/*", "__pycache__/*", "*/__pycache__/*", ".git/*", "*/.git/*"],
        "glob(s) on relative paths to leave out (a folder corpus)",
    )
    context_length: int = arg(256, "window length T of one training row", "bytes", minimum=1)
    val_fraction: float = arg(
        0.05, "share of files that go to the validation split", "fraction", check=_fraction
    )
    num_shards: int = arg(8, "Parquet shards per split", "files", minimum=1)


# ------------------------------------------------------------------------------------ trainers

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


def _scaling_problem(value: Mapping[str, Any]) -> str | None:
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

_MODEL = ModelConfig()


def _heads_divide_width(values: Mapping[str, Any]) -> str | None:
    """Multi-head attention splits ``d_model`` evenly over the heads."""
    d, h = values.get("d_model"), values.get("n_heads")
    if isinstance(d, int) and isinstance(h, int) and h > 0 and d % h:
        return f"n_heads {h} does not divide d_model {d} (each head gets d_model / n_heads units)"
    return None


@dataclass(frozen=True)
class TrainArgs(WorkloadArgs):
    """Arguments every trainer takes (:mod:`workloads.train_lm`, :mod:`workloads.train_lm_jax`,
    :mod:`workloads.train_lm_tf`),
    read by the shared loop :mod:`workloads.train_loop`."""

    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (_heads_divide_width,)

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
        check=_scaling_problem,
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
    log_every: int = arg(10, "metrics report period", "steps", minimum=1)
    d_model: int = arg(_MODEL.d_model, "model width", "units", minimum=1)
    n_layers: int = arg(_MODEL.n_layers, "transformer blocks", "layers", minimum=1)
    n_heads: int = arg(_MODEL.n_heads, "attention heads (must divide d_model)", "heads", minimum=1)
    context_length: int | None = arg(
        None,
        "sequence length T; None = the dataset's (prepare's manifest, else 256)",
        "bytes",
        minimum=1,
    )
    mlp_ratio: int = arg(_MODEL.mlp_ratio, "MLP width / d_model", minimum=1)
    dropout: float = arg(
        _MODEL.dropout, "dropout rate (PyTorch model only)", "fraction", minimum=0, maximum=1
    )
    step_log: str | None = arg(
        None, "local JSONL file: one line per step from rank 0 with its attempt id (tests)", "path"
    )
    fail_at_step: int | None = arg(
        None, "test hook: rank 0 exits once right after this step (with fail_marker)", "steps"
    )
    fail_marker: str | None = arg(
        None,
        "test hook: file created when the fail_at_step crash happens, so it happens once",
        "path",
    )

    def model_config(self) -> ModelConfig:
        """The model dimensions (``context_length`` must be resolved, else 256)."""
        return ModelConfig.from_config(self.to_dict())


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
        "auto", "matmul dtype; auto = bfloat16 on TPU/GPU, float32 on CPU"
    )
    peak_flops_per_device: float | None = arg(
        None, "peak FLOP/s of one chip/GPU (catalog) for MFU; None = no MFU", "FLOP/s", minimum=0
    )
    placement_log: str | None = arg(
        None, "local JSONL file: one line per worker with where it ran (tests)", "path"
    )


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


# ------------------------------------------------------------------------------------- tune_lm

# ``tune_lm``'s ``trainer`` names -> the registry workload whose module brings the trial's
# stepper (``tune_stepper(args, restored, threads, use_gpu)``); a name is usable once its
# workload is registered (``ARGS`` below).
TUNE_TRAINERS: Mapping[str, str] = types.MappingProxyType(
    {"torch": "train_lm", "jax": "train_lm_jax", "tf": "train_lm_tf"}
)


def _tune_trainer_problem(value: str) -> str | None:
    usable = [k for k, w in TUNE_TRAINERS.items() if w in ARGS]
    if value in usable:
        return None
    if value in TUNE_TRAINERS:
        return f"its workload {TUNE_TRAINERS[value]} is not registered; usable: {', '.join(usable)}"
    return f"must be one of {', '.join(usable)}"


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
    accelerators its workload supports (``Workload.accelerators`` in :mod:`workloads.registry`,
    e.g. ``train_lm_tf``'s)."""
    scaling = values.get("scaling") or {}
    if not isinstance(scaling, Mapping):
        return None
    trainer = values.get("trainer")
    if scaling.get("use_gpu") and trainer == "jax":
        return "trainer 'jax' runs on TPU slices and CPUs, not GPU pools; use trainer 'torch'"
    if scaling.get("use_gpu") and trainer in TUNE_TRAINERS:
        from workloads.registry import WORKLOADS  # imports this module: not at the top

        workload = WORKLOADS.get(TUNE_TRAINERS[trainer])
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
        "trainer whose model and step each trial runs: torch (train_lm), jax (train_lm_jax) or "
        "tf (train_lm_tf)",
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
        check=_scaling_problem,
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


# ------------------------------------------------------------------------------------ evaluate


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
    torch_threads: int | None = arg(
        None,
        "torch threads; None = its Ray CPUs in a Ray worker, else all CPUs",
        "threads",
        minimum=1,
    )


# ------------------------------------------------------------------------------------ serve_lm


def _upper_bounds(values: Mapping[str, Any]) -> str | None:
    """``min_replicas`` <= ``max_replicas``."""
    lo, hi = values.get("min_replicas"), values.get("max_replicas")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        return f"min_replicas {lo} > max_replicas {hi}"
    return None


def _batch_fits(values: Mapping[str, Any]) -> str | None:
    """``max_ongoing_requests`` >= ``max_batch_size``: a replica only ever holds
    ``max_ongoing_requests`` requests, so a larger batch could never fill (Serve warns of the
    same in ``ray/serve/batching.py``, ``_warn_if_max_batch_size_exceeds_max_ongoing_requests``)."""
    batch, ongoing = values.get("max_batch_size"), values.get("max_ongoing_requests")
    if isinstance(batch, int) and isinstance(ongoing, int) and ongoing < batch:
        return (
            f"max_ongoing_requests {ongoing} < max_batch_size {batch}: a batch could never fill; "
            f"set max_ongoing_requests >= {batch}"
        )
    return None


@dataclass(frozen=True)
class ServeLmArgs(WorkloadArgs):
    """Arguments of the Ray Serve application :mod:`workloads.serve_lm` (its builder
    ``workloads.serve_lm:build_app`` receives them as the Serve config's ``args``)."""

    WORKLOAD: ClassVar[str] = "serve_lm"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        _upper_bounds,
        _batch_fits,
    )

    checkpoint: str | None = arg(
        None,
        "a checkpoint folder (its manifest verified), or an experiment folder whose newest "
        "verifying checkpoint_* is served; required",
        "path or URI",
    )
    max_prompt_bytes: int = arg(
        1024, "longest prompt accepted (UTF-8 bytes); longer: 400", "bytes", minimum=1
    )
    max_new_tokens: int = arg(
        256, "most tokens one request may ask for; more: 400", "tokens", minimum=1
    )
    default_new_tokens: int = arg(
        64,
        "tokens generated when a request gives no max_new_tokens (at most max_new_tokens)",
        "tokens",
        minimum=1,
    )
    max_body_bytes: int = arg(
        16384, "largest request body accepted; larger: 413", "bytes", minimum=64
    )
    max_batch_size: int = arg(
        8,
        "most requests a replica decodes together, one forward per token for all (also "
        "@serve.batch max_batch_size); 1 = unbatched",
        "requests",
        minimum=1,
    )
    batch_wait_timeout_s: float = arg(
        0.01,
        "longest wait for a batch to fill (@serve.batch batch_wait_timeout_s)",
        "s",
        minimum=0,
    )
    min_replicas: int = arg(1, "autoscaling: fewest replicas", "replicas", minimum=0)
    max_replicas: int = arg(1, "autoscaling: most replicas", "replicas", minimum=1)
    target_ongoing_requests: float = arg(
        4.0, "autoscaling: ongoing requests per replica Serve aims at", "requests", minimum=0.1
    )
    max_ongoing_requests: int = arg(
        32,
        "requests one replica takes at once (more wait in the proxy); at least max_batch_size, "
        "so a batch can fill",
        "requests",
        minimum=1,
    )
    num_cpus: float = arg(1.0, "CPUs each replica reserves", "CPUs", minimum=0)
    num_gpus: float = arg(
        0.0, "GPUs each replica reserves (the model moves to cuda)", "GPUs", minimum=0
    )
    torch_threads: int | None = arg(
        None,
        "torch intra- and inter-op threads per replica; None = the replica's Ray CPUs (num_cpus, "
        "at least 1)",
        "threads",
        minimum=1,
    )


ARGS: Mapping[str, type[WorkloadArgs]] = types.MappingProxyType(
    {
        c.WORKLOAD: c
        for c in (
            PrepareArgs,
            TrainLmArgs,
            TrainLmJaxArgs,
            TrainLmTfArgs,
            EvaluateArgs,
            ServeLmArgs,
            TuneLmArgs,
        )
    }
)


def markdown_table(workload: str) -> str:
    """The arguments of ``workload`` as a Markdown table (name, type, default, unit, meaning),
    from :meth:`WorkloadArgs.rows`; ``python -m workloads.args`` prints every workload's.

    Raises:
        KeyError: unknown workload.
    """
    lines = ["| argument | type | default | unit | meaning |", "|---|---|---|---|---|"]
    for r in ARGS[workload].rows():
        cells = (f"`{r.name}`", r.type, f"`{r.default}`", r.unit, r.doc)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- binding


@dataclass(frozen=True)
class JobContext:
    """What the platform running a job provides (GKE RayJob or ``raygke local run``); each value
    reaches the workload only if its arguments have a field of that name, and only where not
    None.

    Attributes:
        dataset: the dataset folder (prepare writes it, trainers and evaluate read it).
        storage_path: the checkpoints root.
        name: the run name (trainers write, evaluate reads ``<storage_path>/<name>``).
        scaling: ``ray.train.ScalingConfig`` kwargs of the target node pool / TPU slice.
        max_failures: the job's restart budget.
        peak_flops_per_device: the catalog's peak FLOP/s of one accelerator (for MFU).
        data: the corpus URI (prepare).
        checkpoint: the checkpoint to evaluate.
    """

    dataset: str | None = None
    storage_path: str | None = None
    name: str | None = None
    scaling: Mapping[str, Any] | None = None
    max_failures: int | None = None
    peak_flops_per_device: float | None = None
    data: str | None = None
    checkpoint: str | None = None


def bind_job_args(
    workload: str, context: JobContext, args: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The arguments of one job: the ``context`` values the workload takes, then the job's own
    ``args`` on top (an explicit argument always wins). Defaults are not filled in (the
    workload's entrypoint merges them).

    Raises:
        KeyError: unknown workload (valid names listed).
        ArgError: the resulting arguments do not fit the workload's dataclass.
    """
    try:
        cls = ARGS[workload]
    except KeyError:
        raise KeyError(f"unknown workload {workload!r}; valid names: {', '.join(ARGS)}") from None
    accepted = set(cls.names())
    out = {
        k: (dict(v) if isinstance(v, Mapping) else v)
        for k, v in ((f.name, getattr(context, f.name)) for f in dataclasses.fields(context))
        if v is not None and k in accepted
    }
    out.update(args or {})
    problems = cls.problems(out)
    if problems:
        raise ArgError(problems)
    return out


if __name__ == "__main__":
    for _name in ARGS:
        print(f"### {_name}\n\n{markdown_table(_name)}\n")
