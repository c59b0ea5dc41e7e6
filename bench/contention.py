"""Throughput of ``train_lm``'s step with and without one busy-looping process beside it, so
that losing part of a core costs about its share, not a multiple (issue 23).

The trainer side is ``workloads.train_lm``'s own stepper (``build_stepper``: the model, Muon +
AdamW, schedule, ``train_step``) on random bytes at ``make local``'s shape (d_model 128, 4
layers, context 256, batch 32), in this process, with the thread rule of a Ray Train worker
that was given ``--cpus`` CPUs (``workloads.common.cpu_threads``; default 1, the local stack's
``cpus_per_worker``), intra- and inter-op (``set_torch_threads``). ``--threads N`` forces N
threads instead (``--threads 0``: the host's CPUs, the rule before issue 23). The load is one
``python -c 'while True: pass'`` process started for a loaded round and killed after it.

Usage: ``python bench/contention.py [--rounds 6 --steps 8 --cpus 1 --threads N]``. Each round
times ``--steps`` steps quiet and ``--steps`` steps loaded, alternating which goes first, after
one untimed warm-up step each; the ratio is the median of the per-round ratios (load that drifts
between rounds cancels). Prints one JSON line, then ``ratio: loaded/quiet tokens/s = R``.
``--smoke``: a tiny model, 2 rounds of 2 steps (seconds; run by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMOKE = {"d_model": 32, "layers": 1, "heads": 2, "context": 32, "batch": 4, "rounds": 2, "steps": 2}
BUSY = "while True: pass"


def main() -> None:
    ap = argparse.ArgumentParser()
    for k, v in (("--d-model", 128), ("--layers", 4), ("--heads", 4), ("--context", 256),
                 ("--batch", 32), ("--rounds", 6), ("--steps", 8)):  # fmt: skip
        ap.add_argument(k, type=int, default=v)
    ap.add_argument("--cpus", type=float, default=1.0, help="the worker's Ray CPUs")
    ap.add_argument("--threads", type=int, default=None, help="force N threads (0 = host's)")
    ap.add_argument("--smoke", action="store_true", help="tiny model, 2 rounds of 2 steps")
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)

    import torch

    from contract.args.train_lm import TrainLmArgs
    from workloads.common import cpu_threads, host_cpus, set_torch_threads
    from workloads.train_lm import build_stepper

    threads = cpu_threads(cpus=a.cpus) if a.threads is None else a.threads or host_cpus()
    set_torch_threads(threads)
    args = TrainLmArgs.parse({"d_model": a.d_model, "n_layers": a.layers, "n_heads": a.heads,
                              "context_length": a.context, "batch_size": a.batch})  # fmt: skip
    torch.manual_seed(0)
    stepper, _, _ = build_stepper(args, None, torch.device("cpu"))
    tokens = torch.randint(0, 256, (a.batch, a.context + 1))

    def tokens_per_s() -> float:
        stepper.step(tokens)  # untimed: the other side's switch settles
        t0, n = time.perf_counter(), 0
        for _ in range(a.steps):
            n += stepper.step(tokens)[1]
        return n / (time.perf_counter() - t0)

    def loaded() -> float:
        busy = subprocess.Popen([sys.executable, "-c", BUSY])
        try:
            return tokens_per_s()
        finally:
            busy.kill()
            busy.wait()

    rates: dict[str, list[float]] = {"quiet": [], "loaded": []}
    for r in range(a.rounds):
        for side in ("quiet", "loaded") if r % 2 == 0 else ("loaded", "quiet"):
            rates[side].append(loaded() if side == "loaded" else tokens_per_s())
    ratio = statistics.median(x / q for x, q in zip(rates["loaded"], rates["quiet"], strict=True))
    print(json.dumps({
        "shape": {"d_model": a.d_model, "layers": a.layers, "context": a.context, "batch": a.batch},
        "host_cpus": host_cpus(), "ray_cpus": a.cpus, "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "tokens_per_s_median": {k: statistics.median(v) for k, v in rates.items()},
        "rounds": a.rounds, "steps_per_round": a.steps, "load_average": os.getloadavg(),
    }))  # fmt: skip
    print(f"ratio: loaded/quiet tokens/s = {ratio:.4g}")


if __name__ == "__main__":
    main()
