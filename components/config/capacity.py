"""The ``capacity:`` block (:class:`CapacityConfig`): Kueue's version, cluster queues (quotas per
flavor, cohorts), local queues and priority classes, each model one Kueue object
(``kueue.x-k8s.io/v1beta2``). Jobs name their LocalQueue (``jobs[].queue``) and priority
(``jobs[].priority``). Sources: docs/sources.md#config-capacity
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.kernel.base import (
    StrictModel,
    k8s_name,
    k8s_quantity,
    reserved_namespace_problem,
    unique,
)

# Kueue releases whose CRDs the repository carries (components/capacity/crds/kueue-v<version>/,
# config/components/crd/bases of that tag of kubernetes-sigs/kueue, commit of v0.19.2:
# 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb, the newest release on 2026-12-01).
KUEUE_VERSIONS = ("0.19.2",)
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"  # charts/kueue/README.md of v0.19.2

# Resources a quota may name: what the Ray pods of this stack request.
QUOTA_RESOURCES = ("cpu", "memory", "google.com/tpu", "nvidia.com/gpu")


def _quantities(v: Any) -> dict[str, str]:
    """``v`` as ``{resource: quantity}``; the field is not named in the messages:
    the problem's path names it (``...flavors[system].nominal: resource 'foo' is ...``).

    Raises:
        ValueError: not a mapping, a resource the Ray pods never request, or a value that is not
            a quantity (the resource named as the key to fix: ``cpu 'abc' is not ...``).
    """
    if not isinstance(v, dict):
        raise ValueError(f"expected a mapping of resource -> quantity, got {v!r}")
    out: dict[str, str] = {}
    for k, q in v.items():
        if k not in QUOTA_RESOURCES:
            raise ValueError(
                f"resource {k!r} is not one the Ray pods request; valid: "
                f"{', '.join(QUOTA_RESOURCES)}"
            )
        if isinstance(q, bool) or not isinstance(q, (int, str)):
            raise ValueError(f"{k} {q!r} is not a quantity (e.g. 64, 256Gi)")
        out[k] = k8s_quantity(str(q), k)
    return out


class KueueConfig(StrictModel):
    """How Kueue is installed: the release's Helm chart, controller on the system pool."""

    version: str = Field(
        "0.19.2",
        description="Kueue release (`oci://registry.k8s.io/kueue/charts/kueue` chart version); "
        "one whose CRDs the repository carries: " + ", ".join(KUEUE_VERSIONS) + ".",
    )
    namespace: str = Field(
        "kueue-system",
        description="Namespace of the Kueue controller and its webhook; not the Ray namespace "
        "(`kuberay.namespace`, whose default-deny ingress policy would keep the API server from "
        "Kueue's webhook) nor a system namespace (`default`, `kube-*`, `gke-*`, `gmp-*`).",
    )
    elastic_jobs: bool = Field(
        True,
        description="Kueue's `ElasticJobsViaWorkloadSlices` feature gate, rendered in the chart's "
        "`controllerManager.featureGates`: a queued job with a `slices` range and a queued "
        "autoscaling RayCluster are elastic workloads (`kueue.x-k8s.io/elastic-job`), admitted "
        "slice by slice. Alpha in Kueue 0.13, beta and on by default since 0.18 "
        "(pkg/features/kube_features.go of v0.19.2). false: the gate is rendered off, and "
        "queued elastic jobs and autoscaling RayClusters are refused.",
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if v not in KUEUE_VERSIONS:
            raise ValueError(
                f"kueue.version {v!r} is not a Kueue release whose CRDs are carried "
                f"(components/capacity/crds/); valid: {', '.join(KUEUE_VERSIONS)}"
            )
        return v

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        """A Kubernetes name that is not reserved (``default``, ``kube-*``, ``gke-*``, ``gmp-*``:
        :func:`components.kernel.base.reserved_namespace_problem`, the model of
        ``kuberay.namespace``): the chart creates its Deployment, webhook Service and RBAC there
        and ``pulumi destroy`` deletes them; a namespace GKE manages refuses them (its
        ``gke-*`` namespaces) or mixes Kueue into system components."""
        k8s_name(v, "kueue.namespace")
        if problem := reserved_namespace_problem(v):
            raise ValueError(
                f"kueue.namespace {problem}: the Kueue chart installs its controller and "
                "webhook there; use a namespace of its own (the default kueue-system)"
            )
        return v


class FlavorQuota(StrictModel):
    """One flavor (a node pool) of a cluster queue and its quota per resource."""

    pool: str = Field(
        description="Node pool whose ResourceFlavor this is (`system` for the system pool, "
        "where Ray heads and job submitters run). Kueue tries flavors in the listed order."
    )
    nominal: dict[str, str] = Field(
        description="`nominalQuota` per resource (`cpu`, `memory`, `google.com/tpu`, "
        "`nvidia.com/gpu`): what the queue may use at once without borrowing; a covered "
        "resource left out gets 0."
    )
    borrowing_limit: dict[str, str] = Field(
        default_factory=dict,
        description="`borrowingLimit` per resource: most it may borrow from its cohort on top "
        "of `nominal`; unset: unlimited within the cohort. Needs `cohort`.",
    )
    lending_limit: dict[str, str] = Field(
        default_factory=dict,
        description="`lendingLimit` per resource: most of `nominal` the cohort may borrow from "
        "this queue; unset: all of it. Needs `cohort`.",
    )

    @field_validator("nominal", "borrowing_limit", "lending_limit", mode="before")
    @classmethod
    def _q(cls, v: Any) -> dict[str, str]:
        return _quantities(v)


class ClusterQueueConfig(StrictModel):
    """A Kueue ClusterQueue: quotas per flavor, optionally in a cohort with other teams."""

    name: str = Field(description="ClusterQueue name (a DNS-1123 subdomain, 63 characters).")
    cohort: str | None = Field(
        None,
        description="Cohort (`cohortName`) whose queues lend each other unused quota; unset: "
        "no borrowing (`borrowing_limit` / `lending_limit` then refused, as the CRD does).",
    )
    flavors: list[FlavorQuota] = Field(
        min_length=1,
        description="Flavors in the order Kueue tries them, each a node pool with its quota.",
    )
    queueing_strategy: str = Field(
        "BestEffortFIFO",
        description="`BestEffortFIFO` (a job that does not fit lets the next one in) or "
        "`StrictFIFO` (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/#queueing-strategy).",
    )
    preemption: bool = Field(
        True,
        description="Let a higher-priority job preempt lower-priority ones in this queue and "
        "reclaim its nominal quota lent to the cohort (`withinClusterQueue: "
        "LowerPriority`, `reclaimWithinCohort: Any`); false: `Never` for both.",
    )

    @field_validator("name", "cohort")
    @classmethod
    def _name(cls, v: str | None, info: Any) -> str | None:
        return None if v is None else k8s_name(v, f"cluster queue {info.field_name}")

    @field_validator("queueing_strategy")
    @classmethod
    def _strategy(cls, v: str) -> str:
        if v not in ("BestEffortFIFO", "StrictFIFO"):
            raise ValueError(
                f"queueing_strategy {v!r} is not a Kueue queueing strategy; valid: "
                "BestEffortFIFO, StrictFIFO"
            )
        return v

    @model_validator(mode="after")
    def _cohort_limits(self) -> ClusterQueueConfig:
        unique([f.pool for f in self.flavors], f"cluster queue {self.name}: flavors")
        if self.cohort is None:
            for f in self.flavors:
                for what in ("borrowing_limit", "lending_limit"):
                    if getattr(f, what):
                        raise ValueError(
                            f"cluster queue {self.name}: flavors[{f.pool}].{what} needs a "
                            "cohort (Kueue's CRD: 'borrowingLimit must be nil when cohort is "
                            "empty'); set cohort: <name> or remove it"
                        )
        return self


class LocalQueueConfig(StrictModel):
    """A Kueue LocalQueue in the Ray namespace, pointing at one ClusterQueue."""

    name: str = Field(description="LocalQueue name; jobs name it as `queue`.")
    cluster_queue: str = Field(description="The `cluster_queues` entry it submits to.")

    @field_validator("name", "cluster_queue")
    @classmethod
    def _name(cls, v: str, info: Any) -> str:
        return k8s_name(v, f"local queue {info.field_name}")


class PriorityClassConfig(StrictModel):
    """A Kueue WorkloadPriorityClass (``kueue.x-k8s.io/priority-class`` on a job)."""

    name: str = Field(description="WorkloadPriorityClass name; jobs name it as `priority`.")
    value: int = Field(
        ge=-(2**31),
        le=2**31 - 1,
        description="Priority (int32): higher is admitted first and may preempt lower.",
    )
    description: str = Field("", description="Free text shown by kubectl.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return k8s_name(v, "priority class name")


class CapacityConfig(StrictModel):
    """Kueue queues in front of the stack's RayJobs (empty: Kueue is not installed)."""

    topology: Literal["required", "preferred", "off"] = Field(
        "required",
        description="Topology-aware placement of queued multi-node work: flavors of GPU pools "
        "whose nodes carry the block labels (A3 High/Mega/Ultra, A4, A4X) and of TPU7x "
        "super-slicing pools name a Kueue `Topology`, and each queued worker group asks for "
        "the tightest level that holds its pods (`kueue.x-k8s.io/podset-required-topology` or "
        "`-preferred-topology`); `off`: no Topology, no request "
        "(https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas).",
    )
    kueue: KueueConfig = Field(
        default_factory=KueueConfig, description="Kueue's release and namespace."
    )
    cluster_queues: list[ClusterQueueConfig] = Field(
        default_factory=list,
        description="ClusterQueues (quotas per node-pool flavor, cohorts); none: Kueue is not "
        "installed and no job may name a queue.",
    )
    local_queues: list[LocalQueueConfig] = Field(
        default_factory=list,
        description="LocalQueues in the Ray namespace, each submitting to one cluster queue.",
    )
    priority_classes: list[PriorityClassConfig] = Field(
        default_factory=list, description="WorkloadPriorityClasses jobs may name as `priority`."
    )

    @property
    def enabled(self) -> bool:
        """Kueue is installed: at least one cluster queue is declared."""
        return bool(self.cluster_queues)

    def cluster_queue(self, name: str) -> ClusterQueueConfig:
        """The cluster queue called ``name`` (KeyError when absent)."""
        for q in self.cluster_queues:
            if q.name == name:
                return q
        raise KeyError(name)

    def local_queue(self, name: str) -> LocalQueueConfig:
        """The local queue called ``name`` (KeyError when absent)."""
        for q in self.local_queues:
            if q.name == name:
                return q
        raise KeyError(name)


_DURATION = re.compile(r"^(\d+)(s|m|h|d)\Z")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(value: str) -> int:
    """``"24h"`` -> 86400 (units s, m, h, d).

    Raises:
        ValueError: not ``<integer><s|m|h|d>``.
    """
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration: an integer and s, m, h or d (e.g. 24h)")
    return int(m.group(1)) * _UNIT[m.group(2)]
