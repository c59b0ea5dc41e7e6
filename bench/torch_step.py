"""Tokens/s and MFU of one PyTorch training step of the byte LM on whatever device is present,
in the run's precision, or in both precisions side by side (``--compare``).

Usage: ``python bench/torch_step.py --d-model 128 --layers 4 --heads 4 --context 256 --batch 16
[--precision auto|bf16|fp32] [--compare]``. CUDA if available, else CPU (all cores, or
``--threads``). The dtype is the trainers' decision (:func:`workloads.precision.decide`: bf16
autocast where the device multiplies bf16 natively and measures faster, else fp32). Same FLOPs
formula as ``bench/jax_step.py`` (:func:`workloads.flops.flops_per_token`). MFU is against
``--peak-tflops`` when given, else the matmul peak measured here in the step's dtype at the
model's widest matmul (:func:`workloads.precision.matmul_flops`, what the trainers report).

Prints one JSON line, then one ratio line:

* default: ``ratio: mfu = <MFU>  (tokens/s N, <dtype>)``;
* ``--compare``: the step and the peak in fp32 and in bf16, ``ratio: bf16/fp32 step time = R
  (MFU fp32 A vs bf16 B; auto picks <dtype>)``: R < 1 means bf16 steps are faster here.

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


def step_time(a: argparse.Namespace, cfg, device, precision: str) -> tuple[float, int]:
    """Mean seconds of one ``train_step`` in ``precision`` (after ``a.warmup`` steps) and the
    parameter count; a fresh model and optimizer per call, seeded alike."""
    import torch

    from workloads.model_torch import GPT, make_optimizer, train_step

    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    opt, sched = make_optimizer(model, 1e-3, 1000, 10)
    tokens = torch.randint(0, 256, (a.batch, a.context + 1), device=device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        train_step(model, opt, tokens, sched, precision=precision)
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        train_step(model, opt, tokens, sched, precision=precision)
    sync()
    return (time.perf_counter() - t0) / a.steps, sum(p.numel() for p in model.parameters())


def main() -> None:
    ap = argparse.ArgumentParser()
    for k, v in (("--d-model", 128), ("--layers", 4), ("--heads", 4), ("--context", 256),
                 ("--batch", 16), ("--steps", 5), ("--warmup", 2)):  # fmt: skip
        ap.add_argument(k, type=int, default=v)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    ap.add_argument("--peak-tflops", type=float, default=None, help="per device")
    ap.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto")
    ap.add_argument("--compare", action="store_true", help="fp32 and bf16 side by side")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import torch

    from workloads.common import host_cpus, set_torch_threads
    from workloads.flops import flops_per_token, mfu
    from workloads.model_torch import ModelConfig
    from workloads.precision import cpu_flags, decide, matmul_flops, matmul_shape, native_bf16

    set_torch_threads(a.threads or host_cpus())
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    cfg = ModelConfig(d_model=a.d_model, n_layers=a.layers, n_heads=a.heads,
                      context_length=a.context)  # fmt: skip
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, a.batch, cfg.context_length)
    chosen = decide("auto" if a.compare else a.precision, device.type, shape=shape)
    fpt = flops_per_token(cfg.d_model, cfg.n_layers, cfg.context_length, cfg.mlp_ratio)
    name = torch.cuda.get_device_name(0) if cuda else "cpu"

    def run(dtype: str) -> dict:
        dt, params = step_time(a, cfg, device, dtype)
        tps = a.batch * a.context / dt
        measured = chosen.measured.get(dtype) or matmul_flops(dtype, shape, device=device.type)
        peak = a.peak_tflops * 1e12 if a.peak_tflops else measured
        return {"dtype": dtype, "params": params, "step_time_s": dt, "tokens_per_s": tps,
                "achieved_tflops": tps * fpt / 1e12, "peak_tflops_per_device": peak / 1e12,
                "matmul_shape": list(shape), "mfu": mfu(tps, fpt, peak, 1)}  # fmt: skip

    common = {
        "framework": "torch", "device": f"{device.type}:{name}", "devices": 1,
        "threads": torch.get_num_threads(), "flops_per_token": fpt,
        "cpu_bf16_flags": native_bf16(cpu_flags()), "torch_cpu_capability":
        torch.backends.cpu.get_cpu_capability(), "precision": chosen.to_dict(),
    }  # fmt: skip
    if not a.compare:
        summary = {**common, **run(chosen.dtype)}
        print(json.dumps(summary))
        m = summary["mfu"]
        # The summary line the tests parse.
        print(f"ratio: mfu = {m:.4g}  (tokens/s {summary['tokens_per_s']:.0f}, {chosen.dtype})")
        return
    runs = {dtype: run(dtype) for dtype in ("fp32", "bf16")}
    ratio = runs["bf16"]["step_time_s"] / runs["fp32"]["step_time_s"]
    print(json.dumps({**common, "runs": runs, "bf16_over_fp32_step_time": ratio}))
    print(
        f"ratio: bf16/fp32 step time = {ratio:.4g}  (MFU fp32 {runs['fp32']['mfu']:.1%} vs "
        f"bf16 {runs['bf16']['mfu']:.1%}; auto picks {chosen.dtype}: {chosen.reason})"
    )


if __name__ == "__main__":
    main()
