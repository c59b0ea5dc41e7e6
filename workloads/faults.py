"""Test-only fault injection, outside the workloads' arguments and the user docs (issue 20).

A test (or a person reproducing a failure) sets the environment variable
:data:`contract.registry.FAULTS_ENV` (``RAYGKE_TEST_FAULTS``) of the job's driver to a JSON
object; without it nothing here does anything. Keys:

* ``fail_at_step`` (int) and ``fail_marker`` (path): rank 0 of a Ray Train worker group exits
  right after that step, once: the crash creates the marker file, and a restarted worker that
  finds it trains on (:func:`crash_after_step`, called by :func:`workloads.train_loop.run_loop`);
  with ``fail_times`` (int, default 1) it crashes that many times, the marker holding one line
  per crash (``fail_times`` 2 with ``max_failures`` 1: a retry, then no retry left);
* ``interrupt_after`` (int): ``tune_lm`` interrupts its experiment after that many trials
  completed, as after Ctrl+C (:func:`interrupt_after`).

Ray Train's workers are actors whose environment is the raylet's, not the driver's, so
:func:`carry` binds the driver's value into the worker function it wraps (it travels pickled
with the function); ``raygke local run`` copies the variable into the job's
``runtime_env.env_vars`` (https://docs.ray.io/en/latest/ray-core/handling-dependencies.html).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from contract.registry import FAULTS_ENV

KEYS = ("fail_at_step", "fail_marker", "fail_times", "interrupt_after")


def plan() -> dict[str, Any]:
    """The fault plan of this process: the JSON object in ``RAYGKE_TEST_FAULTS`` ({} unset).

    Raises:
        ValueError: the value is not a JSON object of :data:`KEYS` (names the variable, the
            value and the allowed keys).
    """
    raw = os.environ.get(FAULTS_ENV)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict) or set(value) - set(KEYS):
        raise ValueError(
            f"{FAULTS_ENV}={raw!r} is not a JSON object with keys among {', '.join(KEYS)}"
        )
    return value


def _with_env(raw: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    os.environ[FAULTS_ENV] = raw
    return fn(*args, **kwargs)


def carry(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` itself when no plan is set; else ``fn`` wrapped to set this process's plan in the
    process that calls it (a Ray Train worker)."""
    raw = os.environ.get(FAULTS_ENV)
    if not raw:
        return fn
    plan()  # refuse a malformed plan on the driver, before any worker starts
    return functools.partial(_with_env, raw, fn)


def crash_after_step(rank: int, step: int) -> None:
    """Exit this process (``os._exit(1)``, a worker crash) when the plan's ``fail_at_step`` is
    ``step``, on rank 0, ``fail_times`` times (default once) per ``fail_marker`` (a line per
    crash)."""
    if rank != 0 or not os.environ.get(FAULTS_ENV):
        return
    faults = plan()
    marker = faults.get("fail_marker")
    if faults.get("fail_at_step") != step or not marker:
        return
    crashes = 0
    if os.path.exists(marker):
        with open(marker) as f:
            crashes = max(1, sum(1 for _ in f))  # an empty marker (made by hand): one crash
    if crashes < int(faults.get("fail_times") or 1):
        with open(marker, "a") as f:
            f.write(f"crashed after step {step}\n")
        os._exit(1)


def interrupt_after() -> int | None:
    """The plan's ``interrupt_after`` (trials), or None."""
    value = plan().get("interrupt_after")
    return int(value) if value else None
