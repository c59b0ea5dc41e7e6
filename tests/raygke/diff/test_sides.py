"""``raygke.diff.sides``: both sides of a diff render at the same time, each by its own tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from raygke.diff.compare import DiffError
from raygke.diff.sides import render_sides

# A stand-in ``raygke`` package for a tree: its ``synth`` writes a marker, waits (up to 60 s)
# for the other side's marker, then writes a resources.json naming its tree. Run one after the
# other, the first side would wait in vain and fail.
FAKE_MAIN = """
import json, os, sys, time
from pathlib import Path
tree = Path.cwd()
(tree / "started").write_text("")
if tree.name == "broken":
    print("error: this side does not render", file=sys.stderr)
    sys.exit(1)
other = tree.parent / OTHER / "started"
deadline = time.monotonic() + 60
while not other.exists():
    if time.monotonic() > deadline:
        print("error: the other side never started", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.05)
out = Path(sys.argv[sys.argv.index("--out") + 1])
(out / "resources.json").write_text(json.dumps([{"tree": tree.name}]))
"""


def _tree(base: Path, name: str, other: str) -> Path:
    tree = base / name
    (tree / "raygke").mkdir(parents=True)
    (tree / "raygke" / "__init__.py").write_text("")
    (tree / "raygke" / "__main__.py").write_text(
        textwrap.dedent(FAKE_MAIN).replace("OTHER", repr(other))
    )
    (tree / "Pulumi.s.yaml").write_text("config: {}\n")
    return tree


def test_both_sides_render_at_the_same_time_each_in_its_own_tree(tmp_path: Path) -> None:
    a, b = _tree(tmp_path, "a", "b"), _tree(tmp_path, "b", "a")
    base, head = render_sides([("base", a), ("head", b)], "s", [None, ["x=1"]])
    assert (base.label, base.records, base.stack_file) == (
        "base",
        [{"tree": "a"}],
        a / "Pulumi.s.yaml",
    )
    assert (head.label, head.records, head.tree) == ("head", [{"tree": "b"}], b)


def test_a_side_that_fails_is_reported_with_its_label(tmp_path: Path) -> None:
    broken, ok = _tree(tmp_path, "broken", "ok"), _tree(tmp_path, "ok", "broken")
    with pytest.raises(DiffError) as e:
        render_sides([("main (abc1234)", broken), ("working tree", ok)], "s", [None, None])
    assert str(e.value).startswith("rendering main (abc1234) failed (exit 1)")
    assert "this side does not render" in str(e.value)


def test_the_head_sides_check_lists_what_renders_but_would_never_run() -> None:
    """A quota cut renders (the config is valid) but leaves a job no quota can ever admit:
    the head side's own ``raygke check --no-policy`` lists it; the stack as it is lists none."""
    from raygke.diff.sides import check_tree
    from tests.helpers import ROOT

    cut = "capacity.cluster_queues[dev].flavors[system].nominal.cpu=1"
    (line,) = check_tree(ROOT, "dev", [cut])
    assert line.startswith("jobs[train-lm-l4]: can never be admitted by queue dev")
    assert line.path and line.rule  # the records of raygke check --format json
    assert check_tree(ROOT, "dev") == []
    assert check_tree(ROOT, "no-such-stack") == []  # no file on this side: nothing to check


def test_a_refused_head_is_listed_after_the_plan_and_never_exits_0(monkeypatch) -> None:
    """``raygke diff`` prints the plan, then the problems check finds in the head side under
    ``Refused:``, and exits 1 (5 with --exit-code, as for a side that cannot render)."""
    from typer.testing import CliRunner

    import raygke.diff.sides as sides
    from components.kernel.problems import Problem
    from raygke.cli import app
    from raygke.diff.compare import Plan

    refused = [Problem("jobs[x]", "jobs[x]: can never be admitted", "capacity")]
    plan = Plan("dev", "HEAD", "working tree", [], 12, refused=refused)
    monkeypatch.setattr(sides, "plan_sides", lambda *a, **k: plan)
    for args, code in (([], 1), (["--exit-code"], 5)):
        r = CliRunner().invoke(app, ["diff", "--stack", "dev", *args], env={"NO_COLOR": "1"})
        assert r.exit_code == code, r.output
        assert "Resources: no changes, 12 unchanged" in r.output
        assert "Refused: raygke check finds 1 problem in the head side" in r.output
        assert "  - jobs[x]: can never be admitted" in r.output
    r = CliRunner().invoke(app, ["diff", "--stack", "dev", "--format", "markdown"])
    assert r.exit_code == 1
    assert "🛑 **Refused: raygke check finds 1 problem" in r.output
    assert "- jobs[x]: can never be admitted" in r.output
    plan.refused = []
    assert CliRunner().invoke(app, ["diff", "--stack", "dev", "--exit-code"]).exit_code == 0


# A stand-in ``raygke`` whose synth renders one resource holding the stack file's text, its URN
# holding the stack's name as Pulumi's does (``check`` prints no JSON: nothing refused), for
# plan_sides in a real git repository.
ECHO_MAIN = """
import json, sys
from pathlib import Path
args = sys.argv[1:]
if args[0] != "synth":
    sys.exit(3)
if "--config" in args:
    path = Path(args[args.index("--config") + 1])
else:
    path = Path(f"Pulumi.{args[args.index('--stack') + 1]}.yaml")
out = Path(args[args.index("--out") + 1])
stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")  # as raygke names the stack
text = path.read_text()
record = {"type": "t:index:R", "name": "r", "urn": f"urn:{stack}:r", "inputs": {"text": text}}
(out / "resources.json").write_text(json.dumps([record]))
"""


def _repo(tmp_path: Path) -> Path:
    import subprocess

    repo = tmp_path / "repo"
    (repo / "raygke").mkdir(parents=True)
    (repo / "raygke" / "__init__.py").write_text("")
    (repo / "raygke" / "__main__.py").write_text(textwrap.dedent(ECHO_MAIN))
    (repo / "Pulumi.dev.yaml").write_text("config: {a: 1}\n")
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)
    return repo


def test_a_config_outside_the_repository_is_compared_with_the_stack_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raygke.diff.sides import plan_sides

    repo = _repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "copy.yaml"
    mine.write_text("config: {a: 2}\n")
    plan = plan_sides(None, mine, None, None, root=repo, against="dev")
    assert plan.base.startswith("main (") and plan.base.endswith(" Pulumi.dev.yaml"), plan.base
    (change,) = plan.changes  # rendered as stack dev, so the same URN: an update
    assert change.op == "update" and "has no" not in plan.base and plan.stack == "dev"

    # no --against: a file named like a stack file is compared with the repository's one
    same = tmp_path / "Pulumi.dev.yaml"
    same.write_text("config: {a: 1}\n")
    plan = plan_sides(None, same, None, None, root=repo)
    assert plan.changes == [] and "the repository's file of the same name" in plan.base
    with pytest.raises(DiffError, match="give --against STACK"):
        plan_sides(None, mine, None, None, root=repo)

    # a new file inside the repository: the base side has none, and says so
    (repo / "Pulumi.new.yaml").write_text("config: {a: 3}\n")
    plan = plan_sides(None, repo / "Pulumi.new.yaml", None, None, root=repo)
    assert plan.base.endswith("(has no Pulumi.new.yaml: every resource is new)"), plan.base
    assert [c.op for c in plan.changes] == ["create"]
    # the signature other commands call keeps working (positional, no against)
    plan = plan_sides("dev", None, "HEAD", None, [], repo)
    assert plan.changes == [] and plan.stack == "dev"
