"""The Hugging Face model folder a finished run writes into its last checkpoint
(workloads/hf_export.py): each of the three trainers trains a tiny model through its own stepper
and the shared loop (workloads/train_loop.run_loop, no Ray), then ``transformers`` loads
``<checkpoint>/hf`` and reproduces our forward's logits on validation rows; the byte tokenizer
maps any bytes to ids equal to the byte values and back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.checkpoint import HF_SUBDIR
from workloads.checkpoint import CheckpointError, read_manifest, verify_checkpoint
from workloads.hf_export import EOS_ID, HF_FILES, byte_to_unicode
from workloads.lm_config import ModelConfig
from workloads.prepare import SEPARATOR, windows

CTX = 32
TINY = {
    "d_model": 32,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": CTX,
    "batch_size": 4,
    "steps": 6,
    "warmup": 2,
    "lr": 1e-2,
    "optimizer": "adamw",  # compiles faster than Muon; the export does not depend on it
    "checkpoint_every": 4,  # a checkpoint at step 4 (not final) and one at step 6 (final)
    "log_every": 1000,
    "seed": 0,
}


def _docs(first: int, n: int) -> list[bytes]:
    return [
        "".join(f"def f{j}_{i}(x):\n    return x * {j} + {i}\n\n" for j in range(6)).encode()
        for i in range(first, first + n)
    ]


TRAIN_ROWS = windows(_docs(0, 6), CTX)  # uint8 [n, CTX + 1], as workloads/prepare.py cuts them
VAL_ROWS = windows(_docs(100, 2), CTX)[:6]


class _Shard:
    """Ray Data's ``iter_batches`` over fixed rows (what run_loop reads; in order, drop_last)."""

    def __init__(self, rows: np.ndarray) -> None:
        import pyarrow as pa

        flat = pa.array(rows.reshape(-1), type=pa.uint8())
        self.table = pa.table({"tokens": pa.FixedSizeListArray.from_arrays(flat, rows.shape[1])})

    def iter_batches(self, *, batch_size: int, **_: Any):
        for start in range(0, self.table.num_rows - batch_size + 1, batch_size):
            yield self.table.slice(start, batch_size)


def _train(framework: str, out: Path) -> dict[str, Path]:
    """Train TINY with ``framework``'s trainer (its tune stepper + the shared loop); the
    checkpoints it reported, by directory name."""
    import importlib

    from workloads.train_loop import run_loop

    module = {"torch": "train_lm", "jax": "train_lm_jax", "tensorflow": "train_lm_tf"}[framework]
    trainer = importlib.import_module(f"workloads.{module}")
    args_cls = {
        "torch": "contract.args.train_lm:TrainLmArgs",
        "jax": "contract.args.train_lm_jax:TrainLmJaxArgs",
        "tensorflow": "contract.args.train_lm_tf:TrainLmTfArgs",
    }[framework]
    mod, name = args_cls.split(":")
    args = getattr(importlib.import_module(mod), name).parse({**TINY, "dataset": "/unused"})
    stepper, start, first = trainer.tune_stepper(args, None, 1)
    saved: dict[str, Path] = {}

    def report(metrics: dict[str, Any], path: str | None, dir_name: str | None) -> None:
        if path is not None:
            saved[dir_name] = Path(shutil.copytree(path, out / dir_name))

    step = run_loop(
        args, stepper, rank=0, world=1, start_step=start, first_loss=first,
        shard=_Shard(TRAIN_ROWS), report=report,
    )  # fmt: skip
    assert step == TINY["steps"]
    return saved


def _our_logits(framework: str, checkpoint: Path, x: np.ndarray) -> np.ndarray:
    """Logits ``[B, T, 256]`` of the framework's own forward, from the checkpoint's weights."""
    if framework == "torch":
        import torch

        from workloads.model_torch import load_checkpoint

        model, _, _ = load_checkpoint(checkpoint)
        with torch.no_grad():
            return model.eval()(torch.from_numpy(x.astype(np.int64))).numpy()
    if framework == "jax":
        import jax

        from workloads import model_jax as M

        cfg, params, _, _ = M.load_checkpoint(checkpoint)
        # jitted: one compile instead of one per primitive (eager), as the trainer runs it
        return np.asarray(jax.jit(M.forward, static_argnums=2)(params, x.astype(np.int32), cfg))
    from workloads import model_tf as M

    meta = verify_checkpoint(checkpoint)
    model = M.TfGPT(ModelConfig(**meta["model"]))
    M.restore_into(checkpoint, model)
    return np.asarray(model(x.astype(np.int32)))


def _check_export(framework: str, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    saved = _train(framework, tmp_path)
    assert sorted(saved) == ["checkpoint_00000004", "checkpoint_00000006"]
    final, middle = saved["checkpoint_00000006"], saved["checkpoint_00000004"]
    assert not (middle / HF_SUBDIR).exists()  # only the run's last checkpoint carries it
    hf = final / HF_SUBDIR
    listed = read_manifest(final)["files"]
    assert {f"{HF_SUBDIR}/{f}" for f in HF_FILES} <= set(listed)  # covered by the manifest
    assert verify_checkpoint(final)["framework"] == framework

    model, info = AutoModelForCausalLM.from_pretrained(hf, output_loading_info=True)
    assert all(not v for v in info.values()), info  # no missing / unexpected / mismatched
    assert model.config.model_type == "gpt2" and model.dtype == torch.float32
    x = VAL_ROWS[:, :-1]
    with torch.no_grad():
        theirs = model.eval()(torch.from_numpy(x.astype(np.int64))).logits.numpy()
    ours = _our_logits(framework, final, x)
    assert theirs.shape == ours.shape == (len(x), CTX, 256)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-4)
    assert float(np.abs(ours).max()) > 0.1  # a trained model's logits, not zeros

    tok = AutoTokenizer.from_pretrained(hf)
    text = VAL_ROWS[0].tobytes().decode("utf-8", "replace")
    assert tok(text)["input_ids"] == list(text.encode())

    # damage to the exported weights is caught like damage to the framework's own files
    weights = hf / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"hf/model.safetensors: sha256 mismatch"):
        verify_checkpoint(final)


def test_torch_trainer_exports_a_gpt2_that_transformers_reproduces(tmp_path: Path) -> None:
    _check_export("torch", tmp_path)


def test_jax_trainer_exports_a_gpt2_that_transformers_reproduces(tmp_path: Path) -> None:
    _check_export("jax", tmp_path)


@pytest.mark.slow  # imports TensorFlow (tens of seconds on a busy machine)
def test_tensorflow_trainer_exports_a_gpt2_that_transformers_reproduces(tmp_path: Path) -> None:
    _check_export("tensorflow", tmp_path)


def test_greedy_generation_in_transformers_follows_our_model(tmp_path: Path) -> None:
    """``generate`` (GPT-2's KV-cache path) picks our model's argmax byte at every step and
    stops after the end-of-document byte 0."""
    import torch
    from transformers import AutoModelForCausalLM

    from workloads.model_torch import GPT, save_checkpoint

    torch.manual_seed(1)
    ours = GPT(ModelConfig(d_model=32, n_layers=2, n_heads=4, context_length=CTX)).eval()
    path = save_checkpoint(tmp_path / "ckpt", ours, step=1, hf=True)
    theirs = AutoModelForCausalLM.from_pretrained(path / HF_SUBDIR).eval()
    prompt = torch.tensor([list(b"def f(x):\n")])
    want = prompt
    with torch.no_grad():
        while want.shape[1] < CTX and (want.shape[1] == prompt.shape[1] or want[0, -1] != EOS_ID):
            nxt = ours(want)[:, -1].argmax(-1, keepdim=True)
            want = torch.cat([want, nxt], dim=1)
        got = theirs.generate(prompt, do_sample=False, max_length=CTX, pad_token_id=EOS_ID)
    assert got.tolist() == want.tolist()
    cfg = json.loads((path / HF_SUBDIR / "generation_config.json").read_text())
    assert cfg["eos_token_id"] == EOS_ID == SEPARATOR


# ------------------------------------------------------------------------------ the tokenizer


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoTokenizer

    from workloads.hf_export import tokenizer_config, tokenizer_json

    folder = tmp_path_factory.mktemp("tok")
    (folder / "tokenizer.json").write_text(tokenizer_json())
    cfg = tokenizer_config(ModelConfig(context_length=CTX))
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return AutoTokenizer.from_pretrained(folder)


def test_byte_table_is_gpt2s() -> None:
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    table = byte_to_unicode()
    assert table == bytes_to_unicode()
    assert list(table) == list(range(256))
    assert sorted(table.values()) == sorted(ByteLevel.alphabet())


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300))
def test_any_bytes_are_their_own_ids_and_decode_back(tokenizer, data: bytes) -> None:
    ids = list(data)
    inverse = {ch: b for b, ch in byte_to_unicode().items()}
    tokens = tokenizer.convert_ids_to_tokens(ids)
    assert bytes(inverse[c] for c in "".join(tokens)) == data  # lossless for any bytes
    assert tokenizer.convert_tokens_to_ids(tokens) == ids
    assert tokenizer.decode(ids) == data.decode("utf-8", "replace")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_encodes_to_its_utf8_bytes(tokenizer, text: str) -> None:
    ids = tokenizer(text)["input_ids"]
    assert ids == list(text.encode("utf-8"))
    assert tokenizer.decode(ids) == text


def test_text_that_spells_a_byte_char_is_still_its_own_bytes(tokenizer) -> None:
    """No special token steals text: 'Ā' is byte 0's character in the table, yet encodes as
    its own UTF-8 bytes; a NUL in the text is id 0."""
    assert tokenizer("Ā\x00 Ġ")["input_ids"] == [0xC4, 0x80, 0, 0x20, 0xC4, 0xA0]
    assert tokenizer.eos_token is None and tokenizer.model_max_length == CTX
