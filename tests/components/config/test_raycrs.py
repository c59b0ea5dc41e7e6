"""``kuberay.chart_version`` is a carried KubeRay version, and the check follows it; RayJob
lifecycle fields (shutdown, TTL, suspend, backoff) are refused where KubeRay would refuse them."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config.kuberay import KUBERAY_CHART_VERSIONS
from components.config.raycrs import DEFAULT_JOB_TTL_SECONDS
from components.config.stack import StackConfig
from components.kernel.base import StackConfigError
from components.kuberay.render import CARRIED_CRDS, carried_crds_dir
from components.plan.plan import plan
from components.raycrs.crd import crds_dir, validate_manifests
from components.raycrs.rayjob import job_args
from components.raycrs.render import render_manifests
from components.stack.checks import check_manifests
from components.stack.loader import validate
from tests.helpers import WORKING_DIR, config

CLUSTERS = [
    {"name": "rc", "worker_groups": [{"name": "cpu", "node_pool": "cpu"}]},
]


def _problems(data: dict) -> list[str]:
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    return exc.value.problems


def test_declared_versions_are_the_carried_crd_folders() -> None:
    """KUBERAY_CHART_VERSIONS and components/kuberay/crds/v*/ stay in step."""
    folders = {p.name for p in CARRIED_CRDS.iterdir() if p.is_dir()}
    assert folders == {f"v{v}" for v in KUBERAY_CHART_VERSIONS}
    for v in KUBERAY_CHART_VERSIONS:
        assert (carried_crds_dir(v) / "ray.io_rayjobs.yaml").is_file()


def test_unknown_chart_version_is_one_line_listing_the_carried_ones() -> None:
    (line,) = _problems(config(kuberay={"chart_version": "1.5.0"}))
    assert line == (
        "kuberay.chart_version: '1.5.0' is not a KubeRay version whose CRDs this product "
        "carries; valid: 1.7.0, 1.6.2"
    )


def test_check_uses_the_chart_versions_crds(monkeypatch, tmp_path: Path) -> None:
    """The CRD folder follows the version; RAYGKE_CRDS_DIR still overrides it."""
    assert crds_dir("1.6.2") == CARRIED_CRDS / "v1.6.2"
    assert crds_dir("1.7.0") == CARRIED_CRDS / "v1.7.0"
    cfg: StackConfig = validate(
        config(
            kuberay={"chart_version": "1.6.2"},
            jobs=[{"name": "own", "workload": "train_lm", "node_pool": "l4"}],
        )
    )
    manifests = render_manifests(cfg, WORKING_DIR)
    assert check_manifests(cfg, manifests) == []
    # a field new in v1.7.0 (workerGroupSpecs[].priority) is unknown to the v1.6.2 schema
    m = next(m for m in manifests if m["kind"] == "RayJob")
    m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["priority"] = 1
    old = validate_manifests([m], version="1.6.2")
    assert any("priority: unknown field" in p for p in old), old
    assert not any("unknown field" in p for p in validate_manifests([m], version="1.7.0"))
    monkeypatch.setenv("RAYGKE_CRDS_DIR", str(tmp_path))
    assert crds_dir("1.6.2") == tmp_path


def test_job_lifecycle_defaults() -> None:
    """A job on a named cluster: no shutdown, TTL 0 (KubeRay refuses a TTL without shutdown,
    validation.go validateDeletionConfiguration); a job with its own cluster: shutdown and a
    60 s TTL, or the configured one."""
    cfg = validate(
        config(
            ray_clusters=CLUSTERS,
            jobs=[
                {"name": "on-rc", "workload": "train_lm", "cluster": "rc", "worker_group": "cpu"},
                {"name": "own", "workload": "train_lm", "node_pool": "l4"},
                {
                    "name": "own-ttl",
                    "workload": "train_lm",
                    "node_pool": "l4",
                    "ttl_seconds_after_finished": 0,
                },
            ],
        )
    )
    by = {m["metadata"]["name"]: m["spec"] for m in render_manifests(cfg, WORKING_DIR)}
    assert (by["on-rc"]["shutdownAfterJobFinishes"], by["on-rc"]["ttlSecondsAfterFinished"]) == (
        False,
        0,
    )
    assert (by["own"]["shutdownAfterJobFinishes"], by["own"]["ttlSecondsAfterFinished"]) == (
        True,
        DEFAULT_JOB_TTL_SECONDS,
    )
    assert DEFAULT_JOB_TTL_SECONDS == 60
    assert by["own-ttl"]["ttlSecondsAfterFinished"] == 0


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"cluster": "rc", "worker_group": "cpu", "shutdown_after_job_finishes": True},
            "jobs[j]: shutdown_after_job_finishes: true with cluster: rc (the job does not own "
            "that RayCluster)",
        ),
        (
            {"cluster": "rc", "ttl_seconds_after_finished": 3600},
            "jobs[j]: ttl_seconds_after_finished: 3600 with cluster: rc",
        ),
        (
            {"cluster": "rc", "suspend": True},
            "jobs[j]: suspend: true with cluster: rc",
        ),
        (
            {"cluster": "rc", "backoff_limit": 2},
            "jobs[j]: backoff_limit: 2 with cluster: rc",
        ),
        (
            {
                "node_pool": "cpu",
                "shutdown_after_job_finishes": False,
                "ttl_seconds_after_finished": 30,
            },
            "jobs[j]: ttl_seconds_after_finished: 30 with shutdown_after_job_finishes: false",
        ),
        (
            {"node_pool": "cpu", "shutdown_after_job_finishes": False, "suspend": True},
            "jobs[j]: suspend: true with shutdown_after_job_finishes: false",
        ),
    ],
)
def test_lifecycle_contradictions_are_refused_in_config(fields: dict, expected: str) -> None:
    """Each contradiction KubeRay v1.7.0 validation.go ValidateRayJobSpec /
    validateDeletionConfiguration would refuse at reconcile is one line at config time."""
    job = {"name": "j", "workload": "prepare", **fields}
    problems = _problems(config(ray_clusters=CLUSTERS, jobs=[job]))
    assert any(p.startswith(expected) for p in problems), problems


def test_each_training_job_has_its_own_experiment() -> None:
    """Two jobs running the same trainer get different Ray Train experiment names (the job
    names), so different checkpoint folders; a reader (evaluate) keeps its own ``name``."""
    cfg = validate(
        config(
            jobs=[
                {"name": "lm-a", "workload": "train_lm", "node_pool": "l4"},
                {"name": "lm-b", "workload": "train_lm", "node_pool": "l4"},
                {
                    "name": "eval",
                    "workload": "evaluate",
                    "node_pool": "l4",
                    "args": {"name": "lm-a"},
                },
            ]
        )
    )
    a, b, ev = (job_args(plan(cfg).context, plan(cfg).job(j)) for j in cfg.jobs)
    assert (a["name"], b["name"]) == ("lm-a", "lm-b")
    assert a["storage_path"] == b["storage_path"]
    assert ev["name"] == "lm-a"
