"""List prices of the catalog's machine types, GPUs and TPU chips, from ``raygke/cost/prices.json``.

Prices (USD per hour, list prices, no committed-use or sustained-use discounts), from the dated
price list raygke/cost/prices.json. A price that is not there is unknown: ``raygke cost`` shows it as unknown,
never as zero.

Sources:
* [PRICE-GKE] GKE cluster management fee, $0.10 per cluster per hour for every cluster (the
  free tier credit of $74.40 a month per billing account, one zonal or Autopilot cluster, is
  not subtracted): https://cloud.google.com/kubernetes-engine/pricing
* [PRICE-CAT] SkyPilot's GCP catalog, generated from the Google Cloud Billing Catalog API:
  https://github.com/skypilot-org/skypilot-catalog/blob/006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv
  (columns Price = on-demand, SpotPrice = Spot, per hour; machine rows of A2/A3/G2 types exclude
  the GPUs, which have their own rows; TPU rows ``tpu-v5litepod-N`` / ``tpu-v6e-N`` price N
  chips, ``tpu-v5p-N`` N TensorCores = N/2 chips). Spot prices change (up to once a day); they are what the catalog recorded.
* [PRICE-RES] Reserved capacity is billed at the on-demand rate whether or not nodes use it:
  https://cloud.google.com/compute/docs/instances/reservations-overview ("reserved resources are
  charged at the same on-demand rates as running VMs").

(region, machine type) -> price of the VM without GPUs or TPUs; (region, GKE GPU type) -> price
per GPU; (region, TPU generation) -> price per chip: every family, GPU and generation of this
catalog in every region the price list has [PRICE-CAT].

The price list ``raygke/cost/prices.json``: dated, sourced hourly list prices for every machine
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
* ``not_priced``: ``families`` / ``gpus`` / ``tpus`` / ``regions`` -> name -> why no source
  prices it (``raygke cost`` shows those as unknown); a family may carry its own ``source``.

``python -m raygke.cost.refresh`` regenerates the file from the Cloud Billing Catalog API;
``python -m raygke.cost.seed`` wrote the shipped one offline from its two cited sources.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from components.catalog import GCP_REGIONS, MACHINE_SHAPES

PRICES_RECORDED = "2026-12-01"  # the date of raygke/cost/prices.json
HOURS_PER_MONTH = 730
GKE_PRICING = "https://cloud.google.com/kubernetes-engine/pricing"
RESERVATION_PRICING = "https://cloud.google.com/compute/docs/instances/reservations-overview"


@dataclass(frozen=True)
class Price:
    """An hourly list price with its source.

    Attributes:
        on_demand: USD per hour on demand (also the reservation rate [PRICE-RES]).
        spot: USD per hour as a Spot VM (None: not recorded).
        source: URL of the figure.
        recorded: date the figure was read (ISO).
        note: how the figure was derived, when it is not a row of the source.
    """

    on_demand: float | None
    spot: float | None
    source: str
    recorded: str = PRICES_RECORDED
    note: str = ""


CLUSTER_FEE = Price(0.10, 0.10, GKE_PRICING)


PRICES_FILE = Path(__file__).resolve().parent / "prices.json"


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
            (:class:`Price`).
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
        src = fam.get("source") or (
            f"{sources['CA']} (us-central1 rates) x {sources['SKY']} (regional factors)"
        )
        for region, r in fam["regions"].items():
            if region not in regions:
                continue
            od = shape.vcpus * r["vcpu"] + shape.memory_gb * r["gb"]
            spot = shape.vcpus * r["vcpu_spot"] + shape.memory_gb * r["gb_spot"]
            note = (
                f"derived: {shape.vcpus:g} vCPU x {r['vcpu']} + {shape.memory_gb:g} GB x {r['gb']}"
                " (raygke/cost/prices.json derivation)"
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


MACHINE_PRICES: Mapping[tuple[str, str], Price]
GPU_PRICES: Mapping[tuple[str, str], Price]
TPU_CHIP_PRICES: Mapping[tuple[str, str], Price]
MACHINE_PRICES, GPU_PRICES, TPU_CHIP_PRICES = build_tables(MACHINE_SHAPES, GCP_REGIONS, Price)
