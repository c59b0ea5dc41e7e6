"""Will a GPT-2 or Llama Hugging Face model start under vLLM on a given accelerator? The checks
``raygke check`` runs on a vLLM service and the builder of :mod:`workloads.serve_llm` runs before
it starts an engine: memory (weights + KV cache for ``max_model_len``) against the accelerator
memory the replica gets, and the tensor-parallel size against the heads and the chips.

Standard library only (``components/`` and ``workloads/`` both import it).

Sizes (vLLM 0.29.0, ``vllm/model_executor/models/gpt2.py`` and ``vllm/v1/kv_cache_interface.py``
``FullAttentionSpec.page_size_bytes``):

* weights: ``params * dtype_bytes`` with GPT-2's parameters ``V*d + P*d`` (token and position
  embeddings; the output head is the tied token embedding) ``+ L * (12*d*d + 13*d)`` for
  ``n_inner = 4d`` (in general ``L * (4*d*d + 2*d*h + 9*d + h)``: qkv ``d*3d + 3d``, proj
  ``d*d + d``, two LayerNorms ``4d``, MLP ``d*h + h + h*d + d``) ``+ 2d`` (final LayerNorm).
  Llama (``vllm/model_executor/models/llama.py``): ``V*d`` (twice when the head is untied)
  ``+ L * (2*d*H*hd + 2*d*KV*hd + 3*d*h + 2d)`` (q and o, k and v of ``KV`` key/value heads of
  ``hd`` units, the gated MLP's gate, up and down, two RMSNorms; no biases) ``+ d``.
* KV cache of one full-length sequence: ``2 (K and V) * L * max_model_len * KV * hd *
  dtype_bytes`` (``KV * hd = d`` for GPT-2's multi-head attention). vLLM refuses to start when
  one ``max_model_len`` sequence does not fit in the KV space it has
  (``vllm/v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``: "To serve at least one
  request with the models's max seq len ... needed").
* the memory of a replica: ``tensor_parallel_size * per_device_gb * gpu_memory_utilization``
  (vLLM's ``--gpu-memory-utilization``, default 0.9, ``vllm/config/cache.py``); the weights are
  split across the tensor-parallel group, so the sum is what must fit.
* tensor parallelism splits the attention heads: ``n_head % tensor_parallel_size == 0``
  (``vllm/model_executor/models/gpt2.py`` ``GPT2Attention``: ``assert total_num_heads %
  tensor_model_parallel_world_size == 0``), and a group cannot span more devices than the replica
  has (``tensor_parallel_size <= devices``).
* on CPU the KV cache is a fixed space, ``VLLM_CPU_KVCACHE_SPACE`` GiB (``cpu_kv_cache_gb``;
  ``vllm/v1/worker/cpu_worker.py`` ``determine_available_memory`` returns it), so one
  ``max_model_len`` sequence must fit in it (the same ``check_enough_kv_cache_memory``), and an
  engine holds its weights plus that whole space in the host's memory: what the engines sharing
  one host (a worker pod) hold must fit the memory Ray leaves them there.
* vLLM's CPU attention backend takes head sizes 32, 64, 80, 96, 112, 128, 160, 192, 224, 256,
  512 only (``vllm/v1/attention/backends/cpu_attn.py`` ``get_supported_head_sizes``; a head of 16
  fails at the first request with ``Unsupported CPU attention configuration: head_dim=16``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.problems import Problem

GB = 1e9
GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default --gpu-memory-utilization


@dataclass(frozen=True)
class CausalLmShape:
    """The sizes of a GPT-2 (``GPT2LMHeadModel``) or Llama (``LlamaForCausalLM``)
    ``config.json``: vocabulary ``V``, positions ``P``, width ``d``, layers ``L``, heads, MLP
    width ``h``; for Llama also the key/value heads (grouped-query attention), the head size and
    whether the output head is tied to the token embedding.

    Attributes:
        vocab_size, n_positions, n_embd, n_layer, n_head, n_inner: GPT-2's names; a Llama
            config's ``max_position_embeddings``, ``hidden_size``, ``num_hidden_layers``,
            ``num_attention_heads``, ``intermediate_size`` map onto them.
        n_kv_head: key/value heads (``num_key_value_heads``; GPT-2: ``n_head``).
        head_dim: units per head (Llama's ``head_dim``, else ``n_embd // n_head``); 0 = that.
        tied: the output head is the token embedding (GPT-2 always; Llama's
            ``tie_word_embeddings``, default false in ``LlamaConfig``).
        llama: Llama's layout (no position embedding, RMSNorm, gated MLP, no biases).
        positions_key: the config key ``n_positions`` came from (for messages).
    """

    vocab_size: int
    n_positions: int
    n_embd: int
    n_layer: int
    n_head: int
    n_inner: int
    n_kv_head: int = 0
    head_dim: int = 0
    tied: bool = True
    llama: bool = False
    positions_key: str = "n_positions"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> CausalLmShape:
        """From a parsed ``config.json`` (``model_type`` ``llama``, else GPT-2's keys).

        Raises:
            ValueError: a key is missing or not a positive integer (names it).
        """

        def size(key: str, default: Any = None) -> int:
            v = cfg.get(key, default)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"config.json {key}: {v!r} is not a positive integer")
            return v

        if cfg.get("model_type") == "llama":
            heads = size("num_attention_heads")
            d = size("hidden_size")
            return cls(
                vocab_size=size("vocab_size"),
                n_positions=size("max_position_embeddings"),
                n_embd=d,
                n_layer=size("num_hidden_layers"),
                n_head=heads,
                n_inner=size("intermediate_size"),
                n_kv_head=size("num_key_value_heads", heads),
                head_dim=d // heads if cfg.get("head_dim") is None else size("head_dim"),
                tied=bool(cfg.get("tie_word_embeddings", False)),
                llama=True,
                positions_key="max_position_embeddings",
            )
        vals = {k: size(k) for k in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head")}
        inner = cfg.get("n_inner") or 4 * vals["n_embd"]  # GPT2Config's None means 4 * n_embd
        if not isinstance(inner, int) or isinstance(inner, bool) or inner < 1:
            raise ValueError(f"config.json n_inner: {inner!r} is not a positive integer")
        return cls(n_inner=inner, **vals)

    @property
    def head_size(self) -> int:
        return self.head_dim or self.n_embd // self.n_head

    @property
    def kv_heads(self) -> int:
        return self.n_kv_head or self.n_head

    def params(self) -> int:
        """Parameter count (a tied output head counted once), as ``transformers`` counts it."""
        d, h, n, v = self.n_embd, self.n_inner, self.n_layer, self.vocab_size
        if not self.llama:
            block = 4 * d * d + 2 * d * h + 9 * d + h
            return v * d + self.n_positions * d + n * block + 2 * d
        q = self.n_head * self.head_size
        kv = self.kv_heads * self.head_size
        block = 2 * d * q + 2 * d * kv + 3 * d * h + 2 * d  # q, o, k, v; gated MLP; 2 RMSNorms
        return v * d * (1 if self.tied else 2) + n * block + d

    def weights_gb(self, dtype: str) -> float:
        return self.params() * DTYPE_BYTES[dtype] / GB

    def kv_cache_gb(self, max_model_len: int, dtype: str) -> float:
        """KV cache of one sequence of ``max_model_len`` tokens, GB."""
        width = self.kv_heads * self.head_size
        return 2 * self.n_layer * max_model_len * width * DTYPE_BYTES[dtype] / GB


def fit_problems(
    shape: CausalLmShape,
    *,
    dtype: str,
    max_model_len: int,
    tensor_parallel_size: int,
    devices: int,
    device_memory_gb: float | None,
    device_kind: str,
    cpu_kv_cache_gib: float | None = None,
    host_memory_gb: float | None = None,
    engines_per_host: int = 1,
) -> list[Problem]:
    """Why a replica of this model would not start: one Problem of the field each (its ``path``),
    printed ``<field>: <value> (allowed: <what is allowed>)``.

    Args:
        shape: the model's sizes.
        dtype: ``float32`` | ``bfloat16`` | ``float16``.
        max_model_len: longest sequence (prompt + output) served, tokens.
        tensor_parallel_size: devices one engine splits the model over.
        devices: chips/GPUs one replica gets (a TPU slice's chips, a GPU node's GPUs); 1 on CPU.
        device_memory_gb: memory per device (the catalog's HBM, GB); None on CPU (the KV space
            is ``VLLM_CPU_KVCACHE_SPACE``, checked by vLLM itself).
        device_kind: ``cpu`` | ``gpu`` | ``tpu``.
        cpu_kv_cache_gib: CPU only: the engine's KV cache space, GiB (``VLLM_CPU_KVCACHE_SPACE``);
            None: not checked.
        host_memory_gb: CPU only: the host memory the engines of one host may use, GB (a worker
            pod's memory less Ray's object store); None: not checked.
        engines_per_host: CPU only: engines that may share that memory (replicas one pod can
            place); each holds its weights and its KV cache space.
    """
    found: list[tuple[str, Any, str]] = []  # (field, value, what is allowed)
    if dtype not in DTYPE_BYTES:
        found.append(("dtype", dtype, f"one of {', '.join(DTYPE_BYTES)}"))
        return _problems(found)
    if max_model_len > shape.n_positions:
        found.append(
            (
                "max_model_len",
                max_model_len,
                f"at most the model's {shape.positions_key} {shape.n_positions}",
            )
        )
    if shape.n_head % tensor_parallel_size:
        found.append(
            (
                "tensor_parallel_size",
                tensor_parallel_size,
                f"a divisor of the model's {shape.n_head} attention heads",
            )
        )
    if tensor_parallel_size > devices:
        found.append(
            (
                "tensor_parallel_size",
                tensor_parallel_size,
                f"at most the {devices} {device_kind.upper()} device(s) a replica gets",
            )
        )
    if device_kind == "cpu" and shape.head_size not in CPU_HEAD_SIZES:
        found.append(
            (
                "model head size",
                shape.head_size,
                f"one of {', '.join(map(str, CPU_HEAD_SIZES))} (vLLM's CPU attention)",
            )
        )
    if device_kind == "cpu" and cpu_kv_cache_gib is not None:
        one = shape.kv_cache_gb(max_model_len, dtype)
        if one > cpu_kv_cache_gib * GIB / GB:
            found.append(
                (
                    "cpu_kv_cache_gb",
                    f"{cpu_kv_cache_gib:g} GiB",
                    f"at least {one * GB / GIB:.3g} GiB, the KV cache of one max_model_len "
                    f"{max_model_len} sequence in {dtype}: vLLM refuses to start below it",
                )
            )
        if host_memory_gb is not None:
            space = cpu_kv_cache_gib * GIB / GB
            each = shape.weights_gb(dtype) + space
            if engines_per_host * each > host_memory_gb:
                found.append(
                    (
                        "model",
                        f"{engines_per_host} engine(s) x {each:.1f} GB (weights "
                        f"{shape.weights_gb(dtype):.1f} + KV cache space {space:.1f} per engine, "
                        f"{dtype})",
                        f"at most {host_memory_gb:.1f} GB, the memory of one worker pod less "
                        "Ray's object store; engines per pod: its CPUs // num_cpus, at most "
                        "max_replicas",
                    )
                )
    if device_memory_gb is not None:
        need = shape.weights_gb(dtype) + shape.kv_cache_gb(max_model_len, dtype)
        have = tensor_parallel_size * device_memory_gb * GPU_MEMORY_UTILIZATION
        if need > have:
            found.append(
                (
                    "model",
                    f"{need:.1f} GB (weights {shape.weights_gb(dtype):.1f} + KV cache "
                    f"{shape.kv_cache_gb(max_model_len, dtype):.1f} for max_model_len "
                    f"{max_model_len}, {dtype})",
                    f"at most {have:.1f} GB ({tensor_parallel_size} x {device_memory_gb:g} GB x "
                    f"{GPU_MEMORY_UTILIZATION})",
                )
            )
    return _problems(found)


def _problems(found: list[tuple[str, Any, str]]) -> list[Problem]:
    """``(field, value, what is allowed)`` as Problems of the field."""
    return [Problem(f, f"{f}: {value} (allowed: {allowed})") for f, value, allowed in found]
