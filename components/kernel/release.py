"""This release's defaults epoch and how a stack file writes one (``ray-gke:defaults``).

The kernel's part of :mod:`components.config.epochs` (which holds what each epoch changes): the
stack model validates ``defaults`` with :func:`epoch_problem`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

RELEASE = "2026-12-08"
"""This release's defaults epoch: what a new stack file is written for."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def epoch_problem(value: str) -> str | None:
    """Why ``value`` is not a defaults epoch (an ISO date no later than
    :data:`RELEASE`), else None."""
    if not _DATE.fullmatch(value):
        return f"{value!r} is not a release date; write a date as YYYY-MM-DD, e.g. {RELEASE!r}"
    try:
        date.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not a date"
    if value > RELEASE:
        return (
            f"{value} is newer than this release's defaults ({RELEASE}); write {RELEASE} or an "
            "earlier date (upgrade ray-gke for a later one)"
        )
    return None


@dataclass(frozen=True)
class Epoch:
    """The release whose defaults a stack is read with.

    Attributes:
        date: an ISO date; ``""`` is before every release.
        why: how it was found, in words, when the stack names none (``""`` when it does).
    """

    date: str
    why: str
