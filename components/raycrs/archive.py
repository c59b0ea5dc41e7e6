"""Content-addressed archive of the ``workloads/`` and ``contract/`` folders (pure; no Pulumi
resources): the RayJob's ``runtimeEnvYAML`` ``working_dir`` (:func:`workloads_archive`,
:func:`working_dir_uri`). Its bytes are deterministic, so its object name, which carries their
sha256, changes exactly when a workload file changes. Sources: docs/sources.md#raycrs-archive
"""

from __future__ import annotations

import functools
import hashlib
import io
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.plan.plan import Context

WORKLOADS_DIR = Path(__file__).resolve().parents[2] / "workloads"
CONTRACT_DIR = Path(__file__).resolve().parents[2] / "contract"
TOP_LEVEL = "raygke"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_EXCLUDED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_EXCLUDED_SUFFIXES = {".pyc", ".pyo"}


def _files(root: Path) -> list[Path]:
    out = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if any(part in _EXCLUDED_DIRS or part.startswith(".") for part in rel.parts):
            continue
        if p.is_file() and p.suffix not in _EXCLUDED_SUFFIXES:
            out.append(p)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def workloads_archive(*roots: Path) -> tuple[bytes, str]:
    """Zip the folders ``roots`` (default: the repository's ``workloads/`` and ``contract/``)
    deterministically, each under its own name.

    Returns:
        ``(zip bytes, sha256 hex digest of those bytes)``.

    Raises:
        FileNotFoundError: a root is not a directory.
    """
    folders = [r.resolve() for r in (roots or (WORKLOADS_DIR, CONTRACT_DIR))]
    for root in folders:
        if not root.is_dir():
            raise FileNotFoundError(f"workloads folder {root} does not exist")
    entries = tuple(
        (f"{TOP_LEVEL}/{root.name}/{path.relative_to(root).as_posix()}", path.read_bytes())
        for root in folders
        for path in _files(root)
    )
    return _zip(entries)


@functools.lru_cache(maxsize=2)  # a check zips the same files twice (its render, the program's)
def _zip(entries: tuple[tuple[str, bytes], ...]) -> tuple[bytes, str]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, content in entries:
            info = zipfile.ZipInfo(arcname, _FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100644 & 0xFFFF) << 16
            info.create_system = 3  # unix, so the mode bits are honoured
            zf.writestr(info, content, compresslevel=9)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def archive_object_name(sha: str) -> str:
    """Object name in the artifacts bucket: ``workloads/<first 16 hex of sha256>.zip``.

    Raises:
        ValueError: ``sha`` is not a hex digest of at least 16 characters.
    """
    if len(sha) < 16 or any(c not in "0123456789abcdef" for c in sha.lower()):
        raise ValueError(f"sha {sha!r} is not a sha256 hex digest")
    return f"workloads/{sha[:16].lower()}.zip"


def working_dir_uri(ctx: Context, sha: str) -> str:
    """``gs://<artifacts bucket>/workloads/<sha[:16]>.zip`` (the RayJob ``working_dir``; ``ctx``:
    the stack's :class:`~components.plan.plan.Context`)."""
    return f"{ctx.bucket_url('artifacts')}/{archive_object_name(sha)}"
