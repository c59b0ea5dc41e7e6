"""No Python module of the product is longer than :data:`MAX_LINES` lines (issue 20: a module that
long has more than one concern; split it along its seams, e.g. the KubeRay operator rules by CR
kind in ``components/raycrs/operator/``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
# The product's packages (tests, examples and the Pulumi entry point are not held to it).
PACKAGES = ("components", "contract", "raygke", "workloads", "bench")


def too_long(root: Path = ROOT, limit: int = MAX_LINES) -> dict[str, int]:
    """``{"<package>/<path>.py": lines}`` of every module under :data:`PACKAGES` of ``root``
    with more than ``limit`` lines (a missing package holds none)."""
    out: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            with path.open(encoding="utf-8") as f:
                lines = sum(1 for _ in f)
            if lines > limit:
                out[path.relative_to(root).as_posix()] = lines
    return out


def test_too_long_finds_a_long_module(tmp_path: Path) -> None:
    """The scan itself: a module one line over the limit is listed, one at the limit is not,
    and files outside the packages or not ending in .py are not read."""
    (tmp_path / "raygke" / "sub").mkdir(parents=True)
    (tmp_path / "raygke" / "sub" / "long.py").write_text("x = 1\n" * 11)
    (tmp_path / "raygke" / "ok.py").write_text("x = 1\n" * 10)
    (tmp_path / "raygke" / "notes.md").write_text("x\n" * 50)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "long_test.py").write_text("x = 1\n" * 50)
    assert too_long(tmp_path, limit=10) == {"raygke/sub/long.py": 11}


def test_no_module_is_longer_than_600_lines() -> None:
    offenders = too_long()
    listing = "\n".join(f"  {p}: {n} lines" for p, n in sorted(offenders.items()))
    assert not offenders, (
        f"modules over {MAX_LINES} lines (split them along their seams):\n{listing}"
    )
