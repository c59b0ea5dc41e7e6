"""Ray Data preparation vs. a single-process loop producing identical shards.

    python bench/prepare.py [--data DIR] [--copies K] [--num-cpus N] [--repeats R]

All three pipelines run on the same corpus, with Ray already initialised (cluster start-up is
excluded), after one untimed warm-up run of each (page cache, imports, Ray worker processes).
Then they are timed alternately ``--repeats`` times and the median of each is reported; the
Parquet shards of all three must be byte-identical. ``--copies K`` (default 4) builds the corpus
from K copies of ``--data`` (default: the standard library's ``*.py`` files, ~31 MB) under
distinct folder names, so that Ray Data's fixed cost per execution (~0.15 s on 2 CPUs) does not
dominate a half-second job; ``--copies 1`` measures the plain corpus.

The baseline is a plain loop over the same files using the same list/classify/window/write
functions; a ``multiprocessing`` pool running the same shard function shows what the machine
allows. Prints rows/s and each speed-up as ``x cores`` (target: Ray Data >= 0.8 x cores); last
line ``ratio: ray/single = S  (S/N x cores; ...)``, S = single-process median / Ray Data median.
``--smoke``: this repo's ``workloads/`` sources as the corpus, 1 copy, 2 CPUs, 1 repeat, 2 shards
(Ray start-up dominates; run by the tests).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def one_shard(job: tuple[str, str, str, list[str], int]) -> int:
    """Read one shard's files, drop non-text ones, window and write it. Returns rows."""
    import pyarrow.fs as pafs

    from workloads.prepare import build_group, text_problem

    base, out, group, rels, L = job
    fs = pafs.LocalFileSystem()
    kept, docs = [], []
    for rel in rels:
        with fs.open_input_stream(f"{base}/{rel}") as f:
            blob = f.read()
        if not text_problem(blob):
            kept.append(rel)
            docs.append(blob)
    return build_group(fs, out, group, kept, docs, L)[0]


def shard_jobs(data: str, out: str, L: int, val_fraction: float, shards: int) -> list[tuple]:
    """List the corpus and assign shards exactly as ``workloads.prepare`` does."""
    from workloads.prepare import assign_groups, list_corpus

    _fs, base, rels, _ = list_corpus(data)
    groups = assign_groups(rels, val_fraction, shards)
    return [(base, out, g, rs, L) for g, rs in sorted(groups.items())]


def single_process(data: str, out: str, L: int, val_fraction: float, shards: int) -> int:
    """The baseline: list, read, classify, group, window and write in one process. Returns rows."""
    return sum(map(one_shard, shard_jobs(data, out, L, val_fraction, shards)))


def process_pool(pool, data: str, out: str, L: int, val_fraction: float, shards: int) -> int:
    """The same shards on a ``multiprocessing`` pool of one process per CPU: what the machine
    allows with no scheduler at all, as the ceiling to read Ray Data's figure against."""
    return sum(pool.map(one_shard, shard_jobs(data, out, L, val_fraction, shards), chunksize=1))


def make_corpus(src: str, copies: int, dst: str) -> str:
    """``copies`` copies of the ``*.py`` files of ``src`` under ``dst/copy-<i>/``. Returns dst."""
    from workloads.prepare import list_corpus

    _fs, base, rels, _ = list_corpus(src)
    for i in range(copies):
        for rel in rels:
            target = Path(dst, f"copy-{i}", rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(os.path.join(base, rel), target)
    return dst


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return int(text)


SMOKE = {"copies": 1, "num_cpus": 2, "repeats": 1, "context_length": 64, "num_shards": 2}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="corpus (default: the stdlib sources)")
    p.add_argument("--copies", type=positive, default=4, help="copies of the corpus to measure on")
    p.add_argument("--num-cpus", type=positive, default=os.cpu_count() or 2)
    p.add_argument("--repeats", type=positive, default=5)
    p.add_argument("--context-length", type=int, default=256)
    p.add_argument("--num-shards", type=int, default=8)
    p.add_argument("--smoke", action="store_true", help=f"tiny corpus (workloads/), {SMOKE}")
    args = p.parse_args(argv)
    if args.smoke:
        for k, v in SMOKE.items():
            setattr(args, k, v)
        args.data = args.data or str(Path(__file__).resolve().parent.parent / "workloads")

    import logging

    import ray

    from workloads import prepare
    from workloads.prepare import default_corpus

    logging.getLogger("workloads.prepare").setLevel(logging.ERROR)  # the stdlib's non-UTF-8 files
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or default_corpus()
        if args.copies > 1:
            data = make_corpus(data, args.copies, f"{tmp}/corpus")
        L, shards = args.context_length, args.num_shards

        def run_base() -> int:
            shutil.rmtree(f"{tmp}/base", ignore_errors=True)
            return single_process(data, f"{tmp}/base", L, 0.05, shards)

        def run_pool() -> int:
            shutil.rmtree(f"{tmp}/pool", ignore_errors=True)
            return process_pool(pool, data, f"{tmp}/pool", L, 0.05, shards)

        def run_ray() -> int:
            cfg = {"data": data, "dataset": f"{tmp}/ray", "context_length": L, "num_shards": shards}
            out = prepare.main(cfg)
            return out["rows"] + out["val_rows"]

        pool = multiprocessing.get_context("spawn").Pool(args.num_cpus)
        pipelines = (
            ("single process", run_base),
            (f"process pool ({args.num_cpus})", run_pool),
            ("Ray Data", run_ray),
        )
        times: dict[str, list[float]] = defaultdict(list)
        rows: dict[str, int] = {}
        for i in range(args.repeats + 1):  # round 0 is the untimed warm-up
            for name, fn in pipelines:
                t0 = time.perf_counter()
                rows[name] = fn()
                if i:
                    times[name].append(time.perf_counter() - t0)
        pool.close()
        shards_of = {
            name: {q.relative_to(d): q.read_bytes() for q in Path(d).rglob("*.parquet")}
            for name in ("base", "pool", "ray")
            for d in [f"{tmp}/{name}"]
        }
        assert shards_of["base"] == shards_of["ray"], "Ray Data and single-process shards differ"
        assert shards_of["base"] == shards_of["pool"], "pool and single-process shards differ"
        assert len(set(rows.values())) == 1, rows
        mb = sum(len(b) for b in shards_of["base"].values()) / 1e6
    ray.shutdown()
    print(
        f"corpus: {data} ({args.copies} cop{'y' if args.copies == 1 else 'ies'}); "
        f"{rows['Ray Data']} rows, {mb:.1f} MB of Parquet; median of {args.repeats} warm runs"
    )
    print(f"{'pipeline':<22}{'rows':>10}{'seconds':>10}{'rows/s':>12}   all runs (s)")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, ts in times.items():
        runs = " ".join(f"{t:.2f}" for t in ts)
        print(
            f"{name:<22}{rows[name]:>10}{med[name]:>10.2f}{rows[name] / med[name]:>12.0f}   {runs}"
        )
    n = args.num_cpus
    for name in (f"process pool ({n})", "Ray Data"):
        speedup = med["single process"] / med[name]
        print(f"{name}: speed-up {speedup:.2f}x on {n} CPUs = {speedup / n:.2f} x cores")
    ray_vs_pool = med[f"process pool ({n})"] / med["Ray Data"]
    print(f"Ray Data / process pool = {ray_vs_pool:.2f}; target: Ray Data >= 0.8 x cores")
    speedup = med["single process"] / med["Ray Data"]
    print(f"ratio: ray/single = {speedup:.2f}  ({speedup / n:.2f} x cores; target >= 0.8 x cores)")


if __name__ == "__main__":
    main()
