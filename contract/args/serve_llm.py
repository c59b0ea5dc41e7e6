"""Arguments of the Ray Serve LLM application :mod:`workloads.serve_llm` (vLLM behind
``ray.serve.llm``, the OpenAI API)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from contract.args.base import WorkloadArgs, arg

# A Hugging Face Hub repo id ``owner/name``: each part 1-96 characters of letters, digits, ``-``,
# ``_``, ``.``, not starting or ending with ``-`` or ``.``, no ``--`` or ``..`` (huggingface_hub
# ``utils/_validators.py`` ``validate_repo_id`` / ``REPO_ID_REGEX``).
HF_REPO_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")


def is_hub_repo_id(value: str) -> bool:
    """Whether ``value`` is written as a Hub repo id ``owner/name`` (:data:`HF_REPO_PART` each)."""
    owner, sep, name = value.partition("/")
    return bool(sep) and all(
        HF_REPO_PART.fullmatch(x) and ".." not in x and "--" not in x for x in (owner, name)
    )


def _replicas(values: Mapping[str, Any]) -> str | None:
    """``min_replicas`` <= ``max_replicas``."""
    lo, hi = values.get("min_replicas"), values.get("max_replicas")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        return f"min_replicas {lo} > max_replicas {hi}"
    return None


# Ray Serve LLM's prefix-aware request router (Ray 2.60 ``ray/serve/llm/request_router.py``),
# given to Serve as the LLM deployment's ``request_router_config.request_router_class``.
PREFIX_ROUTER = "ray.serve.llm.request_router.PrefixCacheAffinityRouter"
ROUTINGS = ("power_of_two", "prefix_cache")


def _prefix_options(values: Mapping[str, Any]) -> str | None:
    """The prefix router's thresholds only with ``routing: prefix_cache``."""
    given = [k for k in PREFIX_OPTIONS if values.get(k) is not None]
    if given and values.get("routing") != "prefix_cache":
        return (
            f"{given[0]} is set but routing is {values.get('routing')!r}; it tunes "
            "routing: prefix_cache only"
        )
    return None


# ServeLlmArgs field -> PrefixCacheAffinityRouter.initialize_state keyword (Ray 2.60
# ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_aware_router.py).
PREFIX_OPTIONS = {
    "prefix_imbalanced_threshold": "imbalanced_threshold",
    "prefix_match_rate_threshold": "match_rate_threshold",
}


@dataclass(frozen=True)
class ServeLlmArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.serve_llm` (its builder ``workloads.serve_llm:build_app``
    receives them as the Serve config's ``args``)."""

    WORKLOAD: ClassVar[str] = "serve_llm"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        _replicas,
        _prefix_options,
    )

    model: str | None = arg(
        None,
        "the Hugging Face model folder vLLM loads (a checkpoint's hf/ folder), a checkpoint "
        "folder (its hf/ is served), an experiment folder (its newest verifying checkpoint's "
        "hf/), or a Hugging Face Hub repo id owner/name (downloaded by vLLM); required",
        "path",
    )
    model_revision: str | None = arg(
        None,
        "Hub model only: the branch, tag or commit vLLM downloads (vLLM revision); None = main",
        "",
    )
    model_id: str = arg("lm", "the model name clients send (`model` of the OpenAI API)", "name")
    max_model_len: int | None = arg(
        None,
        "longest sequence (prompt + completion) served; None = the model's n_positions",
        "tokens",
        minimum=1,
    )
    dtype: Literal["float32", "bfloat16", "float16"] = arg(
        "float32", "weights and activations (vLLM --dtype); CPUs without bf16: float32", ""
    )
    accelerator: Literal["cpu", "gpu", "tpu"] = arg(
        "cpu", "where the engine runs: vLLM's CPU, CUDA or TPU build", ""
    )
    accelerator_type: str | None = arg(
        None,
        "Ray accelerator type the replicas need (e.g. L4, TPU-V6E); None = any",
        "",
    )
    tensor_parallel_size: int = arg(
        1, "devices one engine splits the model over (vLLM --tensor-parallel-size)", "devices",
        minimum=1,
    )  # fmt: skip
    tpu_topology: str | None = arg(
        None,
        "TPU only: the topology of a multi-host slice (e.g. 4x4) one replica spans; Ray Serve "
        "LLM reserves the whole slice (TPUConfig topology, a SlicePlacementGroup) and vLLM's "
        "TPU build runs over its hosts with its Ray executor; None = a single host",
        "",
    )
    cpu_kv_cache_gb: float = arg(
        1.0, "CPU only: KV cache space per replica (VLLM_CPU_KVCACHE_SPACE)", "GiB", minimum=0.1
    )
    cpu_threads: int | None = arg(
        None,
        "CPU only: OpenMP threads of the engine; None = the replica's num_cpus",
        "threads",
        minimum=1,
    )
    num_cpus: float = arg(1.0, "CPUs each engine replica reserves", "CPUs", minimum=0)
    ingress_num_cpus: float = arg(
        0.25,
        "CPUs the OpenAI ingress replica reserves (Ray Serve LLM's default is 1: with 2 CPUs "
        "the ingress and one engine would not both place)",
        "CPUs",
        minimum=0,
    )
    min_replicas: int = arg(1, "autoscaling: fewest replicas", "replicas", minimum=0)
    max_replicas: int = arg(1, "autoscaling: most replicas", "replicas", minimum=1)
    target_ongoing_requests: float = arg(
        16.0, "autoscaling: ongoing requests per replica Serve aims at", "requests", minimum=0.1
    )
    max_ongoing_requests: int = arg(
        64, "requests one replica takes at once (more wait in the proxy)", "requests", minimum=1
    )
    upscale_delay_s: float | None = arg(
        None,
        "autoscaling: how long the load must stay above target_ongoing_requests before Serve "
        "adds a replica (AutoscalingConfig upscale_delay_s); None = Ray's default, 30",
        "s",
        minimum=0,
    )
    downscale_delay_s: float | None = arg(
        None,
        "autoscaling: how long the load must stay below target before Serve removes a replica "
        "(AutoscalingConfig downscale_delay_s); None = Ray's default, 600",
        "s",
        minimum=0,
    )
    routing: Literal["power_of_two", "prefix_cache"] = arg(
        "power_of_two",
        "how a request picks an engine replica: Serve's power-of-two choices (the shorter queue "
        "of two replicas), or prefix_cache, Ray Serve LLM's PrefixCacheAffinityRouter: the "
        "replica that served the longest prefix of the prompt while the queues are balanced, "
        "so vLLM's prefix cache is hit (ray.serve.llm.request_router)",
        "",
    )
    prefix_imbalanced_threshold: float | None = arg(
        None,
        "prefix_cache routing: queue-length difference between replicas beyond which a request "
        "goes by power of two instead (imbalanced_threshold); None = Ray's default, infinite",
        "requests",
        minimum=0,
    )
    prefix_match_rate_threshold: float | None = arg(
        None,
        "prefix_cache routing: share of the prompt a replica's cached prefix must match, else "
        "the request goes to the replica holding the least cached text (match_rate_threshold); "
        "None = Ray's default, 0.1",
        "",
        minimum=0,
        maximum=1,
    )
    stream_batching_interval_ms: int | None = arg(
        None,
        "how long the engine replica gathers streamed tokens before sending them on (Ray Serve "
        "LLM's experimental_configs stream_batching_interval_ms); None = Ray's default, 50",
        "ms",
        minimum=0,
    )
