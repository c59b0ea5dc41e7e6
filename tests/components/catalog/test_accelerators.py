"""Every accelerator record (components/catalog/accelerators.py) has a price, a flavor rule and a
network kind, and the tables derived from it agree with it; the derivations are checked on a
made-up record too, so a record that lacks one of them is caught."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components import catalog
from components.catalog.accelerators import Accelerator
from components.plan import flavors
from raygke.cost import prices, refresh

FAKE = Accelerator(
    "gpu",
    "nvidia-made-up",
    {8: "zz9-highgpu-8g"},
    "rdma",
    network_machine_types=("zz9-highgpu-8g",),
    topology_blocks=("zz9-highgpu-8g",),
    flex_start=False,
    spot=None,
    price_skus=("Nvidia Made Up GPU",),
)


def priced(acc: Accelerator, data: dict) -> bool:
    """The price list has an on-demand price for ``acc`` in some region."""
    section = data["gpus" if acc.kind == "gpu" else "tpus"]
    regions = section.get(acc.name, {}).get("regions", {})
    return any((r.get("on_demand") or 0) > 0 for r in regions.values())


def flavor_of(acc: Accelerator, machine_type: str) -> dict:
    """The ResourceFlavor of a one-pool stack of ``machine_type`` (a stand-in node-pool spec)."""
    label = catalog.GPU_ACCELERATOR_LABEL if acc.kind == "gpu" else catalog.TPU_ACCELERATOR_LABEL
    spec = SimpleNamespace(
        kind=acc.kind,
        machine_type=machine_type,
        labels={label: acc.name},
        super_slicing=False,
        node_taints=(),
        queued=False,
    )
    return flavors.resource_flavor("pool", [spec], None, "required")


@pytest.mark.parametrize("name", list(catalog.ACCELERATORS))
def test_every_accelerator_has_a_price_a_flavor_rule_and_a_network_kind(name: str) -> None:
    acc = catalog.ACCELERATORS[name]
    # a price: an on-demand figure in the price list (not_priced may excuse Spot or regions only)
    assert priced(acc, prices.price_list()), name
    table = prices.GPU_PRICES if acc.kind == "gpu" else prices.TPU_CHIP_PRICES
    assert any(n == name and p.on_demand for (_, n), p in table.items()), name
    # a flavor rule: every machine type gets a flavor; the block topology iff topology_blocks
    for machine_type in acc.machine_types.values():
        f = flavor_of(acc, machine_type)["spec"]
        assert f["nodeLabels"], (name, machine_type)
        want = flavors.GPU_TOPOLOGY if machine_type in acc.topology_blocks else None
        assert f.get("topologyName") == want, (name, machine_type)
    # a network kind, the same in the GPU networking table and the capability row
    assert acc.network in catalog.NETWORK_KINDS, name
    assert (acc.network == "ici") == (acc.kind == "tpu"), name
    assert bool(acc.network_machine_types) == (acc.network not in ("none", "ici")), name
    from components.catalog.gpu_network import GPU_NET_FAMILIES

    for machine_type in acc.machine_types.values():
        fam = GPU_NET_FAMILIES.get(machine_type)
        if machine_type in acc.network_machine_types:
            assert fam is not None and fam.kind == acc.network, (name, machine_type)
        else:
            assert fam is None, (name, machine_type)
        cell = catalog.capability(machine_type, "gpu-networking")
        assert cell.offered is (acc.network not in ("none", "ici")), (name, machine_type)


def test_the_catalog_tables_are_the_records() -> None:
    """GPU_TYPES / TPU_GENERATIONS have exactly the records' names, and the tables derived from
    the records hold the documented machine types, SKU descriptions and TAS machine types
    (https://cloud.google.com/compute/docs/gpus, https://cloud.google.com/tpu/docs/v6e,
    https://cloud.google.com/kubernetes-engine/docs/concepts/about-topology-aware-scheduling)."""
    gpus = {a.name for a in catalog.accelerators("gpu")}
    tpus = {a.name for a in catalog.accelerators("tpu")}
    assert gpus == set(catalog.GPU_TYPES) and tpus == set(catalog.TPU_GENERATIONS)
    assert catalog.GPU_TYPES["nvidia-l4"].machine_types[1] == "g2-standard-4"
    assert catalog.GPU_TYPES["nvidia-h100-80gb"].machine_types[8] == "a3-highgpu-8g"
    assert catalog.TPU_GENERATIONS["v6e"].machine_types[8] == "ct6e-standard-8t"
    assert refresh.GPU_MODELS["Nvidia L4 GPU"] == "nvidia-l4"
    assert refresh.GPU_MODELS["A4 Nvidia B200 (1 gpu slice)"] == "nvidia-b200"
    assert refresh.TPU_SKU_GENERATIONS["TPU7x"] == "tpu7x"
    assert {"a3-megagpu-8g", "a4-highgpu-8g"} <= set(flavors.TAS_MACHINE_TYPES)
    assert "g2-standard-96" not in flavors.TAS_MACHINE_TYPES  # L4 nodes have no topology blocks
    assert set(refresh.TPU_SKU_GENERATIONS.values()) == tpus
    # the SKU maps cover every record except GB200, whose SKU description no source gave
    assert gpus - set(refresh.GPU_MODELS.values()) == {"nvidia-gb200"}


def test_the_derivations_take_a_new_record() -> None:
    """A made-up record reaches the capability rows, the TAS machine types and the refresher's
    SKU map, and the price check catches that the price list lacks it."""
    records = [*catalog.ACCELERATORS.values(), FAKE]
    rows = catalog.capability_rows(records)
    assert rows["zz9"]["flex-start"].offered is False
    assert rows["zz9"]["spot"].offered is None
    assert rows["zz9"]["gpu-networking"].offered is True
    assert "GPUDirect RDMA (zz9-highgpu-8g)" in rows["zz9"]["gpu-networking"].note
    assert "zz9-highgpu-8g" in catalog.topology_block_machine_types(records)
    assert catalog.sku_names("gpu", records)["Nvidia Made Up GPU"] == FAKE.name
    assert not priced(FAKE, prices.price_list())
    data = {"gpus": {FAKE.name: {"regions": {"us-central1": {"on_demand": 1.0, "spot": 0.5}}}}}
    assert priced(FAKE, data)
    # the refresher maps its SKU (Spot wording and place stripped) to it
    sku = {
        "description": "Spot Preemptible Nvidia L4 GPU running in Netherlands",
        "category": {
            "resourceFamily": "Compute",
            "resourceGroup": "GPU",
            "usageType": "Preemptible",
        },
        "serviceRegions": ["europe-west4"],
        "pricingInfo": [{"pricingExpression": {"tieredRates": [{"unitPrice": {"nanos": 5e8}}]}}],
    }
    assert refresh.sku_stem(sku["description"]) == "Nvidia L4 GPU"
    assert refresh.parse_skus([sku])["gpus"]["nvidia-l4"]["regions"] == {}  # Spot only
    tpu = {
        **sku,
        "description": "TPU7x running in Americas",
        "category": {"resourceFamily": "Compute", "resourceGroup": "TPU", "usageType": "OnDemand"},
    }
    assert "tpu7x" in refresh.parse_skus([tpu])["tpus"]


def test_records_of_one_series_must_agree() -> None:
    """Two records of one machine series with different capacity options are refused."""
    other = Accelerator("gpu", "nvidia-other", {1: "zz9-highgpu-1g"}, "none", flex_start=True)
    with pytest.raises(ValueError, match="zz9"):
        catalog.capability_rows([FAKE, other])
