from __future__ import annotations

from components.plan.nodepools import nap_shapes
from tests.helpers import stack


def test_nap_shapes_follow_resource_limits() -> None:
    cfg = stack("dev")  # NAP limits: tpu-v5-lite-podslice 8, nvidia-l4 4
    names = {s.name for s in nap_shapes(cfg.nap)}
    assert "NAP tpu-v5-lite-podslice 2x4" in names
    assert "NAP tpu-v5-lite-podslice 4x4" not in names  # 16 chips > limit 8
    assert "NAP 4x nvidia-l4 (latest driver)" in names
    assert "NAP 4x nvidia-l4 (default driver)" in names
    assert not any(n.startswith("NAP 8x nvidia-l4") for n in names)


def test_no_nap_shapes_without_nap() -> None:
    nap = stack("dev").nap.model_copy(update={"enabled": False})
    assert nap_shapes(nap) == []
