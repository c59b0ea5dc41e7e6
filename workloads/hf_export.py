"""The byte-level LM as a Hugging Face model folder: GPT-2's architecture, our weights, a byte
tokenizer whose token ids are the byte values.

Our network (:mod:`workloads.model_torch`, :mod:`workloads.model_jax`, :mod:`workloads.model_tf`:
pre-LayerNorm blocks with epsilon 1e-5, one fused qkv projection with bias, causal softmax
attention scaled by 1/sqrt(head_dim), an exact (erf) GELU MLP of width ``mlp_ratio * d_model``,
learned positions, a final LayerNorm, output logits through the tied token embedding) is, layer
for layer, ``transformers``' ``GPT2LMHeadModel`` (``models/gpt2/modeling_gpt2.py``,
``configuration_gpt2.py``, transformers 5.25) with ``activation_function="gelu"`` (ACT2FN's
``GELUActivation`` = erf GELU; GPT-2's own default ``gelu_new`` is the tanh approximation),
``layer_norm_epsilon=1e-5``, ``scale_attn_weights=True``, ``tie_word_embeddings=True``,
``n_inner = mlp_ratio * d_model``, ``n_positions = context_length``, ``vocab_size = 256``.
vLLM's ``vllm/model_executor/models/gpt2.py`` loads the same folder.

Files (written by the trainers into ``<checkpoint>/hf/``, :data:`contract.checkpoint.HF_SUBDIR`,
inside the checkpoint's atomic write and sha256 manifest, :mod:`workloads.checkpoint`):

* ``config.json``: the GPT-2 config above; ``bos_token_id`` = ``eos_token_id`` = 0, the byte
  that ends every document in the training data (:data:`workloads.prepare.SEPARATOR`; documents
  hold no NUL byte), so generation stops where a document would end.
* ``model.safetensors``: float32 tensors under GPT-2's names (``transformer.wte.weight``
  ``[256, d]``, ``transformer.wpe.weight`` ``[context_length, d]``, per block ``ln_1``,
  ``attn.c_attn`` ``[d, 3d]``, ``attn.c_proj`` ``[d, d]``, ``ln_2``, ``mlp.c_fc`` ``[d, h]``,
  ``mlp.c_proj`` ``[h, d]``, then ``transformer.ln_f``). GPT-2's ``Conv1D`` computes
  ``x @ W + b`` with ``W`` stored ``[in, out]`` (``transformers/pytorch_utils.py``), the layout
  of the JAX/TensorFlow kernels (a torch ``nn.Linear`` weight ``[out, in]`` is transposed on the
  way, :func:`workloads.model_torch.jax_arrays`). ``lm_head.weight`` is not stored: it is the
  tied ``wte`` (as ``save_pretrained`` leaves it out). Header metadata ``{"format": "pt"}``
  (what ``PreTrainedModel.save_pretrained`` writes).
* ``generation_config.json``: the bos/eos ids.
* ``tokenizer.json`` (built with the ``tokenizers`` library): a BPE model without merges over
  the 256 characters of GPT-2's byte-to-unicode table (:func:`byte_to_unicode`), character
  ``byte_to_unicode()[b]`` having id ``b``, behind the ``ByteLevel`` pre-tokenizer (no prefix
  space, no regex split) and decoder. The ByteLevel pre-tokenizer turns text into its UTF-8 bytes
  and each byte into that table's character (``tokenizers/src/pre_tokenizers/byte_level.rs``), so
  ``encode(text).ids == list(text.encode("utf-8"))``; decoding maps the characters back to bytes,
  so any id sequence decodes to its bytes (as text: UTF-8 with U+FFFD for invalid sequences, the
  tokenizer's ``from_utf8_lossy``), and ``convert_ids_to_tokens`` is lossless for any bytes.
  No special token is declared: the text of a special token is cut out of any input that holds
  it, which would break ``ids == bytes`` for that text; the end of a document is id 0 through
  the configs.
* ``tokenizer_config.json``: ``PreTrainedTokenizerFast`` over ``tokenizer.json``,
  ``model_max_length = context_length``.

Needs ``numpy``, ``safetensors`` and ``tokenizers`` (imported when used), not ``transformers``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from contract.checkpoint import HF_SUBDIR
from workloads.lm_config import ModelConfig
from workloads.prepare import SEPARATOR

VOCAB = 256
CONFIG = "config.json"
GENERATION_CONFIG = "generation_config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
HF_FILES = (CONFIG, GENERATION_CONFIG, WEIGHTS, TOKENIZER, TOKENIZER_CONFIG)
EOS_ID = SEPARATOR  # the byte after every training document (workloads/prepare.py)
LAYER_NORM_EPS = 1e-5  # the epsilon of all three models' LayerNorms

# Our per-block parameter (JAX layout, workloads/model_jax.py) -> GPT-2's module name.
BLOCK_NAMES = {
    "ln1": "ln_1",
    "qkv": "attn.c_attn",
    "proj": "attn.c_proj",
    "ln2": "ln_2",
    "mlp1": "mlp.c_fc",
    "mlp2": "mlp.c_proj",
}


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character table (256 entries, a bijection onto printable characters):
    the printable Latin-1 bytes ``!``..``~``, ``¡``..``¬``, ``®``..``ÿ`` map to themselves, the
    other 68 bytes in increasing order to ``chr(256)``, ``chr(257)``, ... (``bytes_to_unicode``
    in openai/gpt-2 ``src/encoder.py``; ``bytes_char`` in huggingface/tokenizers
    ``tokenizers/src/pre_tokenizers/byte_level.rs``)."""
    keep = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in keep}
    extra = (b for b in range(VOCAB) if b not in table)
    table.update({b: chr(VOCAB + n) for n, b in enumerate(extra)})
    return dict(sorted(table.items()))


def hf_config(cfg: ModelConfig) -> dict[str, Any]:
    """``config.json``: GPT-2 (``GPT2LMHeadModel``) with our dimensions; see the module
    docstring. ``attn_pdrop`` is the model's ``dropout`` (ours drops attention weights only)."""
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": VOCAB,
        "n_positions": cfg.context_length,
        "n_embd": cfg.d_model,
        "n_layer": cfg.n_layers,
        "n_head": cfg.n_heads,
        "n_inner": cfg.mlp_ratio * cfg.d_model,
        "activation_function": "gelu",
        "layer_norm_epsilon": LAYER_NORM_EPS,
        "attn_pdrop": cfg.dropout,
        "embd_pdrop": 0.0,
        "resid_pdrop": 0.0,
        "summary_first_dropout": 0.0,
        "initializer_range": 0.02,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True,
        "use_cache": True,
        "bos_token_id": EOS_ID,
        "eos_token_id": EOS_ID,
        "dtype": "float32",
    }


def generation_config() -> dict[str, Any]:
    """``generation_config.json``: bos/eos id 0 (:data:`EOS_ID`). No ``max_length``:
    ``generate`` warns when a caller's ``max_new_tokens`` meets one; the limit of prompt plus
    output is ``n_positions`` (the context length, where learned positions end)."""
    return {"bos_token_id": EOS_ID, "eos_token_id": EOS_ID}


def tokenizer_json() -> str:
    """``tokenizer.json`` (``tokenizers.Tokenizer.to_str``): id = byte value; see the module
    docstring."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {ch: b for b, ch in byte_to_unicode().items()}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return tok.to_str(pretty=True)


def tokenizer_config(cfg: ModelConfig) -> dict[str, Any]:
    """``tokenizer_config.json``: the fast tokenizer of ``tokenizer.json``, no special tokens."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": cfg.context_length,
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
    }


def hf_tensors(arrays: Mapping[str, np.ndarray], cfg: ModelConfig) -> dict[str, np.ndarray]:
    """GPT-2's float32 tensors from our parameters in the JAX layout (``tok``, ``pos``,
    ``blocks/<i>/qkv/w`` ``[in, out]``, ``blocks/<i>/ln1/scale`` ..., ``ln_f/bias``; what
    ``params.npz`` holds).

    Raises:
        KeyError: a parameter is missing (names it).
        ValueError: a parameter's shape is not the one ``cfg`` implies (names it).
    """
    d, h = cfg.d_model, cfg.mlp_ratio * cfg.d_model
    shapes = {"qkv": (d, 3 * d), "proj": (d, d), "mlp1": (d, h), "mlp2": (h, d)}

    def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in arrays:
            raise KeyError(f"parameter {name!r} missing")
        a = np.ascontiguousarray(np.asarray(arrays[name], dtype=np.float32))
        if a.shape != shape:
            raise ValueError(f"parameter {name!r} has shape {list(a.shape)}, not {list(shape)}")
        return a

    out = {
        "transformer.wte.weight": get("tok", (VOCAB, d)),
        "transformer.wpe.weight": get("pos", (cfg.context_length, d)),
    }
    for i in range(cfg.n_layers):
        for ours, theirs in BLOCK_NAMES.items():
            src, dst = f"blocks/{i}/{ours}", f"transformer.h.{i}.{theirs}"
            if ours.startswith("ln"):
                out[f"{dst}.weight"] = get(f"{src}/scale", (d,))
                out[f"{dst}.bias"] = get(f"{src}/bias", (d,))
            else:
                out[f"{dst}.weight"] = get(f"{src}/w", shapes[ours])  # Conv1D: [in, out]
                out[f"{dst}.bias"] = get(f"{src}/b", shapes[ours][1:])
    out["transformer.ln_f.weight"] = get("ln_f/scale", (d,))
    out["transformer.ln_f.bias"] = get("ln_f/bias", (d,))
    return out


def _json(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def hf_files(
    arrays: Mapping[str, np.ndarray], cfg: ModelConfig, folder: str = HF_SUBDIR
) -> dict[str, bytes]:
    """``{"<folder>/<file>": bytes}`` (``folder`` ``""``: bare names): the whole Hugging Face
    folder (:data:`HF_FILES`) for our parameters in the JAX layout (:func:`hf_tensors`), ready
    for :func:`workloads.checkpoint.write_checkpoint`'s ``files``.

    Raises:
        KeyError, ValueError: as :func:`hf_tensors`.
    """
    from safetensors.numpy import save

    files = {
        CONFIG: _json(hf_config(cfg)),
        GENERATION_CONFIG: _json(generation_config()),
        WEIGHTS: save(hf_tensors(arrays, cfg), metadata={"format": "pt"}),
        TOKENIZER: tokenizer_json().encode(),
        TOKENIZER_CONFIG: _json(tokenizer_config(cfg)),
    }
    return {f"{folder}/{name}" if folder else name: data for name, data in files.items()}
