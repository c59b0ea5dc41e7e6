"""raygke/local/run.py's pure parts: a job's console line."""

from __future__ import annotations

import json

from rich.console import Console

from raygke.local.run import BRIEF_STR_MAX, result_brief, shorten, success_line


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
    assert len(brief["sample"]) <= BRIEF_STR_MAX and brief["sample"].endswith("…")
    assert sample.startswith(brief["sample"][:-1])
    assert sample[len(brief["sample"]) - 1].isspace()  # cut between words
    assert brief["skipped"] == "{2 keys}" and brief["shards"] == "[3 items]"


def test_a_result_that_is_not_a_mapping_is_its_json_cut_with_an_ellipsis() -> None:
    assert result_brief([1, 2]) == "[1, 2]"
    long = result_brief("x" * 1000)  # one word: no separator to cut at
    assert len(long) == 300 and long.endswith("…")
    words = result_brief(list(range(200)))
    assert len(words) <= 300 and words.endswith(",…") and "[0, 1, 2" in words


def test_the_success_line_prints_brackets_in_a_result_as_text() -> None:
    console = Console(record=True, width=200, color_system=None)
    result = {"steps": 3, "first_loss": 5.5, "last_loss": 2.0, "tokens_per_s": 1234.5}
    console.print(success_line("train_lm", 9.74, {**result, "checkpoint": "/data/[train]/x"}))
    text = console.export_text()
    assert text.strip() == (
        "train_lm succeeded in 9.7 s: 3 steps, loss 5.500 -> 2.000 nats/byte, 1,234 tokens/s; "
        "checkpoint /data/[train]/x"
    )


def test_each_stage_says_what_it_did_in_one_line_of_words_not_json() -> None:
    """Issue 50: the success lines printed raw JSON (``"skipped_by": "{11 keys}"``) and
    ``include '*.py': 660`` for 660 files the filter left out."""
    from raygke.local.run import job_summary

    prep = {
        "rows": 116046, "val_rows": 1024, "files": 1750, "bytes": 31512085, "dataset": "/d",
        "skipped_by": {"include '*.py'": 660, "exclude '.git/*'": 0, "empty": 28},
        "val_carved": None, "skipped": 688,
    }  # fmt: skip
    assert job_summary("prepare", prep) == (
        "116,046 training windows, 1,024 validation; corpus files: 1,750 kept, 688 skipped "
        "(660 not matching include '*.py', 28 empty)"
    )
    ev = {"val_loss": 1.0823, "val_rows": 4096, "xz_nats_per_byte": 1.084, "val_vs_xz": 0.998}
    assert job_summary("evaluate", {**ev, "sample": "def f():\n"}) == (
        "validation loss 1.082 nats/byte on 4,096 rows (xz -9e 1.084, model/xz 0.998)"
    )
    train = job_summary("train_lm", {"steps": 900, "first_loss": 5.6, "last_loss": 1.1,
                                     "tokens_per_s": 15241.2, "checkpoint": CKPT})  # fmt: skip
    assert train.startswith("900 steps, loss 5.600 -> 1.100 nats/byte, 15,241 tokens/s; ")
    assert train.endswith("/checkpoint_000010")
    other = job_summary("tune_lm", {"best_trial": "t_1", "val_loss": 1.23456, "trials": {"a": 1}})
    assert other == "best_trial t_1, val_loss 1.235"
    for line in (job_summary("prepare", prep), train, other):
        assert "{" not in line and '"' not in line


CKPT = (
    "/home/someone/projects/ray-gke/.raygke/local/buckets/checkpoints/"
    "lm-stdlib-20261203-221100/checkpoint_000010"
)


def test_a_long_path_is_shortened_at_its_separators_keeping_its_last_components() -> None:
    short = shorten(CKPT)
    assert short == "/…/checkpoints/lm-stdlib-20261203-221100/checkpoint_000010"
    assert len(short) <= BRIEF_STR_MAX
    head, _, tail = short.partition("…")
    assert CKPT.startswith(head) and CKPT.endswith(tail)  # whole components on both sides
    assert tail.startswith("/") and head.endswith("/")
    rel = "relative/path/to/some/very/long/place/in/the/tree/file_name.parquet"
    assert shorten(rel) == "relative/…/very/long/place/in/the/tree/file_name.parquet"
    assert shorten("/data/short/path") == "/data/short/path"  # fits: unchanged


def test_a_path_whose_last_name_alone_is_too_long_keeps_what_fits() -> None:
    assert shorten("/a/" + "b" * 50, 40) == "…/" + "b" * 37 + "…"
    assert shorten("/a/b/" + "c" * 30, 33) == "/…/" + "c" * 30
    assert shorten("/a/b/" + "c" * 30, 32) == "…/" + "c" * 30


def test_text_is_cut_between_words() -> None:
    text = "the quick brown fox jumps over the lazy dog " * 3
    short = shorten(text, 30)
    assert short == "the quick brown fox jumps…"
    assert shorten("a" * 40 + " tail", 30) == "a" * 29 + "…"  # one word over the limit


def test_the_success_line_shows_the_checkpoint_path_cut_at_separators() -> None:
    line = json.loads(result_brief({"checkpoint": CKPT, "steps": 10}))
    assert line["checkpoint"].endswith("/checkpoint_000010") and "…/" in line["checkpoint"]


def test_prepare_counts_add_up_on_its_success_line_and_in_the_summary() -> None:
    """prepare's ``skipped`` is every file a filter left out (the sum of ``skipped_by``): the
    success line and the run's summary show the same figure (they said 32 and listed 814)."""
    from raygke.local.run import corpus_files
    from raygke.local.summary import summarize
    from workloads.prepare import result_of

    by = {"include '*.py'": 754, "exclude '.git/*'": 0, "not text": 4, "empty": 28, "x": 28}
    manifest = {
        "rows": 10, "val_rows": 2, "files": 1234, "bytes": 99, "dataset": "/d",
        "skipped_by": by, "val_carved": None, "shards": {}, "skipped": [["a", "empty"]] * 32,
    }  # fmt: skip
    result = result_of(manifest)
    assert result["skipped"] == 814 == sum(by.values())
    assert "1,234 kept, 814 skipped (" in success_line("prepare", 1.0, result)  # the success line
    summary = summarize({"prepare": result})
    line = corpus_files(summary["files"], summary["skipped_by"])
    assert line.startswith("1,234 kept, 814 skipped (754 not matching include '*.py', ")
    listed = [
        int(p.split(" ", 1)[0].replace(",", "")) for p in line[:-1].split(" (", 1)[1].split(", ")
    ]
    assert sum(listed) == 814 and "exclude '.git/*'" not in line  # zero counts left out
    assert corpus_files(5, None) == "5 kept, 0 skipped" and corpus_files(None, by) == "-"
