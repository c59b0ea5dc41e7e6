"""Stacks accept train_lm_tf jobs on CPU pools and on GPU pools (in the gpu-tf image, without
PyTorch), refuse them on TPU slices with the reason, and check their arguments against
contract.args.train_lm_tf.TrainLmTfArgs."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from components.images.checks import dependency_problems
from components.images.render import kinds_to_build, kinds_used, planned_refs
from components.raycrs.render import render_manifests
from components.stack import ConfigError, validate
from components.stack.checks import workload_problems
from tests.helpers import WORKING_DIR, config
from workloads.train_lm_tf import collective_implementation


def _job(ray: dict | None = None, **fields) -> dict:
    extra = {} if ray is None else {"ray": ray}
    return config(jobs=[{"name": "tf", "workload": "train_lm_tf", **fields}], **extra)


@pytest.mark.parametrize(("pool", "gpu"), [("cpu", False), ("l4", True)])
def test_train_lm_tf_runs_on_cpu_and_gpu_pools(pool: str, gpu: bool) -> None:
    cfg = validate(_job(node_pool=pool, args={"steps": 50}))
    assert workload_problems(cfg) == []
    assert dependency_problems(cfg) == []
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    parts = shlex.split(job["spec"]["entrypoint"])
    assert parts[:3] == ["python", "-m", "workloads.train_lm_tf"]
    args = json.loads(parts[parts.index("--config-json") + 1])
    assert args["scaling"]["use_gpu"] is gpu and args["steps"] == 50
    assert args["name"] == "tf"  # its own checkpoint folder
    if gpu:  # one GPU per Train worker, like train_lm on GPUs; NCCL is chosen on the worker
        assert args["scaling"]["resources_per_worker"] == {"GPU": 1}
        assert collective_implementation(args["scaling"]["resources_per_worker"]["GPU"]) == "NCCL"


def test_train_lm_tf_on_a_gpu_pool_runs_in_the_gpu_tf_image_with_a_cpu_head() -> None:
    """TensorFlow's GPU build and PyTorch cannot share an image (contract.registry
    TF_GPU_CONFLICT): the job's GPU workers get the gpu-tf image, its head and submitter the cpu
    image, and the stack builds gpu-tf only because of this job."""
    cfg = validate(_job(node_pool="l4"))
    refs = planned_refs(cfg)
    assert refs["gpu-tf"].endswith("/ray-gpu-tf:2.60.0") and refs["gpu-tf"] != refs["gpu"]
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    cluster = job["spec"]["rayClusterSpec"]
    (group,) = cluster["workerGroupSpecs"]
    (worker,) = group["template"]["spec"]["containers"]
    assert worker["image"] == refs["gpu-tf"]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
    (head,) = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    assert head["image"] == refs["cpu"]
    (submitter,) = job["spec"]["submitterPodTemplate"]["spec"]["containers"]
    assert submitter["image"] == refs["cpu"]
    assert "gpu-tf" in kinds_to_build(cfg)
    # without the job the stack builds no gpu-tf image
    assert "gpu-tf" not in kinds_used(validate(config()))
    assert "gpu-tf" not in kinds_used(validate(_job(node_pool="cpu")))


def test_runtime_env_pip_of_a_gpu_tf_job_is_the_gpu_tf_requirements() -> None:
    cfg = validate(_job(node_pool="l4", runtime_env_pip=True))
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    pip = yaml.safe_load(job["spec"]["runtimeEnvYAML"])["pip"]
    assert "tensorflow[and-cuda]==2.21.0" in pip
    assert not any(line.startswith("torch") for line in pip)
    assert dependency_problems(cfg) == []


def test_a_prebuilt_gpu_tf_image_must_provide_tensorflow() -> None:
    image = "example.com/ray-tf:2.60.0-gpu"
    lacking = validate(
        _job(
            node_pool="l4",
            ray={"images": {"gpu-tf": {"image": image, "provides": {"keras": "3.15.1"}}}},
        )
    )
    (line,) = dependency_problems(lacking)
    assert line.startswith(
        f"jobs[tf]: workload train_lm_tf needs tensorflow, worker-group image {image} does not "
        "provide it; "
    )
    assert "ray.images.gpu-tf.provides: {tensorflow: 2.21.0}" in line
    provides = {"tensorflow": "2.21.0", "keras": "3.15.1", "numpy": "2.4.6", "pyarrow": "26.0.1"}
    full = validate(
        _job(node_pool="l4", ray={"images": {"gpu-tf": {"image": image, "provides": provides}}})
    )
    assert dependency_problems(full) == []
    assert planned_refs(full)["gpu-tf"] == image
    assert "gpu-tf" not in kinds_to_build(full)


def test_train_lm_tf_on_a_long_lived_clusters_gpu_group_is_sent_to_its_own_cluster() -> None:
    """A long-lived cluster's GPU group runs the gpu image (PyTorch, no TensorFlow) for every
    job on it: the check names the way to the gpu-tf image."""
    cfg = validate(
        config(
            ray_clusters=[{"name": "rc", "worker_groups": [{"name": "g", "node_pool": "l4"}]}],
            jobs=[{"name": "tf", "workload": "train_lm_tf", "cluster": "rc"}],
        )
    )
    assert workload_problems(cfg) == []
    (line,) = dependency_problems(cfg)
    assert line.startswith("jobs[tf]: workload train_lm_tf needs tensorflow, worker-group image ")
    assert line.endswith(
        "TensorFlow on GPUs runs in the gpu-tf image, which a job gets on its own RayCluster: "
        "set jobs[tf].node_pool to the GPU pool instead of cluster/worker_group"
    )


def test_a_gpu_job_importing_tensorflow_and_torch_is_refused_with_the_clash() -> None:
    """tune_lm trials score with the PyTorch model, so a TensorFlow trainer under tune_lm would
    import both on the GPU workers: no image holds both."""
    cfg = validate(
        config(
            jobs=[
                {"name": "t", "workload": "tune_lm", "node_pool": "l4", "args": {"trainer": "tf"}}
            ]
        )
    )
    (line,) = dependency_problems(cfg)
    assert line.startswith(
        "jobs[t]: workload tune_lm imports both tensorflow and torch on GPU pool 'l4'; "
        "TensorFlow's GPU build cannot share a GPU image with PyTorch: "
    )
    assert "nvidia/cudnn/lib/libcudnn*.so.9" in line
    # on a CPU pool the cpu image has both
    cpu = validate(
        config(
            jobs=[
                {"name": "t", "workload": "tune_lm", "node_pool": "cpu", "args": {"trainer": "tf"}}
            ]
        )
    )
    assert dependency_problems(cpu) == []


def test_train_lm_tf_on_a_tpu_slice_is_refused_with_the_reason() -> None:
    cfg = validate(_job(node_pool="v5e"))
    assert workload_problems(cfg) == [
        "jobs[tf]: workload 'train_lm_tf' supports cpu, gpu, not tpu: TensorFlow on TPU is not "
        "part of this product; use train_lm_jax on TPUs (node pool 'v5e')"
    ]


def test_train_lm_tf_arguments_are_checked() -> None:
    with pytest.raises(ConfigError) as e:
        validate(_job(node_pool="cpu", args={"grad_clip": -1, "tf_threads": "4"}))
    assert e.value.problems == [
        "jobs[tf].args: argument 'grad_clip' of workload train_lm_tf is -1; must be >= 0",
        "jobs[tf].args: argument 'tf_threads' of workload train_lm_tf is '4'; expected int or None",
    ]
