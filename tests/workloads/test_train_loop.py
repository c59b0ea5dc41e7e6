"""A dataset smaller than one batch (or empty) ends every trainer with a clear error, in bounded
time — never an endless loop of empty epochs (train_lm used to loop forever on 3 rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.args.train_lm import TrainLmArgs

TINY = {"d_model": 32, "n_layers": 1, "n_heads": 2, "steps": 3, "max_failures": 0, "seed": 0}


def _three_row_dataset(root: Path) -> Path:
    import numpy as np
    import pyarrow.fs as pafs

    from workloads.prepare import write_shard

    rows = (np.arange(3 * 33) % 251).astype(np.uint8).reshape(3, 33)
    write_shard(pafs.LocalFileSystem(), str(root / "train" / "part-00000.parquet"), rows)
    return root


class _EmptyShard:
    def iter_batches(self, **_: Any):
        return iter(())


def test_an_epoch_without_a_batch_ends_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-worker guard: a shard that yields no full batch raises instead of looping."""
    ray_train = pytest.importorskip("ray.train")
    from workloads.train_loop import DatasetTooSmall, run_loop

    monkeypatch.setattr(ray_train, "get_dataset_shard", lambda name: _EmptyShard())
    args = TrainLmArgs.parse({"steps": 5, "batch_size": 32, "dataset": "/d"})
    with pytest.raises(DatasetTooSmall, match="worker 0: its shard of dataset /d yields no batch"):
        run_loop(args, stepper=None, rank=0, world=1)  # type: ignore[arg-type]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("trainer", ["train_lm", "train_lm_jax"])
def test_both_trainers_refuse_a_three_row_dataset(
    ray_cluster, tmp_path: Path, trainer: str
) -> None:
    import importlib

    from workloads.train_loop import DatasetTooSmall

    main = importlib.import_module(f"workloads.{trainer}").main
    ds = _three_row_dataset(tmp_path / "ds")
    cfg = {**TINY, "dataset": str(ds), "storage_path": str(tmp_path / "runs"), "batch_size": 32}
    with pytest.raises(DatasetTooSmall) as e:
        main(cfg)
    assert "has 3 training rows; 1 worker(s) x batch_size 32 need at least 32" in str(e.value)
    with pytest.raises(DatasetTooSmall, match="has no training data"):
        main({**cfg, "dataset": str(tmp_path / "empty")})


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_three_rows_train_when_the_batch_fits(ray_cluster, tmp_path: Path) -> None:
    """With batch_size <= rows both trainers train on what there is (several epochs)."""
    from workloads import train_lm, train_lm_jax

    ds = _three_row_dataset(tmp_path / "ds")
    for mod in (train_lm, train_lm_jax):
        out = mod.main(
            {
                **TINY,
                "dataset": str(ds),
                "storage_path": str(tmp_path / "runs"),
                "name": mod.__name__.rsplit(".", 1)[-1],
                "batch_size": 2,
                "context_length": 32,
            }
        )
        assert out["steps"] == 3 and out["checkpoint"]
        assert Path(out["hf_model"], "model.safetensors").is_file()  # workloads/hf_export.py


class _CountedDataset:
    def __init__(self, rows: int) -> None:
        self.rows, self.counted = rows, 0

    def count(self) -> int:
        self.counted += 1
        return self.rows


@pytest.mark.parametrize("manifest_rows", [None, 40, 3])
def test_the_row_check_reads_prepares_manifest_and_counts_only_without_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, manifest_rows: int | None
) -> None:
    """``train_dataset`` takes the row count from ``_manifest.json`` (no Ray Data run of its own
    before training) and counts the dataset only when the manifest is absent; either way too few
    rows is refused with the count."""
    import json

    ray_data = pytest.importorskip("ray.data")
    from workloads.train_loop import DatasetTooSmall, train_dataset

    fake = _CountedDataset(rows=5)
    monkeypatch.setattr(ray_data, "read_parquet", lambda path: fake)
    if manifest_rows is not None:
        (tmp_path / "_manifest.json").write_text(json.dumps({"rows": manifest_rows}))
    args = TrainLmArgs.parse({"steps": 5, "batch_size": 4, "dataset": str(tmp_path)})
    rows = 5 if manifest_rows is None else manifest_rows
    if rows >= 4:
        assert train_dataset(args, num_workers=1) is fake
    with pytest.raises(DatasetTooSmall, match=f"has {rows} training rows; 20 worker"):
        train_dataset(args, num_workers=20)
    assert fake.counted == (2 if manifest_rows is None else 0)


@pytest.mark.parametrize("args_cls", ["train_lm", "train_lm_jax", "train_lm_tf"])
def test_the_context_follows_the_dataset_and_a_shorter_one_is_refused(
    tmp_path: Path, args_cls: str
) -> None:
    """Unset, ``context_length`` is the dataset's (prepare's manifest); set longer it stands (the
    model's positions cover the rows); set shorter than the rows it is refused before any worker
    starts, naming both lengths and the fixes (seen on a GPU: the first step's ValueError, three
    worker-group restarts, then Ray Train's error)."""
    import json

    from contract.registry import get_workload
    from workloads.common import InputError
    from workloads.train_loop import resolve_args

    parse = get_workload(args_cls).args.parse
    (tmp_path / "_manifest.json").write_text(json.dumps({"rows": 9, "context_length": 1024}))
    assert resolve_args(parse({"dataset": str(tmp_path)})).context_length == 1024
    assert (
        resolve_args(parse({"dataset": str(tmp_path), "context_length": 2048})).context_length
        == 2048
    )
    with pytest.raises(InputError) as e:
        resolve_args(parse({"dataset": str(tmp_path), "context_length": 256}))
    assert "'context_length' of workload" in str(e.value)
    assert "is 256, shorter than the windows" in str(e.value) and "(1024 bytes" in str(e.value)
    assert resolve_args(parse({"dataset": str(tmp_path / "none")})).context_length == 256
