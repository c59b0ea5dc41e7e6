"""Sharded checkpoints (workloads/sharded_checkpoint.py, train_lm's ``sharded_checkpoints``) in
one process: the files and their manifest, an exact resume (plain and FSDP2 over a one-rank gloo
group, Muon and AdamW), a damaged shard refused, and the weights read without a process group
(evaluate, the Hugging Face export). Two workers writing their shards and a resume on one are in
tests/e2e/test_train_lm_fsdp.py."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from contract.args.base import ArgError  # noqa: E402
from contract.args.train_lm import TrainLmArgs  # noqa: E402
from workloads.precision import Precision  # noqa: E402

CPU = torch.device("cpu")
FP32 = Precision("fp32", "test")


def _args(**values: object) -> TrainLmArgs:
    return TrainLmArgs.parse(
        {
            "d_model": 32,
            "n_layers": 2,
            "n_heads": 2,
            "context_length": 16,
            "steps": 10,
            "warmup": 2,
            "ns_dtype": "float32",
            "sharded_checkpoints": True,
            **values,
        }
    )


def _batches(n: int = 4) -> list:
    gen = torch.Generator().manual_seed(1)
    return [torch.randint(0, 256, (4, 17), generator=gen) for _ in range(n)]


@pytest.fixture
def one_rank_group(tmp_path):
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("optimizer", ["muon", "adamw"])
def test_a_sharded_checkpoint_lists_every_shard_and_resumes_exactly(
    optimizer: str, tmp_path: Path
) -> None:
    from workloads.checkpoint import read_manifest, verify_checkpoint
    from workloads.train_lm import build_stepper

    args = _args(optimizer=optimizer)
    torch.manual_seed(0)
    stepper, _, _ = build_stepper(args, None, CPU, precision=FP32)
    assert stepper.saves_on_every_rank
    batches = _batches()
    for b in batches[:2]:
        stepper.step(b)
    path = stepper.save(str(tmp_path / "ckpt"), step=2, first_loss=5.5)
    files = set(read_manifest(path)["files"])
    assert {"dcp/.metadata", "dcp/__0_0.distcp", "scheduler.pt"} <= files
    assert "model.pt" not in files and not any(f.startswith("hf/") for f in files)
    meta = verify_checkpoint(path)
    assert (meta["step"], meta["sharded"], meta["framework"]) == (2, 1, "torch")
    went_on = [stepper.step(b)[0] for b in batches[2:]]
    torch.manual_seed(123)  # the resumed weights come from the checkpoint, not the seed
    resumed, start, first = build_stepper(args, str(path), CPU, precision=FP32)
    assert (start, first) == (2, 5.5)
    assert resumed.sched.last_epoch == 2
    assert [resumed.step(b)[0] for b in batches[2:]] == pytest.approx(went_on, rel=1e-6)


def test_the_last_sharded_checkpoint_holds_hf_and_the_weights_load_without_a_group(
    tmp_path: Path,
) -> None:
    from transformers import AutoModelForCausalLM

    from workloads.hf_from_checkpoint import export_checkpoint
    from workloads.model_torch import load_checkpoint
    from workloads.train_lm import build_stepper

    stepper, _, _ = build_stepper(_args(optimizer="adamw"), None, CPU, precision=FP32)
    stepper.step(_batches(1)[0])
    path = stepper.save(str(tmp_path / "ckpt"), step=1, first_loss=None, final=True)
    assert (path / "hf" / "model.safetensors").exists()
    model, meta, opt = load_checkpoint(path)
    assert meta["sharded"] == 1 and opt is None
    for name, value in stepper.model.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, msg=name)
    out = export_checkpoint(path, tmp_path / "export")
    hf = AutoModelForCausalLM.from_pretrained(out)
    torch.testing.assert_close(
        hf.state_dict()["transformer.wte.weight"], stepper.model.state_dict()["tok.weight"]
    )


def test_a_damaged_shard_is_refused_naming_it(tmp_path: Path) -> None:
    from workloads.checkpoint import CheckpointError, verify_checkpoint
    from workloads.train_lm import build_stepper

    stepper, _, _ = build_stepper(_args(), None, CPU, precision=FP32)
    path = stepper.save(str(tmp_path / "ckpt"), step=0, first_loss=None)
    shard = path / "dcp" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"__0_0\.distcp: sha256 mismatch"):
        verify_checkpoint(path)
    (path / "dcp" / ".metadata").unlink()
    with pytest.raises(CheckpointError, match=r"\.metadata: listed in manifest but missing"):
        verify_checkpoint(path)


def test_fsdp_shards_resume_into_an_unsharded_model_and_back(
    one_rank_group: None, tmp_path: Path
) -> None:
    """Saved from an FSDP2 model (DTensor shards), resumed into a plain one and into FSDP2
    again: the same next losses (DCP reads each layout's part)."""
    from workloads.fsdp import fsdp_wrap
    from workloads.train_lm import build_stepper

    args = _args()
    wrap = partial(fsdp_wrap, device=CPU, precision="fp32", degree=1, world=1)
    torch.manual_seed(0)
    stepper, _, _ = build_stepper(args, None, CPU, wrap=wrap, precision=FP32)
    assert stepper.sharded
    batches = _batches()
    for b in batches[:2]:
        stepper.step(b)
    stepper.gather()  # a no-op with sharded checkpoints: nothing is gathered
    assert stepper._full is None
    path = stepper.save(str(tmp_path / "ckpt"), step=2, first_loss=None)
    went_on = [stepper.step(b)[0] for b in batches[2:]]
    for again in (None, wrap):
        resumed, start, _ = build_stepper(args, str(path), CPU, wrap=again, precision=FP32)
        assert start == 2 and resumed.sharded == (again is not None)
        assert [resumed.step(b)[0] for b in batches[2:]] == pytest.approx(went_on, rel=1e-5)


def test_sharded_checkpoints_are_refused_for_a_fine_tuning_run() -> None:
    with pytest.raises(ArgError, match="sharded_checkpoints is for the byte-level model"):
        TrainLmArgs.parse({"sharded_checkpoints": True, "init_model": "/models/m"})
    assert TrainLmArgs.parse({}).sharded_checkpoints is False


def test_a_manifest_merges_the_entries_of_several_writers(tmp_path: Path) -> None:
    from workloads.checkpoint import file_entries, verify_checkpoint, write_manifest

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"x")
    (tmp_path / "b.bin").write_bytes(b"bb")
    write_manifest(tmp_path, file_entries(tmp_path), {"step": 3})
    assert verify_checkpoint(tmp_path) == {"step": 3}
    listed = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert set(listed) == {"a/x.bin", "b.bin"} and listed["b.bin"]["size"] == 2
