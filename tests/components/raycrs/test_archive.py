"""The workloads archive is deterministic and content-addressed."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from components.plan.plan import plan
from components.raycrs.archive import (
    archive_object_name,
    working_dir_uri,
    workloads_archive,
)
from tests.helpers import ROOT, stack


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "workloads"
    shutil.copytree(ROOT / "workloads", src, ignore=shutil.ignore_patterns("__pycache__"))
    return src


def test_same_bytes_twice_and_independent_of_mtime_and_mode(tree: Path) -> None:
    data1, sha1 = workloads_archive(tree)
    for p in tree.rglob("*.py"):
        os.utime(p, (1_700_000_000, 1_700_000_000))
        p.chmod(0o755)
    (tree / "__pycache__").mkdir(exist_ok=True)
    (tree / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    (tree / "stray.pyc").write_bytes(b"junk")
    data2, sha2 = workloads_archive(tree)
    assert data1 == data2 and sha1 == sha2


def test_entries_sorted_fixed_and_under_one_top_level_dir(tree: Path) -> None:
    data, _ = workloads_archive(tree)
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names)
    assert "raygke/workloads/train_lm.py" in names
    assert all(n.startswith("raygke/workloads/") for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {(i.external_attr >> 16) & 0o777 for i in infos} == {0o644}


def test_changing_a_workload_changes_the_object_name(tree: Path) -> None:
    _, before = workloads_archive(tree)
    p = tree / "train_lm.py"
    p.write_text(p.read_text() + "\n# changed\n")
    _, after = workloads_archive(tree)
    assert archive_object_name(before) != archive_object_name(after)


def test_names_and_uri() -> None:
    sha = "ab" * 32
    assert archive_object_name(sha) == "workloads/abababababababab.zip"
    cfg = stack("dev")
    assert working_dir_uri(plan(cfg).context, sha) == (
        "gs://ray-gke-dev-ray-dev-artifacts/workloads/abababababababab.zip"
    )
    with pytest.raises(ValueError, match="not a sha256"):
        archive_object_name("xyz")


def test_the_default_archive_ships_the_contract_beside_the_workloads() -> None:
    """The workloads import ``contract`` (registry, argument classes) in the Ray image, so the
    RayJob's working_dir holds both packages at the top of the archive."""
    import io
    import zipfile

    data, _ = workloads_archive()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "raygke/contract/registry.py" in names
    assert "raygke/contract/args/base.py" in names
    assert "raygke/workloads/train_lm.py" in names
    assert {n.split("/")[1] for n in names} == {"workloads", "contract"}
