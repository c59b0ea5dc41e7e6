"""Topology-aware placement: Kueue ``Topology`` objects (:data:`GPU_LEVELS`), the flavors that
name them (:data:`TAS_MACHINE_TYPES`, :data:`SUBBLOCK_NODES`), and the topology request of each
queued pod set (:func:`podset_topology`: the tightest level known to hold its pods, one pod per
node; ``required`` or ``preferred`` by ``capacity.topology``). Kueue's rules it follows, and
their sources: docs/sources.md#capacity-topology
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from components.config.nodepools import TpuPool

# The Topology a flavor names is part of the flavor, which the plan carries: its functions live
# with the flavor builder (on the plan floor) and are re-exported here.
from components.plan.flavors import GPU_TOPOLOGY as GPU_TOPOLOGY
from components.plan.flavors import TAS_MACHINE_TYPES as TAS_MACHINE_TYPES
from components.plan.flavors import flavor_topology as flavor_topology
from components.plan.flavors import pool_topology as pool_topology

if TYPE_CHECKING:
    from components.nodepools.render import NodePoolSpec
    from components.plan.resolve import Pool

BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
HOST = "cloud.google.com/gce-topology-host"
HOSTNAME = "kubernetes.io/hostname"
GPU_LEVELS = (BLOCK, SUBBLOCK, HOST, HOSTNAME)
SUBBLOCK_NODES = {"a4x-highgpu-4g": 18}
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
API_VERSION = "kueue.x-k8s.io/v1beta2"
DOC = "https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas"


def topology_levels(name: str) -> tuple[str, ...]:
    """The levels of Topology ``name`` (widest first).

    Raises:
        KeyError: not a topology this stack renders.
    """
    from components.capacity import superslice

    return {GPU_TOPOLOGY: GPU_LEVELS, **superslice.TOPOLOGIES}[name]


def tightest_level(spec: NodePoolSpec, pods: int) -> str:
    """The tightest level of the pool's topology known to hold ``pods`` pods, one per node."""
    from components.capacity import superslice

    if spec.super_slicing:  # its flavor names the super-slice topology (flavor.pool_topology)
        return superslice.tightest_level(spec, pods)
    if pods <= 1:
        return HOSTNAME
    if pods <= SUBBLOCK_NODES.get(spec.machine_type, 0):
        return SUBBLOCK
    return BLOCK


def podset_topology(spec: NodePoolSpec, pods: int, mode: str) -> dict[str, str]:
    """The pod template annotations of a queued worker group of ``pods`` pods on ``spec``:
    ``{required|preferred annotation: level}`` (:func:`tightest_level`), ``{}`` when the pool has
    no topology or ``mode`` is ``off``."""
    if mode == "off" or pool_topology(spec) is None:
        return {}
    key = REQUIRED if mode == "required" else PREFERRED
    return {key: tightest_level(spec, pods)}


def topology_object(name: str) -> dict[str, Any]:
    """The ``Topology`` ``name`` (``kueue.x-k8s.io/v1beta2``, the storage version of the carried
    v0.19.2 CRD)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/part-of": "ray-gke",
                "app.kubernetes.io/managed-by": "pulumi",
            },
        },
        "spec": {"levels": [{"nodeLabel": level} for level in topology_levels(name)]},
    }


def topology_objects(flavors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Topology per ``topologyName`` the rendered ``flavors`` name, in first-named order."""
    names: list[str] = []
    for f in flavors:
        name = (f.get("spec") or {}).get("topologyName")
        if name and name not in names:
            names.append(name)
    return [topology_object(n) for n in names]


def annotate_worker_groups(
    pool_specs: Mapping[str, Sequence[NodePoolSpec]],
    topology: str,
    cluster_spec: dict[str, Any],
    pools: Mapping[str, Pool],
) -> None:
    """Add :func:`podset_topology` to each worker group of a queued RayJob's ``rayClusterSpec``
    or a queued RayCluster's ``spec`` (in place): ``pools`` maps group name -> the resolved pool
    it renders from (a super-slice job's stitched pool, :meth:`TpuPool.stitched`),
    ``pool_specs`` config pool -> its GKE node pools (:attr:`components.plan.plan.Plan.pool_specs`),
    ``topology`` is ``capacity.topology``; the pod count is ``maxReplicas x numOfHosts`` (the
    most the group holds at once)."""
    for g in cluster_spec.get("workerGroupSpecs") or []:
        pool = pools.get(g["groupName"])
        specs = pool_specs.get(pool.name, ()) if pool is not None else ()
        if not specs:
            continue
        hosts = int(g.get("numOfHosts") or 1)
        pods = int(g.get("maxReplicas") or g.get("replicas") or 1) * hosts
        extra = podset_topology(specs[0], pods, topology)
        if extra and specs[0].super_slicing and isinstance(pool, TpuPool):
            extra.update(superslice_annotations(pool.slice.topology))
        if extra:
            meta = g["template"].setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **extra}


def superslice_annotations(topology: str) -> dict[str, str]:
    """The pod template annotations of a worker group on a super-slicing pool whose replicas
    are ``topology`` slices (a cube, ``4x4x4``, or a super-slice of several, ``4x4x8``): the
    slice topology GKE's slice controller forms (``cloud.google.com/gke-tpu-slice-topology``),
    and each cube's 16 pods in one cube (``kueue.x-k8s.io/podset-slice-required-topology`` at
    the cube level with ``kueue.x-k8s.io/podset-slice-size`` = 16, the hosts of a cube; a
    replica of several cubes is several such slices, its whole pod set in one block by the
    required topology). A slice size needs the slice topology and is 1 to the pod count (v0.19.2
    ``tas_validation.go`` ``ValidateTASPodSetRequest``, ``validateSliceSizeAnnotation``; GKE's
    ``ai-ml/gke-tpu-dynamic-slicing/big-super-slice.yaml``, xpk ``core/scheduling.py``
    ``create_tpu_slice_topology_annotation``)."""
    from components.capacity import superslice

    return {
        superslice.SLICE_TOPOLOGY_ANNOTATION: topology,
        SLICE_REQUIRED: superslice.PARTITION_LABEL,
        SLICE_SIZE: str(superslice.CUBE_HOSTS),
    }


def requested(annotations: Mapping[str, str]) -> tuple[str, str] | None:
    """``(mode, level)`` a pod template's annotations ask for (``required`` / ``preferred`` /
    ``unconstrained`` with level ``""``); None without a TAS request."""
    if REQUIRED in annotations:
        return "required", annotations[REQUIRED]
    if PREFERRED in annotations:
        return "preferred", annotations[PREFERRED]
    if annotations.get(UNCONSTRAINED, "").lower() == "true":
        return "unconstrained", ""
    return None


def slice_requested(annotations: Mapping[str, str]) -> tuple[str, int] | None:
    """``(level, pods per slice)`` a pod template asks each slice of to share (Kueue's
    ``podset-slice-required-topology`` with ``podset-slice-size``: a super-slice's 16 pods in one
    TPU7x cube); None without one or with a size that is not a positive integer (the webhook
    checks refuse those: :func:`annotation_problems`)."""
    level, size = annotations.get(SLICE_REQUIRED), annotations.get(SLICE_SIZE, "")
    if not level or not size.isdigit() or int(size) < 1:
        return None
    return level, int(size)


def tas_mismatch(
    request: tuple[str, str] | None, flavor: Mapping[str, Any], tas_only: bool
) -> str | None:
    """Why a pod set with TAS ``request`` cannot take ``flavor`` (None: it can), as Kueue v0.19.2
    ``checkPodSetAndFlavorMatchForTAS`` decides; ``tas_only``: every flavor of the ClusterQueue
    has a topology (an unannotated pod set is then implied to ask for TAS)."""
    name = (flavor.get("metadata") or {}).get("name", "?")
    topology = (flavor.get("spec") or {}).get("topologyName")
    if request is None and not tas_only:
        return f"flavor {name} supports only TopologyAwareScheduling" if topology else None
    if topology is None:
        return f"flavor {name} does not support TopologyAwareScheduling"
    if request is not None and request[1] and request[1] not in topology_levels(topology):
        return f"flavor {name} does not contain the requested level {request[1]}"
    return None
