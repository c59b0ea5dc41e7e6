"""components.catalog.locations: regions, zones and bucket locations of the record."""

from __future__ import annotations

from components.catalog import bucket_location_problem, region_problem, zone_problem


def test_region_and_suggestion() -> None:
    assert region_problem("us-east5") is None
    assert "did you mean us-east5" in (region_problem("us-east-5") or "")


def test_zone_of_region() -> None:
    assert zone_problem("us-central1-f", "us-central1") is None
    assert zone_problem("us-east1-a", "us-east1") == (
        "'us-east1-a' is not a zone of region us-east1; its zones: us-east1-b, us-east1-c, us-east1-d"
    )
    assert zone_problem("us-east5-a", "us-central1") is not None


def test_bucket_locations() -> None:
    assert bucket_location_problem("US") is None
    assert bucket_location_problem("us-east5") is None
    assert "not a Cloud Storage location" in (bucket_location_problem("MARS") or "")
