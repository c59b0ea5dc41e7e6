"""A small byte-level decoder-only transformer LM in PyTorch, and its training step.

Shapes: tokens are int64 byte values in [0, 256). ``GPT.forward(x[B, T]) -> logits[B, T, 256]``.
Pre-LayerNorm blocks, causal self-attention through
``torch.nn.functional.scaled_dot_product_attention``, learned positions, tied input/output
embeddings. ``train_step`` is the one step function used by Ray Train and by the bare baseline
in ``bench/train_overhead.py``.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from workloads.checkpoint import CheckpointError, verify_checkpoint, write_checkpoint
from workloads.common import resolve_ns_dtype
from workloads.lm_config import ModelConfig

VOCAB = 256
WEIGHTS = "model.pt"
OPTIMIZER = "optimizer.pt"


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)); x + mlp(ln(x))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model),
        )
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Decoder-only LM over bytes. ``forward(idx[B, T]) -> logits[B, T, 256]``, T <= context."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model={cfg.d_model} not divisible by n_heads={cfg.n_heads}")
        self.cfg = cfg
        self.tok = nn.Embedding(VOCAB, cfg.d_model)
        self.pos = nn.Embedding(cfg.context_length, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        # activation checkpointing: each block's activations recomputed in the backward pass
        # (torch.utils.checkpoint, non-reentrant: works under DDP and FSDP2); not a parameter, so
        # the state_dict and checkpoints are the same either way
        self.checkpointing = False
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        if t > self.cfg.context_length:
            raise ValueError(f"sequence length {t} > context_length {self.cfg.context_length}")
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            if self.checkpointing and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.ln_f(x) @ self.tok.weight.T  # tied embeddings


def loss_fn(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-byte cross-entropy in nats/byte over ``tokens[B, T+1]`` (x=[:, :-1], y=[:, 1:])."""
    logits = model(tokens[:, :-1])  # [B, T, V]: V = 256, or a fine-tuned model's vocabulary
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def autocast_for(device: torch.device, precision: str | None = None):
    """The compute-dtype context of ``precision`` (``"bf16"``: ``torch.autocast`` to bfloat16 on
    ``device``'s type, CPU or CUDA; ``"fp32"``: a no-op context). ``None``: bf16 on CUDA, fp32
    on CPU (callers that did not decide; runs decide with :func:`workloads.precision.decide`).
    Autocast keeps the parameters float32 and runs ``cross_entropy`` in float32
    (https://docs.pytorch.org/docs/stable/amp.html#cpu-ops-that-can-autocast-to-float32)."""
    if precision is None:
        precision = "bf16" if device.type == "cuda" else "fp32"
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    scheduler: Any | None = None,
    grad_clip: float = 1.0,
    precision: str | None = None,
) -> float:
    """One optimisation step on ``tokens[B, T+1]`` (int64, on the model's device), the forward
    pass in ``precision`` (:func:`autocast_for`; the loss in float32).

    Returns the loss (nats/byte) as a Python float.
    """
    model.train()
    with autocast_for(tokens.device, precision):
        loss = loss_fn(model, tokens)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return float(loss.detach())


def arrow_to_tokens(batch: Any, device: torch.device | str = "cpu") -> torch.Tensor:
    """Convert a pyarrow table/record batch with column ``tokens`` (fixed_size_list<uint8>, or
    <int32> token ids of a Hugging Face tokenizer) into an int64 tensor ``[B, L+1]``."""
    col = batch.column("tokens")
    if hasattr(col, "combine_chunks"):
        col = col.combine_chunks()
    width = col.type.list_size
    arr = np.asarray(col.flatten().to_numpy(zero_copy_only=False))
    return torch.from_numpy(arr.reshape(-1, width).astype(np.int64)).to(device)


def muon_matrices(model: nn.Module) -> list[str]:
    """Names of the parameters Muon updates: the 2-D weight matrices inside the transformer
    blocks (attention ``qkv`` and ``proj``, the MLP's two layers). The tied token embedding, the
    position embedding, LayerNorm and biases are AdamW's (Muon is defined for hidden-layer
    matrices: https://kellerjordan.github.io/posts/muon/ ; torch.optim.Muon accepts 2-D
    parameters only)."""
    blocks = getattr(unwrap_model(model), "blocks", None)  # a fine-tuned model's decoder layers
    inside = {id(p) for p in blocks.parameters()} if blocks is not None else set()
    return [n for n, p in model.named_parameters() if p.ndim == 2 and id(p) in inside]


NS_TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def newton_schulz(
    grad: torch.Tensor,
    dtype: torch.dtype = torch.bfloat16,
    coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
    steps: int = 5,
    eps: float = 1e-7,
) -> torch.Tensor:
    """``torch.optim._muon._zeropower_via_newtonschulz`` (torch 2.13) with the iterations in
    ``dtype`` instead of always bfloat16: ``grad[A, B]`` divided by max(its Frobenius norm,
    ``eps``), then ``steps`` quintic iterations ``X <- a X + (b G + c G^2) X`` with ``G = X X^T``
    on the wide orientation; returns ``[A, B]`` in ``dtype``. With ``dtype=torch.bfloat16`` it
    is torch's function, operation for operation (``tests/workloads/test_model_torch.py``)."""
    a, b, c = coefficients
    x = grad.to(dtype)
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(steps):
        gram = x @ x.T
        update = torch.addmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.addmm(x, update, x, beta=a)
    return x.T if tall else x


class DtypeMuon(torch.optim.Muon):
    """``torch.optim.Muon`` whose Newton-Schulz iterations run in ``ns_dtype`` (torch's always
    cast to bfloat16, which a CPU without AVX-512 BF16 emulates slowly:
    :func:`workloads.common.resolve_ns_dtype`). Same hyper-parameters, state
    (``momentum_buffer``) and update as torch's ``_single_tensor_muon`` (torch 2.13,
    https://github.com/pytorch/pytorch/blob/main/torch/optim/_muon.py): ``buf.lerp_(g, 1 -
    momentum)``, Nesterov ``g.lerp(buf, momentum)``, :func:`newton_schulz`, decoupled weight
    decay ``p *= 1 - lr * wd``, then ``p -= lr * sqrt(max(1, A / B)) * update``."""

    def __init__(self, params: Any, ns_dtype: str = "bfloat16", **kwargs: Any) -> None:
        if ns_dtype not in NS_TORCH_DTYPES:
            raise ValueError(f"ns_dtype {ns_dtype!r} is not one of {', '.join(NS_TORCH_DTYPES)}")
        super().__init__(params, **kwargs)
        self.ns_dtype = ns_dtype

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        from torch.optim._muon import _adjust_lr

        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        dtype = NS_TORCH_DTYPES[self.ns_dtype]
        for group in self.param_groups:
            params: list[torch.Tensor] = []
            grads: list[torch.Tensor] = []
            bufs: list[torch.Tensor] = []
            self._init_group(group, params, grads, bufs)
            lr, wd, momentum = float(group["lr"]), group["weight_decay"], group["momentum"]
            for param, grad, buf in zip(params, grads, bufs, strict=True):
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = newton_schulz(
                    update, dtype, group["ns_coefficients"], group["ns_steps"], group["eps"]
                )
                param.mul_(1 - lr * wd)
                param.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], param.shape))
        return loss


class MuonAdamW(torch.optim.Optimizer):
    """``torch.optim.Muon`` for :func:`muon_matrices`, ``torch.optim.AdamW`` for the rest, as one
    optimizer: ``param_groups`` are the two optimizers' groups (Muon's first, each tagged
    ``"muon": True/False``), so one LR scheduler drives both, each from its own peak lr;
    ``state_dict`` holds both states under ``"muon"`` and ``"adamw"``.

    Muon: momentum 0.95 with Nesterov, 5 Newton-Schulz iterations (coefficients 3.4445,
    -4.775, 2.0315), lr scaled per matrix by sqrt(max(1, fan_out / fan_in)) (torch's default
    "original" ``adjust_lr_fn``), decoupled weight decay ``weight_decay``
    (https://docs.pytorch.org/docs/stable/generated/torch.optim.Muon.html); Newton-Schulz in
    ``ns_dtype`` (:class:`DtypeMuon`; ``"bfloat16"`` is torch's own)."""

    def __init__(
        self,
        model: nn.Module,
        lr: float,
        muon_lr: float,
        weight_decay: float = 0.01,
        ns_dtype: str = "bfloat16",
    ) -> None:
        names = set(muon_matrices(model))
        matrices = [p for n, p in model.named_parameters() if n in names]
        rest = [p for n, p in model.named_parameters() if n not in names]
        self.ns_dtype = ns_dtype
        self.muon = DtypeMuon(matrices, ns_dtype, lr=muon_lr, weight_decay=weight_decay)
        self.adamw = torch.optim.AdamW(rest, lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)
        super().__init__([{"params": matrices + rest}], {})
        self._share_groups()

    def _share_groups(self) -> None:
        """Expose the two optimizers' own groups (tagged ``muon``) as this one's, so a scheduler
        that sets ``group["lr"]`` sets theirs; again after a load replaced their group dicts."""
        for group in self.muon.param_groups:
            group["muon"] = True
        for group in self.adamw.param_groups:
            group["muon"] = False
        self.param_groups = self.muon.param_groups + self.adamw.param_groups

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        self.muon.step()
        self.adamw.step()

    def state_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"muon": self.muon.state_dict(), "adamw": self.adamw.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:  # type: ignore[override]
        """``state_dict``: what :meth:`state_dict` returned (see :func:`optimizer_kind`)."""
        self.muon.load_state_dict(state_dict["muon"])
        self.adamw.load_state_dict(state_dict["adamw"])
        self._share_groups()


def optimizer_kind(state_dict: Mapping[str, Any]) -> str:
    """``"muon"`` for a :class:`MuonAdamW` state dict, else ``"adamw"``."""
    return "muon" if set(state_dict) == {"muon", "adamw"} else "adamw"


def make_optimizer(
    model: nn.Module,
    lr: float,
    steps: int,
    warmup: int = 50,
    optimizer: str = "muon",
    muon_lr: float = 0.03,
    ns_dtype: str = "auto",
):
    """The optimizer and its LR scheduler: linear warm-up over ``warmup`` steps, then cosine
    decay to 10% at ``steps``, applied to each parameter group's own peak lr.

    ``optimizer``: ``"muon"`` (:class:`MuonAdamW`: Muon at ``muon_lr`` for the blocks'
    matrices, AdamW at ``lr`` for the rest) or ``"adamw"`` (AdamW at ``lr``, betas (0.9, 0.95),
    weight decay 0.01, for every parameter). ``ns_dtype``: Muon's Newton-Schulz dtype
    (``auto``: :func:`workloads.common.resolve_ns_dtype` for the model's device).

    Raises:
        ValueError: another ``optimizer`` name, or an unknown ``ns_dtype``.
    """
    if optimizer == "muon":
        device = next(unwrap_model(model).parameters()).device.type
        resolved = resolve_ns_dtype(ns_dtype, device)
        opt: torch.optim.Optimizer = MuonAdamW(model, lr, muon_lr, ns_dtype=resolved)
    elif optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    else:
        raise ValueError(f"optimizer {optimizer!r} is not one of 'muon', 'adamw'")

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        frac = min(1.0, (s - warmup) / max(1, steps - warmup))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def unwrap_model(model: nn.Module) -> nn.Module:
    return model.module if hasattr(model, "module") else model


def save_checkpoint(
    target_dir: str | os.PathLike[str],
    model: nn.Module,
    step: int,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    extra: Mapping[str, Any] | None = None,
    hf: bool = False,
    state: Mapping[str, torch.Tensor] | None = None,
    optimizer_state: Mapping[str, Any] | None = None,
) -> Path:
    """Write weights (+ optimizer/scheduler state) in the :mod:`workloads.checkpoint` format;
    with ``hf`` also the Hugging Face model folder ``hf/`` (:func:`workloads.hf_export.hf_files`)
    in the same atomic write and manifest. ``state`` / ``optimizer_state``: the full (gathered)
    state dicts to write instead of ``model.state_dict()`` / ``optimizer.state_dict()`` (an FSDP
    model's own are sharded: :func:`workloads.fsdp.full_state`), so the files are the same
    whichever way the model was trained."""
    m = unwrap_model(model)
    weights = dict(state) if state is not None else m.state_dict()
    files: dict[str, bytes] = {}
    if hf:
        from workloads.hf_export import hf_files

        files.update(hf_files(jax_arrays(m, weights), m.cfg))
    buf = io.BytesIO()
    torch.save(weights, buf)
    files[WEIGHTS] = buf.getvalue()
    if optimizer is not None or optimizer_state is not None:
        buf = io.BytesIO()
        opt_sd = optimizer_state if optimizer_state is not None else optimizer.state_dict()  # type: ignore[union-attr]
        saved: dict[str, Any] = {"optimizer": opt_sd}
        if scheduler is not None:
            saved["scheduler"] = scheduler.state_dict()
        torch.save(saved, buf)
        files[OPTIMIZER] = buf.getvalue()
    metadata = {"step": int(step), "framework": "torch", "model": asdict(m.cfg), **(extra or {})}
    return write_checkpoint(target_dir, files, metadata)


JAX_PARAMS = "params.npz"  # workloads/model_jax.py's and workloads/model_tf.py's weights file
# Checkpoint frameworks whose weights are ``params.npz`` under the JAX model's names and layouts.
NPZ_FRAMEWORKS = ("jax", "tensorflow")


# The JAX model's per-block parameter -> this model's module (workloads/model_jax.py names).
JAX_TO_TORCH_BLOCK = {
    "ln1": "ln1",
    "qkv": "qkv",
    "proj": "proj",
    "ln2": "ln2",
    "mlp1": "mlp.0",
    "mlp2": "mlp.2",
}


def jax_arrays(
    model: nn.Module, state: Mapping[str, torch.Tensor] | None = None
) -> dict[str, np.ndarray]:
    """This model's parameters (or ``state``, a full state dict of it) as float32 NumPy arrays
    under the JAX model's names and layouts (``tok``, ``blocks/<i>/qkv/w`` ``[in, out]`` ...):
    the inverse of :func:`state_dict_from_jax` (``nn.Linear`` weights ``[out, in]`` are
    transposed)."""
    m = unwrap_model(model)
    src = m.state_dict() if state is None else state
    sd = {k: v.detach().to("cpu", torch.float32).numpy() for k, v in src.items()}
    out = {"tok": sd["tok.weight"], "pos": sd["pos.weight"]}
    out["ln_f/scale"], out["ln_f/bias"] = sd["ln_f.weight"], sd["ln_f.bias"]
    for i in range(m.cfg.n_layers):
        for jax_name, torch_name in JAX_TO_TORCH_BLOCK.items():
            pre, src = f"blocks/{i}/{jax_name}", f"blocks.{i}.{torch_name}"
            if jax_name.startswith("ln"):
                out[f"{pre}/scale"], out[f"{pre}/bias"] = sd[f"{src}.weight"], sd[f"{src}.bias"]
            else:
                out[f"{pre}/w"] = np.ascontiguousarray(sd[f"{src}.weight"].T)
                out[f"{pre}/b"] = sd[f"{src}.bias"]
    return out


def state_dict_from_jax(
    arrays: Mapping[str, np.ndarray], cfg: ModelConfig
) -> dict[str, torch.Tensor]:
    """Map the JAX model's flattened parameters (``workloads/model_jax.py``: ``tok``, ``pos``,
    ``ln_f/scale``, ``blocks/<i>/qkv/w`` ...; dense kernels stored ``[in, out]``) to this model's
    ``state_dict`` (``nn.Linear`` weights ``[out, in]``). The two models are the same network.

    Raises:
        KeyError: a parameter is missing.
    """

    def t(name: str, transpose: bool = False) -> torch.Tensor:
        a = np.asarray(arrays[name], dtype=np.float32)
        return torch.from_numpy(np.ascontiguousarray(a.T if transpose else a))

    sd = {"tok.weight": t("tok"), "pos.weight": t("pos")}
    sd["ln_f.weight"], sd["ln_f.bias"] = t("ln_f/scale"), t("ln_f/bias")
    for i in range(cfg.n_layers):
        for jax_name, torch_name in JAX_TO_TORCH_BLOCK.items():
            pre, tgt = f"blocks/{i}/{jax_name}", f"blocks.{i}.{torch_name}"
            if jax_name.startswith("ln"):
                sd[f"{tgt}.weight"], sd[f"{tgt}.bias"] = t(f"{pre}/scale"), t(f"{pre}/bias")
            else:
                sd[f"{tgt}.weight"], sd[f"{tgt}.bias"] = t(f"{pre}/w", True), t(f"{pre}/b")
    return sd


def load_checkpoint(
    path: str | os.PathLike[str], device: torch.device | str = "cpu"
) -> tuple[GPT, dict[str, Any], dict[str, Any] | None]:
    """Verify then load a checkpoint of either framework: ``(model, metadata,
    optimizer_state_or_None)``. A JAX or TensorFlow checkpoint (``framework: jax`` /
    ``tensorflow``, ``params.npz`` in the JAX layout) is loaded into this model through
    :func:`state_dict_from_jax` (no optimizer state).

    Raises:
        workloads.checkpoint.CheckpointError: the manifest does not verify, or the weights do not
            fit the model.
    """
    metadata = verify_checkpoint(path)
    if "model" not in metadata:  # a fine-tuning run's (workloads/hf_model.py): hf/ is its model
        raise CheckpointError(
            f"checkpoint {path} holds a Hugging Face model (framework "
            f"{metadata.get('framework')}): load its hf/ with transformers"
        )
    model = GPT(ModelConfig(**metadata["model"]))
    if metadata.get("sharded"):  # every rank's shard (workloads/sharded_checkpoint.py)
        from workloads.sharded_checkpoint import load_model_state

        load_model_state(path, model)
        return model.to(device), metadata, None
    if metadata.get("framework") in NPZ_FRAMEWORKS:
        try:
            with np.load(Path(path) / JAX_PARAMS, allow_pickle=False) as z:
                state = state_dict_from_jax({k: z[k] for k in z.files}, model.cfg)
            model.load_state_dict(state)
        except (KeyError, OSError, ValueError, RuntimeError) as e:
            raise CheckpointError(
                f"{Path(path) / JAX_PARAMS}: not this model's weights: {e}"
            ) from None
        return model.to(device), metadata, None
    state = torch.load(Path(path) / WEIGHTS, map_location=device, weights_only=True)
    model.load_state_dict(state)
    opt_path = Path(path) / OPTIMIZER
    opt_state = (
        torch.load(opt_path, map_location=device, weights_only=True) if opt_path.exists() else None
    )
    return model.to(device), metadata, opt_state


# ------------------------------------------------------- incremental decoding (serving only)
# The training forward above (GPT.forward, Block.forward) is untouched; forward_cached is the same
# network evaluated one chunk at a time against cached keys/values, tested equal to it in
# tests/workloads/test_model_torch_decode.py.


class KVCache:
    """Keys and values of every block for ``rows`` sequences (evaluate's sample):
    ``k[layer]``, ``v[layer]``: ``[rows, n_heads, context_length, d_model // n_heads]``, in
    the model's parameter dtype and device. Position ``p`` of row
    ``b`` holds that token's key/value once :func:`forward_cached` has run it; later positions
    hold stale values that the attention mask never reads."""

    def __init__(self, model: GPT, rows: int) -> None:
        cfg = model.cfg
        w = model.tok.weight
        shape = (rows, cfg.n_heads, cfg.context_length, cfg.d_model // cfg.n_heads)
        self.k = [torch.zeros(shape, dtype=w.dtype, device=w.device) for _ in model.blocks]
        self.v = [torch.zeros(shape, dtype=w.dtype, device=w.device) for _ in model.blocks]
        self.rows = rows


@torch.no_grad()
def forward_cached(
    model: GPT, idx: torch.Tensor, cache: KVCache, start: torch.Tensor
) -> torch.Tensor:
    """Logits ``[B, T, 256]`` of ``idx[B, T]`` whose first token sits at position ``start[b]``
    of row ``b``, attending to the row's cached positions ``< start[b]`` and causally within the
    chunk; writes the chunk's keys/values into ``cache`` rows ``0..B-1``. A prefill is
    ``start = 0`` (rows right-padded to one length are fine: a pad's stale key/value is
    overwritten before any query can see it), a decode step is ``T = 1``,
    ``start = tokens so far``. Equal to ``model(seq)[:, start:start+T]`` up to float rounding.

    Raises:
        ValueError: a position reaches ``context_length`` (learned positions end there; the
            caller falls back to the full forward over the last ``context_length`` tokens).
    """
    b, t = idx.shape
    ctx = model.cfg.context_length
    pos = start.to(idx.device).view(b, 1) + torch.arange(t, device=idx.device)  # [B, T]
    end = int(pos.max()) + 1
    if end > ctx:
        raise ValueError(f"position {end - 1} >= context_length {ctx}")
    x = model.tok(idx) + model.pos(pos)
    mask = (torch.arange(end, device=idx.device).view(1, 1, end) <= pos.view(b, t, 1))[:, None]
    rows = torch.arange(b, device=idx.device).view(b, 1).expand(b, t)
    for layer, blk in enumerate(model.blocks):
        c = x.shape[-1]
        hd = c // blk.n_heads
        q, k, v = blk.qkv(blk.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, blk.n_heads, hd) for z in (q, k, v))
        kc, vc = cache.k[layer], cache.v[layer]
        kc[rows, :, pos] = k.to(kc.dtype)  # advanced indices first: [B, T, H, hd]
        vc[rows, :, pos] = v.to(vc.dtype)  # (k, v are bf16 under bf16 autocast)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            kc[:b, :, :end].to(q.dtype),
            vc[:b, :, :end].to(q.dtype),
            attn_mask=mask,
        )
        x = x + blk.proj(y.transpose(1, 2).reshape(b, t, c))
        x = x + blk.mlp(blk.ln2(x))
    return model.ln_f(x) @ model.tok.weight.T
