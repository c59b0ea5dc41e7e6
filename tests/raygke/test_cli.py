"""`raygke check` through the real entry point: exit codes and messages."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.config.reference import render_reference
from components.kernel.base import StackConfigError, StackFileError
from components.stack.loader import apply_overrides, esc_stand_ins, parse_set, stack_environments
from raygke import synth as synth_module
from raygke.cli import app, main

ROOT = Path(__file__).resolve().parents[2]


def raygke(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raygke", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        # PYTHONPATH: this checkout's code also when run from another folder (cwd=tmp_path)
        env={
            "COLUMNS": "200",
            "PATH": "/usr/bin:/bin",
            "HOME": str(Path.home()),
            "PYTHONPATH": str(ROOT),
        },
    )


def write_stack(tmp_path: Path, mutate=None) -> Path:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    if mutate:
        mutate(doc["config"])
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_valid_stack_exit_0_with_summary() -> None:
    r = raygke("check", "--stack", "dev", "--no-render")
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout
    assert "3 node pools, 8 TPU chips on 2 hosts, 2 GPUs" in r.stdout
    assert "ct5lp-hightpu-4t" in r.stdout


def test_config_flag(tmp_path: Path) -> None:
    r = raygke("check", "--config", str(write_stack(tmp_path)), "--no-render")
    assert r.returncode == 0, r.stderr


def test_invalid_stack_lists_every_problem_exit_1(tmp_path: Path) -> None:
    def mutate(c: dict) -> None:
        c["ray-gke:node_pools"][1]["tpu"]["topology"] = "3x3"
        c["ray-gke:node_pools"][2]["gpu"]["count"] = 3
        c["ray-gke:cluster"]["nmae"] = "x"

    r = raygke("check", "--config", str(write_stack(tmp_path, mutate)))
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 3, r.stderr
    assert any("topology 3x3 is not a v5e topology; valid: 1x1, 2x2" in ln for ln in lines)
    assert any("no machine type offers 3 x nvidia-l4" in ln for ln in lines)
    assert any("cluster.nmae: unknown key 'nmae'" in ln for ln in lines)
    assert "Traceback" not in r.stderr + r.stdout


def test_cross_field_problem(tmp_path: Path) -> None:
    def mutate(c: dict) -> None:
        c["ray-gke:ray_clusters"][0]["worker_groups"][1]["node_pool"] = "tpu-v9"

    r = raygke("check", "--config", str(write_stack(tmp_path, mutate)))
    assert r.returncode == 1
    assert "node_pool: 'tpu-v9' is not a declared node pool" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_stack_exit_2() -> None:
    r = raygke("check", "--stack", "does-not-exist")
    assert r.returncode == 2
    assert "Pulumi.does-not-exist.yaml" in r.stderr
    assert "Traceback" not in r.stderr


def test_unparseable_yaml_exit_2(tmp_path: Path) -> None:
    p = tmp_path / "broken.yaml"
    p.write_text("config: [unclosed\n")
    r = raygke("check", "--config", str(p))
    assert r.returncode == 2
    assert "not valid YAML" in r.stderr


def test_binary_file_exit_2(tmp_path: Path) -> None:
    p = tmp_path / "binary.yaml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    r = raygke("check", "--config", str(p))
    assert r.returncode == 2
    assert "cannot read" in r.stderr


def test_usage_errors_exit_2() -> None:
    assert raygke("check").returncode == 2
    assert raygke("check", "--stack", "dev", "--config", "x.yaml").returncode == 2
    assert raygke("check", "--bogus").returncode == 2


def test_yaml_date_as_job_argument_is_one_problem_line(tmp_path: Path) -> None:
    """YAML reads ``checkpoint: 2001-12-14`` as a date; `check` names it instead of crashing."""
    import datetime

    def mutate(c: dict) -> None:
        c["ray-gke:jobs"].append(
            {
                "name": "eval",
                "workload": "evaluate",
                "cluster": "research",
                "worker_group": "cpu",
                "args": {"checkpoint": datetime.date(2001, 12, 14)},
            }
        )

    path = write_stack(tmp_path, mutate)
    assert "checkpoint: 2001-12-14" in path.read_text()
    r = raygke("check", "--config", str(path))
    assert r.returncode == 1
    assert (
        "jobs[eval].args: argument 'checkpoint' of workload evaluate is "
        "datetime.date(2001, 12, 14) (a date); expected str or None" in r.stderr
    )
    assert "Traceback" not in r.stderr + r.stdout


def test_check_passes_in_a_copy_with_nothing_beside_it(tmp_path: Path) -> None:
    """The product carries what it validates against (the KubeRay CRDs in
    components/*/crds/): a copy of the repository's files with no ``../shared`` beside it
    checks both shipped stacks, the rendered ones included, with exit 0."""
    import shutil

    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    copy = tmp_path / "alone" / "ray-gke"
    for rel in files:
        if (ROOT / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    assert not (copy.parent / "shared").exists()
    for stack in ("dev", "prod"):
        r = raygke("check", "--stack", stack, cwd=copy)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "ok" in r.stdout and str(copy) in r.stdout.replace("\n", "")


def test_train_lm_on_a_foreign_image_without_torch_is_refused(tmp_path: Path) -> None:
    """The issue's case: train_lm on rayproject/ray:2.60.0-py311, declared as a foreign image
    that provides no torch; the message names the missing framework and the fix."""

    def mutate(c: dict) -> None:
        c["ray-gke:ray"]["images"] = {"cpu": "rayproject/ray:2.60.0-py311"}
        c["ray-gke:jobs"] = [
            {"name": "train-lm-cpu", "workload": "train_lm", "node_pool": "cpu-spot"}
        ]

    r = raygke("check", "--config", str(write_stack(tmp_path, mutate)))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "warning: ray.images.cpu: rayproject/ray:2.60.0-py311 is a tag" in r.stderr
    assert (
        "jobs[train-lm-cpu]: workload train_lm needs torch, worker-group image "
        "rayproject/ray:2.60.0-py311 does not provide it; use the project's images "
        "(ray.images.cpu unset)" in " ".join(r.stderr.split())
    ), r.stderr
    assert "Traceback" not in r.stderr


def test_shipped_stacks_pass_with_the_project_images(capsys, monkeypatch) -> None:
    # in process: the tests above run the entry point (a process of its own spends ~4 s of CPU
    # importing what the render needs); test_check_passes_in_a_copy_with_nothing_beside_it runs
    # both stacks' whole check as a process
    monkeypatch.chdir(ROOT)
    rc = main(["check", "--stack", "prod"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "warning" not in err


def test_no_render_ok_line_says_what_was_not_checked() -> None:
    r = raygke("check", "--stack", "dev", "--no-render")
    assert r.returncode == 0, r.stderr
    ok = next(ln for ln in r.stdout.splitlines() if ln.startswith("ok "))
    assert "(config only; render checks skipped: " in ok
    for what in ("image dependencies", "CRD schemas", "object store memory", "policy rules"):
        assert what in ok, ok
    assert ok.endswith("1 ray cluster, 3 jobs, 0 services")


def test_no_policy_ok_line_says_the_policy_rules_were_skipped() -> None:
    r = raygke("check", "--stack", "dev", "--no-policy")
    assert r.returncode == 0, r.stderr
    ok = next(ln for ln in r.stdout.splitlines() if ln.startswith("ok "))
    assert "(policy rules skipped)" in ok and "render checks" not in ok


def test_incremental_upgrade_with_the_gke_addon_is_one_line(tmp_path: Path) -> None:
    prod = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    assert prod["config"]["ray-gke:kuberay"]["mode"] == "gke-addon"
    # prod's lm upgrades incrementally (its gateway); the add-on's gate is off in KubeRay 1.6.2
    prod["config"]["ray-gke:kuberay"]["chart_version"] = "1.6.2"
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump(prod))
    r = raygke("check", "--config", str(path), "--no-render")
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1, r.stderr
    assert "services[lm].upgrade_strategy: NewClusterWithIncrementalUpgrade" in lines[0]
    assert "kuberay.mode: helm" in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


# ------------------------------------------------------------- --format json | github (issue 20)


def _broken_copy(tmp_path: Path, edits: dict[str, str]) -> tuple[Path, list[str]]:
    """Pulumi.dev.yaml copied with text edits (old -> new, each once), so its lines stay where
    they are; returns the copy and its lines."""
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    return path, text.splitlines()


def _position(lines: list[str], needle: str, key: str) -> tuple[int, int]:
    """1-based line of the only line holding ``needle``, and column of ``key`` on it."""
    (i,) = [n for n, ln in enumerate(lines) if needle in ln]
    return i + 1, lines[i].index(key) + 1


def test_format_json_gives_each_problem_with_path_rule_line_and_column(tmp_path: Path) -> None:
    import json

    path, lines = _broken_copy(
        tmp_path,
        {
            "node_pool: l4\n      queue: dev": "node_pool: nope\n      queue: dev",  # a job's pool
            "ray-gke:labels:\n": "ray-gke:labels:\n    Bad Key: x\n",  # a field error elsewhere
        },
    )
    r = raygke("check", "--config", str(path), "--format", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["file"] == "Pulumi.dev.yaml"
    by_path = {p["path"]: p for p in doc["problems"]}
    assert set(by_path) == {"labels", "jobs[train-lm-l4].node_pool"}, doc["problems"]
    job = by_path["jobs[train-lm-l4].node_pool"]
    assert job["rule"] == "job_targets_exist" and job["severity"] == "error"
    assert job["message"].startswith(
        "jobs[train-lm-l4].node_pool: 'nope' is not a declared node pool"
    )
    assert (job["line"], job["column"]) == _position(lines, "node_pool: nope", "node_pool")
    labels = by_path["labels"]
    assert labels["rule"] == "field"
    assert (labels["line"], labels["column"]) == _position(
        lines, "ray-gke:labels:", "ray-gke:labels"
    )


def test_an_unreadable_stack_file_is_one_problem_in_json_and_github_with_exit_2(
    tmp_path: Path,
) -> None:
    import json

    path = tmp_path / "Pulumi.dev.yaml"
    # a flow sequence left open: ruamel.yaml stops at line 4, column 12 (the ':')
    path.write_text(
        "config:\n  ray-gke:project: p\n  ray-gke:region: [us-central1\n  ray-gke:x: 1\n"
    )
    r = raygke("check", "--config", str(path), "--format", "json", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is False
    ((problem),) = doc["problems"]
    assert problem["rule"] == "read" and "not valid YAML at line 4" in problem["message"]
    assert (problem["path"], problem["line"], problem["column"]) == ("", 4, 12)
    r = raygke("check", "--config", str(path), "--format", "github", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout.startswith(
        "::error file=Pulumi.dev.yaml,line=4,col=12,title=raygke check%3A read::cannot read"
    )
    r = raygke("check", "--config", str(tmp_path / "absent.yaml"), "--format", "json", cwd=tmp_path)
    assert r.returncode == 2
    ((problem),) = json.loads(r.stdout)["problems"]
    assert problem["rule"] == "read" and problem["line"] is None  # no position to give


def test_format_github_annotates_the_line_and_column_of_each_problem(tmp_path: Path) -> None:
    path, lines = _broken_copy(
        tmp_path, {"tpu: {generation: v5e, topology: 2x2}": "tpu: {generation: v5e, topology: 3x3}"}
    )
    r = raygke("check", "--config", str(path), "--format", "github", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ")]
    line, col = _position(lines, "topology: 3x3", "topology:")  # the field itself
    assert errors == [
        f"::error file=Pulumi.dev.yaml,line={line},col={col},"
        "title=raygke check%3A field (node_pools[tpu-v5e-2x2].tpu.topology)::"
        "node_pools[tpu-v5e-2x2].tpu.topology: topology 3x3 is not a v5e topology; valid: 1x1, 2x2, 2x4, "
        "4x4, 4x8, 8x8, 8x16, 16x16 (https://cloud.google.com/tpu/docs/v5e)"
    ], r.stdout
    # the rules that could not run are said too, as a notice
    assert any(
        ln.startswith("::notice file=Pulumi.dev.yaml::not checked because node_pools")
        for ln in r.stdout.splitlines()
    )


def test_format_github_places_a_missing_key_on_its_nearest_ancestor(tmp_path: Path) -> None:
    path, lines = _broken_copy(
        tmp_path, {"- name: train-lm-l4\n      workload: train_lm\n": "- name: train-lm-l4\n"}
    )
    r = raygke("check", "--config", str(path), "--format", "github", "--no-render", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    (ann,) = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ")]
    assert "(jobs[train-lm-l4].workload)::jobs[train-lm-l4].workload: required field" in ann
    # the key is absent: the entry jobs[train-lm-l4], the deepest part the file has, stands in
    line, col = _position(lines, "- name: train-lm-l4", "name:")
    assert ann.startswith(f"::error file=Pulumi.dev.yaml,line={line},col={col},"), ann


def test_format_text_is_todays_output_and_a_bad_format_is_a_usage_error(tmp_path: Path) -> None:
    path, _ = _broken_copy(
        tmp_path, {"node_pool: l4\n      queue: dev": "node_pool: nope\n      queue: dev"}
    )
    plain = raygke("check", "--config", str(path), cwd=tmp_path)
    text = raygke("check", "--config", str(path), "--format", "text", cwd=tmp_path)
    assert (plain.returncode, plain.stdout, plain.stderr) == (
        text.returncode,
        text.stdout,
        text.stderr,
    )
    assert "  - jobs[train-lm-l4].node_pool: 'nope' is not a declared node pool" in text.stderr
    bad = raygke("check", "--config", str(path), "--format", "xml", cwd=tmp_path)
    assert bad.returncode == 2 and "--format 'xml'" in bad.stderr


# ---------------------------------------------------------------- from test_cli_docs.py: `raygke docs`: prints the stack reference by default, writes only with --write, --check for CI.

ROOT = Path(__file__).resolve().parents[2]


def test_docs_prints_to_stdout_and_writes_nothing(tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)  # a write would create docs/stack-config.md here
    try:
        result = CliRunner().invoke(app, ["docs"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert result.stdout == render_reference()
    assert not (tmp_path / "docs").exists()


def test_docs_write_then_check_then_stale(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "ref.md"
    missing = runner.invoke(app, ["docs", "--check", "--out", str(out)])
    assert missing.exit_code == 1 and "--write" in missing.output
    assert runner.invoke(app, ["docs", "--write", "--out", str(out)]).exit_code == 0
    assert out.read_text() == render_reference()
    assert runner.invoke(app, ["docs", "--check", "--out", str(out)]).exit_code == 0
    out.write_text(out.read_text() + "edited by hand\n")
    stale = runner.invoke(app, ["docs", "--check", "--out", str(out)])
    assert stale.exit_code == 1 and "differs from the stack model" in stale.output


def test_docs_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    both = runner.invoke(app, ["docs", "--write", "--check"])
    assert both.exit_code == 2 and "exclude each other" in both.output
    bare_out = runner.invoke(app, ["docs", "--out", str(tmp_path / "x.md")])
    assert bare_out.exit_code == 2 and not (tmp_path / "x.md").exists()


def test_tracked_reference_is_current_and_ci_checks_it() -> None:
    assert (ROOT / "docs/stack-config.md").read_text() == render_reference()
    lint = (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "raygke docs --check" in lint


# ---------------------------------------------------------------- from test_cli_esc.py: Stack files that take values from a Pulumi ESC ``environment:``, and ``raygke check --set``.

ROOT = Path(__file__).resolve().parents[2]
FROM_ENV = (
    "  gcp:project: ray-gke-prod\n",
    "  gcp:region: us-east5\n",
    "  ray-gke:project: ray-gke-prod\n",
    "  ray-gke:region: us-east5\n",
    "  ray-gke:zones: [us-east5-a, us-east5-b]\n",
)


def esc_stack(tmp_path: Path, environment: str = "environment:\n  - acme/ray-gke-prod\n") -> Path:
    """Pulumi.prod.yaml with project, region and zones moved to an ESC environment."""
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    for line in FROM_ENV:
        assert line in text
        text = text.replace(line, "")
    path = tmp_path / "Pulumi.esc.yaml"
    path.write_text(environment + text)
    return path


def test_check_names_the_keys_expected_from_the_environment(tmp_path, capsys):
    path = esc_stack(tmp_path)
    assert main(["check", "--config", str(path), "--no-render"]) == 0
    out = capsys.readouterr()
    assert "imports ESC environment acme/ray-gke-prod" in out.err
    assert "expected from them: project, region, zones" in out.err
    assert "ok" in out.out


def test_check_still_checks_the_other_keys(tmp_path, capsys):
    path = esc_stack(tmp_path)
    path.write_text(path.read_text().replace("max_slices: 2", "max_slices: -1"))
    assert main(["check", "--config", str(path), "--no-render"]) == 1
    err = capsys.readouterr().err
    assert "max_slices" in err
    assert "project: required field is missing" not in err


def test_without_environment_missing_keys_are_still_refused(tmp_path, capsys):
    path = esc_stack(tmp_path, environment="")
    assert main(["check", "--config", str(path), "--no-render"]) == 1
    assert "project: required field is missing" in capsys.readouterr().err


def test_set_gives_the_values_and_they_are_checked(tmp_path, capsys):
    path = esc_stack(tmp_path)
    ok = ["--set", "project=ray-gke-prod", "--set", "region=us-east5"]
    assert (
        main(
            [
                "check",
                "--config",
                str(path),
                "--no-render",
                *ok,
                "--set",
                "zones=[us-east5-a, us-east5-b]",
            ]
        )
        == 0
    )
    assert "ESC" not in capsys.readouterr().err  # nothing left to the environment
    assert (
        main(["check", "--config", str(path), "--no-render", *ok, "--set", "zones=[us-east5-x]"])
        == 1
    )
    assert "'us-east5-x' is not a zone of region us-east5" in capsys.readouterr().err


def test_set_overrides_a_nested_key_of_a_plain_stack(capsys):
    assert (
        main(["check", "--stack", "dev", "--no-render", "--set", "cluster.system_pool.max_nodes=0"])
        == 1
    )
    assert "max_nodes" in capsys.readouterr().err


def test_bad_set_is_a_usage_error(capsys):
    assert main(["check", "--stack", "dev", "--no-render", "--set", "project"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_loader_pieces():
    assert parse_set(["ray-gke:zones=[a, b]", "cluster.name=ray", "labels={}"]) == {
        "zones": ["a", "b"],
        "cluster.name": "ray",
        "labels": {},
    }
    with pytest.raises(StackConfigError, match="expected KEY=VALUE"):
        parse_set(["=x"])
    data = {"cluster": {"name": "a"}, "project": "p"}
    assert apply_overrides(data, {"cluster.regional": True}) == {
        "cluster": {"name": "a", "regional": True},
        "project": "p",
    }
    assert data == {"cluster": {"name": "a"}, "project": "p"}  # not mutated
    with pytest.raises(StackConfigError, match="project is not a mapping"):
        apply_overrides(data, {"project.x": 1})
    assert stack_environments("environment: [a, b]\nconfig: {}\n") == ("a", "b")
    assert stack_environments("environment: {imports: [a]}\nconfig: {}\n") == ("a",)
    assert stack_environments("config: {}\n") == ()
    with pytest.raises(StackFileError, match="not a list of ESC environment names"):
        stack_environments("environment: 3\nconfig: {}\n")
    # region from a zone the file names; zones from those zones
    assert esc_stand_ins({"node_pools": [{"zones": ["us-east5-b"]}]}, ["region", "zones"]) == {
        "region": "us-east5",
        "zones": ["us-east5-b"],
    }


ESC_SETS = (
    "--set",
    "project=acme-ray-prod",
    "--set",
    "region=us-east5",
    "--set",
    "zones=[us-east5-a, us-east5-b]",
)


def test_synth_and_cost_take_the_esc_values_with_set(tmp_path, capsys):
    import json

    path = esc_stack(tmp_path)
    out = tmp_path / "out"
    assert main(["synth", "--config", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "imports ESC environment acme/ray-gke-prod" in err
    assert "give project, region, zones with --set KEY=VALUE" in err
    assert "project: required field is missing" in err

    assert main(["synth", "--config", str(path), "--out", str(out), *ESC_SETS]) == 0
    capsys.readouterr()
    records = json.loads((out / "resources.json").read_text())
    projects = {r["inputs"]["project"] for r in records if "project" in r["inputs"]}
    assert projects == {"acme-ray-prod"}
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["service_accounts"]["ray-train"].endswith(
        "@acme-ray-prod.iam.gserviceaccount.com"
    )

    assert main(["cost", "--config", str(path), "--format", "json", *ESC_SETS]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost  # the same pools as the file's, priced
    assert main(["cost", "--config", str(path), "--format", "json"]) == 1
    assert "give project, region, zones with --set" in capsys.readouterr().err


def test_set_project_also_sets_the_providers_project():
    from raygke.synth import program_config, read_stack_config

    path = ROOT / "Pulumi.dev.yaml"
    assert program_config(path) == read_stack_config(path)
    entries = program_config(path, {"project": "ray-gke-other", "cluster.name": "ray-x"})
    assert entries["gcp:project"] == entries["ray-gke:project"] == "ray-gke-other"
    assert entries["gcp:region"] == read_stack_config(path)["gcp:region"]  # not overridden
    import json

    cluster = json.loads(entries["ray-gke:cluster"])
    assert cluster["name"] == "ray-x"
    assert (
        cluster["release_channel"]
        == json.loads(read_stack_config(path)["ray-gke:cluster"])["release_channel"]
    )


@pytest.mark.parametrize("command", [["synth", "--out", "unused"], ["cost"], ["diff"]])
def test_bad_set_is_a_usage_error_everywhere(command, capsys):
    argv = [command[0], "--stack", "dev", *command[1:], "--set", "project"]
    assert main(argv) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_diff_passes_set_to_both_renders_and_names_an_old_tree(tmp_path):
    from raygke.diff.compare import DiffError
    from raygke.diff.sides import render_tree, synth_command

    cmd = synth_command("dev", "/o", ["project=x", "zones=[a]"])
    assert cmd[-4:] == ["--set", "project=x", "--set", "zones=[a]"]
    # a tree whose raygke predates --set (click's usage error), rendered with --set
    (tmp_path / "raygke").mkdir()
    (tmp_path / "raygke" / "__init__.py").write_text("")
    (tmp_path / "raygke" / "__main__.py").write_text(
        "import sys\nsys.stderr.write('Error: No such option: --set\\n')\nsys.exit(2)\n"
    )
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    with pytest.raises(DiffError, match="base's raygke synth has no --set option") as exc:
        render_tree(tmp_path, "dev", "base", ["project=x"])
    assert exc.value.exit_code == 2


def test_diff_renders_resources_only_and_falls_back_for_an_old_tree(tmp_path):
    """Each side is rendered with ``synth --resources-only``; a tree whose raygke predates the
    option (click's usage error) is rendered again without it."""
    from raygke.diff.sides import render_tree, synth_command

    assert synth_command("dev", "/o")[-3:] == ["--out", "/o", "--resources-only"]
    assert "--resources-only" not in synth_command("dev", "/o", resources_only=False)
    (tmp_path / "raygke").mkdir()
    (tmp_path / "raygke" / "__init__.py").write_text("")
    (tmp_path / "raygke" / "__main__.py").write_text(
        "import json, pathlib, sys\n"
        "if '--resources-only' in sys.argv:\n"
        "    sys.stderr.write('Error: No such option: --resources-only\\n')\n"
        "    sys.exit(2)\n"
        "out = pathlib.Path(sys.argv[sys.argv.index('--out') + 1])\n"
        "(out / 'resources.json').write_text(json.dumps([{'type': 't', 'name': 'old'}]))\n"
    )
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert render_tree(tmp_path, "dev", "base") == [{"type": "t", "name": "old"}]


# ---------------------------------------------------------------- from test_cli_policy.py: `raygke check` runs the policy pack's rules (components/security/policy.py) over the program's


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


def test_check_passes_the_policy_rules_on_dev():
    rc, out = run("check", "--stack", "dev")
    assert rc == 0, out


def test_check_reports_a_violated_policy_rule_by_its_name(monkeypatch):
    real = synth_module.run_program

    def weakened(config, stack, **options):
        records, outputs = real(config, stack, **options)
        for r in records:
            if r["type"] == "gcp:storage/bucket:Bucket":
                r["inputs"].pop("encryption", None)
            if r["type"] == "gcp:container/nodePool:NodePool":
                r["inputs"]["nodeConfig"]["shieldedInstanceConfig"]["enableSecureBoot"] = False
        return records, outputs

    monkeypatch.setattr(synth_module, "run_program", weakened)
    rc, out = run("check", "--stack", "dev")
    assert rc == 1, out
    assert "- bucket-cmek: Bucket storage-datasets: bucket has no customer-managed key" in out
    assert "- secure-boot: NodePool pool-system-pool: node pool has no secure boot" in out
    assert run("check", "--stack", "dev", "--no-policy")[0] == 0


# ---------------------------------------------------------------- what a new user met (ux)


@pytest.mark.parametrize(
    "key", ["node_pools.0.max_nodes", "node_pools[0].max_nodes", "node_pools[cpu-spot].max_nodes"]
)
def test_set_into_a_list_entry_checks_the_changed_stack(key, capsys):
    """``--set`` takes the path a problem line prints (``node_pools[cpu-spot].max_nodes``) or
    an index; the value is applied (max_nodes 3 is below the research cluster's 4 workers)."""
    assert main(["check", "--stack", "dev", "--no-render", "--set", f"{key}=5"]) == 0
    assert main(["check", "--stack", "dev", "--no-render", "--set", f"{key}=3"]) == 1
    assert "max_replicas: 4 exceeds node pool 'cpu-spot' capacity of 3 nodes" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("command", [["check", "--no-render"], ["cost"], ["synth", "--out", "x"]])
def test_a_set_entry_the_file_lacks_is_one_line_and_exit_2(command, capsys):
    argv = [command[0], "--stack", "dev", *command[1:], "--set", "node_pools[tpu].max_nodes=3"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --set node_pools[tpu].max_nodes: node_pools has no entry 'tpu'; its entries: "
        "cpu-spot, tpu-v5e-2x2, l4 (by name or index)"
    ]


def test_a_duplicate_key_is_annotated_at_the_duplicate_in_every_format(tmp_path, capsys):
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    text = text.replace("    regional: false\n", "    regional: false\n    regional: true\n", 1)
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(text)
    line = text.splitlines().index("    regional: true") + 1
    assert main(["check", "--config", str(path), "--no-render"]) == 1
    assert f"  - cluster.regional: duplicate key 'regional' at line {line} column 5" in (
        capsys.readouterr().err
    )
    assert main(["check", "--config", str(path), "--no-render", "--format", "json"]) == 1
    (record,) = json.loads(capsys.readouterr().out)["problems"]
    assert (record["path"], record["rule"]) == ("cluster.regional", "duplicate-key")
    assert (record["line"], record["column"]) == (line, 5)
    assert main(["check", "--config", str(path), "--no-render", "--format", "github"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        f"::error file={path},line={line},col=5,title=raygke check%3A duplicate-key"
    )


def test_a_number_too_large_for_a_float_is_named_as_written(tmp_path, capsys):
    text = (ROOT / "Pulumi.dev.yaml").read_text().replace("memory: 8Gi}", "memory: 1e400}", 1)
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(text)
    assert main(["check", "--config", str(path), "--no-render"]) == 1
    err = capsys.readouterr().err
    assert "head.memory '1e400' is larger than a Kubernetes quantity holds" in err
    assert "inf" not in err.split("note:")[0].replace("information", "")


def _commands(command, prefix="raygke"):
    yield prefix, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{prefix} {name}")


def test_no_help_text_shows_rst_markup():
    """Help is rendered plain by rich (typer's default markup mode): an RST literal (double
    backticks) or role (:func:) in a docstring or option help would print as written."""
    import typer

    seen = 0
    for name, command in _commands(typer.main.get_command(app)):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        for text in texts:
            seen += 1
            assert "``" not in text and not re.search(r":(func|mod|class|data|attr):", text), (
                name,
                text,
            )
            # an unescaped [word] is a rich style tag: it would not be shown
            assert not re.search(r"(?<!\\)\[[a-zA-Z/]", text), (name, text)
    assert seen > 50  # every command and option of every group was read
    diff_help = CliRunner().invoke(app, ["diff", "--help"], env={"COLUMNS": "300"}).output
    assert "--set values apply to the head side only" in diff_help
    # rich markup would swallow [name] as a style tag: the help says it as written
    flat = " ".join(diff_help.replace("│", " ").split())
    assert "[name] or [index] a list entry (node_pools[tpu].max_slices=2," in flat


def test_the_summary_line_counts_in_the_right_number():
    from components.stack.loader import load_stack_file
    from raygke.cli import summary_line

    cfg = load_stack_file(ROOT / "Pulumi.dev.yaml")
    assert summary_line(cfg) == (
        "3 node pools, 8 TPU chips on 2 hosts, 2 GPUs (at max scale), 1 ray cluster, 3 jobs, "
        "0 services"
    )
    one = cfg.model_copy(update={"jobs": cfg.jobs[:1], "node_pools": cfg.node_pools[:1]})
    assert summary_line(one).startswith("1 node pool, 0 TPU chips on 0 hosts, 0 GPUs")
    assert ", 1 job, " in summary_line(one)


def test_the_rules_a_broken_key_kept_from_running_are_one_head_line_and_wrapped_names(
    tmp_path: Path,
) -> None:
    """Issue 50: the note was one line of 628 characters; now a head line with the count, then
    the rule names, never one cut in two, in lines of at most 100 characters."""
    import re

    from components.stack.rules import skipped_rules

    path, _ = _broken_copy(
        tmp_path, {"tpu: {generation: v5e, topology: 2x2}": "tpu: {generation: v5e, topology: 3x3}"}
    )
    r = raygke("check", "--config", str(path), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    (i,) = [n for n, ln in enumerate(lines) if "note: not checked because node_pools" in ln]
    head = re.fullmatch(
        r"  note: not checked because node_pools is invalid \(fix it first\): (\d+) rules",
        lines[i],
    )
    assert head, lines[i]
    body = []
    for ln in lines[i + 1 :]:
        if not ln.startswith(" " * 8):
            break
        body.append(ln)
    assert body and all(len(ln) <= 100 for ln in [lines[i], *body]), body
    names = " ".join(ln.strip() for ln in body).split(", ")
    (note,) = [n for n in skipped_rules(broken={"node_pools"}) if "node_pools" in n]
    assert names == note.split(": ", 1)[1].removesuffix(" (fix it first)").split(", ")
    assert len(names) == int(head.group(1)) and "nap limits cover pools" in names
