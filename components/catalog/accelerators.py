"""One record per accelerator (GPU type, TPU generation): the facts the capability table, the
Kueue flavors, the price list and its refresher derive from, so a new accelerator is one entry
of :data:`ACCELERATORS`. The workload-facing figures (memory, peak bf16, Ray accelerator type)
stay in :mod:`contract.accelerators`. What derives from it, and the sources:
docs/sources.md#catalog-accelerators
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# GPUDirect kinds of GPU machines [GCE-NET], ``none`` for GPUs without, ``ici`` for TPU slices.
NETWORK_KINDS = ("none", "tcpx", "tcpxo", "rdma", "ici")


@dataclass(frozen=True)
class Accelerator:
    """One GPU type or TPU generation.

    Attributes:
        kind: ``gpu`` or ``tpu``.
        name: GKE GPU type (``nvidia-h100-80gb``) or the stack's TPU generation (``v6e``): the key
            of :data:`components.catalog.GPU_TYPES` / ``TPU_GENERATIONS`` and of
            ``raygke/cost/prices.json``'s ``gpus`` / ``tpus``.
        machine_types: GPUs (chips) per VM -> the default machine type with that many [GCE-AO],
            [TPU]; their first dash-separated parts are the machine series (:attr:`series`).
        network: one of :data:`NETWORK_KINDS` [GCE-NET].
        network_machine_types: the machine types that have :attr:`network` (GPUDirect only on
            the 8-GPU A3 High, for instance); empty for ``none`` and ``ici``.
        topology_blocks: machine types whose nodes carry the block / sub-block labels of
            Topology Aware Scheduling [GKE-TAS].
        flex_start: flex-start (and the queued pools built on it) is offered for its machine
            series [GCE-FLEX].
        spot: Spot VMs are offered (True), not offered (False) or not recorded (None).
        price_skus: Cloud Billing SKU descriptions that price one GPU / chip-hour, without the
            `` running in <place>`` tail and the Spot wording [SKU]; empty when none is known.
        source: the page the record's machine types come from.
    """

    kind: str
    name: str
    machine_types: Mapping[int, str]
    network: str
    network_machine_types: tuple[str, ...] = ()
    topology_blocks: tuple[str, ...] = ()
    flex_start: bool = True
    spot: bool | None = True
    price_skus: tuple[str, ...] = ()
    source: str = ""

    @property
    def series(self) -> tuple[str, ...]:
        """The machine series of :attr:`machine_types`, in order (``a3-highgpu-8g`` -> ``a3``)."""
        return tuple(dict.fromkeys(m.split("-", 1)[0] for m in self.machine_types.values()))


_AO = "https://cloud.google.com/compute/docs/accelerator-optimized-machines"

ACCELERATORS: Mapping[str, Accelerator] = {
    a.name: a
    for a in (
        Accelerator(
            "gpu",
            "nvidia-l4",
            {1: "g2-standard-4", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
            "none",
            price_skus=("Nvidia L4 GPU",),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-tesla-a100",
            {
                1: "a2-highgpu-1g",
                2: "a2-highgpu-2g",
                4: "a2-highgpu-4g",
                8: "a2-highgpu-8g",
                16: "a2-megagpu-16g",
            },
            "none",
            price_skus=("Nvidia Tesla A100 GPU",),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-a100-80gb",
            {1: "a2-ultragpu-1g", 2: "a2-ultragpu-2g", 4: "a2-ultragpu-4g", 8: "a2-ultragpu-8g"},
            "none",
            price_skus=("Nvidia Tesla A100 80GB GPU",),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-h100-80gb",
            {1: "a3-highgpu-1g", 2: "a3-highgpu-2g", 4: "a3-highgpu-4g", 8: "a3-highgpu-8g"},
            "tcpx",
            network_machine_types=("a3-highgpu-8g",),
            topology_blocks=("a3-highgpu-8g",),
            price_skus=("Nvidia H100 80GB GPU",),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-h100-mega-80gb",
            {8: "a3-megagpu-8g"},
            "tcpxo",
            network_machine_types=("a3-megagpu-8g",),
            topology_blocks=("a3-megagpu-8g",),
            price_skus=("Nvidia H100 80GB Mega GPU", "Nvidia H100 80GB Plus GPU"),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-h200-141gb",
            {8: "a3-ultragpu-8g"},
            "rdma",
            network_machine_types=("a3-ultragpu-8g",),
            topology_blocks=("a3-ultragpu-8g",),
            # the older "Nvidia ..." wording kept: an API answer may use either
            price_skus=("H200 141GB GPU", "Nvidia H200 141GB GPU"),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-b200",
            {8: "a4-highgpu-8g"},
            "rdma",
            network_machine_types=("a4-highgpu-8g",),
            topology_blocks=("a4-highgpu-8g",),
            price_skus=("A4 Nvidia B200 (1 gpu slice)",),
            source=_AO,
        ),
        Accelerator(
            "gpu",
            "nvidia-gb200",
            {4: "a4x-highgpu-4g"},
            "rdma",
            network_machine_types=("a4x-highgpu-4g",),
            topology_blocks=("a4x-highgpu-4g",),
            flex_start=False,
            spot=None,
            price_skus=(),  # no SKU description found [SKU]
            source=_AO,
        ),
        Accelerator(
            "tpu",
            "v5e",
            {1: "ct5lp-hightpu-1t", 4: "ct5lp-hightpu-4t", 8: "ct5lp-hightpu-8t"},
            "ici",
            price_skus=("TpuV5e", "v5e", "v5 lite"),
            source="https://cloud.google.com/tpu/docs/v5e",
        ),
        Accelerator(
            "tpu",
            "v6e",
            {1: "ct6e-standard-1t", 4: "ct6e-standard-4t", 8: "ct6e-standard-8t"},
            "ici",
            price_skus=("TpuV6e", "v6e", "Trillium"),
            source="https://cloud.google.com/tpu/docs/v6e",
        ),
        Accelerator(
            "tpu",
            "v5p",
            {4: "ct5p-hightpu-4t"},
            "ici",
            price_skus=("TpuV5p", "v5p"),
            source="https://cloud.google.com/tpu/docs/v5p",
        ),
        Accelerator(
            "tpu",
            "tpu7x",
            {4: "tpu7x-standard-4t"},
            "ici",
            price_skus=("TPU7x",),
            source="https://cloud.google.com/tpu/docs/tpu7x",
        ),
    )
}


def accelerators(kind: str, records: Iterable[Accelerator] | None = None) -> list[Accelerator]:
    """The records of one ``kind`` (``gpu`` / ``tpu``), of ``records`` (default: all)."""
    return [a for a in (ACCELERATORS.values() if records is None else records) if a.kind == kind]


def topology_block_machine_types(records: Iterable[Accelerator] | None = None) -> frozenset[str]:
    """Every machine type whose nodes carry the Topology Aware Scheduling block labels."""
    recs = ACCELERATORS.values() if records is None else records
    return frozenset(m for a in recs for m in a.topology_blocks)


def sku_names(kind: str, records: Iterable[Accelerator] | None = None) -> dict[str, str]:
    """Billing SKU description (:attr:`Accelerator.price_skus`) -> accelerator name."""
    return {sku: a.name for a in accelerators(kind, records) for sku in a.price_skus}


def network_kind(machine_type: str) -> str:
    """The GPUDirect kind of a GPU machine type (``a3-megagpu-8g`` -> ``tcpxo``), ``none``
    when it has none, ``ici`` for a TPU machine type [GCE-NET].

    Raises:
        KeyError: no record lists the machine type.
    """
    for a in ACCELERATORS.values():
        if machine_type in a.machine_types.values():
            if a.kind == "tpu":
                return "ici"
            return a.network if machine_type in a.network_machine_types else "none"
    raise KeyError(machine_type)
