"""Stack files that take values from a Pulumi ESC ``environment:``, and ``raygke check --set``."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.stack import (
    ConfigError,
    StackFileError,
    apply_overrides,
    esc_stand_ins,
    parse_set,
    stack_environments,
)
from raygke.cli import main

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
    assert "imports ESC environment(s) acme/ray-gke-prod" in out.err
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
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_set(["=x"])
    data = {"cluster": {"name": "a"}, "project": "p"}
    assert apply_overrides(data, {"cluster.regional": True}) == {
        "cluster": {"name": "a", "regional": True},
        "project": "p",
    }
    assert data == {"cluster": {"name": "a"}, "project": "p"}  # not mutated
    with pytest.raises(ConfigError, match="project is not a mapping"):
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
    assert "imports ESC environment(s) acme/ray-gke-prod" in err
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
    from raygke.diff import DiffError
    from raygke.diff_sides import render_tree, synth_command

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
    assert exc.value.code == 2
