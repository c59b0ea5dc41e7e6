"""Property test of the whole ``raygke check`` path (file read, YAML, validation, render, checks),
in-process: generated and mutated stack files never crash it.

Each example starts from the shipped ``Pulumi.dev.yaml`` / ``Pulumi.prod.yaml`` (parsed), mutates
leaves with random values of random types (strings with control characters, huge ints, NaN/inf,
dates, None, nested containers, deep nesting), shares subtrees so the written YAML carries
anchors and aliases (alias bombs included), writes it as YAML, optionally damages the bytes
(random bytes, truncation, a BOM, a binary blob), and runs ``raygke check --config FILE`` through
:func:`raygke.cli.main`. Asserted: the exit code is 0, 1 or 2 (never 3, an internal error), no
traceback is printed, and a stack ``check`` accepts also renders (manifests and node pools build
and serialise to strict JSON; a sample runs the whole Pulumi program through ``raygke synth``).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
import unicodedata
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.stack.loader import read_stack_yaml
from raygke.cli import main

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [read_stack_yaml((ROOT / f"Pulumi.{s}.yaml").read_text()) for s in ("dev", "prod")]
WORKDIR = Path(tempfile.mkdtemp(prefix="raygke-fuzz-"))

# Outcomes per test (exit code -> examples), printed at the end of the module (pytest -s).
FIGURES: dict[str, Counter[int]] = {}

control_text = st.text(
    st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Lu", "Ll", "Nd", "Pd", "So"]),
    max_size=20,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**31, 2**63, 2**64 + 1, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.dates(),
    st.datetimes(timezones=st.just(UTC)),
    control_text,
    st.sampled_from(
        ["v5e", "v6e", "2x2", "4x4", "nvidia-l4", "spot", "reservation", "", "-", "a" * 70]
    ),
    st.sampled_from(["ct6e-standard-4t", "ct5lp-hightpu-4t", "a2-highgpu-8g", "n2-standard-8"]),
    st.sampled_from(["cpu", "train_lm", "train_lm_jax", "evaluate", "prepare", "research"]),
    # issue 24's classes: bounds of the systems rendered into, reserved namespaces, ranges
    # is_private calls private, upper-case names
    st.sampled_from([2**31 - 1, 4000, 4001, 2**63 - 1, 16, 17, 65]),
    st.sampled_from(["kube-system", "kube-public", "gke-managed-system", "gmp-system", "default"]),
    st.sampled_from(["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "127.0.0.0/8"]),
    st.sampled_from(["169.254.0.0/16", "100.64.0.0/10", "10.0.0.0/8", "UPPER", "Team"]),
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(control_text, children, max_size=4)
    ),
    max_leaves=10,
)


def _nested(depth: int, leaf: Any) -> Any:
    for i in range(depth):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


def _bomb(width: int, levels: int) -> Any:
    """Aliases of aliases: ``width ** levels`` leaves from ``width * levels`` nodes in YAML."""
    node: Any = ["lol"]
    for _ in range(levels):
        node = [node] * width
    return node


def _same_type(value: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(-2, 2 * abs(value) + 2), st.integers())
    if isinstance(value, float):
        return st.floats()
    if isinstance(value, str):
        edits = [
            value + "\n",
            value + "\x00",
            value.upper(),
            value[:-1],
            value * 2,
            "\u202e" + value,
        ]
        return st.one_of(st.sampled_from(edits), control_text)
    return values


def _paths(node: Any, prefix: tuple = (), seen: set[int] | None = None) -> list[tuple]:
    """Paths to every node, each shared container (an alias) entered once: an alias bomb has
    ``width ** levels`` paths otherwise."""
    seen = set() if seen is None else seen
    out = [prefix]
    if isinstance(node, dict | list):
        if id(node) in seen:
            return out
        seen.add(id(node))
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k), seen)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i), seen)
    return out


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def stack_docs(draw: st.DrawFn) -> Any:
    """A shipped stack document with 1-4 structural mutations."""
    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3, 4]))):
        paths = [p for p in _paths(doc) if len(p) >= 2]
        path = draw(st.sampled_from(paths))
        parent = _get(doc, path[:-1])
        action = draw(
            st.sampled_from(
                [
                    "nudge",
                    "nudge",
                    "replace",
                    "replace",
                    "delete",
                    "add",
                    "deep",
                    "alias",
                    "bomb",
                    "duplicate",
                    "strbomb",
                ]
            )
        )
        if action == "nudge":  # a value of the same type: reaches the deeper validators
            parent[path[-1]] = draw(_same_type(parent[path[-1]]))
        elif action == "delete":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "add":
            if isinstance(parent, dict):
                parent[draw(st.one_of(control_text, st.sampled_from(_KEYS)))] = draw(values)
            else:
                parent.append(draw(values))
        elif action == "deep":
            parent[path[-1]] = _nested(draw(st.integers(1, 60)), draw(scalars))
        elif action == "alias":  # the same object twice: the YAML writer emits &anchor / *alias
            target = _get(doc, draw(st.sampled_from(paths)))
            if isinstance(target, dict | list) and not _contains(target, parent):
                parent[path[-1]] = target
        elif action == "duplicate":  # an entry listed twice (a secret reader, a zone, a pool)
            if isinstance(parent, list):
                parent.append(copy.deepcopy(parent[path[-1]]))
            elif isinstance(parent[path[-1]], list) and parent[path[-1]]:
                parent[path[-1]].append(copy.deepcopy(parent[path[-1]][0]))
        elif action == "strbomb":  # one long string aliased many times: MBs from a small file
            text = [draw(st.sampled_from(["a", "kube-system", "10.0.0.0/8"])) * 50_000]
            parent[path[-1]] = [text] * draw(st.integers(2, 60))
        else:
            parent[path[-1]] = _bomb(draw(st.integers(2, 12)), draw(st.integers(2, 8)))
    return doc


def _contains(node: Any, target: Any, seen: set[int] | None = None) -> bool:
    """Whether ``target`` is ``node`` or inside it (an alias must not make a cycle)."""
    seen = set() if seen is None else seen
    if node is target:
        return True
    if id(node) in seen:
        return False
    seen.add(id(node))
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return any(_contains(c, target, seen) for c in children)


# Keys that are derived, removed or misplaced: the "add" mutation tries them where they do not fit.
_KEYS = ["machine_type", "chips_per_host", "hosts", "num_workers", "ray_addon", "tpu", "gpu"]


def _dump(doc: Any) -> bytes:
    """``doc`` as YAML bytes, through libyaml's C emitter (PyYAML's ``CSafeDumper``): ruamel's
    pure-Python emitter took about 0.2 s an example, as long as the check it feeds. A shared
    object is written once with an ``&anchor`` and ``*alias`` elsewhere, as ruamel does."""
    return yaml.dump(
        doc, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False, encoding="utf-8"
    )


@st.composite
def stack_files(draw: st.DrawFn) -> bytes:
    """The bytes of a stack file: a mutated shipped stack, sometimes damaged as bytes."""
    data = _dump(draw(stack_docs()))
    damage = draw(st.sampled_from(["none"] * 6 + ["bytes", "truncate", "bom", "binary"]))
    if damage == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif damage == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "binary":
        data = draw(st.binary(max_size=200))
    return data


def run_cli(*args: str) -> tuple[int, str]:
    """``raygke ARGS`` in-process: (exit code, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


def check_file(data: bytes) -> tuple[int, str, Path]:
    """Write ``data`` as a stack file and run ``raygke check --config`` on it."""
    path = WORKDIR / "Pulumi.fuzz.yaml"
    path.write_bytes(data)
    rc, out = run_cli("check", "--config", str(path))
    return rc, out, path


def assert_renders(path: Path) -> None:
    """What ``pulumi up`` would be given: manifests, node pools and outputs build, and are strict
    JSON (no NaN, no dates)."""
    from components.nodepools.render import node_pool_specs
    from components.plan.plan import plan
    from components.raycrs.archive import working_dir_uri
    from components.raycrs.render import render_manifests
    from components.stack.loader import load_stack_file
    from components.stack.outputs import accelerator_summary

    cfg = load_stack_file(path)
    manifests = render_manifests(cfg, working_dir_uri(plan(cfg).context, "0123456789abcdef"))
    json.dumps(manifests, allow_nan=False)
    json.dumps([repr(s) for s in node_pool_specs(plan(cfg))])
    json.dumps(accelerator_summary(cfg), allow_nan=False)


def _property(data: bytes, figures: Counter[int]) -> None:
    rc, out, path = check_file(data)
    figures[rc] += 1
    assert "Traceback" not in out, out
    assert rc in (0, 1, 2), out
    shown = [c for c in out if unicodedata.category(c) == "Cc" and c != "\n"]
    assert not shown, f"control characters {shown!r} printed raw (print values with repr): {out}"
    if rc == 0:
        assert_renders(path)


@pytest.fixture(scope="module", autouse=True)
def _print_figures():
    yield
    for name, c in FIGURES.items():
        total = sum(c.values())
        print(
            f"\n{name}: {total} examples, {c[0]} accepted, {c[1]} refused (invalid), "
            f"{c[2]} refused (unreadable), {total - c[0] - c[1] - c[2]} crashed"
        )


_SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(max_examples=100, **_SETTINGS)
@given(stack_files())
def test_check_never_crashes(data: bytes) -> None:
    _property(data, FIGURES.setdefault("fast", Counter()))


# 500 examples (1,000 until make test's 15-minute target: 335 s of a 37-minute run), on top of
# the 100 above with another seed each run.
@pytest.mark.slow
@pytest.mark.timeout(900)  # about 0.35 s an example on a quiet 2-core machine
@settings(max_examples=500, **_SETTINGS)
@given(stack_files())
def test_check_never_crashes_500(data: bytes) -> None:
    _property(data, FIGURES.setdefault("slow", Counter()))


@pytest.mark.slow
@settings(max_examples=15, **_SETTINGS)
@given(stack_docs())
def test_accepted_stacks_synth(doc: Any) -> None:
    """A sample of accepted stacks runs the real Pulumi program (``raygke synth``, mocks)."""
    rc, out, path = check_file(_dump(doc))
    assert rc in (0, 1, 2) and "Traceback" not in out, out
    if rc == 0:
        rc, out = run_cli("synth", "--config", str(path), "--out", str(WORKDIR / "synth"))
        assert rc == 0, out


def test_nested_brackets_and_alias_bomb_are_refused() -> None:
    """The two inputs of issue 10: 492 nested ``[`` and a 633-byte alias expansion."""
    rc, out, _ = check_file(b"config: " + b"[" * 492)
    assert rc == 2 and "nested too deeply" in out, out
    bomb = _dump({"config": {"ray-gke:labels": _bomb(10, 9)}})
    assert len(bomb) < 2000
    rc, out, _ = check_file(bomb)
    assert rc == 2 and "expands to more than" in out, out


def test_dates_and_nan_in_job_args() -> None:
    doc = copy.deepcopy(SEEDS[0])
    job = doc["config"]["ray-gke:jobs"][0]
    job["workload"] = "evaluate"
    for value, what in ((date(2001, 12, 14), "a date"), (float("nan"), "nan")):
        job["args"] = {"checkpoint": value}
        rc, out, _ = check_file(_dump(doc))
        assert rc == 1, out
        assert what in out, out
    job["args"] = {"steps": datetime(2001, 12, 14, tzinfo=UTC)}
    rc, out, _ = check_file(_dump(doc))
    assert rc == 1 and "Traceback" not in out, out


def test_control_characters_in_keys_and_names_print_quoted() -> None:
    doc = copy.deepcopy(SEEDS[0])
    doc["config"]["x\x7f:y"] = 1
    doc["config"]["ray-gke:node_pools"][0]["name"] = "cpu\x1b[31m"
    rc, out, _ = check_file(_dump(doc))
    assert rc == 1, out
    assert "'x\\x7f:y': unknown config namespace" in out
    assert "\x1b" not in out and "\x7f" not in out, out
