"""Each constraint GKE documents for ``cloud.google.com/v1`` ComputeClass refuses the object that
breaks it, with GKE's message (the carried schema: components/computeclass/crds/README.md), and
the same object without the breach is accepted: a test per constraint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.raycrs.crd import validate_other


def _base() -> dict[str, Any]:
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "cc"},
        "spec": {
            "nodePoolAutoCreation": {"enabled": True},
            "priorities": [{"machineFamily": "n4", "spot": True}, {"machineFamily": "n4"}],
        },
    }


def _p(i: int, **fields: Any) -> Callable[[dict], None]:
    return lambda s: s["priorities"][i].update(fields)


def _set(**fields: Any) -> Callable[[dict], None]:
    return lambda s: s.update(fields)


def _npc(**fields: Any) -> Callable[[dict], None]:
    return lambda s: s.setdefault("nodePoolConfig", {}).update(fields)


# (constraint, the breach, GKE's words in the refusal)
CONSTRAINTS: list[tuple[str, Callable[[dict], None], str]] = [
    # priority rules
    (
        "nodepools alone",
        _p(0, nodepools=["pool-a"]),
        "Nodepool field cannot be set along with other fields",
    ),
    (
        "machineFamily xor machineType",
        _p(0, machineType="n4-standard-8"),
        "MachineFamily and MachineType cannot be set together",
    ),
    (
        "machineType without minCores",
        lambda s: s["priorities"].__setitem__(0, {"machineType": "n4-standard-8", "minCores": 4}),
        "MachineType cannot be set together with MinCores/MinMemoryGb",
    ),
    ("no ek family", _p(0, machineFamily="ek"), "MachineFamily cannot be equal to 'ek'"),
    (
        "no ek machine type",
        lambda s: s["priorities"].__setitem__(0, {"machineType": "ek-standard-8"}),
        "MachineType cannot start with 'ek' prefix",
    ),
    (
        "no e4a machine type",
        lambda s: s["priorities"].__setitem__(0, {"machineType": "e4a-standard-8"}),
        "MachineType cannot start with 'e4a' prefix",
    ),
    (
        "flex-start not with Spot",
        _p(0, flexStart={"enabled": True}),
        "Flex Start provisioning model is incompatible with Spot",
    ),
    (
        "capacity wait only for flex-start or TPUs",
        _p(1, capacityCheckWaitTimeSeconds=60),
        "capacityCheckWaitTimeSeconds is only supported for Flex Start and for multi-host TPUs",
    ),
    (
        "capacity wait at most a day",
        lambda s: s["priorities"].__setitem__(
            1, {"flexStart": {"enabled": True}, "capacityCheckWaitTimeSeconds": 86401}
        ),
        "capacityCheckWaitTimeSeconds: 86401 is greater than the maximum of 86400",
    ),
    (
        "shutdown grace period only on Spot",
        _p(1, nodeSystemConfig={"kubeletConfig": {"shutdownGracePeriodSeconds": 30}}),
        "shutdownGracePeriodSeconds is only supported for Spot",
    ),
    (
        "critical-pod grace within the grace period",
        _p(
            0,
            nodeSystemConfig={
                "kubeletConfig": {
                    "shutdownGracePeriodSeconds": 10,
                    "shutdownGracePeriodCriticalPodsSeconds": 20,
                }
            },
        ),
        "ShutdownGracePeriodCriticalPodsSeconds must be less than or equal to ShutdownGracePeriodSeconds",
    ),
    (
        "image GC thresholds ordered",
        _p(
            0,
            nodeSystemConfig={
                "kubeletConfig": {
                    "imageGcHighThresholdPercent": 60,
                    "imageGcLowThresholdPercent": 70,
                }
            },
        ),
        "ImageGcLowThresholdPercent must be lower than imageGcHighThresholdPercent",
    ),
    (
        "gpuDirect rdma needs an accelerator network profile",
        _p(1, gpuDirect="rdma"),
        "acceleratorNetworkProfile must be specified when gpuDirect is 'rdma'",
    ),
    ("gpuDirect is rdma", _p(1, gpuDirect="tcpx"), "gpuDirect must be 'rdma'"),
    (
        "accelerator network profile auto or auto-*",
        _p(1, acceleratorNetworkProfile="manual"),
        "acceleratorNetworkProfile must be 'auto' or start with 'auto-'",
    ),
    (
        "priority minimum capacity needs a machine",
        _p(1, minimumCapacity={"targetNodeCount": 2}),
        "Priority-level MinimumCapacity requires a machineType, gpu, tpu, or specific reservation",
    ),
    (
        "specific reservations only with Specific",
        _p(1, reservations={"affinity": "AnyBestEffort", "specific": [{"name": "r"}]}),
        "Unable to set specific reservations for non specific affinity",
    ),
    (
        "Specific needs a reservation",
        _p(1, reservations={"affinity": "Specific"}),
        "At least 1 specific reservation required for specific affinity",
    ),
    ("a priority is not empty", lambda s: s["priorities"].append({}), "should be non-empty"),
    ("podFamily values", _p(0, podFamily="compute-optimized"), "'compute-optimized' is not one of"),
    (
        "priorityScore 1-1000",
        lambda s: [p.update(priorityScore=0) for p in s["priorities"]],
        "priorityScore: 0 is less than the minimum of 1",
    ),
    (
        "minCpuPlatform values",
        _p(0, minCpuPlatform="Intel Pentium"),
        "'Intel Pentium' is not one of",
    ),
    (
        "maxPodsPerNode 8-256",
        _p(0, maxPodsPerNode=4),
        "maxPodsPerNode: 4 is less than the minimum of 8",
    ),
    ("machineFamily at most 10 characters", _p(0, machineFamily="n4-standard"), "is too long"),
    (
        "boot disk at least 10 GB",
        _p(0, storage={"bootDiskSize": 5}),
        "bootDiskSize: 5 is less than the minimum of 10",
    ),
    (
        "boot disk types",
        _p(0, storage={"bootDiskType": "pd-extreme"}),
        "'pd-extreme' is not one of",
    ),
    ("boot disk KMS key name", _p(0, storage={"bootDiskKMSKey": "key-1"}), "does not match"),
    (
        "node recycling lead time at most 7 days",
        lambda s: s["priorities"].__setitem__(
            1, {"flexStart": {"enabled": True, "nodeRecycling": {"leadTimeSeconds": 604801}}}
        ),
        "leadTimeSeconds: 604801 is greater than the maximum of 604800",
    ),
    ("zone types", _p(0, location={"zoneTypes": ["EDGE"]}), "'EDGE' is not one of"),
    (
        "at most 3 zone types",
        _p(0, location={"zoneTypes": ["AI", "STANDARD", "CLUSTER_DEFAULT", "AI"]}),
        "is too long",
    ),
    ("location policy", _p(0, location={"locationPolicy": "ZONAL"}), "'ZONAL' is not one of"),
    (
        "taint value (GKE's pattern)",
        _p(0, taints=[{"key": "k", "value": "-x", "effect": "NoSchedule"}]),
        "does not match",
    ),
    ("taint effect", _p(0, taints=[{"key": "k", "effect": "NoRun"}]), "'NoRun' is not one of"),
    (
        "at most 100 node labels",
        _p(0, nodeLabels={f"l{i}": "v" for i in range(101)}),
        "has too many properties",
    ),
    (
        "GPU sharing strategy",
        _p(1, gpu={"type": "nvidia-l4", "count": 1, "gpuSharing": {"sharingStrategy": "SHARED"}}),
        "'SHARED' is not one of",
    ),
    (
        "GPU driver version",
        _p(1, gpu={"type": "nvidia-l4", "count": 1, "driverVersion": "v550"}),
        "'v550' is not one of",
    ),
    (
        "GPU topology only on A4X with a placement policy",
        _p(1, gpu={"type": "nvidia-h100-80gb", "count": 8, "topology": "1x72"}),
        "GPU Topology is supported only for A4X machine family or nvidia-gb200 GPU type",
    ),
    # spec rules
    (
        "priorityScore on all or none",
        _p(0, priorityScore=10),
        "PriorityScore must be set for all priorities or for none of them",
    ),
    (
        "at most 3 priorities per score",
        lambda s: s.update(
            priorities=[{"machineFamily": f, "priorityScore": 5} for f in ("n4", "n2", "c4", "c3")]
        ),
        "Not more than 3 priorities can have the same priorityScore",
    ),
    (
        "pod family only with Autopilot",
        _p(0, podFamily="general-purpose"),
        "In GKE Standard, pod family can be used only if Autopilot is enabled",
    ),
    (
        "no node pools under Autopilot",
        lambda s: s.update(autopilot={"enabled": True}, priorities=[{"nodepools": ["a"]}]),
        "Nodepools priority cannot be used when Autopilot is enabled",
    ),
    (
        "Autopilot keeps node pool auto-creation",
        _set(autopilot={"enabled": True}, nodePoolAutoCreation={"enabled": False}),
        "NodePoolAutoCreation cannot be disabled when Autopilot is enabled",
    ),
    (
        "Autopilot runs cos_containerd",
        lambda s: (s.update(autopilot={"enabled": True}), _npc(imageType="ubuntu_containerd")(s)),
        "Only cos_containerd image type can be used when Autopilot is enabled",
    ),
    (
        "Autopilot logs DEFAULT",
        lambda s: (
            s.update(autopilot={"enabled": True}),
            _npc(loggingConfig={"loggingVariantConfig": {"variant": "MAX_THROUGHPUT"}})(s),
        ),
        "Only DEFAULT logging variant can be used when Autopilot is enabled",
    ),
    (
        "HIGH_THROUGHPUT needs a node pool group",
        _npc(workloadType="HIGH_THROUGHPUT"),
        "If NodePoolGroup is not specified NodePoolConfig.WorkloadType can only be HIGH_AVAILABILITY",
    ),
    (
        "confidential nodes name a machine",
        lambda s: (
            s["priorities"].append({"gpu": {"type": "nvidia-h100-80gb", "count": 1}}),
            _npc(confidentialNodeType="TDX")(s),
        ),
        "each priority must specify either MachineFamily or MachineType",
    ),
    (
        "SEV machine families",
        _npc(confidentialNodeType="SEV"),
        "ConfidentialNodeType SEV only supports N2D, C2D, C3D, C4D",
    ),
    (
        "SEV_SNP on N2D",
        _npc(confidentialNodeType="SEV_SNP"),
        "ConfidentialNodeType SEV_SNP only supports N2D",
    ),
    (
        "TDX machine families",
        _npc(confidentialNodeType="TDX"),
        "ConfidentialNodeType TDX only supports C3 standard, C4 standard, A3 and A4",
    ),
    (
        "confidential GPUs name zones",
        lambda s: (
            s.update(
                priorities=[
                    {
                        "machineType": "a3-highgpu-1g",
                        "gpu": {"type": "nvidia-h100-80gb", "count": 1},
                    }
                ]
            ),
            _npc(confidentialNodeType="TDX")(s),
        ),
        "When using confidential GPUs you must specify location.zones",
    ),
    (
        "class minimum capacity needs machines",
        _set(minimumCapacity={"targetNodeCount": 1}),
        "Spec-level MinimumCapacity requires all priorities to have machine specifications",
    ),
    (
        "class shutdown grace only when every rule is Spot",
        _set(
            priorityDefaults={
                "nodeSystemConfig": {"kubeletConfig": {"shutdownGracePeriodSeconds": 30}}
            }
        ),
        "shutdownGracePeriodSeconds is only supported for Spot",
    ),
    (
        "consolidation delay 1-1440 minutes",
        _set(autoscalingPolicy={"consolidationDelayMinutes": 0}),
        "consolidationDelayMinutes: 0 is less than the minimum of 1",
    ),
    (
        "consolidation threshold 0-100",
        _set(autoscalingPolicy={"consolidationThreshold": 101}),
        "consolidationThreshold: 101 is greater than the maximum of 100",
    ),
    ("whenUnsatisfiable values", _set(whenUnsatisfiable="Wait"), "'Wait' is not one of"),
    # (activeMigration.optimizeRulePriority, autopilot.enabled, flexStart.enabled and
    # nodePoolAutoCreation.enabled are required but default to false: {} is accepted)
    ("a placement names its policy", _p(0, placement={}), "'policyName' is a required property"),
    ("reservations name an affinity", _p(0, reservations={}), "'affinity' is a required property"),
    ("node pool group needs a name", _set(nodePoolGroup={"name": ""}), "should be non-empty"),
    ("image types", _npc(imageType="cos"), "'cos' is not one of"),
    ("IP types", _npc(ipType="external"), "'external' is not one of"),
    (
        "at most 5 resource manager tags",
        _npc(resourceManagerTags=[{"key": f"p/k{i}", "value": "v"} for i in range(6)]),
        "is too long",
    ),
    ("sandbox type", _npc(sandbox={"type": "kata"}), "'kata' is not one of"),
    ("TPU driver mode", _npc(tpu={"driverMode": "Legacy"}), "'Legacy' is not one of"),
    ("workload metadata", _npc(workloadMetadata="NONE"), "'NONE' is not one of"),
    (
        "logging variant",
        _npc(loggingConfig={"loggingVariantConfig": {"variant": "FAST"}}),
        "'FAST' is not one of",
    ),
    (
        "transparent hugepages",
        _set(
            priorityDefaults={
                "nodeSystemConfig": {"linuxNodeConfig": {"transparentHugepageEnabled": "ON"}}
            }
        ),
        "'ON' is not one of",
    ),
    ("an unknown field", _p(0, spott=True), "spott: unknown field"),
]


def _errors(obj: dict[str, Any]) -> str:
    return "\n".join(str(p) for p in validate_other(obj) if p.severity == "error")


def test_the_base_object_is_accepted() -> None:
    assert validate_other(_base()) == []


def test_a_required_field_with_a_default_is_filled_not_refused() -> None:
    """The API server applies a default before it validates: GKE's ``enabled`` /
    ``optimizeRulePriority`` fields are required with ``default: false``, so ``{}`` passes."""
    obj = _base()
    obj["spec"].update(activeMigration={}, nodePoolAutoCreation={})
    obj["spec"]["priorities"][1]["flexStart"] = {}
    assert validate_other(obj) == []


@pytest.mark.parametrize(
    ("constraint", "breach", "words"), CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS]
)
def test_each_documented_constraint_refuses_its_breach(
    constraint: str, breach: Callable[[dict], None], words: str
) -> None:
    obj = _base()
    breach(obj["spec"])
    assert words in _errors(obj), constraint


def test_a_refused_rendered_class_names_its_stack_entry() -> None:
    """A rendered ComputeClass GKE would refuse is reported at ``compute_classes[<name>]``."""
    from components.computeclass.checks import compute_class_problems
    from components.plan.plan import plan
    from components.stack.loader import validate
    from tests.helpers import config

    cfg = validate(
        config(compute_classes=[{"name": "l4-spot", "node_pool": "l4", "fallback": ["on-demand"]}])
    )
    assert compute_class_problems(plan(cfg)) == []
    (cc,) = plan(cfg).compute_class_manifests
    cc["spec"]["priorities"][1]["machineFamily"] = "g2"  # with its machineType: GKE refuses
    try:
        (p,) = compute_class_problems(plan(cfg))
    finally:
        del cc["spec"]["priorities"][1]["machineFamily"]
    assert p.path == "compute_classes[l4-spot]"
    assert "MachineFamily and MachineType cannot be set together" in p
