"""``raygke diff`` end to end: a temporary git repository holding this tree (its tracked and
untracked, not ignored, files) committed, then edited, and the CLI run in a subprocess there,
as a reviewer would (``raygke diff --stack prod --base HEAD``). Each diff renders both sides with
the real program under mocks, so these are slow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("repo")
    files = _git(ROOT, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    _git(dst, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    _git(dst, "branch", "-f", "main")  # `diff --config` compares with main by default
    return dst


def _diff(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "raygke", "diff", "--stack", "prod", "--base", "HEAD", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_no_change_reports_none_and_exit_code_is_0(repo: Path) -> None:
    r = _diff(repo, "--exit-code")
    assert r.returncode == 0, r.stderr
    assert "Resources: no changes" in r.stdout


def test_h100_to_spot_is_a_replacement_because_of_spot_with_cost_delta(repo: Path) -> None:
    stack = repo / "Pulumi.prod.yaml"
    original = stack.read_text()
    edited = original.replace(
        "      max_nodes: 2\n      provisioning: on-demand\n    # Serving:",
        "      max_nodes: 2\n      provisioning: spot\n    # Serving:",
    )
    assert edited != original
    stack.write_text(edited)
    try:
        r = _diff(repo, "--format", "json", "--exit-code")
    finally:
        stack.write_text(original)
    assert r.returncode == 4, r.stderr  # disruptive changes: the pool is recreated
    plan = json.loads(r.stdout)
    (pool,) = [c for c in plan["changes"] if c["type"] == "gcp:container/nodePool:NodePool"]
    assert pool["name"] == "pool-h100-pool" and pool["op"] == "replace"
    assert pool["reasons"] == ["nodeConfig.spot (node_config.spot: ForceNew)"]
    assert pool["delete_before_replace"] is True
    # the pool is no Kueue flavor (its ComputeClass keeps it out of every queue): nothing else
    assert plan["counts"]["replace"] == 1 and plan["counts"]["update"] == 0
    assert plan["cost"]["lines"][0].startswith("pool h100 (on-demand -> spot)")
    assert plan["cost"]["head"]["max_hourly"] < plan["cost"]["base"]["max_hourly"]


def test_comment_in_workloads_reruns_the_rayjobs(repo: Path) -> None:
    f = repo / "workloads" / "evaluate.py"
    original = f.read_text()
    f.write_text(original + "\n# a comment only\n")
    try:
        r = _diff(repo, "--format", "markdown")
    finally:
        f.write_text(original)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("<!-- raygke-diff:prod -->")
    reruns = [line for line in r.stdout.splitlines() if "| +- job re-run |" in line]
    assert len(reruns) == 5  # prod's 5 RayJobs
    # 5 RayJobs + the archive object replaced; RayService lm updated in place: its Serve config
    # names the new archive (working_dir), and only that leaf changed
    assert "Resources: ~ 1 to update, +-6 to replace" in r.stdout
    (service,) = [line for line in r.stdout.splitlines() if line.startswith("| ~ update |")]
    assert "`kubernetes:ray.io/v1:RayService`" in service
    assert "`spec.serveConfigV2.applications[0].runtime_env.working_dir`" in service


def test_bad_revision_is_a_usage_error(repo: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "raygke", "diff", "--stack", "prod", "--base", "nope-rev"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: 'nope-rev' is not a commit in {repo}"


def test_an_invalid_head_is_exit_5_with_exit_code_and_names_the_check_that_lists_it(
    repo: Path,
) -> None:
    """With --exit-code, 1 means "changes": a side that cannot be rendered exits 5, so the
    deploy gate (.github/scripts/disruption-gate.sh) refuses it; the hint repeats the --set."""
    bad = "node_pools[tpu-v6e-4x4].tpu.topology=3x3"
    r = _diff(repo, "--exit-code", "--set", bad)
    assert r.returncode == 5, r.stdout + r.stderr
    # quoted for a shell ([ ] are glob characters), to be pasted as it is
    assert f"(raygke check --stack prod --set '{bad}' lists the same)" in r.stderr
    assert "topology 3x3 is not a v6e topology" in r.stderr
    assert _diff(repo, "--set", bad).returncode == 1  # without --exit-code: 1, as everywhere


def _diff_config(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "raygke", "diff", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_config_against_main_by_default_and_set_applies_to_the_head_only(repo: Path) -> None:
    """`--config FILE` with no --base: the working tree's file against main's; a --set value is
    the change tried (head side only), so it shows, where applying it to both sides hid it."""
    r = _diff_config(
        repo,
        "--config",
        "Pulumi.prod.yaml",
        "--set",
        "cluster.release_channel=REGULAR",
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["stack"] == "prod"
    assert plan["base"].startswith("main") and "with --set cluster.release_channel" in plan["head"]
    (cluster,) = [c for c in plan["changes"] if c["type"] == "gcp:container/cluster:Cluster"]
    paths = {f["path"]: f for f in cluster["fields"]}
    assert paths["releaseChannel.channel"]["old"] == "STABLE"
    assert paths["releaseChannel.channel"]["new"] == "REGULAR"


def test_config_with_base_rev_and_a_file_outside_the_repo(repo: Path, tmp_path: Path) -> None:
    same = _diff_config(repo, "--config", "Pulumi.dev.yaml", "--base", "HEAD", "--exit-code")
    assert same.returncode == 0, same.stderr
    assert "Resources: no changes" in same.stdout
    # a copy outside the repository: compared with the stack --against names, at --base
    outside = tmp_path / "my-dev.yaml"
    outside.write_text((repo / "Pulumi.dev.yaml").read_text())
    r = _diff_config(repo, "--config", str(outside), "--base", "HEAD", "--exit-code")
    assert r.returncode == 2 and "give --against STACK" in r.stderr, r.stderr
    r = _diff_config(
        repo, "--config", str(outside), "--against", "dev", "--base", "HEAD", "--exit-code"
    )
    assert r.returncode == 0, r.stderr
    assert "Pulumi.dev.yaml -> working tree" in r.stdout and "Resources: no changes" in r.stdout
    r = _diff_config(repo, "--stack", "dev", "--against", "prod")
    assert r.returncode == 2 and "--against STACK goes with --config FILE" in r.stderr
    both = _diff_config(repo, "--config", "Pulumi.dev.yaml", "--stack", "dev")
    assert both.returncode == 2 and "exactly one of --stack NAME or --config FILE" in both.stderr


def test_renaming_the_dev_cluster_end_to_end(repo: Path) -> None:
    """`raygke diff --stack dev --set cluster.name=...`: the registry repository is replaced
    (repositoryId), the in-cluster objects are recreated with the cluster, and each bucket is a
    data-loss warning naming it."""
    r = _diff_config(repo, "--stack", "dev", "--set", "cluster.name=ray-dev2", "--format", "json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    by_type: dict[str, list[dict]] = {}
    for c in plan["changes"]:
        by_type.setdefault(c["type"], []).append(c)
    (repo_change,) = by_type["gcp:artifactregistry/repository:Repository"]
    assert repo_change["op"] == "replace"
    assert any(x.startswith("repositoryId") for x in repo_change["reasons"])
    for kind in (
        "kubernetes:core/v1:Namespace",
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:core/v1:Secret",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        "kubernetes:ray.io/v1:RayCluster",
        "kubernetes:ray.io/v1:RayJob",
    ):
        assert by_type[kind] and all(c["op"] == "replace" for c in by_type[kind]), kind
    (ns,) = by_type["kubernetes:core/v1:Namespace"]
    assert ns["reasons"] == ["recreated: its provider kuberay-k8s is replaced"]
    buckets = by_type["gcp:storage/bucket:Bucket"]
    assert len(buckets) == 3
    for b in buckets:
        assert any(f.startswith("data loss") and "ray-gke-dev-ray-dev-" in f for f in b["flags"])


def test_a_head_that_renders_but_check_refuses_shows_the_plan_then_exits_5(repo: Path) -> None:
    """A quota cut renders, but leaves a job that no quota can ever admit: the plan is shown
    (the ClusterQueue update), then the problem under ``Refused:``; --exit-code gives 5, as for
    a side that cannot render, so the deploy gate refuses it."""
    cut = "capacity.cluster_queues[dev].flavors[system].nominal.cpu=1"
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    args = ["diff", "--stack", "dev", "--base", "HEAD", "--exit-code", "--set", cut]
    r = subprocess.run(
        [sys.executable, "-m", "raygke", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 5, r.stdout + r.stderr
    assert "~  kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue capacity-clusterqueue-dev" in r.stdout
    assert "Refused: raygke check finds 1 problem in the head side" in r.stdout
    assert "  - jobs[train-lm-l4]: can never be admitted by queue dev" in r.stdout
