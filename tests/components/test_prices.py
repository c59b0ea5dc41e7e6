"""The price list (components/prices.json): every machine family, GPU and TPU generation of the
catalog, on-demand and Spot, in every region the catalog lists, dated and sourced; the refresh
script parses the Cloud Billing Catalog API's SKU shape; `raygke cost` on a dev copy with an
L4 x4 pool in europe-west4 prints no unknown; 0 nodes cost $0."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from components import catalog
from components.builders.cost import pool_cost
from components.catalog import build_tables, price_list
from raygke.prices_refresh import parse_skus, price_document, unit_price
from tests.helpers import ROOT

FIXTURE = Path(__file__).parent / "fixtures" / "billing_skus.json"
# What the sources do not price (said in prices.json's derivation): unknown, by name.
NOT_PRICED_SERIES = {"c4"}
NOT_PRICED_GPUS = {"nvidia-h200-141gb"}
NOT_PRICED_REGIONS = {"europe-north2", "northamerica-south1"}


def test_the_list_is_dated_and_sourced_and_names_what_it_does_not_price() -> None:
    d = price_list()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", d["recorded"])
    assert d["recorded"] == catalog.PRICES_RECORDED
    assert all(u.startswith("https://") for u in d["sources"].values())
    said = " ".join(d["derivation"])
    for name in NOT_PRICED_SERIES | NOT_PRICED_GPUS | NOT_PRICED_REGIONS:
        assert name in said.lower() or name.upper() in said


def test_every_family_gpu_and_tpu_in_every_catalog_region_on_demand_and_spot() -> None:
    regions = set(catalog.GCP_REGIONS) - NOT_PRICED_REGIONS
    series = {s.series for s in catalog.MACHINE_SHAPES.values() if not s.tpu}
    missing = []
    for name, shape in catalog.MACHINE_SHAPES.items():
        if shape.tpu or shape.series in NOT_PRICED_SERIES:
            continue
        for r in regions:
            p = catalog.MACHINE_PRICES.get((r, name))
            if p is None or not p.on_demand or not p.spot or p.spot >= p.on_demand:
                missing.append(f"{name} in {r}")
    for gpu in set(catalog.GPU_TYPES) - NOT_PRICED_GPUS:
        for r in regions:
            p = catalog.GPU_PRICES.get((r, gpu))
            if p is None or not p.on_demand or not p.spot:
                missing.append(f"{gpu} in {r}")
    for gen in catalog.TPU_GENERATIONS:
        for r in regions:
            if (r, gen) not in catalog.TPU_CHIP_PRICES:
                missing.append(f"TPU {gen} in {r}")
    assert missing == []
    assert series - NOT_PRICED_SERIES <= set(price_list()["families"])
    assert NOT_PRICED_SERIES.isdisjoint(price_list()["families"])


def test_exact_rows_win_over_derived_figures() -> None:
    p = catalog.MACHINE_PRICES[("us-east5", "a3-highgpu-8g")]
    assert (p.on_demand, p.spot) == (10.65487, 2.32627) and not p.note
    derived = catalog.MACHINE_PRICES[("europe-west4", "n2-standard-8")]
    assert derived.note.startswith("derived:")
    # a machine's price is vCPUs x rate + GB x rate of its family in the region
    rates = price_list()["families"]["n2"]["regions"]["europe-west4"]
    assert abs(derived.on_demand - (8 * rates["vcpu"] + 32 * rates["gb"])) < 1e-4


def test_zero_nodes_cost_zero_even_with_an_unknown_price() -> None:
    inputs = {
        "name": "c4",
        "location": "us-central1",
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 3},
        "nodeConfig": {"machineType": "c4-standard-8"},
    }
    c = pool_cost(inputs)
    assert c.node_hourly is None and c.missing == ["c4-standard-8 in us-central1 (on-demand)"]
    assert c.min_hourly == 0.0 and c.max_hourly is None


def test_refresh_parses_the_billing_catalog_sku_shape() -> None:
    skus = json.loads(FIXTURE.read_text())["skus"]
    assert abs(unit_price(skus[-1]) - 0.08) < 1e-12  # the last tier
    parsed = parse_skus(skus)
    assert parsed["families"] == {
        "n2": {
            "regions": {
                "europe-west4": {
                    "vcpu": 0.0348,
                    "gb": 0.0046644,
                    "vcpu_spot": 0.0121,
                    "gb_spot": 0.00162,
                }
            }
        }
    }  # the commitment SKU and the egress SKU are left out
    assert parsed["gpus"]["nvidia-l4"]["regions"] == {
        "europe-west4": {"on_demand": 0.644046, "spot": 0.256}
    }
    doc = price_document(parsed, "2026-12-01")
    machines, gpus, _ = build_tables(
        catalog.MACHINE_SHAPES, catalog.GCP_REGIONS, catalog.Price, doc
    )
    assert abs(machines[("europe-west4", "n2-standard-8")].on_demand - 0.42766) < 1e-4
    assert gpus[("europe-west4", "nvidia-l4")].spot == 0.256
    assert ("us-central1", "n2-standard-8") not in machines  # only what the API listed


def test_cost_of_a_dev_copy_with_l4x4_in_europe_west4_has_no_unknown(tmp_path: Path) -> None:
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    edited = (
        text.replace("gpu: {type: nvidia-l4, count: 1}", "gpu: {type: nvidia-l4, count: 4}")
        .replace("nvidia-l4: 4\n", "nvidia-l4: 16\n")
        .replace("cpu: 320\n", "cpu: 640\n")
        .replace("memory: 1280\n", "memory: 2560\n")
    )
    assert edited.count("count: 4}") == 1
    copy = tmp_path / "Pulumi.devcopy.yaml"
    copy.write_text(edited)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "raygke",
            "cost",
            "--config",
            str(copy),
            "--set",
            "region=europe-west4",
            "--set",
            "zones=[europe-west4-b]",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"NO_COLOR": "1", "COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    assert "unknown" not in r.stdout
    assert "g2-standard-48" in r.stdout and "4 x nvidia-l4" in r.stdout
    assert "europe-west4" in r.stdout


def test_shipped_list_is_exactly_its_documented_seed() -> None:
    """Every number of prices.json comes from a cited source row or the stated derivation
    (raygke/prices_seed.py), so the file equals what the seed writes."""
    from components.catalog import PRICES_FILE
    from raygke.prices_seed import text

    assert PRICES_FILE.read_text() == text()
