"""``raygke migrate`` and ``raygke new`` (raygke/migrate.py; issue 46, docs/upgrading.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.kernel.release import RELEASE
from components.stack.loader import load_stack_file, stack_data_from_yaml, validate
from raygke.cli import app
from raygke.migrate import migrate_text
from tests.helpers import ROOT

# A stack file as last week's release took it: no defaults, an A3 High pool (TCPX is its
# family's networking), the checkpoints bucket left to its default, the retired serve_lm.
OLD = """\
# team stack: comments stay where they are
config:
  ray-gke:project: ray-gke-team
  ray-gke:region: us-east5
  ray-gke:zones: [us-east5-a]
  ray-gke:cluster: {name: ray-team, deletion_protection: false}
  ray-gke:node_pools:
    - name: cpu
      machine_type: n2-standard-8
      max_nodes: 2
    # the training GPUs
    - name: h100
      gpu: {type: nvidia-h100-80gb, count: 8}
      max_nodes: 1
    - name: l4
      gpu: {type: nvidia-l4, count: 1}
      max_nodes: 2
  ray-gke:nap: {resource_limits: {cpu: 4096, memory: 16384, nvidia-h100-80gb: 8}}
  ray-gke:jobs:
    - {name: train, workload: train_lm, node_pool: cpu}
  ray-gke:services:
    - name: lm
      workload: serve_lm  # the old engine
      checkpoint: train
      node_pool: l4
      args:
        torch_threads: 2  # one per vCPU
        max_batch_size: 8
        max_replicas: 2
"""


def _cfg(text: str):
    return validate(stack_data_from_yaml(text, "team"), "team")


def test_the_shipped_stacks_have_nothing_to_migrate() -> None:
    for name in ("dev", "prod", "scale"):
        text = (ROOT / f"Pulumi.{name}.yaml").read_text()
        m = migrate_text(text, name)
        assert m.changes == [] and m.new == text


def test_an_old_file_migrates_to_todays_spelling_and_keeps_what_it_created() -> None:
    m = migrate_text(OLD, "team")
    assert m.refused == []
    new = m.new
    # comments, order and flow style stay; the epoch is written first, the pins in place
    assert new.startswith(
        f'# team stack: comments stay where they are\nconfig:\n  ray-gke:defaults: "{RELEASE}"\n'
    )
    assert "    # the training GPUs\n    - name: h100\n" in new
    assert "      max_nodes: 1\n      gpu_networking: off\n" in new
    assert "      workload: serve_llm # the old engine\n" in new
    assert re.search(r"\n        cpu_threads: 2 +# one per vCPU\n        max_replicas: 2\n", new)
    assert "max_batch_size" not in new
    assert "hierarchical_namespace: false" in new
    # the migrated file names today's defaults and reads as the old one did: the same config,
    # so the same render (the plan of the two is tested below, with renders)
    old_cfg, new_cfg = _cfg(OLD), _cfg(new)
    assert new_cfg.defaults == RELEASE and new_cfg.held_defaults == ()
    assert old_cfg.model_dump(exclude={"defaults"}) == new_cfg.model_dump(exclude={"defaults"})
    assert not [n for n in new_cfg.notices if n.rule == "deprecated"]
    assert any(f"defaults: {RELEASE}" in c for c in m.changes)
    assert "--- team\n+++ team (migrated)\n" in m.file_diff("team")


def test_adopt_takes_todays_defaults() -> None:
    m = migrate_text(OLD, "team", adopt=True)
    cfg = _cfg(m.new)
    assert "gpu_networking" not in m.new and "hierarchical_namespace" not in m.new
    h100 = next(p for p in cfg.node_pools if p.name == "h100")
    assert h100.gpu_net.kind == "tcpx"


def test_a_file_the_new_epoch_would_refuse_is_not_migrated() -> None:
    """A refusal newer than the file (a warning today) becomes an error once its defaults move
    forward: migrate says so and the file is not written."""
    text = OLD.replace(
        "  ray-gke:jobs:\n",
        "  ray-gke:workload_identities:\n"
        "    - {name: ray-train, buckets: {datasets: read, checkpoints: write}}\n"
        "    - {name: ray-serve, buckets: {checkpoints: read, artifacts: read}}\n"
        "  ray-gke:jobs:\n    - {name: prep, workload: prepare, node_pool: cpu}\n",
    )
    assert any(n.rule == "job_identity_can_write_outputs" for n in _cfg(text).notices)
    m = migrate_text(text, "team")
    assert [p.rule for p in m.refused] == ["job_identity_can_write_outputs"]


def test_migrate_prints_the_diff_and_writes_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.team.yaml"
    path.write_text(OLD)
    result = CliRunner().invoke(app, ["migrate", "--config", str(path), "--no-plan"])
    assert result.exit_code == 0, result.output
    assert "+      gpu_networking: off" in result.output
    assert "not written; rerun with --write" in result.output
    assert path.read_text() == OLD
    result = CliRunner().invoke(app, ["migrate", "--config", str(path), "--no-plan", "--write"])
    assert result.exit_code == 0, result.output
    assert load_stack_file(path).defaults == RELEASE
    again = CliRunner().invoke(app, ["migrate", "--config", str(path)])
    assert again.exit_code == 0 and "nothing to migrate" in again.output


@pytest.mark.slow
def test_the_migrated_file_plans_nothing_and_adopting_shows_the_replacement(
    tmp_path: Path,
) -> None:
    """Both sides rendered by this checkout's ``raygke synth`` (raygke.migrate.plan_of)."""
    path = tmp_path / "Pulumi.team.yaml"
    path.write_text(OLD)
    kept = CliRunner().invoke(app, ["migrate", "--config", str(path)])
    assert kept.exit_code == 0, kept.output
    assert "Resources: no changes" in kept.output
    adopted = CliRunner().invoke(app, ["migrate", "--config", str(path), "--adopt"])
    assert adopted.exit_code == 0, adopted.output
    assert "gcp:container/nodePool:NodePool" in adopted.output
    assert "(replace; forced by" in adopted.output and "networkConfig" in adopted.output


def test_new_starts_a_stack_written_for_this_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["new", "team", "--from", "prod"])
    assert result.exit_code == 0, result.output
    cfg = load_stack_file(tmp_path / "Pulumi.team.yaml")
    assert cfg.defaults == RELEASE and cfg.held_defaults == ()
    again = CliRunner().invoke(app, ["new", "team"])
    assert again.exit_code == 2 and "exists" in again.output
    assert CliRunner().invoke(app, ["new", "other", "--from", "nope"]).exit_code == 2
