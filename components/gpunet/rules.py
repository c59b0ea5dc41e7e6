"""The stack rules of GPU networking: refusals (registered in
:data:`components.stack.rules.RULES`) from :func:`components.gpunet.render.gpunet_problems` (an
RDMA pool outside its profile's zone, too small a ``network.gpu_cidr``) and a warning, which
``raygke check`` prints without failing (raygke/cli.py), for a multi-node GPU job on a family
whose GPU networking is turned off, and one per ``gpu_networking: gpudirect`` pool saying what
that choice grants (:func:`components.gpunet.gpudirect.gpudirect_grants`). The mismatch of
``gpu_networking`` and machine family (``tcpxo`` on ``a3-highgpu-8g``, ``gpudirect`` on a family
without GPUDirect-TCPX / -TCPXO) is refused by the field itself
(:class:`components.config.nodepools.GpuPool`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from components.catalog.gpu_network import gpu_net_family
from components.gpunet.gpudirect import gpudirect_grants as gpudirect_grants
from components.gpunet.render import gpunet_problems
from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.config.network import NetworkConfig
    from components.plan.plan import Plan
    from components.plan.resolve import Pool


def multi_node_jobs_without_gpu_networking(p: Plan) -> Iterable[Problem]:
    """Warn for each job whose Ray Train workers may span more than one node of a GPU pool
    whose family has GPU networking ([GCE-NET] in :mod:`components.catalog.gpu_network`) while
    the pool sets ``gpu_networking: off``: its NCCL all-reduce then crosses nodes over the
    primary NIC only (200 Gbps on A3 against 1,000-3,600 Gbps with the family's NICs). ``p``: the
    stack's Plan (its jobs' targets)."""
    for t in p.jobs:
        pool = t.pool
        if getattr(pool, "kind", "cpu") != "gpu" or t.replicas < 2:
            continue
        fam = gpu_net_family(pool.machine_type)
        if fam is None or pool.gpu_networking != "off":
            continue
        yield Problem(
            f"node_pools[{pool.name}].gpu_networking",
            f"node_pools[{pool.name}].gpu_networking 'off' while job {t.job.name!r} may run on "
            f"{t.replicas} nodes: {fam.family} ({fam.machine_type}) has {fam.kind} with "
            f"{fam.nics} GPU NICs ({fam.bandwidth_gbps} Gbps), so its all-reduce would cross "
            "nodes over the primary NIC alone; set gpu_networking: auto",
            "multi_node_jobs_without_gpu_networking",
            "warning",
        )


def gpu_networking_rules(
    node_pools: list[Pool], zones: list[str], network: NetworkConfig
) -> Iterable[Problem]:
    """Every GPU networking refusal of the stack (module docstring), from its ``node_pools``,
    ``zones`` and ``network`` blocks; the warnings are
    :func:`multi_node_jobs_without_gpu_networking`, which ``raygke check`` prints beside them
    (the stack rule ``gpu_networking``; facts in :mod:`components.catalog.gpu_network`)."""
    yield from gpunet_problems(node_pools, zones, network)
