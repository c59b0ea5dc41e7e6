"""ScalingConfig kwargs derived from the catalog for every TPU topology and a set of GPU shapes."""

from __future__ import annotations

from typing import Any

import pytest

from components import catalog
from components.config.raycrs import JobConfig
from components.config.stack import StackConfig
from components.images.render import planned_refs
from components.plan.plan import plan
from components.plan.resolve import ResolveError, resolve_job
from components.raycrs.rayjob import job_args, ray_job_manifest
from components.raycrs.scaling import scaling_config_for_job
from components.stack.loader import validate
from tests.components.config.test_stack import problems
from tests.helpers import WORKING_DIR, config, stack

# topology -> (hosts, chips per host), independent of the catalog's own arithmetic.
EXPECTED = {
    "1x1": (1, 1),
    "2x2": (1, 4),
    "2x4": (1, 8),
    "4x4": (4, 4),
    "4x8": (8, 4),
    "8x8": (16, 4),
    "8x16": (32, 4),
    "16x16": (64, 4),
}
ZONE = {"v5e": ("us-central1", "us-central1-a"), "v6e": ("us-central1", "us-central1-b")}
RAY_TYPE = {"v5e": "TPU-V5LITEPOD", "v6e": "TPU-V6E"}


def _cfg(pool: dict, groups: list[dict] | None = None, job: dict | None = None) -> StackConfig:
    region, zone = ZONE.get(pool.get("tpu", {}).get("generation", "v6e"), ZONE["v6e"])
    if "gpu" in pool:
        region, zone = "us-central1", "us-central1-a"
    data = {
        "project": "ray-gke-test",
        "region": region,
        "zones": [zone],
        "node_pools": [pool],
        "nap": {"enabled": False},
        "kuberay": {"mode": "gke-addon"},  # brings the TPU webhook multi-host slices need
        "ray_clusters": [{"name": "rc", "worker_groups": groups or []}],
        "jobs": [job] if job else [],
    }
    return StackConfig.model_validate(data)


@pytest.mark.parametrize("gen", ["v5e", "v6e"])
@pytest.mark.parametrize("topology", list(EXPECTED))
@pytest.mark.parametrize("slices", [1, 2])
def test_tpu_every_topology(gen: str, topology: str, slices: int) -> None:
    hosts, chips = EXPECTED[topology]
    pool = {"name": "tpu", "tpu": {"generation": gen, "topology": topology}, "max_slices": slices}
    cfg = _cfg(pool, [{"name": "tpu", "node_pool": "tpu", "max_replicas": slices}])
    job = JobConfig(name="j", workload="train_lm_jax", cluster="rc", worker_group="tpu")
    # A job spans several slices only when they are multi-host (Multislice); on single-host
    # slices it uses one (https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice).
    job_slices = slices if hosts > 1 else 1
    assert scaling_config_for_job(resolve_job(cfg, job)) == {
        "use_tpu": True,
        "topology": topology,
        "accelerator_type": RAY_TYPE[gen],
        "num_workers": hosts * job_slices,
        "resources_per_worker": {"TPU": chips},
    }


@pytest.mark.parametrize(
    ("gpu", "count", "nodes"),
    [
        ("nvidia-l4", 1, 1),
        ("nvidia-l4", 4, 2),
        ("nvidia-tesla-a100", 8, 2),
        ("nvidia-a100-80gb", 2, 3),
        ("nvidia-h100-80gb", 8, 2),
        ("nvidia-h200-141gb", 8, 1),
    ],
)
def test_gpu_shapes(gpu: str, count: int, nodes: int) -> None:
    pool = {
        "name": "gpu",
        "gpu": {"type": gpu, "count": count},
        "max_nodes": nodes,
        "allow_unlisted_zone": True,
    }
    cfg = _cfg(pool)
    job = JobConfig(name="j", workload="train_lm", node_pool="gpu")
    assert scaling_config_for_job(resolve_job(cfg, job)) == {
        "use_gpu": True,
        "num_workers": count * nodes,
        "resources_per_worker": {"GPU": 1},
    }


def test_cpu_pool_one_worker_per_node() -> None:
    cfg = _cfg({"name": "cpu", "machine_type": "n2-standard-8", "max_nodes": 3})
    job = JobConfig(name="j", workload="prepare", node_pool="cpu")
    assert scaling_config_for_job(resolve_job(cfg, job)) == {"use_gpu": False, "num_workers": 3}


def test_worker_group_max_replicas_counts_slices() -> None:
    pool = {"name": "tpu", "tpu": {"generation": "v6e", "topology": "4x4"}, "max_slices": 2}
    cfg = _cfg(pool, [{"name": "g", "node_pool": "tpu", "max_replicas": 1}])
    job = JobConfig(name="j", workload="train_lm_jax", cluster="rc", worker_group="g")
    assert scaling_config_for_job(resolve_job(cfg, job))["num_workers"] == 4


def test_ambiguous_cluster_job_is_an_error_naming_the_groups() -> None:
    cfg = stack("prod")
    job = JobConfig(name="j", workload="train_lm", cluster="training")
    with pytest.raises(ResolveError, match=r"jobs\[j\]\.worker_group .*cpu, tpu-v6e, h100"):
        scaling_config_for_job(resolve_job(cfg, job))


def test_prod_jobs_use_the_catalog() -> None:
    cfg = stack("prod")
    jobs = {j.name: j for j in cfg.jobs}
    s = catalog.tpu_slice("v6e", "4x4")
    # elastic (Pulumi.prod.yaml slices: {min: 1, max: 2}): num_workers (4, 8)
    assert scaling_config_for_job(resolve_job(cfg, jobs["train-lm-jax-v6e"])) == s.scaling_config(
        2, 1
    )
    assert s.scaling_config(2, 1)["num_workers"] == (4, 8)
    h100 = scaling_config_for_job(resolve_job(cfg, jobs["train-lm-h100"]))
    assert h100["num_workers"] == 16 and h100["use_gpu"] is True


def test_peak_flops_per_device_comes_from_the_catalog() -> None:
    from components.catalog import gpu_type, tpu_slice
    from components.plan.resolve import pool_facts
    from components.raycrs.rayjob import job_args
    from components.raycrs.scaling import job_workers, peak_flops_per_device

    cfg = stack("prod")
    assert peak_flops_per_device(pool_facts(cfg.pool("tpu-v6e-4x4"))) == 918e12
    assert (
        peak_flops_per_device(pool_facts(cfg.pool("h100")))
        == gpu_type("nvidia-h100-80gb").peak_bf16_tflops * 1e12
    )
    assert peak_flops_per_device(pool_facts(cfg.pool("cpu"))) is None
    jax_job = next(j for j in cfg.jobs if j.workload == "train_lm_jax")
    args = job_args(plan(cfg).context, resolve_job(cfg, jax_job))
    assert (
        args["peak_flops_per_device"] == tpu_slice("v6e", "4x4").generation.peak_bf16_tflops * 1e12
    )
    target = resolve_job(cfg, jax_job)  # what job_args is handed in one call: both
    assert job_workers(target) == (scaling_config_for_job(target), args["peak_flops_per_device"])


def test_multislice_only_on_multi_host_groups() -> None:
    """GKE runs Multislice on multi-host slices only
    (https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice): the dev stack's
    JAX job on two single-host v5e 2x2 slices uses one slice and its group gets no MEGASCALE
    port; prod's v6e 4x4 x 2 group keeps it."""
    from components.kernel.ray import MEGASCALE_PORT
    from components.raycrs.render import render_manifests
    from tests.helpers import WORKING_DIR, stack

    dev = stack("dev")
    job = next(j for j in dev.jobs if j.workload == "train_lm_jax")
    assert scaling_config_for_job(resolve_job(dev, job))["num_workers"] == 1

    def megascale_groups(cfg: StackConfig) -> dict[str, bool]:
        out = {}
        for m in render_manifests(cfg, WORKING_DIR):
            spec = m["spec"].get("rayClusterSpec", m["spec"])
            for g in spec.get("workerGroupSpecs", []):
                c = g["template"]["spec"]["containers"][0]
                ports = {p["containerPort"] for p in c.get("ports", [])}
                envs = {e["name"] for e in c.get("env", [])}
                if "TPU_TOPOLOGY" in envs:
                    out[g["groupName"]] = MEGASCALE_PORT in ports and "MEGASCALE_PORT" in envs
        return out

    assert megascale_groups(dev) and not any(megascale_groups(dev).values())
    assert any(megascale_groups(stack("prod")).values())


# ---------------------------------------------------------------- from test_elastic_slices.py: Elastic TPU slices (issue 21 item 6): ``jobs[].slices: {min, max}`` -> Ray 2.60's elastic


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
    assert scaling_config_for_job(plan(cfg).job(job))["num_workers"] == (4, 8)
    assert job_args(plan(cfg).context, plan(cfg).job(job))["scaling"]["num_workers"] == (4, 8)
    rj = ray_job_manifest(
        plan(cfg), plan(cfg).job(job), WORKING_DIR, planned_refs(plan(cfg).context, cfg.ray.images)
    )
    assert rj["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"


def test_fixed_range_has_no_annotation() -> None:
    cfg = validate(_stack({"min": 1, "max": 1}))
    assert scaling_config_for_job(plan(cfg).job(cfg.jobs[0]))["num_workers"] == 4
    rj = ray_job_manifest(
        plan(cfg),
        plan(cfg).job(cfg.jobs[0]),
        WORKING_DIR,
        planned_refs(plan(cfg).context, cfg.ray.images),
    )
    assert "kueue.x-k8s.io/elastic-job" not in rj["metadata"].get("annotations", {})
    cfg = validate(_stack(None))
    assert scaling_config_for_job(plan(cfg).job(cfg.jobs[0]))["num_workers"] == 8  # the whole pool


@pytest.mark.parametrize(
    ("slices", "pool", "needle"),
    [
        ({"min": 2, "max": 1}, "v6e", "slices.min 2 is above slices.max 1"),
        ({"min": 1, "max": 3}, "v6e", "max 3 is above the 2 slice(s) the job's node pool has"),
        ({"min": 1, "max": 2}, "v5e", "single-host v5e 2x2 pool 'v5e'"),
        ({"min": 1, "max": 2}, "l4", "node pool 'l4' is not a TPU pool"),
        ({"min": 0, "max": 2}, "v6e", "slices.min: must be from 1 to 64; got 0"),
    ],
)
def test_slices_refused(slices: dict[str, int], pool: str, needle: str) -> None:
    workload = "train_lm" if pool == "l4" else "train_lm_jax"
    assert needle in "\n".join(problems(_stack(slices, pool, workload=workload)))


def test_workload_args_take_the_elastic_pair() -> None:
    from contract.args.train import scaling_problem
    from workloads.train_loop import max_workers

    assert scaling_problem({"num_workers": [4, 8]}) is None
    assert "must be [min, max]" in (scaling_problem({"num_workers": [8, 4]}) or "")
    assert "must be [min, max]" in (scaling_problem({"num_workers": [0, 4]}) or "")
    assert max_workers({"num_workers": (4, 8)}) == 8
    assert max_workers({"num_workers": 3}) == 3


def test_scaling_kwargs_give_ray_a_tuple() -> None:
    """The job's ``scaling`` argument comes back from JSON as a list; the workload hands Ray the
    tuple it requires (ray/train/v2/api/config.py: "an int or a tuple of two ints")."""
    from contract.args.train import TrainArgs
    from workloads.train_loop import scaling_kwargs

    args = TrainArgs(scaling={"num_workers": [4, 8], "use_tpu": True})
    assert scaling_kwargs(args)["num_workers"] == (4, 8)
