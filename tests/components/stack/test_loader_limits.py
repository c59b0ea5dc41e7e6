"""The stack-file reader refuses pathological input with one line instead of crashing or
expanding without bound (a 993-byte file of nested ``[``, a 633-byte file of aliases of aliases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.stack import StackFileError, load_stack_file, read_stack_yaml
from components.stack.loader import MAX_DEPTH, MAX_VALUES


@pytest.mark.parametrize("depth", [40, 492, 5000])
def test_deep_nesting_is_refused(depth: int) -> None:
    text = "config:\n  ray-gke:jobs: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(StackFileError) as exc:
        read_stack_yaml(text, "f")
    assert len(exc.value.problems) == 1 and "nest" in exc.value.problems[0]


def test_shallow_nesting_is_read() -> None:
    depth = MAX_DEPTH - 3
    doc = read_stack_yaml("x: " + "[" * depth + "]" * depth)
    assert isinstance(doc["x"], list)


def test_alias_expansion_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdef"):
        prev = "abcdef"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    text = "\n".join(lines) + "\n"
    assert len(text) < 700
    with pytest.raises(StackFileError) as exc:
        read_stack_yaml(text)
    assert str(MAX_VALUES) in exc.value.problems[0] and "aliases" in exc.value.problems[0]


def test_invalid_timestamp_and_binary_are_file_errors(tmp_path: Path) -> None:
    with pytest.raises(StackFileError, match="not valid YAML"):
        read_stack_yaml("config:\n  ray-gke:project: 2001-02-30\n")
    f = tmp_path / "Pulumi.bin.yaml"
    f.write_bytes(b"config:\n  ray-gke:project: \xff\xfe\n")
    with pytest.raises(StackFileError, match="not UTF-8"):
        load_stack_file(f)


def test_oversized_file_is_refused() -> None:
    with pytest.raises(StackFileError, match="at most"):
        read_stack_yaml("#" * 2_000_000)
