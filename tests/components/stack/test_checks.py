"""``raygke check`` on the rendered stack, through the real CLI entry point."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.kernel.base import StackConfigError
from components.plan.naming import workload_accounts
from components.plan.plan import plan
from components.raycrs import placement
from components.raycrs.render import render_manifests
from components.security.iam import bucket_bindings, iam_problems, project_bindings
from components.stack import checks
from components.stack.checks import check_manifests, check_stack, stack_field
from components.stack.loader import validate
from raygke.cli import app
from tests.ast_source import parse
from tests.helpers import ROOT, STACKS, WORKING_DIR, config, needs_crds, stack

runner = CliRunner()


def _tpu_group(manifests: list[dict]) -> dict:
    rc = next(m for m in manifests if m["kind"] == "RayCluster")
    return next(g for g in rc["spec"]["workerGroupSpecs"] if "tpu" in g["groupName"])


def _run_check_with(monkeypatch, name: str, breaker: Callable[[list[dict]], None]):
    """Run ``raygke check --stack NAME`` with the rendered manifests broken by ``breaker``."""
    real = checks.render_manifests

    def broken(cfg, uri):
        manifests = copy.deepcopy(real(cfg, uri))
        breaker(manifests)
        return manifests

    monkeypatch.setattr(checks, "render_manifests", broken)
    monkeypatch.chdir(ROOT)
    return runner.invoke(app, ["check", "--stack", name])


@needs_crds
@pytest.mark.parametrize("name", STACKS)
def test_repo_stacks_pass(name: str, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["check", "--stack", name])
    assert result.exit_code == 0, result.output
    assert check_stack(stack(name)) == []


def _set_topology(m: list[dict]) -> None:
    _tpu_group(m)["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "2x4"


def _drop_toleration(m: list[dict]) -> None:
    del _tpu_group(m)["template"]["spec"]["tolerations"]


def _chips(m: list[dict]) -> None:
    res = _tpu_group(m)["template"]["spec"]["containers"][0]["resources"]
    res["requests"]["google.com/tpu"] = res["limits"]["google.com/tpu"] = "8"


def _misspell(m: list[dict]) -> None:
    g = _tpu_group(m)
    g["numOfHost"] = g.pop("numOfHosts")


BREAKS = [
    ("wrong topology label", _set_topology, ["worker group tpu-v5e", "gke-tpu-topology: 2x4"]),
    ("missing toleration", _drop_toleration, ["worker group tpu-v5e", "no toleration for taint"]),
    ("chips mismatch", _chips, ["worker group tpu-v5e", "google.com/tpu request 8 != 4 chips"]),
    (
        "misspelled field",
        _misspell,
        ["RayCluster research: spec.workerGroupSpecs[1].numOfHost: unknown field"],
    ),
]


@needs_crds
@pytest.mark.parametrize(("what", "breaker", "expected"), BREAKS, ids=[b[0] for b in BREAKS])
def test_cli_catches_a_broken_worker_group(monkeypatch, what, breaker, expected) -> None:
    result = _run_check_with(monkeypatch, "dev", breaker)
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())  # undo terminal wrapping
    for needle in expected:
        assert needle in out, f"{what}: {needle!r} not in {out}"


@needs_crds
def test_v6e_numofhosts_mismatch_and_wrong_topology_on_prod() -> None:
    cfg = stack("prod")
    m = render_manifests(cfg, WORKING_DIR)
    _tpu_group(m)["numOfHosts"] = 2
    (line,) = check_manifests(cfg, m)
    assert "numOfHosts 2 != 4 hosts of a v6e 4x4 slice" in line
    m = render_manifests(cfg, WORKING_DIR)
    _tpu_group(m)["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "3x3"
    (line,) = check_manifests(cfg, m)
    assert "matches no declared node pool" in line and "gke-tpu-topology: 3x3" in line


@needs_crds
def test_requests_above_allocatable() -> None:
    cfg = stack("dev")
    m = render_manifests(cfg, WORKING_DIR)
    rc = m[0]
    cpu = next(g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == "cpu")
    cpu["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "64"
    (line,) = check_manifests(cfg, m)
    assert "worker group cpu" in line and "requests cpu 64" in line


def test_iam_public_bucket_and_project_storage_role() -> None:
    cfg = stack("prod")
    accounts = workload_accounts(cfg.workload_identities)
    buckets = bucket_bindings(cfg.project, accounts)
    grants = project_bindings(cfg.project, cfg.cluster.name)
    assert iam_problems(cfg.project, accounts, buckets, grants) == []
    assert all(not role.startswith("roles/storage.") for role, _ in grants)
    bad_buckets = [*buckets, ("datasets", "roles/storage.objectViewer", "allUsers")]
    member = "serviceAccount:ray-train@ray-gke-prod.iam.gserviceaccount.com"
    bad_project = [*grants, ("roles/storage.admin", member)]
    problems = iam_problems(cfg.project, accounts, bad_buckets, bad_project)
    assert any("bucket datasets" in p and "public" in p for p in problems)
    assert any("roles/storage.admin" in p and "ray-train" in p for p in problems)


def test_workload_accelerator_mismatch_is_reported() -> None:
    cfg = stack("prod")
    data = cfg.model_dump(by_alias=True)
    data["jobs"].append(
        {"name": "torch-on-tpu", "workload": "train_lm", "node_pool": "tpu-v6e-4x4"}
    )
    problems = checks.workload_problems(type(cfg).model_validate(data))
    assert problems == [
        "jobs[torch-on-tpu]: workload 'train_lm' supports cpu, gpu, not tpu "
        "(node pool 'tpu-v6e-4x4')"
    ]


def test_tune_lm_runs_on_cpu_gpu_pools_and_on_tpu_slices_with_the_jax_trainer() -> None:
    cfg = stack("dev")
    data = cfg.model_dump(by_alias=True)
    data["jobs"] += [
        {"name": "tune-cpu", "workload": "tune_lm", "cluster": "research", "worker_group": "cpu"},
        {"name": "tune-l4", "workload": "tune_lm", "node_pool": "l4", "args": {"trials": 4}},
        {
            "name": "tune-v5e",
            "workload": "tune_lm",
            "cluster": "research",
            "worker_group": "tpu-v5e",
            "args": {"trainer": "jax"},
        },
        {"name": "tune-v5e-torch", "workload": "tune_lm", "node_pool": "tpu-v5e-2x2"},
        {
            "name": "tune-l4-jax",
            "workload": "tune_lm",
            "node_pool": "l4",
            "args": {"trainer": "jax"},
        },
    ]
    problems = checks.workload_problems(type(cfg).model_validate(data))
    assert problems == [
        "jobs[tune-v5e-torch].args: workload tune_lm: a TPU slice needs trainer 'jax', not 'torch'",
        "jobs[tune-l4-jax].args: workload tune_lm: trainer 'jax' runs on TPU slices and CPUs, not "
        "GPU pools; use trainer 'torch'",
    ]


def test_tune_lm_with_the_tf_trainer_runs_where_train_lm_tf_runs() -> None:
    """A tf trial takes one worker of a CPU pool; on a GPU pool it is accepted exactly when the
    registry lets train_lm_tf use GPUs; TPU slices take trainer jax."""
    from contract.registry import get_workload

    cfg = stack("dev")
    data = cfg.model_dump(by_alias=True)
    data["jobs"] += [
        {
            "name": "tune-cpu-tf",
            "workload": "tune_lm",
            "cluster": "research",
            "worker_group": "cpu",
            "args": {"trainer": "tf"},
        },
        {"name": "tune-l4-tf", "workload": "tune_lm", "node_pool": "l4", "args": {"trainer": "tf"}},
        {
            "name": "tune-v5e-tf",
            "workload": "tune_lm",
            "node_pool": "tpu-v5e-2x2",
            "args": {"trainer": "tf"},
        },
    ]
    problems = checks.workload_problems(type(cfg).model_validate(data))
    expected = [
        "jobs[tune-v5e-tf].args: workload tune_lm: a TPU slice needs trainer 'jax', not 'tf'"
    ]
    refusal = get_workload("train_lm_tf").refusal("gpu")
    if refusal:
        expected.insert(
            0, f"jobs[tune-l4-tf].args: workload tune_lm: trainer 'tf' on a GPU pool: {refusal}"
        )
    assert problems == expected


def test_tune_lm_refuses_a_multi_host_slice() -> None:
    """A trial runs on one TPU host; one host of a multi-host slice cannot start alone."""
    cfg = stack("prod")
    data = cfg.model_dump(by_alias=True)
    data["jobs"] += [
        {
            "name": "tune-v6e",
            "workload": "tune_lm",
            "cluster": "training",
            "worker_group": "tpu-v6e",
            "args": {"trainer": "jax"},
        }
    ]
    assert checks.workload_problems(type(cfg).model_validate(data)) == [
        "jobs[tune-v6e].args: workload tune_lm: a trial runs on one TPU host, but topology 4x4 "
        "is a 4-host slice; use a single-host slice pool"
    ]


def test_tune_lm_trials_get_one_worker_of_the_pool() -> None:
    from components.raycrs.rayjob import job_args
    from contract.args.tune_lm import TuneLmArgs
    from workloads.tune_lm import trial_resources

    cfg = stack("dev")
    data = cfg.model_dump(by_alias=True)
    data["jobs"] += [
        {"name": "tune-l4", "workload": "tune_lm", "node_pool": "l4"},
        {
            "name": "tune-v5e",
            "workload": "tune_lm",
            "node_pool": "tpu-v5e-2x2",
            "args": {"trainer": "jax"},
        },
    ]
    cfg = type(cfg).model_validate(data)
    jobs = {j.name: j for j in cfg.jobs}
    gpu = TuneLmArgs.parse(job_args(plan(cfg).context, plan(cfg).job(jobs["tune-l4"])))
    tpu = TuneLmArgs.parse(job_args(plan(cfg).context, plan(cfg).job(jobs["tune-v5e"])))
    assert trial_resources(gpu) == {"CPU": 1.0, "GPU": 1.0}
    assert trial_resources(tpu) == {"CPU": 1.0, "TPU": 4.0}


def test_missing_crds_is_one_problem_saying_how_to_fix(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAYGKE_CRDS_DIR", str(tmp_path))
    problems = check_stack(stack("dev"))
    assert len(problems) == 1 and "RAYGKE_CRDS_DIR" in problems[0]


def test_a_quota_below_one_group_is_refused() -> None:
    """A ResourceQuota refuses a pod that would exceed it: a quota below one head, or below a
    whole TPU slice (numOfHosts pods that only run together), leaves that cluster never running."""
    from components.stack.checks import quota_problems

    cfg = stack("prod")
    assert quota_problems(cfg, render_manifests(cfg, WORKING_DIR)) == []
    data = cfg.model_dump(by_alias=True, exclude_none=True)
    data["kuberay"]["quota"] = {"tpus": 8, "memory": "8Gi"}
    low = type(cfg).model_validate(data)
    problems = quota_problems(low, render_manifests(low, WORKING_DIR))
    assert (
        "RayCluster training: worker group tpu-v6e: requests google.com/tpu 4 hosts x 4, more "
        "than kuberay.quota allows the whole namespace (8); raise kuberay.quota"
    ) in problems
    assert (
        "RayCluster training: head group: requests memory 16Gi, more than kuberay.quota allows "
        "the whole namespace (8Gi); raise kuberay.quota"
    ) in problems
    assert not any("RayJob train-lm-h100: head group" in p for p in problems)  # 8Gi fits


def _with_jobs(name: str, *jobs: dict, groups: dict | None = None):
    cfg = stack(name)
    data = cfg.model_dump(by_alias=True)
    data["jobs"] += list(jobs)
    for group in data["ray_clusters"][0]["worker_groups"]:
        group.update((groups or {}).get(group["name"], {}))
    return type(cfg).model_validate(data)


def test_strict_placement_that_the_pool_cannot_hold_is_refused() -> None:
    cfg = _with_jobs(
        "prod",
        # 2 nodes x 8 H100 = 16 one-GPU workers
        {"name": "pack-h100", "workload": "train_lm", "node_pool": "h100",
         "placement_strategy": "STRICT_PACK"},
        {"name": "spread-h100", "workload": "train_lm", "node_pool": "h100",
         "placement_strategy": "STRICT_SPREAD"},
        # 2 slices x 4 hosts, one worker per host holding its 4 chips
        {"name": "pack-v6e", "workload": "train_lm_jax", "cluster": "training",
         "worker_group": "tpu-v6e", "placement_strategy": "STRICT_PACK"},
        {"name": "spread-v6e", "workload": "train_lm_jax", "cluster": "training",
         "worker_group": "tpu-v6e", "placement_strategy": "STRICT_SPREAD"},
        # 3 one-CPU workers on 2-CPU pods
        {"name": "pack-cpu", "workload": "train_lm", "cluster": "training",
         "worker_group": "cpu", "placement_strategy": "STRICT_PACK"},
        groups={"cpu": {"max_replicas": 3, "cpu": "1500m"}},
    )  # fmt: skip
    docs = "(https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html)"
    assert placement.placement_problems(plan(cfg)) == [
        "jobs[pack-h100].placement_strategy: STRICT_PACK: Ray Train's 16 workers on one node need "
        "GPU 16 > 8, what one worker pod of pool 'h100' (a3-highgpu-8g) offers Ray; Ray never "
        f"places this group {docs}; use PACK (best effort), or a pool whose one node holds all the workers",
        "jobs[spread-h100].placement_strategy: STRICT_SPREAD: Ray Train places 16 workers, each "
        "on a different node, but node pool 'h100' gives the job 2 node(s); Ray never places "
        f"this group {docs}; use SPREAD (best effort) or PACK",
        "jobs[pack-v6e].placement_strategy: STRICT_PACK: Ray Train's 8 workers on one node need "
        "TPU 32 > 4, what one worker pod of pool 'tpu-v6e-4x4' (ct6e-standard-4t) offers Ray; "
        f"Ray never places this group {docs}; use PACK (best effort), or a pool whose one node holds all the workers",
        "jobs[pack-cpu].placement_strategy: STRICT_PACK: Ray Train's 3 workers on one node need "
        "CPU 3 > 2, what one worker pod of pool 'cpu' (n2-standard-16) offers Ray; Ray never "
        f"places this group {docs}; use PACK (best effort), or a pool whose one node holds all the workers",
    ]
    assert any(p.startswith("jobs[pack-h100].placement_strategy") for p in check_stack(cfg))


def test_strict_placement_that_fits_is_accepted() -> None:
    cfg = _with_jobs(
        "dev",
        # 4 one-CPU workers packed onto one 8-vCPU node; 2 L4 nodes, one worker each
        {"name": "pack-cpu", "workload": "train_lm", "cluster": "research",
         "worker_group": "cpu", "placement_strategy": "STRICT_PACK"},
        {"name": "spread-l4", "workload": "train_lm", "node_pool": "l4",
         "placement_strategy": "STRICT_SPREAD"},
        # a single-host slice: one worker
        {"name": "pack-v5e", "workload": "train_lm_jax", "node_pool": "tpu-v5e-2x2",
         "placement_strategy": "STRICT_PACK"},
    )  # fmt: skip
    assert placement.placement_problems(plan(cfg)) == []
    assert placement.worker_bundle({"use_gpu": True}) == {"GPU": 1.0}
    assert placement.worker_bundle({"resources_per_worker": {"CPU": 2, "GPU": 0}}) == {"CPU": 2.0}


def test_render_checks_name_every_check_that_check_stack_runs() -> None:
    """``raygke check --no-render`` lists :data:`RENDER_CHECKS` as skipped: every problem source
    check_stack / check_manifests call is named there, and nothing else."""
    import ast
    import inspect

    called: set[str] = set()
    for fn in (check_stack, check_manifests):
        for node in ast.walk(parse(inspect.getsource(fn))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.add(node.func.id)
    sources = {n for n in called if "_problems" in n or n == "_validate_crds"}
    assert sources == set(checks.RENDER_CHECKS.values())


# ---------------------------------------------------------------- from test_stack_fields.py: Problems found in the rendered stack name the stack-file field to edit


def _rendered() -> tuple:
    cfg = stack("dev")
    return cfg, render_manifests(cfg, WORKING_DIR)


@needs_crds
def test_crd_problem_on_a_worker_group_names_the_worker_group() -> None:
    cfg, m = _rendered()
    group = m[0]["spec"]["workerGroupSpecs"][1]
    group["numOfHost"] = group.pop("numOfHosts")
    (line,) = check_manifests(cfg, m)
    assert line.startswith("RayCluster research: spec.workerGroupSpecs[1].numOfHost: unknown")
    assert line.endswith(
        f"; edit ray_clusters[research].worker_groups[{group['groupName']}] in the stack file"
    )


@needs_crds
def test_operator_problem_on_a_rayjob_names_the_job() -> None:
    """KubeRay v1.7.0 validation.go validateDeletionConfiguration: a TTL needs shutdown."""
    cfg, m = _rendered()
    job = next(x for x in m if x["kind"] == "RayJob")
    job["spec"]["ttlSecondsAfterFinished"] = 3600
    lines = check_manifests(cfg, m)
    name = job["metadata"]["name"]
    assert any(
        ln.startswith(f"RayJob {name}: spec.ttlSecondsAfterFinished 3600")
        and ln.endswith(f"; edit jobs[{name}] in the stack file")
        for ln in lines
    ), lines


@needs_crds
def test_schedule_problem_on_the_head_names_the_head() -> None:
    cfg, m = _rendered()
    head = m[0]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"]["requests"]["cpu"] = "640"
    (line,) = check_manifests(cfg, m)
    assert "head group: cannot schedule" in line
    assert line.endswith("; edit ray_clusters[research].head in the stack file")


def test_stack_field_of_other_kinds_is_none() -> None:
    assert stack_field({"kind": "ConfigMap", "metadata": {"name": "x"}}) is None
    assert stack_field({"kind": "RayJob", "metadata": {}}) is None
    assert stack_field({"kind": "RayCluster", "metadata": {"name": "r"}}) == "ray_clusters[r]"


def _problems(data: dict) -> list[str]:
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    return exc.value.problems


def test_item_name_with_control_characters_prints_quoted() -> None:
    data = config()
    data["node_pools"][1]["name"] = "v6e\x00"
    lines = _problems(data)
    assert lines and all("\x00" not in ln for ln in lines), lines
    assert any(ln.startswith("node_pools['v6e\\x00'].name:") for ln in lines), lines


def test_malformed_pool_zone_is_one_quoted_line() -> None:
    data = config()
    data["node_pools"][1]["zones"] = ["us-east5-b\x1f\nI"]
    lines = _problems(data)
    assert lines == [
        "node_pools[v6e].zones: 'us-east5-b\\x1f\\nI' is not a zone of region us-east5 "
        "(e.g. us-east5-a)"
    ]


def test_security_problems_are_problems_of_the_stack_entry_their_object_comes_from() -> None:
    """A secure-default rule broken by one rendered object is a problem of the stack entry that
    object comes from (so --format github annotates that entry's line), found from the objects;
    one the namespace's own objects break is kuberay.namespace's."""
    from components.kuberay.namespace import namespace_manifest
    from components.security.rules import security_problems
    from tests.components.kuberay.test_namespace import guards

    cfg = stack("dev")
    manifests = copy.deepcopy(render_manifests(cfg, WORKING_DIR))
    job = next(m for m in manifests if m["kind"] == "RayJob" and m["spec"].get("rayClusterSpec"))
    job["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "disabled"}
    namespace = namespace_manifest(cfg.kuberay)
    namespace["metadata"]["labels"] = {}  # no Pod Security Admission label
    objects = [namespace, *guards(cfg), *manifests]
    lines = security_problems(objects)
    found = checks.locate_security_lines(objects, lines)
    assert found == lines and all(p.rule == "security" for p in found)
    by_path = {p.path: p for p in found}
    auth = by_path[f"jobs[{job['metadata']['name']}]"]
    assert auth.message.startswith("ray-auth:")
    assert "pod-security" in by_path["kuberay.namespace"].message
    assert all(p.path for p in found)


@needs_crds
def test_crd_and_gate_lines_carry_the_object_field_and_the_group_is_found_from_it() -> None:
    """The worker group of a CRD or feature-gate problem comes from the field the checker gives
    with its problem (``object_field``), not from the line's words."""
    from components.kernel.problems import Problem, in_object
    from components.raycrs.crd import validate_manifest
    from components.raycrs.gates import gate_problems

    _, m = _rendered()
    groups = m[0]["spec"]["workerGroupSpecs"]
    groups[1]["numOfHost"] = groups[1].pop("numOfHosts")
    (line,) = validate_manifest(m[0])
    assert isinstance(line, Problem) and line.object_field == "spec.workerGroupSpecs[1].numOfHost"
    # a line whose words name another group: the field decides
    misleading = in_object(line.object_field, "RayCluster research: spec.workerGroupSpecs[0].x: y")
    problem = checks._object_problem(m[0], misleading, "crd-schema")
    assert problem.path == f"ray_clusters[research].worker_groups[{groups[1]['groupName']}]"
    groups[0]["suspend"] = True
    (gate,) = gate_problems(m[0], {"RayJobDeletionPolicy": False})
    assert gate.object_field == "spec.workerGroupSpecs[0].suspend"
    assert checks._object_problem(m[0], gate, "kuberay-feature-gate").path == (
        f"ray_clusters[research].worker_groups[{groups[0]['groupName']}]"
    )
