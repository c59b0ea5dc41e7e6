"""Tokens/s and MFU of sharded training steps side by side: PyTorch DDP vs FSDP2 (two processes
over gloo, or NCCL on two GPUs) and JAX data-only vs data x fsdp (host devices, or the real
ones), at a few model sizes.

Usage: ``python bench/shard_step.py [--sizes 64x2,128x4,256x4] [--context 128] [--batch 8]
[--rounds 3] [--steps 3] [--precision fp32|bf16] [--optimizer muon|adamw] [--jax-devices 2]
[--only torch|jax]``.

* PyTorch: two worker processes (this script with ``--worker torch``), one thread each on a CPU
  (``gloo``) or one GPU each (``nccl``); each builds the byte LM twice from one seed, once under
  ``DistributedDataParallel`` (what Ray Train's ``prepare_model`` wraps) and once under
  :func:`workloads.fsdp.fsdp_wrap` (FSDP2 per block and the root, the trainer's), and runs
  ``workloads.model_torch.train_step`` on ``--batch`` rows per rank.
* JAX: one process (``--worker jax``) with ``--jax-devices`` host devices
  (``XLA_FLAGS=--xla_force_host_platform_device_count``; on a GPU/TPU host its devices):
  the step of :func:`workloads.model_jax.make_train_step` on the 1-D data mesh (replicated) and
  on the trainer's ``data`` x ``fsdp`` mesh (:mod:`workloads.mesh_jax`, fsdp over every device
  when there are two or three, else over half of them), the same global batch as PyTorch's
  two ranks.

Side by side: each round times ``--steps`` steps of one mode, then of the other (the order
alternating per round, after untimed warm-up steps in the first round), so a load change on a
shared machine hits both; the median of the rounds' step times is reported. MFU is against
the matmul peak measured on this machine in every round, the best round kept
(:func:`workloads.precision.matmul_flops` on each rank's core or GPU, summed over the two
ranks; ``jnp.dot`` on one JAX device, which on a CPU runs on all of the host's cores, times the
devices on accelerators; at the size's widest matmul, in the step's dtype), and
against the datasheet peak where the catalog has one (GPUs, TPU chips:
:func:`contract.accelerators.peak_flops`; none for a CPU). FLOPs per token:
:func:`workloads.flops.flops_per_token`.

Prints one JSON line, then ``ratio: fsdp/ddp tokens/s = R  (...)`` for the largest size (R < 1:
FSDP's gathers cost more than they save at that size), with the JAX ratio in the parentheses.
``--smoke``: one tiny size, one round of 2 steps (seconds; run by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SMOKE = {"sizes": "32x1", "context": 32, "batch": 4, "rounds": 1, "steps": 2}
SMOKE_HELP = "one tiny size, one round of 2 steps (seconds; run by the tests)"


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """``64x2,128x4`` -> ``[(64, 2), (128, 4)]`` (d_model x layers)."""
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",")]  # type: ignore[misc]


def heads(d_model: int) -> int:
    return max(1, d_model // 32)


def alternate(
    rounds: int, modes: tuple[str, str], warmup, timed, peak
) -> tuple[dict[str, list[float]], float]:
    """Per mode the seconds per step of each round, and the best matmul peak: ``warmup(mode)``
    once per mode, then each round ``timed(mode)`` for both modes (the order alternating) and
    ``peak()`` (FLOP/s), so the peak is taken under the same load as the steps."""
    for m in modes:
        warmup(m)
    out: dict[str, list[float]] = {m: [] for m in modes}
    best = 0.0
    for r in range(rounds):
        for m in modes if r % 2 == 0 else modes[::-1]:
            out[m].append(timed(m))
        best = max(best, peak())
    return out, best


# ---------------------------------------------------------------------------------------------
# the workers


def torch_worker(a: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from workloads.common import set_torch_threads
    from workloads.fsdp import fsdp_wrap, local_param_bytes
    from workloads.model_torch import GPT, ModelConfig, make_optimizer, train_step
    from workloads.precision import matmul_flops, matmul_shape

    cuda = torch.cuda.is_available()
    device = torch.device("cuda", a.rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        set_torch_threads(1)
    dist.init_process_group("nccl" if cuda else "gloo", rank=a.rank, world_size=2)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    results = []
    for d, n in parse_sizes(a.sizes):
        cfg = ModelConfig(d_model=d, n_layers=n, n_heads=heads(d), context_length=a.context)
        built = {}
        for mode in ("ddp", "fsdp"):
            torch.manual_seed(0)
            model = GPT(cfg).to(device)
            if mode == "ddp":
                model = torch.nn.parallel.DistributedDataParallel(model)
            else:
                model = fsdp_wrap(model, device=device, precision=a.precision, degree=2, world=2)
            opt, sched = make_optimizer(model, 1e-3, 1000, 10, optimizer=a.optimizer)
            built[mode] = (model, opt, sched, local_param_bytes(model))
        gen = torch.Generator().manual_seed(a.rank)
        tokens = torch.randint(0, 256, (a.batch, a.context + 1), generator=gen).to(device)

        def run(mode: str, steps: int, built: dict = built, tokens=tokens) -> float:
            model, opt, sched, _ = built[mode]
            sync()
            t0 = time.perf_counter()
            for _ in range(steps):
                train_step(model, opt, tokens, sched, precision=a.precision)
            sync()
            return (time.perf_counter() - t0) / steps

        mm = matmul_shape(d, 4, a.batch, a.context)
        times, best = alternate(
            a.rounds,
            ("ddp", "fsdp"),
            lambda m: run(m, a.warmup),
            lambda m: run(m, a.steps),
            lambda mm=mm: matmul_flops(a.precision, mm, 0.5, device.type),
        )
        total = torch.tensor([best], dtype=torch.float64, device=device)
        dist.all_reduce(total)  # the two ranks' devices (cores) together
        results.append(
            {
                "size": f"{d}x{n}",
                "step_time_s": times,
                "param_bytes_per_rank": {m: built[m][3] for m in built},
                "measured_peak": float(total.item()),
            }
        )
        del built
    if a.rank == 0:
        name = torch.cuda.get_device_name(0) if cuda else "cpu"
        with open(a.out, "w") as f:
            json.dump({"device": name, "backend": dist.get_backend(), "sizes": results}, f)
    dist.destroy_process_group()


def jax_worker(a: argparse.Namespace) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from contract.mesh import mesh_shape
    from workloads import mesh_jax as MJ
    from workloads import model_jax as M
    from workloads.precision import best_rate, matmul_shape

    n_dev = jax.device_count()
    fsdp = n_dev if n_dev <= 3 else n_dev // 2
    shape = mesh_shape(n_dev, parallelism="fsdp", shard_degree=fsdp)
    meshes = {"data": M.data_mesh(), "fsdp": MJ.make_mesh(shape)}
    dtype = jnp.bfloat16 if a.precision == "bf16" else jnp.float32
    rows = 2 * a.batch  # the global batch of PyTorch's two ranks
    dot = jax.jit(jnp.dot)
    results = []
    for d, n in parse_sizes(a.sizes):
        cfg = M.ModelConfig(d_model=d, n_layers=n, n_heads=heads(d), context_length=a.context)
        opt = M.make_optimizer(1e-3, 1000, 10, optimizer=a.optimizer)
        host = M.init_params(cfg, 0)
        state0 = jax.tree_util.tree_map(np.asarray, opt.init(host))
        tokens = np.random.default_rng(0).integers(0, 256, (rows, a.context + 1)).astype(np.int32)
        live = {}
        for mode, mesh in meshes.items():
            placer = M.replicate if mode == "data" else MJ.place
            params, state = placer(host, mesh), placer(state0, mesh)
            live[mode] = [params, state, M.make_train_step(cfg, opt, mesh, dtype),
                          M.shard_batch(tokens, mesh), MJ.device_bytes(params)]  # fmt: skip

        def run(mode: str, steps: int, live: dict = live) -> float:
            entry = live[mode]
            t0 = time.perf_counter()
            for _ in range(steps):
                entry[0], entry[1], loss = entry[2](entry[0], entry[1], entry[3])
            float(loss)
            return (time.perf_counter() - t0) / steps

        m_, k_, n_ = matmul_shape(d, 4, rows, a.context)
        rng = np.random.default_rng(0)
        x = jax.device_put(rng.standard_normal((m_, k_), np.float32).astype(dtype))
        w = jax.device_put(rng.standard_normal((k_, n_), np.float32).astype(dtype))

        def measure(x=x, w=w, flops=2.0 * m_ * k_ * n_) -> float:  # jnp.dot on one device
            return best_rate(lambda: dot(x, w).block_until_ready(), flops, 0.5)

        times, peak = alternate(
            a.rounds,
            ("data", "fsdp"),
            lambda m: run(m, a.warmup),
            lambda m: run(m, a.steps),
            measure,
        )
        if jax.devices()[0].platform != "cpu":  # one device's; host devices share the cores
            peak *= n_dev
        results.append(
            {
                "size": f"{d}x{n}",
                "step_time_s": times,
                "param_bytes_per_device": {m: live[m][4] for m in live},
                "measured_peak": peak,
            }
        )
    dev = jax.devices()[0]
    with open(a.out, "w") as f:
        json.dump(
            {"device": f"{dev.platform}:{dev.device_kind}", "devices": n_dev,
             "mesh": shape.describe(), "sizes": results},
            f,
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the driver


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker_args(a: argparse.Namespace) -> list[str]:
    keys = ("sizes", "context", "batch", "rounds", "steps", "warmup", "precision", "optimizer")
    return [x for k in keys for x in (f"--{k}", str(getattr(a, k)))]


def run_torch(a: argparse.Namespace, tmp: str) -> dict:
    out = os.path.join(tmp, "torch.json")
    env = {**os.environ, "PYTHONPATH": ROOT, "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(_free_port())}  # fmt: skip
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                "torch",
                "--rank",
                str(r),
                "--out",
                out,
                *_worker_args(a),
            ],
            env=env,
        )
        for r in (0, 1)
    ]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"torch workers exited {codes}")
    with open(out) as f:
        return json.load(f)


def run_jax(a: argparse.Namespace, tmp: str) -> dict:
    out = os.path.join(tmp, "jax.json")
    env = {**os.environ, "PYTHONPATH": ROOT}
    if not a.jax_accelerators:
        env["JAX_PLATFORMS"] = "cpu"
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={a.jax_devices}"
    cmd = [sys.executable, __file__, "--worker", "jax", "--out", out, *_worker_args(a)]
    subprocess.run(cmd, env=env, check=True)
    with open(out) as f:
        return json.load(f)


def summarise(
    sizes: list[dict], modes: tuple[str, str], fpt, datasheet, tokens, devices: int
) -> None:
    """Add tokens/s and both MFUs per mode (median step time of the rounds) to each size."""
    from workloads.flops import mfu

    for s in sizes:
        d, n = (int(x) for x in s["size"].split("x"))
        per = {}
        for m in modes:
            t = statistics.median(s["step_time_s"][m])
            tps = tokens / t
            measured = s["measured_peak"]
            per[m] = {
                "median_step_time_s": t,
                "tokens_per_s": tps,
                "achieved_tflops": tps * fpt(d, n) / 1e12,
                "mfu_measured_peak": mfu(tps, fpt(d, n), measured, 1),
                "mfu_datasheet": mfu(tps, fpt(d, n), datasheet, devices) if datasheet else None,
            }
        s["modes"] = per
        s[f"{modes[1]}_over_{modes[0]}_tokens_per_s"] = (
            per[modes[1]]["tokens_per_s"] / per[modes[0]]["tokens_per_s"]
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64x2,128x4,256x4", help="d_model x layers, comma list")
    for k, v in (("--context", 128), ("--batch", 8), ("--rounds", 3), ("--steps", 3),
                 ("--warmup", 1), ("--jax-devices", 2), ("--rank", 0)):  # fmt: skip
        ap.add_argument(k, type=int, default=v)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--optimizer", choices=("muon", "adamw"), default="muon")
    ap.add_argument("--only", choices=("torch", "jax"), default=None)
    ap.add_argument("--jax-accelerators", action="store_true", help="JAX on its own devices")
    ap.add_argument("--worker", choices=("torch", "jax"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)
    if a.worker == "torch":
        return torch_worker(a)
    if a.worker == "jax":
        return jax_worker(a)

    from contract.accelerators import peak_flops
    from workloads.flops import flops_per_token
    from workloads.precision import cpu_flags, native_bf16

    def fpt(d: int, n: int) -> float:
        return flops_per_token(d, n, a.context)

    tokens = 2 * a.batch * a.context  # per step, both ranks / all JAX devices
    summary: dict = {
        "cpu": _cpu_name(), "cpu_bf16_flags": native_bf16(cpu_flags()),
        "context": a.context, "rows_per_step": 2 * a.batch, "precision": a.precision,
        "optimizer": a.optimizer, "rounds": a.rounds, "steps_per_round": a.steps,
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        if a.only in (None, "torch"):
            t = run_torch(a, tmp)
            datasheet = peak_flops("cuda", t["device"]) if t["device"] != "cpu" else None

            summarise(t["sizes"], ("ddp", "fsdp"), fpt, datasheet, tokens, 2)
            summary["torch"] = t
        if a.only in (None, "jax"):
            j = run_jax(a, tmp)
            platform, _, kind = j["device"].partition(":")
            datasheet = peak_flops(platform, kind)
            summarise(j["sizes"], ("data", "fsdp"), fpt, datasheet, tokens, j["devices"])
            summary["jax"] = j
    print(json.dumps(summary))
    t_ratio = summary.get("torch", {}).get("sizes", [{}])[-1].get("fsdp_over_ddp_tokens_per_s")
    j_ratio = summary.get("jax", {}).get("sizes", [{}])[-1].get("fsdp_over_data_tokens_per_s")
    j_text = "n/a" if j_ratio is None else f"{j_ratio:.4g}"
    # The summary line the tests parse.
    print(
        f"ratio: fsdp/ddp tokens/s = {'n/a' if t_ratio is None else f'{t_ratio:.4g}'}  "
        f"(torch, {a.sizes.split(',')[-1]}; jax data x fsdp / data-only = {j_text})"
    )
    return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
