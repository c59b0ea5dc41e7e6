"""workloads/faults.py: the test-only fault plan in RAYGKE_TEST_FAULTS. No Ray."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from contract.registry import FAULTS_ENV
from workloads import faults


def _read_env() -> str | None:
    import os

    return os.environ.get(FAULTS_ENV)


def test_without_the_variable_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    assert faults.plan() == {}
    assert faults.interrupt_after() is None
    assert faults.carry(_read_env) is _read_env
    faults.crash_after_step(0, 1)  # returns


def test_a_malformed_plan_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULTS_ENV, '{"fail_at_stpe": 3}')
    with pytest.raises(ValueError, match=f"{FAULTS_ENV}=.*keys among fail_at_step"):
        faults.plan()
    monkeypatch.setenv(FAULTS_ENV, "not json")
    with pytest.raises(ValueError, match="not a JSON object"):
        faults.carry(_read_env)


def test_carry_sets_the_plan_where_the_wrapped_function_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The wrapper pickles (Ray ships it to the workers) and sets the driver's plan in the
    process that calls it."""
    value = json.dumps({"interrupt_after": 2})
    monkeypatch.setenv(FAULTS_ENV, value)
    wrapped = pickle.loads(pickle.dumps(faults.carry(_read_env)))
    monkeypatch.delenv(FAULTS_ENV)
    assert wrapped() == value
    assert faults.interrupt_after() == 2


def test_the_crash_happens_once_on_rank_0_at_its_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = tmp_path / "crashed"
    monkeypatch.setenv(FAULTS_ENV, json.dumps({"fail_at_step": 3, "fail_marker": str(marker)}))
    exits: list[int] = []
    monkeypatch.setattr(faults.os, "_exit", exits.append)
    faults.crash_after_step(1, 3)  # not rank 0
    faults.crash_after_step(0, 2)  # not its step
    assert exits == [] and not marker.exists()
    faults.crash_after_step(0, 3)
    assert exits == [1] and marker.exists()
    faults.crash_after_step(0, 3)  # the marker exists: once only
    assert exits == [1]


def test_fail_times_crashes_that_many_times_counting_in_the_marker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = tmp_path / "crashed"
    plan = {"fail_at_step": 3, "fail_marker": str(marker), "fail_times": 2}
    monkeypatch.setenv(FAULTS_ENV, json.dumps(plan))
    exits: list[int] = []
    monkeypatch.setattr(faults.os, "_exit", exits.append)
    faults.crash_after_step(0, 3)
    faults.crash_after_step(0, 3)
    assert exits == [1, 1] and len(marker.read_text().splitlines()) == 2
    faults.crash_after_step(0, 3)  # crashed twice already
    assert exits == [1, 1]
    marker.write_text("")  # an empty marker (made by hand) counts as one crash
    faults.crash_after_step(0, 3)
    assert exits == [1, 1, 1]
