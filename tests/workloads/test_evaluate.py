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
