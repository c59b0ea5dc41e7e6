"""The price list (raygke/cost/prices.json): every machine family, GPU and TPU generation of the
catalog, on-demand and Spot, in every region the catalog lists, dated and sourced, except what
its ``not_priced`` names with the reason no source prices it; the refresh
script parses the Cloud Billing Catalog API's SKU shape; `raygke cost` on a dev copy with an
L4 x4 pool in europe-west4 prints no unknown; 0 nodes cost $0."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from components import catalog
from raygke.cost import prices
from raygke.cost.estimate import pool_cost
from raygke.cost.prices import build_tables, price_list
from raygke.cost.refresh import parse_skus, price_document, unit_price
from tests.helpers import ROOT

FIXTURE = Path(__file__).parent / "fixtures" / "billing_skus.json"


def _not_priced() -> dict[str, dict[str, str]]:
    """prices.json's ``not_priced``: section -> name -> why no source prices it."""
    np = price_list()["not_priced"]
    return {k: v for k, v in np.items() if k in ("families", "gpus", "tpus", "regions")}


def test_the_list_is_dated_and_sourced() -> None:
    d = price_list()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", d["recorded"])
    assert d["recorded"] == prices.PRICES_RECORDED
    assert all(u.startswith("https://") for u in d["sources"].values())
    assert d["not_priced"]["source"].startswith("https://")


def test_what_is_not_priced_is_a_catalog_name_with_its_reason() -> None:
    """Every not-priced entry names something the catalog knows and says why (no stale or
    silent entries); the figures the issue asked for are priced, not excused."""
    known = {
        "families": {s.series for s in catalog.MACHINE_SHAPES.values() if not s.tpu},
        "gpus": set(catalog.GPU_TYPES),
        "tpus": set(catalog.TPU_GENERATIONS),
        "regions": set(catalog.GCP_REGIONS),
    }
    for section, entries in _not_priced().items():
        for name, why in entries.items():
            assert name in known[section], (section, name)
            assert len(why) > 20 and ("SKY" in why or "CA" in why), (section, name)
    flat = {n for entries in _not_priced().values() for n in entries}
    assert flat.isdisjoint(
        {"c4", "a3", "nvidia-h200-141gb", "europe-north2", "northamerica-south1"}
    )


def missing_prices(data: dict | None = None) -> list[str]:
    """What the catalog lists and the price list neither prices (on-demand and Spot, Spot below
    on-demand for machines) nor names in ``not_priced``."""
    d = data if data is not None else price_list()
    machines, gpus, tpus = build_tables(
        catalog.MACHINE_SHAPES, catalog.GCP_REGIONS, prices.Price, d
    )
    np = d.get("not_priced", {})
    skip_regions = set(np.get("regions", {}))
    regions = set(catalog.GCP_REGIONS) - skip_regions
    missing = []
    for name, shape in catalog.MACHINE_SHAPES.items():
        if shape.tpu or shape.series in np.get("families", {}):
            continue
        for r in regions:
            p = machines.get((r, name))
            if p is None or not p.on_demand or not p.spot or p.spot >= p.on_demand:
                missing.append(f"{name} in {r}")
    for gpu in set(catalog.GPU_TYPES) - set(np.get("gpus", {})):
        for r in regions:
            p = gpus.get((r, gpu))
            if p is None or not p.on_demand or not p.spot:
                missing.append(f"{gpu} in {r}")
    for gen in set(catalog.TPU_GENERATIONS) - set(np.get("tpus", {})):
        for r in regions:
            p = tpus.get((r, gen))
            if p is None or not p.on_demand or not p.spot:
                missing.append(f"TPU {gen} in {r}")
    return missing


def test_every_family_gpu_and_tpu_in_every_catalog_region_on_demand_and_spot() -> None:
    assert missing_prices() == []
    series = {s.series for s in catalog.MACHINE_SHAPES.values() if not s.tpu}
    not_priced = set(_not_priced()["families"])
    assert series - not_priced <= set(price_list()["families"])
    assert not_priced.isdisjoint(price_list()["families"])


def test_a_gap_in_the_list_is_caught() -> None:
    """Dropping one region of one family, one GPU, or a not_priced reason makes the check fail."""
    d = json.loads(json.dumps(price_list()))
    del d["families"]["c4"]["regions"]["europe-north2"]
    c4_shapes = {n for n, s in catalog.MACHINE_SHAPES.items() if s.series == "c4"}
    assert set(missing_prices(d)) == {f"{n} in europe-north2" for n in c4_shapes}
    d = json.loads(json.dumps(price_list()))
    del d["gpus"]["nvidia-h200-141gb"]
    for key in list(d["exact"]["gpus"]):
        if key.endswith("/nvidia-h200-141gb"):
            del d["exact"]["gpus"][key]
    assert "nvidia-h200-141gb in northamerica-south1" in missing_prices(d)
    d = json.loads(json.dumps(price_list()))
    del d["not_priced"]["tpus"]["tpu7x"]
    assert "TPU tpu7x in us-central1" in missing_prices(d)


def test_new_figures_are_the_source_rows() -> None:
    """C4, A3 Ultra / H200, B200, v5p and the two N4-factor regions, against SKY rows."""
    m, g, t = prices.MACHINE_PRICES, prices.GPU_PRICES, prices.TPU_CHIP_PRICES
    # SKY c4-highcpu-16 / c4-highmem-16 rows (us-central1, europe-north2, northamerica-south1)
    for region, name, row in [
        ("us-central1", "c4-highcpu-16", (0.68042, 0.32397)),
        ("us-central1", "c4-highmem-16", (1.04271, 0.49638)),
        ("europe-north2", "c4-highcpu-16", (0.71444, 0.35718)),
        ("northamerica-south1", "c4-highmem-16", (1.13656, 0.4546)),
    ]:
        p = m[(region, name)]
        assert abs(p.on_demand - row[0]) < 2e-5 and abs(p.spot - row[1]) < 2e-5, (region, name)
        assert "skypilot-catalog" in p.source and "autoscaler" not in p.source
    # c4-standard-4 (4 vCPU, 15 GB) at the implied us-central1 rates: a shape not used to solve
    c4 = price_list()["families"]["c4"]["regions"]["us-central1"]
    assert (
        abs(m[("us-central1", "c4-standard-4")].on_demand - (4 * c4["vcpu"] + 15 * c4["gb"])) < 1e-5
    )
    p = m[("us-central1", "a3-ultragpu-8g")]
    assert (p.on_demand, p.spot) == (12.266, 3.74713) and not p.note
    h200 = g[("us-central1", "nvidia-h200-141gb")]
    assert (h200.on_demand, h200.spot) == (round(74.49392 / 8, 5), round(37.2472 / 8, 5))
    assert g[("europe-north2", "nvidia-h200-141gb")].note.startswith("derived:")
    assert (
        g[("us-central1", "nvidia-b200")].on_demand,
        g[("us-central1", "nvidia-b200")].spot,
    ) == (
        11.277,
        4.0758,
    )
    v5p = t[("us-central1", "v5p")]
    assert (v5p.on_demand, v5p.spot) == (round(24729.6 / 5888, 5), round(4920.60749 / 5888, 5))
    # europe-north2's factor is SKY's n4-standard-8 there / us-central1 (0.38094 / 0.3628)
    n2 = m[("europe-north2", "n2-standard-8")]
    assert abs(n2.on_demand - 0.38847 * 0.38094 / 0.3628) < 1e-4
    n2_rates = price_list()["families"]["n2"]["regions"]
    ratio = n2_rates["europe-north2"]["vcpu_spot"] / n2_rates["us-central1"]["vcpu_spot"]
    assert abs(ratio - 0.15922 / 0.1343) < 1e-3


def test_exact_rows_win_over_derived_figures() -> None:
    p = prices.MACHINE_PRICES[("us-east5", "a3-highgpu-8g")]
    assert (p.on_demand, p.spot) == (10.65487, 2.32627) and not p.note
    derived = prices.MACHINE_PRICES[("europe-west4", "n2-standard-8")]
    assert derived.note.startswith("derived:")
    # a machine's price is vCPUs x rate + GB x rate of its family in the region
    rates = price_list()["families"]["n2"]["regions"]["europe-west4"]
    assert abs(derived.on_demand - (8 * rates["vcpu"] + 32 * rates["gb"])) < 1e-4


def test_zero_nodes_cost_zero_even_with_an_unknown_price() -> None:
    # the A4 host is not priced (prices.json not_priced): unknown, and 0 nodes still cost $0
    inputs = {
        "name": "a4",
        "location": "us-central1",
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 3},
        "nodeConfig": {"machineType": "a4-highgpu-8g"},
    }
    c = pool_cost(inputs)
    assert c.node_hourly is None and "a4-highgpu-8g in us-central1 (on-demand)" in c.missing
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
    machines, gpus, _ = build_tables(catalog.MACHINE_SHAPES, catalog.GCP_REGIONS, prices.Price, doc)
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
        # the dev queue's GPU quota covers one 4 x L4 node (a smaller quota is never admitted)
        .replace("nvidia.com/gpu: 2}", "nvidia.com/gpu: 4}")
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
    (raygke/cost/seed.py), so the file equals what the seed writes."""
    from raygke.cost.prices import PRICES_FILE
    from raygke.cost.seed import text

    assert PRICES_FILE.read_text() == text()
