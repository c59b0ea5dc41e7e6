"""Kubernetes names the catalog's entries use: node labels, extended resources, taints, and the
catalog's error type.

Sources: [GKE-TPU] https://cloud.google.com/kubernetes-engine/docs/concepts/tpus and
https://cloud.google.com/kubernetes-engine/docs/how-to/tpus (``cloud.google.com/gke-tpu-accelerator``
/ ``cloud.google.com/gke-tpu-topology`` labels, taint ``google.com/tpu=present:NoSchedule``);
[GKE-GPU] https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (label
``cloud.google.com/gke-accelerator``, taint ``nvidia.com/gpu=present:NoSchedule``).
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.errors import ConfigurationError

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


class CatalogError(ConfigurationError):
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
