"""TPU7x super-slicing: 4x4x4 cubes (:data:`CUBE`) stitched into larger slices by GKE's slice
controller, admitted through Kueue (:data:`MIN_GKE_VERSION`, :data:`CHANNEL`). The facts, each
with its source:
docs/sources.md#capacity-superslice
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

# The cube Topology is named by the flavor builder (on the plan floor); re-exported here.
from components.plan.flavors import SUPERSLICE_TOPOLOGY as TOPOLOGY

if TYPE_CHECKING:
    from components.config.capacity import CapacityConfig
    from components.config.cluster import ClusterConfig
    from components.config.nodepools import NodePool
    from components.config.raycrs import JobConfig
    from components.kernel.problems import Problem
    from components.nodepools.render import NodePoolSpec
    from components.plan.plan import Plan

CUBE = "4x4x4"
GENERATION = "tpu7x"
CUBE_HOSTS = 16
MIN_GKE_VERSION = "1.35.2-gke.1842000"
CHANNEL = "RAPID"
MIN_KUEUE_VERSION = (0, 15, 2)
PARTITION_LABEL = "cloud.google.com/gke-tpu-partition-4x4x4-id"
SLICE_TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"
SLICE_CONTROLLER = "accelerator.gke.io/slice"
SLICE_CHECK = "tpu-slice"
TOPOLOGIES = {
    TOPOLOGY: ("cloud.google.com/gce-topology-block", PARTITION_LABEL, "kubernetes.io/hostname")
}
DOC = "https://cloud.google.com/kubernetes-engine/docs/concepts/dynamic-slicing"


def tightest_level(spec: NodePoolSpec, pods: int) -> str:
    """The level that holds ``pods`` pods of a super-slicing pool: one host, one cube (16
    hosts), else one block (only cubes of one block form a slice)."""
    block, cube, host = TOPOLOGIES[TOPOLOGY]
    if pods <= 1:
        return host
    return cube if pods <= CUBE_HOSTS else block


def slice_cubes(topology: str) -> int:
    """The 4x4x4 cubes of a super-slice topology (``4x4x16`` -> 4)."""
    i, j, k = (int(d) // 4 for d in topology.split("x"))
    return i * j * k


def valid_topology(topology: str) -> str | None:
    """Why ``topology`` is not a super-slice topology (None: it is):
    :func:`components.catalog.tpu.super_slice_problem`."""
    from components.catalog.tpu import super_slice_problem

    return super_slice_problem(topology)


def super_slicing_pools(node_pools: Iterable[NodePool]) -> list[str]:
    """Names of the node pools of ``node_pools`` with ``super_slicing: true``."""
    return [p.name for p in node_pools if getattr(p, "super_slicing", False)]


def problems(
    p: Plan,
    node_pools: list[NodePool],
    jobs: list[JobConfig],
    cluster: ClusterConfig,
    capacity: CapacityConfig,
) -> Iterable[Problem]:
    """Where the catalog, the cluster or Kueue says a super-slicing pool cannot be, one problem
    each at the pool's ``super_slicing`` (or the cluster field to change); ``p`` the stack's
    Plan, the others its blocks (the stack rule ``super_slicing_supported``; sources: xpk,
    https://cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices)."""
    from components import catalog
    from components.kernel.problems import Problem

    yield from _super_slice_jobs(node_pools, jobs)
    pools = super_slicing_pools(node_pools)
    if not pools:
        return
    for name in pools:
        pool = next(n for n in node_pools if n.name == name)
        at = f"node_pools[{name}].super_slicing"
        gen, topo = pool.tpu.generation, pool.tpu.topology
        if gen != GENERATION or topo != CUBE:
            yield Problem(
                at,
                f"{at}: super-slicing stitches TPU7x 4x4x4 cubes (sub-blocks of 16 hosts); this "
                f"pool is {gen} {topo}: use tpu: {{generation: tpu7x, topology: 4x4x4}} ({DOC})",
                "super-slicing",
            )
        if pool.provisioning != "reservation":
            yield Problem(
                at,
                f"{at}: dynamic slicing provisions cubes from an All Capacity mode reservation; "
                f"provisioning is {pool.provisioning!r}: use provisioning: reservation with "
                f"reservation: <name> ({DOC})",
                "super-slicing",
            )
        if not any(f.pool == name for q in capacity.cluster_queues for f in q.flavors):
            yield Problem(
                at,
                f"{at}: super-slices are admitted by Kueue (TAS and the {SLICE_CONTROLLER} "
                "admission check): list the pool as a flavor of a capacity.cluster_queues entry",
                "super-slicing",
            )
    yield from _unqueued(p, set(pools))
    if cluster.release_channel != CHANNEL:
        yield Problem(
            "cluster.release_channel",
            f"cluster.release_channel {cluster.release_channel}: dynamic slicing (node_pools "
            f"{', '.join(pools)} super_slicing) needs the {CHANNEL} channel ({DOC})",
            "super-slicing",
        )
    version = cluster.min_master_version
    if version is None or catalog.parse_gke_version(version) < catalog.parse_gke_version(
        MIN_GKE_VERSION
    ):
        yield Problem(
            "cluster.min_master_version",
            f"cluster.min_master_version {version or 'unset'}: dynamic slicing needs GKE "
            f"{MIN_GKE_VERSION} or later; pin it ({DOC})",
            "super-slicing",
        )
    kueue = tuple(int(x) for x in capacity.kueue.version.split(".")[:3])
    if kueue < MIN_KUEUE_VERSION:
        yield Problem(
            "capacity.kueue.version",
            f"capacity.kueue.version {capacity.kueue.version}: super-slicing needs Kueue "
            "0.15.2 or later (xpk _SUPER_SLICING_MINIMUM_KUEUE_VERSION)",
            "super-slicing",
        )
    if capacity.topology == "off":
        yield Problem(
            "capacity.topology",
            "capacity.topology off: super-slicing pools are admitted by Topology Aware "
            "Scheduling; use required or preferred",
            "super-slicing",
        )


def _super_slice_jobs(node_pools: list[NodePool], jobs: list[JobConfig]) -> Iterable[Problem]:
    """``jobs[].super_slice`` only where it can be formed: a job with its own RayCluster
    (``node_pool``) on a super-slicing pool, a super-slice topology (:func:`valid_topology`)
    of no more cubes than the pool has (``max_slices``)."""
    from components.kernel.problems import Problem

    pools = {p.name: p for p in node_pools}
    for job in jobs:
        if job.super_slice is None:
            continue
        at = f"jobs[{job.name}].super_slice"
        pool = pools.get(job.node_pool or "")
        why = None
        if job.node_pool is None:
            why = (
                f"{job.super_slice!r} needs the job's own RayCluster: set node_pool to a "
                "super_slicing pool (a long-lived cluster's groups are cubes)"
            )
        elif pool is None:
            continue  # the undeclared pool is the resolver's problem, reported at node_pool
        elif not getattr(pool, "super_slicing", False):
            why = (
                f"{job.super_slice!r} needs a super_slicing TPU7x pool; node pool "
                f"{pool.name!r} is not one ({DOC})"
            )
        elif (bad := valid_topology(job.super_slice)) is not None:
            why = bad
        else:
            cubes = slice_cubes(job.super_slice)
            if cubes > pool.max_slices:
                why = (
                    f"{job.super_slice} is {cubes} cubes; node pool {pool.name!r} has "
                    f"{pool.max_slices} (max_slices): raise it, or ask for a smaller super-slice"
                )
        if why:
            yield Problem(at, f"{at}: {why}", "super-slicing")


def _unqueued(p: Plan, pools: set[str]) -> Iterable[Problem]:
    """A job or long-lived RayCluster on a super-slicing pool that no Kueue queue admits: its
    pods would get no slice annotations and no ``tpu-slice`` admission check, and the cubes are
    provisioned only (``PROVISION_ONLY``), so no slice would ever be formed for them."""
    from components.kernel.problems import Problem

    for t in p.jobs:
        queue = t.job.queue if t.cluster is None else t.cluster.queue
        if t.pool.name in pools and not queue:
            where = (
                f"jobs[{t.job.name}]" if t.cluster is None else f"ray_clusters[{t.cluster.name}]"
            )
            yield Problem(
                f"{where}.queue",
                f"{where}: runs on super-slicing pool {t.pool.name} with no queue; its slices "
                f"are formed only for Kueue-admitted pods (the {SLICE_CONTROLLER} admission "
                f"check, {DOC}): set queue: to a LocalQueue whose ClusterQueue lists the pool",
                "super-slicing",
            )
    for g in p.groups:
        if g.pool.name in pools and g.cluster is not None and not g.cluster.queue:
            where = f"ray_clusters[{g.cluster.name}]"
            yield Problem(
                f"{where}.queue",
                f"{where}: worker group on super-slicing pool {g.pool.name} with no queue; its "
                f"slices are formed only for Kueue-admitted pods ({DOC}): set queue:",
                "super-slicing",
            )
