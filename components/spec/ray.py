"""The ``kuberay``, ``ray``, ``ray_clusters`` and ``jobs`` blocks."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.spec.base import _k8s_name, _Model, _quantity

# --------------------------------------------------------------------------------- ray / kuberay


class KubeRayConfig(_Model):
    """How KubeRay is installed: the ``kuberay-operator`` Helm chart or the GKE Ray add-on.

    Multi-host TPU slices need the TPU initialization webhook, which injects each pod's
    ``TPU_WORKER_ID`` / ``TPU_WORKER_HOSTNAMES``
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html). The GKE Ray add-on
    installs it; with ``mode: helm`` set ``tpu_webhook: true`` once you have installed it yourself
    (https://github.com/GoogleCloudPlatform/ai-on-gke/tree/main/ray-on-gke/tpu/kuberay-tpu-webhook).
    """

    mode: Literal["helm", "gke-addon"] = "helm"
    chart_version: str = "1.7.0"
    namespace: str = "ray"
    tpu_webhook: bool = False

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _k8s_name(v, "kuberay.namespace")


class RayImages(_Model):
    """Ray container images per accelerator kind."""

    cpu: str = "rayproject/ray:2.60.0-py311"
    gpu: str = "rayproject/ray:2.60.0-py311-gpu"
    tpu: str = "rayproject/ray:2.60.0-py311"


class RayConfig(_Model):
    """Ray version and images; every image's tag must carry the same Ray version."""

    version: str = "2.60.0"
    images: RayImages = Field(default_factory=RayImages)

    @model_validator(mode="after")
    def _image_versions(self) -> RayConfig:
        problems = []
        for kind in ("cpu", "gpu", "tpu"):
            image = getattr(self.images, kind)
            tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
            m = re.match(r"(\d+\.\d+\.\d+)", tag)
            if not m:
                problems.append(
                    f"images.{kind} {image!r} has no Ray version tag; use e.g. "
                    f"rayproject/ray:{self.version}-py311"
                )
            elif m.group(1) != self.version:
                problems.append(
                    f"images.{kind} {image!r} is Ray {m.group(1)} but ray.version is {self.version}"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self


class HeadConfig(_Model):
    """The Ray head pod; it runs on the system pool and is never exposed outside the cluster."""

    cpu: str = "2"
    memory: str = "8Gi"

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str:
        return _quantity(str(v), f"head.{info.field_name}")


class WorkerGroupConfig(_Model):
    """A RayCluster worker group bound to one declared node pool.

    For TPU pools replicas count slices (each replica is ``numOfHosts`` pods); for GPU and CPU pools
    replicas count pods (one per node).
    """

    name: str
    node_pool: str
    min_replicas: int = Field(0, ge=0)
    max_replicas: int | None = Field(None, ge=1)
    cpu: str | None = None
    memory: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "worker group name")

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str | None:
        return None if v is None else _quantity(str(v), f"worker group {info.field_name}")


class RayClusterConfig(_Model):
    """A long-lived RayCluster."""

    name: str
    service_account: str = "ray-train"
    head: HeadConfig = Field(default_factory=HeadConfig)
    worker_groups: list[WorkerGroupConfig] = Field(default_factory=list)
    autoscaling: bool = True
    idle_timeout_seconds: int = Field(600, ge=0)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "ray cluster name")


class JobConfig(_Model):
    """A RayJob running one registered workload."""

    name: str
    workload: str
    args: dict[str, Any] = Field(default_factory=dict)
    cluster: str | None = None
    worker_group: str | None = None
    node_pool: str | None = None
    service_account: str = "ray-train"
    backoff_limit: int = Field(0, ge=0)
    max_failures: int = Field(2, ge=0)
    active_deadline_seconds: int | None = Field(None, ge=60)
    ttl_seconds_after_finished: int = Field(3600, ge=0)
    shutdown_after_job_finishes: bool = True
    suspend: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "job name")

    @model_validator(mode="after")
    def _target(self) -> JobConfig:
        if self.cluster and self.node_pool:
            raise ValueError(
                "set either cluster (submit to a long-lived RayCluster) or node_pool (the job "
                "brings its own RayCluster), not both"
            )
        if self.worker_group and not self.cluster:
            raise ValueError(
                f"worker_group {self.worker_group!r} needs cluster: <ray cluster name>"
            )
        return self
