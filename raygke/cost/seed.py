"""How the shipped ``raygke/cost/prices.json`` was seeded offline (no Billing API access): from the
figures of two cited sources, by the rules in the file's ``derivation``. ``python -m
raygke.cost.seed`` rewrites the file; a test checks the shipped file equals this output, so
every number in it is traceable to a source row or a stated derivation. With API access,
:mod:`raygke.cost.refresh` replaces it with SKU prices.

Sources (public files, read 2026-12-01): SKY = SkyPilot's GCP catalog (generated from the Cloud
Billing Catalog API), CA = Kubernetes cluster-autoscaler's GCE price table (us-central1 list
prices per vCPU and GB), GKE-CA = GKE's cluster-autoscaler machine table (A3 Mega, A4X instance
prices), SKU = a Cloud Billing SKU as captured from the Catalog API (TPU7x). Every accelerator
record (:data:`components.catalog.accelerators.ACCELERATORS`) must have a figure here or a
``not_priced`` reason: :func:`seed` raises otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from components.catalog import accelerators

OUT = Path(__file__).resolve().parent / "prices.json"


def seed() -> dict[str, Any]:
    """The price list document."""
    SKY = (
        "https://github.com/skypilot-org/skypilot-catalog/blob/"
        "006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv"
    )
    GKE_CA = (
        "https://github.com/GoogleCloudPlatform/cluster-autoscaler/blob/7d25050/"
        "pkg/cloudprovider/gke/machinetypes/deprecated_machine_types_config.go"
    )
    SKU = "https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list"
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
    # europe-north2 and northamerica-south1 have no N2 rows in SKY: their regional factor is SKY's
    # n4-standard-8 price there / its us-central1 price (0.3628, spot 0.1343), on-demand and Spot
    N4 = {
        "europe-north2": (0.38094, 0.15922),
        "northamerica-south1": (0.39545, 0.18814),
    }
    N4_REF = (0.3628, 0.1343)
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
    # regional factor (on-demand, Spot) of every region: N2 rows, or N4 rows where N2 has none
    factor = {r: (od / ref_od, sp / ref_sp) for r, (od, sp) in N2.items()}
    factor.update({r: (od / N4_REF[0], sp / N4_REF[1]) for r, (od, sp) in N4.items()})
    factor = dict(sorted(factor.items()))
    # C4 [SKY rows c4-highcpu-16 (16 vCPU, 32 GB) and c4-highmem-16 (16 vCPU, 124 GB)]: per region
    # (hc on-demand, hc Spot, hm on-demand, hm Spot); the two rows give the vCPU and GB rates
    C4 = {
        "africa-south1": (0.74921, 0.33562, 1.14813, 0.53507),
        "asia-east1": (0.78785, 0.3823, 1.20736, 0.58581),
        "asia-east2": (0.95183, 0.46179, 1.45865, 0.70752),
        "asia-northeast1": (0.87379, 0.4239, 1.33905, 0.64949),
        "asia-northeast2": (0.87379, 0.2272, 1.33905, 0.34818),
        "asia-northeast3": (0.87379, 0.28573, 1.33905, 0.4379),
        "asia-south1": (0.70763, 0.29414, 1.08442, 0.45073),
        "asia-south2": (0.70765, 0.32689, 1.08445, 0.50093),
        "asia-southeast1": (0.83943, 0.33576, 1.28639, 0.51453),
        "asia-southeast2": (0.91496, 0.23782, 1.40213, 0.36451),
        "australia-southeast2": (0.88454, 0.28429, 1.35553, 0.43554),
        "europe-central2": (0.82326, 0.22797, 1.26162, 0.34932),
        "europe-north1": (0.74921, 0.28028, 1.14813, 0.38405),
        "europe-north2": (0.71444, 0.35718, 1.09485, 0.54735),
        "europe-southwest1": (0.80289, 0.29822, 1.2304, 0.40328),
        "europe-west1": (0.74921, 0.37459, 1.14813, 0.57386),
        "europe-west2": (0.77567, 0.38784, 1.18869, 0.59438),
        "europe-west3": (0.80289, 0.32125, 1.2304, 0.49228),
        "europe-west4": (0.71444, 0.28577, 1.09485, 0.43791),
        "europe-west6": (0.89139, 0.38371, 1.36603, 0.58804),
        "europe-west9": (0.78928, 0.21738, 1.20955, 0.33311),
        "me-central1": (0.82671, 0.21488, 1.2669, 0.32942),
        "me-central2": (1.08867, 0.28042, 1.66834, 0.42973),
        "me-west1": (0.74846, 0.13549, 1.14698, 0.22878),
        "northamerica-northeast2": (0.74921, 0.37466, 1.14813, 0.57411),
        "northamerica-south1": (0.74165, 0.29665, 1.13656, 0.4546),
        "southamerica-east1": (1.08043, 0.36739, 1.65572, 0.56298),
        "southamerica-west1": (0.97299, 0.38919, 1.49108, 0.5964),
        "us-central1": (0.68042, 0.32397, 1.04271, 0.49638),
    }
    c4_rates = {}
    for region, (hc, hc_s, hm, hm_s) in C4.items():
        g, g_s = (hm - hc) / 92, (hm_s - hc_s) / 92
        c4_rates[region] = {
            "vcpu": round((hc - 32 * g) / 16, 8),
            "gb": round(g, 9),
            "vcpu_spot": round((hc_s - 32 * g_s) / 16, 8),
            "gb_spot": round(g_s, 9),
        }
        assert min(c4_rates[region].values()) > 0, region
    c4_us = c4_rates["us-central1"]
    fams = {}
    spot_rates = {  # us-central1 Spot (vCPU, GB) rates: the CA Spot share, C4 its own rows
        fam: (v * share, g * share) for fam, (v, g, share) in BASE.items()
    }
    BASE["c4"] = (c4_us["vcpu"], c4_us["gb"], 0.0)
    spot_rates["c4"] = (c4_us["vcpu_spot"], c4_us["gb_spot"])
    for fam, (v, g, _) in BASE.items():
        v_s, g_s = spot_rates[fam]
        regs = {}
        for region, (f, fs) in factor.items():
            if fam == "c4" and region in c4_rates:
                regs[region] = c4_rates[region]
                continue
            regs[region] = {
                "vcpu": round(v * f, 6),
                "gb": round(g * f, 7),
                "vcpu_spot": round(v_s * fs, 6),
                "gb_spot": round(g_s * fs, 7),
            }
        fams[fam] = {"regions": regs}
    fams["c4"]["source"] = f"{SKY} (c4-highcpu-16 and c4-highmem-16 rows)"
    fams["c4"]["note"] = (
        "rates of a region from SKY's c4-highcpu-16 and c4-highmem-16 rows there (two shapes, "
        "two unknowns); regions without both rows derived: the us-central1 rates (on-demand and "
        "Spot) x the regional factor"
    )
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
        # A3 Ultra: SKY's H200 x 8 us-central1 row (74.49392, spot 37.2472) / 8
        "nvidia-h200-141gb": (
            round(74.49392 / 8, 5),
            round(37.2472 / 8, 5),
            SKY,
            "SKY H200 x 8 us-central1 row / 8 (its asia-south1, asia-south2, europe-west1, "
            "europe-west4, us-east5 and us-south1 rows, 36.60258 with Spot above it or empty, "
            "are not used)",
        ),
        # A4: SKY's B200 x 8 us-central1 row (90.216, spot 32.6064) / 8
        "nvidia-b200": (
            round(90.216 / 8, 5),
            round(32.6064 / 8, 5),
            SKY,
            "SKY B200 x 8 us-central1 row / 8",
        ),
        # A3 Mega: GKE's autoscaler prices a3-megagpu-8g (with its 8 GPUs) 93.40, Spot 65.39;
        # less the A3 host of the same shape (208 vCPU, 1872 GB = 8 x a3-highgpu-1g's host:
        # 8 x 1.18251, Spot 8 x 0.36117), / 8
        "nvidia-h100-mega-80gb": (
            round((93.40 - 8 * 1.18251) / 8, 5),
            round((65.39 - 8 * 0.36117) / 8, 5),
            GKE_CA,
            "GKE cluster-autoscaler a3-megagpu-8g 93.40 (Spot 65.39) less its A3 host "
            "8 x 1.18251 (Spot 8 x 0.36117), / 8 GPUs; the Billing SKU 'Nvidia H100 80GB Plus "
            "GPU running in Americas' (billing family of A3 Mega) is 10.344275712, 1.4% below",
        ),
        # A4X: GKE's autoscaler prices a4x-highgpu-4g (host and 4 GPUs) 140.1, Spot 98.085,
        # marked "TODO(b/405041492): update pricing info when available" (the A4 and A3 Ultra
        # figures there are the same): the only figure found, a placeholder, not a list price
        "nvidia-gb200": (
            round(140.1 / 4, 5),
            round(98.085 / 4, 5),
            GKE_CA,
            "PLACEHOLDER, not a list price: GKE cluster-autoscaler a4x-highgpu-4g 140.1 (Spot "
            "98.085) / 4 GPUs, host included (A4X host not priced apart); the source marks it "
            "'TODO(b/405041492): update pricing info when available'; no GB200 Billing SKU or "
            "SKY row was found; a refresh from the API leaves GB200 unpriced (no SKU mapped)",
        ),
    }
    gpu_out = {}
    for gpu, (od0, sp0, src, note) in gpus.items():
        regs = {}
        for region, (f, fs) in factor.items():
            regs[region] = {"on_demand": round(od0 * f, 5), "spot": round(sp0 * fs, 5)}
        gpu_out[gpu] = {"source": src, "note": note, "regions": regs}
    # SKY tpu-v5p-11776 rows (11776 TensorCores = 5888 chips, 2 TensorCores a chip): per region
    # (on-demand, Spot) of the slice
    V5P = {
        "europe-west1": (26257.27104, 10502.90842),
        "europe-west4": (25038.72, 7939.90912),
        "us-central1": (24729.6, 4920.60749),
        "us-east1": (24729.6, 4920.60749),
        "us-east5": (24729.6, 9891.84),
        "us-south1": (28138.752, 7749.41466),
    }
    v5p = {r: [round(od / 5888, 5), round(sp / 5888, 5)] for r, (od, sp) in V5P.items()}
    tpus = {"v5e": (1.20, 0.24493), "v6e": (2.70, 0.54421), "v5p": tuple(v5p["us-central1"])}
    tpu_out: dict[str, Any] = {
        # Billing SKU 0F71-4391-B6CA "TPU7x running in Americas" (Compute Engine service,
        # resource group TPU), 12.00 USD per chip-hour on demand in its service regions, as
        # captured from the Cloud Billing Catalog API on 2026-06-14 in a public test fixture; no
        # Spot SKU for TPU7x was found (not_priced says so), so spot is null
        "tpu7x": {
            "source": SKU,
            "note": "Billing SKU 0F71-4391-B6CA 'TPU7x running in Americas' (per chip-hour, "
            "on-demand only; its service regions us-central1, us-east1, us-west1)",
            "regions": {
                r: {"on_demand": 12.0, "spot": None}
                for r in ("us-central1", "us-east1", "us-west1")
            },
        }
    }
    for gen, (od0, sp0) in tpus.items():
        regs = {
            region: {"on_demand": round(od0 * f, 5), "spot": round(sp0 * fs, 5)}
            for region, (f, fs) in factor.items()
        }
        tpu_out[gen] = {
            "source": SKY,
            "note": (
                "us-central1 row tpu-v5p-11776 / 5888 chips (per chip)"
                if gen == "v5p"
                else f"us-central1 row tpu-{gen}-1 (per chip)"
            ),
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
            # SKY a3-ultragpu-8g rows (A3 Ultra host, its 8 H200 apart)
            "asia-south1/a3-ultragpu-8g": [12.75664, 2.92129],
            "asia-south2/a3-ultragpu-8g": [14.73269, 3.36872],
            "europe-west1/a3-ultragpu-8g": [13.50609, 3.08825],
            "europe-west4/a3-ultragpu-8g": [12.8793, 2.94949],
            "us-central1/a3-ultragpu-8g": [12.266, 3.74713],
            "us-east4/a3-ultragpu-8g": [12.266, 2.80034],
            "us-east5/a3-ultragpu-8g": [13.81519, 3.01627],
            "us-south1/a3-ultragpu-8g": [14.47387, 3.15354],
            "us-west1/a3-ultragpu-8g": [12.266, 3.74713],
            # SKY c4-highmem-16 rows of regions whose c4-highcpu-16 row was not read
            "australia-southeast1/c4-highmem-16": [1.30339, 0.45568],
            "europe-west10/c4-highmem-16": [1.23034, 0.64227],
            "northamerica-northeast1/c4-highmem-16": [1.14813, 0.38405],
            "us-east1/c4-highmem-16": [1.04271, 0.49638],
            "us-east4/c4-highmem-16": [1.04271, 0.50592],
            "us-east5/c4-highmem-16": [1.04271, 0.47506],
            "us-west1/c4-highmem-16": [1.04271, 0.49638],
            "us-west2/c4-highmem-16": [1.25344, 0.52892],
            "us-west3/c4-highmem-16": [1.25344, 0.54272],
            "us-west4/c4-highmem-16": [1.17441, 0.58707],
        },
        "gpus": {
            "us-east5/nvidia-h100-80gb": [11.03385, 2.4081],
            "us-central1/nvidia-l4": [0.56004, 0.2231],
            # SKY H200 x 8 rows / 8 where Spot is below on-demand
            "us-central1/nvidia-h200-141gb": [9.31174, 4.6559],
            "us-east4/nvidia-h200-141gb": [9.31174, 3.6567],
            "us-west1/nvidia-h200-141gb": [9.31174, 4.6559],
            # SKY B200 x 8 rows / 8, as read
            "asia-northeast1/nvidia-b200": [8.055, 4.891],
            "asia-southeast1/nvidia-b200": [8.055, 4.4464],
            "europe-north1/nvidia-b200": [8.055, 4.4834],
            "europe-west4/nvidia-b200": [11.277, 4.4834],
            "us-central1/nvidia-b200": [11.277, 4.0758],
            "us-east1/nvidia-b200": [11.277, 4.0758],
            "us-east4/nvidia-b200": [8.055, 4.0758],
            "us-south1/nvidia-b200": [11.277, 4.0758],
            "us-west2/nvidia-b200": [8.055, 4.0758],
            "us-west3/nvidia-b200": [8.055, 4.0758],
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
            **{f"{r}/v5p": p for r, p in v5p.items()},
        },
    }
    doc = {
        "recorded": "2026-12-01",
        "currency": "USD",
        "unit": "per hour; machine families per vCPU and per GB of memory (GPUs of A2/A3/G2 excluded), GPUs per GPU, TPUs per chip",
        "generator": "python -m raygke.cost.refresh (Cloud Billing Catalog API); this file: python -m raygke.cost.seed (offline, from SKY and CA as described in derivation)",
        "sources": {
            "SKY": SKY,
            "CA": CA,
            "GKE-CA": GKE_CA,
            "SKU": SKU,
            "GCE": "https://cloud.google.com/compute/vm-instance-pricing",
            "GPU": "https://cloud.google.com/compute/gpus-pricing",
            "TPU": "https://cloud.google.com/tpu/pricing",
        },
        "derivation": [
            "Regional factor of a region = SKY's n2-standard-8 price there / its us-central1 price (on-demand and Spot separately; us-west3 and us-west4 from n2-standard-64 / 8).",
            "Machine family rates in a region = the family's us-central1 per-vCPU and per-GB rates (CA predefinedCpuPricePerHour, predefinedMemoryPricePerHourPerGb) x the regional factor; Spot = the family's CA Spot share x the on-demand rate x the regional Spot factor.",
            "GPU and TPU prices in a region = the us-central1 figure x the regional factor (derived; GCP prices accelerators per region on their own, so a refresh from the API replaces these).",
            "exact: rows read as they are from SKY, used instead of derived figures.",
            "Regional factor of europe-north2 and northamerica-south1 (SKY lists no N2 there) = SKY's n4-standard-8 price there / its us-central1 price (derived).",
            "C4 rates of a region = the vCPU and GB rates that SKY's c4-highcpu-16 (16 vCPU, 32 GB) and c4-highmem-16 (16 vCPU, 124 GB) rows there imply; regions without both rows: the us-central1 rates x the regional factor (derived).",
            "A3 Ultra (a3-ultragpu-8g): host from SKY's a3-ultragpu-8g rows (exact) or the A3 family rates (derived); nvidia-h200-141gb per GPU = SKY's H200 x 8 us-central1 row / 8 x the regional factor (derived), exact rows where SKY's Spot is below its on-demand.",
            "nvidia-b200 per GPU = SKY's B200 x 8 rows / 8 (exact where listed, else the us-central1 row x the regional factor, derived). TPU v5p per chip = SKY's tpu-v5p-11776 rows / 5888 chips (exact where listed, else us-central1 x the regional factor, derived).",
            "nvidia-h100-mega-80gb per GPU = GKE-CA's a3-megagpu-8g price less the A3 host (A3 family rates), / 8, x the regional factor (derived). nvidia-gb200 per GPU = GKE-CA's a4x-highgpu-4g placeholder price / 4, host included, x the regional factor (derived; a placeholder, see its note). TPU7x per chip = Billing SKU 0F71-4391-B6CA in its three service regions, on-demand only.",
            "not_priced: what no source prices, with the reason; raygke cost shows it as unknown.",
        ],
        "not_priced": {
            "families": {
                "a4": "SKY lists every a4-highgpu-8g row at 0.0 (no host SKU matched) and CA has no A4; the A4 host (vCPU, memory) is not priced, its B200 GPUs are",
                "a4x": "neither SKY nor CA lists a4x-highgpu-4g (A4X, Grace host); the nvidia-gb200 figure includes the host",
            },
            "gpus": {},
            "tpus": {
                "tpu7x": (
                    "Spot, and regions other than us-central1, us-east1 and us-west1: SKY's TPU "
                    "rows end at tpu-v6e, CA has no TPU prices, and no Spot TPU7x Billing SKU "
                    "was found; the on-demand price of the three regions is Billing SKU "
                    "0F71-4391-B6CA (tpus.tpu7x)"
                ),
            },
            "source": SKY,
        },
        "families": fams,
        "gpus": gpu_out,
        "tpus": tpu_out,
        "exact": exact,
    }
    # every accelerator record is priced or says why not (components.catalog.accelerators)
    for section, kind in (("gpus", "gpu"), ("tpus", "tpu")):
        for acc in accelerators(kind):
            if acc.name not in doc[section] and acc.name not in doc["not_priced"][section]:
                raise KeyError(f"{kind} {acc.name}: no seed figure and no not_priced reason")
    return doc


def text() -> str:
    """The file's text: :func:`seed` as sorted, indented JSON."""
    return json.dumps(seed(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    OUT.write_text(text())
    print(f"wrote {OUT}", file=sys.stderr)
