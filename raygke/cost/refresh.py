"""Regenerate ``raygke/cost/prices.json`` from the Cloud Billing Catalog API.

Usage (needs network and an API key with the Cloud Billing API enabled; nothing else):

    python -m raygke.cost.refresh --api-key "$KEY" [--out raygke/cost/prices.json]

It lists the SKUs of the Compute Engine service (``services/6F81-5844-456A``) with
``GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?key=KEY&pageToken=...``
(https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list) and keeps:

* per machine series, the ``"<SERIES> Instance Core running in <place>"`` (resource group
  ``CPU``) and ``"<SERIES> Instance Ram running in <place>"`` (``RAM``) SKUs; usage type
  ``OnDemand`` -> ``vcpu``/``gb``, ``Preemptible`` (the ``"Spot Preemptible ..."`` SKUs) ->
  ``vcpu_spot``/``gb_spot``; commitments, custom, sole-tenant and reserved SKUs are skipped
  (SKU descriptions as mapped by https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator
  ``build/mapping.csv``);
* per GPU, the SKUs of resource group ``GPU`` whose description (:func:`sku_stem`) is one of its
  accelerator record's ``price_skus`` (``"Nvidia L4 GPU running in <place>"``, ``"A4 Nvidia B200
  (1 gpu slice) running in <place>"``; :data:`components.catalog.accelerators.ACCELERATORS`);
* per TPU generation, the Compute Engine SKUs of resource group ``TPU`` named likewise
  (``"TpuV6e running in <place>"``, ``"TPU7x running in Americas"``), and the Cloud TPU
  service's chip-hour SKUs that contain one of the names (``--tpu-service``).

A price is ``units + nanos / 1e9`` of the last tiered rate of the first ``pricingInfo`` entry
(``pricingExpression.tieredRates``), for each region in the SKU's ``serviceRegions``. The result
has the shape :mod:`raygke.cost.prices` reads, dated today, with ``sources`` naming the API.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from components.catalog import sku_names

API = "https://cloudbilling.googleapis.com/v1"
COMPUTE_SERVICE = "services/6F81-5844-456A"
TPU_SERVICE = "services/E000-3F24-B8AA"  # Cloud TPU

# Billing SKU description (without " running in <place>" and the Spot wording) -> GKE GPU type /
# TPU generation: derived from the accelerator records' ``price_skus``
# (:data:`components.catalog.accelerators.ACCELERATORS`, which cites the SKU descriptions).
GPU_MODELS: Mapping[str, str] = sku_names("gpu")
TPU_SKU_GENERATIONS: Mapping[str, str] = sku_names("tpu")

_SERIES = re.compile(
    r"^(?:Spot Preemptible )?(?P<series>[A-Z][A-Z0-9]{1,3}) (?:AMD |Arm )?Instance "
    r"(?P<what>Core|Ram) running in "
)
_RUNNING_IN = re.compile(r" running in .*$")
_SKIP = (
    "Commitment",
    "Custom",
    "Sole Tenancy",
    "Reserved",
    "Extended",
    "Premium",
    "Calendar Mode",
    "DWS",
    "Defined Duration",
)


def sku_stem(description: str) -> str:
    """A SKU description without its place and Spot wording (``Spot Preemptible Nvidia L4 GPU
    running in Netherlands`` and ``Nvidia L4 GPU attached to Spot Preemptible VMs running in
    Tokyo`` -> ``Nvidia L4 GPU``): the key of :data:`GPU_MODELS` / :data:`TPU_SKU_GENERATIONS`."""
    stem = _RUNNING_IN.sub("", description).removeprefix("Spot Preemptible ")
    return stem.removesuffix(" attached to Spot Preemptible VMs")


def unit_price(sku: Mapping[str, Any]) -> float | None:
    """USD per usage unit of a SKU: the last tiered rate of its first ``pricingInfo`` (None when
    it has none)."""
    infos = sku.get("pricingInfo") or []
    if not infos:
        return None
    rates = (infos[0].get("pricingExpression") or {}).get("tieredRates") or []
    if not rates:
        return None
    price = rates[-1].get("unitPrice") or {}
    return int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9


def parse_skus(
    skus: Iterable[Mapping[str, Any]], tpu_skus: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """``{"families", "gpus", "tpus"}`` sections of the price list from Billing Catalog SKUs.

    Raises:
        ValueError: a SKU the filters keep has a currency other than USD.
    """
    families: dict[str, Any] = {}
    gpus: dict[str, Any] = {}
    tpus: dict[str, Any] = {}
    for sku in skus:
        desc = str(sku.get("description", ""))
        cat = sku.get("category") or {}
        if any(s in desc for s in _SKIP) or cat.get("resourceFamily") != "Compute":
            continue
        spot = cat.get("usageType") == "Preemptible" or "Spot Preemptible" in desc
        if cat.get("usageType") not in ("OnDemand", "Preemptible"):
            continue
        price = _usd(sku)
        if price is None:
            continue
        group = cat.get("resourceGroup")
        if group in ("GPU", "TPU"):
            names = GPU_MODELS if group == "GPU" else TPU_SKU_GENERATIONS
            name = names.get(sku_stem(desc))
            if name is not None:
                entry = (gpus if group == "GPU" else tpus).setdefault(
                    name, {"source": "API", "regions": {}}
                )
                for region in sku.get("serviceRegions") or []:
                    entry["regions"].setdefault(region, {})["spot" if spot else "on_demand"] = price
            continue
        m = _SERIES.match(desc)
        if m and cat.get("resourceGroup") in ("CPU", "RAM", "N1Standard", "G1Small", "F1Micro"):
            key = ("vcpu" if m["what"] == "Core" else "gb") + ("_spot" if spot else "")
            fam = families.setdefault(m["series"].lower(), {"regions": {}})
            for region in sku.get("serviceRegions") or []:
                fam["regions"].setdefault(region, {})[key] = price
            continue
    for sku in tpu_skus:
        desc = str(sku.get("description", ""))
        cat = sku.get("category") or {}
        gen = next((v for k, v in TPU_SKU_GENERATIONS.items() if k in desc), None)
        if gen is None or any(s in desc for s in _SKIP):
            continue
        price = _usd(sku)
        if price is None:
            continue
        spot = cat.get("usageType") == "Preemptible" or "Spot" in desc
        entry = tpus.setdefault(gen, {"source": "API", "regions": {}})
        for region in sku.get("serviceRegions") or []:
            entry["regions"].setdefault(region, {})["spot" if spot else "on_demand"] = price
    # only complete entries: a family needs all four rates in a region
    for fam in families.values():
        fam["regions"] = {
            r: v
            for r, v in sorted(fam["regions"].items())
            if {"vcpu", "gb", "vcpu_spot", "gb_spot"} <= set(v)
        }
    for section in (gpus, tpus):
        for entry in section.values():
            entry["regions"] = {
                r: v for r, v in sorted(entry["regions"].items()) if {"on_demand", "spot"} <= set(v)
            }
    return {"families": families, "gpus": gpus, "tpus": tpus}


def _usd(sku: Mapping[str, Any]) -> float | None:
    price = unit_price(sku)
    info = (sku.get("pricingInfo") or [{}])[0]
    rates = (info.get("pricingExpression") or {}).get("tieredRates") or [{}]
    currency = (rates[-1].get("unitPrice") or {}).get("currencyCode", "USD")
    if price is not None and currency != "USD":
        raise ValueError(f"SKU {sku.get('skuId')}: currency {currency}, expected USD")
    return price


def price_document(parsed: Mapping[str, Any], today: str) -> dict[str, Any]:
    """The whole ``prices.json`` document from :func:`parse_skus`' sections."""
    return {
        "recorded": today,
        "currency": "USD",
        "unit": "per hour; machine families per vCPU and per GB (GPUs apart), GPUs per GPU, "
        "TPUs per chip",
        "generator": "python -m raygke.cost.refresh (Cloud Billing Catalog API)",
        "sources": {
            "API": f"{API}/{COMPUTE_SERVICE}/skus (and {TPU_SERVICE})",
            "SKY": f"{API}/{COMPUTE_SERVICE}/skus",
            "CA": f"{API}/{COMPUTE_SERVICE}/skus",
        },
        "derivation": ["Every figure is a SKU unit price of the Cloud Billing Catalog API."],
        **parsed,
        "exact": {"machines": {}, "gpus": {}, "tpus": {}},
        # what the API did not list stays missing (a test names it), never silently excused
        "not_priced": {"families": {}, "gpus": {}, "tpus": {}, "regions": {}, "source": API},
    }


def list_skus(service: str, api_key: str) -> Iterator[dict[str, Any]]:  # pragma: no cover
    """Every SKU of ``service`` (pages followed); needs network."""
    token = ""
    while True:
        query = {"key": api_key, "currencyCode": "USD", "pageSize": "5000"}
        if token:
            query["pageToken"] = token
        url = f"{API}/{service}/skus?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=60) as r:
            page = json.load(r)
        yield from page.get("skus") or []
        token = page.get("nextPageToken") or ""
        if not token:
            return


def main(argv: list[str] | None = None) -> int:  # pragma: no cover
    """Fetch, parse and write the price list; 0 on success, 2 on a usage or network error."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--api-key", required=True)
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "prices.json",
    )
    ap.add_argument("--tpu-service", default=TPU_SERVICE)
    args = ap.parse_args(argv)
    try:
        compute = list(list_skus(COMPUTE_SERVICE, args.api_key))
        tpu = list(list_skus(args.tpu_service, args.api_key))
    except OSError as e:
        print(f"error: the Cloud Billing Catalog API is unreachable: {e}", file=sys.stderr)
        return 2
    doc = price_document(parse_skus(compute, tpu), dt.date.today().isoformat())
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {len(doc['families'])} families, {len(doc['gpus'])} GPUs")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
