"""The GitHub workflows (.github/workflows): what review and deploy rely on. actionlint checks
their syntax in .ci/run (.ci/actionlint); these tests check the project's own rules."""

from __future__ import annotations

import re

import yaml

from tests.helpers import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps_of(job: dict) -> list[dict]:
    return job.get("steps", [])


def test_every_action_is_pinned_to_a_full_version_and_every_job_has_permissions():
    for path in WORKFLOWS.glob("*.yml"):
        doc = load(path.name)
        assert doc["permissions"] == {"contents": "read"}, path.name
        for name, job in doc["jobs"].items():
            assert "permissions" in job, f"{path.name}: job {name} has no permissions"
            for step in steps_of(job):
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+\.\d+\.\d+", step["uses"]), step


def test_pulumi_cli_version_file_matches_the_sdk_pin():
    version = (ROOT / ".pulumi-version").read_text().strip()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"pulumi=={version}"' in pyproject
    for path in WORKFLOWS.glob("*.yml"):
        for job in load(path.name)["jobs"].values():
            for step in steps_of(job):
                if step.get("uses", "").startswith("pulumi/actions@"):
                    assert step["with"]["pulumi-version-file"] == ".pulumi-version"


def test_review_runs_check_diff_and_a_guarded_preview_per_stack():
    doc = load("review.yml")
    assert list(doc["on"]) == ["pull_request"]
    review = doc["jobs"]["review"]
    assert review["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert "matrix.stack" in review["concurrency"]["group"]
    runs = " ".join(s.get("run", "") for s in steps_of(review))
    assert 'raygke check --stack "$STACK"' in runs
    assert 'raygke diff --stack "$STACK" --base "origin/$BASE_REF" --format markdown' in runs
    (checkout,) = [s for s in steps_of(review) if s.get("uses", "").startswith("actions/checkout")]
    assert checkout["with"]["fetch-depth"] == 0
    (preview,) = [s for s in steps_of(review) if s.get("uses", "").startswith("pulumi/actions")]
    assert preview["with"]["command"] == "preview" and preview["with"]["comment-on-pr"] is True
    for s in steps_of(review):
        if s.get("uses", "").startswith(("pulumi/actions", "google-github-actions/")):
            assert (
                "env.WIF_PROVIDER != ''" in s["if"] and "env.PULUMI_ACCESS_TOKEN != ''" in s["if"]
            )
    comment = doc["jobs"]["comment"]
    assert comment["permissions"] == {"pull-requests": "write"}
    assert "head.repo.full_name == github.repository" in comment["if"]


def test_up_deploys_dev_then_prod_behind_its_environment():
    doc = load("up.yml")
    assert doc["on"]["push"] == {"branches": ["main"]}
    # a manual run carries the approval of a disruptive plan (tests/e2e/test_deploy_gate.py)
    assert set(doc["on"]) == {"push", "workflow_dispatch"}
    dev, prod = doc["jobs"]["dev"], doc["jobs"]["prod"]
    assert prod["needs"] == "dev" and prod["environment"] == "prod"
    for job, stack in ((dev, "dev"), (prod, "prod")):
        assert job["concurrency"] == {"group": f"pulumi-up-{stack}", "cancel-in-progress": False}
        (up,) = [s for s in steps_of(job) if s.get("uses", "").startswith("pulumi/actions")]
        assert up["with"]["command"] == "up" and up["with"]["stack-name"] == stack
