"""Object store size, spill directory (per worker group) and placement strategy (per job): from
the stack file into rayStartParams, the pod's volumes and the job's ScalingConfig arguments,
validated against the worker pod's memory (spec, builders, checks, and the program under
Pulumi mocks)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from components.raycrs.model import OBJECT_STORE_MAX_FRACTION, PlacementStrategy
from components.raycrs.render import render_manifests
from components.stack import ConfigError, quantity_bytes, validate
from components.stack.checks import check_manifests
from contract.args.train import PLACEMENT_STRATEGIES
from contract.args.train_lm_tf import TrainLmTfArgs
from tests.helpers import WORKING_DIR, config, of_type, render


def _data(group: dict[str, Any] | None = None, job: dict[str, Any] | None = None) -> dict:
    g = {"name": "cpu", "node_pool": "cpu", **(group or {})}
    j = {"name": "tf", "workload": "train_lm_tf", "cluster": "rc", "worker_group": "cpu"}
    return config(ray_clusters=[{"name": "rc", "worker_groups": [g]}], jobs=[{**j, **(job or {})}])


def _manifests(data: dict) -> dict[str, dict]:
    return {m["kind"]: m for m in render_manifests(validate(data), WORKING_DIR)}


def _job_args(job: dict) -> dict:
    parts = shlex.split(job["spec"]["entrypoint"])
    return json.loads(parts[parts.index("--config-json") + 1])


def test_object_store_and_spill_dir_reach_ray_start_and_a_volume() -> None:
    by = _manifests(_data({"object_store_memory": "4Gi", "spill_dir": "/mnt/ray-spill/"}))
    (g,) = by["RayCluster"]["spec"]["workerGroupSpecs"]
    assert g["rayStartParams"] == {
        "object-store-memory": str(4 * 2**30),
        "object-spilling-directory": "/mnt/ray-spill",
    }
    pod = g["template"]["spec"]
    assert {"name": "ray-spill", "emptyDir": {}} in pod["volumes"]
    assert {"name": "ray-spill", "mountPath": "/mnt/ray-spill"} in pod["containers"][0][
        "volumeMounts"
    ]


def test_object_store_in_bytes_and_defaults_render_nothing() -> None:
    by = _manifests(_data({"object_store_memory": 1_000_000_000}))
    (g,) = by["RayCluster"]["spec"]["workerGroupSpecs"]
    assert g["rayStartParams"] == {"object-store-memory": "1000000000"}
    (plain,) = _manifests(_data())["RayCluster"]["spec"]["workerGroupSpecs"]
    assert plain["rayStartParams"] == {}
    assert all(v["name"] != "ray-spill" for v in plain["template"]["spec"].get("volumes", []))


def test_object_store_above_the_share_of_pod_memory_is_refused_by_check() -> None:
    # n2-standard-8: 32 GB - 2 GiB headroom -> a 29Gi worker pod; explicit memory 8Gi here.
    cfg = validate(_data({"memory": "8Gi", "object_store_memory": "7Gi"}))
    problems = check_manifests(cfg, render_manifests(cfg, WORKING_DIR))
    (line,) = [p for p in problems if "object_store_memory" in p]
    assert "worker group cpu" in line and "80%" in line and "8Gi" in line
    assert "6.40 GiB at most" in line
    ok = validate(_data({"memory": "8Gi", "object_store_memory": "6Gi"}))
    assert not [p for p in check_manifests(ok, render_manifests(ok, WORKING_DIR)) if "object" in p]
    assert OBJECT_STORE_MAX_FRACTION == 0.8


@pytest.mark.parametrize(
    ("group", "needle"),
    [
        ({"object_store_memory": "lots"}, "not a Kubernetes quantity"),
        ({"object_store_memory": "10Mi"}, "below Ray's minimum of 75 MiB"),
        ({"object_store_memory": True}, "neither bytes"),
        ({"spill_dir": "tmp/spill"}, "must be an absolute path"),
        ({"spill_dir": "/dev/shm/x"}, "not '/' nor under /dev"),
        ({"spill_dir": "/"}, "must be an absolute path"),
        ({"spill_dir": "/a/../etc"}, "must be an absolute path"),
    ],
)
def test_bad_memory_and_spill_values_get_one_line(group: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate(_data(group))
    (line,) = e.value.problems
    assert needle in line


@pytest.mark.parametrize("strategy", ["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"])
def test_placement_strategy_reaches_scaling_config(strategy: str) -> None:
    job = _manifests(_data(job={"placement_strategy": strategy}))["RayJob"]
    scaling = _job_args(job)["scaling"]
    assert scaling["placement_strategy"] == strategy
    assert scaling["num_workers"] == 2  # the pool's nodes
    assert TrainLmTfArgs.problems({"scaling": scaling}) == []


def test_placement_strategy_unset_leaves_ray_default_and_bad_values_are_refused() -> None:
    job = _manifests(_data())["RayJob"]
    assert "placement_strategy" not in _job_args(job)["scaling"]
    with pytest.raises(ConfigError) as e:
        validate(_data(job={"placement_strategy": "pack"}))
    assert e.value.problems == [
        "jobs[tf].placement_strategy: Input should be 'PACK', 'SPREAD', 'STRICT_PACK' or "
        "'STRICT_SPREAD'; got 'pack'"
    ]
    with pytest.raises(ConfigError) as e:
        validate(_data(job={"name": "ev", "workload": "evaluate", "placement_strategy": "SPREAD"}))
    (line,) = [p for p in e.value.problems if "placement_strategy" in p]
    assert "jobs[ev].placement_strategy SPREAD" in line and "no scaling argument" in line
    with pytest.raises(ConfigError) as e:
        validate(_data(job={"name": "sweep", "workload": "tune_lm", "placement_strategy": "PACK"}))
    (line,) = e.value.problems
    assert "jobs[sweep].placement_strategy PACK: tune_lm runs each trial" in line
    problems = TrainLmTfArgs.problems({"scaling": {"num_workers": 1, "placement_strategy": "X"}})
    assert problems and "placement_strategy 'X' is not one of" in problems[0]


def test_spec_and_workload_agree_on_strategies() -> None:
    from typing import get_args

    assert get_args(PlacementStrategy) == PLACEMENT_STRATEGIES


def test_quantity_bytes() -> None:
    assert quantity_bytes("4Gi") == 4 * 2**30
    assert quantity_bytes("1500M") == 1_500_000_000
    assert quantity_bytes("123") == 123
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity_bytes("4GB")


def test_program_under_mocks_renders_ray_start_params_and_job_strategy() -> None:
    records, _ = render(
        _data(
            {"object_store_memory": "2Gi", "spill_dir": "/mnt/spill"},
            {"placement_strategy": "STRICT_SPREAD"},
        )
    )
    (rc,) = of_type(records, "kubernetes:ray.io/v1:RayCluster")
    (g,) = rc["inputs"]["spec"]["workerGroupSpecs"]
    assert g["rayStartParams"] == {
        "object-store-memory": str(2 * 2**30),
        "object-spilling-directory": "/mnt/spill",
    }
    (job,) = of_type(records, "kubernetes:ray.io/v1:RayJob")
    assert _job_args(job["inputs"])["scaling"]["placement_strategy"] == "STRICT_SPREAD"
