"""Measured scaling on the local cluster: each trainer with 1 and 2 workers at the same global
batch, and ``prepare`` on 1 and 2 Ray nodes.

    python bench/scaling.py [--steps 40] [--rounds 3] [--trainers torch,jax,tf]
                            [--batch-size 32] [--data DIR] [--smoke]

A two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head and one worker
node, ``--cpus-per-node`` CPUs each, the shape of ``raygke local up``'s default) is started
once; cluster start-up is excluded.

* Training: for each trainer registered (``train_lm`` = torch, ``train_lm_jax`` = jax,
  ``train_lm_tf`` = tf when present in :mod:`contract.registry`), ``main`` is run with
  ``num_workers`` 1 (``batch_size`` B) and 2 (``batch_size`` B/2 each: the same global batch),
  ``cpus_per_worker`` = ``--cpus-per-node`` (so 2 workers land on the two nodes) and one torch
  thread per CPU. The figure is the trainer's own ``tokens_per_s`` (global tokens over the
  steady-state step time, first step excluded: :mod:`workloads.train_loop`), so worker-group
  start-up and checkpointing are outside it. Efficiency = tokens/s(2) / (2 x tokens/s(1)).
* Preparation: ``workloads.prepare.main`` on the corpus (default: the standard library's
  ``*.py``) into a fresh folder, wall time; the worker node is removed for the 1-node runs and
  added back for the 2-node runs, and Ray Data is limited to ``nodes x --cpus-per-node`` CPUs
  (``DataContext.execution_options.resource_limits``). Efficiency = rows/s(2) / (2 x rows/s(1)).

Each node advertises ``--cpus-per-node`` + 1 logical CPUs: the spare one runs Ray Data's read
tasks of the training split while every worker holds its CPUs (without it 2 workers on 2
one-CPU nodes leave the streaming read unschedulable and the run hangs).

The 1- and 2-unit runs alternate over ``--rounds`` rounds (so that drift in the machine's load
hits both alike; training: 1 first in even rounds, 2 first in odd ones; preparation: 2 nodes
first in even rounds, as the cluster starts with its worker node, which then is removed and added
back once per two rounds, not twice); medians are reported.
Model: ``--d-model``/``--n-layers`` (default: the train_lm defaults), on a random-byte dataset
in prepare's row schema (the step's cost does not depend on the bytes).

``--smoke``: torch only, a tiny model, 3 steps, 1 round, this repo's ``workloads/`` sources as
the corpus (Ray start-up dominates; run by the tests).

Last line: ``ratio: torch 2-worker efficiency = E  (...)`` with the other trainers' and
prepare's efficiencies after it. The brief's claims: 0.8-0.95 x M for training on M workers,
0.7-0.9 x N for preparation on N nodes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SMOKE = {
    "steps": 3,
    "rounds": 1,
    "batch_size": 4,
    "d_model": 32,
    "n_layers": 1,
    "n_heads": 2,
    "context_length": 32,
    "trainers": "torch",
}


def alternate(rounds: int, one: Callable[[int], float], two: Callable[[int], float]):
    """Run ``one`` and ``two`` ``rounds`` times each, alternating which goes first; their
    results as two lists."""
    a: list[float] = []
    b: list[float] = []
    for r in range(rounds):
        order = ((one, a), (two, b)) if r % 2 == 0 else ((two, b), (one, a))
        for fn, out in order:
            out.append(fn(r))
    return a, b


def train_tps(workload: str, cfg: dict[str, Any], workers: int, name: str) -> float:
    """Tokens/s (global, steady state) that ``workload``'s ``main`` reports for one fresh run
    with ``workers`` workers and ``batch_size // workers`` rows each."""
    from contract.registry import get_workload

    w = get_workload(workload)
    run = {**cfg, "num_workers": workers, "batch_size": cfg["batch_size"] // workers, "name": name}
    run = {k: v for k, v in run.items() if k in w.args.names()}
    out = importlib.import_module(w.module).main(run)
    return float(out["tokens_per_s"])


def prepare_rows_per_s(data: str, out: str, context_length: int) -> float:
    """Rows/s of one ``workloads.prepare.main`` run into the fresh folder ``out`` (wall time)."""
    from workloads.prepare import main

    t0 = time.perf_counter()
    result = main({"data": data, "dataset": out, "context_length": context_length})
    return float(result["rows"]) / (time.perf_counter() - t0)


def _retry(fn: Callable[[], Any], tries: int = 3) -> Any:
    """``fn()``, retried: Ray waits a fixed 30 s for a new raylet to register
    (ray/_private/node.py ``raylet_start_wait_time_s``), too short on a busy 2-core machine."""
    for i in range(tries):
        try:
            return fn()
        except Exception as e:  # Ray raises a bare Exception ("timed out during startup")
            if i == tries - 1 or "timed out during startup" not in str(e):
                raise
            print(f"node start timed out ({e}); retrying", file=sys.stderr)
    return None


def start_cluster(cluster_cls: Any, cpus: int) -> Any:
    """A head node with ``cpus`` CPUs, its dashboard on a free 127.0.0.1 port (8265 may belong to
    another Ray instance on this machine), found by its processes through a private
    ``RAY_TMPDIR`` (why: :func:`workloads.common.start_local_ray`)."""
    from workloads.common import free_port, private_ray_tmpdir, publish_address

    tmp = private_ray_tmpdir()
    head = {"num_cpus": cpus, "include_dashboard": True, "dashboard_port": free_port()}
    cluster = _retry(lambda: cluster_cls(initialize_head=True, head_node_args=head))
    publish_address(tmp, cluster.address)
    return cluster


def add_node(cluster: Any, cpus: int) -> Any:
    """One more node with ``cpus`` CPUs, once it has registered."""
    node = _retry(lambda: cluster.add_node(num_cpus=cpus))
    cluster.wait_for_nodes()
    return node


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32, help="global batch (rows per step)")
    p.add_argument("--cpus-per-node", type=int, default=1)
    p.add_argument(
        "--trainers",
        default="",
        help="tune names of registered trainers (contract.registry); default: every one",
    )
    p.add_argument("--data", default=None, help="prepare's corpus (default: stdlib sources)")
    p.add_argument("--d-model", type=int, default=None)
    p.add_argument("--n-layers", type=int, default=None)
    p.add_argument("--n-heads", type=int, default=None)
    p.add_argument("--context-length", type=int, default=256)
    p.add_argument("--smoke", action="store_true", help="torch only, tiny model, 1 round")
    args = p.parse_args(argv)
    if args.smoke:
        for k, v in SMOKE.items():
            setattr(args, k, v)
        args.data = args.data or os.path.join(os.path.dirname(sys.path[0]), "workloads")

    import logging

    import ray
    from ray.cluster_utils import Cluster
    from train_overhead import write_random_dataset

    from contract.registry import tune_trainers

    logging.getLogger("ray").setLevel(logging.ERROR)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ.setdefault("RAY_TRAIN_V2_ENABLED", "1")
    # the trainers by their registry tune names (contract.registry: torch, jax, tf, ...)
    by_name = tune_trainers()
    trainers = [t for t in (args.trainers or ",".join(by_name)).split(",") if t in by_name]
    n = args.cpus_per_node
    # one logical CPU more than the workers take: Ray Data's read tasks need a CPU while every
    # worker holds its own (2 workers on 2 one-CPU nodes would leave the read unschedulable)
    cluster = start_cluster(Cluster, n + 1)
    worker = add_node(cluster, n + 1)
    ray.init(address=cluster.address, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    train: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        L = args.context_length
        dataset = write_random_dataset(f"{tmp}/dataset", 4 * args.steps * args.batch_size, L)
        cfg = {
            "dataset": dataset,
            "storage_path": f"{tmp}/runs",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "checkpoint_every": 0,
            "log_every": args.steps,
            "max_failures": 0,
            "cpus_per_worker": float(n),
            "torch_threads": n,
            "context_length": L,
        }
        for key in ("d_model", "n_layers", "n_heads"):
            if getattr(args, key) is not None:
                cfg[key] = getattr(args, key)
        for t in trainers:
            wl = by_name[t]
            train[t] = alternate(
                args.rounds,
                lambda r, wl=wl, t=t: train_tps(wl, cfg, 1, f"{t}-1-{r}"),
                lambda r, wl=wl, t=t: train_tps(wl, cfg, 2, f"{t}-2-{r}"),
            )

        data = args.data or os.path.dirname(os.__file__)
        state = {"worker": worker}

        def prep(nodes: int, r: int) -> float:
            if nodes == 1 and state["worker"] is not None:
                cluster.remove_node(state["worker"])
                state["worker"] = None
            if nodes == 2 and state["worker"] is None:
                state["worker"] = add_node(cluster, n + 1)
            # prepare gets the CPUs of ``nodes`` nodes as the workers would (n each)
            limits = ray.data.DataContext.get_current().execution_options.resource_limits
            ray.data.DataContext.get_current().execution_options.resource_limits = limits.copy(
                cpu=nodes * n
            )
            return prepare_rows_per_s(data, f"{tmp}/prep-{nodes}-{r}", L)

        # 2 nodes first: the worker node is up now (one node change fewer than 1 first)
        two_nodes, one_node = alternate(args.rounds, lambda r: prep(2, r), lambda r: prep(1, r))
        prep_runs = (one_node, two_nodes)
        ray.shutdown()
        cluster.shutdown()

    def eff(runs: tuple[list[float], list[float]]) -> tuple[float, float, float]:
        one, two = statistics.median(runs[0]), statistics.median(runs[1])
        return one, two, two / (2 * one)

    print(
        f"2 Ray nodes x {n} CPU; global batch {args.batch_size}, {args.steps} steps, context {L}; "
        f"medians of {args.rounds} alternating rounds"
    )
    print(f"{'run':<22}{'1 unit':>12}{'2 units':>12}{'efficiency':>12}   all rounds (1 | 2)")
    effs = {}
    for label, runs, unit in [
        *((f"{t} (workers)", train[t], "tokens/s") for t in trainers),
        ("prepare (nodes)", prep_runs, "rows/s"),
    ]:
        one, two, e = eff(runs)
        effs[label.split()[0]] = e
        all_runs = " ".join(f"{x:.0f}" for x in runs[0]) + " | "
        all_runs += " ".join(f"{x:.0f}" for x in runs[1])
        print(f"{label:<22}{one:>12.0f}{two:>12.0f}{e:>12.2f}   {all_runs} ({unit})")
    head = trainers[0] if trainers else "prepare"
    rest = "; ".join(f"{k} {v:.2f}" for k, v in effs.items() if k != head)
    print(
        f"ratio: {head} 2-worker efficiency = {effs[head]:.3f}  ({rest}; efficiency = "
        "throughput(2) / (2 x throughput(1)); brief: training 0.8-0.95, prepare 0.7-0.9)"
    )


if __name__ == "__main__":
    main()
