"""What GKE and Compute Engine offer per accelerator machine series (flex-start, queued
provisioning, Spot, reservations, compact placement, GPU networking), each :class:`Cell` with its
source: :data:`FAMILY_CAPABILITIES` (the accelerator series' rows from the accelerator records,
:func:`capability_rows`) and :func:`capability_problem`, which the node-pool and ComputeClass
rules ask. Sources ([GCE-FLEX], [GKE-FLEX-START], [GKE-DWS-QUEUED], [GKE-SPOT],
[GKE-RESERVATIONS], [GKE-GPU-NET]): docs/sources.md#catalog-capabilities
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .accelerators import ACCELERATORS, Accelerator

CAPABILITIES = (
    "flex-start",
    "queued-provisioning",
    "spot",
    "reservations",
    "compact-placement",
    "gpu-networking",
)
GCE_FLEX = "https://cloud.google.com/compute/docs/instances/about-flex-start-vms"
GKE_FLEX = "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training"
GKE_QUEUED = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"
GKE_SPOT = "https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms"
GKE_TPUS = "https://cloud.google.com/kubernetes-engine/docs/concepts/tpus"
GKE_RESERVATIONS = "https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations"
GKE_TCPX = "https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx"
GKE_RDMA = "https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute"


@dataclass(frozen=True)
class Cell:
    """One capability of one machine series: ``offered`` True / False / None (not recorded),
    ``single_host_only`` (TPU: multi-host slices are not offered this way), ``note`` (what is
    offered, e.g. ``GPUDirect-TCPX``) and the ``source`` page."""

    offered: bool | None
    source: str = ""
    note: str = ""
    single_host_only: bool = False


_UNKNOWN = Cell(None)


def _gpu_row(flex: bool, net: Cell, spot: Cell = Cell(True, GKE_SPOT)) -> Mapping[str, Cell]:
    return {
        "flex-start": Cell(flex, GCE_FLEX, "" if flex else "excluded by Compute Engine"),
        # the queued pool is a flex-start pool: the same exclusion [GKE-DWS-QUEUED]
        "queued-provisioning": Cell(flex, GKE_QUEUED if flex else GCE_FLEX),
        "spot": spot,
        "reservations": Cell(True, GKE_RESERVATIONS),
        "compact-placement": _UNKNOWN,
        "gpu-networking": net,
    }


def _tpu_row() -> Mapping[str, Cell]:
    return {
        "flex-start": Cell(True, GKE_FLEX, single_host_only=True),
        "queued-provisioning": Cell(True, GKE_QUEUED),
        "spot": Cell(True, GKE_TPUS),
        "reservations": Cell(True, GKE_TPUS),
        # a multi-host slice's hosts are placed by its topology (GKE_TPUS), no placement policy
        "compact-placement": _UNKNOWN,
        "gpu-networking": Cell(False, GKE_TPUS, "TPU slices use ICI, not GPUDirect"),
    }


_NO_NET = Cell(False, GKE_TCPX, "no GPUDirect")
_KIND_NAMES = {"tcpx": "GPUDirect-TCPX", "tcpxo": "GPUDirect-TCPXO", "rdma": "GPUDirect RDMA"}
# Machine series the catalog offers no accelerator record for, recorded for the class fallbacks:
# G4 (RTX PRO 6000): flex-start excluded [GCE-FLEX], Spot and networking not recorded.
_SERIES_WITHOUT_RECORD: Mapping[str, Mapping[str, Cell]] = {
    "g4": _gpu_row(False, _UNKNOWN, spot=_UNKNOWN),
}


def _net_cell(records: list[Accelerator]) -> Cell:
    """The ``gpu-networking`` cell of a series from its records' GPUDirect kinds [GKE-GPU-NET]."""
    kinds = [(a.network, m) for a in records for m in a.network_machine_types]
    if not kinds:
        return _NO_NET
    tcp = any(k in ("tcpx", "tcpxo") for k, _ in kinds)
    note = ", ".join(f"{_KIND_NAMES[k]} ({m})" for k, m in kinds)
    return Cell(True, GKE_TCPX if tcp else GKE_RDMA, note)


def capability_rows(records: Iterable[Accelerator]) -> dict[str, Mapping[str, Cell]]:
    """Machine series -> capability -> cell, derived from accelerator records
    (:data:`components.catalog.accelerators.ACCELERATORS`): a GPU series from its records'
    ``flex_start``, ``spot`` and GPUDirect kinds, a TPU series the TPU row.

    Raises:
        ValueError: two records of one series disagree on flex-start or Spot.
    """
    by_series: dict[str, list[Accelerator]] = {}
    for a in records:
        for s in a.series:
            by_series.setdefault(s, []).append(a)
    rows: dict[str, Mapping[str, Cell]] = {}
    for series, recs in by_series.items():
        if {(a.kind, a.flex_start, a.spot) for a in recs} != {
            (recs[0].kind, recs[0].flex_start, recs[0].spot)
        }:
            raise ValueError(f"records of machine series {series} disagree: {recs}")
        a = recs[0]
        if a.kind == "tpu":
            rows[series] = _tpu_row()
            continue
        spot = Cell(True, GKE_SPOT) if a.spot else _UNKNOWN if a.spot is None else Cell(False)
        rows[series] = _gpu_row(a.flex_start, _net_cell(recs), spot=spot)
    return rows


# Machine series -> capability -> cell (sources: docs/sources.md#catalog-capabilities).
FAMILY_CAPABILITIES: Mapping[str, Mapping[str, Cell]] = {
    **capability_rows(ACCELERATORS.values()),
    **_SERIES_WITHOUT_RECORD,
}

# What the stack names a way of getting capacity -> the capability it needs.
PROVISIONING_CAPABILITY = {
    "flex-start": "flex-start",
    "queued": "queued-provisioning",
    "spot": "spot",
    "reservation": "reservations",
}


def machine_series(machine_type: str) -> str:
    """``a4x-highgpu-4g`` -> ``a4x``: the part before the first dash."""
    return machine_type.split("-", 1)[0]


def capability(machine_type: str, name: str) -> Cell:
    """The cell of capability ``name`` for ``machine_type``'s series; not recorded (a
    :class:`Cell` with ``offered`` None) for a series the table lacks (CPU series).

    Raises:
        KeyError: ``name`` is not one of :data:`CAPABILITIES`.
    """
    if name not in CAPABILITIES:
        raise KeyError(name)
    return FAMILY_CAPABILITIES.get(machine_series(machine_type), {}).get(name, _UNKNOWN)


def capability_problem(machine_type: str, name: str, multi_host: bool = False) -> str | None:
    """Why ``machine_type`` (a multi-host TPU slice when ``multi_host``) cannot get capacity by
    ``name``, citing the cell's source; None when the table offers it or does not record it.
    Asked by every rule on how a shape gets capacity: a node pool's ``provisioning``
    (:func:`components.capacity.rules.pool_problems`), a ComputeClass's ``fallback``
    (:func:`components.computeclass.rules.compute_class_fallback_capabilities`)."""
    cell = capability(machine_type, name)
    series = machine_series(machine_type)
    if cell.offered is False:
        why = f": {cell.note}" if cell.note else ""
        return f"{name} is not offered for the {series} machine series{why} ({cell.source})"
    if cell.offered and cell.single_host_only and multi_host:
        return (
            f"{name} without queueing takes single-host TPU slices only ({cell.source}); "
            f"a multi-host {series} slice needs queued provisioning: a provisioning: queued "
            "pool with a Kueue queue"
        )
    return None
