"""Tokens/s and MFU of one JAX training step of the byte LM on whatever device JAX picks.

Usage: ``python bench/jax_step.py --d-model 128 --layers 4 --heads 4 --context 256 --batch 16``
(``--steps`` timed steps after ``--warmup`` compiled ones). Runs unchanged on CPU, GPU and TPU:
the mesh spans ``jax.devices()`` and the batch is split over them (bf16 compute off CPU).
FLOPs per token: :func:`workloads.flops.flops_per_token` (the same as ``bench/torch_step.py``).
Peak per device: ``--peak-tflops`` if given, else from the device kind (TPU v5e/v6e, NVIDIA
L4/A100/H100/H200: :func:`contract.accelerators.peak_flops`, the one copy of the figures the
catalog also reads); on CPU there is
no catalog peak, so MFU is reported as null (achieved TFLOP/s is always reported).
Prints one JSON line, then ``ratio: mfu = <MFU or n/a>  (tokens/s N)``.
``--smoke``: a tiny model (d_model 32, 1 layer, context 32, batch 4), 2 timed steps.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


SMOKE = {"d_model": 32, "layers": 1, "heads": 2, "context": 32, "batch": 4, "steps": 2, "warmup": 1}
SMOKE_HELP = "tiny model and batch, 2 timed steps (seconds; run by the tests)"


def main() -> None:
    ap = argparse.ArgumentParser()
    for k, v in (("--d-model", 128), ("--layers", 4), ("--heads", 4), ("--context", 256),
                 ("--batch", 16), ("--steps", 5), ("--warmup", 2)):  # fmt: skip
        ap.add_argument(k, type=int, default=v)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--peak-tflops", type=float, default=None, help="per device")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import jax
    import numpy as np

    from contract.accelerators import peak_flops
    from workloads import model_jax as M
    from workloads.flops import mfu

    cfg = M.ModelConfig(d_model=a.d_model, n_layers=a.layers, n_heads=a.heads,
                        context_length=a.context)  # fmt: skip
    mesh = M.data_mesh()
    opt = M.make_optimizer(1e-3, 1000, 10)
    host = M.init_params(cfg, 0)
    params = M.replicate(host, mesh)
    state = M.replicate(jax.tree_util.tree_map(np.asarray, opt.init(host)), mesh)
    dtype = M.resolve_dtype(a.dtype)
    step = M.make_train_step(cfg, opt, mesh, dtype)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 256, (a.batch, a.context + 1)).astype(np.int32)
    batch = M.shard_batch(tokens, mesh)
    for _ in range(a.warmup):
        params, state, loss = step(params, state, batch)
    float(loss)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        params, state, loss = step(params, state, batch)
    float(loss)
    dt = (time.perf_counter() - t0) / a.steps
    dev = jax.devices()[0]
    tps = a.batch * a.context / dt
    fpt = cfg.flops_per_token()
    peak = a.peak_tflops * 1e12 if a.peak_tflops else peak_flops(dev.platform, dev.device_kind)
    summary = {
        "framework": "jax", "device": f"{dev.platform}:{dev.device_kind}",
        "devices": jax.device_count(), "dtype": str(np.dtype(dtype)),
        "params": M.count_params(host), "flops_per_token": fpt, "step_time_s": dt,
        "tokens_per_s": tps, "achieved_tflops": tps * fpt / 1e12,
        "peak_tflops_per_device": peak / 1e12 if peak else None,
        "mfu": mfu(tps, fpt, peak, jax.device_count()),
    }  # fmt: skip
    print(json.dumps(summary))
    # The summary line the tests parse: MFU where the device's peak is known, else n/a.
    m = summary["mfu"]
    print(f"ratio: mfu = {'n/a' if m is None else f'{m:.4g}'}  (tokens/s {tps:.0f})")


if __name__ == "__main__":
    main()
