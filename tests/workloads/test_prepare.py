"""prepare: idempotent, deterministic split, clear errors on bad corpora (real local Ray)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray


def _corpus(root: Path, n: int = 24) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        sub = root / f"pkg{i % 3}"
        sub.mkdir(exist_ok=True)
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(20))
        (sub / f"mod{i}.py").write_text(f"# module {i}\n{body}")
    (root / "notes.txt").write_text("a text file: taken by the default filter\n" * 50)
    return root


def _files(dataset: Path) -> dict[str, bytes]:
    return {
        p.relative_to(dataset).as_posix(): p.read_bytes()
        for p in sorted(dataset.rglob("*"))
        if p.is_file()
    }


def test_prepare_is_idempotent_and_split_is_deterministic(ray_cluster, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from workloads.prepare import classify, main

    data = _corpus(tmp_path / "corpus")
    cfg = {
        "data": str(data),
        "dataset": str(tmp_path / "ds"),
        "context_length": 32,
        "val_fraction": 0.25,
        "num_shards": 2,
    }
    first = main(dict(cfg))
    files1 = _files(tmp_path / "ds")
    second = main(dict(cfg))
    files2 = _files(tmp_path / "ds")
    assert first == second
    assert files1 == files2  # same names, same bytes: nothing duplicated or lost
    assert first["files"] == 25  # 24 modules and notes.txt
    assert first["rows"] > 0
    assert first["val_rows"] > 0
    assert not (tmp_path / "ds.tmp").exists()

    manifest = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    assert manifest["rows"] == first["rows"]
    assert manifest["val_rows"] == first["val_rows"]
    parquet = sorted(n for n in files1 if n.endswith(".parquet"))
    assert parquet == sorted(f"{g}.parquet" for g in manifest["shards"])
    rows = {s: 0 for s in ("train", "validation")}
    for name in parquet:
        t = pq.read_table(tmp_path / "ds" / name)
        assert t.column("tokens").type.list_size == 33
        rows[name.split("/")[0]] += t.num_rows
    assert rows == {"train": first["rows"], "validation": first["val_rows"]}

    # The split of a file depends only on its relative path.
    a = classify("pkg0/mod0.py", b"x = 1\n", 0.25, 2)
    assert a == classify("pkg0/mod0.py", b"completely different\n", 0.25, 2)


def test_prepare_replaces_a_stale_partial_output(ray_cluster, tmp_path: Path) -> None:
    from workloads.prepare import main

    data = _corpus(tmp_path / "corpus", n=6)
    ds = tmp_path / "ds"
    (ds / "train").mkdir(parents=True)
    (ds / "train" / "part-99999.parquet").write_bytes(b"junk from a crashed run")
    (tmp_path / "ds.tmp").mkdir()
    (tmp_path / "ds.tmp" / "half-written").write_bytes(b"x")
    main({"data": str(data), "dataset": str(ds), "context_length": 32, "num_shards": 2})
    assert not (ds / "train" / "part-99999.parquet").exists()
    assert not (tmp_path / "ds.tmp").exists()


def test_empty_corpus_is_a_clear_error(ray_cluster, tmp_path: Path) -> None:
    from workloads.prepare import CorpusError, main

    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="no files match"):
        main({"data": str(tmp_path / "empty"), "dataset": str(tmp_path / "ds")})
    (tmp_path / "empties").mkdir()
    (tmp_path / "empties" / "a.py").write_text("")
    with pytest.raises(CorpusError, match=r"no usable text files.*a\.py \(empty\)"):
        main({"data": str(tmp_path / "empties"), "dataset": str(tmp_path / "ds")})
    assert not (tmp_path / "ds").exists()


def test_explicit_binary_file_fails_naming_it(ray_cluster, tmp_path: Path) -> None:
    from workloads.prepare import CorpusError, main

    blob = tmp_path / "weights.py"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CorpusError, match=r"weights\.py.*not text"):
        main({"data": str(blob), "dataset": str(tmp_path / "ds")})
    latin = tmp_path / "latin.py"
    latin.write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"latin\.py.*not UTF-8"):
        main({"data": str(latin), "dataset": str(tmp_path / "ds")})


def test_binary_file_in_folder_is_skipped_with_warning(
    ray_cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from workloads.prepare import main

    data = _corpus(tmp_path / "corpus", n=6)
    (data / "pkg0" / "blob.py").write_bytes(b"\x00\x01\x02" * 100)
    with caplog.at_level(logging.WARNING, logger="workloads.prepare"):
        out = main({"data": str(data), "dataset": str(tmp_path / "ds"), "context_length": 32})
    assert out["files"] == 7
    assert out["skipped"] == 1
    assert out["skipped_by"]["not text"] == 1
    assert "pkg0/blob.py" in caplog.text
    manifest = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    assert manifest["skipped"] == [["pkg0/blob.py", "not text (contains NUL bytes)"]]


def test_glob_corpus(ray_cluster, tmp_path: Path) -> None:
    from workloads.prepare import main

    data = _corpus(tmp_path / "corpus", n=6)
    out = main({"data": f"{data}/**/*.txt", "dataset": str(tmp_path / "ds"), "context_length": 32})
    assert out["files"] == 1


def test_small_corpus_always_gets_a_validation_split(ray_cluster, tmp_path: Path) -> None:
    """Three files that all hash into the training split: one (the lowest split score, so the
    choice is deterministic) is moved to validation, so evaluate has data to score."""
    from workloads.prepare import assign_groups, group_of, main

    names = [
        n for n in (f"mod{i}.py" for i in range(200)) if group_of(n, 0.05, 8).startswith("train/")
    ][:3]
    groups = assign_groups(names, 0.05, 8)
    assert sum(len(v) for k, v in groups.items() if k.startswith("validation/")) == 1
    val = [v for k, v in groups.items() if k.startswith("validation/")]
    again = assign_groups(list(reversed(names)), 0.05, 8)
    assert [v for k, v in again.items() if k.startswith("validation/")] == val
    src = tmp_path / "small"
    src.mkdir()
    for n in names:
        (src / n).write_text("".join(f"def g{j}(x):\n    return x + {j}\n" for j in range(60)))
    out = main({"data": str(src), "dataset": str(tmp_path / "ds"), "context_length": 64})
    assert out["files"] == 3 and out["val_rows"] > 0 and out["rows"] > 0


def test_a_file_name_that_is_not_utf8_is_skipped_naming_it(ray_cluster, tmp_path: Path) -> None:
    from workloads import prepare

    corpus = _corpus(tmp_path / "c", n=6)
    bad = os.path.join(os.fsencode(corpus), b"bad-\xff.py")
    with open(bad, "wb") as f:
        f.write(b"x = 1\n" * 100)
    out = prepare.main({"data": str(corpus), "dataset": str(tmp_path / "ds"), "context_length": 32})
    assert out["files"] == 7 and out["skipped"] == 1
    manifest = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    assert manifest["skipped"] == [
        ["bad-\\udcff.py", "file name is not UTF-8 (rename it to read it)"]
    ]


def test_default_filter_takes_text_files_and_counts_what_each_filter_skipped(
    ray_cluster, tmp_path: Path
) -> None:
    """Every text file of a folder is taken (not only *.py); binary files, caches and
    site-packages are left out, and the result counts the files each filter skipped."""
    from workloads.prepare import main

    data = _corpus(tmp_path / "corpus", n=6)
    (data / "README.md").write_text("# corpus\n" * 40)
    (data / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" * 50)
    (data / "empty.txt").write_text("")
    (data / "__pycache__").mkdir()
    (data / "__pycache__" / "mod0.cpython-311.pyc").write_bytes(b"\x00" * 64)
    (data / "site-packages" / "dep").mkdir(parents=True)
    (data / "site-packages" / "dep" / "x.py").write_text("x = 1\n")
    out = main({"data": str(data), "dataset": str(tmp_path / "ds"), "context_length": 32})
    assert out["files"] == 8, out  # 6 modules, notes.txt, README.md
    by = out["skipped_by"]
    assert by["include '*'"] == 0
    assert by["not text"] == 1 and by["empty"] == 1
    assert by["exclude '__pycache__/*' (folders)"] == 1
    assert by["exclude 'site-packages/*' (folders)"] == 1
    manifest = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    assert manifest["skipped_by"] == by
    assert out["skipped"] == sum(by.values()) == 4  # every file left out, as listed
    only_py = main(
        {"data": str(data), "dataset": str(tmp_path / "ds2"), "context_length": 32,
         "include": "*.py"}
    )  # fmt: skip
    assert only_py["files"] == 6 and only_py["skipped_by"]["include '*.py'"] == 4


def test_a_single_file_gets_validation_carved_from_its_training_rows(
    ray_cluster, tmp_path: Path
) -> None:
    """One file hashes into one split; validation is cut from the training rows, before any
    training, and the rows on disk match the counts."""
    import pyarrow.parquet as pq

    from workloads.prepare import main

    one = tmp_path / "one.txt"
    one.write_text("".join(f"line {i}: the quick brown fox\n" for i in range(200)))
    out = main(
        {"data": str(one), "dataset": str(tmp_path / "ds"), "context_length": 32,
         "val_fraction": 0.1}
    )  # fmt: skip
    total = (one.stat().st_size + 1 - 1) // 32  # windows of the file plus its separator byte
    assert out["val_rows"] == round(total * 0.1) and out["rows"] == total - out["val_rows"]
    assert out["val_carved"]["rows"] == out["val_rows"]
    assert out["val_carved"]["from"].startswith("train/part-")
    manifest = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    on_disk = {
        g: pq.read_table(tmp_path / "ds" / f"{g}.parquet").num_rows for g in manifest["shards"]
    }
    assert on_disk == manifest["shards"]
    assert sum(v for g, v in on_disk.items() if g.startswith("validation/")) == out["val_rows"]


def test_a_corpus_too_small_for_a_validation_row_is_refused(ray_cluster, tmp_path: Path) -> None:
    from workloads.prepare import CorpusError, main

    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x" * 40)  # one window of 33 bytes: nothing to spare for validation
    with pytest.raises(CorpusError, match=r"1 training window\(s\).*at least 2 windows"):
        main({"data": str(tiny), "dataset": str(tmp_path / "ds"), "context_length": 32})
    assert not (tmp_path / "ds").exists() and not (tmp_path / "ds.tmp").exists()
