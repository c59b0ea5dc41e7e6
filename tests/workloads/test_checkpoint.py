"""Checkpoint format: atomic write, manifest verification, newest-valid scan (no Ray)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from workloads.checkpoint import (
    MANIFEST,
    CheckpointError,
    latest_valid_checkpoint,
    verify_checkpoint,
    write_checkpoint,
)


def _flip_byte(path: Path, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_roundtrip_and_no_temp_left(tmp_path: Path) -> None:
    p = write_checkpoint(tmp_path / "checkpoint_1", {"a.bin": b"abc", "d/b.txt": b"x"}, {"step": 1})
    assert verify_checkpoint(p) == {"step": 1}
    assert sorted(x.name for x in tmp_path.iterdir()) == ["checkpoint_1"]
    assert (p / "d/b.txt").read_bytes() == b"x"


def test_writer_callback(tmp_path: Path) -> None:
    p = write_checkpoint(tmp_path / "c", lambda d: (d / "w").write_bytes(b"1"), {"step": 3})
    assert verify_checkpoint(p)["step"] == 3


def test_flipped_byte_is_refused_naming_the_file(tmp_path: Path) -> None:
    p = write_checkpoint(tmp_path / "c", {"model.pt": b"0123456789"}, {"step": 1})
    _flip_byte(p / "model.pt", 4)
    with pytest.raises(CheckpointError, match=r"model\.pt.*sha256"):
        verify_checkpoint(p)


def test_missing_manifest_or_file_is_refused(tmp_path: Path) -> None:
    p = write_checkpoint(tmp_path / "c", {"model.pt": b"x", "opt.pt": b"y"}, {"step": 1})
    (p / "opt.pt").unlink()
    with pytest.raises(CheckpointError, match=r"opt\.pt.*missing"):
        verify_checkpoint(p)
    (p / MANIFEST).unlink()
    with pytest.raises(CheckpointError, match="manifest"):
        verify_checkpoint(p)


def test_latest_valid_skips_damaged_newest(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    for step in (5, 10, 15):
        write_checkpoint(
            tmp_path / f"checkpoint_{step:08d}", {"m": bytes([step]) * 8}, {"step": step}
        )
    (tmp_path / "not_a_checkpoint").mkdir()
    _flip_byte(tmp_path / "checkpoint_00000015" / "m")
    with caplog.at_level(logging.WARNING):
        found = latest_valid_checkpoint(tmp_path)
    assert found is not None
    assert found[0].name == "checkpoint_00000010"
    assert found[1]["step"] == 10
    assert "checkpoint_00000015" in caplog.text


def test_latest_valid_none_when_empty(tmp_path: Path) -> None:
    assert latest_valid_checkpoint(tmp_path / "missing") is None


def test_torch_weights_roundtrip(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from workloads.model_torch import GPT, ModelConfig, load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    model = GPT(ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=16))
    p = save_checkpoint(tmp_path / "checkpoint_00000007", model, 7)
    loaded, meta, opt_state = load_checkpoint(p)
    assert meta["step"] == 7
    assert meta["framework"] == "torch"
    assert opt_state is None
    assert loaded.cfg == model.cfg
    for (k1, v1), (k2, v2) in zip(
        model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert k1 == k2
        assert torch.equal(v1, v2)
    x = torch.randint(0, 256, (2, 16))
    assert torch.equal(model(x), loaded(x))


def test_sample_is_seeded_and_temperature_zero_is_greedy() -> None:
    import torch

    from workloads.evaluate import generate
    from workloads.lm_config import ModelConfig
    from workloads.model_torch import GPT

    torch.manual_seed(0)
    model = GPT(ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=16))
    a, b = generate(model, "def ", 40, 0.6, seed=1), generate(model, "def ", 40, 0.6, seed=1)
    assert a == b and a.startswith("def ")
    assert generate(model, "def ", 40, 0.6, seed=2) != a
    # greedy: every byte is the argmax given what came before
    ids = list(generate(model, "def ", 10, 0.0).encode("utf-8", "surrogateescape"))
    with torch.no_grad():
        logits = model(torch.tensor([ids[:-1]]))[0]
    assert logits[3:].argmax(-1).tolist() == ids[4:]


def test_the_commit_renames_locally_and_on_hns_mounts_but_writes_in_place_on_a_flat_bucket():
    from contract.storage import HNS_MOUNTS_ENV
    from workloads.checkpoint import commit_mode

    mounts = [
        ("/mnt/gcs/checkpoints", "fuse"),
        ("/mnt/gcs/datasets", "fuse.gcsfuse"),
        ("/", "overlay"),
    ]
    env = {HNS_MOUNTS_ENV: "/mnt/gcs/checkpoints"}
    assert commit_mode("/mnt/gcs/checkpoints/job/checkpoint_1", mounts, env) == "rename"
    assert commit_mode("/mnt/gcs/datasets/x/checkpoint_1", mounts, env) == "manifest"
    assert commit_mode("/mnt/gcs/checkpoints/job/checkpoint_1", mounts, {}) == "manifest"
    assert commit_mode("/tmp/run/checkpoint_1", mounts, env) == "rename"
    # a prefix of a mount point's name is not inside it
    assert commit_mode("/mnt/gcs/datasets2/c", [*mounts, ("/mnt", "ext4")], env) == "rename"


def test_an_in_place_commit_writes_the_manifest_last_and_replaces_the_old(tmp_path, monkeypatch):
    import workloads.checkpoint as ck

    monkeypatch.setattr(ck, "_mounts", lambda: [(str(tmp_path), "fuse")])
    target = tmp_path / "checkpoint_1"
    ck.write_checkpoint(target, {"a.bin": b"old", "stale.bin": b"x"}, {"step": 1})
    seen = []

    def writer(d):
        seen.append((d, (d / ck.MANIFEST).exists()))
        (d / "a.bin").write_bytes(b"new")

    out = ck.write_checkpoint(target, writer, {"step": 2})
    assert out == target and seen == [(target, False)]  # in place, no manifest while writing
    assert sorted(p.name for p in target.iterdir()) == ["a.bin", ck.MANIFEST]
    assert ck.verify_checkpoint(target) == {"step": 2}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary sibling
