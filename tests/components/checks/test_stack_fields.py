"""Problems found in the rendered stack name the stack-file field to edit
(components/stack/checks.py ``stack_field``); values with control characters print quoted."""

from __future__ import annotations

import pytest

from components.raycrs.manifests import render_manifests
from components.stack import ConfigError, validate
from components.stack.checks import check_manifests, stack_field
from tests.helpers import WORKING_DIR, config, needs_crds, stack


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
    with pytest.raises(ConfigError) as exc:
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
