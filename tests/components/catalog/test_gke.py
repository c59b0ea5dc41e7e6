"""components.catalog.gke: NAP resource types, GKE version ordering and the offered-version record."""

from __future__ import annotations

import pytest

from components import catalog


def test_nap_resource_types_cover_catalog() -> None:
    for gen in catalog.TPU_GENERATIONS.values():
        assert gen.gke_accelerator in catalog.NAP_RESOURCE_TYPES
    for name in catalog.GPU_TYPES:
        assert name in catalog.NAP_RESOURCE_TYPES


def test_gke_version_ordering() -> None:
    v = catalog.parse_gke_version
    assert v("1.31.2-gke.1115000") > v("1.31.2-gke.1000")
    assert v("1.30") < v("1.31.2-gke.1115000")
    with pytest.raises(ValueError, match="not a GKE version"):
        v("latest")


def test_gke_version_problem_uses_the_record() -> None:
    oldest, newest = catalog.GKE_OFFERED_MINORS["REGULAR"]
    assert catalog.gke_version_problem(f"{newest}.1-gke.100", "REGULAR") is None
    problem = catalog.gke_version_problem("1.20.1-gke.1", "REGULAR")
    assert (
        problem and f"{oldest} to {newest}" in problem and catalog.GKE_VERSIONS_RECORDED in problem
    )
    with pytest.raises(ValueError, match="not a GKE version"):
        catalog.gke_version_problem("stable", "REGULAR")
