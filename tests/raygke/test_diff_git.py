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
        "      max_nodes: 2\n      provisioning: on-demand\n  ray-gke:nap:",
        "      max_nodes: 2\n      provisioning: spot\n  ray-gke:nap:",
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
    assert len(reruns) == 3
    # 3 RayJobs + the archive object replaced; RayService lm updated in place: its Serve config
    # names the new archive (working_dir), and only that leaf changed
    assert "Resources: ~ 1 to update, +-4 to replace" in r.stdout
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
