"""The byte-level decoder-only transformer of :mod:`workloads.model_torch`, in plain JAX + optax.

Same architecture, config keys, defaults and initialisation as the PyTorch model: pre-LayerNorm
blocks, fused QKV projection, causal softmax attention (``jax.nn.dot_product_attention``), exact
(erf) GELU MLP of width ``mlp_ratio * d_model``, learned positions, tied input/output embeddings,
N(0, 0.02) weights with the residual projections scaled by ``1/sqrt(2 * n_layers)``.

Shapes: tokens are int32 byte values in [0, 256). ``forward(params, idx[B, T]) -> logits[B, T,
256]`` (float32). ``loss_fn(params, tokens[B, T+1])`` is the mean next-byte cross-entropy in
nats/byte (x = tokens[:, :-1], y = tokens[:, 1:]).

Precision: parameters and optimizer state are float32. ``compute_dtype`` (the trainer passes
the run's choice, :mod:`workloads.precision`, as the PyTorch trainer's autocast does; ``"auto"``
here: bfloat16 on TPU/GPU, float32 on CPU) is the dtype of the activations and of the matmul
inputs; LayerNorm statistics, softmax and the loss are computed in float32.

Data parallelism (:func:`make_train_step`): a 1-D ``jax.sharding.Mesh`` over *all* devices of
all processes (axis ``"data"``, :func:`data_mesh`); the global batch is sharded along it,
parameters and optimizer state are replicated. On a ``data`` x ``fsdp`` x ``tensor`` mesh
(:mod:`workloads.mesh_jax`, what the trainer builds) parameters and optimizer state are sharded
by that module's partition rules and the batch over ``data`` x ``fsdp``. The jitted step computes the mean loss over the global batch, so XLA
inserts the cross-device / cross-process all-reduce of the gradients (ICI/DCN on a TPU slice,
gloo on CPU processes joined by ``jax.distributed``). See
https://docs.jax.dev/en/latest/multi_process.html and
https://docs.jax.dev/en/latest/notebooks/Distributed_arrays_and_automatic_parallelization.html.

Checkpoint files (inside the :mod:`workloads.checkpoint` directory + sha256 manifest):
``params.npz`` and ``opt_state.npz``: NumPy ``.npz`` archives (``np.savez``, loaded with
``allow_pickle=False``), one array per pytree leaf, keyed by its pytree path
(``blocks/0/qkv/w``; optimizer leaves ``0/...`` by position in the optax chain, see
:func:`make_optimizer`). Metadata: ``{"step", "framework": "jax", "model": {...}, "first_loss",
"optimizer": "muon" | "adamw"}``.

Optimizer (:func:`make_optimizer`, the rules of ``model_torch.make_optimizer``): ``"muon"``
(default) = Muon for the blocks' 2-D matrices + AdamW for the rest, or ``"adamw"`` for all.
"""

from __future__ import annotations

import functools
import io
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from workloads.checkpoint import CheckpointError, verify_checkpoint, write_checkpoint
from workloads.lm_config import ModelConfig
from workloads.mesh_jax import path_name as _path_name

VOCAB = 256
PARAMS = "params.npz"
OPT_STATE = "opt_state.npz"
DATA_AXIS = "data"

Params = dict[str, Any]


def init_params(cfg: ModelConfig, seed: int = 0) -> Params:
    """Float32 parameters as a nested dict (NumPy arrays, identical on every process for a seed).

    Raises:
        ValueError: ``d_model`` not divisible by ``n_heads``.
    """
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model={cfg.d_model} not divisible by n_heads={cfg.n_heads}")
    rng = np.random.default_rng(seed)
    d, h = cfg.d_model, cfg.mlp_ratio * cfg.d_model
    resid_std = 0.02 / math.sqrt(2 * cfg.n_layers)

    def normal(shape: tuple[int, ...], std: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def ln() -> dict[str, np.ndarray]:
        return {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)}

    def dense(n_in: int, n_out: int, std: float = 0.02) -> dict[str, np.ndarray]:
        return {"w": normal((n_in, n_out), std), "b": np.zeros(n_out, np.float32)}

    blocks = [
        {
            "ln1": ln(),
            "qkv": dense(d, 3 * d),
            "proj": dense(d, d, resid_std),
            "ln2": ln(),
            "mlp1": dense(d, h),
            "mlp2": dense(h, d, resid_std),
        }
        for _ in range(cfg.n_layers)
    ]
    return {
        "tok": normal((VOCAB, d)),
        "pos": normal((cfg.context_length, d)),
        "blocks": blocks,
        "ln_f": ln(),
    }


def count_params(params: Params) -> int:
    """Total number of parameters."""
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(params)))


def _layer_norm(x: jax.Array, p: Mapping[str, jax.Array], dtype: Any) -> jax.Array:
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
    y = (x32 - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]
    return y.astype(dtype)


def _dense(x: jax.Array, p: Mapping[str, jax.Array], dtype: Any) -> jax.Array:
    return x @ p["w"].astype(dtype) + p["b"].astype(dtype)


def forward(
    params: Params,
    idx: jax.Array,
    cfg: ModelConfig,
    dtype: Any = jnp.float32,
    constrain: Callable[[jax.Array, str], jax.Array] | None = None,
):
    """Logits ``[B, T, 256]`` (float32) for byte ids ``idx[B, T]``, ``T <= context_length``.
    ``constrain(x, kind)`` (``resid``, ``heads``, ``hidden``) holds the activations to a mesh's
    shardings (:func:`workloads.mesh_jax.activation_constraint`); None: XLA's choice.

    Raises:
        ValueError: ``T > context_length`` (at trace time).
    """
    b, t = idx.shape
    if t > cfg.context_length:
        raise ValueError(f"sequence length {t} > context_length {cfg.context_length}")
    nh, c = cfg.n_heads, cfg.d_model
    hold = constrain or (lambda z, _kind: z)
    x = hold((params["tok"][idx] + params["pos"][:t]).astype(dtype), "resid")
    for blk in params["blocks"]:
        q, k, v = jnp.split(_dense(_layer_norm(x, blk["ln1"], dtype), blk["qkv"], dtype), 3, -1)
        q, k, v = (hold(z.reshape(b, t, nh, c // nh), "heads") for z in (q, k, v))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # [B, T, H, D]
        x = hold(x + _dense(y.reshape(b, t, c), blk["proj"], dtype), "resid")
        m = hold(_dense(_layer_norm(x, blk["ln2"], dtype), blk["mlp1"], dtype), "hidden")
        x = hold(x + _dense(jax.nn.gelu(m, False), blk["mlp2"], dtype), "resid")
    h = _layer_norm(x, params["ln_f"], dtype)
    return (h @ params["tok"].astype(dtype).T).astype(jnp.float32)  # tied embeddings


def loss_fn(
    params: Params,
    tokens: jax.Array,
    cfg: ModelConfig,
    dtype: Any = jnp.float32,
    constrain: Callable[[jax.Array, str], jax.Array] | None = None,
):
    """Mean next-byte cross-entropy (nats/byte, float32 scalar) over ``tokens[B, T+1]``."""
    logits = forward(params, tokens[:, :-1], cfg, dtype, constrain)
    return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()


def lr_schedule(lr: float, steps: int, warmup: int = 50) -> Callable[[Any], Any]:
    """Linear warmup then cosine decay to 10% over ``steps`` (as ``model_torch.make_optimizer``)."""

    def sched(count):
        s = jnp.asarray(count, jnp.float32)
        warm = (s + 1) / warmup
        frac = jnp.clip((s - warmup) / max(1, steps - warmup), 0.0, 1.0)
        cos = 0.1 + 0.9 * 0.5 * (1 + jnp.cos(jnp.pi * frac))
        return lr * jnp.where(s < warmup, warm, cos)

    return sched


OPTIMIZERS = ("muon", "adamw")
# Muon's settings (torch.optim.Muon's, as workloads/model_torch.py's MuonAdamW uses them:
# https://docs.pytorch.org/docs/stable/generated/torch.optim.Muon.html).
MUON_MOMENTUM = 0.95
MUON_NS_COEFFS = (3.4445, -4.775, 2.0315)
MUON_NS_STEPS = 5
MUON_EPS = 1e-7
WEIGHT_DECAY = 0.01


def is_muon_matrix(name: str, leaf: Any) -> bool:
    """Whether the parameter at path ``name`` (``blocks/0/qkv/w``) is one Muon updates: a 2-D
    weight matrix inside a transformer block (``qkv``, ``proj``, ``mlp1``, ``mlp2``) — the
    same set as ``model_torch.muon_matrices``. The tied token embedding ``tok``, the position
    embedding ``pos``, LayerNorm scales/biases and every bias are AdamW's."""
    return name.startswith("blocks/") and np.ndim(leaf) == 2


def param_labels(params: Any) -> Any:
    """``params``' pytree with each leaf replaced by ``"muon"`` or ``"adamw"``
    (:func:`is_muon_matrix`)."""
    return jax.tree_util.tree_map_with_path(
        lambda path, leaf: "muon" if is_muon_matrix(_path_name(path), leaf) else "adamw", params
    )


def _muon_width_scale(shape: tuple[int, ...]) -> float:
    """``sqrt(max(1, fan_out / fan_in))`` of a kernel ``[fan_in, fan_out]`` (this model's
    ``x @ w`` layout; torch's Linear weight is ``[out, in]``, hence its ``A / B`` = out / in in
    ``torch.optim._muon._adjust_lr`` "original")."""
    fan_in, fan_out = shape
    return math.sqrt(max(1.0, fan_out / fan_in))


def scale_by_muon_torch(
    momentum: float = MUON_MOMENTUM,
    ns_coeffs: tuple[float, float, float] = MUON_NS_COEFFS,
    ns_steps: int = MUON_NS_STEPS,
    eps: float = MUON_EPS,
    ns_dtype: str = "float32",
) -> optax.GradientTransformation:
    """Muon's direction for 2-D kernels ``[fan_in, fan_out]``, as ``torch.optim.Muon`` computes
    it (before its learning rate and weight decay):

    1. momentum ``buf = momentum * buf + (1 - momentum) * g`` (torch's ``buf.lerp_(g, 1 -
       momentum)``; ``optax.scale`` then ``optax.trace``, whose state then *is* torch's
       ``momentum_buffer``), Nesterov ``u = (1 - momentum) * g + momentum * buf``;
    2. ``u`` orthogonalised by ``ns_steps`` Newton-Schulz iterations after Frobenius
       normalisation — optax's own ``optax.contrib._muon.orthogonalize_via_newton_schulz``,
       the function ``optax.contrib.muon`` uses;
    3. times ``sqrt(max(1, fan_out / fan_in))``.

    Not ``optax.contrib.scale_by_muon`` itself: it bias-corrects the momentum (Adam-style), so
    from the second step on its update differs from torch's; and ``optax.contrib.muon``'s
    built-in fallback for the other parameters is NAdam (``nesterov`` is passed on to its
    ``adamw``), not the AdamW of ``model_torch``. The iterations run in ``ns_dtype``
    (``"float32"`` or ``"bfloat16"``, :func:`workloads.common.resolve_ns_dtype`; the result is
    cast back to the update's float32), the rule ``model_torch.DtypeMuon`` and
    ``model_tf.TorchMuon`` follow: in float32 the three agree to float32 rounding.
    """
    from optax.contrib._muon import orthogonalize_via_newton_schulz

    dtype = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[ns_dtype]
    coeffs = jnp.asarray(ns_coeffs, jnp.float32)

    def one(u: jax.Array) -> jax.Array:
        o = orthogonalize_via_newton_schulz(u.astype(dtype), coeffs, ns_steps, "frobenius", eps)
        return _muon_width_scale(u.shape) * o.astype(u.dtype)

    def orthogonalize(updates: Any, params: Any = None) -> Any:
        del params
        return jax.tree_util.tree_map(one, updates)

    return optax.chain(
        optax.scale(1.0 - momentum),
        optax.trace(decay=momentum, nesterov=True),
        optax.stateless(orthogonalize),
    )


def make_optimizer(
    lr: float,
    steps: int,
    warmup: int = 50,
    grad_clip: float = 1.0,
    optimizer: str = "muon",
    muon_lr: float = 0.03,
    ns_dtype: str = "auto",
) -> optax.GradientTransformation:
    """Global-norm clipping over all parameters, then (``model_torch.make_optimizer``'s rules):

    * ``"adamw"``: AdamW(b1=0.9, b2=0.95, weight decay 0.01) at peak ``lr`` for every parameter;
    * ``"muon"``: ``optax.multi_transform`` by :func:`param_labels`: the blocks' matrices get
      :func:`scale_by_muon_torch`, decoupled weight decay 0.01 (times the scheduled
      ``muon_lr``, not the width scale: torch's ``param.mul_(1 - lr * weight_decay)``) and peak
      ``muon_lr``; everything else gets the AdamW above at peak ``lr``.

    Both follow :func:`lr_schedule` (warm-up, cosine to 10% at ``steps``), each from its own
    peak. ``ns_dtype``: Muon's Newton-Schulz dtype (``auto``:
    :func:`workloads.common.resolve_ns_dtype` for ``jax.default_backend()``). State layout (``opt_state.npz`` names): adamw ``1/0/mu/...``; muon
    ``1/inner_states/muon/inner_state/0/1/trace/blocks/0/qkv/w`` (torch's momentum buffer) and
    ``1/inner_states/adamw/inner_state/0/mu/tok``...

    Equal arguments (``ns_dtype`` resolved first; ``muon_lr`` and ``ns_dtype`` do not count for
    ``"adamw"``) return the same transformation object, so that :func:`make_train_step` can
    hand back the step it already compiled for it.

    Raises:
        ValueError: ``optimizer`` is not one of :data:`OPTIMIZERS`, or an unknown
            ``ns_dtype``.
    """
    from workloads.common import resolve_ns_dtype

    if optimizer == "adamw":
        return _optimizer(lr, steps, warmup, grad_clip, optimizer, None, None)
    if optimizer == "muon":
        ns = resolve_ns_dtype(ns_dtype, jax.default_backend())
        return _optimizer(lr, steps, warmup, grad_clip, optimizer, muon_lr, ns)
    raise ValueError(f"optimizer {optimizer!r} is not one of {', '.join(map(repr, OPTIMIZERS))}")


@functools.lru_cache(maxsize=16)
def _optimizer(
    lr: float,
    steps: int,
    warmup: int,
    grad_clip: float,
    optimizer: str,
    muon_lr: float | None,
    ns_dtype: str | None,
) -> optax.GradientTransformation:
    """:func:`make_optimizer`'s transformation, one object per distinct (resolved) argument set."""

    def adamw(peak: float) -> optax.GradientTransformation:
        sched = lr_schedule(peak, steps, warmup)
        return optax.adamw(sched, b1=0.9, b2=0.95, weight_decay=WEIGHT_DECAY)

    if optimizer == "adamw":
        inner = adamw(lr)
    else:
        muon = optax.chain(
            scale_by_muon_torch(ns_dtype=ns_dtype),
            optax.add_decayed_weights(WEIGHT_DECAY),
            optax.scale_by_learning_rate(lr_schedule(muon_lr, steps, warmup)),
        )
        inner = optax.multi_transform({"muon": muon, "adamw": adamw(lr)}, param_labels)
    return optax.chain(optax.clip_by_global_norm(grad_clip), inner)


def resolve_dtype(name: str | None = "auto", platform: str | None = None) -> Any:
    """``"auto"`` -> bfloat16 on TPU/GPU, float32 on CPU; else ``"bfloat16"``/``"float32"``."""
    if name in (None, "auto"):
        platform = platform or jax.default_backend()
        return jnp.float32 if platform == "cpu" else jnp.bfloat16
    return {"bfloat16": jnp.bfloat16, "bf16": jnp.bfloat16, "float32": jnp.float32}[name]


def data_mesh(devices: list[Any] | None = None) -> Mesh:
    """1-D mesh (axis ``"data"``) over ``devices`` (default: all devices of all processes)."""
    return Mesh(np.array(devices if devices is not None else jax.devices()), (DATA_AXIS,))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place a pytree of host arrays (identical on every process) replicated on ``mesh``.

    Uses ``jax.make_array_from_callback``, which works for meshes spanning processes.
    """
    sharding = NamedSharding(mesh, P())

    def put(x: Any) -> jax.Array:
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree_util.tree_map(put, tree)


def shard_batch(local_tokens: np.ndarray, mesh: Mesh) -> jax.Array:
    """Global ``[B * processes, T+1]`` array from this process's rows, split on ``"data"``
    (and ``"fsdp"`` where the mesh has it: :func:`workloads.mesh_jax.batch_spec`).

    Raises:
        ValueError: the local rows do not divide over this process's devices (over
            ``tensor``: they share their rows).
    """
    from workloads.mesh_jax import batch_spec

    n_local = len(mesh.local_devices) // dict(mesh.shape).get("tensor", 1)
    if local_tokens.shape[0] % max(1, n_local):
        raise ValueError(
            f"batch of {local_tokens.shape[0]} rows does not divide over {n_local} local devices"
        )
    sharding = NamedSharding(mesh, batch_spec(mesh))
    return jax.make_array_from_process_local_data(sharding, local_tokens)


def make_train_step(
    cfg: ModelConfig, optimizer: optax.GradientTransformation, mesh: Mesh, dtype: Any
) -> Callable[[Params, Any, jax.Array], tuple[Params, Any, jax.Array]]:
    """``step(params, opt_state, tokens) -> (params, opt_state, loss)``, jitted over ``mesh``.

    ``tokens`` is sharded along ``"data"`` (and ``"fsdp"``, see :func:`shard_batch`);
    params/opt_state keep the shardings they come with (replicated on the 1-D
    :func:`data_mesh`; on a ``data`` x ``fsdp`` x ``tensor`` mesh the partition rules of
    :mod:`workloads.mesh_jax`, :func:`workloads.mesh_jax.place`), and the gradients, the new
    params and opt_state are held to those rules, the activations to
    :func:`workloads.mesh_jax.activation_constraint`. The loss is the global-batch mean, so
    gradients are averaged over every device of every process by the all-reduce (or, sharded,
    reduce-scatter) XLA inserts. Inputs ``params``/``opt_state`` are donated.

    Equal arguments return the same jitted function (the last 16 argument sets are kept), so a
    stepper built again in the same process for the same model, optimizer (see
    :func:`make_optimizer`), mesh and dtype -- a run resumed from its checkpoint, a Tune trial
    in a reused actor -- runs the program already compiled instead of compiling it again.
    """
    return _train_step(cfg, optimizer, mesh, dtype)


@functools.lru_cache(maxsize=16)
def _train_step(
    cfg: ModelConfig, optimizer: optax.GradientTransformation, mesh: Mesh, dtype: Any
) -> Callable[[Params, Any, jax.Array], tuple[Params, Any, jax.Array]]:
    from workloads.mesh_jax import activation_constraint, batch_spec, constrain

    repl = NamedSharding(mesh, P())
    data = NamedSharding(mesh, batch_spec(mesh))
    if mesh.axis_names == (DATA_AXIS,):  # the 1-D data mesh: everything replicated

        def step(params, opt_state, tokens):
            loss, grads = jax.value_and_grad(loss_fn)(params, tokens, cfg, dtype)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        return jax.jit(
            step,
            in_shardings=(repl, repl, data),
            out_shardings=(repl, repl, repl),
            donate_argnums=(0, 1),
        )
    act = activation_constraint(mesh)

    def sharded_step(params, opt_state, tokens):
        tokens = jax.lax.with_sharding_constraint(tokens, data)
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, cfg, dtype, act)
        grads = constrain(grads, mesh)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        new = constrain(optax.apply_updates(params, updates), mesh)
        return new, constrain(opt_state, mesh), loss

    # inputs keep the shardings they come with (mesh_jax.place, shard_batch)
    return jax.jit(sharded_step, donate_argnums=(0, 1))


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


def to_host(tree: Any) -> dict[str, np.ndarray]:
    """Flatten a pytree of (replicated) arrays to ``{path: np.ndarray}`` on this host."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            if not leaf.sharding.is_fully_replicated:  # workloads.mesh_jax.host_tree first
                raise ValueError(f"{_path_name(path)} is sharded across processes: gather it")
            leaf = leaf.addressable_data(0)  # replicated: every shard holds the full value
        out[_path_name(path)] = np.asarray(leaf)
    return out


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def fill_tree(template: Any, arrays: Mapping[str, np.ndarray], source: str | Path) -> Any:
    """Rebuild ``template``'s pytree from ``{path: array}``, checking names, shapes and dtypes.

    Raises:
        CheckpointError: a leaf is missing or has the wrong shape/dtype; names ``source``.
    """
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    new = []
    for path, leaf in leaves:
        name = _path_name(path)
        if name not in arrays:
            raise CheckpointError(f"{source}: array {name!r} missing")
        arr = arrays[name]
        want = np.asarray(leaf)
        if arr.shape != want.shape or arr.dtype != want.dtype:
            raise CheckpointError(
                f"{source}: array {name!r} is {arr.dtype}{list(arr.shape)}, "
                f"expected {want.dtype}{list(want.shape)}"
            )
        new.append(arr)
    return jax.tree_util.tree_unflatten(treedef, new)


def save_checkpoint(
    target_dir: str | os.PathLike[str],
    cfg: ModelConfig,
    params: Params,
    step: int,
    opt_state: Any | None = None,
    extra: Mapping[str, Any] | None = None,
    optimizer_name: str | None = None,
    hf: bool = False,
) -> Path:
    """Write ``params.npz`` (+ ``opt_state.npz``) atomically with a sha256 manifest;
    ``optimizer_name`` (``"muon"``/``"adamw"``, the one ``opt_state`` belongs to) goes into the
    metadata as ``"optimizer"``; with ``hf`` also the Hugging Face model folder ``hf/``
    (:func:`workloads.hf_export.hf_files`) in the same write and manifest."""
    arrays = to_host(params)
    files = {PARAMS: _npz_bytes(arrays)}
    if hf:
        from workloads.hf_export import hf_files

        files.update(hf_files(arrays, cfg))
    if opt_state is not None:
        files[OPT_STATE] = _npz_bytes(to_host(opt_state))
    metadata = {"step": int(step), "framework": "jax", "model": asdict(cfg), **(extra or {})}
    if optimizer_name is not None:
        metadata["optimizer"] = optimizer_name
    return write_checkpoint(target_dir, files, metadata)


def optimizer_kind(metadata: Mapping[str, Any], opt_names: Any) -> str:
    """The optimizer a checkpoint's ``opt_state.npz`` belongs to: its metadata ``"optimizer"``,
    else (checkpoints written before it was recorded) ``"muon"`` when an array name lies under
    the multi-transform's ``1/inner_states/muon/``, else ``"adamw"``."""
    if metadata.get("optimizer") in OPTIMIZERS:
        return str(metadata["optimizer"])
    return "muon" if any(n.startswith("1/inner_states/muon/") for n in opt_names) else "adamw"


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: unreadable npz: {e}") from None


def load_checkpoint(
    path: str | os.PathLike[str],
    optimizer: optax.GradientTransformation | None = None,
    optimizer_name: str | None = None,
) -> tuple[ModelConfig, Params, dict[str, Any], Any | None]:
    """Verify then load: ``(cfg, params, metadata, opt_state_or_None)`` as host NumPy trees.

    ``opt_state`` is rebuilt against ``optimizer.init(params)`` when ``optimizer`` is given and
    the checkpoint has ``opt_state.npz``; ``optimizer_name`` (``"muon"``/``"adamw"``, what
    ``optimizer`` is) is first compared with the checkpoint's (:func:`optimizer_kind`).

    Raises:
        CheckpointError: the manifest does not verify (names the damaged file), or an array is
            missing / has the wrong shape (names the file and array), or it is not a JAX one, or
            its optimizer state is another optimizer's than ``optimizer_name`` (names both).
    """
    root = Path(path)
    metadata = verify_checkpoint(root)
    if metadata.get("framework") != "jax":
        raise CheckpointError(f"{root}: framework {metadata.get('framework')!r}, expected 'jax'")
    cfg = ModelConfig(**metadata["model"])
    template = init_params(cfg)
    params = fill_tree(template, _load_npz(root / PARAMS), root / PARAMS)
    opt_state = None
    if optimizer is not None and (root / OPT_STATE).exists():
        arrays = _load_npz(root / OPT_STATE)
        saved = optimizer_kind(metadata, arrays)
        if optimizer_name is not None and saved != optimizer_name:
            raise CheckpointError(
                f"{root}: written with optimizer {saved}; this run has optimizer "
                f"{optimizer_name} (set optimizer={saved} to resume it, or use a new run name)"
            )
        opt_template = jax.tree_util.tree_map(np.asarray, optimizer.init(template))
        opt_state = fill_tree(opt_template, arrays, root / OPT_STATE)
    return cfg, params, metadata, opt_state
