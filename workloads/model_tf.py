"""The byte-level decoder-only transformer of :mod:`workloads.model_torch`, in Keras 3 on the
TensorFlow backend, and its data-parallel step under ``tf.distribute``.

Same network, config keys, defaults and initialisation rule as the PyTorch and JAX models
(:mod:`workloads.lm_config`): pre-LayerNorm blocks (epsilon 1e-5), fused QKV projection, causal
softmax attention (``keras.ops.dot_product_attention``), exact (erf) GELU MLP of width
``mlp_ratio * d_model``, learned positions, tied input/output embeddings, N(0, 0.02) weights with
the residual projections scaled by ``1/sqrt(2 * n_layers)``. Float32 throughout.

Shapes: tokens are int32 byte values in [0, 256). ``TfGPT(idx[B, T]) -> logits[B, T, 256]``;
:func:`loss_fn` is the mean next-byte cross-entropy in nats/byte over ``tokens[B, T+1]``.

Optimiser (as ``model_torch.make_optimizer`` / ``model_jax.make_optimizer``), on linear
warm-up then cosine decay to 10% of the peak over ``steps``: ``adamw``: AdamW(b1=0.9,
b2=0.95, eps=1e-8, weight decay 0.01 on every weight); ``muon``: :class:`TorchMuon`
(``keras.optimizers.Muon`` adjusted to ``torch.optim.Muon``) on the block kernels, that AdamW
on the rest. The gradient is averaged over all workers, then clipped to global norm 1.0
(torch clips the DDP-averaged gradient too).

Checkpoints (:mod:`workloads.checkpoint` directory + sha256 manifest, ``framework:
"tensorflow"``): ``params.npz`` holds the weights under the JAX model's names and layouts
(``tok``, ``pos``, ``blocks/<i>/qkv/w`` as ``[in, out]``, ``ln1/scale`` ...), so
:func:`workloads.model_torch.load_checkpoint` (hence :mod:`workloads.evaluate`) scores it with
the same code as a JAX one, without TensorFlow; ``opt_state.npz`` holds the optimiser's
variables by position (``0000``, ``0001``, ...: iteration counter, then Adam / Muon moments) for
resuming; the metadata names the optimiser kind (``optimizer``: ``muon`` | ``adamw``).

Keras 3 with the TensorFlow backend under a ``tf.distribute`` strategy:
https://keras.io/guides/distributed_training_with_tensorflow/ ; custom loops with
``strategy.run``: https://www.tensorflow.org/tutorials/distribute/custom_training .
"""

from __future__ import annotations

import contextlib
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
        head = keras.ops.cast(self.tok.embeddings, x.dtype)  # bf16 under mixed_bfloat16
        return keras.ops.matmul(self.ln_f(x), keras.ops.transpose(head))

    def named_weights(self) -> dict[str, Any]:
        """``{name: variable}`` under the JAX model's names (``tok``, ``blocks/0/qkv/w`` ...)."""
        out = {"tok": self.tok.embeddings, "pos": self.pos.embeddings}
        for i, blk in enumerate(self.blocks):
            out.update(blk.named_weights(f"blocks/{i}"))
        out["ln_f/scale"], out["ln_f/bias"] = self.ln_f.gamma, self.ln_f.beta
        return out


def loss_fn(model: TfGPT, tokens: Any) -> Any:
    """Mean next-byte cross-entropy (nats/byte, float32 scalar) over ``tokens[B, T+1]``; the
    logits are cast to float32 first (bf16 under mixed precision)."""
    logits = tf.cast(model(tokens[:, :-1]), tf.float32)
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


MUON_NS_COEFFICIENTS = (3.4445, -4.775, 2.0315)


class TorchMuon(keras.optimizers.Muon):
    """``keras.optimizers.Muon`` made to follow ``torch.optim.Muon`` (block matrices) + AdamW
    (everything else), as ``model_torch.make_optimizer`` does with ``optimizer="muon"``.

    Routing (Keras' own rule, ``Muon._should_use_adamw``): a variable that is not 2-D, or whose
    path contains ``embedding`` (``exclude_embeddings=True``), gets the AdamW step; every other
    variable gets the Muon step. In :class:`TfGPT` the 2-D non-embedding variables are exactly
    the block kernels (``qkv``, ``proj``, ``mlp1``, ``mlp2``); the tied token embedding, the
    position embedding, LayerNorm scales/biases and all biases go to AdamW.

    Kept from Keras (same as torch): Nesterov momentum 0.95 (Keras keeps ``m = 0.95 m + g``,
    torch ``b = 0.95 b + 0.05 g``: proportional, so the orthogonalised update is the same), 5
    Newton-Schulz iterations with ``MUON_NS_COEFFICIENTS`` after dividing by the Frobenius norm
    + 1e-7 (torch: by max(norm, 1e-7)), run on the wide orientation of the matrix (so a Keras ``[in, out]`` kernel and a
    torch ``[out, in]`` weight give transposed, equal updates). Keras' AdamW part: beta_1,
    beta_2, epsilon as given, bias correction in the "epsilon hat" form (as
    ``keras.optimizers.AdamW``).

    Changed (``keras/src/optimizers/muon.py``, Keras 3.15.1), minimally:

    * learning rates: Keras has one ``learning_rate`` and gives Adam ``learning_rate *
      adam_lr_ratio``; here ``learning_rate`` is AdamW's schedule and the Muon step uses its
      own schedule ``muon_learning_rate`` (a ratio would divide by ``lr``, which may be 0)
      -- :meth:`update_step`.
    * per-matrix scale: Keras scales by ``0.2 * sqrt(max(n, m))`` (Moonlight, ``rms_rate``);
      torch's default ``adjust_lr_fn="original"`` scales by ``sqrt(max(1, fan_out / fan_in))``
      (torch ``_adjust_lr``: ``A, B = weight.shape`` = ``(out, in)``); a Keras kernel is
      ``[in, out]``, so the ratio is ``shape[1] / shape[0]`` -- :meth:`lr_adjust`.
    * decoupled weight decay ``var -= lr * wd * var`` before the step, with each part's own
      (unscaled) rate, as torch (``param.mul_(1 - lr * weight_decay)``); Keras' Muon decays
      AdamW variables with the Muon rate and outside ``tf.distribute``'s update path; this one
      goes through ``distribution.extended.update`` like ``keras.optimizers.AdamW``'s TensorFlow
      code (``keras/src/backend/tensorflow/optimizer.py``) -- :meth:`_apply_weight_decay`.

    * Newton-Schulz dtype: Keras iterates in the variable's dtype; here in ``ns_dtype``
      (``"float32"`` or ``"bfloat16"``, :func:`workloads.common.resolve_ns_dtype`, cast back
      afterwards), the rule of ``model_torch.DtypeMuon`` and ``model_jax.scale_by_muon_torch``
      -- :meth:`zeropower_via_newtonschulz5`.
    """

    def __init__(
        self,
        learning_rate: Any,
        muon_learning_rate: Any,
        weight_decay: float = 0.01,
        ns_dtype: str = "float32",
        **kwargs: Any,
    ) -> None:
        if ns_dtype not in ("float32", "bfloat16"):
            raise ValueError(f"ns_dtype {ns_dtype!r} is not one of float32, bfloat16")
        super().__init__(
            learning_rate=learning_rate,
            adam_weight_decay=weight_decay,
            weight_decay=weight_decay,
            adam_lr_ratio=1.0,
            rms_rate=None,
            **kwargs,
        )
        self.muon_learning_rate = muon_learning_rate
        self.ns_dtype = ns_dtype

    def muon_rate(self) -> Any:
        """Muon's learning rate now: its schedule at the current iteration, before the
        per-matrix scale (float32 scalar)."""
        rate = self.muon_learning_rate
        rate = rate(self.iterations) if callable(rate) else rate
        return tf.cast(rate, tf.float32)

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        i = self._get_variable_index(variable)
        m, v = self.momentums[i], self.adam_velocities[i]
        if v is not None:
            self._adamw_update_step(gradient, variable, learning_rate, m, v)
        else:
            self._muon_update_step(gradient, variable, self.muon_rate(), m)

    def zeropower_via_newtonschulz5(self, x: Any, steps: int) -> Any:
        """Keras' iterations on ``x`` cast to ``ns_dtype``; the result in ``x``'s dtype."""
        dtype = x.dtype
        out = super().zeropower_via_newtonschulz5(tf.cast(x, self.ns_dtype), steps)
        return tf.cast(out, dtype)

    def lr_adjust(self, x: Any) -> Any:
        fan_in, fan_out = int(x.shape[0]), int(x.shape[1])
        return x * math.sqrt(max(1.0, fan_out / fan_in))

    def _apply_weight_decay(self, variables: Any) -> None:
        decayed = [
            (v.value if isinstance(v, keras.Variable) else v, self._should_use_adamw(v))
            for v in variables
            if self._use_weight_decay(v)
        ]

        def apply(distribution: Any, decayed: Any) -> None:
            adam_rate = tf.cast(self.learning_rate, tf.float32) * self.adam_weight_decay
            muon_rate = self.muon_rate() * self.weight_decay

            def decay(var: Any, rate: Any) -> None:
                var.assign_sub(var * tf.cast(rate, var.dtype))

            for var, adam in decayed:
                rate = adam_rate if adam else muon_rate
                distribution.extended.update(var, decay, args=(rate,), group=False)

        tf.__internal__.distribute.interim.maybe_merge_call(
            apply, self._distribution_strategy, decayed
        )

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        for fixed in ("adam_lr_ratio", "rms_rate", "adam_weight_decay"):  # set by __init__
            config.pop(fixed)
        rate = self.muon_learning_rate
        if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
            rate = keras.optimizers.schedules.serialize(rate)
        config["muon_learning_rate"] = rate
        config["ns_dtype"] = self.ns_dtype
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> TorchMuon:
        config = dict(config)
        if isinstance(config["muon_learning_rate"], dict):
            config["muon_learning_rate"] = keras.optimizers.schedules.deserialize(
                config["muon_learning_rate"], custom_objects=custom_objects
            )
        return super().from_config(config, custom_objects=custom_objects)


def platform(strategy: Any = None) -> str:
    """``"gpu"`` when ``strategy`` (default: this process's TensorFlow) places work on a GPU,
    else ``"cpu"``."""
    if strategy is not None:
        devices = strategy.extended.worker_devices
        return "gpu" if any("GPU" in d.upper() for d in devices) else "cpu"
    return "gpu" if tf.config.list_logical_devices("GPU") else "cpu"


def optimizer_kind(optimizer: keras.optimizers.Optimizer) -> str:
    """``"muon"`` or ``"adamw"``: which :func:`make_optimizer` kind ``optimizer`` is."""
    return "muon" if isinstance(optimizer, keras.optimizers.Muon) else "adamw"


def make_optimizer(
    lr: float,
    steps: int,
    warmup: int = 50,
    optimizer: str = "muon",
    muon_lr: float = 0.03,
    ns_dtype: str = "auto",
) -> keras.optimizers.Optimizer:
    """The optimiser of ``model_torch.make_optimizer``, on :class:`WarmupCosine` schedules.

    ``optimizer="adamw"``: AdamW(b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.01) on every
    weight, peak ``lr``. ``optimizer="muon"``: :class:`TorchMuon`: Muon (momentum 0.95,
    Nesterov, 5 Newton-Schulz steps, weight decay 0.01, peak ``muon_lr`` scaled per matrix by
    ``sqrt(max(1, fan_out / fan_in))``) on the block kernels, and the AdamW above (peak ``lr``)
    on everything else; both rates follow the same warm-up/cosine factor. ``ns_dtype``: Muon's
    Newton-Schulz dtype (``auto``: :func:`workloads.common.resolve_ns_dtype` for
    :func:`platform`).

    Raises:
        ValueError: ``optimizer`` is neither ``"muon"`` nor ``"adamw"``, or an unknown
            ``ns_dtype``.
    """
    from workloads.common import resolve_ns_dtype

    if optimizer == "adamw":
        return keras.optimizers.AdamW(
            learning_rate=WarmupCosine(lr, steps, warmup),
            beta_1=0.9,
            beta_2=0.95,
            epsilon=1e-8,
            weight_decay=0.01,
        )
    if optimizer == "muon":
        a, b, c = MUON_NS_COEFFICIENTS
        return TorchMuon(
            learning_rate=WarmupCosine(lr, steps, warmup),
            muon_learning_rate=WarmupCosine(muon_lr, steps, warmup),
            weight_decay=0.01,
            adam_beta_1=0.9,
            adam_beta_2=0.95,
            epsilon=1e-8,
            exclude_embeddings=True,
            muon_a=a,
            muon_b=b,
            muon_c=c,
            momentum=0.95,
            ns_steps=5,
            nesterov=True,
            ns_dtype=resolve_ns_dtype(ns_dtype, platform()),
        )
    raise ValueError(f"optimizer={optimizer!r}: expected 'muon' or 'adamw'")


@contextlib.contextmanager
def dtype_policy(precision: str):
    """Layers built inside compute in ``precision``: ``"bf16"`` -> Keras' ``mixed_bfloat16``
    policy (float32 variables, bfloat16 compute;
    https://keras.io/api/mixed_precision/policy/), ``"fp32"`` -> ``float32``. Keras' global
    policy is set for the block and restored after it (layers keep the policy they were built
    with)."""
    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(before)


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
    hf: bool = False,
) -> Path:
    """Write ``params.npz`` (+ ``opt_state.npz``) atomically with a sha256 manifest; with
    ``hf`` also the Hugging Face model folder ``hf/`` (:func:`workloads.hf_export.hf_files`) in
    the same write and manifest."""
    arrays = weights_to_host(model)
    files = {PARAMS: _npz_bytes(arrays)}
    if hf:
        from workloads.hf_export import hf_files

        files.update(hf_files(arrays, model.cfg))
    if optimizer is not None:
        files[OPT_STATE] = _npz_bytes(
            {f"{i:04d}": _host(v) for i, v in enumerate(optimizer.variables)}
        )
    metadata = {"step": int(step), "framework": FRAMEWORK, "model": asdict(model.cfg)}
    if optimizer is not None:
        metadata["optimizer"] = optimizer_kind(optimizer)
        if isinstance(optimizer, TorchMuon):
            metadata["ns_dtype"] = optimizer.ns_dtype
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
        CheckpointError: the manifest does not verify, it is not a TensorFlow checkpoint, an
            array is missing / has the wrong shape (names the file and array), or its optimiser
            state was written by the other optimiser kind (metadata ``optimizer``, names both).
    """
    root = Path(path)
    metadata = read_checkpoint(root)
    _assign(model.named_weights(), _load_npz(root / PARAMS), root / PARAMS)
    if optimizer is not None and (root / OPT_STATE).exists():
        # Checkpoints from before the optimizer choice were all AdamW ones.
        written, wanted = metadata.get("optimizer", "adamw"), optimizer_kind(optimizer)
        if written != wanted:
            raise CheckpointError(
                f"{root}: optimizer state was written by optimizer {written!r}, this run uses "
                f"optimizer {wanted!r}; resume with optimizer={written!r} (or start a new run)"
            )
        target = {f"{i:04d}": v for i, v in enumerate(optimizer.variables)}
        _assign(target, _load_npz(root / OPT_STATE), root / OPT_STATE)
    return metadata
