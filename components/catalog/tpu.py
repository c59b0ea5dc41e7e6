"""TPU generations and slices: one declared ``generation`` + ``topology`` gives the node pool's
machine type, node labels and taint, the KubeRay worker group's ``numOfHosts`` and requests, and
the Ray Train ``ScalingConfig`` arguments. The workload-facing facts (Ray accelerator type, pod
type prefix, HBM, peak bf16) come from :mod:`contract.accelerators`, their one copy. The zone
lists are not complete (Google adds zones); a pool may set ``allow_unlisted_zone``.

Sources (the tags [TPU-V5E], [TPU-V6E], [TPU-V5P], [TPU-7X], [TPU-ZONES], [GKE-TPU],
[KUBERAY-TPU], [RAY-TPU] cited below; [NAP] is :mod:`components.catalog.gke`'):
docs/sources.md#catalog-tpu
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.accelerators import TPUS

from .accelerators import ACCELERATORS
from .labels import TPU_ACCELERATOR_LABEL, TPU_TAINT, TPU_TOPOLOGY_LABEL, CatalogError, Taint


@dataclass(frozen=True)
class TpuGeneration:
    """One TPU generation as GKE and Ray name it.

    Attributes:
        name: the short name used in stack config (``v5e``, ``v6e``).
        gke_accelerator: value of ``cloud.google.com/gke-tpu-accelerator`` and the NAP resource type
            [GKE-TPU], [NAP].
        ray_accelerator_type: Ray's accelerator type for ``ScalingConfig(accelerator_type=...)`` [RAY-TPU].
        pod_type_prefix: prefix of the TPU pod type (``v6e`` -> ``v6e-16``) [RAY-TPU].
        machine_types: chips per host -> Compute Engine machine type [TPU-V5E], [TPU-V6E].
        hbm_gb: high-bandwidth memory per chip, GB.
        peak_bf16_tflops: peak dense bf16 throughput per chip, TFLOP/s.
        min_gke_version: minimum GKE version for node pools of this generation [GKE-TPU]: the
            oldest one where a page states it, else a sourced version that supports it (v5p).
        zones: zones offering this generation [TPU-ZONES] (not complete).
        vcpus_per_chip / memory_gb_per_chip: host CPU and memory per chip of the 4-chip machine type
            (allocatable is lower; used for request sanity checks).
        topologies: topology -> chips of the slices GKE offers for this generation (2-D for
            v5e/v6e, 3-D ``AxBxC`` for v5p/TPU7x) [TPU-V5E], [TPU-V6E], [TPU-V5P], [TPU-7X].
        tensorcores_per_chip: TensorCores per chip; TPU pod types count TensorCores, so a
            4-chip v5p slice is ``v5p-8`` (Ray ``SINGLE_CORE_TPU_TYPES`` in
            ``ray/_private/accelerators/tpu.py``: v5e and v6e have one, v5p and v7x two).
        workload_policy: multi-host slices are placed by a Compute Engine workload-policy
            resource policy (``HIGH_THROUGHPUT`` with the slice's ``accelerator_topology``)
            named by the node pool's ``placement_policy.policy_name``, instead of COMPACT +
            ``tpu_topology`` [TPU-7X].
        docs: the generation's documentation page.
    """

    name: str
    gke_accelerator: str
    ray_accelerator_type: str
    pod_type_prefix: str
    machine_types: Mapping[int, str]
    hbm_gb: int
    peak_bf16_tflops: float
    min_gke_version: str
    zones: tuple[str, ...]
    host_vcpus: Mapping[int, int]
    host_memory_gb: Mapping[int, int]
    topologies: Mapping[str, int] = None  # type: ignore[assignment]  # None: TPU_TOPOLOGIES
    tensorcores_per_chip: int = 1
    workload_policy: bool = False
    docs: str = ""

    def __post_init__(self) -> None:
        if self.topologies is None:
            object.__setattr__(self, "topologies", TPU_TOPOLOGIES)


def _topologies_3d(*names: str) -> dict[str, int]:
    """``"2x2x1"`` -> 4 chips: the product of the dimensions."""
    out = {}
    for name in names:
        a, b, c = (int(d) for d in name.split("x"))
        out[name] = a * b * c
    return out


# 3-D topologies of v5p [TPU-V5P] and TPU7x [TPU-7X], each one Ray 2.60 accepts
# (``VALID_TPU_TOPOLOGY`` in ray/_private/accelerators/tpu.py; tests/components/catalog/test_tpu.py
# checks the catalog against the installed Ray). 2x2x1 is the single-host slice (4 chips, one
# VM); every larger one is multi-host with 4 chips per host.
TPU_3D_TOPOLOGIES: Mapping[str, int] = _topologies_3d(
    "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16"
)
V5P_TOPOLOGIES: Mapping[str, int] = {
    **TPU_3D_TOPOLOGIES,
    **_topologies_3d("16x16x16", "16x16x24"),
}


# Topology -> chips in the slice. Single-host topologies map to 1-, 4- and 8-chip machine types;
# multi-host topologies use the 4-chip machine type, hosts = chips / 4 [TPU-V5E], [TPU-V6E], [GKE-TPU].
TPU_TOPOLOGIES: Mapping[str, int] = {
    "1x1": 1,
    "2x2": 4,
    "2x4": 8,
    "4x4": 16,
    "4x8": 32,
    "8x8": 64,
    "8x16": 128,
    "16x16": 256,
}
MULTI_HOST_CHIPS_PER_HOST = 4
# Compute Engine resource-policy type of the workload policy TPU7x multi-host pools use [TPU-7X].
WORKLOAD_POLICY_TYPE = "HIGH_THROUGHPUT"


def _generation(name: str, **infra: Any) -> TpuGeneration:
    """A generation: the workload-facing facts of :data:`contract.accelerators.TPUS` (Ray
    accelerator type, pod type prefix, HBM, peak, TensorCores), the machine types of its record
    in :data:`components.catalog.accelerators.ACCELERATORS`, plus the infrastructure facts
    given here (GKE label, zones, GKE version, host shapes, topologies)."""
    f = TPUS[name]
    return TpuGeneration(
        name=name,
        machine_types=ACCELERATORS[name].machine_types,
        ray_accelerator_type=f.ray_accelerator_type,
        pod_type_prefix=f.pod_type_prefix,
        hbm_gb=f.hbm_gb,
        peak_bf16_tflops=f.peak_bf16_tflops,
        tensorcores_per_chip=f.tensorcores_per_chip,
        **infra,
    )


TPU_GENERATIONS: Mapping[str, TpuGeneration] = {
    "v5e": _generation(
        "v5e",
        gke_accelerator="tpu-v5-lite-podslice",
        min_gke_version="1.27.2-gke.2100",
        zones=(
            "us-central1-a",
            "us-south1-a",
            "us-west1-c",
            "us-west4-a",
            "us-east1-c",
            "us-east5-b",
            "europe-west4-b",
            "asia-southeast1-b",
        ),
        host_vcpus={1: 24, 4: 112, 8: 224},
        host_memory_gb={1: 48, 4: 192, 8: 400},
        docs="https://cloud.google.com/tpu/docs/v5e",
    ),
    "v6e": _generation(
        "v6e",
        gke_accelerator="tpu-v6e-slice",
        min_gke_version="1.31.2-gke.1115000",
        zones=(
            "us-central1-b",
            "us-east1-d",
            "us-east5-a",
            "us-east5-b",
            "europe-west4-a",
            "asia-northeast1-b",
            "us-south1-a",
        ),
        host_vcpus={1: 44, 4: 180, 8: 180},
        host_memory_gb={1: 448, 4: 720, 8: 1440},
        docs="https://cloud.google.com/tpu/docs/v6e",
    ),
    "v5p": _generation(
        "v5p",
        gke_accelerator="tpu-v5p-slice",
        # No Google page in this session's indexes states a minimum GKE version for v5p node
        # pools (searched: "TPU v5p GKE version", "ct5p-hightpu-4t GKE version", GKE's
        # plan-tpus availability table, GKE release notes; the 1.28.3-gke.1024000 recorded
        # before had no source and is dropped). 1.28.3-gke.1286000 is a version that certainly
        # supports v5p: xpk, Google's TPU cluster tool, raised its default cluster version to it
        # when it added v5p ("Add v5p support and increase the GKE default version to support
        # it", AI-Hypercomputer/xpk @4c93fa58 xpk.py: default_gke_version="1.28.3-gke.1286000").
        # It is not stated to be the oldest; an older cluster is refused by this check.
        min_gke_version="1.28.3-gke.1286000",
        # us-central1-a and us-east5-a are confirmed by TPU regions and zones
        # (https://docs.cloud.google.com/tpu/docs/types-zones, North America: "All v5p
        # configurations ... us-central1-a, us-east5-a"). europe-west4-b: the Europe rows of
        # that page were cut off in the search index; SkyPilot's GCP catalog lists v5p slices
        # there (skypilot-org/skypilot-catalog @006059e0 catalogs/v8/gcp/vms.csv, rows such as
        # ",,,tpu-v5p-12288,1,tpu-v5p-12288,europe-west4,europe-west4-b,..."), and `gcloud compute
        # machine-types list` by region lists ct5p-hightpu-4t in europe-west4
        # (Cyclenerd/google-cloud-pricing-cost-calculator @dac3128 tools/machinetyperegion.csv).
        zones=("us-east5-a", "us-central1-a", "europe-west4-b"),
        # 208 vCPUs, 448 GB RAM per 4-chip VM; 95 GiB HBM and 459 bf16 TFLOP/s per chip:
        # https://docs.cloud.google.com/tpu/docs/v5p (specifications table).
        host_vcpus={4: 208},
        host_memory_gb={4: 448},
        topologies=V5P_TOPOLOGIES,
        docs="https://cloud.google.com/tpu/docs/v5p",
    ),
    "tpu7x": _generation(
        "tpu7x",
        gke_accelerator="tpu7x",
        min_gke_version="1.34.0-gke.2201000",
        # min_gke_version (GKE Standard): https://docs.cloud.google.com/kubernetes-engine/docs/
        # concepts/tpu-ironwood ("Availability"). Zone us-central1-c confirmed by TPU regions and
        # zones (https://docs.cloud.google.com/tpu/docs/types-zones, North America: "All TPU7x
        # configurations ... us-central1-c"); the page's markdown copy (regions-zones.md.txt)
        # also lists the AI zone us-central1-ai1a, which locations.zone_problem does not
        # accept yet (allow_unlisted_zone).
        zones=("us-central1-c",),
        # 224 vCPUs, 960 GB RAM per 4-chip VM; 192 GiB HBM and 2307 bf16 TFLOP/s per chip:
        # https://docs.cloud.google.com/tpu/docs/tpu7x (specifications table, re-read this
        # session). GKE's cluster autoscaler records tpu7x-standard-4t as 224 vCPUs / 992 GiB
        # and also a 1-chip tpu7x-standard-1t (56 vCPUs, 248 GiB; xpk: topology 1x1x1)
        # (GoogleCloudPlatform/cluster-autoscaler @7d25050 deprecated_machine_types_config.go);
        # the catalog keeps the TPU page's 960 and the 4-chip machine type only.
        host_vcpus={4: 224},
        host_memory_gb={4: 960},
        topologies=TPU_3D_TOPOLOGIES,
        workload_policy=True,
        docs="https://cloud.google.com/tpu/docs/tpu7x",
    ),
}


def tpu_generation(name: str) -> TpuGeneration:
    """The catalog entry for a TPU generation.

    Raises:
        CatalogError: unknown generation; the message lists the known ones.
    """
    try:
        return TPU_GENERATIONS[name]
    except KeyError:
        raise CatalogError(
            f"TPU generation {name!r} is not in the catalog; valid: {', '.join(TPU_GENERATIONS)}"
        ) from None


SUPER_SLICE_MAX_CUBES = 144
"""The most 4x4x4 cubes one TPU7x super-slice stitches (9,216 chips): GKE's Slice resource
(https://cloud.google.com/kubernetes-engine/docs/reference/crds/slice); xpk
``_SUPER_SLICING_MAX_CUBES``."""


def super_slice_problem(topology: str) -> str | None:
    """Why ``topology`` is not a TPU7x super-slice topology (None: it is): any ``AxBxC`` whose
    sides are multiples of 4, written in ascending order, of at most
    :data:`SUPER_SLICE_MAX_CUBES` cubes, as GKE's Slice resource takes it (``spec.topology``,
    https://cloud.google.com/kubernetes-engine/docs/reference/crds/slice; xpk
    ``core/scheduling.py`` ``_check_super_slicing_topology`` checks the same), not only the
    topologies a TPU7x node pool is created with."""
    try:
        dims = [int(d) for d in topology.split("x")]
    except ValueError:
        dims = []
    if len(dims) != 3 or any(d < 4 or d % 4 for d in dims):
        return f"{topology!r} is not 4i x 4j x 4k with i <= j <= k (whole 4x4x4 cubes)"
    if dims != sorted(dims):
        ordered = "x".join(map(str, sorted(dims)))
        return f"{topology!r} is not 4i x 4j x 4k with i <= j <= k: write {ordered}"
    cubes = (dims[0] // 4) * (dims[1] // 4) * (dims[2] // 4)
    if cubes > SUPER_SLICE_MAX_CUBES:
        return f"{topology!r} is {cubes} cubes; a super-slice has at most {SUPER_SLICE_MAX_CUBES}"
    return None


@dataclass(frozen=True)
class TpuSlice:
    """One TPU slice (``generation`` x ``topology``) and everything derived from it.

    All derived values are properties so there is exactly one place each is computed.
    """

    generation: TpuGeneration
    topology: str

    @property
    def chips(self) -> int:
        """Chips in the slice (product of the topology's dimensions; a TPU7x super-slice's
        topology need not be one the catalog lists, :func:`super_slice_problem`)."""
        listed = self.generation.topologies.get(self.topology)
        return listed if listed is not None else math.prod(map(int, self.topology.split("x")))

    @property
    def hosts(self) -> int:
        """TPU VM hosts (= Kubernetes nodes = KubeRay ``numOfHosts``) in one slice."""
        return (
            1
            if self.chips <= max(self.generation.machine_types)
            else self.chips // MULTI_HOST_CHIPS_PER_HOST
        )

    @property
    def chips_per_host(self) -> int:
        """Chips attached to each host; the ``google.com/tpu`` request per Ray worker pod."""
        return self.chips // self.hosts

    @property
    def multi_host(self) -> bool:
        """True when the slice spans several hosts (needs COMPACT placement and ``tpu_topology``,
        or for TPU7x a workload policy, :attr:`workload_policy`)."""
        return self.hosts > 1

    @property
    def workload_policy(self) -> dict[str, str] | None:
        """The Compute Engine workload policy a multi-host slice of a workload-policy generation
        is placed by: ``{"type": "HIGH_THROUGHPUT", "accelerator_topology": <topology>}`` (the
        fields of ``gcp.compute.ResourcePolicy(workload_policy=...)``), attached through the node
        pool's ``placement_policy.policy_name`` instead of ``tpu_topology`` [TPU-7X]; None for
        single-host slices and other generations."""
        if not (self.multi_host and self.generation.workload_policy):
            return None
        return {"type": WORKLOAD_POLICY_TYPE, "accelerator_topology": self.topology}

    @property
    def machine_type(self) -> str:
        """Compute Engine machine type of every host [TPU-V5E], [TPU-V6E]."""
        return self.generation.machine_types[self.chips_per_host]

    @property
    def pod_type(self) -> str:
        """TPU pod type as Ray names it (``v6e-16``, ``v5litepod-4``; TensorCores for two-core
        generations: ``v5p-8`` and ``v7x-8`` are 4-chip slices) [RAY-TPU]."""
        cores = self.chips * self.generation.tensorcores_per_chip
        return f"{self.generation.pod_type_prefix}-{cores}"

    @property
    def head_resource(self) -> str:
        """Ray resource that worker 0 of a slice advertises (``TPU-v6e-16-head``) [KUBERAY-TPU]."""
        return f"TPU-{self.pod_type}-head"

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels GKE puts on every node of the slice; the worker group's nodeSelector [GKE-TPU]."""
        return {
            TPU_ACCELERATOR_LABEL: self.generation.gke_accelerator,
            TPU_TOPOLOGY_LABEL: self.topology,
        }

    @property
    def taint(self) -> Taint:
        """The taint GKE puts on TPU nodes [GKE-TPU]."""
        return TPU_TAINT

    @property
    def peak_bf16_tflops(self) -> float:
        """Peak dense bf16 throughput of the whole slice, TFLOP/s."""
        return self.chips * self.generation.peak_bf16_tflops

    def job_slices(self, slices: int) -> int:
        """Slices one training job spans when ``slices`` are available: all of them for a
        multi-host slice (Multislice over DCN), one for a single-host slice. Ray's JaxTrainer
        turns several slices into a Multislice job (``MEGASCALE_*``), which GKE supports on
        multi-host slices only
        (https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice); the other
        single-host slices of the pool serve other jobs."""
        return slices if self.multi_host else min(slices, 1)

    def scaling_config(self, slices: int = 1, min_slices: int | None = None) -> dict[str, Any]:
        """Keyword arguments for ``ray.train.ScalingConfig`` training on up to ``slices`` slices
        (:meth:`job_slices`).

        One Ray Train worker per host, each holding all of its host's chips [RAY-TPU]. With
        ``min_slices`` below ``slices`` (elastic training), ``num_workers`` is the tuple
        ``(hosts x min_slices, hosts x slices)``: Ray 2.60's elastic form
        (``ray/train/v2/api/config.py`` ``ScalingConfig.num_workers: Union[int, Tuple[int,
        int]]``), whose scaling policy grows and shrinks in whole slices
        (``ray/train/v2/_internal/execution/scaling_policy/elastic.py``).

        Raises:
            ValueError: ``min_slices`` is below 1 or above ``slices``.
        """
        most = self.job_slices(slices)
        workers: int | tuple[int, int] = self.hosts * most
        if min_slices is not None and min_slices < most:
            if min_slices < 1:
                raise ValueError(f"min_slices {min_slices} must be >= 1")
            workers = (self.hosts * min_slices, self.hosts * most)
        elif min_slices is not None and min_slices > most:
            raise ValueError(f"min_slices {min_slices} is above the {most} slice(s) of the job")
        return {
            "use_tpu": True,
            "topology": self.topology,
            "accelerator_type": self.generation.ray_accelerator_type,
            "num_workers": workers,
            "resources_per_worker": {"TPU": self.chips_per_host},
        }


def tpu_slice(generation: str, topology: str) -> TpuSlice:
    """Look up a slice.

    Raises:
        CatalogError: unknown generation, or a topology that is not one of the generation's; the
            message names the value and lists the valid ones.
    """
    gen = tpu_generation(generation)
    if topology not in gen.topologies:
        shown = topology if str(topology).isprintable() else repr(topology)
        raise CatalogError(
            f"topology {shown} is not a {gen.name} topology; valid: {', '.join(gen.topologies)}"
            + (f" ({gen.docs})" if gen.docs else "")
        )
    return TpuSlice(gen, topology)


def tpu_machine_types() -> dict[str, tuple[TpuGeneration, int]]:
    return {
        machine: (gen, chips)
        for gen in TPU_GENERATIONS.values()
        for chips, machine in gen.machine_types.items()
    }


def tpu_machine(machine_type: str) -> tuple[str, int] | None:
    """``(generation name, chips per host)`` of a TPU machine type (``ct6e-standard-4t`` ->
    ``("v6e", 4)``), or None for any other machine type [TPU-V5E], [TPU-V6E]."""
    found = tpu_machine_types().get(machine_type)
    return (found[0].name, found[1]) if found else None
