"""prepare's pure parts: corpus listing (pruned local walk), windowing, and the Ray Data
context that lets shard tasks run at once."""

from __future__ import annotations

import fnmatch
import itertools
import os
import time
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.prepare import _walk, list_corpus, windows


def _tree(root: Path) -> None:
    for rel in (
        "a.py",
        "notes.txt",
        "pkg/b.py",
        "pkg/sub/c.py",
        "site-packages/x/d.py",
        "site-packages/e.py",
        "tests/test_f.py",
        "tests/data/g.py",
        "test_h.py",
        "deep/er/site-packages/i.py",
    ):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\n")


def _reference(root: Path, include: str, exclude: tuple[str, ...]) -> list[str]:
    """The definition: every file under root, filtered with fnmatch, no pruning."""
    out = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        ok = fnmatch.fnmatch(rel, include) or (
            "/" not in include and fnmatch.fnmatch(os.path.basename(rel), include)
        )
        if "**/" in include:
            ok = ok or fnmatch.fnmatch(rel, include.replace("**/", ""))
        if ok and not any(fnmatch.fnmatch(rel, x) for x in exclude):
            out.append(rel)
    return sorted(out)


@pytest.mark.parametrize(
    ("include", "exclude"),
    [
        ("*.py", ("site-packages/*",)),
        ("*.py", ("test*",)),
        ("*.py", ("*/site-packages/*", "pkg/sub/*")),
        ("pkg/*.py", ()),
        ("**/*.py", ("tests/*",)),
        ("*", ("*.txt",)),
        ("*.py", ("*",)),
    ],
)
def test_listing_matches_the_unpruned_definition(tmp_path: Path, include, exclude) -> None:
    _tree(tmp_path)
    expected = _reference(tmp_path, include, exclude)
    if not expected:
        with pytest.raises(ValueError, match="no files match"):
            list_corpus(str(tmp_path), include, exclude)
        return
    _fs, base, rels, explicit = list_corpus(str(tmp_path), include, exclude)
    assert (base, rels, explicit) == (str(tmp_path), expected, False)
    # The object-store path (recursive listing, no pruning) gives the same files.
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert sorted(_walk(sub, "", exclude)) == sorted(
        p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()
    )


def test_excluded_folders_are_not_entered(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    entered: list[str] = []
    real_scandir = os.scandir

    def spy(path="."):
        entered.append(os.path.relpath(os.fspath(path), tmp_path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    _fs, _base, rels, _ = list_corpus(str(tmp_path), "*.py", ("site-packages/*",))
    assert "site-packages/e.py" not in rels and "deep/er/site-packages/i.py" in rels
    assert "pkg/sub" in entered
    assert not any(p == "site-packages" or p.startswith("site-packages/") for p in entered)


docs_st = st.lists(st.binary(min_size=0, max_size=60).map(lambda b: b.replace(b"\0", b"a")))


@settings(max_examples=300, deadline=None)
@given(docs=docs_st, L=st.integers(1, 40))
def test_windows_cover_the_stream_with_stride_L(docs: list[bytes], L: int) -> None:
    stream = b"".join(d + b"\0" for d in docs)
    rows = windows(docs, L)
    n = max(0, (len(stream) - 1) // L)
    assert rows.shape == (n, L + 1) and rows.dtype == np.uint8 and rows.flags.c_contiguous
    for i in range(n):
        assert rows[i].tobytes() == stream[i * L : i * L + L + 1]
    # Every byte after the first is a target exactly once, up to the dropped partial tail.
    assert len(stream) - 1 - n * L < L


@pytest.mark.ray
def test_shard_tasks_run_at_once_and_settings_are_restored(ray_cluster) -> None:
    """On the 2-CPU test cluster, Ray Data 2.60's default scheduling ran these one at a time."""
    import ray

    from workloads.prepare import _shard_task_context

    ctx = ray.data.DataContext.get_current()
    before = ctx.op_resource_reservation_enabled, ctx.downstream_capacity_backpressure_ratio

    def task(batch):
        start = time.time()
        time.sleep(0.3)
        return {"start": [start], "end": [time.time()], "pid": [os.getpid()]}

    with _shard_task_context():
        ds = ray.data.from_items([{"i": i} for i in range(8)], override_num_blocks=8)
        rows = ds.map_batches(task, batch_size=1).take_all()
    spans = sorted((r["start"], r["end"]) for r in rows)
    overlaps = sum(a_end > b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    # Two at a time gives about 4 overlapping neighbours of 7; one at a time gives 0.
    assert overlaps >= 3, spans
    assert len({r["pid"] for r in rows}) == 2
    assert (ctx.op_resource_reservation_enabled, ctx.downstream_capacity_backpressure_ratio) == (
        before
    )


def test_a_folder_that_cannot_be_listed_is_named(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    real_scandir = os.scandir

    def refuse(path="."):
        if os.fspath(path).endswith("pkg"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(
        ValueError, match=r"corpus folder '.*pkg' cannot be listed: Permission denied"
    ):
        list_corpus(str(tmp_path))


def test_symlinked_folders_are_followed_once_and_non_files_left_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "c", tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "o.py").write_text("x = 1\n")
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("a = 1\n")
    (root / "linkdir").symlink_to(outside)
    (root / "sub" / "loop").symlink_to(root)  # a cycle
    (root / ".#lock.py").symlink_to(tmp_path / "nonexistent")  # an editor's lock: dangling
    os.mkfifo(root / "fifo.py")
    _fs, _base, rels, _ = list_corpus(str(root), "*.py", ())
    assert rels == ["a.py", "linkdir/deep/o.py"]


def test_relative_glob_and_single_exclude_string(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path / "pkg")
    _fs, base, rels, _ = list_corpus("*.py", "*.py", "sub/*")
    assert (base, rels) == (str(tmp_path / "pkg"), ["b.py"])
