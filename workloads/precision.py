"""The compute dtype of a run -- bfloat16 where the device multiplies it natively and faster,
float32 elsewhere -- and the matmul peak that MFU is measured against.

One decision for every trainer (:mod:`workloads.train_lm`, :mod:`workloads.train_lm_jax`,
:mod:`workloads.train_lm_tf`), :mod:`workloads.evaluate` and the benches
(``bench/torch_step.py --compare``): :func:`decide`, made once per run (rank 0 of a Ray Train
run decides and the other workers take its choice), printed once (:func:`Precision.line`),
recorded in every checkpoint's metadata (``precision``) and overridable with the ``precision``
argument (``auto`` | ``bf16`` | ``fp32``; :class:`contract.args.train.TrainArgs`).

The rule for ``auto``:

* CPU: bfloat16 only when the CPU has bf16 matrix instructions -- ``amx_bf16`` (Intel AMX) or
  ``avx512_bf16`` among the ``flags`` of ``/proc/cpuinfo`` (the Linux kernel's names,
  ``arch/x86/include/asm/cpufeatures.h``) -- AND a short matmul (:func:`matmul_flops`) at the model's shape
  measures bf16 at least :data:`MIN_GAIN` times float32's FLOP/s. oneDNN runs bf16 matmuls on
  AMX / AVX512-BF16 (https://docs.pytorch.org/docs/stable/amp.html#cpu-ops-that-can-autocast-to-bfloat16);
  without them it converts to float32 and back, much slower than float32 (measured on an AMD
  EPYC with AVX2 only: ``docs/benchmarks.md``). No flags (or no ``/proc/cpuinfo``): float32, without
  measuring bf16.
* CUDA: bfloat16 when ``torch.cuda.is_bf16_supported()`` (Ampere and later), else float32.
* TPU (JAX): bfloat16 (the MXU multiplies bf16; https://cloud.google.com/tpu/docs/bfloat16).

Loss and parameters stay float32 in every framework: bf16 is an autocast / mixed-precision
compute dtype only.

The peak: :func:`matmul_flops` times ``nn.Linear``'s matmul of ``[M, K] x [K, N]`` (default: the model's
widest layer, M = ``batch * context`` rows up to 4096, K = ``d_model``, N = ``mlp_ratio *
d_model``) for about :data:`MEASURE_S` seconds on the calling process's threads (a Ray
worker's own allocation) in the chosen dtype, the best of :data:`WINDOWS` windows: the matmul
rate this worker can reach, the denominator of its MFU (:func:`workloads.flops.mfu`). On a GPU the same code times the GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "bf16", "fp32")
# ``/proc/cpuinfo`` flags of CPUs that multiply bfloat16 in hardware (Linux cpufeatures.h names).
BF16_FLAGS = ("amx_bf16", "avx512_bf16")
# bf16 is chosen on a CPU with BF16_FLAGS only when its measured matmul rate is this many times
# float32's (AMX measured 6.4x on a Xeon in issue 38; below this the rounding is not worth it).
MIN_GAIN = 1.2
MEASURE_S = 0.5  # seconds of matmuls per dtype measured
MAX_ROWS = 4096  # rows (M) of the measured matmul, at most


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The ``flags`` of the first processor in ``cpuinfo`` (``/proc/cpuinfo``'s text; read when
    None). Empty where there is no such file (macOS, Windows) or no ``flags`` line (ARM's
    lines are ``Features``, also read)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def native_bf16(flags: Iterable[str]) -> list[str]:
    """The bf16 matrix flags (:data:`BF16_FLAGS`) among ``flags``, in that order."""
    have = set(flags)
    return [f for f in BF16_FLAGS if f in have]


def matmul_shape(
    d_model: int, mlp_ratio: int = 4, batch: int = 32, context: int = 256
) -> tuple[int, int, int]:
    """``(M, K, N)`` of the model's widest matmul: the MLP's first layer over one step's rows."""
    return (max(1, min(MAX_ROWS, batch * context)), d_model, mlp_ratio * d_model)


WINDOWS = 5  # the peak is the best of this many timing windows (a busy core slows some)


def best_rate(call: Callable[[], Any], flops_per_call: float, seconds: float = MEASURE_S) -> float:
    """FLOP/s of ``call()`` (one blocking matmul of ``flops_per_call`` FLOPs): after one
    warm-up call, :data:`WINDOWS` windows of about ``seconds / WINDOWS`` each (at least one
    call), the best window's rate -- a peak, so other processes' load on the same cores lowers
    it less than it lowers a mean."""
    call()
    best = 0.0
    for _ in range(WINDOWS):
        calls, t0 = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - t0 < seconds / WINDOWS:
            call()
            calls += 1
        best = max(best, flops_per_call * calls / (time.perf_counter() - t0))
    return best


def matmul_flops(
    dtype: str,
    shape: tuple[int, int, int] = (MAX_ROWS, 128, 512),
    seconds: float = MEASURE_S,
    device: str = "cpu",
) -> float:
    """Peak FLOP/s of the model's matmul, ``torch.nn.functional.linear`` of ``x[M, K]`` and a
    weight ``[N, K]`` (``x @ W.T``, what ``nn.Linear`` runs; torch picks its kernel by layout,
    so a plain ``torch.mm(x[M, K], y[K, N])`` can take another path), in ``dtype`` (``"fp32"``
    or ``"bf16"``) on ``device`` and this process's torch threads (:func:`best_rate`; ``2 M K
    N`` FLOPs per call; a GPU is synchronised after each call)."""
    import torch

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    m, k, n = shape
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=gen).to(device=device, dtype=tdtype)
    w = torch.randn(n, k, generator=gen).to(device=device, dtype=tdtype)

    def call() -> None:
        torch.nn.functional.linear(a, w)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    return best_rate(call, 2.0 * m * k * n, seconds)


@functools.cache
def jax_matmul_flops(
    dtype: str, shape: tuple[int, int, int] = (MAX_ROWS, 128, 512), seconds: float = MEASURE_S
) -> float:
    """:func:`matmul_flops` with ``jnp.dot`` (jitted) on JAX's default device (a CPU, a GPU or
    one TPU chip), blocking on each result (``block_until_ready``). The operands are drawn on
    the host (NumPy) and copied over: ``jax.random`` would compile its own programs first (on
    a CPU, seconds: more than the measurement).

    Measured once per process for each argument set and then remembered: JAX's default device
    and XLA's CPU thread pool are fixed when its backend starts, so a later measurement in the
    same process (a run resumed in place, a Tune trial in a reused actor) could only add noise
    to the same peak, at about ``seconds`` per dtype each time."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    jdtype = {"fp32": jnp.float32, "bf16": jnp.bfloat16}[dtype]
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = jax.device_put(rng.standard_normal((m, k), np.float32).astype(jdtype))
    b = jax.device_put(rng.standard_normal((k, n), np.float32).astype(jdtype))
    mm = jax.jit(jnp.dot)
    return best_rate(lambda: mm(a, b).block_until_ready(), 2.0 * m * k * n, seconds)


def tf_matmul_flops(
    dtype: str, shape: tuple[int, int, int] = (MAX_ROWS, 128, 512), seconds: float = MEASURE_S
) -> float:
    """:func:`matmul_flops` with ``tf.linalg.matmul`` (in a ``tf.function``) on TensorFlow's
    default device, blocking on one element of each result (``.numpy()``)."""
    import tensorflow as tf

    tdtype = {"fp32": tf.float32, "bf16": tf.bfloat16}[dtype]
    m, k, n = shape
    gen = tf.random.Generator.from_seed(0)
    a = tf.cast(gen.normal((m, k)), tdtype)
    b = tf.cast(gen.normal((k, n)), tdtype)
    mm = tf.function(lambda x, y: tf.linalg.matmul(x, y)[0, 0])
    return best_rate(lambda: mm(a, b).numpy(), 2.0 * m * k * n, seconds)


@dataclasses.dataclass(frozen=True)
class Precision:
    """A run's compute dtype and the matmul peak its MFU is measured against.

    ``dtype``: ``"bf16"`` or ``"fp32"``; ``reason``: why (one phrase); ``peak_flops``: measured
    FLOP/s of ``dtype`` on this worker (None when not measured); ``measured``: FLOP/s per dtype
    measured (``{"fp32": ..., "bf16": ...}``); ``flags``: the bf16 flags found; ``device``:
    ``"cpu"`` / ``"cuda"`` / ``"tpu"``."""

    dtype: str
    reason: str
    peak_flops: float | None = None
    measured: Mapping[str, float] = dataclasses.field(default_factory=dict)
    flags: tuple[str, ...] = ()
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"measured": dict(self.measured)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Precision:
        return cls(
            **{**d, "flags": tuple(d.get("flags") or ()), "measured": d.get("measured") or {}}
        )

    def line(self) -> str:
        """The one line a run prints, e.g. ``precision: fp32 (auto: no amx_bf16/avx512_bf16
        in the CPU flags); fp32 matmul 95.1 GFLOP/s on this worker``."""
        rates = ", ".join(f"{k} {v / 1e9:,.1f} GFLOP/s" for k, v in self.measured.items())
        return f"precision: {self.dtype} ({self.reason})" + (f"; matmul {rates}" if rates else "")


def _torch_capability() -> str:
    try:
        import torch

        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # an old torch, or none (a JAX/TF image)
        return "unknown"


def decide(
    requested: str | None = "auto",
    device: str = "cpu",
    *,
    shape: tuple[int, int, int] = (MAX_ROWS, 128, 512),
    flags: Iterable[str] | None = None,
    measure: Callable[[str], float] | None = None,
    cuda_bf16: bool | None = None,
    measure_peak: bool = True,
) -> Precision:
    """The compute dtype for ``device`` (``"cpu"``, ``"cuda"``/``"gpu"``, ``"tpu"``) under
    ``requested`` (``auto`` / None, ``bf16``, ``fp32``; see the module docstring) and the
    measured matmul peak of that dtype.

    ``flags`` (default :func:`cpu_flags`), ``measure(dtype) -> FLOP/s`` (default
    :func:`matmul_flops` at ``shape`` on ``device``; None on a TPU) and ``cuda_bf16`` (default
    ``torch.cuda.is_bf16_supported()``) are there for tests. ``measure_peak`` False: no peak
    (``peak_flops`` None) and no measurement at all unless the choice needs one.

    Raises:
        ValueError: ``requested`` is not one of :data:`PRECISIONS`.
    """
    if requested is None:
        requested = "auto"
    if requested not in PRECISIONS:
        raise ValueError(f"precision {requested!r} is not one of {', '.join(PRECISIONS)}")
    device = "cuda" if device == "gpu" else device
    if measure is None and device in ("cpu", "cuda"):

        def measure(dtype: str) -> float:
            return matmul_flops(dtype, shape, device=device)

    measured: dict[str, float] = {}

    def rate(dtype: str) -> float | None:
        if measure is None:
            return None
        if dtype not in measured:
            measured[dtype] = measure(dtype)
        return measured[dtype]

    found: tuple[str, ...] = ()
    if device == "cpu":
        found = tuple(native_bf16(cpu_flags() if flags is None else flags))
    if requested != "auto":
        dtype, reason = requested, "set by the precision argument"
    elif device == "tpu":
        dtype, reason = "bf16", "auto: a TPU's matrix unit multiplies bf16"
    elif device == "cuda":
        if cuda_bf16 is None:
            import torch

            cuda_bf16 = bool(torch.cuda.is_bf16_supported())
        dtype = "bf16" if cuda_bf16 else "fp32"
        reason = "auto: the GPU " + ("supports bf16" if cuda_bf16 else "has no bf16")
    elif not found:
        dtype = "fp32"
        reason = (
            f"auto: no {'/'.join(BF16_FLAGS)} in the CPU flags "
            f"(torch CPU capability {_torch_capability()})"
        )
    else:
        fp32, bf16 = rate("fp32"), rate("bf16")
        gain = bf16 / fp32 if fp32 and bf16 else 0.0
        dtype = "bf16" if gain >= MIN_GAIN else "fp32"
        reason = f"auto: CPU has {', '.join(found)}; bf16/fp32 matmul rate {gain:.2f}x" + (
            "" if dtype == "bf16" else f" < {MIN_GAIN}"
        )
    peak = rate(dtype) if measure_peak else measured.get(dtype)
    return Precision(dtype, reason, peak, dict(measured), found, device)


def for_run(
    requested: str | None,
    device: str,
    metadata: Mapping[str, Any] | None,
    source: str = "",
    **kwargs: Any,
) -> Precision:
    """The precision of a run that may resume from a checkpoint with ``metadata``: decided once
    per run, so under ``auto`` a checkpoint's recorded ``precision`` is kept (with a warning
    when this device would pick the other); an explicit ``requested`` always wins (the
    dtype is the autocast compute dtype only: weights and optimizer state are float32 either
    way, so either resumes). ``kwargs`` go to :func:`decide`.

    Raises:
        ValueError: ``requested`` is not one of :data:`PRECISIONS`.
    """
    saved = (metadata or {}).get("precision")
    if saved not in ("bf16", "fp32") or requested not in (None, "auto"):
        return decide(requested, device, **kwargs)
    here = decide("auto", device, **kwargs)
    if here.dtype == saved:
        return here
    log.warning(
        "checkpoint %s ran in %s; keeping it (auto would pick %s here: %s)",
        source,
        saved,
        here.dtype,
        here.reason,
    )
    kept = decide(saved, device, **kwargs)
    return dataclasses.replace(kept, reason=f"kept from checkpoint {source}")


def mfu_metrics(
    tokens_per_s: float, flops_per_token: float, precision: Precision | None, devices: int
) -> dict[str, Any]:
    """``{"mfu", "peak_flops", "model_flops", "precision"}`` of a run: achieved model FLOP/s
    (``tokens_per_s * flops_per_token``), the peak of ``devices`` workers
    (``precision.peak_flops * devices``) and their ratio (:func:`workloads.flops.mfu`; None
    before the first timed step or without a measured peak)."""
    from workloads.flops import mfu

    peak = precision.peak_flops if precision is not None else None
    return {
        "mfu": mfu(tokens_per_s, flops_per_token, peak, devices) if tokens_per_s else None,
        "peak_flops": peak * devices if peak else None,
        "model_flops": tokens_per_s * flops_per_token if tokens_per_s else None,
        "precision": precision.dtype if precision is not None else None,
    }


def for_workers(choose: Callable[[], Precision], rank: int, world: int) -> Precision:
    """Inside a Ray Train worker group: rank 0 decides (``choose()``, e.g. :func:`for_run`)
    and prints :meth:`Precision.line` once; with several workers its choice is sent to the others
    (``ray.train.collective.broadcast_from_rank_zero``,
    https://docs.ray.io/en/latest/train/api/doc/ray.train.collective.broadcast_from_rank_zero.html),
    so every worker computes in the same dtype however its own measurement came out."""
    import sys

    chosen = choose() if rank == 0 else None
    if world > 1:
        import ray.train.collective

        shared = ray.train.collective.broadcast_from_rank_zero(
            chosen.to_dict() if chosen is not None else None
        )
        chosen = Precision.from_dict(shared)
    assert chosen is not None
    if rank == 0:  # sys.stdout, not print: Ray Train's print patch doubles lines in the job log
        sys.stdout.write(chosen.line() + "\n")
        sys.stdout.flush()
    return chosen
