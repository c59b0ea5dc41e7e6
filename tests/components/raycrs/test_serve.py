"""RayServices (``services:``) and Managed Prometheus PodMonitorings: rendered from the stack,
valid against the carried CRDs (KubeRay v1.7.0, GMP PodMonitoring) and the operator rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.kernel.base import ConfigError
from components.monitoring.render import render_monitoring
from components.raycrs.crd import validate_manifest, validate_other
from components.raycrs.operator import operator_problems
from components.raycrs.pod import ManifestError
from components.raycrs.render import render_manifests
from components.raycrs.serve import ray_service_manifest, service_url
from components.stack.checks import check_stack
from components.stack.loader import validate
from components.stack.plan import plan
from tests.helpers import WORKING_DIR, config, needs_crds, stack

SERVICE = {"name": "lm", "checkpoint": "train", "node_pool": "cpu"}
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
    assert app["import_path"] == "workloads.serve_lm:build_app"
    assert app["runtime_env"] == {"working_dir": WORKING_DIR}
    assert app["args"]["checkpoint"] == "gs://ray-gke-prod-ray-prod-checkpoints/train-lm-h100"
    assert app["args"]["max_batch_size"] == 16
    assert m["spec"]["upgradeStrategy"] == {"type": "NewCluster"}
    cluster = m["spec"]["rayClusterConfig"]
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


def test_a_gpu_pool_gives_each_replica_a_gpu() -> None:
    m = _service(_cfg(node_pool="l4"))
    (app,) = yaml.safe_load(m["spec"]["serveConfigV2"])["applications"]
    assert app["args"]["num_gpus"] == 1
    worker = m["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    assert (
        worker["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    )


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
            "needs incremental_upgrade: {gateway_class_name: ...}",
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
        ({"args": {"max_batch_size": 0}}, "argument 'max_batch_size' of workload serve_lm is 0"),
        ({"args": {"checkpoint": "/x"}}, "args.checkpoint: set the service's checkpoint field"),
        ({"name": "LM"}, "service name"),
        (
            {"args": {"num_gpus": 1}},
            "services[lm].args.num_gpus: 1: a replica runs on one node of pool 'cpu', which has "
            "0 GPU(s); at most 0",
        ),
        (
            {"node_pool": "l4", "args": {"num_gpus": 2}},
            "services[lm].args.num_gpus: 2: a replica runs on one node of pool 'l4', which has "
            "1 GPU(s); at most 1",
        ),
        (
            {"args": {"num_cpus": 64}},
            "services[lm].args.num_cpus: 64: a replica runs on one node of pool 'cpu' "
            "(n2-standard-8, 8 vCPUs); at most 8",
        ),
    ],
)
def test_bad_services_are_one_line_each(service: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        _cfg(**service)
    assert says in str(e.value), str(e.value)


def test_a_serve_workload_is_not_a_job() -> None:
    with pytest.raises(ConfigError, match=r"jobs\[s\].workload: 'serve_lm' is a Ray Serve"):
        validate(config(jobs=[{"name": "s", "workload": "serve_lm", "node_pool": "cpu"}]))


def test_a_checkpoint_outside_the_checkpoints_bucket_is_refused() -> None:
    cfg = _cfg(checkpoint="gs://somebody-else/ckpt")
    with pytest.raises(ManifestError, match="not in the checkpoints bucket"):
        ray_service_manifest(cfg, cfg.services[0], WORKING_DIR)
    assert any("not in the checkpoints bucket" in p for p in check_stack(cfg))


def test_pod_monitorings_validate_against_the_gmp_crd() -> None:
    monitors = render_monitoring(stack("prod"))
    assert [m["metadata"]["name"] for m in monitors] == [
        "training-ray-metrics",
        "lm-ray-metrics",
        # the RayJobs' own clusters (tests/.../test_monitoring.py); prod queues them all
        "prepare-corpus-ray-metrics",
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
    assert render_monitoring(validate(data)) == []
