"""The one place that names each Ray workload.

Standard library only: the Pulumi side imports this module to build RayJob entrypoints, and it
must not pull in ray/torch/jax. Each workload is a module runnable as
``python -m workloads.<name> --config-json '<json>'`` whose last stdout line is
``RAYGKE_RESULT {json}``. Each workload's arguments are a dataclass in :mod:`workloads.args`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from workloads.args import (
    TUNE_TRAINERS,
    ArgRow,
    EvaluateArgs,
    PrepareArgs,
    ServeLmArgs,
    TrainLmArgs,
    TrainLmJaxArgs,
    TrainLmTfArgs,
    TuneLmArgs,
    WorkloadArgs,
)

RESULT_PREFIX = "RAYGKE_RESULT "
# ``RAYGKE_PROGRESS {"stage", "done", "total", ...}``: a stage's progress, printed by
# ``workloads.common.emit_progress``; ``raygke local run`` draws it as a bar.
PROGRESS_PREFIX = "RAYGKE_PROGRESS "


# Why TensorFlow jobs get their own GPU image (``gpu-tf``, without PyTorch: components/builders/
# images.py). Evidence: tests/images/test_resolution.py
# (test_tensorflow_gpu_build_clashes_with_the_gpu_image_torch) resolves the GPU image's
# requirements plus ``tensorflow[and-cuda]`` with ``pip install --dry-run --report`` against PyPI
# and lists the wheels' files. PyPI has one torch 2.13.0 wheel for CPython 3.11 Linux x86_64, the
# CUDA 13 build (its metadata: ``cuda-toolkit==13.0.3``, ``nvidia-cudnn-cu13==9.20.0.48``,
# ``nvidia-nccl-cu13==2.29.7``); PyTorch's CUDA 12 builds live on download.pytorch.org only.
# TensorFlow 2.21's ``and-cuda`` extra asks for CUDA 12 wheels (``nvidia-cudnn-cu12>=9.3.0.75,<10``,
# ``nvidia-nccl-cu12>=2.27.7,<3``). The distribution names differ, so pip resolves both, but the
# cuDNN and NCCL wheels of both majors install the same files (``nvidia/cudnn/lib/libcudnn*.so.9``,
# ``nvidia/nccl/lib/libnccl.so.2``): the one installed last overwrites the other's, silently
# (pip does not check file ownership: https://github.com/pypa/pip/issues/4625). Either torch runs
# on a CUDA 12 cuDNN/NCCL or TensorFlow on CUDA 13 ones; and the cu12 cuDNN the resolver picks
# (9.28.0.42 when measured) ships sublibraries the cu13 9.20.0.48 lacks
# (``libcudnn_engines_tensor_ir.so.9``, ``libcudnn_ext.so.9``), so when cu13 installs last the
# directory mixes 9.20 and 9.28 files, the state that fails with
# CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (https://github.com/pytorch/pytorch/issues/187824).
# ``raygke check`` gives this line for a GPU job that would need both in one image.
TF_GPU_CONFLICT = (
    "TensorFlow's GPU build cannot share a GPU image with PyTorch: tensorflow[and-cuda]==2.21.0 "
    "takes CUDA 12 wheels (nvidia-cudnn-cu12>=9.3.0.75,<10, nvidia-nccl-cu12>=2.27.7,<3) and "
    "torch==2.13.0 from PyPI CUDA 13 ones (nvidia-cudnn-cu13==9.20.0.48, "
    "nvidia-nccl-cu13==2.29.7); pip resolves both, but both majors install "
    "nvidia/cudnn/lib/libcudnn*.so.9 and nvidia/nccl/lib/libnccl.so.2, so one overwrites the "
    "other's cuDNN and NCCL; TensorFlow jobs on GPUs run in the gpu-tf image, which has no "
    "PyTorch"
)


@dataclass(frozen=True)
class Workload:
    """A Ray program that can be submitted as a job.

    Attributes:
        name: registry key ("prepare", "train_lm", "evaluate", ...).
        module: importable module path run with ``python -m``.
        description: one line for humans.
        args: the workload's argument dataclass (:mod:`workloads.args`), the one source of its
            argument names, types, defaults, units and meanings.
        num_cpus: CPUs the driver / each Train worker asks for.
        accelerators: subset of ("cpu", "gpu", "tpu") the workload can use.
        writes: the buckets (``datasets``, ``checkpoints``, ``artifacts``) it writes to, so the
            platform can check that the job's service account may write there.
        needs: the Python distributions beyond Ray it imports (PyPI names, as pinned in
            ``pyproject.toml``), on the driver and on the workers. The version needed is the
            project's pin, the one the tests ran with; ``raygke check`` refuses a job whose image
            does not provide each at that version (``components/images/checks.py``).
        unsupported: ``(accelerator, why)`` pairs: the reason given when a job asks for an
            accelerator outside :attr:`accelerators` (see :meth:`refusal`).
        serve_app: for a Ray Serve application (a stack ``services:`` entry, ``raygke local
            serve``), not a job: its application builder ``module:function``, the Serve config's
            ``import_path`` (https://docs.ray.io/en/latest/serve/advanced-guides/app-builder-guide.html).
            None for jobs.
    """

    name: str
    module: str
    description: str
    args: type[WorkloadArgs]
    num_cpus: float = 1.0
    accelerators: tuple[str, ...] = ("cpu",)
    writes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    unsupported: tuple[tuple[str, str], ...] = ()

    def refusal(self, accelerator: str) -> str | None:
        """One line refusing ``accelerator`` (None when the workload supports it): the kinds it
        supports, and the recorded reason when there is one."""
        if accelerator in self.accelerators:
            return None
        why = dict(self.unsupported).get(accelerator)
        return (
            f"workload {self.name!r} supports {', '.join(self.accelerators)}, not {accelerator}"
            + (f": {why}" if why else "")
        )

    serve_app: str | None = None

    def needs_for(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """:attr:`needs` with the job arguments ``args``: for a workload with a ``trainer``
        argument (``tune_lm``), plus the needs of the trainer's workload
        (:data:`workloads.args.TUNE_TRAINERS`; the default trainer's when unset), in order,
        without repeats. An unknown trainer adds nothing (the argument check reports it)."""

        out = list(self.needs)
        if "trainer" in self.default_args:
            trainer = args.get("trainer", self.default_args["trainer"])
            other = (
                WORKLOADS.get(TUNE_TRAINERS.get(trainer, "")) if isinstance(trainer, str) else None
            )
            if other is not None:
                out += other.needs
        return tuple(dict.fromkeys(out))

    @property
    def is_service(self) -> bool:
        """True for a Ray Serve application (deployed as a RayService, never run as a job)."""
        return self.serve_app is not None

    @property
    def default_args(self) -> Mapping[str, Any]:
        """Every argument's default (read-only), from :attr:`args`."""
        return MappingProxyType(self.args.defaults())

    def arg_problems(self, args: Mapping[str, Any]) -> list[str]:
        """Problems with job arguments, one line each: a key the workload does not accept, a
        value of the wrong type (int where a float is expected is fine; None only where the
        argument is optional), or out of range. See :meth:`WorkloadArgs.problems`."""
        return self.args.problems(args)

    def parse(self, args: Mapping[str, Any] | None = None) -> Any:
        """The typed arguments (an instance of :attr:`args`).

        Raises:
            workloads.args.ArgError: one line per problem.
        """
        return self.args.parse(args)

    def arg_rows(self) -> list[ArgRow]:
        """Documentation rows: name, type, default, unit, meaning of each argument."""
        return self.args.rows()

    def config(self, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return ``default_args`` updated with ``args`` (a new dict)."""
        merged = self.args.defaults()
        merged.update(args or {})
        return merged

    def entrypoint(self, args: Mapping[str, Any] | None = None) -> str:
        """Shell command running the workload.

        ``python -m <module> --config-json '<json of default_args | args>'``, the JSON with
        sorted keys and shlex-quoted.

        Raises:
            workloads.args.ArgError: ``args`` do not fit the workload (e.g. a YAML date where a
                string is expected), so no unserialisable value reaches ``json.dumps``.
        """
        self.args.parse(args)
        payload = json.dumps(self.config(args), sort_keys=True, separators=(",", ":"))
        return f"python -m {self.module} --config-json {shlex.quote(payload)}"


_ALL: tuple[Workload, ...] = (
    Workload(
        name="prepare",
        module="workloads.prepare",
        description="Ray Data: read a corpus by URI, byte-tokenize, split, write Parquet shards",
        args=PrepareArgs,
        num_cpus=1.0,
        accelerators=("cpu",),
        writes=("datasets",),
        needs=("pyarrow", "numpy"),
    ),
    Workload(
        name="train_lm",
        module="workloads.train_lm",
        description="Ray Train TorchTrainer: byte-level decoder-only transformer LM, DDP",
        args=TrainLmArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        writes=("checkpoints",),
        needs=("torch", "numpy", "pyarrow"),
    ),
    Workload(
        name="train_lm_jax",
        module="workloads.train_lm_jax",
        description="Ray Train JaxTrainer: the same byte-level LM in JAX, data-parallel on TPUs",
        args=TrainLmJaxArgs,
        num_cpus=1.0,
        accelerators=("tpu", "cpu"),
        writes=("checkpoints",),
        needs=("jax", "jaxlib", "optax", "numpy", "pyarrow"),
    ),
    Workload(
        name="train_lm_tf",
        module="workloads.train_lm_tf",
        description="Ray Train TensorflowTrainer: the same byte-level LM in Keras 3, "
        "MultiWorkerMirroredStrategy (NCCL on GPUs)",
        args=TrainLmTfArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        writes=("checkpoints",),
        # tensorflow: the cpu image's tensorflow-cpu or the gpu-tf image's CUDA build; no torch
        # (GPU workers run the gpu-tf image, which has none: TF_GPU_CONFLICT)
        needs=("tensorflow", "keras", "numpy", "pyarrow"),
        unsupported=(
            ("tpu", "TensorFlow on TPU is not part of this product; use train_lm_jax on TPUs"),
        ),
    ),
    Workload(
        name="tune_lm",
        module="workloads.tune_lm",
        description="Ray Tune ASHA/PBT sweep of lr, warm-up, width, depth, batch over a trainer",
        args=TuneLmArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu", "tpu"),
        writes=("checkpoints",),
        # torch scores every trial's checkpoint; the chosen trainer's needs come on top
        # (Workload.needs_for)
        needs=("torch", "numpy", "pyarrow"),
    ),
    Workload(
        name="evaluate",
        module="workloads.evaluate",
        description="Validation loss (nats/byte) and a sample from the newest valid checkpoint",
        args=EvaluateArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        needs=("torch", "numpy", "pyarrow"),
    ),
    Workload(
        name="serve_lm",
        module="workloads.serve_lm",
        description="Ray Serve: POST /generate from a verified checkpoint, dynamic batching",
        args=ServeLmArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        needs=("torch", "numpy"),
        serve_app="workloads.serve_lm:build_app",
    ),
)

WORKLOADS: Mapping[str, Workload] = MappingProxyType({w.name: w for w in _ALL})
# The jobs (``raygke local run``, stack ``jobs:``) and the Serve applications (``services:``).
JOBS: tuple[str, ...] = tuple(w.name for w in _ALL if not w.is_service)
SERVE_APPS: tuple[str, ...] = tuple(w.name for w in _ALL if w.is_service)

DEFAULT_PIPELINE: tuple[str, ...] = ("prepare", "train_lm", "evaluate")

# The training workloads (each writes checkpoints that ``evaluate`` scores).
TRAINERS: tuple[str, ...] = ("train_lm", "train_lm_jax", "train_lm_tf")


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
