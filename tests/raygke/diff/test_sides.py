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
