"""Stacks accept train_lm_tf jobs on CPU pools, refuse them on GPU pools and TPU slices with the
reason, and check their arguments against workloads.args.TrainLmTfArgs."""

from __future__ import annotations

import json
import shlex

import pytest

from components.builders.images import project_pins
from components.builders.manifests import render_manifests
from components.checks.images import dependency_problems
from components.checks.stack import workload_problems
from components.spec import ConfigError, validate
from tests.helpers import WORKING_DIR, config


def _job(**fields) -> dict:
    return config(jobs=[{"name": "tf", "workload": "train_lm_tf", **fields}])


@pytest.mark.parametrize(("pool", "gpu"), [("cpu", False)])
def test_train_lm_tf_runs_on_cpu_pools(pool: str, gpu: bool) -> None:
    cfg = validate(_job(node_pool=pool, args={"steps": 50}))
    assert workload_problems(cfg) == []
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    parts = shlex.split(job["spec"]["entrypoint"])
    assert parts[:3] == ["python", "-m", "workloads.train_lm_tf"]
    args = json.loads(parts[parts.index("--config-json") + 1])
    assert args["scaling"]["use_gpu"] is gpu and args["steps"] == 50
    assert args["name"] == "tf"  # its own checkpoint folder


def test_train_lm_tf_on_a_tpu_slice_is_refused_with_the_reason() -> None:
    cfg = validate(_job(node_pool="v5e"))
    assert workload_problems(cfg) == [
        "jobs[tf]: workload 'train_lm_tf' supports cpu, not tpu: TensorFlow on TPU is not "
        "part of this product; use train_lm_jax on TPUs (node pool 'v5e')"
    ]


def test_train_lm_tf_arguments_are_checked() -> None:
    with pytest.raises(ConfigError) as e:
        validate(_job(node_pool="cpu", args={"grad_clip": -1, "tf_threads": "4"}))
    assert e.value.problems == [
        "jobs[tf].args: argument 'grad_clip' of workload train_lm_tf is -1; must be >= 0",
        "jobs[tf].args: argument 'tf_threads' of workload train_lm_tf is '4'; expected int or None",
    ]


def test_train_lm_tf_on_a_gpu_pool_is_refused_with_the_reason() -> None:
    cfg = validate(_job(node_pool="l4"))
    (problem,) = workload_problems(cfg)
    assert problem.startswith("jobs[tf]: workload 'train_lm_tf' supports cpu, not gpu: ")
    assert "use train_lm on GPUs" in problem
    # it names the pins it was measured with: a moved pin means measuring again
    # (tests/images/test_resolution.py::test_tensorflow_gpu_build_clashes_with_the_gpu_image_torch)
    pins = project_pins()
    assert f"tensorflow[and-cuda]=={pins['tensorflow-cpu']} " in problem
    assert f"torch=={pins['torch']} from PyPI" in problem
    assert "nvidia-cudnn-cu13==" in problem and "nvidia-nccl-cu12>=" in problem
    # the refusal is the one line: no second line asking for TensorFlow in the GPU image
    assert dependency_problems(cfg) == []
