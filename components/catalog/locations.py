"""Compute Engine regions and zones and Cloud Storage locations, as recorded on a date.

Sources: https://cloud.google.com/compute/docs/regions-zones (regions and zone letters) and
https://cloud.google.com/storage/docs/locations (multi-regions, predefined dual-regions).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

# ------------------------------------------------------------------------ regions and locations

# Compute Engine regions and their zone letters, as recorded on the date below
# (https://cloud.google.com/compute/docs/regions-zones). Google adds regions: refresh this
# record (and its date) from `gcloud compute zones list` when one is missing.
REGIONS_RECORDED = "2026-11-30"
_ABC = "abc"
GCP_REGIONS: Mapping[str, str] = {
    "us-central1": "abcf",
    "us-east1": "bcd",
    "us-east4": _ABC,
    "us-east5": _ABC,
    "us-south1": _ABC,
    "us-west1": _ABC,
    "us-west2": _ABC,
    "us-west3": _ABC,
    "us-west4": _ABC,
    "northamerica-northeast1": _ABC,
    "northamerica-northeast2": _ABC,
    "northamerica-south1": _ABC,
    "southamerica-east1": _ABC,
    "southamerica-west1": _ABC,
    "europe-central2": _ABC,
    "europe-north1": _ABC,
    "europe-north2": _ABC,
    "europe-southwest1": _ABC,
    "europe-west1": "bcd",
    "europe-west2": _ABC,
    "europe-west3": _ABC,
    "europe-west4": _ABC,
    "europe-west6": _ABC,
    "europe-west8": _ABC,
    "europe-west9": _ABC,
    "europe-west10": _ABC,
    "europe-west12": _ABC,
    "me-central1": _ABC,
    "me-central2": _ABC,
    "me-west1": _ABC,
    "africa-south1": _ABC,
    "asia-east1": _ABC,
    "asia-east2": _ABC,
    "asia-northeast1": _ABC,
    "asia-northeast2": _ABC,
    "asia-northeast3": _ABC,
    "asia-south1": _ABC,
    "asia-south2": _ABC,
    "asia-southeast1": _ABC,
    "asia-southeast2": _ABC,
    "australia-southeast1": _ABC,
    "australia-southeast2": _ABC,
}
# Cloud Storage multi-regions and predefined dual-regions
# (https://cloud.google.com/storage/docs/locations); any region above is a location too.
BUCKET_MULTI_REGIONS = ("US", "EU", "ASIA", "ASIA1", "EUR4", "EUR5", "EUR7", "EUR8", "NAM4")


def region_problem(region: str) -> str | None:
    """Why ``region`` is not a Compute Engine region of the record, else None (with the closest
    recorded names as suggestions)."""
    if region in GCP_REGIONS:
        return None
    close = difflib.get_close_matches(region, list(GCP_REGIONS), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else " (e.g. us-central1)"
    return (
        f"{region!r} is not a GCP region as recorded on {REGIONS_RECORDED} "
        f"(catalog GCP_REGIONS){hint}"
    )


def zone_problem(zone: str, region: str) -> str | None:
    """Why ``zone`` is not a zone of ``region`` (by the record), else None."""
    letters = GCP_REGIONS.get(region)
    head, _, letter = zone.rpartition("-")
    if head == region and letters is not None and len(letter) == 1 and letter in letters:
        return None
    zones = ", ".join(f"{region}-{c}" for c in letters or "")
    return f"{zone!r} is not a zone of region {region}" + (f"; its zones: {zones}" if zones else "")


def bucket_location_problem(location: str) -> str | None:
    """Why ``location`` is not a Cloud Storage location (region, multi-region or predefined
    dual-region), else None."""
    if location.upper() in BUCKET_MULTI_REGIONS or location.lower() in GCP_REGIONS:
        return None
    return (
        f"{location!r} is not a Cloud Storage location: use a region (e.g. US-EAST5) or one of "
        f"{', '.join(BUCKET_MULTI_REGIONS)} (https://cloud.google.com/storage/docs/locations)"
    )
