"""Accelerator catalog: the facts about TPU slices and GPUs that everything else derives from.

Pure data and functions (no Pulumi resources, no Ray import). One declared slice
(``generation`` + ``topology``) or GPU shape (``type`` + ``count``) produces the node pool's
machine type, node labels and taint, the KubeRay worker group's ``numOfHosts`` and resource
requests, and the Ray Train ``ScalingConfig`` arguments, so the three can never disagree.

Sources (each fact below cites one of these):

* [TPU-V5E]  Cloud TPU v5e: https://cloud.google.com/tpu/docs/v5e  (machine types ct5lp-hightpu-1t/4t/8t,
  topologies, 16 GB HBM2 per chip, 197 TFLOP/s peak bf16 per chip).
* [TPU-V6E]  Cloud TPU v6e (Trillium): https://cloud.google.com/tpu/docs/v6e  (ct6e-standard-1t/4t/8t,
  topologies, 32 GB HBM per chip, 918 TFLOP/s peak bf16 per chip).
* [TPU-V5P]  Cloud TPU v5p: https://cloud.google.com/tpu/docs/v5p  (ct5p-hightpu-4t, 4 chips per
  host, 3-D topologies ``AxBxC``); HBM 95 GiB and 459 TFLOP/s peak bf16 per chip from the
  comparison table of [TPU-7X]; GKE label ``tpu-v5p-slice`` and the topology list as in
  xpk ``src/xpk/core/system_characteristics.py`` (AI-Hypercomputer/xpk @367c838) and Ray's
  ``VALID_TPU_TOPOLOGY["v5p"]`` (``ray/_private/accelerators/tpu.py``, Ray 2.60.0).
* [TPU-7X]   TPU7x (Ironwood): https://cloud.google.com/tpu/docs/tpu7x  (two TensorCores per chip,
  192 GiB HBM and 2307 TFLOP/s peak bf16 per chip) and
  https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood  (GKE Standard
  1.34.0-gke.2201000 and later; each VM has four chips; multi-host slice node pools use a
  *workload policy* applied with ``--placement-policy`` in place of ``--tpu-topology``; the High
  throughput workload policy). Machine type ``tpu7x-standard-4t``, GKE accelerator label
  ``tpu7x`` and ``gcloud compute resource-policies create workload-policy --type=HIGH_THROUGHPUT
  --accelerator-topology=<topology>`` as xpk does it (``src/xpk/core/nodepool.py``
  ``ensure_resource_policy_exists``, AI-Hypercomputer/xpk @367c838); topologies are the ones
  Ray 2.60 accepts for ``v7x`` (``VALID_TPU_TOPOLOGY``), all in xpk's list.
* [TPU-ZONES] TPU regions and zones: https://cloud.google.com/tpu/docs/regions-zones
* [GKE-TPU]  TPUs in GKE: https://cloud.google.com/kubernetes-engine/docs/concepts/tpus and
  https://cloud.google.com/kubernetes-engine/docs/how-to/tpus  (node labels
  ``cloud.google.com/gke-tpu-accelerator`` / ``cloud.google.com/gke-tpu-topology``, taint
  ``google.com/tpu=present:NoSchedule``, single-host vs multi-host slices, COMPACT placement,
  minimum GKE versions: v5e 1.27.2-gke.2100, v6e 1.31.2-gke.1115000).
* [KUBERAY-TPU] KubeRay TPU guide: https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html
  (``numOfHosts``, ``google.com/tpu`` requests, the ``TPU`` and ``TPU-<pod type>-head`` Ray resources).
* [RAY-TPU]  Ray Train on TPUs: https://docs.ray.io/en/latest/train/getting-started-jax.html
  (``ScalingConfig(use_tpu=True, topology=..., accelerator_type="TPU-V6E")``) and
  ``ray/_private/accelerators/tpu.py`` (accelerator types ``TPU-V5LITEPOD``, ``TPU-V6E``, pod types
  ``v5litepod-N``, ``v6e-N``).
* [GCE-GPU]  GPU machine types: https://cloud.google.com/compute/docs/gpus and
  https://cloud.google.com/compute/docs/accelerator-optimized-machines  (G2, A2, A3 shapes; A4:
  ``a4-highgpu-8g`` with 8 x B200; A4X: ``a4x-highgpu-4g`` with 4 x GB200 on NVIDIA Grace, Arm,
  CPUs). The machine-type names and GKE labels ``nvidia-b200`` / ``nvidia-gb200`` as in xpk
  ``system_characteristics.py`` (``b200-8``, ``gb200-4``, the latter with
  ``docker_platform=linux/arm64``). GPU memory confirmed from NVIDIA's GB200 NVL72 / HGX B200
  specification table (B200 in HGX: 180 GB HBM3E; GB200: 186 GB HBM3E), as reproduced at
  https://zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html. NOT confirmed by a
  search of the Google page in this session: the vCPU / memory of a4-highgpu-8g (224 vCPUs,
  3968 GB) and a4x-highgpu-4g (140 vCPUs, 884 GB) and the zones; treat them as recorded.
* [GPU-ZONES] GPU regions and zones: https://cloud.google.com/compute/docs/gpus/gpu-regions-zones
* [NAP]      Node auto-provisioning: https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning
  (resource-limit types ``tpu-v5-lite-podslice``, ``tpu-v6e-slice``, ``nvidia-l4``, ...).
* [GKE-GPU]  GPUs in GKE: https://cloud.google.com/kubernetes-engine/docs/how-to/gpus
  (label ``cloud.google.com/gke-accelerator``, taint ``nvidia.com/gpu=present:NoSchedule``,
  ``gpu_driver_version`` DEFAULT / LATEST / INSTALLATION_DISABLED).
* [GCE-GP]   General-purpose machine family (E2, N1, N2, N2D, N4, C3, C3D, T2D shapes, memory per vCPU):
  https://cloud.google.com/compute/docs/general-purpose-machines
* [GCE-CO]   Compute-optimized machine family (C2, C2D, C4 shapes):
  https://cloud.google.com/compute/docs/compute-optimized-machines
* [GCE-AO]   Accelerator-optimized machine family (G2, A2, A3: vCPUs, memory, GPUs attached):
  https://cloud.google.com/compute/docs/accelerator-optimized-machines
* [GCE-CUSTOM] Custom machine types (``<series>-custom-<vCPUs>-<memory MB>``, N1: ``custom-...``):
  https://cloud.google.com/compute/docs/instances/creating-instance-with-custom-machine-type
* [GKE-VERSIONS] GKE release schedule and version support:
  https://cloud.google.com/kubernetes-engine/docs/release-schedule and
  https://cloud.google.com/kubernetes-engine/versioning (a minor version is offered for about
  14 months of standard support after it reaches the Regular channel, then up to 24 months in
  total in the Extended channel). Live list: ``gcloud container get-server-config``.
* [NVIDIA]   Peak dense bf16 tensor throughput from NVIDIA's data sheets: L4 121 TFLOP/s,
  A100 312 TFLOP/s, H100 SXM 989 TFLOP/s, H200 989 TFLOP/s, B200 (HGX) 2250 TFLOP/s, GB200
  2500 TFLOP/s (the Blackwell figures: NVIDIA's GB200 NVL72 / HGX B200 table gives FP16/BF16
  Tensor Core 5 and 4.5 PFLOPS per GPU with 2:4 sparsity, so 2.5 and 2.25 dense; as reproduced
  at https://zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html and
  https://glennklockwood.com/garden/processors/B200, which lists BF16 2500 / 2250 dense).

The zone lists are not complete (Google adds zones); pools can override the zone check with
``allow_unlisted_zone`` in the stack config.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TPU_RESOURCE = "google.com/tpu"
GPU_RESOURCE = "nvidia.com/gpu"
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
SPOT_LABEL = "cloud.google.com/gke-spot"
# Node architecture label; GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule
# (https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment).
ARCH_LABEL = "kubernetes.io/arch"
# GKE labels GPU nodes whose driver it installs with the driver version (``default`` /
# ``latest``); a pod that selects it on a NAP-created node makes NAP install that driver
# (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus#create-gpu-pool-auto-drivers,
# https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#gpus).
GPU_DRIVER_LABEL = "cloud.google.com/gke-gpu-driver-version"


class CatalogError(ValueError):
    """An accelerator shape the catalog does not know; the message lists what is allowed."""


@dataclass(frozen=True)
class Taint:
    """A Kubernetes node taint (``key=value:effect``)."""

    key: str
    value: str
    effect: str = "NoSchedule"

    def toleration(self) -> dict[str, str]:
        """The pod toleration that matches this taint (KubeRay/Kubernetes ``tolerations`` item)."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}

    def gke(self) -> dict[str, str]:
        """The taint as GKE's node config wants it (effect in SCREAMING_CASE) [GKE-TPU]."""
        effects = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
        return {
            "key": self.key,
            "value": self.value,
            "effect": effects.get(self.effect, "NO_EXECUTE"),
        }


TPU_TAINT = Taint(TPU_RESOURCE, "present")  # [GKE-TPU]
GPU_TAINT = Taint(GPU_RESOURCE, "present")  # [GKE-GPU]


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
        min_gke_version: oldest GKE version with node pools of this generation [GKE-TPU].
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
# (``VALID_TPU_TOPOLOGY`` in ray/_private/accelerators/tpu.py; tests/components/test_catalog.py
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

TPU_GENERATIONS: Mapping[str, TpuGeneration] = {
    "v5e": TpuGeneration(
        name="v5e",
        gke_accelerator="tpu-v5-lite-podslice",
        ray_accelerator_type="TPU-V5LITEPOD",
        pod_type_prefix="v5litepod",
        machine_types={1: "ct5lp-hightpu-1t", 4: "ct5lp-hightpu-4t", 8: "ct5lp-hightpu-8t"},
        hbm_gb=16,
        peak_bf16_tflops=197.0,
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
    "v6e": TpuGeneration(
        name="v6e",
        gke_accelerator="tpu-v6e-slice",
        ray_accelerator_type="TPU-V6E",
        pod_type_prefix="v6e",
        machine_types={1: "ct6e-standard-1t", 4: "ct6e-standard-4t", 8: "ct6e-standard-8t"},
        hbm_gb=32,
        peak_bf16_tflops=918.0,
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
    "v5p": TpuGeneration(
        name="v5p",
        gke_accelerator="tpu-v5p-slice",
        ray_accelerator_type="TPU-V5P",  # ray/util/accelerators/accelerators.py GOOGLE_TPU_V5P
        pod_type_prefix="v5p",
        machine_types={4: "ct5p-hightpu-4t"},
        hbm_gb=95,
        peak_bf16_tflops=459.0,
        # NOT confirmed by a search in this session (GKE's plan-tpus availability table).
        min_gke_version="1.28.3-gke.1024000",
        # us-east5-a is confirmed (https://cloud.google.com/compute/docs/instances/
        # create-future-reservations-calendar-mode lists it for v5p); the others are not.
        zones=("us-east5-a", "us-central1-a", "europe-west4-b"),
        # 208 vCPUs, 448 GB RAM per 4-chip VM; 95 GiB HBM and 459 bf16 TFLOP/s per chip:
        # https://docs.cloud.google.com/tpu/docs/v5p (specifications table).
        host_vcpus={4: 208},
        host_memory_gb={4: 448},
        topologies=V5P_TOPOLOGIES,
        tensorcores_per_chip=2,
        docs="https://cloud.google.com/tpu/docs/v5p",
    ),
    "tpu7x": TpuGeneration(
        name="tpu7x",
        gke_accelerator="tpu7x",
        ray_accelerator_type="TPU-V7X",  # ray/util/accelerators/accelerators.py GOOGLE_TPU_V7X
        # Ray normalises "tpu7x-8" to "v7x-8" (normalize_tpu_accelerator_type) and keys its
        # topology tables and head resources by that spelling.
        pod_type_prefix="v7x",
        machine_types={4: "tpu7x-standard-4t"},
        hbm_gb=192,
        peak_bf16_tflops=2307.0,
        min_gke_version="1.34.0-gke.2201000",
        # min_gke_version (GKE Standard): https://docs.cloud.google.com/kubernetes-engine/docs/
        # concepts/tpu-ironwood ("Availability"). Zones NOT confirmed by a Google page in this
        # session (neither the TPU7x nor the GKE Ironwood page lists zones; access is through the
        # account team): us-central1-c per third-party write-ups; allow_unlisted_zone for others.
        zones=("us-central1-c",),
        # 224 vCPUs, 960 GB RAM per 4-chip VM; 192 GiB HBM and 2307 bf16 TFLOP/s per chip:
        # https://docs.cloud.google.com/tpu/docs/tpu7x (specifications table).
        host_vcpus={4: 224},
        host_memory_gb={4: 960},
        topologies=TPU_3D_TOPOLOGIES,
        tensorcores_per_chip=2,
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


@dataclass(frozen=True)
class TpuSlice:
    """One TPU slice (``generation`` x ``topology``) and everything derived from it.

    All derived values are properties so there is exactly one place each is computed.
    """

    generation: TpuGeneration
    topology: str

    @property
    def chips(self) -> int:
        """Chips in the slice (product of the topology's dimensions)."""
        return self.generation.topologies[self.topology]

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


@dataclass(frozen=True)
class GpuType:
    """A GPU type as GKE and Compute Engine name it.

    Attributes:
        name: GKE accelerator type (``nvidia-l4``): node label value and NAP resource type [GKE-GPU], [NAP].
        machine_types: GPUs per VM -> the default (smallest) machine type with that many [GCE-GPU].
        memory_gb: memory per GPU, GB.
        peak_bf16_tflops: peak dense bf16 throughput per GPU, TFLOP/s [NVIDIA].
        zones: zones offering it [GPU-ZONES] (not complete).
        arch: CPU architecture of the machine types that carry it, as Kubernetes names it
            (``kubernetes.io/arch``): ``amd64``, or ``arm64`` for GB200 on NVIDIA Grace (A4X)
            [GCE-GPU]. Ray's and this project's images are amd64 builds, so an arm64 GPU pool
            needs an image built for arm64 (``ray.images.gpu`` with ``architectures: [arm64]``).

    The host vCPUs and memory of each machine type come from :data:`MACHINE_SHAPES` [GCE-AO]
    (:attr:`host_vcpus`, :attr:`host_memory_gb`), so they are written once.
    """

    name: str
    display: str
    machine_types: Mapping[int, str]
    memory_gb: int
    peak_bf16_tflops: float
    zones: tuple[str, ...]
    arch: str = "amd64"

    @property
    def host_vcpus(self) -> dict[int, float]:
        """GPUs per node -> vCPUs of the default machine type."""
        return {n: machine_shape(m).vcpus for n, m in self.machine_types.items()}

    @property
    def host_memory_gb(self) -> dict[int, float]:
        """GPUs per node -> memory (GB) of the default machine type."""
        return {n: machine_shape(m).memory_gb for n, m in self.machine_types.items()}

    def machine_type(self, count: int) -> str:
        """Default machine type for ``count`` GPUs per node.

        Raises:
            CatalogError: no machine type offers ``count`` of this GPU; lists the counts that exist.
        """
        try:
            return self.machine_types[count]
        except KeyError:
            raise CatalogError(
                f"no machine type offers {count} x {self.name}; valid counts: "
                f"{', '.join(str(c) for c in self.machine_types)}"
            ) from None

    def scaling_config(self, count: int, nodes: int) -> dict[str, Any]:
        """``ray.train.ScalingConfig`` kwargs: one Ray Train worker per GPU on ``nodes`` nodes."""
        self.machine_type(count)
        return {
            "use_gpu": True,
            "num_workers": count * nodes,
            "resources_per_worker": {"GPU": 1},
        }


_COMMON_GPU_ZONES = (
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east1-b",
    "us-east1-c",
    "us-east1-d",
    "us-east4-a",
    "us-east4-b",
    "us-east4-c",
    "us-east5-a",
    "us-east5-b",
    "us-west1-a",
    "us-west1-b",
    "us-west4-a",
    "europe-west4-a",
    "europe-west4-b",
    "europe-west4-c",
    "asia-southeast1-b",
    "asia-southeast1-c",
)

GPU_TYPES: Mapping[str, GpuType] = {
    "nvidia-l4": GpuType(
        name="nvidia-l4",
        display="NVIDIA L4",
        machine_types={
            1: "g2-standard-4",
            2: "g2-standard-24",
            4: "g2-standard-48",
            8: "g2-standard-96",
        },
        memory_gb=24,
        peak_bf16_tflops=121.0,
        zones=_COMMON_GPU_ZONES,
    ),
    "nvidia-tesla-a100": GpuType(
        name="nvidia-tesla-a100",
        display="NVIDIA A100 40GB",
        machine_types={
            1: "a2-highgpu-1g",
            2: "a2-highgpu-2g",
            4: "a2-highgpu-4g",
            8: "a2-highgpu-8g",
            16: "a2-megagpu-16g",
        },
        memory_gb=40,
        peak_bf16_tflops=312.0,
        zones=(
            "us-central1-a",
            "us-central1-b",
            "us-central1-c",
            "us-central1-f",
            "us-east1-b",
            "us-west1-b",
            "us-west4-b",
            "europe-west4-a",
            "europe-west4-b",
            "asia-southeast1-b",
            "asia-southeast1-c",
        ),
    ),
    "nvidia-a100-80gb": GpuType(
        name="nvidia-a100-80gb",
        display="NVIDIA A100 80GB",
        machine_types={
            1: "a2-ultragpu-1g",
            2: "a2-ultragpu-2g",
            4: "a2-ultragpu-4g",
            8: "a2-ultragpu-8g",
        },
        memory_gb=80,
        peak_bf16_tflops=312.0,
        zones=(
            "us-central1-a",
            "us-central1-c",
            "us-east4-c",
            "us-east5-b",
            "europe-west4-a",
            "asia-southeast1-c",
        ),
    ),
    "nvidia-h100-80gb": GpuType(
        name="nvidia-h100-80gb",
        display="NVIDIA H100 80GB",
        machine_types={
            1: "a3-highgpu-1g",
            2: "a3-highgpu-2g",
            4: "a3-highgpu-4g",
            8: "a3-highgpu-8g",
        },
        memory_gb=80,
        peak_bf16_tflops=989.0,
        zones=(
            "us-central1-a",
            "us-central1-c",
            "us-east4-a",
            "us-east4-b",
            "us-east5-a",
            "us-west1-a",
            "us-west4-a",
            "europe-west4-b",
            "asia-southeast1-c",
        ),
    ),
    "nvidia-h200-141gb": GpuType(
        name="nvidia-h200-141gb",
        display="NVIDIA H200 141GB",
        machine_types={8: "a3-ultragpu-8g"},
        memory_gb=141,
        peak_bf16_tflops=989.0,
        zones=(
            "us-central1-b",
            "us-east4-b",
            "us-east5-a",
            "us-west1-c",
            "europe-west1-b",
            "asia-south1-b",
        ),
    ),
    # A4 [GCE-GPU]: 8 x B200 per a4-highgpu-8g. Memory and peak from NVIDIA's HGX B200 table
    # ([NVIDIA] in the module docstring); zones NOT confirmed by a search in this session;
    # allow_unlisted_zone for other zones.
    "nvidia-b200": GpuType(
        name="nvidia-b200",
        display="NVIDIA B200",
        machine_types={8: "a4-highgpu-8g"},
        memory_gb=180,
        peak_bf16_tflops=2250.0,
        zones=("us-central1-b", "us-east4-b", "us-south1-b", "europe-west4-b"),
    ),
    # A4X [GCE-GPU]: 4 x GB200 per a4x-highgpu-4g, NVIDIA Grace (Arm) host CPUs: arm64 nodes.
    "nvidia-gb200": GpuType(
        name="nvidia-gb200",
        display="NVIDIA GB200",
        machine_types={4: "a4x-highgpu-4g"},
        memory_gb=186,
        peak_bf16_tflops=2500.0,
        zones=("us-central1-a", "us-east4-b"),
        arch="arm64",
    ),
}


def gpu_type(name: str) -> GpuType:
    """The catalog entry for a GPU type.

    Raises:
        CatalogError: unknown type; the message lists the known ones.
    """
    try:
        return GPU_TYPES[name]
    except KeyError:
        raise CatalogError(
            f"GPU type {name!r} is not in the catalog; valid: {', '.join(GPU_TYPES)}"
        ) from None


GPU_DRIVER_VERSIONS = ("DEFAULT", "LATEST", "INSTALLATION_DISABLED")  # [GKE-GPU]


def gpu_driver_label(driver_version: str | None) -> str | None:
    """Value of :data:`GPU_DRIVER_LABEL` on nodes whose driver GKE installs (``LATEST`` ->
    ``latest``), None when GKE installs none (``INSTALLATION_DISABLED``) [GKE-GPU]."""
    if driver_version in ("DEFAULT", "LATEST"):
        return driver_version.lower()
    return None


# Resource types Node Auto Provisioning accepts in resource limits [NAP].
NAP_RESOURCE_TYPES: tuple[str, ...] = (
    "cpu",
    "memory",
    *(g.gke_accelerator for g in TPU_GENERATIONS.values()),
    *GPU_TYPES,
)


def parse_gke_version(version: str) -> tuple[int, ...]:
    """``"1.31.2-gke.1115000"`` -> ``(1, 31, 2, 1115000)`` for ordering; a prefix such as ``"1.31"``
    compares as its padded form.

    Raises:
        ValueError: not a GKE version string.
    """
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?", version)
    if not m:
        raise ValueError(f"{version!r} is not a GKE version (e.g. 1.31.2-gke.1115000)")
    return tuple(int(g) if g is not None else 0 for g in m.groups())


# ------------------------------------------------------------------------------- machine shapes


@dataclass(frozen=True)
class MachineShape:
    """A Compute Engine machine type: what a node of that type has.

    Attributes:
        name: the machine type (``n2-standard-8``).
        series: the machine series (``n2``, ``g2``, ``ct6e``).
        vcpus: vCPUs (shared-core E2 types: the burstable 2).
        memory_gb: memory, GB.
        gpu_type: GKE accelerator name of the GPUs the type always carries (A2/A3/G2), else None.
        gpus: how many of them.
        tpu: True for TPU machine types (``ct5lp-*``, ``ct6e-*``), usable only through a ``tpu:``
            pool, whose slice derives the type [GKE-TPU].
    """

    name: str
    series: str
    vcpus: float
    memory_gb: float
    gpu_type: str | None = None
    gpus: int = 0
    tpu: bool = False


def _series(
    series: str, kind: str, sizes: tuple[int, ...], gb_per_vcpu: float
) -> dict[str, MachineShape]:
    return {
        f"{series}-{kind}-{n}": MachineShape(f"{series}-{kind}-{n}", series, n, n * gb_per_vcpu)
        for n in sizes
    }


# Predefined general-purpose and compute-optimized shapes: series -> (kind, sizes, GB per vCPU)
# [GCE-GP], [GCE-CO].
_CPU_SERIES: dict[str, tuple[tuple[str, tuple[int, ...], float], ...]] = {
    "e2": (
        ("standard", (2, 4, 8, 16, 32), 4.0),
        ("highmem", (2, 4, 8, 16), 8.0),
        ("highcpu", (2, 4, 8, 16, 32), 1.0),
    ),
    "n1": (
        ("standard", (1, 2, 4, 8, 16, 32, 64, 96), 3.75),
        ("highmem", (2, 4, 8, 16, 32, 64, 96), 6.5),
        ("highcpu", (2, 4, 8, 16, 32, 64, 96), 0.9),
    ),
    "n2": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80, 96), 1.0),
    ),
    "n2d": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 1.0),
    ),
    "n4": (
        ("standard", (2, 4, 8, 16, 32, 48, 64, 80), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 48, 64, 80), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 48, 64, 80), 2.0),
    ),
    "c3": (
        ("standard", (4, 8, 22, 44, 88, 176), 4.0),
        ("highmem", (4, 8, 22, 44, 88, 176), 8.0),
        ("highcpu", (4, 8, 22, 44, 88, 176), 2.0),
    ),
    "c3d": (
        ("standard", (4, 8, 16, 30, 60, 90, 180, 360), 4.0),
        ("highmem", (4, 8, 16, 30, 60, 90, 180, 360), 8.0),
        ("highcpu", (4, 8, 16, 30, 60, 90, 180, 360), 2.0),
    ),
    "t2d": (("standard", (1, 2, 4, 8, 16, 32, 48, 60), 4.0),),
    "c2": (("standard", (4, 8, 16, 30, 60), 4.0),),
    "c2d": (
        ("standard", (2, 4, 8, 16, 32, 56, 112), 4.0),
        ("highmem", (2, 4, 8, 16, 32, 56, 112), 8.0),
        ("highcpu", (2, 4, 8, 16, 32, 56, 112), 2.0),
    ),
    "c4": (
        ("standard", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 3.75),
        ("highmem", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 7.75),
        ("highcpu", (2, 4, 8, 16, 32, 48, 96, 144, 192, 288), 2.0),
    ),
}
# Series that take custom shapes ``<series>-custom-<vCPUs>-<MB>`` (N1: ``custom-<vCPUs>-<MB>``)
# [GCE-CUSTOM].
CUSTOM_SERIES = ("n1", "n2", "n2d", "e2", "n4")

# Accelerator-optimized shapes: name -> (vCPUs, memory GB, GKE GPU type, GPUs) [GCE-AO].
_GPU_MACHINES: dict[str, tuple[int, int, str, int]] = {
    "g2-standard-4": (4, 16, "nvidia-l4", 1),
    "g2-standard-8": (8, 32, "nvidia-l4", 1),
    "g2-standard-12": (12, 48, "nvidia-l4", 1),
    "g2-standard-16": (16, 64, "nvidia-l4", 1),
    "g2-standard-24": (24, 96, "nvidia-l4", 2),
    "g2-standard-32": (32, 128, "nvidia-l4", 1),
    "g2-standard-48": (48, 192, "nvidia-l4", 4),
    "g2-standard-96": (96, 384, "nvidia-l4", 8),
    "a2-highgpu-1g": (12, 85, "nvidia-tesla-a100", 1),
    "a2-highgpu-2g": (24, 170, "nvidia-tesla-a100", 2),
    "a2-highgpu-4g": (48, 340, "nvidia-tesla-a100", 4),
    "a2-highgpu-8g": (96, 680, "nvidia-tesla-a100", 8),
    "a2-megagpu-16g": (96, 1360, "nvidia-tesla-a100", 16),
    "a2-ultragpu-1g": (12, 170, "nvidia-a100-80gb", 1),
    "a2-ultragpu-2g": (24, 340, "nvidia-a100-80gb", 2),
    "a2-ultragpu-4g": (48, 680, "nvidia-a100-80gb", 4),
    "a2-ultragpu-8g": (96, 1360, "nvidia-a100-80gb", 8),
    "a3-highgpu-1g": (26, 234, "nvidia-h100-80gb", 1),
    "a3-highgpu-2g": (52, 468, "nvidia-h100-80gb", 2),
    "a3-highgpu-4g": (104, 936, "nvidia-h100-80gb", 4),
    "a3-highgpu-8g": (208, 1872, "nvidia-h100-80gb", 8),
    "a3-ultragpu-8g": (224, 2952, "nvidia-h200-141gb", 8),
    # vCPUs and memory NOT confirmed by a search in this session (module docstring, [GCE-GPU]).
    "a4-highgpu-8g": (224, 3968, "nvidia-b200", 8),
    "a4x-highgpu-4g": (140, 884, "nvidia-gb200", 4),
}

MACHINE_SHAPES: Mapping[str, MachineShape] = {
    # E2 shared-core: 2 burstable vCPUs [GCE-GP].
    "e2-micro": MachineShape("e2-micro", "e2", 2, 1),
    "e2-small": MachineShape("e2-small", "e2", 2, 2),
    "e2-medium": MachineShape("e2-medium", "e2", 2, 4),
    **{
        name: shape
        for series, kinds in _CPU_SERIES.items()
        for kind, sizes, gb in kinds
        for name, shape in _series(series, kind, sizes, gb).items()
    },
    **{
        name: MachineShape(name, name.split("-")[0], v, m, gpu, n)
        for name, (v, m, gpu, n) in _GPU_MACHINES.items()
    },
}


def _tpu_machine_types() -> dict[str, tuple[TpuGeneration, int]]:
    return {
        machine: (gen, chips)
        for gen in TPU_GENERATIONS.values()
        for chips, machine in gen.machine_types.items()
    }


def machine_shape(machine_type: str) -> MachineShape:
    """The shape of a Compute Engine machine type: a predefined one from :data:`MACHINE_SHAPES`,
    a custom one (``n2-custom-8-32768``, ``custom-4-16384`` for N1) or a TPU type from
    :data:`TPU_GENERATIONS` (``tpu=True``).

    Raises:
        CatalogError: the name is not a machine type the catalog knows; for a known series with a
            size it does not offer, the message lists the sizes it does.
    """
    if machine_type in MACHINE_SHAPES:
        return MACHINE_SHAPES[machine_type]
    tpu = _tpu_machine_types().get(machine_type)
    if tpu:
        gen, chips = tpu
        return MachineShape(
            machine_type,
            machine_type.split("-")[0],
            gen.host_vcpus[chips],
            gen.host_memory_gb[chips],
            tpu=True,
        )
    custom = re.fullmatch(r"(?:([a-z0-9]+)-)?custom-(\d+)-(\d+)", machine_type)
    if custom:
        series = custom.group(1) or "n1"
        if series in CUSTOM_SERIES and int(custom.group(2)) >= 1:
            return MachineShape(
                machine_type, series, int(custom.group(2)), int(custom.group(3)) / 1024
            )
        raise CatalogError(
            f"machine type {machine_type!r}: custom shapes exist for series "
            f"{', '.join(CUSTOM_SERIES)} (e.g. n2-custom-8-32768)"
        )
    prefix = re.fullmatch(r"([a-z0-9]+-[a-z]+)-\d+[a-z]*", machine_type)
    sizes = sorted(
        (m for m in MACHINE_SHAPES if prefix and m.startswith(prefix.group(1) + "-")),
        key=lambda m: MACHINE_SHAPES[m].vcpus,
    )
    if sizes:
        raise CatalogError(
            f"machine type {machine_type!r} is not a {prefix.group(1)} shape; valid: "  # type: ignore[union-attr]
            f"{', '.join(sizes)}"
        )
    raise CatalogError(
        f"machine type {machine_type!r} is not in the catalog; series: "
        f"{', '.join(sorted({s.series for s in MACHINE_SHAPES.values()}))} "
        "(e.g. n2-standard-8); TPU machine types come from a tpu: block, GPU ones from gpu:"
    )


def cpu_machine_problem(machine_type: str) -> str | None:
    """Why ``machine_type`` cannot serve a CPU node pool (or the system pool), else None.

    TPU machine types carry chips tainted ``google.com/tpu`` [GKE-TPU] and GPU machine types
    always carry GPUs tainted ``nvidia.com/gpu`` [GKE-GPU], so the pool's pods would get no
    toleration and no accelerator; such pools are declared with ``tpu:`` / ``gpu:`` instead.
    """
    try:
        shape = machine_shape(machine_type)
    except CatalogError as e:
        return str(e)
    if shape.tpu:
        gen, chips = _tpu_machine_types()[machine_type]
        return (
            f"{machine_type} is a TPU machine type ({chips} x TPU {gen.name}); declare the pool "
            f"with tpu: {{generation: {gen.name}, topology: ...}} instead (the machine type is "
            "derived from the slice)"
        )
    if shape.gpu_type:
        return (
            f"{machine_type} carries {shape.gpus} x {shape.gpu_type}; declare the pool with "
            f"gpu: {{type: {shape.gpu_type}, count: {shape.gpus}}} instead"
        )
    return None


def gpu_machine_problem(machine_type: str, gpu: str, count: int) -> str | None:
    """Why ``machine_type`` cannot carry ``count`` x ``gpu`` (a GKE GPU type), else None.

    Accelerator-optimized machine types come with a fixed GPU model and count [GCE-AO].
    """
    try:
        shape = machine_shape(machine_type)
    except CatalogError as e:
        return str(e)
    if shape.gpu_type == gpu and shape.gpus == count:
        return None
    fits = sorted(
        name for name, s in MACHINE_SHAPES.items() if s.gpu_type == gpu and s.gpus == count
    )
    have = f"carries {shape.gpus} x {shape.gpu_type}" if shape.gpu_type else "carries no GPU"
    if shape.tpu:
        have = "is a TPU machine type"
    return (
        f"machine_type {machine_type} {have}, not {count} x {gpu}; "
        + (
            f"for {count} x {gpu} use {', '.join(fits)}"
            if fits
            else f"no machine type offers {count} x {gpu}"
        )
        + " (or leave machine_type out to use the default)"
    )


# --------------------------------------------------------------------------------- GKE versions

# GKE minor versions offered for new clusters, per release channel, as recorded on the date below
# [GKE-VERSIONS]. Kubernetes 1.31 left extended support in late 2026; 1.32 and 1.33 remain only
# in the Extended channel; the GKE Ray TPU sample pins 1.35. Refresh this record (and its date)
# from `gcloud container get-server-config` when GKE moves on: a pin outside it is refused.
GKE_VERSIONS_RECORDED = "2026-11-30"
GKE_OFFERED_MINORS: Mapping[str, tuple[str, str]] = {
    "RAPID": ("1.34", "1.37"),
    "REGULAR": ("1.34", "1.36"),
    "STABLE": ("1.34", "1.35"),
    "EXTENDED": ("1.32", "1.36"),
}


def gke_version_problem(version: str, channel: str) -> str | None:
    """Why GKE would not create a cluster pinned to ``version`` in ``channel`` (by the record
    of :data:`GKE_OFFERED_MINORS`), else None.

    Raises:
        ValueError: ``version`` is not a GKE version string.
    """
    minor = parse_gke_version(version)[:2]
    oldest, newest = GKE_OFFERED_MINORS[channel]
    if parse_gke_version(oldest)[:2] <= minor <= parse_gke_version(newest)[:2]:
        return None
    return (
        f"{version} is not offered for new clusters in the {channel} channel: GKE offered "
        f"{oldest} to {newest} there as recorded on {GKE_VERSIONS_RECORDED} (catalog "
        "GKE_OFFERED_MINORS; check `gcloud container get-server-config`)"
    )


# ------------------------------------------------------------------------ regions and locations

# Compute Engine regions and their zone letters, as recorded on the date below
# (https://cloud.google.com/compute/docs/regions-zones). Google adds regions: refresh this
# record (and its date) from `gcloud compute zones list` when one is missing.
REGIONS_RECORDED = "2026-11-30"
_ABC = "abc"
GCP_REGIONS: Mapping[str, str] = {
    "us-central1": "abcf",
    "us-east1": "bcd",
    "us-east4": _ABC,
    "us-east5": _ABC,
    "us-south1": _ABC,
    "us-west1": _ABC,
    "us-west2": _ABC,
    "us-west3": _ABC,
    "us-west4": _ABC,
    "northamerica-northeast1": _ABC,
    "northamerica-northeast2": _ABC,
    "northamerica-south1": _ABC,
    "southamerica-east1": _ABC,
    "southamerica-west1": _ABC,
    "europe-central2": _ABC,
    "europe-north1": _ABC,
    "europe-north2": _ABC,
    "europe-southwest1": _ABC,
    "europe-west1": "bcd",
    "europe-west2": _ABC,
    "europe-west3": _ABC,
    "europe-west4": _ABC,
    "europe-west6": _ABC,
    "europe-west8": _ABC,
    "europe-west9": _ABC,
    "europe-west10": _ABC,
    "europe-west12": _ABC,
    "me-central1": _ABC,
    "me-central2": _ABC,
    "me-west1": _ABC,
    "africa-south1": _ABC,
    "asia-east1": _ABC,
    "asia-east2": _ABC,
    "asia-northeast1": _ABC,
    "asia-northeast2": _ABC,
    "asia-northeast3": _ABC,
    "asia-south1": _ABC,
    "asia-south2": _ABC,
    "asia-southeast1": _ABC,
    "asia-southeast2": _ABC,
    "australia-southeast1": _ABC,
    "australia-southeast2": _ABC,
}
# Cloud Storage multi-regions and predefined dual-regions
# (https://cloud.google.com/storage/docs/locations); any region above is a location too.
BUCKET_MULTI_REGIONS = ("US", "EU", "ASIA", "ASIA1", "EUR4", "EUR5", "EUR7", "EUR8", "NAM4")


def region_problem(region: str) -> str | None:
    """Why ``region`` is not a Compute Engine region of the record, else None (with the closest
    recorded names as suggestions)."""
    if region in GCP_REGIONS:
        return None
    close = difflib.get_close_matches(region, list(GCP_REGIONS), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else " (e.g. us-central1)"
    return (
        f"{region!r} is not a GCP region as recorded on {REGIONS_RECORDED} "
        f"(catalog GCP_REGIONS){hint}"
    )


def zone_problem(zone: str, region: str) -> str | None:
    """Why ``zone`` is not a zone of ``region`` (by the record), else None."""
    letters = GCP_REGIONS.get(region)
    head, _, letter = zone.rpartition("-")
    if head == region and letters is not None and len(letter) == 1 and letter in letters:
        return None
    zones = ", ".join(f"{region}-{c}" for c in letters or "")
    return f"{zone!r} is not a zone of region {region}" + (f"; its zones: {zones}" if zones else "")


def bucket_location_problem(location: str) -> str | None:
    """Why ``location`` is not a Cloud Storage location (region, multi-region or predefined
    dual-region), else None."""
    if location.upper() in BUCKET_MULTI_REGIONS or location.lower() in GCP_REGIONS:
        return None
    return (
        f"{location!r} is not a Cloud Storage location: use a region (e.g. US-EAST5) or one of "
        f"{', '.join(BUCKET_MULTI_REGIONS)} (https://cloud.google.com/storage/docs/locations)"
    )


# ---------------------------------------------------------------------------------------------
# Prices (USD per hour, list prices, no committed-use or sustained-use discounts), from the dated
# price list raygke/prices.json. A price that is not there is unknown: ``raygke cost`` shows it as unknown,
# never as zero.
#
# Sources:
# * [PRICE-GKE] GKE cluster management fee, $0.10 per cluster per hour for every cluster (the
#   free tier credit of $74.40 a month per billing account, one zonal or Autopilot cluster, is
#   not subtracted): https://cloud.google.com/kubernetes-engine/pricing
# * [PRICE-CAT] SkyPilot's GCP catalog, generated from the Google Cloud Billing Catalog API:
#   https://github.com/skypilot-org/skypilot-catalog/blob/006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv
#   (columns Price = on-demand, SpotPrice = Spot, per hour; machine rows of A2/A3/G2 types exclude
#   the GPUs, which have their own rows; TPU rows ``tpu-v5litepod-N`` / ``tpu-v6e-N`` price N
#   chips, ``tpu-v5p-N`` N TensorCores = N/2 chips). Spot prices change (up to once a day); they are what the catalog recorded.
# * [PRICE-RES] Reserved capacity is billed at the on-demand rate whether or not nodes use it:
#   https://cloud.google.com/compute/docs/instances/reservations-overview ("reserved resources are
#   charged at the same on-demand rates as running VMs").

PRICES_RECORDED = "2026-12-01"  # the date of raygke/prices.json
HOURS_PER_MONTH = 730
_CAT = (
    "https://github.com/skypilot-org/skypilot-catalog/blob/"
    "006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv"
)
GKE_PRICING = "https://cloud.google.com/kubernetes-engine/pricing"
RESERVATION_PRICING = "https://cloud.google.com/compute/docs/instances/reservations-overview"


@dataclass(frozen=True)
class Price:
    """An hourly list price with its source.

    Attributes:
        on_demand: USD per hour on demand (also the reservation rate [PRICE-RES]).
        spot: USD per hour as a Spot VM (None: not recorded).
        source: URL of the figure.
        recorded: date the figure was read (ISO).
        note: how the figure was derived, when it is not a row of the source.
    """

    on_demand: float | None
    spot: float | None
    source: str
    recorded: str = PRICES_RECORDED
    note: str = ""


CLUSTER_FEE = Price(0.10, 0.10, GKE_PRICING)

# (region, machine type) -> price of the VM without GPUs or TPUs; (region, GKE GPU type) -> price
# per GPU; (region, TPU generation) -> price per chip: every family, GPU and generation of this
# catalog in every region the price list has [PRICE-CAT].
#
# The price list ``raygke/prices.json``: dated, sourced hourly list prices for every machine
# family, GPU and TPU generation of :mod:`components.catalog`, on-demand and Spot, per region.
#
# The file (its ``sources``, ``recorded`` date and ``derivation`` say where each figure comes from)
# holds:
#
# * ``families.<series>.regions.<region>``: ``vcpu``, ``gb``, ``vcpu_spot``, ``gb_spot``: USD per
#   vCPU-hour and per GB-hour; a machine type costs ``vcpus x vcpu + memory_gb x gb`` (the GPUs of
#   A2/A3/G2 types are priced apart, as Compute Engine bills them:
#   https://cloud.google.com/compute/vm-instance-pricing#accelerator-optimized);
# * ``gpus.<gke gpu type>.regions.<region>``: ``on_demand``, ``spot`` per GPU-hour;
# * ``tpus.<generation>.regions.<region>``: ``on_demand``, ``spot`` per chip-hour;
# * ``exact``: ``"<region>/<machine | gpu | generation>": [on_demand, spot]`` rows read as they are
#   from a source, used instead of a derived figure.
# * ``not_priced``: ``families`` / ``gpus`` / ``tpus`` / ``regions`` -> name -> why no source
#   prices it (``raygke cost`` shows those as unknown); a family may carry its own ``source``.
#
# ``python -m raygke.prices_refresh`` regenerates the file from the Cloud Billing Catalog API;
# ``python -m raygke.prices_seed`` wrote the shipped one offline from its two cited sources.

PRICES_FILE = Path(__file__).resolve().parents[1] / "raygke" / "prices.json"


@cache
def price_list(path: Path = PRICES_FILE) -> dict[str, Any]:
    """The parsed price list (cached)."""
    return json.loads(path.read_text())


def build_tables(
    shapes: Mapping[str, Any],
    regions: Mapping[str, str],
    make_price: Callable[..., Any],
    data: Mapping[str, Any] | None = None,
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any], dict[tuple[str, str], Any]]:
    """``(machine, gpu, tpu_chip)`` tables keyed ``(region, name)`` for every region of
    ``regions`` the list prices.

    Args:
        shapes: machine type -> shape (``series``, ``vcpus``, ``memory_gb``, ``tpu``):
            :data:`components.catalog.MACHINE_SHAPES`.
        regions: the catalog's regions (:data:`components.catalog.GCP_REGIONS`).
        make_price: ``(on_demand, spot, source, recorded=..., note=...)`` -> a price object
            (:class:`components.catalog.Price`).
        data: the parsed list (default: :func:`price_list`).
    """
    d = data if data is not None else price_list()
    recorded = d["recorded"]
    sources = d["sources"]
    machines: dict[tuple[str, str], Any] = {}
    for name, shape in shapes.items():
        if shape.tpu:
            continue
        fam = d["families"].get(shape.series)
        if fam is None:
            continue
        src = fam.get("source") or (
            f"{sources['CA']} (us-central1 rates) x {sources['SKY']} (regional factors)"
        )
        for region, r in fam["regions"].items():
            if region not in regions:
                continue
            od = shape.vcpus * r["vcpu"] + shape.memory_gb * r["gb"]
            spot = shape.vcpus * r["vcpu_spot"] + shape.memory_gb * r["gb_spot"]
            note = (
                f"derived: {shape.vcpus:g} vCPU x {r['vcpu']} + {shape.memory_gb:g} GB x {r['gb']}"
                " (raygke/prices.json derivation)"
            )
            machines[(region, name)] = make_price(
                round(od, 5), round(spot, 5), src, recorded=recorded, note=note
            )

    def accel(section: str) -> dict[tuple[str, str], Any]:
        out: dict[tuple[str, str], Any] = {}
        for name, entry in d[section].items():
            note = "derived: " + "; ".join(
                x for x in (entry.get("note"), "x the regional factor of prices.json") if x
            )
            for region, r in entry["regions"].items():
                if region in regions:
                    out[(region, name)] = make_price(
                        r["on_demand"], r["spot"], entry["source"], recorded=recorded, note=note
                    )
        return out

    gpus, tpus = accel("gpus"), accel("tpus")
    for section, table in (("machines", machines), ("gpus", gpus), ("tpus", tpus)):
        for key, (od, spot) in d["exact"][section].items():
            region, _, name = key.partition("/")
            table[(region, name)] = make_price(od, spot, sources["SKY"], recorded=recorded)
    return machines, gpus, tpus


MACHINE_PRICES: Mapping[tuple[str, str], Price]
GPU_PRICES: Mapping[tuple[str, str], Price]
TPU_CHIP_PRICES: Mapping[tuple[str, str], Price]
MACHINE_PRICES, GPU_PRICES, TPU_CHIP_PRICES = build_tables(MACHINE_SHAPES, GCP_REGIONS, Price)


def tpu_machine(machine_type: str) -> tuple[str, int] | None:
    """``(generation name, chips per host)`` of a TPU machine type (``ct6e-standard-4t`` ->
    ``("v6e", 4)``), or None for any other machine type [TPU-V5E], [TPU-V6E]."""
    found = _tpu_machine_types().get(machine_type)
    return (found[0].name, found[1]) if found else None


# ============================================================ capacity: DWS and flex-start facts
# Owned by components/capacity (issue 21); kept in one block apart from the accelerator shapes.
#
# [GKE-DWS-QUEUED] Flex-start with queued provisioning (Dynamic Workload Scheduler through the
#   ProvisioningRequest API): https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest
#   - the node pool is created with ``--flex-start --enable-queued-provisioning``, autoscaling
#     from 0 (``--num-nodes=0``), ``--location-policy=ANY``, ``--reservation-affinity=none`` and
#     ``--no-enable-autorepair`` (a repaired node would break the all-at-once allocation);
#   - GKE taints the nodes ``cloud.google.com/gke-queued=true:NoSchedule``; pods tolerate it;
#   - the ProvisioningRequest class is ``queued-provisioning.gke.io``; GKE accepts one PodSet per
#     ProvisioningRequest (https://github.com/ray-project/ray/issues/57839);
#   - GKE 1.28.3-gke.1098000 or later for GPUs, 1.28.7-gke.1020000 or later for TPUs (NOT
#     confirmed by a search in this session: the stored copies of the page do not show its
#     requirements list; kept as recorded).
# [GKE-FLEX-START] Flex-start VMs without queueing:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training and
#   https://cloud.google.com/kubernetes-engine/docs/concepts/dws (GPUs: GKE 1.32.2-gke.1652000,
#   NOT confirmed in this session; TPUs: GKE 1.33.0-gke.1712000, confirmed by
#   https://cloud.google.com/kubernetes-engine/docs/concepts/provisioning-model "To run TPUs,
#   use GKE version 1.33.0-gke.1712000 or later", and single-host slices only; at most 7 days,
#   ``maxRunDuration`` of the node config,
#   https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodeConfig).

QUEUED_TAINT = Taint("cloud.google.com/gke-queued", "true")  # [GKE-DWS-QUEUED]
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"  # [GKE-DWS-QUEUED]
QUEUED_MIN_GKE_VERSION = {"gpu": "1.28.3-gke.1098000", "tpu": "1.28.7-gke.1020000"}
FLEX_START_MIN_GKE_VERSION = {"gpu": "1.32.2-gke.1652000", "tpu": "1.33.0-gke.1712000"}
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600  # [GKE-FLEX-START]
DWS_QUEUED_DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"
DWS_FLEX_DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training"
