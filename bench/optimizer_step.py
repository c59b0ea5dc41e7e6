"""Step time of the PyTorch trainer's two optimizers, side by side: Muon + AdamW (the default,
``workloads.model_torch.MuonAdamW``) against AdamW alone, on the byte LM at ``make local``'s
shape (d_model 128, 4 layers, 4 heads, context 256, batch 32), on the CPU in the trainers'
compute dtype (:func:`workloads.precision.decide`: bf16 autocast only where the CPU multiplies
bf16 natively and measures faster, else float32), all cores.

Usage: ``python bench/optimizer_step.py [--rounds 6 --steps 5] [--ns-dtype auto|float32|bfloat16]
[--compare-ns]``. Each round times ``--steps`` training steps (forward, backward, clip, update,
schedule) of each side, alternating which goes first; the ratio is the median of the per-round
ratios, so load that drifts between rounds cancels. Prints one JSON line (with the CPU model and
whether it has AVX-512 BF16 / AMX, from ``/proc/cpuinfo``), then
``ratio: muon/adamw step time = <median>`` (Muon's Newton-Schulz in ``--ns-dtype``; ``auto`` is
the trainers' rule, :func:`workloads.common.resolve_ns_dtype`: float32 on a CPU). With
``--compare-ns`` the two sides are Muon with Newton-Schulz in bfloat16 and in float32:
``ratio: muon-bf16/muon-fp32 step time = <median>`` (below 1 where the CPU multiplies bfloat16
fast). ``--smoke``: a tiny model, 2 rounds of 2 steps (seconds; run by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMOKE = {"d_model": 32, "layers": 1, "heads": 2, "context": 32, "batch": 4, "rounds": 2, "steps": 2}


def main() -> None:
    ap = argparse.ArgumentParser()
    for k, v in (("--d-model", 128), ("--layers", 4), ("--heads", 4), ("--context", 256),
                 ("--batch", 32), ("--rounds", 6), ("--steps", 5)):  # fmt: skip
        ap.add_argument(k, type=int, default=v)
    ap.add_argument("--ns-dtype", default="auto", choices=("auto", "float32", "bfloat16"))
    ap.add_argument("--compare-ns", action="store_true", help="Muon bf16-NS vs fp32-NS")
    ap.add_argument("--smoke", action="store_true", help="tiny model, 2 rounds of 2 steps")
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import torch

    from workloads.model_torch import GPT, ModelConfig, make_optimizer, train_step
    from workloads.precision import decide, matmul_shape

    cfg = ModelConfig(d_model=a.d_model, n_layers=a.layers, n_heads=a.heads,
                      context_length=a.context)  # fmt: skip
    # both optimizers step in the trainers' compute dtype (workloads/precision.py)
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, a.batch, cfg.context_length)
    precision = decide("auto", "cpu", shape=shape, measure_peak=False).dtype
    tokens = torch.randint(0, 256, (a.batch, a.context + 1))
    if a.compare_ns:
        sides = {"muon-bf16": ("muon", "bfloat16"), "muon-fp32": ("muon", "float32")}
    else:
        sides = {"muon": ("muon", a.ns_dtype), "adamw": ("adamw", "auto")}
    runs = {}
    for name, (optimizer, ns_dtype) in sides.items():
        torch.manual_seed(0)
        model = GPT(cfg)
        opt, sched = make_optimizer(model, 3e-3, 10_000, 10, optimizer=optimizer,
                                    ns_dtype=ns_dtype)  # fmt: skip
        train_step(model, opt, tokens, sched, precision=precision)  # allocates opt state
        runs[name] = (model, opt, sched)

    first, second = sides
    times: dict[str, list[float]] = {first: [], second: []}
    for r in range(a.rounds):
        for name in (first, second) if r % 2 == 0 else (second, first):
            model, opt, sched = runs[name]
            t0 = time.perf_counter()
            for _ in range(a.steps):
                train_step(model, opt, tokens, sched, precision=precision)
            times[name].append((time.perf_counter() - t0) / a.steps)
    ratio = statistics.median(x / y for x, y in zip(times[first], times[second], strict=True))
    ns = {n: getattr(runs[n][1], "ns_dtype", None) for n in sides}
    print(json.dumps({
        "shape": {"d_model": a.d_model, "layers": a.layers, "context": a.context, "batch": a.batch},
        "threads": torch.get_num_threads(), "cpu": cpu_model(), "ns_dtype": ns,
        "precision": precision,
        "step_s_median": {k: statistics.median(v) for k, v in times.items()},
        "rounds": a.rounds, "steps_per_round": a.steps,
    }))  # fmt: skip
    print(f"ratio: {first}/{second} step time = {ratio:.4g}")


def cpu_model() -> dict[str, object]:
    """This machine's CPU model name and its fast-bf16 flags (``/proc/cpuinfo``; Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return {"model": None}
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                  if ln.startswith("model name")), None)  # fmt: skip
    flags = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                      if ln.startswith("flags")), []))  # fmt: skip
    return {"model": model, "avx512f": "avx512f" in flags,
            "avx512_bf16": "avx512_bf16" in flags, "amx_bf16": "amx_bf16" in flags}  # fmt: skip


if __name__ == "__main__":
    main()
