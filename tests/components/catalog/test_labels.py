"""components.catalog.labels: taints as Kubernetes tolerations and as GKE's node config."""

from __future__ import annotations

from components.catalog import GPU_TAINT, TPU_TAINT, Taint


def test_toleration_matches_the_taint() -> None:
    assert TPU_TAINT.toleration() == {
        "key": "google.com/tpu",
        "operator": "Equal",
        "value": "present",
        "effect": "NoSchedule",
    }
    assert GPU_TAINT.key == "nvidia.com/gpu"


def test_gke_effects_are_screaming_case() -> None:
    assert TPU_TAINT.gke() == {"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}
    assert Taint("k", "v", "PreferNoSchedule").gke()["effect"] == "PREFER_NO_SCHEDULE"
    assert Taint("k", "v", "NoExecute").gke()["effect"] == "NO_EXECUTE"
