"""Resolving declared pools to capacity: replicas a worker group may have, what NAP must allow."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from components.spec.base import vcpus_of
from components.spec.pools import CpuPool, GpuPool, TpuPool
from components.spec.ray import WorkerGroupConfig

if TYPE_CHECKING:
    from components.spec.stack import StackConfig


def pool_capacity(pool: CpuPool | TpuPool | GpuPool) -> int:
    """Most replicas a worker group on ``pool`` can have: slices for TPU pools, nodes otherwise."""
    return pool.max_slices if isinstance(pool, TpuPool) else pool.max_nodes


def group_max_replicas(pool: CpuPool | TpuPool | GpuPool, group: WorkerGroupConfig) -> int:
    """``maxReplicas`` of a worker group: its ``max_replicas``, else the pool's capacity (slices
    for TPU pools, nodes otherwise)."""
    return group.max_replicas if group.max_replicas is not None else pool_capacity(pool)


def nap_needs(cfg: StackConfig) -> dict[str, int]:
    """Resources the declared pools can scale to, keyed by NAP resource type.

    TPU and GPU types count chips / GPUs; ``cpu`` counts vCPUs of the pools whose machine type
    names its vCPU count (``n2-standard-8``), including the system pool.
    """
    needs: Counter[str] = Counter()
    for pool in cfg.node_pools:
        if isinstance(pool, TpuPool):
            s = pool.slice
            needs[s.generation.gke_accelerator] += s.chips * pool.max_slices
            needs["cpu"] += s.generation.host_vcpus[s.chips_per_host] * s.hosts * pool.max_slices
        elif isinstance(pool, GpuPool):
            g = pool.gpu
            needs[g.type] += g.count * pool.max_nodes
            needs["cpu"] += g.gpu.host_vcpus.get(g.count, 0) * pool.max_nodes
        else:
            needs["cpu"] += (pool.vcpus or 0) * pool.max_nodes
    sp = cfg.cluster.system_pool
    needs["cpu"] += (vcpus_of(sp.machine_type) or 0) * sp.max_nodes
    return dict(needs)
