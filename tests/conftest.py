"""Shared fixtures. ``ray_cluster``: one private in-process local Ray instance per session.

It never connects to an existing cluster (``address="local"``, RAY_ADDRESS ignored) and avoids
the default ports (6379 / 8265), since other Ray instances may run on this machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """A 2-CPU local Ray instance, shut down at the end of the session.

    ``ray.init(address="local")`` starts a new head whose GCS/raylet ports are picked at random
    (not 6379), and the dashboard (8265) is not started.
    """
    ray = pytest.importorskip("ray")
    os.environ.pop("RAY_ADDRESS", None)
    os.environ.setdefault("RAY_TRAIN_V2_ENABLED", "1")
    if ray.is_initialized():
        ray.shutdown()
    ctx = ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ctx
    finally:
        ray.shutdown()
