"""Framework-neutral checkpoint format: a directory of files plus ``manifest.json``.

Layout::

    <checkpoint>/
        model.pt            # any files; the framework decides (torch state dict, msgpack, ...)
        ...
        manifest.json       # written LAST: {"format": 1, "files": {rel: {"sha256", "size"}},
                            #                "metadata": {"step", "framework", "model", ...}}

Writes are atomic: files go into a temporary sibling directory, each is fsynced, the manifest
is written last, then the directory is renamed to its final name - on a local disk and on a
Cloud Storage FUSE mount of a bucket with hierarchical namespace, where the folder rename is one
atomic ``RenameFolder`` call (https://cloud.google.com/storage/docs/cloud-storage-fuse/semantics,
"Rename directories"; the mounts are named by ``RAYGKE_HNS_MOUNTS``, :mod:`contract.storage`). On
a FUSE mount of a flat bucket a directory rename is a copy and delete of every object, neither
atomic nor quick (and refused past ``rename-dir-limit``), so there the files are written in
place and the manifest, written last, is the commit (:func:`commit_mode`): a reader refuses a
checkpoint without it. A reader verifies every
listed file's size and sha256 (:func:`verify_checkpoint`) and refuses a damaged checkpoint with a
:class:`CheckpointError` naming the offending file. Only the standard library is used here, so a
JAX trainer can reuse it; remote roots (``gs://``) go through ``pyarrow.fs`` lazily.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
CHECKPOINT_PREFIX = "checkpoint_"


class CheckpointError(Exception):
    """A checkpoint is missing, incomplete or damaged. The message names the file at fault."""


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _mounts() -> list[tuple[str, str]]:
    """``(mount point, file system type)`` of every mount of this process, longest path first
    (``/proc/self/mounts``; none where it cannot be read)."""
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            # octal escapes for blanks in mount points (proc(5))
            point = parts[1].encode().decode("unicode_escape")
            out.append((point, parts[2]))
    return sorted(out, key=lambda m: len(m[0]), reverse=True)


def commit_mode(
    target: str | os.PathLike[str],
    mounts: list[tuple[str, str]] | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """How :func:`write_checkpoint` commits at ``target``: ``rename`` (write a temporary sibling,
    rename it: a local file system, or a FUSE mount listed in ``RAYGKE_HNS_MOUNTS``) or
    ``manifest`` (write in place, manifest last: a FUSE mount of a flat bucket).

    ``mounts``: ``(mount point, fstype)`` pairs (default: this process's, ``/proc/self/mounts``);
    ``environ``: the environment (default ``os.environ``).
    """
    from contract.storage import HNS_MOUNTS_ENV

    env = os.environ if environ is None else environ
    path = os.path.abspath(os.fspath(target))
    hns = [os.path.abspath(m) for m in env.get(HNS_MOUNTS_ENV, "").split(os.pathsep) if m]
    for point, fstype in _mounts() if mounts is None else mounts:
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if not fstype.startswith("fuse"):
                return "rename"
            inside = any(path == h or path.startswith(h.rstrip("/") + "/") for h in hns)
            return "rename" if inside else "manifest"
    return "rename"


def write_checkpoint(
    target_dir: str | os.PathLike[str],
    files: Mapping[str, bytes] | Callable[[Path], None],
    metadata: Mapping[str, Any],
) -> Path:
    """Atomically write a checkpoint directory at ``target_dir``.

    Args:
        target_dir: final directory name; must not exist yet (or is replaced if it does).
        files: either ``{relative_name: bytes}`` or a callback ``writer(tmp_dir)`` that writes
            the files into ``tmp_dir``. ``manifest.json`` is reserved.
        metadata: JSON-serialisable; conventionally ``step`` (int), ``framework`` (str),
            ``model`` (dict of model config).

    Returns:
        The final checkpoint path.
    """
    target = Path(target_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    in_place = commit_mode(target) == "manifest"
    if in_place and target.exists():
        shutil.rmtree(target)  # a flat bucket: no atomic swap; the old one goes first
    tmp = target if in_place else target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        if callable(files):
            files(tmp)
        else:
            for rel, data in files.items():
                if rel == MANIFEST:
                    raise ValueError(f"{MANIFEST} is reserved")
                p = tmp / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
        write_manifest(tmp, file_entries(tmp), metadata)
        if in_place:
            pass  # the manifest, written last, committed it
        elif target.exists():
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
        _fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def file_entries(folder: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """``{relative path: {"sha256", "size"}}`` of every file under ``folder``, each fsynced
    first (what a manifest lists).

    Raises:
        ValueError: ``folder`` already holds a ``manifest.json`` (reserved).
    """
    root = Path(folder)
    entries: dict[str, dict[str, Any]] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        if rel == MANIFEST:
            raise ValueError(f"{MANIFEST} is reserved")
        with open(p, "rb") as f:
            os.fsync(f.fileno())
        entries[rel] = {"sha256": _sha256_file(p), "size": p.stat().st_size}
    return entries


def write_manifest(
    folder: str | os.PathLike[str],
    entries: Mapping[str, Mapping[str, Any]],
    metadata: Mapping[str, Any],
) -> None:
    """Write ``manifest.json`` (``entries`` from :func:`file_entries`, possibly of several
    writers' folders merged: a sharded checkpoint's ranks, :mod:`workloads.sharded_checkpoint`)
    into ``folder`` and fsync it: the commit of a checkpoint's contents."""
    root = Path(folder)
    manifest = {"format": FORMAT_VERSION, "files": dict(entries), "metadata": dict(metadata)}
    with open(root / MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    _fsync_dir(root)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load ``manifest.json`` from a checkpoint directory.

    Raises:
        CheckpointError: the manifest is missing or not valid JSON.
    """
    mpath = Path(path) / MANIFEST
    try:
        manifest = json.loads(mpath.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{mpath}: manifest missing (incomplete checkpoint)") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{mpath}: unreadable manifest: {e}") from None
    if not isinstance(manifest, dict) or "files" not in manifest:
        raise CheckpointError(f"{mpath}: not a checkpoint manifest")
    return manifest


def verify_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Check every file listed in the manifest (size, then sha256); return the metadata.

    Raises:
        CheckpointError: naming the first file that is missing, has the wrong size or digest,
            or the manifest itself when it is missing/unreadable.
    """
    root = Path(path)
    manifest = read_manifest(root)
    for rel, entry in sorted(manifest["files"].items()):
        p = root / rel
        if not p.is_file():
            raise CheckpointError(f"{p}: listed in manifest but missing")
        size = p.stat().st_size
        if size != entry["size"]:
            raise CheckpointError(f"{p}: size {size} != {entry['size']} in manifest")
        digest = _sha256_file(p)
        if digest != entry["sha256"]:
            raise CheckpointError(f"{p}: sha256 mismatch (damaged checkpoint)")
    return dict(manifest.get("metadata", {}))


def _materialize(uri: str) -> Path:
    """Local path for a checkpoint dir; a remote URI is copied into a temporary folder."""
    if "://" not in uri or uri.startswith("file://"):
        return Path(uri.removeprefix("file://"))
    import pyarrow.fs as pafs

    local = Path(tempfile.mkdtemp(prefix="raygke-ckpt-"))
    pafs.copy_files(uri, str(local))
    return local


def _list_candidates(root: str) -> list[str]:
    if "://" not in root or root.startswith("file://"):
        base = Path(root.removeprefix("file://"))
        if not base.is_dir():
            return []
        return [
            str(p) for p in base.iterdir() if p.is_dir() and p.name.startswith(CHECKPOINT_PREFIX)
        ]
    import pyarrow.fs as pafs

    fs, base = pafs.FileSystem.from_uri(root)
    scheme = root.split("://", 1)[0]
    infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    return [
        f"{scheme}://{i.path}"
        for i in infos
        if i.type == pafs.FileType.Directory and i.base_name.startswith(CHECKPOINT_PREFIX)
    ]


def latest_valid_checkpoint(root: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]] | None:
    """Newest verifying checkpoint under an experiment folder, or None.

    Scans the ``checkpoint_*`` directories directly under ``root`` (local path or ``gs://``),
    newest ``metadata.step`` first (directory name breaks ties / orders unreadable ones), and
    returns ``(local_path, metadata)`` of the first whose manifest verifies. Damaged ones are
    skipped with a warning naming them.
    """
    root = str(root)
    candidates = []
    for uri in _list_candidates(root):
        local = _materialize(uri)
        try:
            step = int(read_manifest(local).get("metadata", {}).get("step", -1))
        except CheckpointError:
            step = -1
        candidates.append((step, uri, local))
    candidates.sort(key=lambda c: (c[0], c[1]), reverse=True)
    for _step, uri, local in candidates:
        try:
            return local, verify_checkpoint(local)
        except CheckpointError as e:
            log.warning("skipping damaged checkpoint %s: %s", uri, e)
    return None
