"""Step time of the PyTorch trainer's two optimizers, side by side: Muon + AdamW (the default,
``workloads.model_torch.MuonAdamW``) against AdamW alone, on the byte LM at ``make local``'s
shape (d_model 128, 4 layers, 4 heads, context 256, batch 32), CPU float32, all cores.

Usage: ``python bench/optimizer_step.py [--rounds 6 --steps 5]``. Each round times ``--steps``
training steps (forward, backward, clip, update, schedule) of each optimizer, alternating which
goes first; the ratio is the median of the per-round ratios, so load that drifts between rounds
cancels. Prints one JSON line, then ``ratio: muon/adamw step time = <median>``.
``--smoke``: a tiny model, 2 rounds of 2 steps (seconds; run by the tests).
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
    ap.add_argument("--smoke", action="store_true", help="tiny model, 2 rounds of 2 steps")
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import torch

    from workloads.model_torch import GPT, ModelConfig, make_optimizer, train_step

    cfg = ModelConfig(d_model=a.d_model, n_layers=a.layers, n_heads=a.heads,
                      context_length=a.context)  # fmt: skip
    tokens = torch.randint(0, 256, (a.batch, a.context + 1))
    runs = {}
    for name in ("muon", "adamw"):
        torch.manual_seed(0)
        model = GPT(cfg)
        opt, sched = make_optimizer(model, 3e-3, 10_000, 10, optimizer=name)
        train_step(model, opt, tokens, sched)  # first step allocates the optimizer state
        runs[name] = (model, opt, sched)

    times: dict[str, list[float]] = {"muon": [], "adamw": []}
    for r in range(a.rounds):
        for name in ("muon", "adamw") if r % 2 == 0 else ("adamw", "muon"):
            model, opt, sched = runs[name]
            t0 = time.perf_counter()
            for _ in range(a.steps):
                train_step(model, opt, tokens, sched)
            times[name].append((time.perf_counter() - t0) / a.steps)
    ratio = statistics.median(m / w for m, w in zip(times["muon"], times["adamw"], strict=True))
    print(json.dumps({
        "shape": {"d_model": a.d_model, "layers": a.layers, "context": a.context, "batch": a.batch},
        "threads": torch.get_num_threads(),
        "step_s_median": {k: statistics.median(v) for k, v in times.items()},
        "rounds": a.rounds, "steps_per_round": a.steps,
    }))  # fmt: skip
    print(f"ratio: muon/adamw step time = {ratio:.4g}")


if __name__ == "__main__":
    main()
