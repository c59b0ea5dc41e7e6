"""The ``kuberay`` block: how KubeRay is installed and the Ray namespace's policies (Serve ingress,
ResourceQuota, LimitRange)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.kernel.base import (
    INT64_MAX,
    StrictModel,
    cidr,
    k8s_name,
    k8s_quantity,
    reserved_namespace_problem,
    unique,
)

# KubeRay versions whose CRDs the product carries (components/kuberay/crds/v<version>/, from
# the kuberay-operator chart's ``crds/`` of that tag); ``raygke check`` validates against that
# version's CRD schema and operator rules, and helm mode installs that version's CRDs.
# tests/components/config/test_raycrs.py keeps this tuple and the folders in step.
KUBERAY_CHART_VERSIONS = ("1.7.0", "1.6.2")


class ServeIngressConfig(StrictModel):
    """Who may reach Ray Serve's HTTP port (8000) of the stack's Ray clusters from outside the
    cluster's own pods, rendered as one NetworkPolicy ingress rule
    (https://kubernetes.io/docs/concepts/services-networking/network-policies/). Empty (the
    default): only the pods of the same Ray cluster."""

    namespaces: list[str] = Field(
        default_factory=list,
        description="Kubernetes namespaces whose pods may call Serve on port 8000 (e.g. your "
        "gateway's namespace), each once; not `default` nor a system namespace (`kube-*`, "
        "`gke-*`, `gmp-*`), whose every pod would be admitted.",
    )
    cidrs: list[str] = Field(
        default_factory=list,
        description="IP ranges (CIDR, e.g. `10.0.0.0/8`) that may call Serve on port 8000, such "
        "as an internal load balancer's proxy subnet.",
    )

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, v: list[str]) -> list[str]:
        """Kubernetes names, each once, none reserved (:data:`RESERVED_NAMESPACES`: admitting
        one opens Serve's port to every pod there)."""
        for n in v:
            k8s_name(n, "kuberay.serve_from.namespaces entry")
            if problem := reserved_namespace_problem(n):
                raise ValueError(
                    f"kuberay.serve_from.namespaces entry {problem}: admitting it would let every "
                    "pod there call Serve; name the namespace of your gateway or clients"
                )
        return unique(v, "kuberay.serve_from.namespaces")

    @field_validator("cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        for c in v:
            cidr(c, "kuberay.serve_from.cidrs entry", example="10.0.0.0/8")
        return unique(v, "kuberay.serve_from.cidrs")


class QuotaConfig(StrictModel):
    """The Ray namespace's ResourceQuota (https://kubernetes.io/docs/concepts/policy/
    resource-quotas/): totals of what all pods in the namespace may request. Each unset key is
    derived from the Node Auto Provisioning limits, which already bound the whole cluster
    (:func:`components.cluster.render.nap_resource_limits`)."""

    cpu: str | None = Field(
        None,
        description="Total CPU requests in the namespace (`requests.cpu`, a quantity); unset: "
        "the NAP `cpu` limit.",
    )
    memory: str | None = Field(
        None,
        description="Total memory requests and limits (`requests.memory` / `limits.memory`, a "
        "quantity); unset: the NAP `memory` limit in GiB.",
    )
    gpus: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Total `nvidia.com/gpu` requests; unset: the sum of the NAP GPU limits.",
    )
    tpus: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Total `google.com/tpu` chip requests; unset: the sum of the NAP TPU limits.",
    )
    pods: int | None = Field(
        None,
        ge=1,
        le=INT64_MAX,
        description="Most pods in the namespace; unset: no pod-count limit.",
    )

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str | None:
        return None if v is None else k8s_quantity(str(v), f"kuberay.quota.{info.field_name}")


class LimitRangeConfig(StrictModel):
    """The Ray namespace's LimitRange (https://kubernetes.io/docs/concepts/policy/limit-range/):
    requests and limits given to a container that sets none (the quota refuses such a pod
    otherwise). Ray pods set their own; this covers injected or hand-made ones."""

    default_cpu: str = Field("1", description="Default CPU limit of a container (quantity).")
    default_memory: str = Field(
        "1Gi", description="Default memory limit of a container (quantity)."
    )
    default_request_cpu: str = Field(
        "100m", description="Default CPU request of a container (quantity)."
    )
    default_request_memory: str = Field(
        "256Mi", description="Default memory request of a container (quantity)."
    )

    @field_validator("*", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str:
        return k8s_quantity(str(v), f"kuberay.limit_range.{info.field_name}")

    @model_validator(mode="after")
    def _order(self) -> LimitRangeConfig:
        from components.kernel.base import quantity_value

        for kind in ("cpu", "memory"):
            req, lim = getattr(self, f"default_request_{kind}"), getattr(self, f"default_{kind}")
            if quantity_value(req) > quantity_value(lim):
                raise ValueError(
                    f"kuberay.limit_range.default_request_{kind} {req} is above "
                    f"default_{kind} {lim}; a request may not exceed its limit"
                )
        return self


class KubeRayConfig(StrictModel):
    """How KubeRay is installed: the ``kuberay-operator`` Helm chart or the GKE Ray add-on.

    Multi-host TPU slices need the TPU initialization webhook, which injects each pod's
    ``TPU_WORKER_ID`` / ``TPU_WORKER_HOSTNAMES``
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html). The GKE Ray add-on
    installs it; with ``mode: helm`` set ``tpu_webhook: true`` once you have installed it yourself
    (https://github.com/GoogleCloudPlatform/ai-on-gke/tree/main/ray-on-gke/tpu/kuberay-tpu-webhook).
    """

    mode: Literal["helm", "gke-addon"] = Field(
        "helm",
        description="`helm`: install the `kuberay-operator` chart (https://ray-project.github.io/"
        "kuberay-helm/); `gke-addon`: enable GKE's Ray Operator add-on, which runs KubeRay and "
        "the TPU webhook (https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/"
        "how-to/enable-ray-on-gke). This is the only switch for the add-on.",
    )
    chart_version: str = Field(
        "1.7.0",
        description="Version of the `kuberay-operator` Helm chart (KubeRay release): one whose "
        "CRDs the product carries (1.7.0, 1.6.2); the check uses that version's CRD schemas and "
        "operator rules. The chart is installed with `mode: helm` only.",
    )
    namespace: str = Field(
        "ray",
        description="Kubernetes namespace of the RayClusters, RayJobs, service accounts and (with "
        "`mode: helm`) the operator. Not `default` nor a system namespace (`kube-*`, `gke-*`, "
        "`gmp-*`): the stack enforces Pod Security `restricted`, default-deny NetworkPolicies, a "
        "ResourceQuota and a LimitRange on it.",
    )
    tpu_webhook: bool = Field(
        False,
        description="With `mode: helm`: you have installed the KubeRay TPU webhook yourself "
        "(https://github.com/GoogleCloudPlatform/ai-on-gke/tree/main/ray-on-gke/tpu/"
        "kuberay-tpu-webhook), so multi-host TPU worker groups are allowed. Only steers that "
        "check; nothing rendered changes.",
    )

    pod_security: Literal["restricted", "baseline"] = Field(
        "restricted",
        description="Pod Security Admission level the Ray namespace enforces "
        "(`pod-security.kubernetes.io/enforce`; warn and audit stay `restricted`): every pod "
        "template the stack renders passes `restricted`; `baseline` is the escape hatch for "
        "a sidecar or init container injected by something else that does not "
        "(https://kubernetes.io/docs/concepts/security/pod-security-standards/).",
    )
    serve_from: ServeIngressConfig = Field(
        default_factory=ServeIngressConfig,
        description="Namespaces and CIDRs allowed to reach Ray Serve's HTTP port 8000 through "
        "the namespace's NetworkPolicies; default: none (only the Ray cluster's own pods).",
    )
    quota: QuotaConfig = Field(
        default_factory=QuotaConfig,
        description="ResourceQuota of the Ray namespace; unset keys follow the NAP limits.",
    )
    limit_range: LimitRangeConfig = Field(
        default_factory=LimitRangeConfig,
        description="LimitRange of the Ray namespace: defaults for containers without "
        "requests/limits.",
    )

    @field_validator("chart_version")
    @classmethod
    def _chart_version(cls, v: str) -> str:
        if v not in KUBERAY_CHART_VERSIONS:
            raise ValueError(
                f"{v!r} is not a KubeRay version whose CRDs this product "
                f"carries; valid: {', '.join(KUBERAY_CHART_VERSIONS)}"
            )
        return v

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        """A Kubernetes name that is not reserved (:data:`RESERVED_NAMESPACES`): the stack puts
        Pod Security ``restricted``, default-deny NetworkPolicies, a quota and a LimitRange on
        its namespace and owns it."""
        k8s_name(v, "kuberay.namespace")
        if problem := reserved_namespace_problem(v):
            raise ValueError(
                f"kuberay.namespace {problem}: the stack would enforce Pod Security restricted, "
                "default-deny NetworkPolicies and a ResourceQuota on it and manage it as its "
                "own; use a namespace of its own (e.g. ray)"
            )
        return v

    @model_validator(mode="after")
    def _webhook_only_with_helm(self) -> KubeRayConfig:
        if self.tpu_webhook and self.mode == "gke-addon":
            raise ValueError(
                "tpu_webhook: true has no effect with mode gke-addon (the add-on installs the "
                "TPU webhook itself); remove it"
            )
        return self
