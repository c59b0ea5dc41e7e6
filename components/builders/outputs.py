"""Pure builders for the stack outputs that come from config alone (see ``docs/outputs.md``)."""

from __future__ import annotations

from typing import Any

from components.builders.nodepools import specs_for_pool
from components.spec import GpuPool, StackConfig, TpuPool


def accelerator_summary(cfg: StackConfig) -> dict[str, dict[str, Any]]:
    """Config pool name -> accelerator summary.

    Keys: ``kind`` (cpu|tpu|gpu), ``machine_type``, ``zones``, ``gke_node_pools`` (GKE pool names),
    and for TPU ``accelerator`` (GKE label), ``topology``, ``chips_per_host``, ``hosts_per_slice``,
    ``chips_per_slice``, ``max_slices``; for GPU ``accelerator``, ``gpus_per_node``, ``max_nodes``;
    for CPU ``max_nodes``.
    """
    out: dict[str, dict[str, Any]] = {}
    for p in cfg.node_pools:
        specs = specs_for_pool(cfg, p.name)
        row: dict[str, Any] = {
            "kind": p.kind,
            "machine_type": p.machine_type,
            "zones": specs[0].zones if specs else cfg.pool_zones(p),
            "gke_node_pools": [s.name for s in specs],
        }
        if isinstance(p, TpuPool):
            s = p.slice
            row.update(
                accelerator=s.generation.gke_accelerator,
                topology=s.topology,
                chips_per_host=s.chips_per_host,
                hosts_per_slice=s.hosts,
                chips_per_slice=s.chips,
                max_slices=p.max_slices,
            )
        elif isinstance(p, GpuPool):
            row.update(accelerator=p.gpu.type, gpus_per_node=p.gpu.count, max_nodes=p.max_nodes)
        else:
            row.update(max_nodes=p.max_nodes)
        out[p.name] = row
    return out
