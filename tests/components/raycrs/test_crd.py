"""Every rendered custom resource validates against the KubeRay v1.7.0 CRDs; pruned fields fail."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from components.raycrs.crd import (
    CrdsMissingError,
    crd_schema,
    validate_manifest,
    validate_manifests,
)
from components.raycrs.render import render_manifests
from tests.helpers import STACKS, WORKING_DIR, needs_crds, stack


@needs_crds
@pytest.mark.parametrize("name", STACKS)
def test_every_rendered_cr_validates(name: str) -> None:
    manifests = render_manifests(stack(name), WORKING_DIR)
    kinds = {m["kind"] for m in manifests}
    assert {"RayCluster", "RayJob"} <= kinds <= {"RayCluster", "RayJob", "RayService"}
    assert validate_manifests(manifests) == []


@needs_crds
def test_misspelled_field_is_reported_with_its_path() -> None:
    m = copy.deepcopy(render_manifests(stack("dev"), WORKING_DIR)[0])
    m["spec"]["workerGroupSpecs"][0]["numOfHost"] = 1
    m["spec"]["headGroupSpec"]["template"]["spec"]["nodeSelectr"] = {}
    problems = validate_manifest(m)
    assert (
        "RayCluster research: spec.workerGroupSpecs[0].numOfHost: unknown field "
        "(the API server would prune it)"
    ) in problems
    assert any("spec.headGroupSpec.template.spec.nodeSelectr: unknown field" in p for p in problems)


@needs_crds
def test_types_required_and_int_or_string() -> None:
    jobs = [m for m in render_manifests(stack("prod"), WORKING_DIR) if m["kind"] == "RayJob"]
    m = copy.deepcopy(jobs[-1])  # a RayJob
    res = m["spec"]["submitterPodTemplate"]["spec"]["containers"][0]["resources"]
    res["limits"]["cpu"] = 1  # int-or-string: an integer is fine
    assert validate_manifest(m) == []
    m["spec"]["backoffLimit"] = "two"
    del m["spec"]["submitterPodTemplate"]["spec"]["containers"][0]["name"]
    problems = validate_manifest(m)
    assert any("spec.backoffLimit: 'two' is not of type 'integer'" in p for p in problems)
    assert any("'name' is a required property" in p for p in problems)


@needs_crds
def test_map_values_are_not_unknown_fields() -> None:
    m = copy.deepcopy(render_manifests(stack("prod"), WORKING_DIR)[0])
    m["spec"]["headGroupSpec"]["rayStartParams"]["any-flag"] = "1"  # a map: any key allowed
    assert validate_manifest(m) == []


def test_absent_crd_folder_gives_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAYGKE_CRDS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(CrdsMissingError, match="RAYGKE_CRDS_DIR"):
        crd_schema("RayCluster")
    with pytest.raises(ValueError, match="not a KubeRay kind"):
        crd_schema("Pod")
