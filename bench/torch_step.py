"""Tokens/s and MFU of one PyTorch training step of the byte LM on whatever device is present.

Usage: ``python bench/torch_step.py --d-model 128 --layers 4 --heads 4 --context 256 --batch 16``.
CUDA if available (bf16 autocast, as ``workloads.model_torch.train_step`` does), else CPU
(float32, all cores). Same FLOPs formula as ``bench/jax_step.py``
(:func:`workloads.flops.flops_per_token`); peak per device from ``--peak-tflops`` or the GPU name
(``torch.cuda.get_device_name``) via :func:`contract.accelerators.peak_flops` (the catalog's figures); CPU -> MFU
null. Prints one JSON line, then ``ratio: mfu = <MFU or n/a>  (tokens/s N)``.
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
    ap.add_argument("--peak-tflops", type=float, default=None, help="per device")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import torch

    from contract.accelerators import peak_flops
    from workloads.flops import mfu
    from workloads.model_torch import GPT, ModelConfig, make_optimizer, train_step

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    cfg = ModelConfig(d_model=a.d_model, n_layers=a.layers, n_heads=a.heads,
                      context_length=a.context)  # fmt: skip
    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    opt, sched = make_optimizer(model, 1e-3, 1000, 10)
    tokens = torch.randint(0, 256, (a.batch, a.context + 1), device=device)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        train_step(model, opt, tokens, sched)
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        train_step(model, opt, tokens, sched)
    sync()
    dt = (time.perf_counter() - t0) / a.steps
    name = torch.cuda.get_device_name(0) if cuda else "cpu"
    tps = a.batch * a.context / dt
    from workloads.flops import flops_per_token

    fpt = flops_per_token(cfg.d_model, cfg.n_layers, cfg.context_length, cfg.mlp_ratio)
    peak = a.peak_tflops * 1e12 if a.peak_tflops else peak_flops(device.type, name)
    summary = {
        "framework": "torch", "device": f"{device.type}:{name}", "devices": 1,
        "dtype": "bfloat16-autocast" if cuda else "float32",
        "params": sum(p.numel() for p in model.parameters()), "flops_per_token": fpt,
        "step_time_s": dt, "tokens_per_s": tps, "achieved_tflops": tps * fpt / 1e12,
        "peak_tflops_per_device": peak / 1e12 if peak else None,
        "mfu": mfu(tps, fpt, peak, 1), "threads": torch.get_num_threads(),
    }  # fmt: skip
    print(json.dumps(summary))
    # The summary line the tests parse: MFU where the device's peak is known, else n/a.
    m = summary["mfu"]
    print(f"ratio: mfu = {'n/a' if m is None else f'{m:.4g}'}  (tokens/s {tps:.0f})")


if __name__ == "__main__":
    main()
