"""Bounds the GCP APIs enforce, checked before anything is created."""

from __future__ import annotations

import pytest

from tests.components.stack.test_model import base, one_problem


@pytest.mark.parametrize("days", [1, 3, 6, 91])
def test_soft_delete_retention_outside_gcs_range_is_refused(days: int) -> None:
    """GCS soft delete retention: 0 or 7-90 days
    (https://cloud.google.com/storage/docs/soft-delete#retention-duration)."""
    data = base()
    data["buckets"] = {"checkpoints": {"soft_delete_days": days}}
    one_problem(data, "buckets.checkpoints.soft_delete_days", str(days))


@pytest.mark.parametrize("days", [0, 7, 90])
def test_soft_delete_retention_in_range_is_accepted(days: int) -> None:
    from components.stack import validate

    data = base()
    data["buckets"] = {"checkpoints": {"soft_delete_days": days}}
    assert validate(data).buckets.checkpoints.soft_delete_days == days


def _networks(*cidrs: str, **network: object) -> dict:
    data = base()
    data["network"] = {
        **network,
        "master_authorized_networks": [{"name": f"n{i}", "cidr": c} for i, c in enumerate(cidrs)],
    }
    return data


def test_whole_internet_is_not_an_authorized_network() -> None:
    """https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks"""
    one_problem(_networks("0.0.0.0/0"), "master_authorized_networks[n0].cidr 0.0.0.0/0")


def test_private_endpoint_needs_internal_ranges() -> None:
    """A private endpoint is reachable only from internal addresses
    (https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters)."""
    one_problem(_networks("35.1.0.0/16", private_endpoint=True), "private_endpoint: true")
    from components.stack import validate

    assert validate(_networks("10.100.0.0/16", private_endpoint=True))


def test_authorized_network_count_limit() -> None:
    """Public clusters: at most 50 ranges, private: 100
    (https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks#limitations)."""
    cidrs = [f"198.51.{i}.0/24" for i in range(101)]
    one_problem(_networks(*cidrs), "has 101 ranges", "at most 100")
    one_problem(_networks(*cidrs[:51], private_nodes=False), "at most 50")
    assert not [p for p in _try(_networks(*cidrs[:100])) if "ranges" in p]


def _try(data: dict) -> list[str]:
    from components.stack import ConfigError, validate

    try:
        validate(data)
    except ConfigError as e:
        return e.problems
    return []


def test_duplicate_authorized_network_names() -> None:
    data = _networks("35.1.0.0/16", "35.2.0.0/16")
    for n in data["network"]["master_authorized_networks"]:
        n["name"] = "office"
    one_problem(data, "name 'office' is used more than once")


@pytest.mark.parametrize(
    ("version", "channel", "ok"),
    [
        ("1.31.2-gke.1115000", "STABLE", False),  # the old prod pin: no longer offered
        ("1.35", "STABLE", True),
        ("1.33", "REGULAR", False),
        ("1.33", "EXTENDED", True),
        ("1.40", "RAPID", False),
    ],
)
def test_gke_version_pin_is_offered(version: str, channel: str, ok: bool) -> None:
    """Pins are checked against the catalog's dated record of the minors GKE offers for new
    clusters per channel (https://cloud.google.com/kubernetes-engine/docs/release-schedule)."""
    from components.stack import validate

    data = base()
    data["cluster"] = {"min_master_version": version, "release_channel": channel}
    if ok:
        assert validate(data).cluster.min_master_version == version
    else:
        one_problem(data, "cluster", version, "not offered for new clusters", channel)


def test_authorized_network_needs_a_prefix_length_and_pod_ranges_no_host_bits() -> None:
    """GKE takes CIDR blocks (``cidrBlock``,
    https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks); a range with
    host bits set is named with the network it means."""
    data = _networks("203.0.113.7")
    one_problem(data, "no prefix length", "203.0.113.7/32")
    data = base()
    data["network"] = {"pods_cidr": "10.10.0.0/14"}
    one_problem(data, "network.pods_cidr", "host bits set", "10.8.0.0/14")


@pytest.mark.parametrize(("name", "ok"), [("a" * 47, True), ("a" * 48, False), ("1job", False)])
def test_job_names_follow_kuberay(name: str, ok: bool) -> None:
    """RayJob names are DNS-1035 labels of at most 47 characters (KubeRay constant.go
    MaxRayJobNameLength, validation.go ValidateRayJobMetadata)."""
    from components.stack import validate

    data = base()
    data["jobs"][0]["name"] = name
    if ok:
        assert validate(data).jobs[0].name == name
    else:
        one_problem(data, "job name", "1-47", "starting with a letter")


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("region", "us-east9", "did you mean us-east5"),
        ("zones", ["us-central1-z"], "its zones: us-central1-a"),
        ("buckets", {"location": "us-centrall"}, "not a Cloud Storage location"),
    ],
)
def test_regions_zones_and_bucket_locations_are_real(key: str, value: object, needle: str) -> None:
    """Regions and zones from the catalog's dated record
    (https://cloud.google.com/compute/docs/regions-zones); bucket locations are regions,
    multi-regions or predefined dual-regions (https://cloud.google.com/storage/docs/locations).
    GCP refuses the others at `pulumi up`."""
    data = base()
    data[key] = value
    one_problem(data, needle)


def test_every_catalog_accelerator_zone_is_a_recorded_zone() -> None:
    from components import catalog

    for acc in [*catalog.TPU_GENERATIONS.values(), *catalog.GPU_TYPES.values()]:
        for z in acc.zones:
            assert catalog.zone_problem(z, z.rsplit("-", 1)[0]) is None, z
