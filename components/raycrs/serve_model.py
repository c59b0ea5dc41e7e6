"""The ``services`` block: Ray Serve applications, each rendered as a KubeRay RayService.

A service runs one registered Serve application (``contract.registry``: ``serve_llm``, vLLM behind
Ray Serve LLM's OpenAI API) on
its own RayCluster (the RayService's ``rayClusterConfig``): a head on the system pool and one
autoscaling worker group on ``node_pool``. Its pods run as ``service_account`` (default the
read-only ``ray-serve`` identity: checkpoints and artifacts read).

Upgrades (KubeRay v1.7.0, ``ray.io_rayservices.yaml`` ``spec.upgradeStrategy`` and
``validation.go`` ``ValidateRayServiceSpec`` / ``ValidateClusterUpgradeOptions``):

* ``NewCluster`` (default): a change of the cluster spec brings up a whole new RayCluster, and
  traffic moves to it once its Serve applications are ready; then the old one is deleted.
  A change of ``serveConfigV2`` alone (args, checkpoint) is applied in place to the running
  cluster (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice.html).
* ``NewClusterWithIncrementalUpgrade``: traffic moves in steps through a Gateway API gateway.
  It needs the operator's ``RayServiceIncrementalUpgrade`` feature gate (``kuberay.mode: helm``
  sets it in the chart values, :func:`components.kuberay.render.feature_gates`; refused with
  ``mode: gke-addon``, :func:`components.stack.rules.incremental_upgrade_needs_helm`), the Gateway
  API CRDs and a controller for ``gateway_class_name`` (the stack enables GKE's Gateway API,
  :func:`components.cluster.render.gateway_api_channel`), autoscaling on
  (``enableInTreeAutoscaling``), and
  ``clusterUpgradeOptions``: ``maxSurgePercent`` 0..100 (default 100), ``stepSizePercent``
  0..100 and <= max surge, ``intervalSeconds`` > 0, ``gatewayClassName`` set
  (``ValidateClusterUpgradeOptions``).
* ``None``: no zero-downtime upgrade; the cluster is updated in place.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.kernel.base import INT32_MAX, RAYJOB_NAME_MAX, _k8s_name, _Model
from components.raycrs.model import HeadConfig

UPGRADE_TYPES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")


class IncrementalUpgradeConfig(_Model):
    """``upgradeStrategy.clusterUpgradeOptions`` of ``NewClusterWithIncrementalUpgrade``
    (KubeRay v1.7.0 validation.go ``ValidateClusterUpgradeOptions``)."""

    gateway_class_name: str = Field(
        description="Gateway API GatewayClass whose controller moves the traffic "
        "(`gatewayClassName`), e.g. `gke-l7-rilb` on GKE "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api).",
    )
    step_size_percent: int = Field(
        10, ge=0, le=100, description="Traffic moved per step (`stepSizePercent`), 0-100."
    )
    interval_seconds: int = Field(
        30, ge=1, le=INT32_MAX, description="Seconds between steps (`intervalSeconds`), > 0."
    )
    max_surge_percent: int = Field(
        100,
        ge=0,
        le=100,
        description="Capacity the new cluster may add at once (`maxSurgePercent`), 0-100; at "
        "least `step_size_percent`.",
    )

    @model_validator(mode="after")
    def _step(self) -> IncrementalUpgradeConfig:
        if self.step_size_percent > self.max_surge_percent:
            raise ValueError(
                f"step_size_percent {self.step_size_percent} > max_surge_percent "
                f"{self.max_surge_percent}; KubeRay needs step <= max surge "
                "(validation.go ValidateClusterUpgradeOptions)"
            )
        return self


class ServiceConfig(_Model):
    """A Ray Serve application served by a KubeRay RayService (see the module docstring)."""

    name: str = Field(
        description="RayService name: 1-47 lowercase letters, digits and hyphens, starting "
        "with a letter (KubeRay MaxRayServiceNameLength, validation.go "
        "ValidateRayServiceMetadata). Its in-cluster URL is "
        "`http://<name>-serve-svc.<namespace>.svc.cluster.local:8000`.",
    )
    workload: str = Field(
        "serve_llm",
        description="A registered Serve application (`contract/registry.py`): `serve_llm`, vLLM "
        "behind Ray Serve LLM (the OpenAI API: `/v1/models`, `/v1/completions`, "
        "`/v1/chat/completions`).",
    )
    checkpoint: str = Field(
        description="What to serve: a `gs://` path in the checkpoints bucket (a checkpoint "
        "folder, or an experiment folder whose newest verifying checkpoint is served), or the "
        "name of a job in `jobs:` whose checkpoints (`<checkpoints bucket>/<job name>`) to "
        "serve, newest verifying first.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of the Serve application (`serve_llm`: autoscaling `min_replicas` "
        "/ `max_replicas` / `target_ongoing_requests`, `max_model_len`, `dtype`, "
        "`tensor_parallel_size` (default: the GPUs of one node / chips of the TPU slice; a "
        "smaller divisor of the model's heads may be set), ...), checked against its accepted "
        "arguments; `model`, `accelerator` and `accelerator_type` come from `checkpoint` and "
        "the node pool.",
    )
    node_pool: str = Field(
        description="Declared node pool of the service's one worker group: a GPU pool (vLLM's "
        "CUDA build, the `gpu` image) or a single-host TPU slice pool (vllm-tpu, the "
        "`tpu-serve` image); CPU pools are refused (vLLM's CPU build needs PyTorch's CPU wheel, "
        "which the images cannot install from PyPI).",
    )
    min_workers: int = Field(
        1, ge=0, le=INT32_MAX, description="Worker pods kept at all times (`minReplicas`)."
    )
    max_workers: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,
        description="Most worker pods (`maxReplicas`); unset: the pool's `max_nodes`.",
    )
    head: HeadConfig = Field(
        default_factory=HeadConfig,
        description="The head pod's resources; it runs on the system pool (with Serve's proxy).",
    )
    service_account: str = Field(
        "ray-serve",
        description="Name of a `workload_identities` entry the pods run as; the default "
        "`ray-serve` reads the checkpoints and artifacts buckets only.",
    )
    upgrade_strategy: Literal["NewCluster", "NewClusterWithIncrementalUpgrade", "None"] = Field(
        "NewCluster",
        description="`upgradeStrategy.type`: `NewCluster` (a new RayCluster takes over when "
        "ready), `NewClusterWithIncrementalUpgrade` (traffic moves in steps through a Gateway; "
        "needs `incremental_upgrade` and `kuberay.mode: helm`, whose chart values then turn on "
        "the operator's RayServiceIncrementalUpgrade feature gate; the cluster gets GKE's "
        "Gateway API) or `None` (in place).",
    )
    incremental_upgrade: IncrementalUpgradeConfig | None = Field(
        None,
        description="`clusterUpgradeOptions`; required with "
        "`upgrade_strategy: NewClusterWithIncrementalUpgrade`, refused otherwise.",
    )
    idle_timeout_seconds: int = Field(
        600,
        ge=0,
        le=INT32_MAX,
        description="Seconds an idle worker is kept before the autoscaler removes it.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _k8s_name(v, "service name", RAYJOB_NAME_MAX, dns1035=True)

    @model_validator(mode="after")
    def _upgrade(self) -> ServiceConfig:
        incremental = self.upgrade_strategy == "NewClusterWithIncrementalUpgrade"
        if incremental and self.incremental_upgrade is None:
            raise ValueError(
                "upgrade_strategy NewClusterWithIncrementalUpgrade needs incremental_upgrade: "
                "{gateway_class_name: ...} (validation.go ValidateClusterUpgradeOptions)"
            )
        if not incremental and self.incremental_upgrade is not None:
            raise ValueError(
                f"incremental_upgrade is set but upgrade_strategy is {self.upgrade_strategy}; "
                "remove it or set upgrade_strategy: NewClusterWithIncrementalUpgrade"
            )
        if self.max_workers is not None and self.min_workers > self.max_workers:
            raise ValueError(f"min_workers {self.min_workers} > max_workers {self.max_workers}")
        if "checkpoint" in self.args:
            raise ValueError("args.checkpoint: set the service's checkpoint field instead")
        return self

    @property
    def checkpoint_job(self) -> str | None:
        """The job whose checkpoints are served, None for a ``gs://`` path."""
        return None if self.checkpoint.startswith("gs://") else self.checkpoint
