"""Issue 22 item 3: the deploy workflow needs an explicit approval for a disruptive plan, and
``raygke diff --exit-code`` tells "no change" (0), "changes" (1) and "disruptive changes" (4)
apart. The gate script runs for real against a stand-in ``raygke`` that exits with each code;
the CLI runs for real on a git copy of this tree (slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT

DIFF = [sys.executable, "-m", "raygke", "diff"]
GATE = ROOT / ".github" / "scripts" / "disruption-gate.sh"


def _gate(tmp_path: Path, rc: int, approved: str, base: str = "abc") -> subprocess.CompletedProcess:
    fake = tmp_path / "raygke"
    fake.write_text(f'#!/bin/sh\necho "args: $*"\nexit {rc}\n')
    fake.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "STACK": "prod",
        "BASE": base,
        "APPROVED": approved,
        "RAYGKE": str(fake),
        "PLAN": str(tmp_path / "plan.md"),
    }
    return subprocess.run(["bash", str(GATE)], env=env, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("rc", "approved", "passes"),
    [(0, "false", True), (1, "false", True), (4, "false", False), (4, "true", True)],
)
def test_gate_refuses_a_disruptive_plan_without_approval(tmp_path, rc, approved, passes) -> None:
    r = _gate(tmp_path, rc, approved)
    assert (r.returncode == 0) is passes, r.stdout + r.stderr
    assert (
        "args: diff --stack prod --base abc --head HEAD --format markdown --exit-code" in r.stdout
    )
    if not passes:
        assert "approve_disruption: true" in r.stdout


def test_gate_fails_when_the_diff_fails_and_defaults_its_base(tmp_path) -> None:
    assert _gate(tmp_path, 2, "true").returncode == 2  # a render error is never approved away
    assert _gate(tmp_path, 5, "true").returncode == 5  # nor an invalid stack (no plan)
    r = _gate(tmp_path, 0, "false", base="0000000000000000000000000000000000000000")
    assert "--base HEAD~1 " in r.stdout


def test_deploy_workflow_gates_every_pulumi_up() -> None:
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "up.yml").read_text())
    on = doc.get(True, doc.get("on"))
    inp = on["workflow_dispatch"]["inputs"]["approve_disruption"]
    assert inp["type"] == "boolean" and inp["default"] is False
    for name in ("dev", "prod"):
        steps = doc["jobs"][name]["steps"]
        names = [s.get("name") or s.get("uses", "") for s in steps]
        gate = names.index("disruption gate")
        up = next(i for i, n in enumerate(names) if n.startswith("pulumi/actions"))
        assert gate < up, name
        assert steps[gate]["run"] == "bash .github/scripts/disruption-gate.sh"
        assert steps[gate]["env"]["STACK"] == name
        assert "approve_disruption" in steps[gate]["env"]["APPROVED"]
        assert steps[0]["with"]["fetch-depth"] == 0


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("repo")
    files = _git(ROOT, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dst / f)
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    _git(dst, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    return dst


def _diff_json(repo: Path, old: str, new: str) -> tuple[int, dict]:
    stack = repo / "Pulumi.prod.yaml"
    original = stack.read_text()
    assert old in original
    stack.write_text(original.replace(old, new, 1))
    try:
        env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
        r = subprocess.run(
            [*DIFF, "--stack", "prod", "--format", "json", "--exit-code"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        stack.write_text(original)
    assert r.returncode in (0, 1, 4), r.stderr
    return r.returncode, json.loads(r.stdout)


@pytest.mark.slow
def test_head_size_change_is_disruptive_and_a_label_change_is_not(repo: Path) -> None:
    """The issue's done-when: prod's long-lived RayCluster ``training`` with a bigger head shows a
    non-empty ``disruption`` (upgradeStrategy Recreate: every pod is recreated) and exits 4; a
    label change (buckets and every labelled resource) shows none and exits 1. Since issue 21 no
    prod RayJob runs on ``training`` (each is queued and brings its own cluster), so the head
    change interrupts no job: the cluster's recreation is the whole disruption. The bigger head
    still fits the system pool's e2-standard-8 (8 CPU / 32Gi would not: ``raygke diff`` lists
    such a head under ``Refused:`` and exits 5)."""
    rc, plan = _diff_json(repo, 'head: {cpu: "4", memory: 16Gi}', 'head: {cpu: "6", memory: 24Gi}')
    assert rc == 4 and plan["disruptive"] is True
    (c,) = [c for c in plan["changes"] if c["type"] == "kubernetes:ray.io/v1:RayCluster"]
    assert c["op"] == "update"
    assert {(d["target"], d["effect"]) for d in c["disruption"]} == {
        ("RayCluster ray/training", "recreated"),
    }
    assert [c["name"] for c in plan["changes"]] == ["ray-raycluster-training"]

    rc, plan = _diff_json(repo, "    team: ml-platform\n", "    team: ml-platform\n    cost: ai\n")
    assert rc == 1 and plan["disruptive"] is False
    buckets = [c for c in plan["changes"] if c["type"] == "gcp:storage/bucket:Bucket"]
    assert len(buckets) == 3 and all(c["op"] == "update" for c in buckets)
    assert all(c["disruption"] == [] for c in plan["changes"])
