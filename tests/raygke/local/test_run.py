"""raygke/local/run.py's pure parts: a job's console line."""

from __future__ import annotations

import json

from rich.console import Console

from raygke.local.run import BRIEF_STR_MAX, result_brief, success_line


def test_a_result_line_keeps_numbers_and_cuts_long_strings_and_nested_values() -> None:
    sample = "def f(x):\n    return x\n" * 20
    result = {
        "rows": 116046,
        "bytes": 31512085,
        "ok": True,
        "dataset": "/tmp/d",
        "sample": sample,
        "skipped": {"exclude '.git/*'": 0, "empty": 28},
        "shards": [1, 2, 3],
    }
    line = result_brief(result)
    assert "\n" not in line.replace("\\n", "")  # one console line
    brief = json.loads(line)
    assert brief["rows"] == 116046 and brief["bytes"] == 31512085 and brief["ok"] is True
    assert brief["dataset"] == "/tmp/d"
    assert len(brief["sample"]) == BRIEF_STR_MAX and brief["sample"].endswith("…")
    assert sample.startswith(brief["sample"][:-1])
    assert brief["skipped"] == "{2 keys}" and brief["shards"] == "[3 items]"


def test_a_result_that_is_not_a_mapping_is_its_json_cut_with_an_ellipsis() -> None:
    assert result_brief([1, 2]) == "[1, 2]"
    long = result_brief("x" * 1000)
    assert len(long) == 300 and long.endswith("…")


def test_the_success_line_prints_brackets_in_a_result_as_text() -> None:
    console = Console(record=True, width=200, color_system=None)
    console.print(success_line("prepare", 9.74, {"dataset": "/data/[train]/x", "rows": 3}))
    text = console.export_text()
    assert text.strip() == 'prepare succeeded in 9.7 s: {"dataset": "/data/[train]/x", "rows": 3}'
