"""Every stack file the project ever shipped, and the renders of its releases, frozen under
``tests/upgrade/`` for the upgrade tests (issue 46; docs/upgrading.md).

* ``stacks/<stack>-<sha256[:12]>.yaml``: each distinct content of a shipped stack file
  (``Pulumi.<stack>.yaml`` at the repository's top, at every commit of main where it changed, and
  in the working tree); ``stacks/index.json`` names the commits that shipped each.
* ``renders/<stack>@<commit>.json.gz``: ``resources.json`` of a shipped stack rendered by the
  code of a release in :data:`RELEASES` (``raygke synth --resources-only`` run in a checkout of
  that commit, as ``raygke diff --base <commit>`` renders its base side).

Frozen so that a clone without history runs the same tests. Refresh after a commit that changes
a shipped stack file, or when a release is added to :data:`RELEASES`::

    .venv/bin/python -m tests.upgrade.shipped --freeze
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STACKS = HERE / "stacks"
RENDERS = HERE / "renders"
INDEX = STACKS / "index.json"

RELEASES: dict[str, str] = {
    "812cc9f": "2026-12-02, the week before defaults epochs (the release issue 46 upgraded from)",
    "d03cac8": "2026-12-04, stop 43",
    "1c2afd9": "2026-12-05, stop 44: the last release before defaults epochs",
}
"""Releases whose shipped stacks must upgrade to today's with no replacement (docs/upgrading.md,
contract (b)): the one issue 46 was measured from and the last two landed."""

PATTERN = "Pulumi.*.yaml"


def frozen_name(stack: str, text: str) -> str:
    """``<stack>-<sha256[:12]>.yaml``."""
    return f"{stack}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"


def stack_of(path: str) -> str:
    """``Pulumi.prod.yaml`` -> ``prod``."""
    return Path(path).name.split(".", 1)[1].rsplit(".", 1)[0]


def _git(*args: str) -> str:
    r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return r.stdout


def history_available() -> bool:
    """Whether this checkout has the history the frozen files came from (not shallow, and it
    holds every release commit)."""
    try:
        if _git("rev-parse", "--is-shallow-repository").strip() == "true":
            return False
        return all(_git("cat-file", "-t", c).strip() == "commit" for c in RELEASES)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False


def shipped_versions() -> dict[str, tuple[str, list[str]]]:
    """Frozen name -> (text, commits that shipped it) of every version of every top-level
    stack file in the history of HEAD, plus the working tree's (commit
    ``working tree``)."""
    out: dict[str, tuple[str, list[str]]] = {}
    log = _git("log", "--format=%h", "--name-only", "HEAD", "--", PATTERN)
    commit = ""
    for line in log.splitlines():
        if not line.strip():
            continue
        if "/" not in line and not line.startswith("Pulumi."):
            commit = line.strip()
            continue
        try:
            text = _git("show", f"{commit}:{line}")
        except subprocess.CalledProcessError:  # deleted in that commit
            continue
        name = frozen_name(stack_of(line), text)
        out.setdefault(name, (text, []))[1].append(commit)
    for path in sorted(ROOT.glob(PATTERN)):
        text = path.read_text(encoding="utf-8")
        out.setdefault(frozen_name(stack_of(path.name), text), (text, []))[1].append("working tree")
    return out


def frozen_stacks() -> dict[str, list[str]]:
    """Frozen name -> the commits that changed the file to it (``stacks/index.json``)."""
    return json.loads(INDEX.read_text())["versions"]


def release_stack(commit: str, stack: str) -> Path:
    """The frozen file of ``stack`` as the release ``commit`` shipped it."""
    return STACKS / json.loads(INDEX.read_text())["releases"][commit][stack]


def release_render(commit: str, stack: str) -> list[dict[str, Any]]:
    """``resources.json`` of ``stack`` rendered by the release ``commit`` (frozen)."""
    with gzip.open(RENDERS / f"{stack}@{commit}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def frozen_renders() -> list[tuple[str, str]]:
    """``(commit, stack)`` of every frozen release render."""
    return sorted(
        tuple(p.name.removesuffix(".json.gz").split("@")[::-1])  # type: ignore[misc]
        for p in RENDERS.glob("*.json.gz")
    )


def freeze() -> None:
    """Write ``stacks/`` and ``renders/`` from this checkout's history."""
    from raygke.diff.sides import checkout, render_tree

    STACKS.mkdir(exist_ok=True)
    RENDERS.mkdir(exist_ok=True)
    versions = shipped_versions()
    for old in STACKS.glob("*.yaml"):
        if old.name not in versions:
            old.unlink()
    for name, (text, _) in versions.items():
        (STACKS / name).write_text(text, encoding="utf-8")
    releases: dict[str, dict[str, str]] = {}
    for commit in RELEASES:
        with checkout(ROOT, commit) as tree:
            for path in sorted(tree.glob(PATTERN)):
                stack = stack_of(path.name)
                name = frozen_name(stack, path.read_text(encoding="utf-8"))
                releases.setdefault(commit, {})[stack] = name
                target = RENDERS / f"{stack}@{commit}.json.gz"
                if target.exists():
                    continue
                records = render_tree(tree, stack, f"{stack}@{commit}")
                with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
                    f.write(json.dumps(records, sort_keys=True))
                print(f"froze {target.relative_to(ROOT)}")
    index = {"versions": {n: c for n, (_, c) in sorted(versions.items())}, "releases": releases}
    INDEX.write_text(json.dumps(index, indent=1) + "\n")
    print(f"{len(versions)} stack file versions in {STACKS.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--freeze"]:
        sys.exit("usage: python -m tests.upgrade.shipped --freeze")
    freeze()
