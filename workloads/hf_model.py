"""Fine-tuning a Hugging Face causal LM (issue 47 item 3): where its folder comes from, its
tokenizer in :mod:`workloads.prepare`, the model :mod:`workloads.train_lm` trains, and the
Hugging Face folder each of its checkpoints holds.

* source (:func:`local_folder`): a local folder, a ``gs://`` folder (copied once into a local
  cache, :data:`CACHE_ENV`, through ``pyarrow.fs``: the checkpoints bucket a stack job names), or
  a Hugging Face Hub repo id ``owner/name`` (``transformers`` downloads it; huggingface_hub
  reads the token from ``HF_TOKEN`` or the file ``HF_TOKEN_PATH``, which a stack job's
  ``hf_token_secret`` mounts, as services do). The trainers' own exports (``<checkpoint>/hf``,
  :mod:`workloads.hf_export`: GPT-2) and any GPT-2- or Llama-architecture folder load through
  ``AutoModelForCausalLM`` / ``AutoTokenizer``.
* tokens (:func:`token_windows`): each document's ids from the folder's tokenizer (no special
  tokens added), the documents joined by the tokenizer's end-of-sequence id (0 without one),
  cut into windows of ``context_length + 1`` ids with stride ``context_length``, as the
  byte-level windows are; stored as ``int32`` (the byte-level dataset keeps ``uint8``). The
  dataset's manifest records ``tokenizer`` (the source) and ``vocab_size``.
* model (:class:`HFCausalLM`): the ``transformers`` model in float32 behind the byte-level
  model's interface (``forward(idx[B, T]) -> logits[B, T, V]``, ``blocks``: its decoder layers,
  which :func:`workloads.fsdp.fsdp_wrap` shards one by one, ``cfg.flops_per_token()``,
  ``checkpointing``: ``transformers``' gradient checkpointing).
* checkpoints (:func:`hf_checkpoint_files`): every checkpoint of a fine-tuning run holds the
  model's ``save_pretrained`` folder with the source's tokenizer under ``hf/`` (the folder a run
  exports, :data:`contract.checkpoint.HF_SUBDIR`) beside ``optimizer.pt``, in the one atomic
  write and manifest of :mod:`workloads.checkpoint`; a resume loads ``hf/`` again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from workloads.common import InputError, resolve_fs

CACHE_ENV = "RAYGKE_HF_CACHE"  # where gs:// folders are copied (default <tmp>/raygke-hf)
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
FRAMEWORK = "torch-hf"  # a fine-tuning checkpoint's metadata "framework"
OPTIMIZER = "optimizer.pt"  # workloads.model_torch.OPTIMIZER


def is_hub_id(source: str) -> bool:
    """Whether ``source`` reads as a Hub repo id ``owner/name`` (and not a path)."""
    return bool(HUB_ID.fullmatch(source)) and not source.startswith((".", "/"))


def local_folder(source: str) -> str:
    """What ``from_pretrained`` reads for ``source`` (see the module docstring): the local
    folder, a local copy of a ``gs://`` folder, or the Hub id itself.

    Raises:
        InputError: a path that is no folder (and no Hub id), or an empty ``gs://`` folder.
    """
    if "://" not in source:
        if os.path.isdir(source):
            return os.path.abspath(source)
        if is_hub_id(source) and not os.path.exists(source):
            return source
        raise InputError(
            f"Hugging Face model {source!r} is not a folder here; give a local folder, a gs:// "
            "folder or a Hub repo id owner/name"
        )
    import pyarrow.fs as pafs

    fs, path = resolve_fs(source)
    root = os.environ.get(CACHE_ENV) or os.path.join(tempfile.gettempdir(), "raygke-hf")
    out = os.path.join(root, hashlib.sha256(source.encode()).hexdigest()[:16])
    if os.path.isfile(os.path.join(out, "config.json")):
        return out
    files = [
        f
        for f in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        if f.type == pafs.FileType.File
    ]
    if not files:
        raise InputError(f"Hugging Face model {source!r}: no files there")
    tmp = tempfile.mkdtemp(dir=_mkdir(root))
    for f in files:
        rel = f.path[len(path.rstrip("/")) + 1 :]
        os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
        pafs.copy_files(f.path, os.path.join(tmp, rel), source_filesystem=fs)
    with contextlib.suppress(OSError):  # another worker of this host copied it first
        os.rename(tmp, out)
    return out


def _mkdir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def load_tokenizer(source: str) -> Any:
    """The folder's tokenizer (``AutoTokenizer``).

    Raises:
        InputError: the folder has no tokenizer ``transformers`` can read.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(local_folder(source))
    except (OSError, ValueError) as e:
        raise InputError(f"Hugging Face model {source!r}: no tokenizer: {e}") from None


def separator(tokenizer: Any) -> int:
    """The id between two documents: the end-of-sequence token's, else 0."""
    eos = getattr(tokenizer, "eos_token_id", None)
    return int(eos) if eos is not None else 0


def vocab_size(tokenizer: Any) -> int:
    """Ids the tokenizer can give (its vocabulary with the added tokens)."""
    return len(tokenizer)


def tokenizer_facts(source: str) -> dict[str, Any]:
    """What a dataset's manifest records of its tokenizer: ``tokenizer`` (the source) and
    ``vocab_size``; loading it here refuses a folder without one before any task starts."""
    return {"tokenizer": source, "vocab_size": vocab_size(load_tokenizer(source))}


def token_windows(tokenizer: Any, docs: list[bytes], context_length: int) -> Any:
    """``[n, context_length + 1]`` int32 windows of the documents' token ids (see the module
    docstring)."""
    import numpy as np

    sep = separator(tokenizer)
    ids: list[int] = []
    for doc in docs:
        ids.extend(tokenizer.encode(doc.decode("utf-8"), add_special_tokens=False))
        ids.append(sep)
    stream = np.asarray(ids, dtype=np.int32)
    n = max(0, (len(stream) - 1) // context_length)
    if n == 0:
        return np.zeros((0, context_length + 1), dtype=np.int32)
    view = np.lib.stride_tricks.sliding_window_view(stream, context_length + 1)
    return np.ascontiguousarray(view[: n * context_length : context_length])


class HFConfig:
    """What the trainer reads of a model's config: ``context_length`` (its positions),
    ``vocab`` and the FLOPs per training token (6 per parameter outside the embeddings plus the
    attention scores, ``12 L d T``, as :mod:`workloads.flops` counts)."""

    def __init__(self, config: Any, params: int, embedding: int) -> None:
        self.hidden = int(config.hidden_size)
        self.layers = int(config.num_hidden_layers)
        self.heads = int(config.num_attention_heads)
        self.vocab = int(config.vocab_size)
        self.intermediate = int(getattr(config, "intermediate_size", None) or 4 * self.hidden)
        self.context_length = int(
            getattr(config, "max_position_embeddings", None) or config.n_positions
        )
        self.params, self.embedding = params, embedding

    def flops_per_token(self) -> float:
        return 6.0 * (self.params - self.embedding) + 12.0 * (
            self.layers * self.hidden * self.context_length
        )


def _decoder_layers(model: Any, layers: int) -> Any:
    """The model's decoder layers: its first ``nn.ModuleList`` of ``layers`` modules
    (``transformer.h`` in GPT-2, ``model.layers`` in Llama)."""
    from torch import nn

    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == layers:
            return module
    raise InputError(f"{type(model).__name__}: no list of its {layers} decoder layers found")


def _torch_module():
    from torch import nn

    class HFCausalLM(nn.Module):
        """A ``transformers`` causal LM behind the byte-level model's interface (module
        docstring); its state dict is the ``transformers`` model's under ``hf.``."""

        def __init__(self, hf: Any, source: str) -> None:
            super().__init__()
            self.hf = hf
            self.source = source  # where the tokenizer of every checkpoint's hf/ comes from
            params = sum(p.numel() for p in hf.parameters())
            embedding = hf.get_input_embeddings().weight.numel()
            self.cfg = HFConfig(hf.config, params, embedding)
            self._checkpointing = False

        @property
        def blocks(self) -> Any:
            """The decoder layers (not registered a second time: the state dict and the
            parameter names stay the ``transformers`` model's under ``hf.``)."""
            return _decoder_layers(self.hf, self.cfg.layers)

        @property
        def checkpointing(self) -> bool:
            return self._checkpointing

        @checkpointing.setter
        def checkpointing(self, on: bool) -> None:
            if on:
                self.hf.gradient_checkpointing_enable({"use_reentrant": False})
            elif self._checkpointing:
                self.hf.gradient_checkpointing_disable()
            self._checkpointing = bool(on)

        def forward(self, idx: Any) -> Any:
            return self.hf(input_ids=idx, use_cache=False).logits

    return HFCausalLM


def load_model(source: str) -> Any:
    """The ``transformers`` causal LM of ``source`` in float32, as :class:`HFCausalLM`.

    Raises:
        InputError: the folder holds no causal LM ``transformers`` can load.
    """
    import torch
    from transformers import AutoModelForCausalLM

    try:
        hf = AutoModelForCausalLM.from_pretrained(local_folder(source), dtype=torch.float32)
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"Hugging Face model {source!r}: cannot load a causal LM: {e}") from None
    return _torch_module()(hf, source)


def hf_checkpoint_files(model: Any, state: dict[str, Any] | None, prefix: str) -> dict[str, bytes]:
    """The files of ``model``'s Hugging Face folder under ``prefix`` (``hf/``):
    ``save_pretrained`` of the model (with ``state``, a full state dict of :class:`HFCausalLM`,
    when given: a sharded model's gathered one) and its source's tokenizer."""
    m = model.module if hasattr(model, "module") else model
    weights = None
    if state is not None:
        weights = {k[len("hf.") :]: v for k, v in state.items() if k.startswith("hf.")}
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        m.hf.save_pretrained(tmp, state_dict=weights)
        load_tokenizer(m.source).save_pretrained(tmp)
        for path in sorted(Path(tmp).rglob("*")):
            if path.is_file():
                files[prefix + path.relative_to(tmp).as_posix()] = path.read_bytes()
    return files


def is_hf(model: Any) -> bool:
    """Whether ``model`` (or the module DDP wraps) is a :class:`HFCausalLM`."""
    return hasattr(model.module if hasattr(model, "module") else model, "hf")


def lm_shape(source: str, context: int) -> Any:
    """The :class:`contract.train_fit.LmShape` of the model at ``source`` (its ``config.json``
    only), for the memory estimate of ``parallelism: auto``."""
    from transformers import AutoConfig

    from contract.train_fit import LmShape

    c = AutoConfig.from_pretrained(local_folder(source))
    d = int(c.hidden_size)
    mlp = int(getattr(c, "intermediate_size", None) or 4 * d)
    return LmShape(d, int(c.num_hidden_layers), context, max(1, round(mlp / d)), int(c.vocab_size))


def save_checkpoint(
    directory: Any,
    *,
    model: Any,
    step: int,
    optimizer: Any,
    scheduler: Any = None,
    extra: dict[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    optimizer_state: Any = None,
) -> Path:
    """A fine-tuning checkpoint (module docstring): ``hf/`` (``save_pretrained`` and the
    tokenizer) and ``optimizer.pt`` in one atomic write with the sha256 manifest; ``state`` /
    ``optimizer_state``: the full (gathered) state dicts of a sharded model."""
    import io

    import torch

    from contract.checkpoint import HF_SUBDIR
    from workloads.checkpoint import write_checkpoint

    m = model.module if hasattr(model, "module") else model
    files = hf_checkpoint_files(m, state, f"{HF_SUBDIR}/")
    saved: dict[str, Any] = {
        "optimizer": optimizer_state if optimizer_state is not None else optimizer.state_dict()
    }
    if scheduler is not None:
        saved["scheduler"] = scheduler.state_dict()
    buf = io.BytesIO()
    torch.save(saved, buf)
    files[OPTIMIZER] = buf.getvalue()
    meta = {"step": int(step), "framework": FRAMEWORK, "init_model": m.source, **(extra or {})}
    return write_checkpoint(directory, files, meta)


def load_checkpoint(path: Any, source: str) -> tuple[Any, dict[str, Any], Any]:
    """``(model, metadata, optimizer state)`` of a fine-tuning checkpoint, verified; the model
    keeps ``source`` (the run's ``init_model``) for its tokenizer.

    Raises:
        workloads.checkpoint.CheckpointError: it does not verify, or a byte-level run wrote it.
    """
    import torch

    from contract.checkpoint import HF_SUBDIR
    from workloads.checkpoint import CheckpointError, verify_checkpoint

    meta = verify_checkpoint(path)
    if meta.get("framework") != FRAMEWORK:
        raise CheckpointError(
            f"checkpoint {path} was written by a byte-level run (framework "
            f"{meta.get('framework')}), not by a fine-tuning one; use a new run name"
        )
    model = load_model(str(Path(path) / HF_SUBDIR))
    model.source = source
    opt = Path(path) / OPTIMIZER
    state = torch.load(opt, map_location="cpu", weights_only=True) if opt.exists() else None
    return model, meta, state


def source_of(dataset_manifest: dict[str, Any] | None) -> str | None:
    """The tokenizer a dataset was prepared with (its manifest's ``tokenizer``), None for the
    byte-level one."""
    return (dataset_manifest or {}).get("tokenizer")
