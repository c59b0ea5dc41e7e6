"""GKE's documented ComputeClass objects against the carried schema
(``components/computeclass/crds/cloud.google.com_computeclasses.yaml``, checked as the API server
would by :func:`components.raycrs.crd.validate_other`): each is accepted, and each constraint GKE
documents for ``cloud.google.com/v1`` ComputeClass refuses the object that breaks it, with GKE's
message.

The examples are transcribed from GKE's pages and samples as this workplace's search index shows
them (read 2026-12-07; a page's example is cut where the index cut it, its placeholders filled
with the page's own sample values): the reference page
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass (its
cloud.google.com and docs.cloud.google.com versions), the DRANET page and
GoogleCloudPlatform/kubernetes-engine-samples ``ai-ml/gke-ray/rayserve/llm/tpu/networking/
dranet-compute-class.yaml`` (commit d9411e1), and the ComputeClass examples of the pages on
custom ComputeClasses, Autopilot in Standard clusters, flex-start, active migration, consolidation,
AI zones, node pools and Arm nodes. The constraints are GKE's own validation rules (the reference
page's field bounds and enums and the rules of GKE's ComputeClass API types, carried as CEL rules:
components/computeclass/crds/README.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.raycrs.crd import validate_other


def _cc(name: str, spec: str) -> dict[str, Any]:
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": name},
        "spec": yaml.safe_load(spec),
    }


REFERENCE = """
activeMigration:
  optimizeRulePriority: false
autoscalingPolicy:
  consolidationDelayMinutes: 1
  consolidationThreshold: 0
  gpuConsolidationThreshold: 0
description: "Short description of the compute class."
nodePoolAutoCreation:
  enabled: false
nodePoolConfig:
  imageType: ubuntu_containerd
  serviceAccount: example-service-account@example-project.iam.gserviceaccount.com
priorityDefaults:
  nodeSystemConfig:
    linuxNodeConfig:
      sysctls:
        net.core.somaxconn: 256
    kubeletConfig:
      cpuCfsQuota: true
  location:
    zones: ['us-central1-a', 'us-central1-b']
priorities:
- machineFamily: n2
  maxRunDurationSeconds: 360
  minCores: 16
  minMemoryGb: 64
  placement:
    policyName: my-resource-policy
  reservations:
    affinity: Specific
    specific:
    - name: n2-shared-reservation
      project: reservation-project
      reservationBlock:
        name: reservation-block-name
        reservationSubBlock:
          name: reservation-sub-block-name
  spot: true
  storage:
    bootDiskSize: 100
    bootDiskKMSKey: projects/example/locations/us-central1/keyRings/example/cryptoKeys/key-1
    secondaryBootDisks:
    - diskImageName: pytorch-mnist
      project: k8s-staging-jobset
      mode: CONTAINER_IMAGE_CACHE
  nodeSystemConfig:
    linuxNodeConfig:
      sysctls:
        net.core.somaxconn: 512
- machineType: n2-standard-32
  spot: true
  reservations:
    affinity: AnyBestEffort
  storage:
    bootDiskSize: 100
    bootDiskType: pd-balanced
    localSSDCount: 1
- nodepools: ['example-first-nodepool-name', 'example-second-nodepool-name']
- gpu:
    count: 1
    driverVersion: default
    type: nvidia-l4
- tpu:
    count: 8
    topology: "2x4"
    type: tpu-v5-lite-device
whenUnsatisfiable: ScaleUpAnyway
"""

# the reference page's newest illustration ("not a working example": its n4 priority under
# confidentialNodeType SEV breaks GKE's own SEV rule); every field of it is known
ILLUSTRATION = """
activeMigration:
  ensureAllDaemonSetPodsRunning: false
  optimizeRulePriority: false
allocationStrategyDefaults:
  flexStart: lowest-cost
  onDemand: lowest-cost
  spot: lowest-cost
autoscalingPolicy:
  consolidationDelayMinutes: 1
  consolidationThreshold: 0
  gpuConsolidationThreshold: 0
buffers:
- provisioningStrategy: buffer.x-k8s.io/active-capacity
  limits:
    cpu: "4"
    memory: 6Gi
description: "Short description of the ComputeClass."
nodePoolAutoCreation:
  enabled: false
  shieldedInstanceConfig:
    enableSecureBoot: true
    enableIntegrityMonitoring: true
nodePoolConfig:
  dra:
    networking:
      enabled: true
  imageType: ubuntu_containerd
  ipType: public
  serviceAccount: example-service-account@example-project.iam.gserviceaccount.com
  autoRepair: true
  autoUpgrade: true
  nodeLabels:
    example-label-key: example-label-value
  confidentialNodeType: SEV
  taintConfig:
    architectureTaintBehavior: ARM
  taints:
  - effect: NoSchedule
    key: example-key
    value: example-value
  imageStreaming:
    enabled: true
  gvnic:
    enabled: true
  resourceManagerTags:
  - key: example-project/example-tag-key
    value: example-tag-value
  loggingConfig:
    loggingVariantConfig:
      variant: DEFAULT
  sandbox:
    type: gvisor
priorityDefaults:
  nodeSystemConfig:
    linuxNodeConfig:
      sysctls:
        net.core.somaxconn: 256
      transparentHugepageEnabled: TRANSPARENT_HUGEPAGE_ENABLED_ALWAYS
    kubeletConfig:
      cpuCfsQuota: true
  location:
    zones: ['us-central1-a', 'us-central1-b']
priorities:
- machineFamily: n4
  maxRunDurationSeconds: 360
  minCores: 16
"""

EXAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("reference page", _cc("my-class", REFERENCE)),
    (
        "DRANET, TPU (kubernetes-engine-samples dranet-compute-class.yaml)",
        _cc(
            "dranet-compute-class",
            """
nodePoolAutoCreation: {enabled: true}
nodePoolConfig: {dra: {networking: {enabled: true}}}
priorities:
- machineType: ct6e-standard-4t
  acceleratorNetworkProfile: auto
""",
        ),
    ),
    (
        "DRANET, GPU",
        _cc(
            "dranet-compute-class",
            """
nodePoolAutoCreation: {enabled: true}
nodePoolConfig: {dra: {networking: {enabled: true}}}
priorities:
- machineType: a3-ultragpu-8g
  gpu: {count: 8, type: nvidia-h200}
  acceleratorNetworkProfile: auto
""",
        ),
    ),
    (
        "custom ComputeClass: machine families in order",
        _cc(
            "cost-optimized",
            """
priorities:
- machineFamily: n4
- machineFamily: n2
whenUnsatisfiable: ScaleUpAnyway
nodePoolAutoCreation: {enabled: true}
""",
        ),
    ),
    (
        "Spot first, on-demand fallback, active migration",
        _cc(
            "spot-first",
            """
nodePoolAutoCreation: {enabled: true}
activeMigration: {optimizeRulePriority: true}
priorities:
- machineFamily: n4
  spot: true
- machineFamily: n4
  spot: false
""",
        ),
    ),
    (
        "Autopilot in a Standard cluster",
        _cc(
            "n4-class",
            """
autopilot: {enabled: true}
priorities:
- machineFamily: n4
  spot: true
  minCores: 16
- machineFamily: n4
  spot: true
- machineFamily: n4
  spot: false
activeMigration: {optimizeRulePriority: true}
""",
        ),
    ),
    (
        "Autopilot pod families",
        _cc(
            "general-purpose-class",
            """
autopilot: {enabled: true}
priorities:
- podFamily: general-purpose
- podFamily: general-purpose-arm
whenUnsatisfiable: ScaleUpAnyway
""",
        ),
    ),
    (
        "flex-start GPUs with node recycling",
        _cc(
            "dws-model-inference-class",
            """
priorities:
- flexStart:
    enabled: true
    nodeRecycling: {leadTimeSeconds: 3600}
  gpu: {type: nvidia-l4, count: 1}
nodePoolAutoCreation: {enabled: true}
""",
        ),
    ),
    (
        "flex-start multi-host TPU with a capacity wait",
        _cc(
            "tpu-flex",
            """
priorities:
- tpu: {type: tpu-v6e-slice, count: 4, topology: 4x4}
  flexStart: {enabled: true}
  capacityCheckWaitTimeSeconds: 600
- tpu: {type: tpu-v6e-slice, count: 4, topology: 4x4}
  spot: true
nodePoolAutoCreation: {enabled: true}
""",
        ),
    ),
    (
        "consolidation thresholds",
        _cc(
            "consolidating-class",
            """
priorities:
- machineFamily: n4
autoscalingPolicy:
  consolidationDelayMinutes: 5
  consolidationThreshold: 70
  gpuConsolidationThreshold: 100
nodePoolAutoCreation: {enabled: true}
""",
        ),
    ),
    (
        "existing node pools first",
        _cc(
            "inference-1x8x24",
            """
priorities:
- nodepools: [n1-standard-4-2xt4]
- nodepools: [g2-standard-4]
- nodepools: [n1-standard-4-4xp4]
whenUnsatisfiable: DoNotScaleUp
""",
        ),
    ),
    (
        "AI zones",
        _cc(
            "ai-zone-tpu-class",
            """
priorityDefaults:
  location:
    zones: ['us-central1-ai1a']
    zoneTypes: [AI]
priorities:
- tpu: {type: tpu-v5p-slice, count: 4, topology: 4x4x4}
whenUnsatisfiable: ScaleUpAnyway
nodePoolAutoCreation: {enabled: true}
""",
        ),
    ),
    (
        "Arm and x86 without the arch taint",
        _cc(
            "multi-arch-class",
            """
nodePoolConfig:
  taintConfig: {architectureTaintBehavior: NONE}
nodePoolAutoCreation: {enabled: true}
priorities:
- machineFamily: n4a
  minCores: 4
- machineFamily: c4a
  minCores: 4
- machineFamily: n4
  minCores: 4
whenUnsatisfiable: ScaleUpAnyway
""",
        ),
    ),
    (
        "GPU sharing and a priority score on each rule",
        _cc(
            "shared-gpus",
            """
nodePoolAutoCreation: {enabled: true}
priorities:
- priorityScore: 100
  gpu:
    type: nvidia-h100-80gb
    count: 1
    gpuSharing: {sharingStrategy: TIME_SHARING, maxSharedClientsPerGPU: 4, gpuPartitionSize: 1g.10gb}
- priorityScore: 50
  machineType: g2-standard-8
  gpu: {type: nvidia-l4, count: 1, gpuSharing: {sharingStrategy: MPS, maxSharedClientsPerGPU: 8}}
""",
        ),
    ),
    (
        "node labels and taints on a rule, zones and a location policy",
        _cc(
            "labelled",
            """
nodePoolAutoCreation: {enabled: true}
nodePoolConfig:
  nodeLabels: {team: ml}
  taints: [{key: dedicated, value: ml-team, effect: NoSchedule}]
priorities:
- machineFamily: c4
  minCpuPlatform: Intel Granite Rapids
  nodeLabels: {tier: fast}
  taints: [{key: tier, value: fast, effect: PreferNoSchedule}]
  location: {zones: [us-central1-a], locationPolicy: BALANCED}
- machineFamily: n4
  maxPodsPerNode: 64
""",
        ),
    ),
    (
        "declarative minimum capacity",
        _cc(
            "warm-pool",
            """
nodePoolAutoCreation: {enabled: true}
minimumCapacity: {targetNodeCount: 2}
priorities:
- machineType: n4-standard-8
- reservations:
    affinity: Specific
    specific: [{name: my-reservation, zones: [us-central1-a]}]
""",
        ),
    ),
    (
        "GPUDirect RDMA with an accelerator network profile",
        _cc(
            "a4-rdma",
            """
nodePoolAutoCreation: {enabled: true}
priorities:
- machineType: a4-highgpu-8g
  gpu: {type: nvidia-b200, count: 8}
  gpuDirect: rdma
  acceleratorNetworkProfile: auto-rdma
  reservations:
    affinity: Specific
    specific: [{name: a4-reservation}]
""",
        ),
    ),
    (
        "confidential nodes (SEV on N2D), zones for the GPU-free class",
        _cc(
            "confidential",
            """
nodePoolAutoCreation: {enabled: true}
nodePoolConfig: {confidentialNodeType: SEV}
priorities:
- machineFamily: n2d
- machineType: c3d-standard-8
""",
        ),
    ),
    (
        "Spot with a shutdown grace period",
        _cc(
            "spot-grace",
            """
nodePoolAutoCreation: {enabled: true}
priorities:
- machineFamily: n4
  spot: true
  nodeSystemConfig:
    kubeletConfig: {shutdownGracePeriodSeconds: 30, shutdownGracePeriodCriticalPodsSeconds: 10}
""",
        ),
    ),
]


def _errors(obj: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_other(obj) if p.severity == "error"]


@pytest.mark.parametrize(("page", "obj"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_every_documented_example_is_accepted(page: str, obj: dict[str, Any]) -> None:
    assert validate_other(copy.deepcopy(obj)) == [], page


def test_all_documented_examples_are_accepted() -> None:
    accepted = [page for page, obj in EXAMPLES if not _errors(copy.deepcopy(obj))]
    assert (len(accepted), len(EXAMPLES)) == (19, 19)


def test_the_reference_illustration_knows_every_field_and_breaks_only_the_sev_rule() -> None:
    """The reference page calls its newest illustration "not a working example": its only
    refusal is GKE's own rule that SEV runs on N2D, C2D, C3D or C4D (its priority is n4)."""
    (line,) = _errors(_cc("my-class", ILLUSTRATION))
    assert line == (
        "ComputeClass my-class: spec: ConfidentialNodeType SEV only supports N2D, C2D, C3D, C4D"
    )
