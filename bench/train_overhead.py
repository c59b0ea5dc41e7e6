"""Ray Train overhead: tokens/s of train_lm under TorchTrainer (1 worker) vs. the same
``workloads.model_torch.train_step`` run bare in a plain process on the same Parquet data.

    python bench/train_overhead.py [--dataset DIR] [--steps 60] [--rounds 3] [--threads N]

Each side runs in a fresh process every round (the bare loop in a spawned process, as Ray Train
starts a new worker process per fit), with the same torch thread count
(``torch.set_num_threads(--threads)`` in the bare process, the ``torch_threads`` config key in
the Ray Train worker), the same model, batch and seed, and each skips its first step (warm-up)
in its tokens/s. Ray is started once, before the first round
(cluster start-up is excluded; each round's TorchTrainer start-up is outside its timed steps).
The two sides alternate over ``--rounds`` rounds (bare first in even rounds, Ray first in odd
ones, so drift in the machine's load hits both alike) and the medians are compared.

Without ``--dataset`` a dataset of random bytes in ``workloads.prepare``'s row schema (column
``tokens``: ``fixed_size_list<uint8>[context_length + 1]`` under ``train/``) is written to a
temporary folder: the step's cost does not depend on the bytes. ``--smoke``: tiny model,
4 steps, 1 round: one run per side (seconds of stepping; Ray start-up dominates). Target ratio >= 0.95.

On a machine shared with other jobs use ``--threads 1``: two OpenMP threads on two busy cores
swing several-fold with the load (2 threads measured ray/bare 1.57 and 2.13 here, 1 thread 0.99).

Last line: ``ratio: ray/bare = R  (median of N alternating rounds; target >= 0.95)``.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMOKE = {
    "steps": 4,
    "batch_size": 4,
    "rounds": 1,
    "d_model": 32,
    "n_layers": 1,
    "n_heads": 2,
    "context_length": 32,
    "threads": 1,
}


def write_random_dataset(path: str, rows: int, context_length: int, seed: int = 0) -> str:
    """``rows`` random-byte rows ``[context_length + 1]`` as ``<path>/train/part-00000.parquet``
    in ``workloads.prepare``'s row schema. Returns ``path``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    width = context_length + 1
    flat = np.random.default_rng(seed).integers(0, 256, rows * width, dtype=np.uint8)
    col = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.uint8()), width)
    os.makedirs(os.path.join(path, "train"), exist_ok=True)
    pq.write_table(pa.table({"tokens": col}), os.path.join(path, "train", "part-00000.parquet"))
    return path


def load_rows(dataset: str, need: int):
    """At least ``need`` rows (or all) of ``<dataset>/train/*.parquet`` in file-name order, as one
    int64 tensor ``[rows, L + 1]``; loaded up front so that no reader threads compete with the
    bare loop's steps for the cores."""
    import pyarrow.parquet as pq
    import torch

    from workloads.model_torch import arrow_to_tokens

    parts, have = [], 0
    for f in sorted(glob.glob(os.path.join(dataset, "train", "*.parquet"))):
        parts.append(arrow_to_tokens(pq.read_table(f)))
        have += len(parts[-1])
        if have >= need:
            break
    if not parts:
        raise SystemExit(f"--dataset {dataset}: no train/*.parquet files (run workloads.prepare)")
    return torch.cat(parts)


def bare(dataset: str, cfg: dict[str, Any], threads: int) -> float:
    """Tokens/s of the bare loop (``train_step`` on consecutive batches of the dataset's rows,
    loaded before the loop), first step excluded, in the compute dtype train_lm decides
    (:func:`workloads.train_lm.decide_precision`: the same rule and measurement). Meant to run
    in a fresh process, as the Ray Train worker does, so that neither side starts warm."""
    import torch

    from contract.args.train_lm import TrainLmArgs
    from workloads.model_torch import GPT, ModelConfig, make_optimizer, train_step
    from workloads.train_lm import decide_precision

    torch.set_num_threads(threads)
    precision = decide_precision(TrainLmArgs.parse(cfg), "cpu", None).dtype
    torch.manual_seed(cfg["seed"])
    rows = load_rows(dataset, cfg["steps"] * cfg["batch_size"])
    model = GPT(ModelConfig.from_config(cfg))
    opt, sched = make_optimizer(model, cfg["lr"], cfg["steps"], cfg["warmup"])
    bs = cfg["batch_size"]
    toks, secs = 0, 0.0
    for step in range(cfg["steps"]):
        i = (step * bs) % max(1, len(rows) - bs)
        tokens = rows[i : i + bs]
        t0 = time.perf_counter()
        train_step(model, opt, tokens, sched, precision=precision)
        dt = time.perf_counter() - t0
        if step > 0:
            toks += tokens.shape[0] * (tokens.shape[1] - 1)
            secs += dt
    return toks / secs


def _set_env(env: dict[str, str]) -> None:
    """Process-pool initializer: set environment variables (before torch is imported)."""
    os.environ.update(env)


def omp_num_threads(cfg: dict[str, Any]) -> str:
    """The OMP_NUM_THREADS Ray sets in the Train worker of ``cfg`` (:func:`bare_in_fresh_process`)."""
    import math

    return os.environ.get("OMP_NUM_THREADS") or str(
        max(1, math.floor(float(cfg.get("cpus_per_worker", 1))))
    )


def bare_in_fresh_process(dataset: str, cfg: dict[str, Any], threads: int) -> float:
    """:func:`bare` in a new (spawned) Python process with the ``OMP_NUM_THREADS`` that Ray gives
    a Train worker: the inherited value if set, else the worker's CPUs (``cpus_per_worker``,
    floored, at least 1; ray/_private/utils.py ``set_omp_num_threads_if_unset``). It changes
    PyTorch's CPU speed even at equal ``torch.set_num_threads`` (measured on this 2-core box:
    1 vs unset at 2 threads, +40-90% tokens/s), so both sides must start with the same value."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    omp = {"OMP_NUM_THREADS": omp_num_threads(cfg)}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=_set_env, initargs=(omp,)) as pool:
        return pool.submit(bare, dataset, cfg, threads).result()


def under_ray_train(cfg: dict[str, Any], storage: str, name: str) -> float:
    """Tokens/s that ``workloads.train_lm.main`` reports (steady-state mean, first step
    excluded) for one fresh run called ``name`` (a fresh name, so nothing is restored)."""
    from workloads import train_lm

    out = train_lm.main({**cfg, "storage_path": storage, "name": name})
    return float(out["tokens_per_s"])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=None, help="prepared dataset (default: random bytes)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (median reported)")
    p.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2, help="Ray's CPUs")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: num-cpus)")
    p.add_argument("--d-model", type=int, default=None)
    p.add_argument("--n-layers", type=int, default=None)
    p.add_argument("--n-heads", type=int, default=None)
    p.add_argument("--context-length", type=int, default=None)
    p.add_argument("--smoke", action="store_true", help="tiny model, 4 steps, 1 round")
    args = p.parse_args(argv)
    if args.smoke:
        for k, v in SMOKE.items():
            setattr(args, k, v)
    threads = args.threads or args.num_cpus

    import logging

    import ray

    from contract.registry import get_workload
    from workloads.common import start_local_ray, with_model_defaults

    logging.getLogger("ray").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = args.dataset
        cfg = {
            "dataset": dataset or f"{tmp}/dataset",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "checkpoint_every": 0,
            "max_failures": 0,
            "log_every": max(1, args.steps),
            "torch_threads": threads,
            "d_model": args.d_model,
            "n_layers": args.n_layers,
            "n_heads": args.n_heads,
            "context_length": args.context_length,
        }
        cfg = get_workload("train_lm").config({k: v for k, v in cfg.items() if v is not None})
        cfg.setdefault("warmup", 50)
        if dataset is None:
            L = args.context_length or 256
            write_random_dataset(cfg["dataset"], 2 * args.steps * args.batch_size, L)
            cfg["context_length"] = L
        cfg = with_model_defaults(cfg)

        start_local_ray(num_cpus=args.num_cpus, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        sides = {
            "bare": lambda r: bare_in_fresh_process(cfg["dataset"], cfg, threads),
            "ray": lambda r: under_ray_train(cfg, f"{tmp}/runs", f"bench-{r}"),
        }
        tps: dict[str, list[float]] = {"bare": [], "ray": []}
        for r in range(args.rounds):
            for side in ("bare", "ray") if r % 2 == 0 else ("ray", "bare"):
                tps[side].append(sides[side](r))
        ray.shutdown()

    med = {side: statistics.median(v) for side, v in tps.items()}
    print(
        f"model d_model={cfg['d_model']} n_layers={cfg['n_layers']} "
        f"context={cfg['context_length']}; batch {cfg['batch_size']}, {cfg['steps']} steps, "
        f"{threads} torch threads and OMP_NUM_THREADS={omp_num_threads(cfg)} "
        "on both sides"
    )
    print(f"{'loop':<28}{'tokens/s':>12}   all rounds")
    for side, label in (("bare", "bare (1 process)"), ("ray", "TorchTrainer (1 worker)")):
        runs = " ".join(f"{t:.0f}" for t in tps[side])
        print(f"{label:<28}{med[side]:>12.0f}   {runs}")
    print(
        f"ratio: ray/bare = {med['ray'] / med['bare']:.3f}  "
        f"(median of {args.rounds} alternating rounds; target >= 0.95)"
    )


if __name__ == "__main__":
    main()
