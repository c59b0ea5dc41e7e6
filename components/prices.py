"""The price list ``components/prices.json``: dated, sourced hourly list prices for every machine
family, GPU and TPU generation of :mod:`components.catalog`, on-demand and Spot, per region.

The file (its ``sources``, ``recorded`` date and ``derivation`` say where each figure comes from)
holds:

* ``families.<series>.regions.<region>``: ``vcpu``, ``gb``, ``vcpu_spot``, ``gb_spot``: USD per
  vCPU-hour and per GB-hour; a machine type costs ``vcpus x vcpu + memory_gb x gb`` (the GPUs of
  A2/A3/G2 types are priced apart, as Compute Engine bills them:
  https://cloud.google.com/compute/vm-instance-pricing#accelerator-optimized);
* ``gpus.<gke gpu type>.regions.<region>``: ``on_demand``, ``spot`` per GPU-hour;
* ``tpus.<generation>.regions.<region>``: ``on_demand``, ``spot`` per chip-hour;
* ``exact``: ``"<region>/<machine | gpu | generation>": [on_demand, spot]`` rows read as they are
  from a source, used instead of a derived figure.

``python -m components.prices_refresh`` regenerates the file from the Cloud Billing Catalog API
(:mod:`components.prices_refresh`). Pure: reads the JSON file only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

PRICES_FILE = Path(__file__).with_name("prices.json")


@cache
def price_list(path: Path = PRICES_FILE) -> dict[str, Any]:
    """The parsed price list (cached)."""
    return json.loads(path.read_text())


def build_tables(
    shapes: Mapping[str, Any],
    regions: Mapping[str, str],
    make_price: Callable[..., Any],
    data: Mapping[str, Any] | None = None,
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any], dict[tuple[str, str], Any]]:
    """``(machine, gpu, tpu_chip)`` tables keyed ``(region, name)`` for every region of
    ``regions`` the list prices.

    Args:
        shapes: machine type -> shape (``series``, ``vcpus``, ``memory_gb``, ``tpu``):
            :data:`components.catalog.MACHINE_SHAPES`.
        regions: the catalog's regions (:data:`components.catalog.GCP_REGIONS`).
        make_price: ``(on_demand, spot, source, recorded=..., note=...)`` -> a price object
            (:class:`components.catalog.Price`).
        data: the parsed list (default: :func:`price_list`).
    """
    d = data if data is not None else price_list()
    recorded = d["recorded"]
    sources = d["sources"]
    machines: dict[tuple[str, str], Any] = {}
    for name, shape in shapes.items():
        if shape.tpu:
            continue
        fam = d["families"].get(shape.series)
        if fam is None:
            continue
        src = f"{sources['CA']} (us-central1 rates) x {sources['SKY']} (regional factors)"
        for region, r in fam["regions"].items():
            if region not in regions:
                continue
            od = shape.vcpus * r["vcpu"] + shape.memory_gb * r["gb"]
            spot = shape.vcpus * r["vcpu_spot"] + shape.memory_gb * r["gb_spot"]
            note = (
                f"derived: {shape.vcpus:g} vCPU x {r['vcpu']} + {shape.memory_gb:g} GB x {r['gb']}"
                " (components/prices.json derivation)"
            )
            machines[(region, name)] = make_price(
                round(od, 5), round(spot, 5), src, recorded=recorded, note=note
            )

    def accel(section: str) -> dict[tuple[str, str], Any]:
        out: dict[tuple[str, str], Any] = {}
        for name, entry in d[section].items():
            note = "derived: " + "; ".join(
                x for x in (entry.get("note"), "x the regional factor of prices.json") if x
            )
            for region, r in entry["regions"].items():
                if region in regions:
                    out[(region, name)] = make_price(
                        r["on_demand"], r["spot"], entry["source"], recorded=recorded, note=note
                    )
        return out

    gpus, tpus = accel("gpus"), accel("tpus")
    for section, table in (("machines", machines), ("gpus", gpus), ("tpus", tpus)):
        for key, (od, spot) in d["exact"][section].items():
            region, _, name = key.partition("/")
            table[(region, name)] = make_price(od, spot, sources["SKY"], recorded=recorded)
    return machines, gpus, tpus
