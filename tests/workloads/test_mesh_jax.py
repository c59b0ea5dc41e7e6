"""The JAX trainer's mesh (workloads/mesh_jax.py) on 8 emulated host devices: a (data 2, fsdp 4)
mesh computes the unsharded program's loss over a few steps, every device holds a quarter of
each sharded parameter and of its optimizer state, the trainer's stepper builds that mesh from
its arguments and checkpoints the whole state; (data 2, fsdp 2, tensor 2) also keeps the loss.
Across two processes joined by ``jax.distributed`` (2 host devices each, fsdp over all 4) the
stepper gives the unsharded loss and gathers its shards for rank 0's checkpoint.

JAX reads ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` when its CPU backend starts,
which in the test process has already happened (one device), so the check runs in a fresh
Python process and prints one JSON line the tests read.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

CHECK = r"""
import json, sys, tempfile
import jax, jax.numpy as jnp, numpy as np
from contract.args.train_lm_jax import TrainLmJaxArgs
from contract.mesh import mesh_shape
from workloads import mesh_jax as MJ, model_jax as M
from workloads.train_lm_jax import build_stepper
from workloads.precision import Precision

ARGS = {"d_model": 32, "n_layers": 1, "n_heads": 4, "context_length": 16, "steps": 10,
        "warmup": 1, "lr": 1e-2, "muon_lr": 0.02, "ns_dtype": "float32", "batch_size": 8,
        "parallelism": "fsdp", "shard_degree": 4, "compute_dtype": "float32"}
args = TrainLmJaxArgs.parse(ARGS)
cfg = M.ModelConfig(d_model=32, n_layers=1, n_heads=4, context_length=16)
# the stepper's optimizer (equal arguments: the same object, so the step compiles once)
opt = M.make_optimizer(args.lr, args.steps, args.warmup, args.grad_clip, optimizer=args.optimizer,
                       muon_lr=args.muon_lr, ns_dtype=args.ns_dtype)
host = M.init_params(cfg, args.seed)
state0 = jax.tree_util.tree_map(np.asarray, opt.init(host))
rng = np.random.default_rng(0)
batches = [rng.integers(0, 256, (8, 17)).astype(np.int32) for _ in range(3)]

def run(mesh, placer):
    p, s = placer(host, mesh), placer(state0, mesh)
    step = M.make_train_step(cfg, opt, mesh, jnp.float32)
    losses = []
    for b in batches:
        p, s, loss = step(p, s, M.shard_batch(b, mesh))
        losses.append(float(loss))
    return p, s, losses

def layout(tree):
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        out[M._path_name(path)] = {
            "size": int(leaf.size),
            "devices": sorted(str(s.device) for s in leaf.addressable_shards),
            "shard_sizes": sorted({int(s.data.size) for s in leaf.addressable_shards}),
            "spec": [a for a in leaf.sharding.spec],
        }
    return out

_, _, unsharded = run(M.data_mesh(jax.devices()[:1]), M.replicate)
shape = mesh_shape(8, parallelism="fsdp", shard_degree=4)
p, s, sharded = run(MJ.make_mesh(shape), MJ.place)
p_host = M.to_host(p)
_, _, tensor = run(MJ.make_mesh(mesh_shape(8, parallelism="fsdp", shard_degree=2, tensor=2,
                                           n_heads=4)), MJ.place)

stepper, _, _ = build_stepper(args, None, Precision("fp32", "test"))
stepped = [stepper.step(b)[0] for b in batches]
with tempfile.TemporaryDirectory() as d:
    stepper.gather()
    path = stepper.save(d + "/ckpt", step=3, first_loss=stepped[0])
    _, saved, _, saved_opt = M.load_checkpoint(path, opt, "muon")
saved_host = M.to_host(saved)

# parallelism auto at d_model 256 (3.2M parameters): a replica fits an 8 GB device with margin,
# so data 8; on an emulated device of 2.2 GB (0.04 GB usable after the CPU reserve) the
# estimate shards over the smallest fsdp degree that fits with margin, 4
from workloads.train_lm_jax import run_mesh_shape
def auto_mesh(**extra):
    a = TrainLmJaxArgs.parse({**{k: v for k, v in ARGS.items() if k != "shard_degree"},
                              "d_model": 256, "n_layers": 4, "parallelism": "auto", **extra})
    c = M.ModelConfig(d_model=256, n_layers=4, n_heads=4, context_length=16)
    return dict(zip(("data", "fsdp", "tensor"), run_mesh_shape(a, c, "fp32").shape))

print(json.dumps({
    "auto_mesh": auto_mesh(device_memory_gb=8), "auto_mesh_small_device": auto_mesh(device_memory_gb=2.2),
    "devices": jax.device_count(),
    "mesh": dict(stepper.mesh.shape),
    "metrics": {k: v for k, v in stepper.extra_metrics(1.0).items()
                if k in ("parallelism", "mesh", "param_bytes", "devices")},
    "full_param_bytes": int(sum(a.nbytes for a in p_host.values())),
    "unsharded": unsharded, "sharded": sharded, "tensor": tensor, "stepper": stepped,
    "params": layout(p), "opt_state": layout(s),
    "max_param_diff": max(float(np.max(np.abs(p_host[k] - saved_host[k]))) for k in p_host),
    "checkpoint_opt_leaves": len(jax.tree_util.tree_leaves(saved_opt)),
}))
"""

TWO_PROCESSES = r"""
import json, sys, tempfile
rank, port = int(sys.argv[1]), sys.argv[2]
import jax
jax.distributed.initialize(f"127.0.0.1:{port}", 2, rank)
import jax.numpy as jnp, numpy as np
from contract.args.train_lm_jax import TrainLmJaxArgs
from workloads import model_jax as M
from workloads.train_lm_jax import build_stepper
from workloads.precision import Precision

args = TrainLmJaxArgs.parse({
    "d_model": 32, "n_layers": 1, "n_heads": 4, "context_length": 16, "steps": 10, "warmup": 1,
    "lr": 1e-2, "muon_lr": 0.02, "ns_dtype": "float32", "batch_size": 4,
    "parallelism": "fsdp", "compute_dtype": "float32"})
rng = np.random.default_rng(0)
batches = [rng.integers(0, 256, (8, 17)).astype(np.int32) for _ in range(2)]
stepper, _, _ = build_stepper(args, None, Precision("fp32", "test"))
losses = [stepper.step(b[4 * rank : 4 * rank + 4])[0] for b in batches]  # this worker's rows
stepper.gather()  # every rank: the collectives
out = {"rank": rank, "losses": losses, "mesh": dict(stepper.mesh.shape)}
if rank == 0:
    with tempfile.TemporaryDirectory() as d:
        _, saved, _, _ = M.load_checkpoint(stepper.save(d + "/c", step=2, first_loss=losses[0]))
    opt = M.make_optimizer(args.lr, args.steps, args.warmup, args.grad_clip,
                           muon_lr=args.muon_lr, ns_dtype="float32")
    host = M.init_params(stepper.cfg, 0)
    mesh = M.data_mesh(jax.local_devices()[:1])  # the unsharded program on one device
    p = M.replicate(host, mesh)
    s = M.replicate(jax.tree_util.tree_map(np.asarray, opt.init(host)), mesh)
    step = M.make_train_step(stepper.cfg, opt, mesh, jnp.float32)
    out["unsharded"] = []
    for b in batches:
        p, s, loss = step(p, s, M.shard_batch(b, mesh))
        out["unsharded"].append(float(loss))
    ph, sh = M.to_host(p), M.to_host(saved)
    out["max_param_diff"] = max(float(np.abs(ph[k] - sh[k]).max()) for k in ph)
print(json.dumps(out), flush=True)
jax.distributed.shutdown()
"""

SHARDED = {"tok", "pos", "qkv/w", "proj/w", "mlp1/w", "mlp2/w"}


def _env(devices: int) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
    }


@functools.cache
def _check() -> dict:
    env = _env(8)
    proc = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _param_of(name: str) -> str | None:
    return next((s for s in SHARDED if name == s or name.endswith("/" + s)), None)


def test_a_data_2_by_fsdp_4_mesh_gives_the_unsharded_loss() -> None:
    out = _check()
    assert out["devices"] == 8
    assert out["sharded"] == pytest.approx(out["unsharded"], rel=1e-5, abs=1e-6)
    assert out["tensor"] == pytest.approx(out["unsharded"], rel=1e-5, abs=1e-6)
    # the loss moved: three real steps, not one number repeated
    assert len(set(out["unsharded"])) == 3


def test_each_device_holds_a_quarter_of_every_sharded_parameter_and_its_optimizer_state() -> None:
    out = _check()
    seen_params, seen_state = set(), set()
    for tree, seen in ((out["params"], seen_params), (out["opt_state"], seen_state)):
        for name, leaf in tree.items():
            assert len(leaf["devices"]) == 8, name  # one shard per device
            param = _param_of(name)
            if param is None:  # LayerNorms, biases, step counts: replicated
                assert leaf["shard_sizes"] == [leaf["size"]], name
                continue
            assert "fsdp" in leaf["spec"], name
            assert leaf["shard_sizes"] == [leaf["size"] // 4], name
            seen.add(param)
    assert seen_params == SHARDED
    # Muon's momentum for the blocks' matrices, AdamW's two moments for the embeddings
    assert seen_state == SHARDED
    moments = [
        n for n in out["opt_state"] if n.endswith(("/mu/tok", "/nu/tok", "/trace/blocks/0/qkv/w"))
    ]
    assert len(moments) == 3


def test_the_stepper_builds_the_mesh_from_its_arguments_and_checkpoints_the_whole_state() -> None:
    out = _check()
    assert out["mesh"] == {"data": 2, "fsdp": 4, "tensor": 1}
    m = out["metrics"]
    assert m["parallelism"] == "fsdp" and m["mesh"] == {"data": 2, "fsdp": 4, "tensor": 1}
    # a device holds a quarter of the sharded parameters plus the replicated small ones
    assert out["full_param_bytes"] / 4 < m["param_bytes"] < out["full_param_bytes"] / 3
    assert out["stepper"] == pytest.approx(out["sharded"], rel=1e-6)
    # the checkpoint holds the whole arrays: the same parameters as the sharded run's
    assert out["max_param_diff"] < 1e-5
    assert out["checkpoint_opt_leaves"] == len(out["opt_state"])


def test_auto_shards_over_the_fsdp_axis_what_an_emulated_device_cannot_hold() -> None:
    out = _check()
    assert out["auto_mesh"] == {"data": 8, "fsdp": 1, "tensor": 1}
    assert out["auto_mesh_small_device"] == {"data": 2, "fsdp": 4, "tensor": 1}


@pytest.mark.slow  # two JAX processes, each importing and compiling (about 35 s on 2 cores)
def test_two_processes_shard_over_each_other_and_gather_for_the_checkpoint() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_PROCESSES, str(rank), port],
            cwd=ROOT,
            env=_env(2),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outs = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, (stdout + stderr)[-4000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    first, second = outs
    assert first["mesh"] == second["mesh"] == {"data": 1, "fsdp": 4, "tensor": 1}
    assert first["losses"] == second["losses"]
    assert first["losses"] == pytest.approx(first["unsharded"], rel=1e-5)
    assert first["max_param_diff"] < 1e-4  # rank 0's checkpoint: the whole, gathered arrays
