"""Registry and CLI contract (no Ray needed)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from contract.registry import DEFAULT_PIPELINE, RESULT_PREFIX, WORKLOADS, get_workload
from workloads.common import emit_result, parse_config


def test_pipeline_names_are_registered_with_modules() -> None:
    for name in DEFAULT_PIPELINE:
        w = get_workload(name)
        assert w.name == name
        assert w.module == f"workloads.{name}"
        assert set(w.accelerators) <= {"cpu", "gpu", "tpu"}
        assert w.num_cpus > 0


def test_entrypoint_is_sorted_quoted_json_merged_over_defaults() -> None:
    w = get_workload("train_lm")
    cmd = w.entrypoint({"steps": 5, "name": "it's"})
    argv = shlex.split(cmd)
    assert argv[:4] == ["python", "-m", "workloads.train_lm", "--config-json"]
    payload = json.loads(argv[4])
    assert payload == {**w.default_args, "steps": 5, "name": "it's"}
    assert list(payload) == sorted(payload)


def test_unknown_workload_lists_valid_names() -> None:
    with pytest.raises(KeyError) as e:
        get_workload("nope")
    for name in WORKLOADS:
        assert name in str(e.value)


def test_registry_imports_only_the_standard_library() -> None:
    code = (
        "import sys, contract.registry;"
        "bad = [m for m in ('ray', 'torch', 'pulumi', 'components', 'workloads', 'pyarrow', 'jax')"
        " if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_parse_config_json_then_flags_override() -> None:
    cfg = parse_config("train_lm", ["--config-json", '{"steps": 7, "lr": 0.1}', "--lr", "0.5"])
    assert cfg["steps"] == 7
    assert cfg["lr"] == 0.5
    assert cfg["num_workers"] == get_workload("train_lm").default_args["num_workers"]


def test_result_line_is_last_and_parseable(capsys: pytest.CaptureFixture[str]) -> None:
    print("some log")
    emit_result({"rows": 3, "dataset": "/x"})
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(RESULT_PREFIX)
    assert json.loads(last[len(RESULT_PREFIX) :]) == {"rows": 3, "dataset": "/x"}


def test_workload_cli_reports_bad_arguments_in_one_line_each_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "workloads.train_lm", "--steps", "abc", "--batch-size", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "train_lm: argument 'steps' of workload train_lm is 'abc'; expected int (e.g. 450)",
        "train_lm: argument 'batch_size' of workload train_lm is 0; must be >= 1",
    ]
