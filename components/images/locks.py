"""The Ray versions the repository has locked image requirement sets for.

The project's images build on ``rayproject/ray:<ray.version>...`` (https://hub.docker.com/r/rayproject/ray)
and install the generated ``images/requirements-<kind>.txt`` (``raygke images lock``, from
``pyproject.toml``: :mod:`components.images.render`). Those files pin one ``ray==`` version,
so an image agrees with its base only when ``ray.version`` is that version. Reads the files only.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_RAY_PIN = re.compile(r"^ray(?:\[[^\]]*\])?==(\S+)\s*$", re.MULTILINE)


def locked_ray_versions(root: Path = ROOT) -> tuple[str, ...]:
    """The ``ray==`` pins of ``<root>/images/requirements-*.txt`` (sorted, distinct): the Ray
    versions the repository has locked requirement sets for."""
    found = {
        m.group(1)
        for path in sorted((root / "images").glob("requirements-*.txt"))
        for m in _RAY_PIN.finditer(path.read_text())
    }
    return tuple(sorted(found, key=_key))


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".") if x.isdigit())


def ray_version_problem(version: str, root: Path = ROOT) -> str | None:
    """Why the project cannot build its images for Ray ``version``, else None: the version has
    no locked requirement set (:func:`locked_ray_versions`), so an image's base would be Ray
    ``version`` while its pins install another Ray. A version newer than every locked one is not
    a release the repository knows (e.g. ``2.99.0``)."""
    locked = locked_ray_versions(root)
    if version in locked:
        return None
    newest = locked[-1] if locked else None
    why = (
        f"is newer than every Ray release this repository knows (newest locked: {newest})"
        if newest is not None and _key(version) > _key(newest)
        else "has no locked requirement set in this repository"
    )
    pinned = " / ".join(locked) or "none"
    return (
        f"{version!r} {why}; the project's images pin ray=={pinned} (images/requirements-*.txt), "
        f"so they would disagree with a rayproject/ray:{version} base. Versions with locks: "
        f"{', '.join(locked) or 'none'}. To move Ray: change the ray pin in pyproject.toml, run "
        "`raygke images lock`, then set ray.version (or give prebuilt ray.images for every kind)"
    )
