"""``workloads.serve_llm``: the ``ray.serve.llm`` config built from the arguments (model folder
resolution, engine/placement/autoscaling keys, the fit checks) and ``contract.serve_fit``'s sizes.
No Ray, no vLLM: the application itself is exercised in tests/raygke/local/test_serve_llm.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contract.serve_fit import CausalLmShape, fit_problems
from workloads.serve_llm import CHAT_TEMPLATE, ModelError, app_config, is_hub_id, resolve_model

_B2U_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]


def _byte_table() -> dict[int, str]:
    """GPT-2's byte-to-unicode table (``bytes_to_unicode`` of transformers' GPT-2 tokenizer)."""
    table = {b: chr(b) for b in _B2U_PRINTABLE}
    extra = (b for b in range(256) if b not in table)
    table.update({b: chr(256 + n) for n, b in enumerate(extra)})
    return table


def tiny_hf_folder(
    root: Path, *, n_embd: int = 64, n_head: int = 2, n_layer: int = 2, n_positions: int = 64
) -> Path:
    """A random GPT-2 Hugging Face folder with the byte tokenizer (id = byte value), as the
    trainers export it (workloads/hf_export.py): config.json, model.safetensors,
    generation_config.json, tokenizer.json, tokenizer_config.json. Head size 32 by default
    (vLLM's CPU attention refuses 16)."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    root.mkdir(parents=True, exist_ok=True)
    d, h = n_embd, 4 * n_embd
    cfg = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": 256,
        "n_positions": n_positions,
        "n_embd": d,
        "n_layer": n_layer,
        "n_head": n_head,
        "n_inner": h,
        "activation_function": "gelu",
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": True,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": "float32",
    }
    (root / "config.json").write_text(json.dumps(cfg))
    (root / "generation_config.json").write_text(
        json.dumps({"bos_token_id": 0, "eos_token_id": 0, "max_length": n_positions})
    )
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    t = {"transformer.wte.weight": w(256, d), "transformer.wpe.weight": w(n_positions, d)}
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        for ln in ("ln_1", "ln_2"):
            t[p + ln + ".weight"] = np.ones(d, np.float32)
            t[p + ln + ".bias"] = np.zeros(d, np.float32)
        for name, (a, b) in {
            "attn.c_attn": (d, 3 * d),
            "attn.c_proj": (d, d),
            "mlp.c_fc": (d, h),
            "mlp.c_proj": (h, d),
        }.items():
            t[p + name + ".weight"] = w(a, b)
            t[p + name + ".bias"] = np.zeros(b, np.float32)
    t["transformer.ln_f.weight"] = np.ones(d, np.float32)
    t["transformer.ln_f.bias"] = np.zeros(d, np.float32)
    save_file(t, str(root / "model.safetensors"), metadata={"format": "pt"})
    tok = Tokenizer(models.BPE(vocab={ch: b for b, ch in _byte_table().items()}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    (root / "tokenizer.json").write_text(tok.to_str())
    (root / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": n_positions,
                "clean_up_tokenization_spaces": False,
            }
        )
    )
    return root


def test_tiny_folder_tokenizer_ids_are_bytes(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = tiny_hf_folder(tmp_path / "m")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    text = "def f(x):\n\treturn 'é€'"
    assert tok.encode(text).ids == list(text.encode())
    assert tok.decode(list(text.encode())) == text


def test_config_for_cpu_sets_engine_env_and_autoscaling(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m")
    cfg = app_config(
        {"model": str(folder), "model_id": "tiny", "num_cpus": 2, "min_replicas": 0,
         "max_replicas": 3, "cpu_kv_cache_gb": 0.5}
    )  # fmt: skip
    assert cfg["model_loading_config"] == {"model_id": "tiny", "model_source": str(folder)}
    assert cfg["engine_kwargs"]["max_model_len"] == 64  # the model's n_positions
    assert cfg["engine_kwargs"]["chat_template"] == CHAT_TEMPLATE
    assert cfg["accelerator_config"] == {"kind": "cpu"}
    assert cfg["placement_group_config"]["bundles"] == [{"CPU": 2}]
    env = cfg["runtime_env"]["env_vars"]
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "0.5" and env["OMP_NUM_THREADS"] == "2"
    auto = cfg["deployment_config"]["autoscaling_config"]
    assert (auto["min_replicas"], auto["max_replicas"]) == (0, 3)
    assert "experimental_configs" not in cfg  # Ray's own stream batching interval


def test_stream_batching_interval_reaches_ray_serve_llm(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m")
    cfg = app_config({"model": str(folder), "stream_batching_interval_ms": 200})
    assert cfg["experimental_configs"] == {"stream_batching_interval_ms": 200}
    from ray.serve.llm import LLMConfig

    assert LLMConfig(**cfg).experimental_configs["stream_batching_interval_ms"] == 200


def test_config_for_gpu_and_tpu_places_one_device_per_tensor_parallel_rank(
    tmp_path: Path,
) -> None:
    folder = tiny_hf_folder(tmp_path / "m", n_embd=128, n_head=4)
    for kind, res in (("gpu", "GPU"), ("tpu", "TPU")):
        cfg = app_config(
            {"model": str(folder), "accelerator": kind, "tensor_parallel_size": 4,
             "dtype": "bfloat16", "accelerator_type": "L4"}
        )  # fmt: skip
        assert cfg["engine_kwargs"]["tensor_parallel_size"] == 4
        assert cfg["placement_group_config"]["bundles"] == [{"CPU": 1, res: 1}] * 4
        assert cfg["accelerator_config"] == {"kind": kind} and cfg["accelerator_type"] == "L4"
        assert cfg["runtime_env"]["env_vars"] == {}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"tensor_parallel_size": 3, "accelerator": "gpu"}, "a divisor of the model's 2"),
        ({"max_model_len": 65}, "at most the model's n_positions 64"),
        ({"min_replicas": 3, "max_replicas": 2}, "min_replicas 3 > max_replicas 2"),
        ({"accelerator": "npu"}, "accelerator"),
    ],
)
def test_config_refuses_what_cannot_start(tmp_path: Path, extra: dict, says: str) -> None:
    folder = tiny_hf_folder(tmp_path / "m")
    with pytest.raises(ValueError) as e:
        app_config({"model": str(folder), **extra})
    assert says in str(e.value)


def test_cpu_refuses_head_size_16(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m", n_embd=32, n_head=2)
    with pytest.raises(ModelError, match="model head size: 16"):
        app_config({"model": str(folder)})


def test_resolve_model_from_checkpoint_and_experiment(tmp_path: Path) -> None:
    from workloads.checkpoint import write_checkpoint

    exp = tmp_path / "run"
    for step in (1, 2):

        def fill(d: Path) -> None:
            tiny_hf_folder(d / "hf")

        write_checkpoint(exp / f"checkpoint_{step:06d}", fill, {"step": step})
    newest = exp / "checkpoint_000002"
    assert resolve_model(str(exp)) == str(newest / "hf")
    assert resolve_model(str(newest)) == str(newest / "hf")
    assert resolve_model(str(newest / "hf")) == str(newest / "hf")
    (newest / "hf" / "model.safetensors").write_bytes(b"damaged")
    with pytest.raises(ModelError, match=r"model\.safetensors"):
        resolve_model(str(newest))
    with pytest.raises(ModelError, match=r"no config\.json, no checkpoint"):
        resolve_model(str(tmp_path / "nothing"))


def test_a_hub_id_passes_through_unresolved_and_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no local folder of that name here
    assert is_hub_id("Qwen/Qwen2.5-0.5B-Instruct")
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    for not_hub in ("/abs/path", "rel", "a/b/c", "own/bad--name", "./x"):
        assert not is_hub_id(not_hub)
    # a local folder of that shape is a folder, not the Hub
    tiny_hf_folder(tmp_path / "own" / "model")
    assert not is_hub_id("own/model")
    assert resolve_model("own/model") == "own/model"
    # no config.json is read (none exists offline): no fit check, the model's own chat
    # template and max_model_len, the revision handed to vLLM
    cfg = app_config(
        {"model": "Qwen/Qwen2.5-0.5B-Instruct", "model_revision": "abc123", "accelerator": "gpu",
         "tensor_parallel_size": 3, "dtype": "bfloat16"}
    )  # fmt: skip
    assert cfg["model_loading_config"]["model_source"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert cfg["engine_kwargs"] == {
        "dtype": "bfloat16",
        "tensor_parallel_size": 3,
        "revision": "abc123",
    }
    assert cfg["placement_group_config"]["bundles"] == [{"CPU": 1, "GPU": 1}] * 3
    cfg = app_config({"model": "Qwen/Qwen2.5-0.5B-Instruct", "max_model_len": 4096})
    assert cfg["engine_kwargs"]["max_model_len"] == 4096
    assert "revision" not in cfg["engine_kwargs"] and "chat_template" not in cfg["engine_kwargs"]


def test_gpt2_sizes_match_the_tensors(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    folder = tiny_hf_folder(tmp_path / "m", n_embd=64, n_layer=3)
    shape = CausalLmShape.from_config(json.loads((folder / "config.json").read_text()))
    tensors = load_file(str(folder / "model.safetensors"))
    assert shape.params() == sum(a.size for a in tensors.values())
    assert shape.kv_cache_gb(64, "float32") == 2 * 3 * 64 * 64 * 4 / 1e9


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_causal_lm_sizes_are_transformers_parameter_counts(kind: str, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from tests.workloads.hf_folders import make_folder

    folder = make_folder(kind, tmp_path / kind)
    cfg = json.loads((folder / "config.json").read_text())
    shape = CausalLmShape.from_config(cfg)
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert shape.params() == sum(p.numel() for p in model.parameters())
    if kind == "llama":  # grouped-query attention: one key/value head of 32 units
        assert (shape.kv_heads, shape.head_size, shape.tied) == (1, 32, False)
        assert shape.kv_cache_gb(64, "float32") == 2 * 2 * 64 * 32 * 4 / 1e9


def test_llama_3_2_1b_sizes() -> None:
    """Llama-3.2-1B's config.json (huggingface.co/meta-llama/Llama-3.2-1B): 1,235,814,400
    parameters, as its model card's 1.24B; 8 key/value heads of 64 units."""
    shape = CausalLmShape.from_config(
        {
            "model_type": "llama",
            "vocab_size": 128256,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": True,
        }
    )
    assert shape.params() == 1_235_814_400
    assert shape.kv_cache_gb(1000, "bfloat16") == 2 * 16 * 1000 * 8 * 64 * 2 / 1e9
    (p,) = fit_problems(
        shape,
        dtype="bfloat16",
        max_model_len=200_000,
        tensor_parallel_size=1,
        devices=1,
        device_memory_gb=80,
        device_kind="gpu",
    )
    assert p.path == "max_model_len" and "max_position_embeddings 131072" in p


def test_fit_refuses_a_model_larger_than_the_hbm() -> None:
    # GPT-2 XL-like: 48 layers, d 1600, 25 heads; 1.56e9 params, bf16 ~3.1 GB.
    xl = CausalLmShape(vocab_size=50257, n_positions=1024, n_embd=1600, n_layer=48, n_head=25,
                   n_inner=6400)  # fmt: skip
    fits = dict(dtype="bfloat16", max_model_len=1024, devices=1, device_kind="tpu")
    assert fit_problems(xl, tensor_parallel_size=1, device_memory_gb=16, **fits) == []
    (big,) = fit_problems(xl, tensor_parallel_size=1, device_memory_gb=2, **fits)
    assert big.path == "model" and big.startswith("model: ") and "weights 3.1" in big
    assert "(allowed: at most 1.8 GB" in big
    probs = fit_problems(
        xl, dtype="bfloat16", max_model_len=1024, tensor_parallel_size=8, devices=4,
        device_memory_gb=16, device_kind="tpu",
    )  # fmt: skip
    assert [p.path for p in probs] == ["tensor_parallel_size", "tensor_parallel_size"]
    assert "divisor of the model's 25" in probs[0] and "at most the 4 TPU" in probs[1]


def test_on_cpu_the_kv_cache_space_holds_one_full_sequence_and_the_pod_holds_the_engines() -> None:
    """vLLM's CPU build allocates VLLM_CPU_KVCACHE_SPACE GiB (cpu_kv_cache_gb) for the KV cache
    and refuses to start when one max_model_len sequence does not fit it; the builder refuses
    first, and ``raygke check`` holds the engines of one pod to its memory."""
    from contract.args.serve_llm import ServeLlmArgs
    from workloads.serve_llm import llm_config

    # 24 layers, d 1024, 1024 positions: one sequence's float32 KV cache is 0.201 GB (0.1875 GiB)
    shape = CausalLmShape(vocab_size=256, n_positions=1024, n_embd=1024, n_layer=24, n_head=16,
                      n_inner=4096)  # fmt: skip
    cpu = dict(dtype="float32", max_model_len=1024, tensor_parallel_size=1, devices=1,
               device_memory_gb=None, device_kind="cpu")  # fmt: skip
    assert fit_problems(shape, cpu_kv_cache_gib=0.1875, **cpu) == []
    (small,) = fit_problems(shape, cpu_kv_cache_gib=0.1, **cpu)
    assert small.path == "cpu_kv_cache_gb" and "at least 0.188 GiB" in small
    with pytest.raises(ModelError, match=r"cpu_kv_cache_gb: 0\.1 GiB"):
        llm_config(ServeLlmArgs.parse({"model": "/m", "cpu_kv_cache_gb": 0.1}), "/m", shape)
    # weights 1.21 GB + 1 GiB space = 2.29 GB per engine: 3 engines need 6.86 GB
    room = dict(cpu_kv_cache_gib=1, engines_per_host=3)
    assert fit_problems(shape, host_memory_gb=6.9, **room, **cpu) == []
    (mem,) = fit_problems(shape, host_memory_gb=6.8, **room, **cpu)
    assert mem.path == "model" and mem.startswith("model: 3 engine(s) x 2.3 GB (weights 1.2")
    # on GPUs and TPUs the KV space arguments are not read (device memory decides)
    gpu = {**cpu, "device_kind": "gpu"}
    assert fit_problems(shape, cpu_kv_cache_gib=0.01, host_memory_gb=0.1, **gpu) == []
