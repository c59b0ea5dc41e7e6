"""Checks on the rendered stack (placeholder: filled in by the platform work)."""

from components.config import StackConfig


def check_stack(cfg: StackConfig) -> list[str]:
    """Problems found in the rendered stack, one line each (empty when none)."""
    return []
