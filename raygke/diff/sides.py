"""The two sides of ``raygke diff``: each rendered by its own tree's code (the base revision
checked out with ``git worktree add --detach`` into a temporary folder and rendered there by
``python -m raygke synth`` with ``PYTHONPATH`` at that tree; the head is the working tree or a
second revision, the same way), then compared by :func:`raygke.diff.compare.compare`
(:func:`plan_sides`). ``--config FILE`` diffs a stack file in the repository against its version
at ``--base`` (default ``main``); ``--set`` values apply to the head side only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.kernel.problems import Problem
from raygke.diff.compare import DiffError, Plan, compare


def repo_root(start: Path | None = None) -> Path:
    """The git work tree holding ``start`` (default: the current directory).

    Raises:
        DiffError: not inside a git work tree.
    """
    r = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=start or Path.cwd(),
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise DiffError(f"{start or Path.cwd()} is not inside a git work tree")
    return Path(r.stdout.strip())


def resolve_rev(root: Path, rev: str) -> str:
    """The commit id of ``rev`` in the repository at ``root``.

    Raises:
        DiffError: ``rev`` names no commit.
    """
    r = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise DiffError(f"{rev!r} is not a commit in {root}")
    return r.stdout.strip()


@contextlib.contextmanager
def checkout(root: Path, commit: str) -> Iterator[Path]:
    """A temporary ``git worktree`` of ``commit`` (detached), removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="raygke-diff-"))
    tree = tmp / "tree"
    r = subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(tree), commit],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise DiffError(f"git worktree add {commit[:12]} failed: {r.stderr.strip()}")
    try:
        yield tree
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)],
            cwd=root,
            capture_output=True,
        )
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def raygke_command(
    verb: str, stack: str, sets: list[str] | None, config: Path | None, *args: str
) -> list[str]:
    """The ``python -m raygke <verb>`` command line for one side: ``--stack stack``, or
    ``--config config`` (a stack file path) when given, then ``args``, with each ``--set
    KEY=VALUE`` passed on."""
    target = ["--config", str(config)] if config is not None else ["--stack", stack]
    cmd = [sys.executable, "-m", "raygke", verb, *target, *args]
    for item in sets or []:
        cmd += ["--set", item]
    return cmd


RESOURCES_ONLY = "--resources-only"


def synth_command(
    stack: str,
    out: str,
    sets: list[str] | None = None,
    config: Path | None = None,
    resources_only: bool = True,
) -> list[str]:
    """The ``python -m raygke synth`` command line that renders one side (:func:`raygke_command`):
    ``--resources-only`` (resources.json, the CRDs rendered as their digests: what the diff
    reads) unless ``resources_only`` is False (for a tree whose synth predates the option)."""
    extra = [RESOURCES_ONLY] if resources_only else []
    return raygke_command("synth", stack, sets, config, "--out", out, *extra)


def tree_env(tree: Path) -> dict[str, str]:
    """The environment a side's own ``raygke`` runs in: that tree's code, no colour."""
    return {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1"}


def stack_file(tree: Path, stack: str, config: Path | None = None) -> Path:
    """The stack file a side renders in ``tree``: ``config`` (relative to the repository root)
    when given, else ``Pulumi.<stack>.yaml``."""
    return tree / config if config is not None else tree / f"Pulumi.{stack}.yaml"


def render_tree(
    tree: Path,
    stack: str,
    label: str,
    sets: list[str] | None = None,
    config: Path | None = None,
) -> list[dict[str, Any]] | None:
    """``resources.json`` of ``stack`` (or of the stack file ``config``, a path relative to the
    repository root) rendered by ``tree``'s own ``raygke synth --resources-only`` in a
    subprocess (without the option for a tree older than it), with ``sets`` (``--set KEY=VALUE``
    items); None when ``tree`` has no such stack file (every resource is
    new).

    Raises:
        DiffError: the render failed (its last stderr line is in the message); code 2 when
            ``sets`` are given and that tree's ``raygke synth`` has no ``--set`` yet.
    """
    path = stack_file(tree, stack, config)
    if not path.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="raygke-render-") as out:

        def run(resources_only: bool) -> subprocess.CompletedProcess[str]:
            cmd = synth_command(
                stack, out, sets, path if config is not None else None, resources_only
            )
            return subprocess.run(cmd, cwd=tree, env=tree_env(tree), capture_output=True, text=True)

        r = run(resources_only=True)
        if r.returncode != 0 and f"No such option: {RESOURCES_ONLY}" in (r.stderr or ""):
            r = run(resources_only=False)  # a revision older than the option: the full render
        if r.returncode != 0 and sets and "No such option: --set" in (r.stderr or ""):
            raise DiffError(
                f"{label}'s raygke synth has no --set option (it predates it); diff without "
                "--set, or choose a newer --base",
                code=2,
            )
        if r.returncode != 0:
            lines = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()]
            problems = [ln.strip() for ln in lines if ln.startswith("  - ")]
            if problems:  # an invalid stack: its problems, as raygke check lists them
                check = (
                    f"raygke check {'--config ' + str(config) if config else '--stack ' + stack}"
                )
                check += "".join(f" --set {shlex.quote(s)}" for s in sets or [])
                raise DiffError(
                    f"rendering {label} failed: the stack file is invalid ({check} lists the "
                    "same):\n  " + "\n  ".join(problems),
                    code=1,
                )
            last = " | ".join(ln.removeprefix("error: ") for ln in lines[-3:]) or "no output"
            code = 2 if r.returncode == 2 else 1  # a usage error (a bad --set) stays one
            raise DiffError(f"rendering {label} failed (exit {r.returncode}): {last}", code=code)
        return json.loads((Path(out) / "resources.json").read_text())


def check_tree(
    tree: Path, stack: str, sets: list[str] | None = None, config: Path | None = None
) -> list[Problem]:
    """The problems (errors) ``tree``'s own ``raygke check --no-policy --format json`` finds in
    ``stack`` (or the stack file ``config``, relative to the repository root) with ``sets``: what
    renders but would be refused (a job no quota can ever admit, a CRD rule, an operator rule).
    Empty when the check passes, when the stack file is absent, or when that tree's check cannot
    say (no JSON on stdout: a revision older than ``--format json``, or a config error that the
    render reports itself, :func:`render_tree`). The policy rules are left to ``raygke check``:
    they run the whole Pulumi program a second time."""
    path = stack_file(tree, stack, config)
    if not path.is_file():
        return []
    cmd = raygke_command(
        "check",
        stack,
        sets,
        path if config is not None else None,
        "--no-policy",
        "--format",
        "json",
    )
    r = subprocess.run(cmd, cwd=tree, env=tree_env(tree), capture_output=True, text=True)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return []
    return [
        Problem(p.get("path", ""), p["message"], p.get("rule", ""))
        for p in doc.get("problems", [])
        if p.get("severity") != "warning"
    ]


@dataclass
class Side:
    """One rendered side: its label, records, and the stack file it rendered (None: no file)."""

    label: str
    records: list[dict[str, Any]]
    stack_file: Path | None
    tree: Path


@contextlib.contextmanager
def side_tree(root: Path, rev: str | None) -> Iterator[tuple[str, Path]]:
    """``(label, tree)`` of one side: the working tree at ``root`` when ``rev`` is None, else a
    temporary checkout of ``rev`` (:func:`checkout`), removed afterwards."""
    if rev is None:
        yield "working tree", root
        return
    commit = resolve_rev(root, rev)
    label = f"{rev} ({commit[:7]})" if not commit.startswith(rev) else commit[:7]
    with checkout(root, commit) as tree:
        yield label, tree


def render_sides(
    trees: list[tuple[str, Path]],
    stack: str,
    sets: list[list[str] | None],
    config: Path | None = None,
    per_side: list[tuple[str, Path | None]] | None = None,
) -> list[Side]:
    """Render ``stack`` (or the stack file ``config``, relative to each tree; an absolute path
    is that file) in each ``(label, tree)`` with its ``sets`` (:func:`render_tree`), the sides'
    subprocesses at the same time (each its own interpreter and tree, so on a machine with more
    than one core a diff takes about one render's time, not two). ``per_side``: ``(stack,
    config)`` of each side instead, when the sides render different stack files (``raygke diff
    --config FILE --against STACK``).

    Raises:
        DiffError: as :func:`render_tree`, the first side's first.
    """
    from concurrent.futures import ThreadPoolExecutor

    what = per_side or [(stack, config)] * len(trees)
    with ThreadPoolExecutor(max_workers=len(trees)) as pool:
        futures = [
            pool.submit(render_tree, tree, st, label, extra, cf)
            for (label, tree), extra, (st, cf) in zip(trees, sets, what, strict=True)
        ]
        out = []
        for (label, tree), future, (st, cf) in zip(trees, futures, what, strict=True):
            records = future.result()
            f = stack_file(tree, st, cf)
            out.append(Side(label, records or [], f if f.is_file() else None, tree))
    return out


DEFAULT_CONFIG_BASES = ("main", "origin/main")


def config_in_repo(root: Path, config: Path, outside_ok: bool = False) -> Path:
    """``config`` (a stack file path, absolute or relative to the current directory) as a path
    relative to the repository root ``root``, so the base side finds its version at a revision;
    with ``outside_ok``, a file outside the repository as its absolute path.

    Raises:
        DiffError: the file does not exist, or lies outside the repository and not
            ``outside_ok`` (code 2).
    """
    p = config if config.is_absolute() else Path.cwd() / config
    if not p.is_file():
        raise DiffError(f"--config {config}: no such file")
    try:
        return p.resolve().relative_to(root.resolve())
    except ValueError:
        if outside_ok:
            return p.resolve()
        raise DiffError(
            f"--config {config}: outside the git work tree {root}; diff compares the file with "
            "its version at a revision of that repository, or with a stack of it: give "
            "--against STACK"
        ) from None


def base_side_of(root: Path, rel: Path, against: str | None) -> tuple[str, Path | None, str]:
    """What the base side renders for ``--config`` (``rel``: :func:`config_in_repo`):
    ``(stack, config, note)``. ``against``: that stack's ``Pulumi.<against>.yaml``; else a file
    in the repository at its own path; else (a file outside it) the repository's file of the same
    name (``Pulumi.dev.yaml`` -> ``--against dev``) when its name is a stack file's.

    Raises:
        DiffError: a file outside the repository whose name is no ``Pulumi.NAME.yaml`` and no
            ``--against`` (code 2).
    """
    if against is not None:
        return against, None, f"Pulumi.{against}.yaml"
    if not rel.is_absolute():
        return stack_label(None, rel), rel, str(rel)
    name = rel.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        stack = stack_label(None, rel)
        return stack, None, f"Pulumi.{stack}.yaml, the repository's file of the same name"
    raise DiffError(
        f"--config {rel}: outside the repository and not named Pulumi.NAME.yaml: give "
        "--against STACK (the stack of this repository it is compared with)",
        code=2,
    )


def default_base(root: Path, config: Path | None) -> str:
    """The base revision when ``--base`` is not given: ``HEAD`` for ``--stack`` (what this
    branch changes in its working tree); for ``--config``, ``main`` (or ``origin/main``): your
    file against the version the main branch has.

    Raises:
        DiffError: ``--config`` and neither ``main`` nor ``origin/main`` exists (give --base).
    """
    if config is None:
        return "HEAD"
    for rev in DEFAULT_CONFIG_BASES:
        try:
            resolve_rev(root, rev)
        except DiffError:
            continue
        return rev
    raise DiffError(
        f"--config {config}: no main branch to compare with ({', '.join(DEFAULT_CONFIG_BASES)} "
        "not found); give --base REV"
    )


def stack_label(stack: str | None, config: Path | None) -> str:
    """The plan's stack name: ``stack``, or the ``NAME`` of a ``Pulumi.NAME.yaml`` config (its
    file name otherwise)."""
    if config is None:
        return stack or ""
    name = config.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name.split(".", 1)[1].rsplit(".", 1)[0]
    return name


def plan_sides(
    stack: str | None,
    config: Path | None,
    base: str | None,
    head: str | None,
    sets: list[str] | None = None,
    root: Path | None = None,
    against: str | None = None,
) -> Plan:
    """Render both sides and compare them: ``stack`` (``Pulumi.<stack>.yaml``) or ``config`` (a
    stack file) at ``base`` (None: :func:`default_base`) and at ``head`` (None: the working
    tree). ``sets`` (``--set KEY=VALUE``) apply to the head side only: the base is what is
    deployed or reviewed, the head what you try. A ``config`` inside the repository is compared
    with the same path at ``base``; with ``against`` (a stack name), or for a file outside the
    repository, with that stack's ``Pulumi.<stack>.yaml`` at ``base`` (:func:`base_side_of`).
    When the base side has no such file, its label says so (every resource is then new).

    Raises:
        DiffError: not a git work tree, a revision that names no commit, a config outside the
            repository with no stack to compare it with, no stack file on either side (code 2),
            or a side that does not render (code 1). A head side that renders but that ``raygke
            check`` refuses is a plan with :attr:`Plan.refused` set (:func:`check_tree`).
    """
    root = root or repo_root()
    rel = config_in_repo(root, config, outside_ok=True) if config is not None else None
    name = stack_label(stack, rel)
    per_side = None
    base_what = f"Pulumi.{name}.yaml"
    base_stack, base_config = name, rel
    if rel is not None:
        base_stack, base_config, base_what = base_side_of(root, rel, against)
    base_rev = base if base is not None else default_base(root, rel)
    from concurrent.futures import ThreadPoolExecutor

    with (
        side_tree(root, base_rev) as base_tree,
        side_tree(root, head) as head_tree,
        tempfile.TemporaryDirectory(prefix="raygke-diff-") as tmp,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        head_config = rel
        if rel is not None and base_config is None:
            # compared with a stack: the head renders as that stack (a resource's URN holds the
            # stack's name), from a copy named Pulumi.<stack>.yaml
            name = base_stack
            src = stack_file(head_tree[1], name, rel)
            if src.is_file() and src.name != f"Pulumi.{name}.yaml":
                head_config = Path(tmp) / f"Pulumi.{name}.yaml"
                head_config.write_bytes(src.read_bytes())
            per_side = [(base_stack, None), (name, head_config)]
        # the head side's check runs beside the two renders (its own interpreter and tree)
        checked = pool.submit(check_tree, head_tree[1], name, sets, head_config)
        b, h = render_sides([base_tree, head_tree], name, [None, sets], rel, per_side)
        if b.stack_file is None and h.stack_file is None:
            what = str(rel) if rel is not None else f"Pulumi.{name}.yaml"
            raise DiffError(f"no {what} on either side")
        base_label = b.label
        if rel is not None and per_side and per_side[0][1] is None:
            base_label += f" {base_what}"
        if b.stack_file is None:  # say it plainly: the whole head side is new
            base_label += f" (has no {base_what}: every resource is new)"
        plan = compare(b.records, h.records, name, base_label, h.label)
        if sets:
            plan.head += " with --set " + " ".join(sets)
        plan.product_upgrade = not sets and _same_file(b.stack_file, h.stack_file)
        plan.cost = cost_delta(b.records, h.records)
        plan.refused = checked.result()
    return plan


def _same_file(a: Path | None, b: Path | None) -> bool:
    """Whether both sides have the stack file and its bytes are the same."""
    return a is not None and b is not None and a.read_bytes() == b.read_bytes()


def cost_delta(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> dict[str, Any]:
    """The cost change between two renders (:mod:`raygke.cost.estimate`): ``{"lines":
    [str], "base": StackCost json, "head": StackCost json}``; ``lines`` is empty when the cost
    did not change."""
    from raygke.cost.estimate import delta_lines, stack_cost

    b, h = stack_cost(base), stack_cost(head)
    return {"lines": delta_lines(b, h), "base": b.to_json(), "head": h.to_json()}
