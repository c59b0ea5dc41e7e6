"""train_lm with FSDP2 (workloads/fsdp.py) on two Ray Train workers of the session's local Ray
cluster (gloo; slow): the same losses as DDP with half the parameter bytes per rank, and a
sharded run that checkpoints (the full state gathered, the unchanged checkpoint format and its
Hugging Face folder) and resumes sharded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import json_lines

pytestmark = [pytest.mark.ray, pytest.mark.slow]

# Two workers of half a CPU each on the 2-CPU test cluster, so Ray Data's read tasks still fit.
TINY = {
    "d_model": 32,
    "n_layers": 2,
    "n_heads": 2,
    "batch_size": 8,
    "lr": 1e-2,
    "warmup": 2,
    "log_every": 1000,
    "num_workers": 2,
    "cpus_per_worker": 0.5,
    "torch_threads": 1,
    "precision": "fp32",
    "seed": 0,
    "max_failures": 0,
}


def _ddp_and_fsdp_side_by_side(config: dict[str, Any]) -> None:
    """A Ray Train worker: the same model built twice from one seed, one wrapped by Ray Train's
    prepare_model (DDP), one sharded by workloads.fsdp.fsdp_wrap, each stepped on the same
    batches (this rank's half of a fixed global batch); rank 0 writes both global mean losses
    and each rank's parameter bytes to the JSON file ``config["out"]``."""
    from functools import partial

    import ray.train
    import ray.train.torch
    import torch
    import torch.distributed as dist

    from contract.args.train_lm import TrainLmArgs
    from workloads.fsdp import fsdp_wrap
    from workloads.precision import Precision
    from workloads.train_lm import build_stepper

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.set_num_threads(1)
    out = config.pop("out")
    cpu, fp32 = torch.device("cpu"), Precision("fp32", "test")
    sharded = partial(fsdp_wrap, device=cpu, precision="fp32", degree=world, world=world)
    steppers = {}
    for optimizer in ("muon", "adamw"):
        args = TrainLmArgs.parse({**config, "optimizer": optimizer})
        for mode, wrap in (("ddp", ray.train.torch.prepare_model), ("fsdp", sharded)):
            torch.manual_seed(args.seed)
            steppers[f"{optimizer} {mode}"], _, _ = build_stepper(
                args, None, cpu, wrap=wrap, precision=fp32, devices=world, rank=rank
            )
    gen = torch.Generator().manual_seed(1)
    rows = args.batch_size
    losses: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(4):
        batch = torch.randint(0, 256, (rows * world, args.context_length + 1), generator=gen)
        mine = batch[rank * rows : (rank + 1) * rows]
        for name, stepper in steppers.items():
            loss, _ = stepper.step(mine)
            t = torch.tensor([loss])
            dist.all_reduce(t)
            losses[name].append(t.item() / world)
    if rank == 0:  # (Ray Train 2.60 keeps a result's metrics with its checkpoints only)
        found = {
            "losses": losses,
            "param_bytes": {n: s.param_bytes for n, s in steppers.items()},
            "parallelism": {n: s.parallelism for n, s in steppers.items()},
        }
        Path(out).write_text(json.dumps(found))


def test_fsdp_gives_ddps_losses_with_half_the_parameter_bytes_per_rank(
    ray_cluster: object, tmp_path: Path
) -> None:
    """One fit of two workers: Muon (Newton-Schulz on the sharded DTensor matrices) and AdamW,
    each under DDP and under FSDP2, on the same batches."""
    import ray.cloudpickle
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    ray.cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
    out = tmp_path / "side.json"
    config = {**TINY, "context_length": 16, "ns_dtype": "float32", "out": str(out)}
    TorchTrainer(
        _ddp_and_fsdp_side_by_side,
        train_loop_config=config,
        scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5}),
        run_config=RunConfig(name="side", storage_path=str(tmp_path)),
    ).fit()
    m = json.loads(out.read_text())
    for optimizer in ("muon", "adamw"):
        ddp, fsdp = f"{optimizer} ddp", f"{optimizer} fsdp"
        assert (m["parallelism"][ddp], m["parallelism"][fsdp]) == ("ddp", "fsdp")
        losses = m["losses"][ddp]
        assert len(losses) == 4 and losses[0] > 5.0  # about ln(256) untrained
        assert m["losses"][fsdp] == pytest.approx(losses, rel=1e-4, abs=1e-4), optimizer
        assert losses[-1] != losses[0]  # the optimizer steps changed the model
        assert m["param_bytes"][fsdp] * 2 == m["param_bytes"][ddp]


def test_auto_shards_a_model_a_device_cannot_hold_and_the_run_checkpoints_and_resumes_sharded(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """parallelism auto on an emulated device of 2.2 GB (0.04 GB usable after the CPU reserve,
    contract/train_fit.py): a DDP replica of d_model 256 (3.2M parameters, 0.05 GB of float32
    weights, gradients and Muon/AdamW state) does not fit it, so the run shards with FSDP2."""
    from workloads import train_lm
    from workloads.checkpoint import read_manifest, verify_checkpoint
    from workloads.model_torch import load_checkpoint

    log = tmp_path / "steps.jsonl"
    cfg = {
        **TINY,
        "dataset": str(tiny_dataset),
        "storage_path": str(tmp_path / "runs"),
        "name": "fsdp",
        "d_model": 256,
        "n_heads": 4,
        "parallelism": "auto",
        "device_memory_gb": 2.2,
        "activation_checkpointing": True,
        "steps": 4,
        "checkpoint_every": 2,
        "step_log": str(log),
    }
    first = train_lm.main(cfg)
    assert (first["steps"], first["parallelism"]) == (4, "fsdp")
    meta = verify_checkpoint(first["checkpoint"])
    assert (meta["step"], meta["parallelism"]) == (4, "fsdp")
    # the full (gathered) weights: a plain model loads them, and the HF folder is in the manifest
    model, _, opt_state = load_checkpoint(first["checkpoint"])
    full_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert first["param_bytes"] * 2 == full_bytes
    assert opt_state is not None and set(opt_state["optimizer"]) == {"muon", "adamw"}
    assert {"hf/config.json", "hf/model.safetensors"} <= set(
        read_manifest(first["checkpoint"])["files"]
    )
    second = train_lm.main({**cfg, "steps": 6})
    assert (second["steps"], second["parallelism"]) == (6, "fsdp")
    steps = [r["step"] for r in json_lines(log)]
    assert steps == [1, 2, 3, 4, 5, 6]  # resumed at 4, every step counted once
    assert verify_checkpoint(second["checkpoint"])["step"] == 6


def test_two_workers_write_their_own_shards_and_one_worker_resumes_from_them(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """Sharded checkpoints (issue 47 item 4): two FSDP2 workers each write their shard (DCP),
    Ray Train merges their folders, the manifest lists both shards; the run resumes on ONE
    worker (DCP reshards 2 -> 1), every step counted once; the Hugging Face export of the
    two-worker checkpoint loads in transformers with its weights."""
    from transformers import AutoModelForCausalLM

    from workloads import train_lm
    from workloads.checkpoint import read_manifest, verify_checkpoint
    from workloads.hf_from_checkpoint import export_checkpoint
    from workloads.model_torch import load_checkpoint

    log = tmp_path / "steps.jsonl"
    cfg = {
        **TINY,
        "dataset": str(tiny_dataset),
        "storage_path": str(tmp_path / "runs"),
        "name": "shards",
        "parallelism": "fsdp",
        "sharded_checkpoints": True,
        "steps": 4,
        "checkpoint_every": 2,
        "step_log": str(log),
    }
    first = train_lm.main(cfg)
    assert (first["steps"], first["parallelism"]) == (4, "fsdp")
    meta = verify_checkpoint(first["checkpoint"])
    assert (meta["step"], meta["sharded"]) == (4, 2)
    files = set(read_manifest(first["checkpoint"])["files"])
    assert {"dcp/.metadata", "dcp/__0_0.distcp", "dcp/__1_0.distcp", "scheduler.pt"} <= files
    assert "model.pt" not in files and "hf/model.safetensors" in files
    model, _, _ = load_checkpoint(first["checkpoint"])  # no process group: every shard read
    full_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert first["param_bytes"] * 2 == full_bytes
    hf = AutoModelForCausalLM.from_pretrained(
        export_checkpoint(first["checkpoint"], tmp_path / "export")
    )
    assert hf.state_dict()["transformer.wte.weight"].tolist() == model.tok.weight.tolist()
    second = train_lm.main({**cfg, "steps": 6, "num_workers": 1, "cpus_per_worker": 1.0})
    assert second["steps"] == 6
    steps = [r["step"] for r in json_lines(log)]
    assert steps == [1, 2, 3, 4, 5, 6]  # resumed at 4 on one worker, every step counted once
    meta = verify_checkpoint(second["checkpoint"])
    assert (meta["step"], meta["sharded"]) == (6, 1)
    assert "dcp/__1_0.distcp" not in read_manifest(second["checkpoint"])["files"]
    losses = [r["loss"] for r in json_lines(log)]
    assert all(0 < x < 6 for x in losses) and losses[-1] < losses[0]


def test_two_fsdp_workers_fine_tune_a_hugging_face_gpt2_folder(
    ray_cluster: object, tmp_path: Path
) -> None:
    """Fine-tuning (issue 47 item 3) across two workers: prepare tokenizes with the folder's
    tokenizer on Ray Data, FSDP2 shards the transformers model's decoder layers over the two
    workers (half the parameter bytes per rank), and the gathered checkpoint's hf/ loads in
    transformers."""
    from transformers import AutoModelForCausalLM

    from tests.workloads.hf_folders import make_folder
    from workloads import prepare, train_lm

    folder = make_folder("gpt2", tmp_path / "gpt2")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):
        (corpus / f"m{i}.txt").write_text(f"line {i}: the quick brown fox\n" * 80)
    ds = tmp_path / "ds"
    prepared = prepare.main(
        {
            "data": str(corpus),
            "dataset": str(ds),
            "context_length": 16,
            "num_shards": 2,
            "tokenizer": str(folder),
        }
    )
    assert prepared["rows"] >= 16
    cfg = {
        **TINY,
        "dataset": str(ds),
        "storage_path": str(tmp_path / "runs"),
        "name": "tune",
        "init_model": str(folder),
        "parallelism": "fsdp",
        "optimizer": "adamw",
        "batch_size": 4,
        "steps": 3,
        "checkpoint_every": 0,
    }
    out = train_lm.main(cfg)
    assert (out["steps"], out["parallelism"]) == (3, "fsdp")
    tuned = AutoModelForCausalLM.from_pretrained(out["hf_model"])
    full_bytes = sum(p.numel() * p.element_size() for p in tuned.parameters())
    assert out["param_bytes"] * 2 == pytest.approx(full_bytes, rel=0.02)
    start = AutoModelForCausalLM.from_pretrained(folder).state_dict()
    assert any(not (v == start[k]).all() for k, v in tuned.state_dict().items())
    assert 0 < out["last_loss"] < 10
