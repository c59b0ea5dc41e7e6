"""Accelerator catalog: the facts about TPU slices, GPUs and machine types that everything else
derives from.

Pure data and functions (no Pulumi resources, no Ray import, no concept folder imported). One
declared slice (``generation`` + ``topology``) or GPU shape (``type`` + ``count``) produces the node
pool's machine type, node labels and taint, the KubeRay worker group's ``numOfHosts`` and resource
requests, and the Ray Train ``ScalingConfig`` arguments, so the three can never disagree.

One module per family, each citing its sources in its docstring:

* :mod:`.accelerators`: one record per GPU type / TPU generation (machine types, GPUDirect kind,
  topology blocks, capacity options, price SKUs) that the tables below derive from;
* :mod:`.labels`: node labels, extended resources, taints, :class:`CatalogError`;
* :mod:`.tpu`: TPU generations (v5e, v6e, v5p, TPU7x), topologies and slices;
* :mod:`.gpu`: GPU types (L4, A100, H100, H200, B200, GB200) and driver versions;
* :mod:`.machines`: Compute Engine machine shapes (CPU families, accelerator-optimized, custom);
* :mod:`.gke`: GKE versions per release channel and the NAP resource types;
* :mod:`.locations`: regions, zones and Cloud Storage locations;
* :mod:`.capacity`: Dynamic Workload Scheduler and flex-start facts;
* :mod:`.capabilities`: per machine series, what GKE offers (flex-start, queued provisioning,
  Spot, reservations, compact placement, GPU networking), each cell sourced.

The accelerator facts the workloads need too (Ray accelerator types, HBM, peak bf16) have their one
copy in :mod:`contract.accelerators`; the list prices live with ``raygke cost`` in
:mod:`raygke.cost.prices`. Callers import from the package: ``from components.catalog import tpu_slice``.
"""

from __future__ import annotations

from .accelerators import (
    ACCELERATORS,
    NETWORK_KINDS,
    Accelerator,
    accelerators,
    network_kind,
    sku_names,
    topology_block_machine_types,
)
from .capabilities import (
    CAPABILITIES,
    FAMILY_CAPABILITIES,
    PROVISIONING_CAPABILITY,
    Cell,
    capability,
    capability_problem,
    capability_rows,
    machine_series,
)
from .capacity import (
    DWS_FLEX_DOC,
    DWS_QUEUED_DOC,
    FLEX_START_MAX_RUN_SECONDS,
    FLEX_START_MIN_GKE_VERSION,
    QUEUED_MIN_GKE_VERSION,
    QUEUED_PROVISIONING_CLASS,
    QUEUED_TAINT,
)
from .gke import (
    GKE_OFFERED_MINORS,
    GKE_VERSIONS_RECORDED,
    NAP_RESOURCE_TYPES,
    gke_version_problem,
    parse_gke_version,
)
from .gpu import (
    GPU_DRIVER_VERSIONS,
    GPU_TYPES,
    GpuType,
    gpu_driver_label,
    gpu_type,
)
from .labels import (
    ARCH_LABEL,
    GPU_ACCELERATOR_LABEL,
    GPU_DRIVER_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    NODE_POOL_LABEL,
    SPOT_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_RESOURCE,
    TPU_TAINT,
    TPU_TOPOLOGY_LABEL,
    CatalogError,
    Taint,
)
from .locations import (
    BUCKET_MULTI_REGIONS,
    GCP_REGIONS,
    REGIONS_RECORDED,
    bucket_location_problem,
    region_problem,
    zone_problem,
)
from .machines import (
    CUSTOM_SERIES,
    MACHINE_SHAPES,
    MachineShape,
    cpu_machine_problem,
    gpu_machine_problem,
    machine_shape,
)
from .tpu import (
    MULTI_HOST_CHIPS_PER_HOST,
    TPU_3D_TOPOLOGIES,
    TPU_GENERATIONS,
    TPU_TOPOLOGIES,
    V5P_TOPOLOGIES,
    WORKLOAD_POLICY_TYPE,
    TpuGeneration,
    TpuSlice,
    tpu_generation,
    tpu_machine,
    tpu_slice,
)

__all__ = [
    "ACCELERATORS",
    "ARCH_LABEL",
    "BUCKET_MULTI_REGIONS",
    "CAPABILITIES",
    "CUSTOM_SERIES",
    "DWS_FLEX_DOC",
    "DWS_QUEUED_DOC",
    "FAMILY_CAPABILITIES",
    "FLEX_START_MAX_RUN_SECONDS",
    "FLEX_START_MIN_GKE_VERSION",
    "GCP_REGIONS",
    "GKE_OFFERED_MINORS",
    "GKE_VERSIONS_RECORDED",
    "GPU_ACCELERATOR_LABEL",
    "GPU_DRIVER_LABEL",
    "GPU_DRIVER_VERSIONS",
    "GPU_RESOURCE",
    "GPU_TAINT",
    "GPU_TYPES",
    "MACHINE_SHAPES",
    "MULTI_HOST_CHIPS_PER_HOST",
    "NAP_RESOURCE_TYPES",
    "NETWORK_KINDS",
    "NODE_POOL_LABEL",
    "PROVISIONING_CAPABILITY",
    "QUEUED_MIN_GKE_VERSION",
    "QUEUED_PROVISIONING_CLASS",
    "QUEUED_TAINT",
    "REGIONS_RECORDED",
    "SPOT_LABEL",
    "TPU_3D_TOPOLOGIES",
    "TPU_ACCELERATOR_LABEL",
    "TPU_GENERATIONS",
    "TPU_RESOURCE",
    "TPU_TAINT",
    "TPU_TOPOLOGIES",
    "TPU_TOPOLOGY_LABEL",
    "V5P_TOPOLOGIES",
    "WORKLOAD_POLICY_TYPE",
    "Accelerator",
    "CatalogError",
    "Cell",
    "GpuType",
    "MachineShape",
    "Taint",
    "TpuGeneration",
    "TpuSlice",
    "accelerators",
    "bucket_location_problem",
    "capability",
    "capability_problem",
    "capability_rows",
    "cpu_machine_problem",
    "gke_version_problem",
    "gpu_driver_label",
    "gpu_machine_problem",
    "gpu_type",
    "machine_series",
    "machine_shape",
    "network_kind",
    "parse_gke_version",
    "region_problem",
    "sku_names",
    "topology_block_machine_types",
    "tpu_generation",
    "tpu_machine",
    "tpu_slice",
    "zone_problem",
]
