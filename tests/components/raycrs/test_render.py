"""Rendered RayClusters / RayJobs follow the one-source-of-truth rule."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
import yaml

from components import catalog
from components.config.nodepools import GpuPool
from components.config.raycrs import OBJECT_STORE_MAX_FRACTION, PlacementStrategy
from components.images.render import planned_refs
from components.kernel.base import StackConfigError, quantity_bytes
from components.plan.plan import plan
from components.raycrs.placement import parse_quantity
from components.raycrs.pod import shm_size
from components.raycrs.render import cluster_endpoints, render_manifests
from components.stack.checks import check_manifests
from components.stack.loader import validate
from contract.args.train import PLACEMENT_STRATEGIES
from contract.args.train_lm_tf import TrainLmTfArgs
from tests.helpers import WORKING_DIR, config, of_type, render, stack


def _by_name(manifests: list[dict]) -> dict[tuple[str, str], dict]:
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests}


def _group(rc: dict, name: str) -> dict:
    return next(g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == name)


def _entry_args(entrypoint: str) -> dict:
    parts = shlex.split(entrypoint)
    return json.loads(parts[parts.index("--config-json") + 1])


def test_v6e_4x4_worker_group_matches_its_node_pool() -> None:
    cfg = stack("prod")
    rc = _by_name(render_manifests(cfg, WORKING_DIR))[("RayCluster", "training")]
    g = _group(rc, "tpu-v6e")
    pod = g["template"]["spec"]
    specs = list(plan(cfg).pool_specs["tpu-v6e-4x4"])
    assert len(specs) == 2  # one GKE node pool per slice
    # training is queued: Kueue adds its flavor's tolerations on admission (the pool's
    # ComputeClass taint, components/capacity/render.py resource_flavor)
    from components.capacity.render import resource_flavor

    tolerations = [
        *pod["tolerations"],
        *resource_flavor(plan(cfg), "tpu-v6e-4x4")["spec"].get("tolerations", []),
    ]
    for spec in specs:
        assert pod["nodeSelector"].items() <= spec.labels.items()
        assert spec.labels["cloud.google.com/gke-tpu-topology"] == "4x4"
        for taint in spec.taints:
            want = {"key": taint.key, "value": taint.value, "effect": taint.effect}.items()
            assert any(want <= t.items() for t in tolerations), taint
        res = pod["containers"][0]["resources"]
        assert res["requests"]["google.com/tpu"] == res["limits"]["google.com/tpu"] == "4"
        assert int(res["limits"]["google.com/tpu"]) == spec.capacity["google.com/tpu"]
        assert g["numOfHosts"] == 4 == spec.max_nodes
        assert parse_quantity(res["requests"]["cpu"]) < spec.capacity["cpu"]
        assert parse_quantity(res["requests"]["memory"]) / 2**30 < spec.capacity["memory"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    assert (g["minReplicas"], g["maxReplicas"]) == (0, 2)
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["TPU_ACCELERATOR_TYPE"] == "v6e-16" and env["TPU_TOPOLOGY"] == "4x4"
    assert env["MEGASCALE_PORT"] == "8081"  # two slices
    ports = {p["containerPort"] for p in pod["containers"][0]["ports"]}
    assert {8471, 8081} <= ports


def test_single_slice_tpu_group_has_no_multislice_settings() -> None:
    cfg = stack("dev")  # v5e 2x2 worker group with max_replicas 2 -> multi-slice; force 1
    data = cfg.model_dump(by_alias=True)
    data["ray_clusters"][0]["worker_groups"][1]["max_replicas"] = 1
    cfg1 = type(cfg).model_validate(data)
    rc = render_manifests(cfg1, WORKING_DIR)[0]
    pod = _group(rc, "tpu-v5e")["template"]["spec"]
    env = {e["name"] for e in pod["containers"][0]["env"]}
    assert "MEGASCALE_PORT" not in env
    assert _group(rc, "tpu-v5e")["numOfHosts"] == 1
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] == "4"


def test_head_is_cluster_internal_on_the_system_pool() -> None:
    for name in ("dev", "prod"):
        cfg = stack(name)
        for m in render_manifests(cfg, WORKING_DIR):
            spec = m["spec"] if m["kind"] == "RayCluster" else m["spec"].get("rayClusterSpec")
            if spec is None:
                continue
            head = spec["headGroupSpec"]
            assert head["serviceType"] == "ClusterIP"
            assert head["template"]["spec"]["nodeSelector"] == {
                "cloud.google.com/gke-nodepool": "system"
            }
            assert m["metadata"]["namespace"] == cfg.kuberay.namespace


def test_gpu_and_cpu_groups_and_gcsfuse() -> None:
    cfg = stack("dev")
    rc = _by_name(render_manifests(cfg, WORKING_DIR))[("RayCluster", "research")]
    assert rc["spec"]["enableInTreeAutoscaling"] is True
    assert rc["spec"]["autoscalerOptions"]["idleTimeoutSeconds"] == 600
    l4 = _group(rc, "l4")["template"]
    pod = l4["spec"]
    assert pod["nodeSelector"] == {
        catalog.GPU_ACCELERATOR_LABEL: "nvidia-l4",
        catalog.GPU_DRIVER_LABEL: "latest",
    }
    assert pod["tolerations"] == [catalog.GPU_TAINT.toleration()]
    res = pod["containers"][0]["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "1"
    # memory-backed /dev/shm, bounded (issue 12): half the pod's memory
    mem = res["limits"]["memory"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(mem)}} in pod[
        "volumes"
    ]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in pod["containers"][0]["volumeMounts"]
    assert pod["containers"][0]["image"] == planned_refs(plan(cfg).context, cfg.ray.images)["gpu"]
    assert pod["serviceAccountName"] == "ray-train"
    # the sidecar's ephemeral storage above the datasets + checkpoints file caches (20 GiB each,
    # components/storage/fuse.py) plus 1 GiB
    assert l4["metadata"]["annotations"] == {
        "gke-gcsfuse/volumes": "true",
        "gke-gcsfuse/ephemeral-storage-limit": "41984Mi",
    }
    buckets = {v["csi"]["volumeAttributes"]["bucketName"] for v in pod["volumes"] if "csi" in v}
    assert plan(cfg).context.buckets["checkpoints"] in buckets
    cpu = _group(rc, "cpu")["template"]["spec"]
    assert cpu["nodeSelector"] == {"cloud.google.com/gke-nodepool": "cpu-spot"}
    assert "tolerations" not in cpu


def test_jobs() -> None:
    cfg = stack("prod")
    by = _by_name(render_manifests(cfg, WORKING_DIR))
    jax = by[("RayJob", "train-lm-jax-v6e")]["spec"]
    # queued (Pulumi.prod.yaml capacity:): Kueue admits only a RayJob with its own cluster
    assert "clusterSelector" not in jax and "rayClusterSpec" in jax
    labels = by[("RayJob", "train-lm-jax-v6e")]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "ml-batch"
    assert yaml.safe_load(jax["runtimeEnvYAML"]) == {"working_dir": WORKING_DIR}
    args = _entry_args(jax["entrypoint"])
    # elastic slices {min: 1, max: 2}: the (min, max) workers tuple travels as a JSON list
    assert args["scaling"] == {
        **catalog.tpu_slice("v6e", "4x4").scaling_config(2, 1),
        "num_workers": [4, 8],
    }
    assert args["storage_path"] == f"gs://{plan(cfg).context.buckets['checkpoints']}"
    assert args["dataset"].startswith(f"gs://{plan(cfg).context.buckets['datasets']}/")
    assert args["max_failures"] == 3 and args["steps"] == 20000
    assert jax["activeDeadlineSeconds"] == 86400
    # its own cluster, shut down a minute after the job (Kueue requires the shutdown)
    assert (jax["shutdownAfterJobFinishes"], jax["ttlSecondsAfterFinished"]) == (True, 60)
    assert args["name"] == "train-lm-jax-v6e"  # the experiment (checkpoint folder) is the job's
    assert jax["submitterPodTemplate"]["spec"]["serviceAccountName"] == "ray-train"

    h100 = by[("RayJob", "train-lm-h100")]["spec"]
    assert h100["shutdownAfterJobFinishes"] is True
    # the job's own cluster (16 H100s) is released a minute after the job ends (was 3600 s)
    assert h100["ttlSecondsAfterFinished"] == 60 and h100["backoffLimit"] == 0
    (g,) = h100["rayClusterSpec"]["workerGroupSpecs"]
    assert g["template"]["spec"]["nodeSelector"] == {
        catalog.GPU_ACCELERATOR_LABEL: "nvidia-h100-80gb",
        catalog.GPU_DRIVER_LABEL: "latest",
    }
    assert g["replicas"] == g["minReplicas"] == g["maxReplicas"] == 2
    assert g["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    targs = _entry_args(h100["entrypoint"])
    # both trainers take the pool's ScalingConfig kwargs as `scaling` (contract/args/)
    assert (targs["scaling"]["num_workers"], targs["scaling"]["use_gpu"]) == (16, True)


def test_render_is_deterministic_and_ordered() -> None:
    cfg = stack("prod")
    a, b = render_manifests(cfg, WORKING_DIR), render_manifests(cfg, WORKING_DIR)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    kinds = [m["kind"] for m in a]
    assert kinds == sorted(kinds, key=lambda k: k != "RayCluster")
    jobs = [m["metadata"]["name"] for m in a if m["kind"] == "RayJob"]
    assert jobs == sorted(jobs)


def test_endpoints() -> None:
    assert cluster_endpoints(plan(stack("dev")).context, "research") == {
        "dashboard": "http://research-head-svc.ray.svc.cluster.local:8265",
        "client": "ray://research-head-svc.ray.svc.cluster.local:10001",
    }


@pytest.mark.parametrize(
    ("driver", "label"),
    [("LATEST", "latest"), ("DEFAULT", "default"), ("INSTALLATION_DISABLED", None)],
)
def test_gpu_groups_select_the_driver_gke_installs(driver: str, label: str | None) -> None:
    """A GPU pod that may land on a NAP-created node asks for a driver version through the
    ``cloud.google.com/gke-gpu-driver-version`` node selector, or NAP installs none
    (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#gpus); the
    declared pool's nodes carry the same label when GKE installs their driver
    (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus#create-gpu-pool-auto-drivers),
    and the pool uses gVNIC (https://cloud.google.com/kubernetes-engine/docs/how-to/using-gvnic)."""
    from components.stack.checks import check_manifests
    from components.stack.loader import validate

    data = stack("prod").model_dump(by_alias=True, exclude_none=True)
    for p in data["node_pools"]:
        if "gpu" in p:
            p["driver_version"] = driver
    cfg = validate(data)
    pool = next(p for p in cfg.node_pools if isinstance(p, GpuPool))
    spec = plan(cfg).pool_specs[pool.name][0]
    assert spec.gvnic
    assert spec.labels.get(catalog.GPU_DRIVER_LABEL) == label
    manifests = render_manifests(cfg, WORKING_DIR)
    selectors = [
        g["template"]["spec"]["nodeSelector"]
        for m in manifests
        if m["kind"] == "RayCluster"
        for g in m["spec"]["workerGroupSpecs"]
        if catalog.GPU_ACCELERATOR_LABEL in g["template"]["spec"]["nodeSelector"]
    ]
    assert selectors and all(s.get(catalog.GPU_DRIVER_LABEL) == label for s in selectors)
    assert not [p for p in check_manifests(cfg, manifests) if "schedul" in p or "node" in p]


# ---------------------------------------------------------------- from test_placement_memory.py: Object store size, spill directory (per worker group) and placement strategy (per job): from


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
    with pytest.raises(StackConfigError) as e:
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
    with pytest.raises(StackConfigError) as e:
        validate(_data(job={"placement_strategy": "pack"}))
    assert e.value.problems == [
        "jobs[tf].placement_strategy: Input should be 'PACK', 'SPREAD', 'STRICT_PACK' or "
        "'STRICT_SPREAD'; got 'pack'"
    ]
    with pytest.raises(StackConfigError) as e:
        validate(_data(job={"name": "ev", "workload": "evaluate", "placement_strategy": "SPREAD"}))
    (line,) = [p for p in e.value.problems if "placement_strategy" in p]
    assert "jobs[ev].placement_strategy: SPREAD" in line and "no scaling argument" in line
    with pytest.raises(StackConfigError) as e:
        validate(_data(job={"name": "sweep", "workload": "tune_lm", "placement_strategy": "PACK"}))
    (line,) = e.value.problems
    assert "jobs[sweep].placement_strategy: PACK: tune_lm runs each trial" in line
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
