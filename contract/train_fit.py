"""Will a training job fit its devices? The one memory estimate of a training step, read by
``raygke check`` (:func:`components.raycrs.training_fit.job_memory_fits`: the catalog's memory
per chip or GPU, or the CPU pod's) and by the PyTorch trainer's ``parallelism: auto``
(:mod:`workloads.train_lm`: DDP when a replica fits with margin, else FSDP) and the JAX
trainer's mesh (:mod:`contract.mesh`: data-only when a replica fits with margin, else the
smallest fsdp degree that does, :func:`auto_shard_degree`).

Standard library only (``components/`` and ``workloads/`` both import it).

Bytes on one device (a GPU, a TPU chip, a CPU worker pod) during a step of the byte-level GPT
(:mod:`workloads.model_torch`, the same network in :mod:`workloads.model_jax` and
:mod:`workloads.model_tf`):

* model state, divided by the sharding degree ``S`` (1 when every device holds a replica):
  float32 parameters and gradients (4 + 4 bytes each: weights, optimizer state and loss stay
  float32 in every framework, :mod:`workloads.precision`), the optimizer's state in float32
  (AdamW: two moments, 8 bytes; Muon: its momentum, 4 bytes, for the blocks' 2-D matrices and
  AdamW's two moments for the rest, :func:`workloads.model_torch.muon_matrices`), and with
  PyTorch DDP a second float32 copy of the gradients (DDP's all-reduce buckets,
  ``gradient_as_bucket_view=False``, Ray Train's ``prepare_model`` default);
* transients: with FSDP the unsharded parameters of two blocks in the compute dtype (the one
  computing, the one prefetched) and one block's unsharded float32 gradients (before its
  reduce-scatter); with Muon four float32 copies of the largest matrix (Newton-Schulz);
* activations saved for the backward pass at the job's batch (rows per device) and context
  ``T``, per token: per block ``2 d`` float32 (the residual stream into each LayerNorm) +
  ``6 d + 2 h`` in the compute dtype (the LayerNorm outputs, q/k/v, the attention output, the
  MLP's hidden layer before and after GELU; scaled-dot-product attention keeps no ``T x T``
  matrix), and the head's ``2 d`` float32 + the logits (``V`` in the compute dtype, float32 and
  its gradient: ``V (c + 8)``). With activation checkpointing a block keeps only its input
  (``d`` float32) and one block's activations are recomputed at a time;
* the runtime's reserve, taken off the device's memory: :data:`RESERVE` (a fraction plus a
  fixed amount: the CUDA context and allocator, XLA's runtime, a Ray pod's object store,
  which takes 30 % of a node's memory by default, and its processes).

This is an estimate (allocator fragmentation and framework workspaces vary), documented so its
refusals can be argued with; the terms are :class:`Estimate`'s fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

GB = 1e9
BYTE_VOCAB = 256  # the byte-level LM's vocabulary (workloads/model_torch.py VOCAB)
F32 = 4
COMPUTE_BYTES = {"bf16": 2, "fp32": 4}
# (fraction of the device's memory, GB) the runtime keeps: a GPU's CUDA context and caching
# allocator, a TPU's XLA runtime, a CPU pod's Ray object store (30 % of the node's memory by
# default, ray start --object-store-memory) and Ray's own processes.
RESERVE: dict[str, tuple[float, float]] = {
    "gpu": (0.10, 1.0),
    "tpu": (0.05, 0.5),
    "cpu": (0.30, 1.5),
}
# parallelism auto picks DDP when a replica's estimate is at most this share of the usable memory.
DDP_MARGIN = 0.8
PARALLELISMS = ("auto", "ddp", "fsdp")


@dataclass(frozen=True)
class LmShape:
    """The byte-level GPT's sizes (:class:`workloads.lm_config.ModelConfig`)."""

    d_model: int
    n_layers: int
    context: int
    mlp_ratio: int = 4
    vocab: int = BYTE_VOCAB

    @property
    def hidden(self) -> int:
        return self.mlp_ratio * self.d_model

    def block_params(self) -> int:
        """One block: qkv ``d*3d + 3d``, proj ``d*d + d``, two LayerNorms ``4d``, MLP
        ``d*h + h + h*d + d``."""
        d, h = self.d_model, self.hidden
        return 4 * d * d + 2 * d * h + 9 * d + h

    def params(self) -> int:
        """Parameters (the output head is the tied token embedding)."""
        d = self.d_model
        return self.vocab * d + self.context * d + self.n_layers * self.block_params() + 2 * d

    def matrix_params(self) -> int:
        """Parameters of the blocks' 2-D weight matrices (Muon's)."""
        d, h = self.d_model, self.hidden
        return self.n_layers * (4 * d * d + 2 * d * h)


@dataclass(frozen=True)
class Estimate:
    """Bytes of one device during a step (see the module docstring), and its memory.

    Attributes:
        states: parameters, gradients and optimizer state (and DDP's buckets), sharded.
        transient: FSDP's gathered blocks and Muon's Newton-Schulz copies.
        activations: what the backward pass keeps at the device's batch.
        memory: the device's memory (bytes; 0 when unknown).
        reserve: the runtime's part of it (bytes).
        degree: devices the model state is sharded over (1: replicated).
        parallelism: ``ddp`` (PyTorch's replicas), ``replicated`` (the other trainers') or
            ``fsdp``.
        checkpointing: activation checkpointing per block.
        rows: rows of the batch on one device.
        params: the model's parameters.
    """

    states: float
    transient: float
    activations: float
    memory: float
    reserve: float
    degree: int
    parallelism: str
    checkpointing: bool
    rows: float
    params: int

    @property
    def total(self) -> float:
        """Bytes per device the step needs (the reserve not included)."""
        return self.states + self.transient + self.activations

    @property
    def usable(self) -> float:
        """The device's memory less the runtime's reserve."""
        return max(0.0, self.memory - self.reserve)

    @property
    def fits(self) -> bool:
        return self.total <= self.usable

    def describe(self) -> str:
        """``12.3 GB per device (fsdp over 16, activation checkpointing; states 8.1, transient
        0.4, activations 3.8) of 28.9 GB usable``."""
        how = self.parallelism + (f" over {self.degree}" if self.parallelism == "fsdp" else "")
        if self.checkpointing:
            how += ", activation checkpointing"
        return (
            f"{gb(self.total)} GB per device ({how}; {self.params / 1e6:,.1f}M parameters: states "
            f"{gb(self.states)}, transient {gb(self.transient)}, activations "
            f"{gb(self.activations)} at {self.rows:g} rows) of {gb(self.usable)} GB usable"
        )


def gb(n: float) -> str:
    """Bytes as GB with two significant decimals (``0.0012``, ``3.41``, ``824``)."""
    v = n / GB
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.2g}"


def reserve_bytes(kind: str, memory: float) -> float:
    """The runtime's reserve of a device of ``kind`` (``gpu``, ``tpu``, ``cpu``) with
    ``memory`` bytes (:data:`RESERVE`)."""
    frac, fixed = RESERVE.get(kind, RESERVE["gpu"])
    return frac * memory + fixed * GB


def estimate(
    shape: LmShape,
    *,
    rows: float,
    optimizer: str = "muon",
    compute: str = "fp32",
    degree: int = 1,
    parallelism: str = "ddp",
    checkpointing: bool = False,
    framework: str = "torch",
    memory: float = 0.0,
    kind: str = "gpu",
) -> Estimate:
    """Bytes of one device during a training step (see the module docstring).

    Args:
        shape: the model's sizes.
        rows: batch rows on one device (a worker's ``batch_size`` over its devices).
        optimizer: ``muon`` | ``adamw``.
        compute: the compute dtype, ``bf16`` | ``fp32``.
        degree: devices the model state is sharded over (1: each holds a replica).
        parallelism: ``ddp`` | ``fsdp`` | ``replicated`` (the TensorFlow trainer's and the JAX
            trainer's data-only mesh; ``fsdp`` with ``degree`` 1 is FSDP's gathered transients without
            the sharding).
        checkpointing: activation checkpointing per block.
        framework: ``torch`` (DDP keeps a bucket copy of the gradients), ``jax``, ``tensorflow``.
        memory: the device's memory in bytes (0: unknown).
        kind: ``gpu`` | ``tpu`` | ``cpu`` (the reserve, :data:`RESERVE`).
    """
    n = shape.params()
    matrices = shape.matrix_params() if optimizer == "muon" else 0
    moments = 2 * F32 * (n - matrices) + F32 * matrices
    grad_copy = F32 * n if framework == "torch" and parallelism == "ddp" else 0
    states = (F32 * n + F32 * n + moments + grad_copy) / max(1, degree)
    c = COMPUTE_BYTES.get(compute, F32)
    block = shape.block_params()
    transient = 0.0
    if parallelism == "fsdp":
        transient += 2 * block * c + block * F32
    if optimizer == "muon":
        transient += 4 * F32 * shape.d_model * max(3 * shape.d_model, shape.hidden)
    d, h, tokens = shape.d_model, shape.hidden, rows * shape.context
    per_block = 2 * d * F32 + (6 * d + 2 * h) * c
    head = 2 * d * F32 + shape.vocab * (c + 8)
    if checkpointing:
        per_token = shape.n_layers * d * F32 + per_block + head
    else:
        per_token = shape.n_layers * per_block + head
    return Estimate(
        states=states,
        transient=transient,
        activations=tokens * per_token,
        memory=memory,
        reserve=reserve_bytes(kind, memory) if memory else 0.0,
        degree=max(1, degree),
        parallelism=parallelism,
        checkpointing=checkpointing,
        rows=rows,
        params=n,
    )


def assumed_memory(device_bytes: float, assumed_gb: float | None) -> tuple[float, str]:
    """The memory per device a trainer's ``parallelism: auto`` uses, and a note for its printed
    reason: ``assumed_gb`` (a trainer's ``device_memory_gb``) when set and at most the device's
    ``device_bytes`` (or that is unknown, 0), else the device's own; ``raygke check`` refuses a
    larger value for a stack's job, the run falls back to the device's and says so."""
    if not assumed_gb:
        return device_bytes, ""
    if device_bytes and assumed_gb * GB > device_bytes:
        return device_bytes, (
            f"; device_memory_gb {assumed_gb:g} is more than this device's "
            f"{device_bytes / GB:.1f} GB, which is used"
        )
    return assumed_gb * GB, f"; a device of {assumed_gb:g} GB assumed (device_memory_gb)"


def choose_parallelism(replica: Estimate) -> str:
    """What ``parallelism: auto`` picks from the estimate of a replica (degree 1): ``ddp`` when
    it needs at most :data:`DDP_MARGIN` of the usable memory (or the memory is unknown), else
    ``fsdp``."""
    if not replica.memory or replica.total <= DDP_MARGIN * replica.usable:
        return "ddp"
    return "fsdp"


def auto_shard_degree(
    replica: Estimate, sharded: Callable[[int], Estimate], candidates: Sequence[int]
) -> tuple[int, str]:
    """The JAX trainer's ``parallelism: auto`` (:func:`contract.mesh.mesh_shape`): ``(degree,
    reason)``, degree 1 (replicated) when :func:`choose_parallelism` picks ``ddp`` for the
    replica's estimate, else the smallest of ``candidates`` (ascending fsdp degrees) whose
    estimate ``sharded(degree)`` needs at most :data:`DDP_MARGIN` of the usable memory, else the
    largest candidate."""
    if choose_parallelism(replica) == "ddp":
        return 1, f"auto: a replica needs {replica.describe()}"
    for d in candidates:
        if d > 1:
            e = sharded(d)
            if e.total <= DDP_MARGIN * e.usable:
                return d, f"auto: sharded {e.describe()}"
    top = max(candidates)
    return top, f"auto: sharded {sharded(top).describe()}" if top > 1 else "auto: one device"


def fixes(
    est: Estimate,
    shape: LmShape,
    *,
    workers_degree: int,
    more_devices: int | None,
    fsdp_available: bool,
    checkpointing_available: bool,
    scope: str = "the job's {n} devices",
    **kwargs: object,
) -> list[str]:
    """The fixes of an estimate that does not fit, in order (fsdp, more chips, activation
    checkpointing, a smaller batch), each with the bytes per device it would give (each applied
    on top of the ones before it that exist for the job) and whether that fits.

    Args:
        est: the job's estimate.
        shape: its model.
        workers_degree: devices FSDP would shard over (all of the job's).
        more_devices: the most devices the job could get (e.g. the pool's capacity), or None.
        fsdp_available: the trainer takes ``parallelism: fsdp``.
        checkpointing_available: the trainer takes ``activation_checkpointing``.
        scope: what FSDP shards over, ``{n}`` its devices (the JAX trainer: a slice's chips).
        kwargs: the other :func:`estimate` arguments of the job (optimizer, compute, ...).
    """
    out: list[str] = []
    cur = est

    def line(what: str, e: Estimate) -> str:
        verdict = "fits" if e.fits else "still does not fit"
        return f"{what}: {gb(e.total)} GB per device ({verdict})"

    def again(**changes: object) -> Estimate:
        args = {
            "rows": cur.rows,
            "degree": cur.degree,
            "parallelism": cur.parallelism,
            "checkpointing": cur.checkpointing,
            "memory": est.memory,
            **kwargs,
            **changes,
        }
        return estimate(shape, **args)  # type: ignore[arg-type]

    if fsdp_available and cur.degree < workers_degree:
        cur = again(parallelism="fsdp", degree=workers_degree)
        out.append(line(f"parallelism: fsdp over {scope.format(n=workers_degree)}", cur))
    elif not fsdp_available:
        out.append("fsdp: this trainer replicates the model (no parallelism argument)")
    if fsdp_available and more_devices and more_devices > cur.degree and not cur.fits:
        cur = again(parallelism="fsdp", degree=more_devices)
        out.append(line(f"more chips: fsdp over {more_devices} devices", cur))
    if not cur.checkpointing and not cur.fits:
        if checkpointing_available:
            cur = again(checkpointing=True)
            out.append(line("activation_checkpointing: true", cur))
        else:
            out.append("activation checkpointing: not available in this trainer")
    if not cur.fits:
        rows = cur.rows
        while rows > 1 and not cur.fits:
            rows = max(1, rows // 2)
            cur = again(rows=rows)
        what = f"a smaller batch ({rows:g} rows per device)"
        out.append(line(what, cur) + ("" if cur.fits else "; a smaller model is needed"))
    return out
