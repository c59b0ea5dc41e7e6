"""Ray Train overhead: tokens/s of train_lm under TorchTrainer (1 worker) vs. the same
``workloads.model_torch.train_step`` run bare in this process on the same Parquet data.

    python bench/train_overhead.py --dataset /tmp/raygke/dataset --steps 60

Both sides skip the first step (warm-up) in their tokens/s; target ratio >= 0.95.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bare(dataset: str, cfg: dict, threads: int) -> float:
    """Tokens/s of the bare loop: Parquet rows -> arrow_to_tokens -> train_step."""
    import pyarrow.parquet as pq
    import torch

    from workloads.model_torch import GPT, ModelConfig, arrow_to_tokens, make_optimizer, train_step

    torch.set_num_threads(threads)
    torch.manual_seed(cfg["seed"])
    model = GPT(ModelConfig.from_config(cfg))
    opt, sched = make_optimizer(model, cfg["lr"], cfg["steps"], cfg["warmup"])
    # Load the rows the loop needs up front (files in name order), so no reader threads
    # compete with the step for the cores.
    need = cfg["steps"] * cfg["batch_size"]
    files = sorted(glob.glob(os.path.join(dataset, "train", "*.parquet")))
    parts, have = [], 0
    for f in files:
        parts.append(arrow_to_tokens(pq.read_table(f)))
        have += len(parts[-1])
        if have >= need:
            break
    rows = torch.cat(parts)
    toks, secs = 0, 0.0
    for step in range(cfg["steps"]):
        i = (step * cfg["batch_size"]) % (len(rows) - cfg["batch_size"])
        tokens = rows[i : i + cfg["batch_size"]]
        t0 = time.perf_counter()
        train_step(model, opt, tokens, sched)
        dt = time.perf_counter() - t0
        if step > 0:
            toks += tokens.shape[0] * (tokens.shape[1] - 1)
            secs += dt
    return toks / secs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="/tmp/raygke/dataset")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()

    import ray

    from workloads import train_lm
    from workloads.common import with_model_defaults
    from workloads.registry import get_workload

    cfg = get_workload("train_lm").config(
        {
            "dataset": args.dataset,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "checkpoint_every": 0,
            "max_failures": 0,
            "log_every": 10,
        }
    )
    cfg.setdefault("warmup", 50)
    cfg = with_model_defaults({**cfg, "dataset": args.dataset})

    threads = args.num_cpus
    bare_tps = bare(args.dataset, cfg, threads)

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        out = train_lm.main({**cfg, "storage_path": tmp, "name": "bench"})
    ray.shutdown()
    ray_tps = float(out["tokens_per_s"])

    print(f"{'loop':<28}{'tokens/s':>12}")
    print(f"{'bare (1 process)':<28}{bare_tps:>12.0f}")
    print(f"{'TorchTrainer (1 worker)':<28}{ray_tps:>12.0f}")
    print(f"ratio ray/bare = {ray_tps / bare_tps:.3f}  (target >= 0.95)")


if __name__ == "__main__":
    main()
