"""What ``raygke submit`` uploads as a job's ``working_dir``, measured before anything is sent.

Ray zips the ``working_dir`` folder and stores it in the cluster's GCS; a script beside a 4 GB
``.venv`` would upload the virtualenv. Ray skips what the folder's ``.gitignore`` and
``.rayignore`` files list and what the runtime_env's ``excludes`` patterns (gitignore syntax,
relative to the folder) match
(https://docs.ray.io/en/latest/ray-core/handling-dependencies.html#api-reference, ``excludes``).
``raygke submit`` adds :data:`DEFAULT_EXCLUDES` (virtualenvs, VCS and tool caches: never job code)
to ``excludes`` and walks the folder with Ray's own traversal
(``ray._private.runtime_env.packaging._dir_travel``, the one its zip step uses, Ray 2.60) so the
size shown is of the files Ray would zip. Ray refuses a package of
``ray._private.runtime_env.packaging.GCS_STORAGE_MAX_SIZE`` bytes (the gRPC message limit,
512 MiB) or more after zipping and warns at half of it; ``raygke submit`` refuses before upload
above ``--max-upload-mib`` (default :data:`DEFAULT_MAX_UPLOAD_MIB`), counted before compression.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".venv/",
    "venv/",
    ".git/",
    "__pycache__/",
    "*.pyc",
    ".raygke/",
    "node_modules/",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
)
DEFAULT_MAX_UPLOAD_MIB = 100
MIB = 1024 * 1024


@dataclass(frozen=True)
class Upload:
    """The files of a ``working_dir`` that Ray would zip: ``root`` (absolute), ``files`` (count),
    ``size`` (bytes, before compression), ``excludes`` (the runtime_env patterns) and
    ``ignore_files`` (the ``.gitignore`` / ``.rayignore`` files found under ``root``, which Ray
    honours too)."""

    root: Path
    files: int
    size: int
    excludes: tuple[str, ...]
    ignore_files: tuple[Path, ...]

    def describe(self) -> str:
        """``/abs/folder (12 files, 0.1 MiB before compression; excluded: .venv/, ... and the
        patterns of .gitignore)`` - one line."""
        ignored = ", ".join(str(p.relative_to(self.root)) for p in self.ignore_files)
        return (
            f"{self.root} ({self.files} files, {self.size / MIB:.1f} MiB before compression; "
            f"excluded: {', '.join(self.excludes)}"
            + (f" and the patterns of {ignored}" if ignored else "")
            + ")"
        )


def measure(root: Path, excludes: tuple[str, ...] = DEFAULT_EXCLUDES) -> Upload:
    """Walk ``root`` as Ray's packaging does and count what it would upload.

    Raises:
        ImportError: Ray is not installed (``raygke submit`` needs it anyway).
    """
    from ray._private.runtime_env import packaging

    root = root.resolve()
    files = size = 0
    found: list[Path] = []

    def handler(path: Path) -> None:
        nonlocal files, size
        if path.name in (".gitignore", ".rayignore"):
            found.append(path)
        if path.is_file() and not path.is_symlink():
            files += 1
            size += path.stat().st_size

    include_gitignore = os.environ.get("RAY_RUNTIME_ENV_IGNORE_GITIGNORE", "0") != "1"
    packaging._dir_travel(
        root, [packaging._get_excludes(root, list(excludes))], handler, include_gitignore
    )
    return Upload(root, files, size, tuple(excludes), tuple(sorted(found)))


def too_large(upload: Upload, max_mib: float) -> str | None:
    """The one-line refusal when ``upload`` is over ``max_mib`` MiB, else None."""
    if upload.size <= max_mib * MIB:
        return None
    return (
        f"the working dir {upload.root} holds {upload.size / MIB:.1f} MiB to upload "
        f"({upload.files} files), over --max-upload-mib {max_mib:g}; list what the job does not "
        "need in a .rayignore or .gitignore there, pass a smaller --working-dir, or raise "
        "--max-upload-mib"
    )
