"""A vLLM service's devices, model path and fit (components/raycrs/serving.py): each refusal
through the stack loader's rules (what ``raygke check`` runs), one line naming the field, the
value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.stack import StackConfig
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.serving import (
    serve_devices,
    service_fit_problems,
    tensor_parallel_size,
    trained_shape,
)
from components.stack.loader import validate
from components.stack.rules import run_rule
from contract.serve_fit import CausalLmShape
from tests.helpers import config, stack

IDENTITIES = [
    {
        "name": "ray-train",
        "buckets": {"datasets": "write", "checkpoints": "write", "artifacts": "read"},
    },
    {"name": "ray-serve", "buckets": {"checkpoints": "read", "artifacts": "read"}},
]
POOLS = [
    {"name": "h100", "gpu": {"type": "nvidia-h100-80gb", "count": 8}, "max_nodes": 1,
     "zones": ["us-east5-a"]},
    {"name": "v5e-4", "tpu": {"generation": "v5e", "topology": "2x2"}, "max_slices": 1,
     "zones": ["us-east5-b"]},
]  # fmt: skip


def _data(job_args: dict[str, Any], **service: Any) -> dict[str, Any]:
    data = config(
        jobs=[{"name": "train", "workload": "train_lm", "node_pool": "cpu", "args": job_args}],
        services=[{"name": "lm", "checkpoint": "train", "node_pool": "h100", **service}],
        workload_identities=IDENTITIES,
    )
    data["node_pools"] = [*data["node_pools"], *POOLS]
    data["nap"] = {"resource_limits": {"cpu": 4096, "memory": 20480, "tpu-v6e-slice": 64}}
    return data


def _refused(job_args: dict[str, Any], **service: Any) -> list[str]:
    with pytest.raises(StackConfigError) as e:
        validate(_data(job_args, **service))
    return list(e.value.problems)


def _service_problems(job_args: dict[str, Any], **service: Any) -> list[str]:
    """The service's problems only (a large model's training job has its own, job_memory_fits:
    tests/components/raycrs/test_training_fit.py)."""
    try:
        validate(_data(job_args, **service))
    except StackConfigError as e:
        return [p for p in e.problems if p.startswith("services[")]
    return []


def test_a_model_larger_than_the_accelerator_memory_is_refused() -> None:
    # 8192 wide, 48 layers: 38.7e9 parameters, 154.7 GB of float32 weights; a v5e 2x2 slice has
    # 4 chips x 16 GB HBM (the training job cannot fit its CPU pod either: job_memory_fits,
    # tests/components/raycrs/test_training_fit.py)
    found = _refused({"d_model": 8192, "n_layers": 48, "n_heads": 64}, node_pool="v5e-4")
    (line,) = [p for p in found if p.startswith("services[")]
    assert line.startswith(
        "services[lm].checkpoint: 155.5 GB (weights 154.7 + KV cache 0.8 for max_model_len 256, "
        "float32) (allowed: at most 57.6 GB (4 x 16 GB x 0.9)); model of job 'train': d_model "
        "8192, n_layers 48, n_heads 64, n_positions 256; pool 'v5e-4': 4 x TPU v5e chip(s) of a "
        "2x2 slice (16 GB HBM each)"
    ), line
    # the same model in bfloat16 on a whole 8 x H100 node fits (77.7 GB <= 576 GB): only its
    # training on the CPU pool is refused
    with pytest.raises(StackConfigError) as e:
        validate(
            _data({"d_model": 8192, "n_layers": 48, "n_heads": 64}, args={"dtype": "bfloat16"})
        )
    assert [p.rule for p in e.value.problems] == ["job_memory_fits"]


def test_a_derived_tensor_parallel_size_that_does_not_divide_the_heads_is_refused() -> None:
    (line,) = _refused({"d_model": 96, "n_heads": 6})
    assert line == (
        "services[lm].args.tensor_parallel_size: 8 (derived: the 8 devices of one node of pool "
        "'h100') (allowed: a divisor of the model's 6 attention heads); set "
        "services[lm].args.tensor_parallel_size to a divisor of both; model of job 'train': "
        "d_model 96, n_layers 4, n_heads 6, n_positions 256; pool 'h100': 8 x NVIDIA H100 80GB "
        "(80 GB each)"
    ), line
    # a smaller divisor of both, set by the user, starts
    cfg = validate(_data({"d_model": 96, "n_heads": 6}, args={"tensor_parallel_size": 2}))
    assert run_rule(service_fit_problems, cfg) == []


def test_a_tensor_parallel_size_above_the_devices_of_a_pod_is_refused() -> None:
    (line,) = _refused({"n_heads": 8}, node_pool="v5e-4", args={"tensor_parallel_size": 8})
    assert line.startswith(
        "services[lm].args.tensor_parallel_size: 8 (allowed: at most the 4 TPU device(s) a "
        "replica gets)"
    ), line
    # a gs:// checkpoint (shape unknown offline) is still held to the pod's devices
    ckpt = "gs://ray-gke-test-ray-test-checkpoints/x"
    (line,) = _refused({}, checkpoint=ckpt, node_pool="v5e-4", args={"tensor_parallel_size": 8})
    assert line == (
        "services[lm].args.tensor_parallel_size: 8 (allowed: at most the 4 TPU device(s) of one "
        "node of pool 'v5e-4')"
    )


def test_a_multi_host_tpu_slice_serves_one_replica_per_slice() -> None:
    """The helpers' v6e pool is a 4x4 slice: 4 hosts of 4 chips. Ray 2.60's Serve LLM reserves a
    whole slice per replica (TPUConfig topology), so the service renders one engine over its 16
    chips, the topology in its args, one replica per slice; a tensor-parallel size that is not
    the slice's chips, or a Helm-installed operator without the TPU webhook, is refused."""
    from components.images.render import planned_refs
    from components.plan.plan import plan
    from components.raycrs.serve import ray_service_manifest

    data = _data(WIDE, node_pool="v6e")
    cfg = validate({**data, "kuberay": {"mode": "gke-addon"}})
    assert run_rule(service_fit_problems, cfg) == []
    (svc,) = cfg.services
    manifest = ray_service_manifest(
        plan(cfg), svc, "gs://b/w.zip", planned_refs(plan(cfg).context, cfg.ray.images)
    )
    import yaml

    args = yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"][0]["args"]
    assert args["tensor_parallel_size"] == 16 and args["tpu_topology"] == "4x4"
    assert args["accelerator_type"] == "TPU-V6E" and args["max_replicas"] == 2  # max_slices 2
    (group,) = manifest["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    assert group["numOfHosts"] == 4

    found = _service_problems_with(
        {"kuberay": {"mode": "gke-addon"}}, node_pool="v6e", args={"tensor_parallel_size": 4}
    )
    assert found == [
        "services[lm].args.tensor_parallel_size: 4 (allowed: 16, every chip of the multi-host "
        "4x4 slice of pool 'v6e': a replica reserves the whole slice, one engine over its "
        "hosts; a smaller model fits a single-host slice pool)"
    ]
    found = _service_problems_with(
        {"kuberay": {"mode": "helm", "tpu_webhook": False}}, node_pool="v6e"
    )
    assert found == [
        "services[lm].node_pool: 'v6e', a multi-host 4x4 slice (allowed with kuberay.mode: "
        "gke-addon, or kuberay.tpu_webhook: true once the KubeRay TPU webhook is installed: it "
        "gives each pod TPU_WORKER_ID and TPU_WORKER_HOSTNAMES, which the slice's Ray nodes "
        "need)"
    ]


# A trained model whose 16 heads (of 32 wide) a 16-chip tensor-parallel group divides.
WIDE = {"d_model": 512, "n_heads": 16}


def _service_problems_with(top: dict[str, Any], **service: Any) -> list[str]:
    data = {**_data(WIDE, **service), **top}
    try:
        validate(data)
    except StackConfigError as e:
        return [p for p in e.problems if p.startswith("services[")]
    return []


def test_a_cpu_pool_serves_the_trained_model() -> None:
    """vLLM's CPU build (the cpu-serve image): the trainers' default shape (head size 32) on the
    helpers' n2-standard-8 pool passes every fit rule."""
    cfg = validate(_data({}, node_pool="cpu"))
    assert run_rule(service_fit_problems, cfg) == []


def test_on_a_cpu_pool_the_model_is_held_to_the_pods_memory_not_hbm() -> None:
    """n2-standard-8: a worker pod of 6.5 CPUs and 27.9 GB, 19.5 GB of it left to the engines
    after Ray's object store (30 %). A 3072-wide, 24-layer model is 10.9 GB of float32 weights
    + 1 GiB KV cache space: one engine fits, the two that 1-CPU replicas would pack into one
    pod (max_replicas: the pool's 2 nodes) do not; 4 CPUs per replica leave one per pod."""
    big = {"d_model": 3072, "n_layers": 24, "n_heads": 24}
    (line,) = _service_problems(big, node_pool="cpu")
    assert line == (
        "services[lm].checkpoint: 2 engine(s) x 12.0 GB (weights 10.9 + KV cache space 1.1 per "
        "engine, float32) (allowed: at most 19.5 GB, the memory of one worker pod less Ray's "
        "object store; engines per pod: its CPUs // num_cpus, at most max_replicas); model of "
        "job 'train': d_model 3072, n_layers 24, n_heads 24, n_positions 256; pool 'cpu': the "
        "CPUs of one n2-standard-8 node"
    ), line
    assert _service_problems(big, node_pool="cpu", args={"num_cpus": 4}) == []
    assert _service_problems(big, node_pool="cpu", args={"max_replicas": 1}) == []
    # on an H100 the same model is held to the GPUs' memory, not the pod's
    assert _service_problems(big, args={"tensor_parallel_size": 1}) == []


@pytest.mark.parametrize(
    ("job_args", "service", "says"),
    [
        (  # one max_model_len sequence's KV cache must fit VLLM_CPU_KVCACHE_SPACE
            {"d_model": 1024, "n_layers": 24, "n_heads": 16, "context_length": 1024},
            {"args": {"cpu_kv_cache_gb": 0.1}},
            "services[lm].args.cpu_kv_cache_gb: 0.1 GiB (allowed: at least 0.188 GiB, the KV "
            "cache of one max_model_len 1024 sequence in float32: vLLM refuses to start below "
            "it); model of job 'train'",
        ),
        (  # vLLM's CPU attention takes head sizes 32, 64, ... only
            {"d_model": 64, "n_heads": 4},
            {},
            "services[lm].checkpoint: model head size 16 (allowed: one of 32, 64, 80, 96, 112, "
            "128, 160, 192, 224, 256, 512 (vLLM's CPU attention)); model of job 'train'",
        ),
        (  # one engine is one process: no tensor parallelism on CPUs
            {},
            {"args": {"tensor_parallel_size": 2}},
            "services[lm].args.tensor_parallel_size: 2 (allowed: 1 on CPU pool 'cpu': a replica "
            "of vLLM's CPU build is one engine process, one placement bundle of args.num_cpus "
            "CPUs; give it more CPUs with args.num_cpus)",
        ),
        (  # the engine's bundle within the worker pod (the node has 8, the pod 6.5)
            {},
            {"args": {"num_cpus": 8}},
            "services[lm].args.num_cpus: 8 (allowed: at most 6.5 CPUs, the worker pod of pool "
            "'cpu': a replica's engine is one placement bundle of num_cpus CPUs in one pod)",
        ),
        (  # a gs:// checkpoint's weights are unknown offline: the KV cache spaces alone
            {},
            {
                "checkpoint": "gs://ray-gke-test-ray-test-checkpoints/x",
                "args": {"cpu_kv_cache_gb": 12},
            },
            "services[lm].args.cpu_kv_cache_gb: 12 GiB x 2 engine(s) per worker pod = 25.8 GB "
            "(allowed: at most 19.5 GB together, the 27.9 GB of one worker pod of pool 'cpu' "
            "less Ray's object store; a larger args.num_cpus places fewer engines per pod)",
        ),
    ],
)
def test_what_cannot_start_on_a_cpu_pool_is_refused_in_one_line(
    job_args: dict[str, Any], service: dict[str, Any], says: str
) -> None:
    (line,) = _service_problems(job_args, node_pool="cpu", **service)
    assert line.startswith(says), line


@pytest.mark.parametrize("key", ["model", "accelerator", "accelerator_type"])
def test_arguments_the_platform_sets_are_refused(key: str) -> None:
    value = {"model": "/x", "accelerator": "gpu", "accelerator_type": "L4"}[key]
    (line,) = _refused({"n_heads": 8}, args={key: value})
    assert line.startswith(f"services[lm].args.{key}: {value!r} (allowed: unset; the platform ")


def test_the_trained_shape_follows_the_hf_export_mapping() -> None:
    cfg = validate(
        _data({"d_model": 64, "n_layers": 3, "n_heads": 8, "mlp_ratio": 2, "context_length": 96})
    )
    assert trained_shape(cfg.jobs, "train") == CausalLmShape(
        vocab_size=256, n_positions=96, n_embd=64, n_layer=3, n_head=8, n_inner=128
    )
    assert trained_shape(cfg.jobs, "nope") is None
    # without its own context the trainer takes the stack's prepare window
    data = _data({"n_heads": 8})
    data["jobs"].append(
        {"name": "prep", "workload": "prepare", "node_pool": "cpu", "args": {"context_length": 512}}
    )
    shape = trained_shape(validate(data).jobs, "train")
    assert shape is not None and shape.n_positions == 512


def test_devices_and_tensor_parallelism_come_from_the_pool() -> None:
    cfg: StackConfig = validate(_data({"n_heads": 8}))
    h100, v5e = cfg.pool("h100"), cfg.pool("v5e-4")
    gpu, tpu = serve_devices(h100), serve_devices(v5e)
    assert gpu is not None and tpu is not None
    assert (gpu.kind, gpu.per_pod, gpu.memory_gb, gpu.ray_accelerator_type) == (
        "gpu", 8, 80.0, "H100",
    )  # fmt: skip
    assert (tpu.kind, tpu.per_pod, tpu.memory_gb, tpu.ray_accelerator_type) == (
        "tpu", 4, 16.0, "TPU-V5LITEPOD",
    )  # fmt: skip
    # a CPU pool: one engine process per replica (tensor parallel 1), no accelerator type
    cpu = serve_devices(cfg.pool("cpu"))
    assert (cpu.kind, cpu.per_pod, cpu.memory_gb, cpu.ray_accelerator_type) == (
        "cpu", 1, None, None,
    )  # fmt: skip
    assert tensor_parallel_size({}, cpu) == 1
    assert tensor_parallel_size({}, gpu) == 8
    assert tensor_parallel_size({"tensor_parallel_size": 2}, gpu) == 2


def test_prod_serves_from_an_l4_with_room_to_spare() -> None:
    cfg = stack("prod")
    assert run_rule(service_fit_problems, cfg) == []
    dev = serve_devices(cfg.pool("l4-serve"))
    assert dev is not None and (dev.per_pod, dev.ray_accelerator_type) == (1, "L4")


def test_a_replica_whose_bundles_exceed_a_worker_pods_cpus_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """8 x H100 with tensor parallel 8 needs 9 CPUs in its pod (8 bundles + the replica
    actor's 1): a3-highgpu-8g's worker pod has 194.5 (its allocatable CPUs less the headroom).
    The catalog's GPU and TPU machines leave more than one CPU per device, so the pod is made
    4 CPUs here."""
    from components.raycrs import serving

    cfg = StackConfig.model_validate(_data({"n_heads": 8}))  # no rules yet: no record built
    cpus, memory_gb = serving.pod_size(plan(cfg), "h100", None)
    assert cpus == 194.5
    monkeypatch.setattr(serving, "pod_size", lambda p, pool, group: (4.0, memory_gb))
    (line,) = [str(x) for x in run_rule(service_fit_problems, cfg)]
    assert line == (
        "services[lm].args.tensor_parallel_size: 8 needs 9 CPUs in one worker pod (8 bundles of "
        "1 CPU + the replica's 1) (allowed: at most 4 CPUs, the worker pod of pool 'h100'; a "
        "larger machine_type or a smaller tensor_parallel_size)"
    )


def test_the_render_and_the_checks_read_the_services_one_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The RayService's application args, the fit check and the replica plan all read the
    service's record, built once per plan (serving.service_spec): a record whose
    tensor_parallel_size is made 4 (the stack says 2) shows 4 in each, and is built once."""
    from dataclasses import replace

    import yaml

    from components.images.render import planned_refs
    from components.raycrs import serving
    from components.raycrs.serve import ray_service_manifest
    from components.raycrs.serve_replicas import replica_plan

    built: list[str] = []
    real = serving._build_spec

    def build(p: Any, svc: Any) -> Any:
        built.append(svc.name)
        return replace(real(p, svc), tensor_parallel_size=4)

    monkeypatch.setattr(serving, "_build_spec", build)
    data = _data({"d_model": 96, "n_heads": 6}, args={"tensor_parallel_size": 2})
    cfg = StackConfig.model_validate(data)
    p, (svc,) = plan(cfg), cfg.services
    manifest = ray_service_manifest(p, svc, "gs://b/w.zip", planned_refs(p.context, cfg.ray.images))
    (app,) = yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"]
    assert app["args"]["tensor_parallel_size"] == 4
    (line,) = [str(x) for x in run_rule(service_fit_problems, cfg)]
    assert line.startswith(
        "services[lm].args.tensor_parallel_size: 4 (allowed: a divisor of the model's 6 "
        "attention heads)"
    ), line
    rp = replica_plan(p, svc)
    assert rp is not None and rp.per_replica == "4 x NVIDIA H100 80GB"
    assert built == ["lm"]
