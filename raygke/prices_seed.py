"""How the shipped ``components/prices.json`` was seeded offline (no Billing API access): from the
figures of two cited sources, by the rules in the file's ``derivation``. ``python -m
raygke.prices_seed`` rewrites the file; a test checks the shipped file equals this output, so
every number in it is traceable to a source row or a stated derivation. With API access,
:mod:`raygke.prices_refresh` replaces it with SKU prices.

Sources (public files, read 2026-12-01): SKY = SkyPilot's GCP catalog (generated from the Cloud
Billing Catalog API), CA = Kubernetes cluster-autoscaler's GCE price table (us-central1 list
prices per vCPU and GB).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "components" / "prices.json"


def seed() -> dict[str, Any]:
    """The price list document."""
    SKY = (
        "https://github.com/skypilot-org/skypilot-catalog/blob/"
        "006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv"
    )
    CA = (
        "https://github.com/kubernetes/autoscaler/blob/0411d1c8af6b4b095f968868a0f013003fd8a2d8/"
        "cluster-autoscaler/cloudprovider/gce/gce_price_info.go"
    )
    # n2-standard-8 rows of SKY per region: (on-demand, spot); us-west3/us-west4 from n2-standard-64 / 8
    N2 = {
        "africa-south1": (0.42734, 0.1087),
        "asia-east1": (0.44981, 0.12616),
        "asia-east2": (0.54354, 0.15978),
        "asia-northeast1": (0.49835, 0.11864),
        "asia-northeast2": (0.49887, 0.15165),
        "asia-northeast3": (0.49887, 0.12933),
        "asia-south1": (0.46658, 0.11779),
        "asia-south2": (0.46658, 0.04202),
        "asia-southeast1": (0.47922, 0.1711),
        "asia-southeast2": (0.52235, 0.25109),
        "australia-southeast1": (0.5512, 0.17541),
        "australia-southeast2": (0.46851, 0.17702),
        "europe-central2": (0.47006, 0.10198),
        "europe-north1": (0.4277, 0.15859),
        "europe-southwest1": (0.4584, 0.0859),
        "europe-west1": (0.42734, 0.06118),
        "europe-west10": (0.50051, 0.1196),
        "europe-west12": (0.50113, 0.07472),
        "europe-west2": (0.5005, 0.07269),
        "europe-west3": (0.5005, 0.18259),
        "europe-west4": (0.42766, 0.1488),
        "europe-west6": (0.5089, 0.13536),
        "europe-west8": (0.45063, 0.07166),
        "europe-west9": (0.45063, 0.0975),
        "me-central1": (0.47199, 0.11854),
        "me-central2": (0.62156, 0.07766),
        "me-west1": (0.42732, 0.16773),
        "northamerica-northeast1": (0.42766, 0.11162),
        "northamerica-northeast2": (0.42766, 0.04301),
        "southamerica-east1": (0.61664, 0.13333),
        "southamerica-west1": (0.55551, 0.09882),
        "us-central1": (0.38847, 0.12701),
        "us-east1": (0.38847, 0.12701),
        "us-east4": (0.43751, 0.09653),
        "us-east5": (0.38847, 0.14912),
        "us-south1": (0.4584, 0.12539),
        "us-west1": (0.38847, 0.12701),
        "us-west2": (0.46661, 0.12554),
        "us-west3": (0.466608, 0.168448),
        "us-west4": (0.437496, 0.18624),
    }
    # us-central1 per-vCPU and per-GB hour rates (CA predefinedCpuPricePerHour / predefinedMemoryPricePerHourPerGb)
    # and the Spot share (CA predefinedPreemptibleDiscount); a3 derived from SKY's a3-highgpu-1g row
    BASE = {
        "a2": (0.031611, 0.004237, 0.009483 / 0.031611),
        "g2": (0.024988, 0.002927, 0.007496 / 0.024988),
        "c2": (0.03398, 0.00455, 0.00822 / 0.03398),
        "c2d": (0.029563, 0.003959, 0.007154 / 0.029563),
        "c3": (0.03398, 0.00456, 0.003086 / 0.03398),
        "c3d": (0.02956, 0.003956, 0.011825 / 0.02956),
        "e2": (0.021811, 0.002923, 0.006543 / 0.021811),
        "n1": (0.031611, 0.004237, 0.006655 / 0.031611),
        "n2": (0.031611, 0.004237, 0.007650 / 0.031611),
        "n2d": (0.027502, 0.003686, 0.002773 / 0.027502),
        "n4": (0.030821, 0.004131, 0.007976 / 0.030821),
        "t2d": (0.027502, 0.003686, 0.006655 / 0.027502),
    }
    K = 1.18251 / (26 * 0.031611 + 234 * 0.004237)
    BASE["a3"] = (0.031611 * K, 0.004237 * K, 0.36117 / 1.18251)
    ref_od, ref_sp = N2["us-central1"]
    fams = {}
    for fam, (v, g, spot_share) in BASE.items():
        regs = {}
        for region, (od, sp) in N2.items():
            f, fs = od / ref_od, sp / ref_sp
            regs[region] = {
                "vcpu": round(v * f, 6),
                "gb": round(g * f, 7),
                "vcpu_spot": round(v * spot_share * fs, 6),
                "gb_spot": round(g * spot_share * fs, 7),
            }
        fams[fam] = {"regions": regs}
    fams["a3"]["note"] = (
        "derived: SKY a3-highgpu-1g us-central1 (1.18251, spot 0.36117; 26 vCPU, 234 GB) split "
        "in A2's vCPU:GB rate ratio; every A3 shape is a multiple of it"
    )
    gpus = {
        # us-central1 per GPU: L4 = SKY; A100 40/80GB = CA a2 instance price less the host (vCPU+GB at A2 rates),
        # Spot likewise; H100 = SKY us-east5 row (us-central1 at the us-east5/us-central1 N2 ratio, 1.0)
        "nvidia-l4": (0.56004, 0.2231, SKY, ""),
        "nvidia-tesla-a100": (
            round(3.673385 - 0.73948, 5),
            round(1.102016 - 0.73948 * 0.3, 5),
            CA,
            "derived: a2-highgpu-1g 3.673385 (spot 1.102016) less its host 0.73948 (spot x0.3)",
        ),
        "nvidia-a100-80gb": (
            round(5.0688 - 1.09962, 5),
            round(1.6 - 1.09962 * 0.3, 5),
            CA,
            "derived: a2-ultragpu-1g 5.0688 (spot 1.6) less its host 1.09962 (spot x0.3)",
        ),
        "nvidia-h100-80gb": (
            11.03385,
            2.4081,
            SKY,
            "SKY us-east5 row (N2 prices us-east5 as us-central1)",
        ),
    }
    gpu_out = {}
    for gpu, (od0, sp0, src, note) in gpus.items():
        regs = {}
        for region, (od, sp) in N2.items():
            regs[region] = {
                "on_demand": round(od0 * od / ref_od, 5),
                "spot": round(sp0 * sp / ref_sp, 5),
            }
        gpu_out[gpu] = {"source": src, "note": note, "regions": regs}
    tpus = {"v5e": (1.20, 0.24493), "v6e": (2.70, 0.54421)}
    tpu_out = {}
    for gen, (od0, sp0) in tpus.items():
        regs = {
            region: {"on_demand": round(od0 * od / ref_od, 5), "spot": round(sp0 * sp / ref_sp, 5)}
            for region, (od, sp) in N2.items()
        }
        tpu_out[gen] = {
            "source": SKY,
            "note": f"us-central1 row tpu-{gen}-1 (per chip)",
            "regions": regs,
        }
    exact = {  # rows read as they are from SKY: they take precedence over derived figures
        "machines": {
            "us-east5/e2-standard-8": [0.26804, 0.06054],
            "us-central1/e2-standard-8": [0.26804, 0.11758],
            "us-east5/n2-standard-8": [0.38847, 0.14912],
            "us-central1/n2-standard-8": [0.38847, 0.12701],
            "us-east5/n2-standard-16": [0.77694, 0.29824],
            "us-central1/g2-standard-4": [0.14679, 0.05874],
            "us-east5/a3-highgpu-8g": [10.65487, 2.32627],
        },
        "gpus": {
            "us-east5/nvidia-h100-80gb": [11.03385, 2.4081],
            "us-central1/nvidia-l4": [0.56004, 0.2231],
        },
        "tpus": {
            "us-east5/v6e": [2.70, 1.215],
            "us-central1/v6e": [2.70, 0.54421],
            "us-east5/v5e": [1.20, 0.60],
            "us-central1/v5e": [1.20, 0.24493],
            # SKY tpu-v6e-1 rows (per chip; rows with the 700.0 placeholder of unoffered capacity left out)
            "asia-northeast1/v6e": [3.24, 0.94352],
            "asia-south1/v6e": [3.24, 2.27],
            "asia-southeast1/v6e": [2.97, 0.36292],
            "europe-west4/v6e": [2.97, 1.03748],
            "us-east1/v6e": [2.7, 0.54421],
            "us-east4/v6e": [2.7, 0.57766],
            "us-south1/v6e": [2.7, 1.35],
            "us-west1/v6e": [2.7, 0.54421],
        },
    }
    doc = {
        "recorded": "2026-12-01",
        "currency": "USD",
        "unit": "per hour; machine families per vCPU and per GB of memory (GPUs of A2/A3/G2 excluded), GPUs per GPU, TPUs per chip",
        "generator": "python -m raygke.prices_refresh (Cloud Billing Catalog API); this file: python -m raygke.prices_seed (offline, from SKY and CA as described in derivation)",
        "sources": {
            "SKY": SKY,
            "CA": CA,
            "GCE": "https://cloud.google.com/compute/vm-instance-pricing",
            "GPU": "https://cloud.google.com/compute/gpus-pricing",
            "TPU": "https://cloud.google.com/tpu/pricing",
        },
        "derivation": [
            "Regional factor of a region = SKY's n2-standard-8 price there / its us-central1 price (on-demand and Spot separately; us-west3 and us-west4 from n2-standard-64 / 8).",
            "Machine family rates in a region = the family's us-central1 per-vCPU and per-GB rates (CA predefinedCpuPricePerHour, predefinedMemoryPricePerHourPerGb) x the regional factor; Spot = the family's CA Spot share x the on-demand rate x the regional Spot factor.",
            "GPU and TPU prices in a region = the us-central1 figure x the regional factor (derived; GCP prices accelerators per region on their own, so a refresh from the API replaces these).",
            "exact: rows read as they are from SKY, used instead of derived figures.",
            "Not priced (no figure in the sources): the C4 family, nvidia-h200-141gb (A3 Ultra), regions europe-north2 and northamerica-south1: raygke cost shows them as unknown.",
        ],
        "families": fams,
        "gpus": gpu_out,
        "tpus": tpu_out,
        "exact": exact,
    }
    return doc


def text() -> str:
    """The file's text: :func:`seed` as sorted, indented JSON."""
    return json.dumps(seed(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    OUT.write_text(text())
    print(f"wrote {OUT}", file=sys.stderr)
