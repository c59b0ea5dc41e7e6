"""Elastic TPU slices (issue 21 item 6): ``jobs[].slices: {min, max}`` -> Ray 2.60's elastic
``ScalingConfig(num_workers=(min, max))`` and Kueue's elastic-job annotation; each rule with a
valid and an invalid case."""

from __future__ import annotations

from typing import Any

import pytest

from components import catalog
from components.raycrs.rayjob import job_args, ray_job_manifest
from components.raycrs.scaling import scaling_config_for_job
from components.stack import validate
from tests.components.stack.test_model import problems
from tests.helpers import WORKING_DIR, config


def _stack(slices: dict[str, int] | None, pool: str = "v6e", **job: Any) -> dict[str, Any]:
    data = config()
    data["kuberay"] = {"tpu_webhook": True}
    entry: dict[str, Any] = {"name": "elastic", "workload": "train_lm_jax", "node_pool": pool}
    if slices is not None:
        entry["slices"] = slices
    entry.update(job)
    data["jobs"] = [entry]
    return data


def test_catalog_elastic_scaling_is_a_tuple_ray_accepts() -> None:
    """The kwargs build a real Ray 2.60 ScalingConfig with elasticity on and (min, max) workers
    in whole slices (ray/train/v2/api/config.py)."""
    from ray.train import ScalingConfig

    kwargs = catalog.tpu_slice("v6e", "4x4").scaling_config(2, min_slices=1)
    assert kwargs["num_workers"] == (4, 8)
    sc = ScalingConfig(**kwargs)
    assert sc.elasticity_enabled
    assert (sc.min_workers, sc.max_workers) == (4, 8)
    # min == max is the fixed form
    assert catalog.tpu_slice("v6e", "4x4").scaling_config(2, min_slices=2)["num_workers"] == 8
    with pytest.raises(ValueError, match="min_slices 3 is above the 2 slice"):
        catalog.tpu_slice("v6e", "4x4").scaling_config(2, min_slices=3)


def test_elastic_job_renders_range_and_kueue_annotation() -> None:
    cfg = validate(_stack({"min": 1, "max": 2}))
    job = cfg.jobs[0]
    assert scaling_config_for_job(cfg, job)["num_workers"] == (4, 8)
    assert job_args(cfg, job)["scaling"]["num_workers"] == (4, 8)
    rj = ray_job_manifest(cfg, job, WORKING_DIR)
    assert rj["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"


def test_fixed_range_has_no_annotation() -> None:
    cfg = validate(_stack({"min": 1, "max": 1}))
    assert scaling_config_for_job(cfg, cfg.jobs[0])["num_workers"] == 4
    rj = ray_job_manifest(cfg, cfg.jobs[0], WORKING_DIR)
    assert "kueue.x-k8s.io/elastic-job" not in rj["metadata"].get("annotations", {})
    cfg = validate(_stack(None))
    assert scaling_config_for_job(cfg, cfg.jobs[0])["num_workers"] == 8  # the whole pool


@pytest.mark.parametrize(
    ("slices", "pool", "needle"),
    [
        ({"min": 2, "max": 1}, "v6e", "slices.min 2 is above slices.max 1"),
        ({"min": 1, "max": 3}, "v6e", "max 3 is above the 2 slice(s) the job's node pool has"),
        ({"min": 1, "max": 2}, "v5e", "single-host v5e 2x2 pool 'v5e'"),
        ({"min": 1, "max": 2}, "l4", "node pool 'l4' is not a TPU pool"),
        ({"min": 0, "max": 2}, "v6e", "greater than or equal to 1"),
    ],
)
def test_slices_refused(slices: dict[str, int], pool: str, needle: str) -> None:
    workload = "train_lm" if pool == "l4" else "train_lm_jax"
    assert needle in "\n".join(problems(_stack(slices, pool, workload=workload)))


def test_workload_args_take_the_elastic_pair() -> None:
    from contract.args.train import _scaling_problem
    from workloads.train_loop import max_workers

    assert _scaling_problem({"num_workers": [4, 8]}) is None
    assert "must be [min, max]" in (_scaling_problem({"num_workers": [8, 4]}) or "")
    assert "must be [min, max]" in (_scaling_problem({"num_workers": [0, 4]}) or "")
    assert max_workers({"num_workers": (4, 8)}) == 8
    assert max_workers({"num_workers": 3}) == 3


def test_scaling_kwargs_give_ray_a_tuple() -> None:
    """The job's ``scaling`` argument comes back from JSON as a list; the workload hands Ray the
    tuple it requires (ray/train/v2/api/config.py: "an int or a tuple of two ints")."""
    from contract.args.train import TrainArgs
    from workloads.train_loop import scaling_kwargs

    args = TrainArgs(scaling={"num_workers": [4, 8], "use_tpu": True})
    assert scaling_kwargs(args)["num_workers"] == (4, 8)
