"""The byte-level decoder-only transformer of :mod:`workloads.model_torch`, in Keras 3 on the
TensorFlow backend, and its data-parallel step under ``tf.distribute``.

Same network, config keys, defaults and initialisation rule as the PyTorch and JAX models
(:mod:`workloads.lm_config`): pre-LayerNorm blocks (epsilon 1e-5), fused QKV projection, causal
softmax attention (``keras.ops.dot_product_attention``), exact (erf) GELU MLP of width
``mlp_ratio * d_model``, learned positions, tied input/output embeddings, N(0, 0.02) weights with
the residual projections scaled by ``1/sqrt(2 * n_layers)``. Float32 throughout.

Shapes: tokens are int32 byte values in [0, 256). ``TfGPT(idx[B, T]) -> logits[B, T, 256]``;
:func:`loss_fn` is the mean next-byte cross-entropy in nats/byte over ``tokens[B, T+1]``.

Optimiser (as ``model_torch.make_optimizer`` / ``model_jax.make_optimizer``): AdamW(b1=0.9,
b2=0.95, eps=1e-8, weight decay 0.01 on every weight) on linear warm-up then cosine decay to
10% of ``lr`` over ``steps``; the gradient is averaged over all workers, then clipped to global
norm 1.0 (torch clips the DDP-averaged gradient too).

Checkpoints (:mod:`workloads.checkpoint` directory + sha256 manifest, ``framework:
"tensorflow"``): ``params.npz`` holds the weights under the JAX model's names and layouts
(``tok``, ``pos``, ``blocks/<i>/qkv/w`` as ``[in, out]``, ``ln1/scale`` ...), so
:func:`workloads.model_torch.load_checkpoint` (hence :mod:`workloads.evaluate`) scores it with
the same code as a JAX one, without TensorFlow; ``opt_state.npz`` holds the optimiser's
variables by position (``0000``, ``0001``, ...: iteration counter, then Adam moments) for
resuming.

Keras 3 with the TensorFlow backend under a ``tf.distribute`` strategy:
https://keras.io/guides/distributed_training_with_tensorflow/ ; custom loops with
``strategy.run``: https://www.tensorflow.org/tutorials/distribute/custom_training .
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np
import tensorflow as tf

from workloads.checkpoint import CheckpointError, verify_checkpoint, write_checkpoint
from workloads.lm_config import ModelConfig

VOCAB = 256
PARAMS = "params.npz"
OPT_STATE = "opt_state.npz"
FRAMEWORK = "tensorflow"


def _normal(std: float, seed: int) -> keras.initializers.Initializer:
    return keras.initializers.RandomNormal(mean=0.0, stddev=std, seed=seed)


class Block(keras.layers.Layer):
    """Pre-LN transformer block: x + attn(ln(x)); x + mlp(ln(x))."""

    def __init__(self, cfg: ModelConfig, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        d, h = cfg.d_model, cfg.mlp_ratio * cfg.d_model
        resid = 0.02 / math.sqrt(2 * cfg.n_layers)
        self.n_heads = cfg.n_heads
        self.ln1 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln1")
        self.qkv = keras.layers.Dense(3 * d, kernel_initializer=_normal(0.02, seed), name="qkv")
        self.proj = keras.layers.Dense(d, kernel_initializer=_normal(resid, seed + 1), name="proj")
        self.ln2 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln2")
        self.mlp1 = keras.layers.Dense(h, kernel_initializer=_normal(0.02, seed + 2), name="mlp1")
        self.mlp2 = keras.layers.Dense(d, kernel_initializer=_normal(resid, seed + 3), name="mlp2")

    def call(self, x: Any) -> Any:
        ops = keras.ops
        b, t, c = ops.shape(x)[0], ops.shape(x)[1], x.shape[-1]
        q, k, v = ops.split(self.qkv(self.ln1(x)), 3, axis=-1)
        q, k, v = (ops.reshape(z, (b, t, self.n_heads, c // self.n_heads)) for z in (q, k, v))
        y = ops.dot_product_attention(q, k, v, is_causal=True)  # [B, T, H, D]
        x = x + self.proj(ops.reshape(y, (b, t, c)))
        return x + self.mlp2(keras.activations.gelu(self.mlp1(self.ln2(x)), approximate=False))

    def named_weights(self, prefix: str) -> dict[str, Any]:
        """``{jax-style name: variable}`` of this block (``<prefix>/qkv/w`` ...)."""
        out = {}
        for name in ("ln1", "ln2"):
            layer = getattr(self, name)
            out[f"{prefix}/{name}/scale"], out[f"{prefix}/{name}/bias"] = layer.gamma, layer.beta
        for name in ("qkv", "proj", "mlp1", "mlp2"):
            layer = getattr(self, name)
            out[f"{prefix}/{name}/w"], out[f"{prefix}/{name}/b"] = layer.kernel, layer.bias
        return out


class TfGPT(keras.Model):
    """Decoder-only LM over bytes. ``call(idx[B, T]) -> logits[B, T, 256]``, T <= context.

    Raises:
        ValueError: ``d_model`` not divisible by ``n_heads``.
    """

    def __init__(self, cfg: ModelConfig, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model={cfg.d_model} not divisible by n_heads={cfg.n_heads}")
        self.cfg = cfg
        init = _normal(0.02, seed)
        self.tok = keras.layers.Embedding(VOCAB, cfg.d_model, embeddings_initializer=init)
        self.pos = keras.layers.Embedding(
            cfg.context_length, cfg.d_model, embeddings_initializer=_normal(0.02, seed + 1)
        )
        self.blocks = [Block(cfg, seed + 10 * (i + 1), name=f"b{i}") for i in range(cfg.n_layers)]
        self.ln_f = keras.layers.LayerNormalization(epsilon=1e-5, name="ln_f")
        self(keras.ops.zeros((1, 1), dtype="int32"))  # build every weight now

    def call(self, idx: Any) -> Any:
        t = keras.ops.shape(idx)[1]
        x = self.tok(idx) + self.pos(keras.ops.arange(t))[None]
        for blk in self.blocks:
            x = blk(x)
        return keras.ops.matmul(self.ln_f(x), keras.ops.transpose(self.tok.embeddings))

    def named_weights(self) -> dict[str, Any]:
        """``{name: variable}`` under the JAX model's names (``tok``, ``blocks/0/qkv/w`` ...)."""
        out = {"tok": self.tok.embeddings, "pos": self.pos.embeddings}
        for i, blk in enumerate(self.blocks):
            out.update(blk.named_weights(f"blocks/{i}"))
        out["ln_f/scale"], out["ln_f/bias"] = self.ln_f.gamma, self.ln_f.beta
        return out


def loss_fn(model: TfGPT, tokens: Any) -> Any:
    """Mean next-byte cross-entropy (nats/byte, float32 scalar) over ``tokens[B, T+1]``."""
    logits = model(tokens[:, :-1])
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tokens[:, 1:], logits=logits)
    return tf.reduce_mean(ce)


class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
    """``lr * (s+1)/warmup`` for ``s < warmup``, then cosine from ``lr`` to ``0.1 * lr`` at
    ``steps`` (the rule of ``model_torch.make_optimizer``)."""

    def __init__(self, lr: float, steps: int, warmup: int) -> None:
        self.lr, self.steps, self.warmup = float(lr), int(steps), int(warmup)

    def __call__(self, step: Any) -> Any:
        s = tf.cast(step, tf.float32)
        warm = (s + 1.0) / max(1, self.warmup)
        frac = tf.clip_by_value((s - self.warmup) / max(1, self.steps - self.warmup), 0.0, 1.0)
        cos = 0.1 + 0.9 * 0.5 * (1.0 + tf.cos(math.pi * frac))
        return self.lr * tf.where(s < self.warmup, warm, cos)

    def get_config(self) -> dict[str, Any]:
        return {"lr": self.lr, "steps": self.steps, "warmup": self.warmup}


def make_optimizer(lr: float, steps: int, warmup: int = 50) -> keras.optimizers.Optimizer:
    """AdamW(b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.01) on :class:`WarmupCosine`."""
    return keras.optimizers.AdamW(
        learning_rate=WarmupCosine(lr, steps, warmup),
        beta_1=0.9,
        beta_2=0.95,
        epsilon=1e-8,
        weight_decay=0.01,
    )


def make_train_step(
    model: TfGPT,
    optimizer: keras.optimizers.Optimizer,
    strategy: tf.distribute.Strategy,
    grad_clip: float = 1.0,
):
    """``step(tokens[B, T+1] int32) -> global mean loss`` (a ``tf.function``).

    Each replica (one per worker) computes the gradient of its local loss divided by the number
    of replicas; one ``all_reduce(SUM)`` (over the strategy's collectives: ring/gRPC on CPU,
    NCCL on GPU) turns it and the loss into global means; the mean gradient is clipped to
    global norm ``grad_clip`` and applied. Keras' TensorFlow optimiser sums gradients over
    replicas again inside ``apply_gradients``
    (``keras/src/backend/tensorflow/optimizer.py`` ``_all_reduce_sum_gradients``), so each
    replica hands it the clipped mean divided by the number of replicas.
    """
    n = float(strategy.num_replicas_in_sync)

    def replica_step(tokens: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(model, tokens)
            scaled = loss / n
        variables = model.trainable_variables
        # Dense gradients (the embeddings' are IndexedSlices) so one all-reduce carries all.
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(scaled, variables)]
        ctx = tf.distribute.get_replica_context()
        reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [scaled, *grads])
        mean_loss, mean_grads = reduced[0], reduced[1:]
        if grad_clip:
            mean_grads, _ = tf.clip_by_global_norm(mean_grads, grad_clip)
        optimizer.apply_gradients(zip([g / n for g in mean_grads], variables, strict=True))
        return mean_loss

    @tf.function
    def step(tokens: Any) -> Any:
        per_replica = strategy.run(replica_step, args=(tokens,))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)

    return step


def arrow_to_tokens(batch: Any) -> np.ndarray:
    """pyarrow table/record batch with column ``tokens`` (fixed_size_list<uint8>) -> int32
    ``[B, L+1]``."""
    col = batch.column("tokens")
    if hasattr(col, "combine_chunks"):
        col = col.combine_chunks()
    width = col.type.list_size
    arr = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.uint8)
    return arr.reshape(-1, width).astype(np.int32)


# ---------------------------------------------------------------------------------------------
# Checkpoints


def _host(v: Any) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(v.value if hasattr(v, "value") else v))


def weights_to_host(model: TfGPT) -> dict[str, np.ndarray]:
    """``{jax-style name: float32 array}`` of every weight (this worker's copy)."""
    return {k: _host(v) for k, v in model.named_weights().items()}


def weights_digest(model: TfGPT) -> str:
    """sha256 over this worker's copy of every weight (equal on all workers iff in sync)."""
    import hashlib

    h = hashlib.sha256()
    for name, arr in sorted(weights_to_host(model).items()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def save_checkpoint(
    target_dir: str | os.PathLike[str],
    model: TfGPT,
    step: int,
    optimizer: keras.optimizers.Optimizer | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``params.npz`` (+ ``opt_state.npz``) atomically with a sha256 manifest."""
    files = {PARAMS: _npz_bytes(weights_to_host(model))}
    if optimizer is not None:
        files[OPT_STATE] = _npz_bytes(
            {f"{i:04d}": _host(v) for i, v in enumerate(optimizer.variables)}
        )
    metadata = {"step": int(step), "framework": FRAMEWORK, "model": asdict(model.cfg)}
    return write_checkpoint(target_dir, files, {**metadata, **(extra or {})})


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: unreadable npz: {e}") from None


def _assign(target: Mapping[str, Any], arrays: Mapping[str, np.ndarray], source: Path) -> None:
    for name, var in target.items():
        if name not in arrays:
            raise CheckpointError(f"{source}: array {name!r} missing")
        arr, want = arrays[name], tuple(var.shape)
        if tuple(arr.shape) != want:
            raise CheckpointError(
                f"{source}: array {name!r} has shape {list(arr.shape)}, expected {list(want)}"
            )
        var.assign(arr.astype(np.dtype(var.dtype)))


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Verify a TensorFlow checkpoint and return its metadata.

    Raises:
        CheckpointError: the manifest does not verify, or it is not a TensorFlow one.
    """
    metadata = verify_checkpoint(path)
    if metadata.get("framework") != FRAMEWORK:
        raise CheckpointError(
            f"{path}: framework {metadata.get('framework')!r}, expected {FRAMEWORK!r}"
        )
    return metadata


def restore_into(
    path: str | os.PathLike[str],
    model: TfGPT,
    optimizer: keras.optimizers.Optimizer | None = None,
) -> dict[str, Any]:
    """Verify, then assign the checkpoint's weights (and optimiser variables, when given and
    present) to ``model`` / ``optimizer`` (built, e.g. inside the strategy's scope); return the
    metadata.

    Raises:
        CheckpointError: the manifest does not verify, it is not a TensorFlow checkpoint, or an
            array is missing / has the wrong shape (names the file and array).
    """
    root = Path(path)
    metadata = read_checkpoint(root)
    _assign(model.named_weights(), _load_npz(root / PARAMS), root / PARAMS)
    if optimizer is not None and (root / OPT_STATE).exists():
        target = {f"{i:04d}": v for i, v in enumerate(optimizer.variables)}
        _assign(target, _load_npz(root / OPT_STATE), root / OPT_STATE)
    return metadata
