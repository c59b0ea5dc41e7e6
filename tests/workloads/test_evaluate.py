"""The evaluation's validation sample (workloads/evaluate.py load_validation: seeded, spread over
every validation file) and its xz baseline (xz_nats_per_byte)."""

from __future__ import annotations

import lzma
import math

import numpy as np
import pytest

pytest.importorskip("torch")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from workloads.evaluate import load_validation, xz_nats_per_byte  # noqa: E402

WIDTH = 9  # context 8 + 1


def _dataset(tmp_path, files: int = 4, rows: int = 50):
    """``files`` shards of ``rows`` rows; row r of file f holds the bytes (f, r, r, ...)."""
    val = tmp_path / "validation"
    val.mkdir(parents=True)
    for f in range(files):
        arr = np.zeros((rows, WIDTH), np.uint8)
        arr[:, 0] = f
        arr[:, 1:] = np.arange(rows, dtype=np.uint8)[:, None]
        col = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1)), WIDTH)
        pq.write_table(pa.table({"tokens": col}), val / f"part-{f:03d}.parquet")
    return str(tmp_path)


def test_sample_spreads_over_every_file_and_repeats_with_its_seed(tmp_path) -> None:
    ds = _dataset(tmp_path)
    rows = load_validation(ds, 40, seed=0)
    assert rows.shape == (40, WIDTH)
    files = rows[:, 0].tolist()
    assert set(files) == {0, 1, 2, 3}  # the first 40 rows in path order are all file 0's
    assert files == sorted(files)  # file-name order, then row order
    pairs = [(int(r[0]), int(r[1])) for r in rows]
    assert len(set(pairs)) == 40  # without replacement
    assert all(pairs[i] < pairs[i + 1] for i in range(39))
    assert torch_equal(rows, load_validation(ds, 40, seed=0))
    assert not torch_equal(rows, load_validation(ds, 40, seed=1))


def test_all_rows_when_the_sample_is_the_whole_split(tmp_path) -> None:
    ds = _dataset(tmp_path, files=2, rows=10)
    for n in (0, 20, 4096):
        rows = load_validation(ds, n)
        assert rows.shape == (20, WIDTH)
        assert rows[:10, 0].tolist() == [0] * 10 and rows[10:, 1].tolist() == list(range(10))


def test_no_validation_shard_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no validation shards under"):
        load_validation(str(tmp_path), 10)


def test_xz_figure_is_xz_9e_size_in_nats_per_byte() -> None:
    rng = np.random.default_rng(0)
    text = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, np.uint8)[: 64 * 65]
    rows = text.reshape(64, 65)
    want = lzma.compress(rows.tobytes(), preset=9 | lzma.PRESET_EXTREME)
    assert xz_nats_per_byte(rows) == pytest.approx(8 * math.log(2) * len(want) / rows.size)
    assert xz_nats_per_byte(rows) < 0.5  # repetitive text compresses well
    noise = rng.integers(0, 256, (64, 65), dtype=np.uint8)
    assert xz_nats_per_byte(noise) > 8 * math.log(2)  # random bytes do not compress (> 5.545)
    with pytest.raises(ValueError, match="no bytes"):
        xz_nats_per_byte(np.zeros((0, 65), np.uint8))


def torch_equal(a, b) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.equal(a, b))


def test_ppmd_figure_is_ppmd_order_16_size_in_nats_per_byte() -> None:
    import pyppmd

    from workloads.evaluate import ppmd_nats_per_byte

    text = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, np.uint8)[: 64 * 65]
    rows = text.reshape(64, 65)
    enc = pyppmd.Ppmd7Encoder(16, 64 << 20)
    want = enc.encode(rows.tobytes()) + enc.flush()
    assert ppmd_nats_per_byte(rows) == pytest.approx(8 * math.log(2) * len(want) / rows.size)
    # PPMd models repeated text better than xz's LZ77 + range coder
    assert ppmd_nats_per_byte(rows) < xz_nats_per_byte(rows)
    noise = np.random.default_rng(0).integers(0, 256, (64, 65), dtype=np.uint8)
    assert ppmd_nats_per_byte(noise) > 5.0  # random bytes stay near 8 ln 2 = 5.545
    with pytest.raises(ValueError, match="no bytes"):
        ppmd_nats_per_byte(np.zeros((0, 65), np.uint8))


def _model(context: int = 16):
    import torch

    from workloads.lm_config import ModelConfig
    from workloads.model_torch import GPT

    torch.manual_seed(0)
    return GPT(ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=context))


def test_the_kv_cache_sample_equals_the_full_forward_sample() -> None:
    from workloads.evaluate import generate

    model = _model(context=16)
    # 30 bytes after a 4-byte prompt: cached up to the context's 16 positions, then full passes
    for temperature, seed in ((0.0, 0), (0.8, 3)):
        cached = generate(model, "def ", 30, temperature, seed, cached=True)
        full = generate(model, "def ", 30, temperature, seed, cached=False)
        assert cached == full and len(cached.encode("utf-8", "replace")) >= 30


def test_the_kv_cache_sample_runs_under_bf16_autocast() -> None:
    from workloads.evaluate import generate

    model = _model(context=16)
    text = generate(model, "def ", 20, 0.0, 0, precision="bf16", cached=True)
    assert text.startswith("def ")


def test_evaluate_reports_the_rows_it_scored_ppmd_and_its_precision(tmp_path) -> None:
    from workloads.evaluate import main
    from workloads.model_torch import save_checkpoint

    ds = _dataset(tmp_path / "ds", files=3, rows=40)  # 120 validation rows, context 8
    ckpt = save_checkpoint(tmp_path / "ckpt", model=_model(context=8), step=3)
    out = main(
        {
            "dataset": ds,
            "checkpoint": str(ckpt),
            "max_val_rows": 50,
            "sample_bytes": 5,
            "precision": "fp32",
            "torch_threads": 1,
        }
    )
    assert out["val_rows"] == 50 and out["val_bytes"] == 50 * 8
    assert out["precision"] == "fp32" and out["step"] == 3
    assert out["val_vs_ppmd"] == pytest.approx(out["val_loss"] / out["ppmd_nats_per_byte"])
    assert out["val_vs_xz"] == pytest.approx(out["val_loss"] / out["xz_nats_per_byte"])
