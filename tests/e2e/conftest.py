"""Shared renders of the shipped stacks for the day-2 tests (one per stack per session)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.day2 import render, stack_data


@pytest.fixture(scope="session")
def base_render() -> dict[str, list[dict[str, Any]]]:
    """``{stack: records}`` of the unchanged dev and prod stacks."""
    return {s: render(s, stack_data(s)) for s in ("dev", "prod")}


@pytest.fixture
def ray_261_locked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository as it is after moving the pin to Ray 2.61.0 and ``raygke images lock``:
    locks for 2.60.0 and 2.61.0 (a Ray bump is a pin change plus ``ray.version``;
    :func:`components.images.locks.ray_version_problem` refuses a version without a lock)."""
    import components.images.locks as locks

    monkeypatch.setattr(locks, "locked_ray_versions", lambda root=locks.ROOT: ("2.60.0", "2.61.0"))
