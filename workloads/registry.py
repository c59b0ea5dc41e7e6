"""The one place that names each Ray workload.

Standard library only: the Pulumi side imports this module to build RayJob entrypoints, and it
must not pull in ray/torch/jax. Each workload is a module runnable as
``python -m workloads.<name> --config-json '<json>'`` whose last stdout line is
``RAYGKE_RESULT {json}``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

RESULT_PREFIX = "RAYGKE_RESULT "
# ``RAYGKE_PROGRESS {"stage", "done", "total", ...}``: a stage's progress, printed by
# ``workloads.common.emit_progress``; ``raygke local run`` draws it as a bar.
PROGRESS_PREFIX = "RAYGKE_PROGRESS "


@dataclass(frozen=True)
class Workload:
    """A Ray program that can be submitted as a job.

    Attributes:
        name: registry key ("prepare", "train_lm", "evaluate", ...).
        module: importable module path run with ``python -m``.
        description: one line for humans.
        default_args: defaults for the JSON config (merged under any explicit args).
        num_cpus: CPUs the driver / each Train worker asks for.
        accelerators: subset of ("cpu", "gpu", "tpu") the workload can use.
        optional_args: further config keys the workload accepts (no default in the JSON).
        writes: the buckets (``datasets``, ``checkpoints``, ``artifacts``) it writes to, so the
            platform can check that the job's service account may write there.
    """

    name: str
    module: str
    description: str
    default_args: Mapping[str, Any] = field(default_factory=dict)
    num_cpus: float = 1.0
    accelerators: tuple[str, ...] = ("cpu",)
    optional_args: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def arg_problems(self, args: Mapping[str, Any]) -> list[str]:
        """Problems with job arguments, one line each: a key the workload does not accept, or a
        value whose type differs from the default's (int where a float is expected is fine)."""
        accepted = set(self.default_args) | set(self.optional_args)
        problems = []
        for key, value in args.items():
            if key not in accepted:
                problems.append(
                    f"unknown argument {key!r} for workload {self.name}; accepted: "
                    f"{', '.join(sorted(accepted))}"
                )
                continue
            default = self.default_args.get(key)
            if default is None or value is None:
                continue
            want = type(default)
            ok = isinstance(value, want) and not (want is not bool and isinstance(value, bool))
            ok = ok or (want is float and isinstance(value, int) and not isinstance(value, bool))
            if not ok:
                problems.append(
                    f"argument {key!r} of workload {self.name} is {value!r}; expected "
                    f"{want.__name__} (e.g. {default!r})"
                )
        return problems

    def config(self, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return ``default_args`` updated with ``args`` (a new dict)."""
        merged = dict(self.default_args)
        merged.update(args or {})
        return merged

    def entrypoint(self, args: Mapping[str, Any] | None = None) -> str:
        """Shell command running the workload.

        ``python -m <module> --config-json '<json of default_args | args>'``, the JSON with
        sorted keys and shlex-quoted.
        """
        payload = json.dumps(self.config(args), sort_keys=True, separators=(",", ":"))
        return f"python -m {self.module} --config-json {shlex.quote(payload)}"


def _frozen(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


# Model dimensions every trainer accepts (workloads/lm_config.py's ModelConfig fields).
MODEL_ARGS: tuple[str, ...] = (
    "d_model",
    "n_layers",
    "n_heads",
    "context_length",
    "mlp_ratio",
    "dropout",
)

_ALL: tuple[Workload, ...] = (
    Workload(
        name="prepare",
        module="workloads.prepare",
        description="Ray Data: read a corpus by URI, byte-tokenize, split, write Parquet shards",
        default_args=_frozen(
            {
                "data": None,  # None -> the Python standard library source folder
                "dataset": "/tmp/raygke/dataset",
                "context_length": 256,
                "val_fraction": 0.05,
                "num_shards": 8,
            }
        ),
        num_cpus=1.0,
        accelerators=("cpu",),
        optional_args=("include", "exclude"),
        writes=("datasets",),
    ),
    Workload(
        name="train_lm",
        module="workloads.train_lm",
        description="Ray Train TorchTrainer: byte-level decoder-only transformer LM, DDP",
        default_args=_frozen(
            {
                "dataset": "/tmp/raygke/dataset",
                "storage_path": "/tmp/raygke/runs",
                "name": "train_lm",
                "num_workers": 1,
                "use_gpu": False,
                "steps": 500,
                "batch_size": 32,
                "lr": 3e-3,
                "checkpoint_every": 100,
                "max_failures": 2,
                "seed": 0,
            }
        ),
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        optional_args=(
            *MODEL_ARGS,
            "cpus_per_worker",
            "torch_threads",
            "warmup",
            "keep_checkpoints",
            "log_every",
            "step_log",
            "fail_at_step",
            "fail_marker",
        ),
        writes=("checkpoints",),
    ),
    Workload(
        name="train_lm_jax",
        module="workloads.train_lm_jax",
        description="Ray Train JaxTrainer: the same byte-level LM in JAX, data-parallel on TPUs",
        default_args=_frozen(
            {
                "dataset": "/tmp/raygke/dataset",
                "storage_path": "/tmp/raygke/runs",
                "name": "train_lm_jax",
                "num_workers": 1,
                "scaling": None,  # ScalingConfig kwargs from the catalog slice (TPU jobs)
                "steps": 600,
                "batch_size": 32,
                "lr": 3e-3,
                "checkpoint_every": 200,
                "max_failures": 2,
                "seed": 0,
                "compute_dtype": "auto",
                "peak_flops_per_device": None,
            }
        ),
        num_cpus=1.0,
        accelerators=("tpu", "cpu"),
        optional_args=(
            *MODEL_ARGS,
            "cpus_per_worker",
            "warmup",
            "grad_clip",
            "keep_checkpoints",
            "log_every",
            "placement_log",
        ),
        writes=("checkpoints",),
    ),
    Workload(
        name="evaluate",
        module="workloads.evaluate",
        description="Validation loss (nats/byte) and a sample from the newest valid checkpoint",
        default_args=_frozen(
            {
                "dataset": "/tmp/raygke/dataset",
                "storage_path": "/tmp/raygke/runs",
                "name": "train_lm",
                "checkpoint": None,
                "prompt": "def ",
            }
        ),
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        optional_args=(
            "sample_bytes",
            "temperature",
            "seed",
            "batch_size",
            "max_val_rows",
            "torch_threads",
        ),
    ),
)

WORKLOADS: Mapping[str, Workload] = MappingProxyType({w.name: w for w in _ALL})

DEFAULT_PIPELINE: tuple[str, ...] = ("prepare", "train_lm", "evaluate")


def get_workload(name: str) -> Workload:
    """Return the workload called ``name``.

    Raises:
        KeyError: unknown name; the message lists the valid names.
    """
    try:
        return WORKLOADS[name]
    except KeyError:
        valid = ", ".join(sorted(WORKLOADS))
        raise KeyError(f"unknown workload {name!r}; valid names: {valid}") from None
