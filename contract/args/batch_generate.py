"""Arguments of :mod:`workloads.batch_generate` (batch inference: vLLM under Ray Data over a set
of prompts, ``ray.data.llm``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from contract.args.base import WorkloadArgs, arg

# The files of a prompt set (workloads/batch_generate.py prompt_files): JSON lines, or plain text
# with one prompt per line.
JSONL_SUFFIXES = (".jsonl", ".json")
TEXT_SUFFIXES = (".txt",)


@dataclass(frozen=True)
class BatchGenerateArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.batch_generate`."""

    WORKLOAD: ClassVar[str] = "batch_generate"

    prompts: str | None = arg(
        None,
        "the prompt set: a folder, glob or gs:// prefix of .jsonl files (one JSON object per "
        "line with a string `prompt`; its other keys are kept in the output) or of .txt files "
        "(one prompt per line); required",
        "path or URI",
    )
    model: str | None = arg(
        None,
        "the model vLLM loads: a Hugging Face folder, a checkpoint folder (its hf/), an "
        "experiment folder (its newest verifying checkpoint's hf/) or a Hub repo id owner/name; "
        "None = checkpoint, else the newest verifying checkpoint under <storage_path>/<name>",
        "path",
    )
    checkpoint: str | None = arg(
        None,
        "checkpoint folder whose hf/ is loaded (the platform sets the one this run trained)",
        "path",
    )
    storage_path: str = arg(
        "/tmp/raygke/runs",
        "checkpoints root, with name: where the model is looked up when model and checkpoint "
        "are unset",
        "path",
    )
    name: str = arg("train_lm", "run (experiment) name under storage_path")
    artifacts: str = arg(
        "/tmp/raygke/artifacts",
        "artifacts root: output defaults to <artifacts>/generations/<name>/<UTC time>",
        "path or URI",
    )
    output: str | None = arg(
        None,
        "folder the completions are written to (JSON lines: the prompt's keys, completion, "
        "prompt_tokens, completion_tokens); None = <artifacts>/generations/<name>/<UTC time>; "
        "it must hold no .json file yet",
        "path or URI",
    )
    max_tokens: int = arg(64, "tokens generated per prompt at most", "tokens", minimum=1)
    temperature: float = arg(0.0, "sampling temperature; 0 = greedy", minimum=0)
    seed: int = arg(0, "sampling seed of every request (a run repeats exactly)")
    max_model_len: int | None = arg(
        None,
        "longest sequence (prompt + completion); None = the model's n_positions",
        "tokens",
        minimum=1,
    )
    dtype: Literal["float32", "bfloat16", "float16"] = arg(
        "float32", "weights and activations (vLLM dtype); CPUs without bf16: float32", ""
    )
    accelerator: Literal["cpu", "gpu", "tpu"] = arg(
        "cpu", "where the engines run: vLLM's CPU, CUDA or TPU build", ""
    )
    accelerator_type: str | None = arg(
        None, "Ray accelerator type the engines need (e.g. L4, TPU-V6E); None = any", ""
    )
    tensor_parallel_size: int = arg(
        1, "devices one engine splits the model over (GPUs, or a TPU host's chips)", "devices",
        minimum=1,
    )  # fmt: skip
    concurrency: int = arg(
        1, "engines run at once (Ray Data's actor pool of vLLM engines)", "engines", minimum=1
    )
    batch_size: int = arg(16, "prompts Ray Data hands an engine at a time", "prompts", minimum=1)
    num_cpus: float = arg(1.0, "CPU only: CPUs each engine reserves", "CPUs", minimum=0.1)
    cpu_kv_cache_gb: int = arg(
        1,
        "CPU only: KV cache space per engine (VLLM_CPU_KVCACHE_SPACE, which vLLM 0.29 reads as "
        "whole GiB)",
        "GiB",
        minimum=1,
    )
    cpu_threads: int | None = arg(
        None, "CPU only: OpenMP threads of an engine; None = num_cpus", "threads", minimum=1
    )
