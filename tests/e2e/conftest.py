"""Shared renders of the shipped stacks for the day-2 tests (one per stack per session)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.day2 import render, stack_data


@pytest.fixture(scope="session")
def base_render() -> dict[str, list[dict[str, Any]]]:
    """``{stack: records}`` of the unchanged dev and prod stacks."""
    return {s: render(s, stack_data(s)) for s in ("dev", "prod")}
