"""Fine-tuning a Hugging Face causal LM (workloads/hf_model.py, the init_model path of
workloads/train_lm.py): tiny GPT-2 and Llama folders built by the tests
(tests/workloads/hf_folders.py), tokenized as prepare does, trained a few steps in process (plain
and FSDP2 over a one-rank gloo group), checkpointed and loaded back with transformers."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from contract.args.base import ArgError  # noqa: E402
from contract.args.prepare import PrepareArgs  # noqa: E402
from contract.args.train_lm import TrainLmArgs  # noqa: E402
from tests.workloads.hf_folders import TEXT, make_folder  # noqa: E402
from workloads.common import InputError  # noqa: E402
from workloads.precision import Precision  # noqa: E402

CPU = torch.device("cpu")
FP32 = Precision("fp32", "test")
KINDS = ("gpt2", "llama")


@pytest.fixture(scope="module", params=KINDS)
def folder(request, tmp_path_factory) -> Path:
    return make_folder(request.param, tmp_path_factory.mktemp(request.param) / "model")


def _windows(folder: Path, context: int = 16) -> np.ndarray:
    from workloads.hf_model import load_tokenizer
    from workloads.prepare import windows

    docs = [t.encode() for t in TEXT]
    return windows(docs, context, load_tokenizer(str(folder)))


def _args(folder: Path, **values: object) -> TrainLmArgs:
    return TrainLmArgs.parse(
        {
            "init_model": str(folder),
            "context_length": 16,
            "steps": 8,
            "warmup": 1,
            "optimizer": "adamw",
            "lr": 1e-2,
            **values,
        }
    )


def test_prepare_windows_hold_the_folders_token_ids_joined_by_its_eos(folder: Path) -> None:
    from workloads.hf_model import load_tokenizer

    tok = load_tokenizer(str(folder))
    rows = _windows(folder)
    assert rows.dtype == np.int32 and rows.shape[1] == 17
    stream = [i for t in TEXT for i in [*tok.encode(t, add_special_tokens=False), tok.eos_token_id]]
    assert rows[0].tolist() == stream[:17]
    assert rows[1][0] == rows[0][16], "stride context_length: each id a target once"
    assert int(rows.max()) < len(tok) and len(tok) > 256
    assert len(stream) < len(b"".join(t.encode() for t in TEXT)), "BPE, not bytes"


def test_a_tokenized_shard_round_trips_through_parquet_into_the_trainers_batch(
    folder: Path, tmp_path: Path
) -> None:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from workloads.model_torch import arrow_to_tokens
    from workloads.prepare import write_shard

    rows = _windows(folder)
    write_shard(pafs.LocalFileSystem(), str(tmp_path / "p.parquet"), rows)
    tokens = arrow_to_tokens(pq.read_table(tmp_path / "p.parquet"))
    assert tokens.dtype == torch.int64 and tokens.tolist() == rows.tolist()


def test_fine_tuning_lowers_the_loss_changes_the_weights_and_exports_a_loadable_folder(
    folder: Path, tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workloads.hf_model import is_hf
    from workloads.train_lm import build_stepper

    args = _args(folder)
    torch.manual_seed(0)
    stepper, start, first = build_stepper(args, None, CPU, precision=FP32)
    assert is_hf(stepper.model) and (start, first) == (0, None)
    before = {k: v.clone() for k, v in stepper.model.hf.state_dict().items()}
    batch = torch.from_numpy(_windows(folder)[:8].astype(np.int64))
    losses = [stepper.step(batch)[0] for _ in range(6)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] - 0.1, losses
    path = stepper.save(str(tmp_path / "ckpt"), step=6, first_loss=losses[0], final=True)
    hf = path / "hf"
    assert (hf / "config.json").exists() and (hf / "tokenizer.json").exists()
    manifest = json.loads((path / "manifest.json").read_text())
    assert "hf/model.safetensors" in manifest["files"] and "optimizer.pt" in manifest["files"]
    assert manifest["metadata"]["framework"] == "torch-hf"
    loaded = AutoModelForCausalLM.from_pretrained(hf)
    tok = AutoTokenizer.from_pretrained(hf)
    assert tok.encode(TEXT[0]) == AutoTokenizer.from_pretrained(folder).encode(TEXT[0])
    mine = stepper.model.hf.state_dict()
    changed = 0
    for name, value in loaded.state_dict().items():
        torch.testing.assert_close(value, mine[name], msg=name)
        changed += not torch.equal(value, before[name])
    assert changed >= len(before) // 2, "the weights were trained"
    with torch.no_grad():
        logits = loaded(input_ids=batch[:, :-1]).logits
    assert logits.shape[-1] == len(tok)
    # the checkpoint resumes: step counter, weights and optimizer state
    resumed, start, first = build_stepper(args, str(path), CPU, precision=FP32)
    assert (start, first) == (6, losses[0])
    nxt = stepper.step(batch)[0]
    assert resumed.step(batch)[0] == pytest.approx(nxt, rel=1e-5)


def test_muon_takes_the_decoder_layers_matrices(folder: Path) -> None:
    from workloads.model_torch import muon_matrices
    from workloads.train_lm import build_stepper

    stepper, _, _ = build_stepper(_args(folder, optimizer="muon"), None, CPU, precision=FP32)
    names = muon_matrices(stepper.model)
    inside = {id(p) for p in stepper.model.blocks.parameters()}
    assert names and all(id(dict(stepper.model.named_parameters())[n]) in inside for n in names)
    assert not any("embed" in n or "wte" in n or "lm_head" in n for n in names)
    batch = torch.from_numpy(_windows(folder)[:4].astype(np.int64))
    assert np.isfinite(stepper.step(batch)[0])


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


def test_fsdp_shards_each_decoder_layer_and_its_gathered_checkpoint_loads(
    folder: Path, one_rank_group: None, tmp_path: Path
) -> None:
    from torch.distributed.fsdp import FSDPModule
    from transformers import AutoModelForCausalLM

    from workloads.fsdp import fsdp_wrap
    from workloads.train_lm import build_stepper

    wrap = partial(fsdp_wrap, device=CPU, precision="fp32", degree=1, world=1)
    stepper, _, _ = build_stepper(_args(folder), None, CPU, wrap=wrap, precision=FP32)
    assert stepper.sharded
    layers = list(stepper.model.blocks)
    assert len(layers) == 2 and all(isinstance(b, FSDPModule) for b in layers)
    batch = torch.from_numpy(_windows(folder)[:4].astype(np.int64))
    losses = [stepper.step(batch)[0] for _ in range(3)]
    assert all(np.isfinite(losses))
    stepper.gather()
    path = stepper.save(str(tmp_path / "ckpt"), step=3, first_loss=losses[0], final=True)
    loaded = AutoModelForCausalLM.from_pretrained(path / "hf")
    full = {k: v.full_tensor() for k, v in stepper.model.hf.state_dict().items()}
    for name, value in loaded.state_dict().items():
        torch.testing.assert_close(value, full[name], msg=name)


def test_the_tokens_of_the_dataset_must_be_the_models(folder: Path, tmp_path: Path) -> None:
    from workloads.train_lm import check_tokens

    data = tmp_path / "ds"
    data.mkdir()
    (data / "_manifest.json").write_text(json.dumps({"rows": 10}))
    with pytest.raises(InputError, match=r"holds bytes .*prepare it with tokenizer="):
        check_tokens(_args(folder, dataset=str(data)))
    check_tokens(TrainLmArgs.parse({"dataset": str(data)}))  # bytes for the byte-level model
    (data / "_manifest.json").write_text(
        json.dumps({"rows": 10, "tokenizer": str(folder), "vocab_size": 300})
    )
    check_tokens(_args(folder, dataset=str(data)))
    with pytest.raises(InputError, match="the byte-level model takes bytes: set init_model"):
        check_tokens(TrainLmArgs.parse({"dataset": str(data)}))
    (data / "_manifest.json").write_text(
        json.dumps({"rows": 10, "tokenizer": "other/model", "vocab_size": 50000})
    )
    with pytest.raises(InputError, match=r"\(50000 ids\), more than the 30\d of init_model"):
        check_tokens(_args(folder, dataset=str(data)))


def test_a_context_longer_than_the_models_positions_is_refused(folder: Path) -> None:
    from workloads.train_lm import build_stepper

    with pytest.raises(InputError, match="context_length' of workload train_lm is 65, more than"):
        build_stepper(_args(folder, context_length=65), None, CPU, precision=FP32)


def test_sources_other_than_a_folder_gs_or_a_hub_id_are_refused() -> None:
    for cls, key in ((TrainLmArgs, "init_model"), (PrepareArgs, "tokenizer")):
        with pytest.raises(ArgError, match=rf"{key}.*'s3://b/m' has scheme s3://; allowed: a"):
            cls.parse({key: "s3://b/m"})
        for ok in ("gs://bucket/models/m", "owner/name", "/models/m"):
            assert getattr(cls.parse({key: ok}), key) == ok
        assert getattr(cls.parse({}), key) is None


def test_a_missing_folder_is_one_line_and_a_hub_id_goes_to_transformers(tmp_path) -> None:
    from workloads.hf_model import local_folder

    with pytest.raises(InputError, match="is not a folder here"):
        local_folder(str(tmp_path / "nothing"))
    assert local_folder("owner/name") == "owner/name"


def test_a_gs_folder_is_copied_once_into_the_cache(folder: Path, tmp_path, monkeypatch) -> None:
    """pyarrow's local filesystem stands in for gs:// (resolve_fs picks the filesystem)."""
    import pyarrow.fs as pafs

    from workloads import hf_model

    monkeypatch.setenv(hf_model.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(hf_model, "resolve_fs", lambda uri: (pafs.LocalFileSystem(), str(folder)))
    out = hf_model.local_folder("gs://bucket/models/tiny")
    assert sorted(p.name for p in Path(out).iterdir()) == sorted(p.name for p in folder.iterdir())
    assert hf_model.local_folder("gs://bucket/models/tiny") == out
    assert hf_model.load_model("gs://bucket/models/tiny").cfg.layers == 2
