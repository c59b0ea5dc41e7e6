"""Ray Data preparation vs. a single-process loop producing identical shards.

    python bench/prepare.py [--data DIR] [--num-cpus 2]

Times ``workloads.prepare.main`` (Ray already initialised, so start-up is excluded) and a
plain loop over the same files using the same classify/window/write functions, asserts the
Parquet shards are byte-identical, and prints rows/s and the speed-up (target >= 0.8 x cores).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def single_process(data: str | None, out: str, L: int, val_fraction: float, shards: int) -> int:
    """The baseline: read, classify, group, window and write in one process. Returns rows."""
    from workloads.prepare import build_group, classify, list_corpus

    fs, base, rels, _ = list_corpus(data)
    groups: dict[str, tuple[list[str], list[bytes]]] = defaultdict(lambda: ([], []))
    for rel in rels:
        with fs.open_input_stream(f"{base}/{rel}") as f:
            blob = f.read()
        g, _why = classify(rel, blob, val_fraction, shards)
        if g:
            groups[g][0].append(rel)
            groups[g][1].append(blob)
    rows = 0
    for g, (rs, docs) in sorted(groups.items()):
        rows += build_group(fs, out, g, rs, docs, L)[0]
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="corpus (default: the stdlib sources)")
    p.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2)
    p.add_argument("--context-length", type=int, default=256)
    p.add_argument("--num-shards", type=int, default=8)
    args = p.parse_args()

    import ray

    from workloads import prepare

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        base_rows = single_process(
            args.data, f"{tmp}/base", args.context_length, 0.05, args.num_shards
        )
        t_base = time.perf_counter() - t0
        t_rays = []
        for _ in range(2):  # cold (worker processes start), then warm
            t0 = time.perf_counter()
            out = prepare.main(
                {
                    "data": args.data,
                    "dataset": f"{tmp}/ray",
                    "context_length": args.context_length,
                    "val_fraction": 0.05,
                    "num_shards": args.num_shards,
                }
            )
            t_rays.append(time.perf_counter() - t0)
        t_ray = t_rays[-1]
        ray_rows = out["rows"] + out["val_rows"]
        a = {
            q.relative_to(f"{tmp}/base"): q.read_bytes()
            for q in Path(f"{tmp}/base").rglob("*.parquet")
        }
        b = {
            q.relative_to(f"{tmp}/ray"): q.read_bytes()
            for q in Path(f"{tmp}/ray").rglob("*.parquet")
        }
        assert a == b, "Ray Data and single-process shards differ"
        assert base_rows == ray_rows
    ray.shutdown()
    print(f"{'pipeline':<24}{'rows':>10}{'seconds':>10}{'rows/s':>12}")
    print(f"{'single process':<24}{base_rows:>10}{t_base:>10.2f}{base_rows / t_base:>12.0f}")
    print(f"{'Ray Data (cold)':<24}{ray_rows:>10}{t_rays[0]:>10.2f}{ray_rows / t_rays[0]:>12.0f}")
    print(f"{'Ray Data (warm)':<24}{ray_rows:>10}{t_ray:>10.2f}{ray_rows / t_ray:>12.0f}")
    speedup = t_base / t_ray
    print(
        f"speed-up = {speedup:.2f}x on {args.num_cpus} CPUs = "
        f"{speedup / args.num_cpus:.2f} x cores (target >= 0.8 x cores)"
    )


if __name__ == "__main__":
    main()
