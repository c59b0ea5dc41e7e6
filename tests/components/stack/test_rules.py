"""The cross-field rules one by one, the loader running them where their blocks are valid, and the
one resolver giving the same line at every layer (rules, ScalingConfig, manifests, checks)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from components import catalog
from components.config.raycrs import JobConfig, RayClusterConfig, WorkerGroupConfig
from components.config.stack import StackConfig
from components.images.render import planned_refs
from components.kernel.base import StackConfigError
from components.kernel.problems import Problem
from components.nodepools.render import node_pool_specs
from components.plan.plan import plan
from components.plan.resolve import ResolveError, resolve_group, resolve_job
from components.raycrs.raycluster import ray_cluster_manifest
from components.raycrs.rayjob import ray_job_manifest
from components.raycrs.render import render_manifests
from components.raycrs.rules import job_checkpoint_references
from components.raycrs.scaling import scaling_config_for_job
from components.stack.checks import workload_problems
from components.stack.loader import validate
from components.stack.rules import RULES, run_rule
from tests.components.config.test_stack import base, problems
from tests.helpers import WORKING_DIR, config

Mutation = Callable[[dict[str, Any]], None]


def _webhook(d: dict[str, Any]) -> None:
    d["zones"] = ["us-central1-b"]
    d["node_pools"][1] = {
        "name": "tpu",
        "tpu": {"generation": "v6e", "topology": "4x4"},
        "max_slices": 2,
    }
    d["node_pools"][2]["allow_unlisted_zone"] = True
    d["nap"]["resource_limits"].update({"tpu-v6e-slice": 32, "cpu": 2000})


def _old_gke(d: dict[str, Any]) -> None:
    d["zones"] = ["us-central1-b"]
    d["node_pools"] = [{"name": "v6", "tpu": {"generation": "v6e", "topology": "2x2"}}]
    d["ray_clusters"], d["jobs"] = [], []
    d["cluster"] = {"min_master_version": "1.30.5-gke.100"}


def _too_big_for_an_l4(d: dict[str, Any]) -> None:
    """A 38.6e9-parameter model (d_model 8192, 48 layers) served from one 24 GB L4."""
    big = {"d_model": 8192, "n_layers": 48, "n_heads": 64}
    d["jobs"].append({"name": "big", "workload": "train_lm", "node_pool": "cpu", "args": big})
    d["services"] = [{"name": "lm", "checkpoint": "big", "node_pool": "l4"}]


def _incremental_on_addon(d: dict[str, Any]) -> None:
    # the GKE add-on's gates are taken as the chart defaults: off in 1.6.2, on in 1.7.0
    d["kuberay"] = {"mode": "gke-addon", "chart_version": "1.6.2"}
    d["services"] = [
        {
            "name": "lm",
            "checkpoint": "gs://x/y",
            "node_pool": "l4",
            "upgrade_strategy": "NewClusterWithIncrementalUpgrade",
            "incremental_upgrade": {"gateway_class_name": "gke-l7-rilb"},
        }
    ]


def _rdma_pool_outside_its_zone(d: dict[str, Any]) -> None:
    d["zones"] = ["us-central1-a", "us-central1-b"]
    d["node_pools"].append(
        {"name": "a4", "gpu": {"type": "nvidia-b200", "count": 8}, "allow_unlisted_zone": True}
    )
    d["nap"]["resource_limits"].update({"cpu": 2000, "memory": 20000, "nvidia-b200": 8})


# rule name -> (a mutation of base() that breaks only that rule, a line the rule then yields)
CASES: dict[str, tuple[Mutation, str]] = {
    "gpu_networking": (
        _rdma_pool_outside_its_zone,
        "node_pools[a4].zones: ['us-central1-a', 'us-central1-b'] for GPUDirect RDMA: the RDMA "
        "network profile is zonal",
    ),
    "zones_in_region": (
        lambda d: d.update(zones=["europe-west4-a"]),
        "zones: 'europe-west4-a' is not a zone of region us-central1",
    ),
    "pool_zones_in_region": (
        lambda d: d["node_pools"][0].update(zones=["europe-west4-a"]),
        "node_pools[cpu].zones: 'europe-west4-a' is not in region us-central1",
    ),
    "unique_names": (
        lambda d: d["node_pools"].append({"name": "cpu", "machine_type": "n2-standard-4"}),
        "node_pools: name 'cpu' is used more than once",
    ),
    "accelerator_zones_offered": (
        lambda d: d.update(zones=["us-central1-f"]),
        "node_pools[tpu]: TPU v5e is not offered in zone us-central1-f",
    ),
    "gke_version_offered": (
        lambda d: d.update(cluster={"min_master_version": "1.27.3-gke.100"}),
        "cluster.min_master_version: min_master_version 1.27.3-gke.100 is not offered for "
        "new clusters in the REGULAR channel",
    ),
    "tpu_min_gke_version": (
        _old_gke,
        "cluster.min_master_version: 1.30.5-gke.100 is older than 1.31.2-gke.1115000",
    ),
    "nap_limits_cover_pools": (
        lambda d: d["nap"]["resource_limits"].update({"tpu-v5-lite-podslice": 4}),
        "nap.resource_limits[tpu-v5-lite-podslice]: 4 is smaller than the declared node pools "
        "can scale to (8); raise it to at least 8",
    ),
    "pool_node_counts_within_gke_limits": (
        lambda d: d["node_pools"][0].update(max_nodes=1001),
        "node_pools[cpu].max_nodes: 1001 exceeds GKE's 1,000 nodes per node pool per zone",
    ),
    "cluster_service_accounts_declared": (
        lambda d: d["ray_clusters"][0].update(service_account="ray-ghost"),
        "ray_clusters[research].service_account: 'ray-ghost' is not a declared workload "
        "identity; declared: ray-train, ray-serve",
    ),
    "worker_group_pools_exist_and_fit": (
        lambda d: d["ray_clusters"][0]["worker_groups"][1].update(max_replicas=3),
        "ray_clusters[research].worker_groups[tpu].max_replicas: 3 exceeds node pool 'tpu' "
        "capacity of 2 slices",
    ),
    "multi_host_tpu_needs_webhook": (
        _webhook,
        "ray_clusters[research].worker_groups[tpu]: the multi-host TPU slice v6e 4x4 needs the "
        "TPU initialization webhook",
    ),
    "job_targets_exist": (
        lambda d: d["jobs"][0].update(cluster=None, worker_group=None, node_pool="nope"),
        "jobs[prep].node_pool: 'nope' is not a declared node pool; declared: cpu, tpu, l4",
    ),
    "job_service_accounts_declared": (
        lambda d: d["jobs"][0].update(service_account="ray-ghost"),
        "jobs[prep].service_account: 'ray-ghost' is not a declared workload identity; "
        "declared: ray-train, ray-serve",
    ),
    "job_workloads_registered": (
        lambda d: d["jobs"][0].update(workload="train_gpt5"),
        "jobs[prep].workload: 'train_gpt5' is not a registered workload",
    ),
    "job_memory_fits": (
        # a 51.5e9-parameter model replicated on each chip of the research cluster's v5e group
        lambda d: d["jobs"].append(
            {
                "name": "big",
                "workload": "train_lm_jax",
                "cluster": "research",
                "worker_group": "tpu",
                "args": {"d_model": 8192, "n_layers": 64, "n_heads": 64},
            }
        ),
        "jobs[big]: train_lm_jax does not fit a TPU v5e chip (16 GB HBM): 204 GB per device",
    ),
    "job_identity_can_write_outputs": (
        lambda d: d["workload_identities"][0]["buckets"].update(datasets="read"),
        "jobs[prep]: workload prepare writes to the datasets bucket but runs as 'ray-train', "
        "which has read access there",
    ),
    "service_targets_fit": (
        lambda d: d.update(
            services=[
                {"name": "lm", "checkpoint": "gs://x/y", "node_pool": "cpu", "min_workers": 5}
            ]
        ),
        "services[lm].min_workers: 5 > 2 (max_workers, else the capacity of node pool 'cpu')",
    ),
    "service_workloads_and_checkpoints": (
        lambda d: d.update(services=[{"name": "lm", "checkpoint": "prep", "node_pool": "l4"}]),
        "services[lm].checkpoint: 'prep': job prep runs prepare, which writes no checkpoints",
    ),
    "service_fit_problems": (
        _too_big_for_an_l4,
        "services[lm].checkpoint: 155.5 GB (weights 154.7 + KV cache 0.8 for max_model_len 256, "
        "float32) (allowed: at most 21.6 GB (1 x 24 GB x 0.9))",
    ),
    "service_autoscaling_problems": (
        lambda d: d.update(
            services=[
                {
                    "name": "lm",
                    "checkpoint": "gs://x/y",
                    "node_pool": "l4",
                    "args": {"max_replicas": 3},
                }
            ]
        ),
        "services[lm].args.max_replicas: 3 (allowed: at most 2; the worker group holds 2 "
        "replica(s) of 1 x NVIDIA L4",
    ),
    "batch_job_problems": (
        lambda d: d["jobs"].append(
            {
                "name": "gen",
                "workload": "batch_generate",
                "cluster": "research",
                "worker_group": "cpu",
                "args": {"prompts": "gs://x/p/"},
            }
        ),
        "jobs[gen].cluster: 'research' (allowed: unset, with node_pool: a batch_generate job "
        "brings its own cluster",
    ),
    "service_identity_can_read": (
        lambda d: d.update(services=[{"name": "lm", "checkpoint": "gs://x/y", "node_pool": "l4"}]),
        "services[lm].service_account: 'ray-serve' cannot read the artifacts bucket",
    ),
    "service_hf_token_readable": (
        lambda d: d.update(
            services=[
                {
                    "name": "lm",
                    "hf_model": "Qwen/Qwen2.5-0.5B",
                    "hf_token_secret": "hf-token",
                    "node_pool": "l4",
                }
            ]
        ),
        "services[lm].hf_token_secret: 'hf-token' is not a declared secret (allowed: the name "
        "of a secrets: entry; declared: none)",
    ),
    "service_gateway_not_public": (
        lambda d: d.update(
            services=[
                {
                    "name": "lm",
                    "hf_model": "Qwen/Qwen2.5-0.5B",
                    "node_pool": "l4",
                    "gateway": {"gateway_class_name": "gke-l7-global-external-managed"},
                }
            ]
        ),
        "services[lm].gateway.gateway_class_name: 'gke-l7-global-external-managed' is a public "
        "(internet-facing) load balancer and Serve's port has no authentication",
    ),
    "incremental_upgrade_needs_helm": (
        _incremental_on_addon,
        "services[lm].upgrade_strategy: NewClusterWithIncrementalUpgrade needs the KubeRay "
        "operator's RayServiceIncrementalUpgrade feature gate, off by default in KubeRay 1.6.2, "
        "which kuberay.mode 'gke-addon' cannot set",
    ),
    "incremental_upgrade_gateway": (
        lambda d: d.update(
            services=[
                {
                    "name": "lm",
                    "checkpoint": "gs://x/y",
                    "node_pool": "l4",
                    "gateway": {"hostname": "lm.internal.example.com"},
                }
            ]
        ),
        "'lm.internal.example.com': the incremental upgrade's Gateway (KubeRay's) matches every "
        "host name",
    ),
    "gcs_ft_rules": (
        lambda d: d.update(
            services=[{"name": "lm", "checkpoint": "gs://x/y", "node_pool": "l4"}],
            cluster={"min_master_version": "1.34"},
        ),
        "gcs_fault_tolerance needs Kubernetes 1.35 or later (the head reads the Redis AUTH "
        "string through an env file, valueFrom.fileKeyRef, on by default from 1.35) but "
        "cluster.min_master_version is 1.34",
    ),
    "secret_readers_declared": (
        lambda d: d.update(secrets=[{"name": "hf-token", "readers": ["ray-nobody"]}]),
        "secrets[hf-token].readers: 'ray-nobody' is not a declared workload identity",
    ),
    "prebuilt_images_pinned_when_protected": (
        lambda d: d.update(
            cluster={**d.get("cluster", {}), "deletion_protection": True},
            ray={"images": {"gpu": "rayproject/ray:2.60.0-py311-gpu"}},
        ),
        "ray.images.gpu: rayproject/ray:2.60.0-py311-gpu is a tag; a stack with "
        "cluster.deletion_protection: true references prebuilt images by digest",
    ),
    "job_checkpoint_references": (
        lambda d: d["jobs"].append(
            {
                "name": "ev",
                "workload": "evaluate",
                "cluster": "research",
                "worker_group": "cpu",
                "args": {"name": "nope"},
            }
        ),
        "jobs[ev].args.name: 'nope' names no job that writes checkpoints",
    ),
    "job_hf_sources": (
        lambda d: d["jobs"].append(
            {
                "name": "tune",
                "workload": "train_lm",
                "cluster": "research",
                "worker_group": "cpu",
                "args": {"init_model": "/models/tiny"},
            }
        ),
        "jobs[tune].args.init_model: '/models/tiny' is not readable by the job's pods; allowed: "
        "a folder gs://",
    ),
    "ray_version_locked": (
        lambda d: d.update(ray={"version": "2.99.0"}),
        "ray.version: '2.99.0' is newer than every Ray release this repository knows",
    ),
    "gpu_pool_arch_has_image": (
        lambda d: d["node_pools"][2].update(
            gpu={"type": "nvidia-gb200", "count": 4}, allow_unlisted_zone=True
        ),
        "node_pools[l4]: nvidia-gb200 nodes (a4x-highgpu-4g) are arm64, and this project's gpu "
        "image is amd64 only",
    ),
    "compute_class_pools": (
        lambda d: d.update(compute_classes=[{"name": "c", "node_pool": "cpu"}]),
        "compute_classes[c].node_pool: 'cpu' is a CPU pool",
    ),
    "compute_class_shapes_fit_nap": (
        lambda d: (
            d.update(compute_classes=[{"name": "v5e", "node_pool": "tpu", "fallback": ["spot"]}]),
            d["nap"]["resource_limits"].update({"tpu-v5-lite-podslice": 2}),
        ),
        "compute_classes[v5e]: the spot priority's TPU v5e 2x2 slice (1 x ct5lp-hightpu-4t) "
        "needs tpu-v5-lite-podslice 4, above nap.resource_limits[tpu-v5-lite-podslice] 2",
    ),
    "compute_class_pools_not_queued": (
        lambda d: (
            d["node_pools"].append(
                {
                    "name": "tpu-dws",
                    "tpu": {"generation": "v5e", "topology": "2x2"},
                    "zones": ["us-east5-b"],
                    "max_slices": 1,
                    "provisioning": "queued",
                    "labels": {"capacity": "dws"},
                }
            ),
            d.update(compute_classes=[{"name": "v5e", "node_pool": "tpu-dws"}]),
        ),
        "compute_classes[v5e]: node pool 'tpu-dws' has provisioning: queued",
    ),
    "compute_class_flex_start_min_gke_version": (
        lambda d: d.update(
            compute_classes=[{"name": "l4", "node_pool": "l4", "fallback": ["flex-start"]}],
            cluster={"min_master_version": "1.31.5-gke.100"},
        ),
        "compute_classes[l4]: the flex-start priority needs GKE 1.32.2-gke.1652000 or later for "
        "GPUs",
    ),
    "compute_class_fallback_capabilities": (
        lambda d: (
            d["node_pools"].append(
                {
                    "name": "gb200",
                    "gpu": {"type": "nvidia-gb200", "count": 4},
                    "zones": ["us-central1-b"],
                    "max_nodes": 1,
                }
            ),
            d.update(
                compute_classes=[{"name": "gb", "node_pool": "gb200", "fallback": ["flex-start"]}]
            ),
        ),
        "compute_classes[gb].fallback: flex-start on node pool 'gb200' (a4x-highgpu-4g): "
        "flex-start is not offered for the a4x machine series",
    ),
    "job_slices_fit": (
        lambda d: d["jobs"][0].update(
            cluster=None, worker_group=None, node_pool="l4", slices={"min": 1, "max": 1}
        ),
        "jobs[prep].slices: node pool 'l4' is not a TPU pool",
    ),
    # components/capacity/rules.py has a case per capacity rule (tests/components/capacity)
    "capacity_rules": (
        lambda d: d["jobs"][-1].update(queue="nope"),
        "queue: 'nope' is not a capacity.local_queues entry; declared: none",
    ),
    "fuse_caches_fit": (
        # ray-train's datasets (60 GiB) + checkpoints (20 GiB) caches on the 100 GB boot disks
        lambda d: d.update(buckets={"datasets": {"file_cache_size": "60Gi"}}),
        "(checkpoints 20480 MiB, datasets 61440 MiB: 85.9 GB) take more than 50% of pool cpu's "
        "100 GB boot disk",
    ),
    "super_slicing_supported": (
        lambda d: d["node_pools"][1].update(super_slicing=True),
        "node_pools[tpu].super_slicing: super-slicing stitches TPU7x 4x4x4 cubes",
    ),
}


def test_every_rule_has_a_case_a_docstring_and_a_source() -> None:
    names = [r.name for r in RULES]
    assert sorted(names) == sorted(CASES), "add a case for each rule in RULES"
    assert len(set(names)) == len(names)
    for r in RULES:
        doc = r.check.__doc__ or ""
        assert "https://" in doc or ":mod:" in doc or ":data:" in doc, r.name


def test_every_rule_reads_only_the_blocks_it_needs() -> None:
    """A rule's parameters name what it is handed (components.plan.plan.rule_inputs): each block
    parameter is one of its ``needs`` (so it is skipped when that block is invalid), and a rule
    handed the Plan (``p``) or the whole stack (``cfg``) declares what it reads in ``needs``."""
    for r in RULES:
        params = set(inspect.signature(r.check).parameters)
        tops = {n.split(".")[0] for n in r.needs}
        assert params - {"p", "cfg"} <= tops, f"{r.name} reads {params - tops} not in its needs"
        assert params, r.name
        if not params & {"p", "cfg"}:  # a need it is not handed would skip it for nothing
            assert tops == params, f"{r.name} needs {tops - params} it does not read"


def test_a_rule_parameter_that_is_no_block_is_a_type_error() -> None:
    def reads_nothing_known(zonez: list[str]) -> list[Problem]:
        """:mod:`nowhere`"""
        return []

    with pytest.raises(TypeError, match="parameter 'zonez' is not p"):
        run_rule(reads_nothing_known, validate(base()))


def test_a_rule_is_handed_its_blocks_by_name() -> None:
    cfg = validate(base())
    seen: dict[str, Any] = {}

    def reads(zones: list[str], p: Any, cfg: StackConfig) -> list[Problem]:
        seen.update(zones=zones, p=p, cfg=cfg)
        return []

    run_rule(reads, cfg)
    assert seen == {"zones": cfg.zones, "p": plan(cfg), "cfg": cfg}


# What GKE offered in late 2024 (1.28-1.31 in every channel), for rules about older pins.
OFFERED_2024 = dict.fromkeys(("RAPID", "REGULAR", "STABLE", "EXTENDED"), ("1.28", "1.31"))


@pytest.mark.parametrize("name", list(CASES))
def test_rule(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # GKE no longer offers a version older than v6e's minimum (catalog.GKE_OFFERED_MINORS), so
    # that rule is exercised against a 2024 record of the offered versions.
    monkeypatch.setattr(
        catalog.gke, "GKE_OFFERED_MINORS", OFFERED_2024
    )  # where gke_version_problem reads it
    rule = next(r for r in RULES if r.name == name)
    assert run_rule(rule.check, validate(base())) == [], "the base stack breaks no rule"
    mutate, line = CASES[name]
    d = base()
    mutate(d)
    # The named rule yields the line on the field-valid model ...
    cfg = StackConfig.model_validate(d)
    own = run_rule(rule.check, cfg)
    assert any(line in p.message for p in own), own
    # ... each a Problem naming the stack field it is about ...
    assert all(isinstance(p, Problem) and p.path for p in own), own
    # ... and the loader reports it.
    assert any(line in p for p in problems(d)), problems(d)


def test_one_invalid_field_does_not_hide_a_broken_reference_elsewhere() -> None:
    d = base()
    d["labels"] = {"Team": "ml"}  # invalid label key (field error in one block)
    d["jobs"][0].update(cluster=None, worker_group=None, node_pool="nope")  # cross reference
    found = problems(d)
    assert len(found) == 2, found
    assert found[0].startswith("labels: label 'Team'='ml'")
    assert (
        found[1]
        == "jobs[prep].node_pool: 'nope' is not a declared node pool; declared: cpu, tpu, l4"
    )


def test_rules_whose_blocks_are_invalid_do_not_run() -> None:
    d = base()
    d["node_pools"][0]["max_nodes"] = "lots"  # node_pools invalid as a whole
    d["ray_clusters"][0]["worker_groups"][0]["node_pool"] = "nope"
    d["secrets"] = [{"name": "hf-token", "readers": ["ray-nobody"]}]
    found = problems(d)
    # The worker-group rule needs node_pools, so it stays silent rather than call every pool
    # undeclared; the secrets rule needs no pools, so it still speaks.
    assert [p.split(":")[0] for p in found] == [
        "node_pools[cpu].max_nodes",
        "secrets[hf-token].readers",
    ]


def test_required_block_invalid_still_runs_the_other_rules() -> None:
    d = base()
    d["region"] = "moon"
    d["jobs"][0]["workload"] = "train_gpt5"
    found = problems(d)
    assert any("region 'moon' is not a GCP region" in p for p in found)
    assert any("jobs[prep].workload: 'train_gpt5'" in p for p in found)
    assert not any(p.startswith("zones:") for p in found), "zones_in_region needs region"


def test_model_validation_runs_no_rule_the_loader_runs_them_once() -> None:
    """The model checks fields only (pydantic); the loader's validate runs the cross-field
    rules over the validated model (no stack -> rules -> resolve import circle)."""
    d = base()
    d["jobs"][0]["cluster"] = "ghost"
    cfg = StackConfig.model_validate(d)  # field-valid: accepted by the model
    assert cfg.jobs[0].cluster == "ghost"
    with pytest.raises(StackConfigError) as exc:
        validate(d)
    (item,) = [p for p in exc.value.items if p.rule == "job_targets_exist"]
    assert item.path == "jobs[prep].cluster"
    assert item.message.startswith("jobs[prep].cluster: 'ghost' is not a declared")


def test_job_without_target_or_with_ambiguous_group_is_refused_at_validation() -> None:
    d = base()
    d["jobs"][0].update(cluster=None, worker_group=None)
    assert "jobs[prep] names no target; set cluster (+ worker_group) or node_pool" in "\n".join(
        problems(d)
    )
    d = base()
    d["jobs"][0]["worker_group"] = None
    assert (
        "jobs[prep].worker_group is not set and ray cluster 'research' has 2 worker groups; "
        "set one of: cpu, tpu"
    ) in problems(d)


def test_a_groups_undeclared_pool_is_reported_once() -> None:
    d = base()
    d["ray_clusters"][0]["worker_groups"][0]["node_pool"] = "nope"  # the job's group
    found = problems(d)
    assert found == [
        "ray_clusters[research].worker_groups[cpu].node_pool: 'nope' is not a declared node "
        "pool; declared: cpu, tpu, l4"
    ]


# --------------------------------------------------------------------------- one resolver


def test_resolve_job_targets() -> None:
    cfg = validate(base())
    t = resolve_job(cfg, cfg.jobs[0])
    assert (t.cluster.name, t.group.name, t.pool.name, t.runs_as) == (
        "research",
        "cpu",
        "cpu",
        "ray-train",
    )
    assert t.replicas == 2 and not t.own_cluster and t.slice is None
    own = resolve_job(cfg, JobConfig(name="j", workload="prepare", node_pool="tpu"))
    assert own.own_cluster and own.worker_group is None and own.replicas == 2
    assert (own.group.min_replicas, own.group.max_replicas) == (2, 2)
    assert own.slice is not None and own.slice.topology == "2x2"
    assert own.group_target.field == "jobs[j]" and own.group_target.hosts == 1
    g = resolve_group(cfg, cfg.ray_clusters[0], cfg.ray_clusters[0].worker_groups[1])
    assert (g.field, g.unit, g.capacity, g.max_replicas) == (
        "ray_clusters[research].worker_groups[tpu]",
        "slices",
        2,
        2,
    )


def test_the_same_mistake_reads_the_same_at_every_layer() -> None:
    """Job pool: rules (validate), ScalingConfig, RayJob manifest and the rendered-stack check."""
    line = "jobs[prep].node_pool: 'x' is not a declared node pool; declared: cpu, tpu, l4"
    d = base()
    d["jobs"][0].update(cluster=None, worker_group=None, node_pool="x")
    assert line in problems(d)
    cfg = validate(base())
    job = JobConfig(name="prep", workload="prepare", node_pool="x")
    broken = cfg.model_copy(update={"jobs": [job]})
    with pytest.raises(ResolveError) as target:
        plan(broken).job(job)  # the record the ScalingConfig and the RayJob are built from
    with pytest.raises(ResolveError) as manifest:
        render_manifests(broken, WORKING_DIR)
    assert str(target.value) == str(manifest.value) == line
    assert target.value.field == "jobs[prep].node_pool"
    assert workload_problems(broken) == [line]
    ok = plan(cfg).job(cfg.jobs[0])  # the declared job's record builds both
    assert (
        ray_job_manifest(
            plan(cfg), ok, WORKING_DIR, planned_refs(plan(cfg).context, cfg.ray.images)
        )["kind"]
        == "RayJob"
    )
    assert scaling_config_for_job(ok)["num_workers"] >= 1


def test_the_same_group_mistake_reads_the_same_in_rules_and_manifests() -> None:
    line = (
        "ray_clusters[research].worker_groups[cpu].node_pool: 'x' is not a declared node pool; "
        "declared: cpu, tpu, l4"
    )
    d = base()
    d["ray_clusters"][0]["worker_groups"][0]["node_pool"] = "x"
    assert problems(d) == [line]
    cfg = validate(base())
    rc = RayClusterConfig(
        name="research", worker_groups=[WorkerGroupConfig(name="cpu", node_pool="x")]
    )
    with pytest.raises(ResolveError, match="^" + re.escape(line)):
        ray_cluster_manifest(plan(cfg.model_copy(update={"ray_clusters": [rc]})), rc, {})


def test_config_error_lists_field_then_rule_problems() -> None:
    d = base()
    d["project"] = "X"
    d["jobs"][0]["cluster"] = "ghost"
    with pytest.raises(StackConfigError) as exc:
        validate(d, "Pulumi.test.yaml")
    assert exc.value.problems[0].startswith("project:")
    assert exc.value.problems[1].startswith("jobs[prep].cluster: 'ghost'")
    assert str(exc.value).startswith("Pulumi.test.yaml: 2 problems:")


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        ("scaling", {"num_workers": 3}, "the job's node pool or worker group"),
        ("storage_path", "gs://elsewhere/x", "the checkpoints bucket"),
        ("max_failures", 0, "jobs[].max_failures"),
        ("name", "other", "the job name"),
    ],
)
def test_job_args_may_not_set_what_the_platform_binds(key: str, value, what: str) -> None:
    """A trainer's args cannot replace the pool's ScalingConfig (it would train on CPU on a GPU
    pool), its checkpoint folder, its dataset or its restart budget."""
    job = {"name": "t", "workload": "train_lm", "node_pool": "l4", "args": {key: value}}
    with pytest.raises(StackConfigError) as e:
        validate(config(jobs=[job]))
    (line,) = [p for p in e.value.problems if p.startswith(f"jobs[t].args.{key}")]
    assert f"the platform sets it from {what}" in line and line.endswith("remove it")


def test_a_job_names_its_dataset_folder_in_the_datasets_bucket_only() -> None:
    """``args.dataset`` is a folder of the datasets bucket (a fine-tuning job's tokenized data
    beside the byte-level ``lm-bytes``); the bucket stays the platform's."""
    from components.plan.plan import plan
    from components.raycrs.rayjob import job_args

    for bad in ("gs://foo/bar", "/abs/path", "../up", "Llama Tokens"):
        job = {"name": "t", "workload": "train_lm", "node_pool": "l4", "args": {"dataset": bad}}
        with pytest.raises(StackConfigError) as e:
            validate(config(jobs=[job]))
        (line,) = [p for p in e.value.problems if p.startswith("jobs[t].args.dataset")]
        assert f"{bad!r} is not a folder of the datasets bucket" in line
    job = {"name": "t", "workload": "train_lm", "node_pool": "l4", "args": {"dataset": "tok/v1"}}
    cfg = validate(config(jobs=[job]))
    p = plan(cfg)
    bound = job_args(p.context, p.job(cfg.jobs[0]))
    assert bound["dataset"] == "gs://ray-gke-test-ray-test-datasets/tok/v1"
    default = validate(config(jobs=[{**job, "args": {}}]))
    p = plan(default)
    assert job_args(p.context, p.job(default.jobs[0]))["dataset"].endswith("-datasets/lm-bytes")


def test_a_reader_may_name_the_run_it_reads() -> None:
    train = {"name": "t", "workload": "train_lm", "node_pool": "cpu"}
    job = {"name": "ev", "workload": "evaluate", "node_pool": "cpu", "args": {"name": "t"}}
    assert validate(config(jobs=[train, job])).jobs[1].args == {"name": "t"}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            {"network": {"flow_logs": {"enabled": False, "flow_sampling": 0.9}}},
            "network.flow_logs: flow_sampling set but enabled is false (no flow logs to "
            "configure); remove them or set enabled: true",
        ),
        (
            {"kuberay": {"mode": "gke-addon", "tpu_webhook": True}},
            "kuberay: tpu_webhook: true has no effect with mode gke-addon (the add-on installs "
            "the TPU webhook itself); remove it",
        ),
    ],
)
def test_keys_that_would_do_nothing_are_refused(extra: dict[str, Any], says: str) -> None:
    with pytest.raises(StackConfigError) as e:
        validate(config(**extra))
    assert says in e.value.problems


def test_flow_logs_may_be_turned_off_alone() -> None:
    cfg = validate(config(network={"flow_logs": {"enabled": False}}))
    assert cfg.network.flow_logs.enabled is False


# ---------------------------------------------------------------- from test_accelerators_2026.py: Stack rules for the 2026 accelerators (issue 21 item 5): TPU7x and v5p slices, A4 (B200) and


def _gpu_stack(gpu: str, count: int, **extra: Any) -> dict[str, Any]:
    data = config(region="us-central1", zones=["us-central1-a"])
    data["node_pools"] = [
        {"name": "gb", "gpu": {"type": gpu, "count": count}, "allow_unlisted_zone": True}
    ]
    data["nap"] = {"enabled": False}
    data["ray_clusters"] = [
        {
            "name": "research",
            "worker_groups": [{"name": "gpu", "node_pool": "gb", "max_replicas": 1}],
        }
    ]
    data.update(extra)
    return data


def test_a4x_refused_without_an_arm64_image() -> None:
    found = "\n".join(problems(_gpu_stack("nvidia-gb200", 4)))
    assert "node_pools[gb]: nvidia-gb200 nodes (a4x-highgpu-4g) are arm64" in found
    assert "set ray.images.gpu to an image built for arm64 with architectures: [arm64]" in found


def test_a4x_refused_with_an_amd64_image() -> None:
    ray = {"images": {"gpu": {"image": "example/ray-gpu:2.60.0-arm"}}}
    found = "\n".join(problems(_gpu_stack("nvidia-gb200", 4, ray=ray)))
    assert "is built for amd64; add arm64 to its architectures" in found


def test_a4x_accepted_with_an_arm64_image_and_selects_arm_nodes() -> None:
    image = {"image": "example/ray-gpu:2.60.0-arm64", "architectures": ["arm64"]}
    cfg = validate(_gpu_stack("nvidia-gb200", 4, ray={"images": {"gpu": image}}))
    spec = next(s for s in node_pool_specs(plan(cfg)) if s.name == "gb")
    assert spec.machine_type == "a4x-highgpu-4g"
    assert spec.labels["kubernetes.io/arch"] == "arm64"
    rc = next(m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayCluster")
    pod = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert pod["containers"][0]["image"] == "example/ray-gpu:2.60.0-arm64"


def test_a4x_zone_outside_the_sourced_one_needs_allow_unlisted_zone() -> None:
    """A4X's only sourced zone is us-central1-b (components/catalog/gpu.py); us-central1-a was
    dropped for want of a source, so a pool there is refused with the escape hatch named, and
    accepted with it."""
    image = {"image": "example/ray-gpu:2.60.0-arm64", "architectures": ["arm64"]}
    data = _gpu_stack("nvidia-gb200", 4, ray={"images": {"gpu": image}})
    data["node_pools"][0]["allow_unlisted_zone"] = False
    msg = "\n".join(problems(data))
    assert (
        "node_pools[gb]: nvidia-gb200 is not offered in zone us-central1-a per the catalog; "
        "offered in: us-central1-b (set allow_unlisted_zone: true"
    ) in msg
    data["zones"] = ["us-central1-b"]
    validate(data)
    data["zones"] = ["us-central1-a"]
    data["node_pools"][0]["allow_unlisted_zone"] = True
    validate(data)


def test_v5p_needs_the_sourced_gke_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """v5p's minimum is the version xpk moved to for v5p, 1.28.3-gke.1286000 (the unsourced
    1.28.3-gke.1024000 recorded before is refused now); GKE no longer offers 1.28, so this runs
    against the 2024 record of offered versions."""
    monkeypatch.setattr(catalog.gke, "GKE_OFFERED_MINORS", OFFERED_2024)
    assert catalog.tpu_generation("v5p").min_gke_version == "1.28.3-gke.1286000"
    data = config(region="us-east5", zones=["us-east5-a"])
    data["node_pools"] = [{"name": "v5p", "tpu": {"generation": "v5p", "topology": "2x2x1"}}]
    data["ray_clusters"], data["jobs"], data["nap"] = [], [], {"enabled": False}
    data["cluster"] = {**data.get("cluster", {}), "min_master_version": "1.28.3-gke.1024000"}
    found = "\n".join(problems(data))
    assert (
        "cluster.min_master_version: 1.28.3-gke.1024000 is older than 1.28.3-gke.1286000, the "
        "minimum GKE version for TPU v5p node pools (node_pools[v5p])"
    ) in found
    data["cluster"]["min_master_version"] = "1.28.3-gke.1286000"
    validate(data)


def test_amd64_gpu_pool_refused_with_an_arm64_only_image() -> None:
    image = {"image": "example/ray-gpu:2.60.0-arm64", "architectures": ["arm64"]}
    found = "\n".join(problems(_gpu_stack("nvidia-b200", 8, ray={"images": {"gpu": image}})))
    assert "nvidia-b200 nodes (a4-highgpu-8g) are amd64" in found


def test_b200_pool_renders_a4() -> None:
    cfg = validate(_gpu_stack("nvidia-b200", 8))
    spec = next(s for s in node_pool_specs(plan(cfg)) if s.name == "gb")
    assert (spec.machine_type, spec.accelerator_type, spec.accelerator_count) == (
        "a4-highgpu-8g",
        "nvidia-b200",
        8,
    )
    assert "kubernetes.io/arch" not in spec.labels


def _tpu7x(version: str | None) -> dict[str, Any]:
    data = config(region="us-central1", zones=["us-central1-c"])
    data["node_pools"] = [{"name": "iw", "tpu": {"generation": "tpu7x", "topology": "2x2x2"}}]
    data["nap"] = {"enabled": False}
    if version:
        data["cluster"] = {**data["cluster"], "min_master_version": version}
    return data


def test_tpu7x_needs_gke_1_34_0_gke_2201000() -> None:
    validate(_tpu7x("1.35"))
    found = "\n".join(problems(_tpu7x("1.34.0-gke.1000")))
    assert "older than 1.34.0-gke.2201000, the minimum GKE version for TPU tpu7x" in found


def test_tpu_topology_must_be_the_generations() -> None:
    data = _tpu7x(None)
    data["node_pools"][0]["tpu"]["topology"] = "4x4"
    assert "topology 4x4 is not a tpu7x topology; valid: 2x2x1" in "\n".join(problems(data))
    data["node_pools"][0]["tpu"] = {"generation": "v5p", "topology": "2x2x2"}
    data["zones"] = ["us-central1-a"]
    cfg = validate(data)
    spec = node_pool_specs(plan(cfg))[1]
    assert (spec.tpu_topology, spec.workload_policy) == ("2x2x2", None)  # v5p: COMPACT + topology


# ---------------------------------------------------------------- from test_job_references.py: Job-to-job references resolve at `check` time: an evaluate job reads the run of a declared

BUCKET = "ray-gke-test-ray-checkpoints"  # <project>-<cluster name>-checkpoints


def _with_jobs(*jobs: dict[str, Any]) -> dict[str, Any]:
    data = base()
    data["jobs"] += [
        {"name": "train-a", "workload": "train_lm", "cluster": "research", "worker_group": "cpu"},
        *jobs,
    ]
    return data


def _eval(**args: Any) -> dict[str, Any]:
    return {
        "name": "eval-a",
        "workload": "evaluate",
        "cluster": "research",
        "worker_group": "cpu",
        "args": args,
    }


def test_evaluate_naming_a_declared_training_job_passes() -> None:
    cfg = validate(_with_jobs(_eval(name="train-a")))
    assert run_rule(job_checkpoint_references, cfg) == []
    ok = _with_jobs(_eval(name="train-a", checkpoint=f"gs://{BUCKET}/train-a/checkpoint_000010"))
    assert run_rule(job_checkpoint_references, validate(ok)) == []


def test_a_typo_in_the_training_job_name_names_field_value_and_valid_names() -> None:
    found = [p for p in problems(_with_jobs(_eval(name="train-b"))) if "args.name" in p]
    assert len(found) == 1
    (line,) = found
    assert line.startswith("jobs[eval-a].args.name: 'train-b'")
    assert "valid: train-a" in line and f"gs://{BUCKET}/train-b" in line


def test_the_default_run_name_is_checked_too() -> None:
    (line,) = [p for p in problems(_with_jobs(_eval())) if "args.name" in p]
    assert "'train_lm' (the default; set args.name)" in line and "valid: train-a" in line


@pytest.mark.parametrize(
    "checkpoint",
    [f"gs://{BUCKET}/train-b/checkpoint_000010", "gs://other-bucket/train-a/checkpoint_000010"],
)
def test_a_checkpoint_outside_the_named_jobs_folder_is_refused(checkpoint: str) -> None:
    (line,) = [
        p
        for p in problems(_with_jobs(_eval(name="train-a", checkpoint=checkpoint)))
        if "args.checkpoint" in p
    ]
    assert line.startswith(f"jobs[eval-a].args.checkpoint: {checkpoint!r}")
    assert f"gs://{BUCKET}/train-a/" in line and "valid training jobs: train-a" in line


def test_a_job_that_is_not_a_trainer_is_not_a_valid_target() -> None:
    (line,) = [p for p in problems(_with_jobs(_eval(name="prep"))) if "args.name" in p]
    assert "'prep'" in line and "valid: train-a" in line


def test_an_unknown_key_alone_skips_no_rule() -> None:
    """Nothing reads an unknown key: with a typo in cluster: and in a node pool, the rules over
    those blocks still run (the undeclared pool of a worker group is reported with the typos)."""
    d = base()
    d["cluster"] = {"name": "ray", "regoinal": True}
    d["node_pools"][0]["max_node"] = 3
    d["ray_clusters"][0]["worker_groups"][0]["node_pool"] = "nope"
    with pytest.raises(StackConfigError) as exc:
        validate(d)
    lines = exc.value.problems
    assert any(ln.startswith("cluster.regoinal: unknown key 'regoinal'") for ln in lines), lines
    assert any("max_node" in ln and "did you mean 'max_nodes'?" in ln for ln in lines), lines
    assert any(
        ln.startswith("ray_clusters[research].worker_groups[cpu].node_pool: 'nope' is not a")
        for ln in lines
    ), lines
    assert exc.value.notes == []  # no rule was skipped


def test_capacity_counts_one_slice_in_the_singular() -> None:
    d = base()
    tpu = next(p for p in d["node_pools"] if "tpu" in p)
    tpu["max_slices"] = 1
    group = next(g for g in d["ray_clusters"][0]["worker_groups"] if g["node_pool"] == tpu["name"])
    group["max_replicas"] = 2
    with pytest.raises(StackConfigError) as exc:
        validate(d)
    assert any(ln.endswith("capacity of 1 slice") for ln in exc.value.problems), exc.value.problems
