"""KubeRay CRDs as stack resources (helm mode): the chart version's carried files, applied before
the operator (Helm release with skipCrds) and the Ray custom resources; none in gke-addon mode.
Real program under mocks (tests/helpers.py render)."""

from __future__ import annotations

from typing import Any

import pytest

import raygke.mocks as mocks
import raygke.synth as synth
from components.kuberay.render import crd_documents
from tests.helpers import config, of_type, render

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RELEASE = "kubernetes:helm.sh/v3:Release"
DEPENDENCIES: dict[str, list[str]] = {}


class _DependencyMonitor(mocks.RecordingMonitor):
    """Also records each resource's ``dependsOn`` (as ``<type>::<name>``)."""

    def RegisterResource(self, request: Any) -> Any:
        DEPENDENCIES[f"{request.type}::{request.name}"] = [
            mocks._urn_ref(u) for u in request.dependencies
        ]
        return super().RegisterResource(request)


def _render(monkeypatch: pytest.MonkeyPatch, **overrides: Any) -> list[dict]:
    DEPENDENCIES.clear()
    monkeypatch.setattr(synth, "RecordingMonitor", _DependencyMonitor)
    jobs = [{"name": "own", "workload": "train_lm", "node_pool": "l4"}]
    records, _ = render(config(jobs=jobs, **overrides), crd_specs="full")
    return records


@pytest.mark.parametrize("version", ["1.7.0", "1.6.2"])
def test_helm_mode_manages_the_chart_versions_crds_before_operator_and_crs(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    records = _render(monkeypatch, kuberay={"mode": "helm", "chart_version": version})
    crds = of_type(records, CRD)
    expected = {d["metadata"]["name"]: d for d in crd_documents(version)}
    assert (
        {c["inputs"]["metadata"]["name"] for c in crds}
        == set(expected)
        == {
            "rayclusters.ray.io",
            "rayjobs.ray.io",
            "rayservices.ray.io",
        }
    )
    for c in crds:
        doc = expected[c["inputs"]["metadata"]["name"]]
        # the carried file of that version, unmodified (versions differ: 1.7.0 adds tlsOptions)
        assert c["inputs"]["spec"]["versions"][0]["name"] == doc["spec"]["versions"][0]["name"]
        assert c["inputs"]["spec"]["names"] == doc["spec"]["names"]
        assert c["inputs"]["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
    (release,) = of_type(records, RELEASE)
    assert release["inputs"]["skipCrds"] is True
    assert release["inputs"]["version"] == version
    crd_refs = {f"{CRD}::{c['name']}" for c in crds}
    assert crd_refs <= set(DEPENDENCIES[f"{RELEASE}::{release['name']}"])
    crs = [r for r in records if r["type"].startswith("kubernetes:ray.io/v1:")]
    assert crs
    for r in crs:
        deps = set(DEPENDENCIES[f"{r['type']}::{r['name']}"])
        assert crd_refs <= deps, r["name"]
        assert f"{RELEASE}::{release['name']}" in deps


def test_v1_7_0_and_v1_6_2_crds_differ() -> None:
    """The two carried versions are different files (v1.7.0's RayCluster has tlsOptions)."""
    new, old = (
        crd_documents(v)[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
            "spec"
        ]["properties"]
        for v in ("1.7.0", "1.6.2")
    )
    assert "tlsOptions" in new and "tlsOptions" not in old


def test_gke_addon_mode_leaves_the_crds_to_gke(monkeypatch: pytest.MonkeyPatch) -> None:
    records = _render(monkeypatch, kuberay={"mode": "gke-addon"})
    assert of_type(records, CRD) == []
    assert of_type(records, RELEASE) == []
