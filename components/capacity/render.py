"""Pure render of the capacity objects: Kueue's Helm values and its custom resources
(ResourceFlavors, ClusterQueue, AdmissionCheck, RayJob queue labels), every object
``kueue.x-k8s.io/v1beta2`` (the storage version of the carried v0.19.2 CRDs). Flavors are built
on the plan floor (:mod:`components.plan.flavors`); this module hands out copies.
Sources: docs/sources.md#capacity-render
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from components import catalog
from components.capacity.superslice import SLICE_CHECK, SLICE_CONTROLLER
from components.capacity.topology import topology_objects
from components.config.capacity import CapacityConfig, ClusterQueueConfig
from components.nodepools.render import NodePoolSpec

# The flavor builder and its helpers live on the plan floor (the plan carries the flavors);
# re-exported here with the other Kueue renders.
from components.plan.flavors import API_VERSION as API_VERSION
from components.plan.flavors import CLASS_SHAPE_LABELS as CLASS_SHAPE_LABELS
from components.plan.flavors import PART_OF as PART_OF
from components.plan.flavors import class_flavor_labels as class_flavor_labels
from components.plan.flavors import flavor_labels as flavor_labels
from components.plan.flavors import meta
from components.plan.plan import Plan

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
DWS_CHECK = "dws-provisioning"
RAY_FRAMEWORKS = ("ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice")
# The feature gate of elastic workloads (workload slices) and the per-object opt-in: Kueue treats
# an object as elastic only when both are on (kueue v0.19.2 pkg/workloadslicing/workloadslicing.go
# ``Enabled``; gate alpha in 0.13, beta and default-on since 0.18, pkg/features/kube_features.go;
# annotation pkg/constants/constants.go ``ElasticJobAnnotation``).
ELASTIC_GATE = "ElasticJobsViaWorkloadSlices"
ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"
# Resources DWS provisions for (the ProvisioningRequestConfig's managedResources): the
# accelerators; cpu and memory of the same pods come with the nodes.
DWS_MANAGED_RESOURCES = (catalog.TPU_RESOURCE, catalog.GPU_RESOURCE)


def queue_labels(job: Any) -> dict[str, str]:
    """The RayJob labels of a queued job: its LocalQueue and, when set, its priority class."""
    labels = {QUEUE_LABEL: job.queue}
    if job.priority:
        labels[PRIORITY_LABEL] = job.priority
    return labels


def resource_flavor(p: Plan, pool: str) -> dict[str, Any]:
    """The ResourceFlavor of node pool ``pool`` (named after the pool) of the stack whose plan is
    ``p``, see the module docstring: the plan's record (:attr:`components.plan.plan.Plan.resource_flavors`, built by
    :func:`components.plan.flavors.resource_flavor`), a copy the caller may change.

    Raises:
        KeyError: ``pool`` is not a declared node pool nor ``system``.
    """
    return copy.deepcopy(p.resource_flavors[pool])


def queued_pool(pool_specs: Mapping[str, Sequence[NodePoolSpec]], pool: str) -> bool:
    """True when ``pool`` has ``provisioning: queued`` (``pool_specs``:
    :attr:`components.plan.plan.Plan.pool_specs`)."""
    specs = pool_specs.get(pool)
    return bool(specs) and specs[0].queued


def covered_resources(
    pool_specs: Mapping[str, Sequence[NodePoolSpec]], cq: ClusterQueueConfig
) -> list[str]:
    """``cpu``, ``memory``, then the accelerator resources the queue's flavors offer or name
    (``pool_specs``: :attr:`components.plan.plan.Plan.pool_specs`)."""
    out = ["cpu", "memory"]
    for f in cq.flavors:
        names = set(f.nominal)
        for s in pool_specs.get(f.pool, ())[:1]:
            names |= set(s.capacity)
        for r in (catalog.TPU_RESOURCE, catalog.GPU_RESOURCE):
            if r in names and r not in out:
                out.append(r)
    return out


def namespace_selector(namespaces: Sequence[str]) -> dict[str, Any]:
    """A ClusterQueue's ``namespaceSelector``: the Ray namespace by name, or with a
    ``gpudirect`` namespace both (``In``)."""
    key = "kubernetes.io/metadata.name"
    if len(namespaces) == 1:
        return {"matchLabels": {key: namespaces[0]}}
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(namespaces)}]}


def gpudirect_queues(p: Plan) -> list[str]:
    """The LocalQueues the ``gpudirect`` namespace needs too: those its queued RayClusters and
    RayJobs name (:attr:`components.plan.context.Context.ray_namespaces`; the plan's
    :attr:`~components.plan.plan.Plan.clusters` and :attr:`~components.plan.plan.Plan.jobs`),
    config order."""
    moved = p.context.ray_namespaces
    objects = [*p.clusters.values(), *(t.job for t in p.jobs)]
    names = [x.queue for x in objects if x.name in moved and x.queue]
    return list(dict.fromkeys(names))


def cluster_queue(p: Plan, cq: ClusterQueueConfig) -> dict[str, Any]:
    """The ClusterQueue of ``cq`` (a queue of the stack whose plan is ``p``): one resource group,
    flavors in order, quotas as declared (0 for a covered resource a flavor leaves out); admitted
    only from the Ray namespaces (:func:`namespace_selector`)."""
    covered = covered_resources(p.pool_specs, cq)
    flavors = []
    for f in cq.flavors:
        resources = []
        for r in covered:
            item: dict[str, Any] = {"name": r, "nominalQuota": f.nominal.get(r, "0")}
            if r in f.borrowing_limit:
                item["borrowingLimit"] = f.borrowing_limit[r]
            if r in f.lending_limit:
                item["lendingLimit"] = f.lending_limit[r]
            resources.append(item)
        flavors.append({"name": f.pool, "resources": resources})
    spec: dict[str, Any] = {
        "namespaceSelector": namespace_selector(p.context.namespaces),
        "queueingStrategy": cq.queueing_strategy,
        "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
        "preemption": {
            "withinClusterQueue": "LowerPriority" if cq.preemption else "Never",
            "reclaimWithinCohort": "Any" if cq.preemption and cq.cohort else "Never",
        },
    }
    if cq.cohort:
        spec["cohortName"] = cq.cohort
    dws = [f.pool for f in cq.flavors if queued_pool(p.pool_specs, f.pool)]
    checks = [{"name": DWS_CHECK, "onFlavors": dws}] if dws else []
    slices = [f.pool for f in cq.flavors if super_slicing_pool(p.pool_specs, f.pool)]
    if slices:  # GKE's slice controller forms the super-slice before the pods start
        checks.append({"name": SLICE_CHECK, "onFlavors": slices})
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": meta(cq.name),
        "spec": spec,
    }


def super_slicing_pool(pool_specs: Mapping[str, Sequence[NodePoolSpec]], pool: str) -> bool:
    """True when ``pool`` is a TPU7x super-slicing pool (:mod:`components.capacity.superslice`;
    ``pool_specs``: :attr:`components.plan.plan.Plan.pool_specs`)."""
    specs = pool_specs.get(pool)
    return bool(specs) and specs[0].super_slicing


def slice_check() -> dict[str, Any]:
    """The AdmissionCheck of GKE's slice controller (``controllerName: accelerator.gke.io/slice``,
    :mod:`components.capacity.superslice`)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": meta(SLICE_CHECK),
        "spec": {"controllerName": SLICE_CONTROLLER},
    }


def uses_dws(
    pool_specs: Mapping[str, Sequence[NodePoolSpec]], cluster_queues: Sequence[ClusterQueueConfig]
) -> bool:
    """Some cluster queue (``capacity.cluster_queues``) lists a queued node pool as a flavor
    (``pool_specs``: :attr:`components.plan.plan.Plan.pool_specs`)."""
    return any(queued_pool(pool_specs, f.pool) for q in cluster_queues for f in q.flavors)


def dws_objects() -> list[dict[str, Any]]:
    """The ProvisioningRequestConfig and the AdmissionCheck that uses it (both ``dws-provisioning``)."""
    prc = {
        "apiVersion": API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": meta(DWS_CHECK),
        "spec": {
            "provisioningClassName": catalog.QUEUED_PROVISIONING_CLASS,
            "managedResources": list(DWS_MANAGED_RESOURCES),
        },
    }
    check = {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": meta(DWS_CHECK),
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": DWS_CHECK,
            },
        },
    }
    return [prc, check]


def flavor_pools(cluster_queues: Sequence[ClusterQueueConfig]) -> list[str]:
    """Every node pool some cluster queue (``capacity.cluster_queues``) lists, in first-listed
    order."""
    out: list[str] = []
    for q in cluster_queues:
        for f in q.flavors:
            if f.pool not in out:
                out.append(f.pool)
    return out


def render_capacity(p: Plan, capacity: CapacityConfig) -> list[dict[str, Any]]:
    """Every Kueue object of ``capacity`` (the ``capacity`` block of the stack whose plan is
    ``p``), in creation order: WorkloadPriorityClasses, the
    Topologies the flavors name (:mod:`components.capacity.topology`), ResourceFlavors,
    ProvisioningRequestConfig + AdmissionCheck (when a queue uses a queued pool), the slice
    AdmissionCheck (when one uses a super-slicing pool), ClusterQueues, LocalQueues (namespace ``kuberay.namespace``; those the ``gpudirect`` namespace's
    objects name again there, :func:`gpudirect_queues`). Empty without queues.
    The ResourceFlavors are copies of the plan's
    (:attr:`components.plan.plan.Plan.resource_flavors`).

    Raises:
        KeyError: a flavor names an undeclared pool (the stack rules report it first).
    """
    if not capacity.enabled:
        return []
    namespace = p.context.namespace
    out: list[dict[str, Any]] = [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": meta(pc.name),
            "value": pc.value,
            **({"description": pc.description} if pc.description else {}),
        }
        for pc in capacity.priority_classes
    ]
    # the plan's flavors (built once per stack), copied: the caller owns what is returned
    flavors = [copy.deepcopy(p.resource_flavors[f]) for f in flavor_pools(capacity.cluster_queues)]
    out += topology_objects(flavors) + flavors  # a flavor's Topology first
    if uses_dws(p.pool_specs, capacity.cluster_queues):
        out += dws_objects()
    if any(super_slicing_pool(p.pool_specs, f) for f in flavor_pools(capacity.cluster_queues)):
        out.append(slice_check())
    out += [cluster_queue(p, q) for q in capacity.cluster_queues]
    out += [
        {
            "apiVersion": API_VERSION,
            "kind": "LocalQueue",
            "metadata": meta(lq.name, namespace),
            "spec": {"clusterQueue": lq.cluster_queue},
        }
        for lq in capacity.local_queues
    ]
    gpudirect = p.context.gpudirect_namespace
    wanted = gpudirect_queues(p)
    out += [
        {
            "apiVersion": API_VERSION,
            "kind": "LocalQueue",
            "metadata": meta(lq.name, gpudirect),
            "spec": {"clusterQueue": lq.cluster_queue},
        }
        for lq in capacity.local_queues
        if gpudirect and lq.name in wanted
    ]
    return out


def manager_config() -> str:
    """Kueue's ``controller_manager_config.yaml``: the chart's default (v0.19.2
    ``charts/kueue/values.yaml``) with the integrations limited to the Ray frameworks, and jobs
    without a queue label left alone (``manageJobsWithoutQueueName: false``)."""
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(RAY_FRAMEWORKS)},
    }
    return yaml.safe_dump(config, sort_keys=False)


def helm_values(elastic_jobs: bool) -> dict[str, Any]:
    """Values of the Kueue chart: the controller on the system pool, the Ray integrations on
    (:func:`manager_config`), the chart's restricted pod security kept, and the
    ``ElasticJobsViaWorkloadSlices`` gate set explicitly to ``capacity.kueue.elastic_jobs``
    (``controllerManager.featureGates``, a list of ``{name, enabled}`` the chart turns into the
    manager's ``--feature-gates``: v0.19.2 ``charts/kueue/values.yaml``,
    ``templates/_helpers.tpl`` ``kueue.featureGates``), so a chart whose default changes does
    not silently turn elastic admission off for the stack's elastic jobs and RayClusters
    (``elastic_jobs``: ``capacity.kueue.elastic_jobs``)."""
    return {
        "controllerManager": {
            "nodeSelector": {catalog.NODE_POOL_LABEL: "system"},
            "podDisruptionBudget": {"enabled": False},
            "featureGates": [
                {"name": ELASTIC_GATE, "enabled": elastic_jobs},
            ],
        },
        "managerConfig": {"controllerManagerConfigYaml": manager_config()},
    }
