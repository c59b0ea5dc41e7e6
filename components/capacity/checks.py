"""Capacity checks on the rendered objects (:func:`render_problems`, run by ``raygke check`` with
the other render checks): Kueue's rules for Ray objects, the DWS / flex-start limits, the
carried Kueue CRDs (the rules on the stack model are :mod:`components.capacity.rules`). The
checks and their sources:
docs/sources.md#capacity-checks
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components import catalog
from components.capacity import webhooks
from components.capacity.rules import KUEUE_RAYJOB_WEBHOOK
from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.config.capacity import CapacityConfig, ClusterQueueConfig
    from components.plan.plan import Plan

CRDS_ROOT = Path(__file__).resolve().parent / "crds"
MAX_POD_SETS = 18  # kueue v0.19.2 pkg/controller/jobframework/constants.go MaxPodSets
HEAD_POD_SET = "head"  # pkg/controller/jobs/raycluster/common.go headGroupPodSetName
KUEUE_RAYCLUSTER_COMMON = "kueue pkg/controller/jobs/raycluster/common.go"


def kueue_crds_dir(version: str) -> Path:
    """``components/capacity/crds/kueue-v<version>`` (the release's config/components/crd/bases)."""
    return CRDS_ROOT / f"kueue-v{version}"


def kueue_crd_file(kind: str, version: str) -> Path:
    """The carried CRD file of Kueue ``kind`` (``ClusterQueue`` -> ``kueue.x-k8s.io_clusterqueues.yaml``).

    Raises:
        ValueError: a kind whose CRD is not carried.
    """
    path = kueue_crds_dir(version) / f"kueue.x-k8s.io_{kind.lower()}s.yaml"
    if kind == "WorkloadPriorityClass":
        path = kueue_crds_dir(version) / "kueue.x-k8s.io_workloadpriorityclasses.yaml"
    if kind == "Topology":
        path = kueue_crds_dir(version) / "kueue.x-k8s.io_topologies.yaml"
    if not path.is_file():
        raise ValueError(f"no carried Kueue v{version} CRD for kind {kind!r} ({path})")
    return path


def kueue_schema_problems(manifests: Iterable[dict[str, Any]], version: str) -> list[Problem]:
    """Each Kueue object against the carried CRD of ``version``: everything the API server checks
    on create (:func:`components.kernel.crdschema.validate_object`: unknown (pruned) fields,
    defaults, the schema, ``metadata``, list types and the CRDs' CEL rules - ClusterQueue's
    "borrowingLimit must be nil when cohort is empty", ResourceFlavor's toleration rules, ...).
    One Problem each, ``<Kind> <name>: <path>: <why>``; a CEL rule not evaluated is a ``warning``
    of rule :data:`~components.kernel.crdschema.NOTE_RULE`."""
    from components.kernel.crdschema import validate_object

    out: list[Problem] = []
    for m in manifests:
        kind, name = m.get("kind", "?"), (m.get("metadata") or {}).get("name", "?")
        api = str(m.get("apiVersion", ""))
        if not api.startswith("kueue.x-k8s.io/"):
            out.append(Problem("", f"{kind} {name}: apiVersion {api!r} is not kueue.x-k8s.io"))
            continue
        out += validate_object(m, kueue_crd_file(kind, version))
    return out


def _elastic(obj: dict[str, Any], gate: bool) -> bool:
    """Kueue treats ``obj`` as an elastic workload: the gate is on and the object carries
    ``kueue.x-k8s.io/elastic-job: "true"`` (kueue v0.19.2 pkg/workloadslicing/workloadslicing.go
    ``Enabled``)."""
    from components.capacity.render import ELASTIC_ANNOTATION

    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return gate and annotations.get(ELASTIC_ANNOTATION) == "true"


def raycluster_problems(rc: dict[str, Any], elastic_gate: bool = True) -> list[Problem]:
    """Kueue's webhook rules on one rendered queued RayCluster (kueue v0.19.2
    ``pkg/controller/jobs/raycluster/raycluster_webhook.go`` ``validateCreate``): in-tree
    autoscaling only as an elastic job ("a kueue-managed RayCluster can use autoscaling only as
    an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the
    kueue.x-k8s.io/elastic-job annotation"; the elastic-job scheduling gate the same webhook
    requires on every pod template is added by its defaulter, ``Default`` ``GateTemplate``, so the
    stack does not render it), at most ``MaxPodSets`` pod sets (head + worker groups), no worker
    group called ``head``. ``spec.suspend`` is not refused: Kueue's own defaulter sets it on create
    (``pkg/controller/jobframework/defaults.go`` ``ApplyDefaultForSuspend``) and its validator does
    not read it; the stack field is refused with a queue (:mod:`components.capacity.rules`), so
    no render of a queued object carries it."""
    name = rc["metadata"]["name"]
    spec = rc.get("spec") or {}
    where = f"RayCluster {name}"
    out = []
    if spec.get("enableInTreeAutoscaling") and not _elastic(rc, elastic_gate):
        out.append(
            Problem(
                "",
                f"{where}: spec.enableInTreeAutoscaling on a queued RayCluster that is not an "
                "elastic job; Kueue refuses it ('a kueue-managed RayCluster can use autoscaling only "
                "as an elastic job', kueue pkg/controller/jobs/raycluster/raycluster_webhook.go): "
                "the kueue.x-k8s.io/elastic-job annotation and capacity.kueue.elastic_jobs: true",
            )
        )
    groups = spec.get("workerGroupSpecs") or []
    for i, g in enumerate(groups):
        if g.get("groupName") == HEAD_POD_SET:
            out.append(
                Problem(
                    "",
                    f"{where}: spec.workerGroupSpecs[{i}].groupName 'head' is reserved for the head "
                    f"pod set ({KUEUE_RAYCLUSTER_COMMON})",
                )
            )
    if len(groups) + 1 > MAX_POD_SETS:
        out.append(
            Problem(
                "",
                f"{where}: {len(groups) + 1} pod sets; a Kueue workload has at most {MAX_POD_SETS} "
                "(MaxPodSets, kueue pkg/controller/jobframework/constants.go)",
            )
        )
    return out


def rayjob_problems(rayjob: dict[str, Any], elastic_gate: bool = True) -> list[Problem]:
    """Kueue's webhook rules on one rendered queued RayJob (sources in the module docstring);
    in-tree autoscaling is allowed on an elastic RayJob (gate on and the elastic-job annotation:
    ``ValidateCreate`` in ``pkg/controller/jobs/raycluster/common.go`` of v0.19.2). As Kueue's
    ``validateCreate`` (``rayjob_webhook.go``): a ``clusterSelector`` alone is a job on an
    existing cluster, which Kueue does not manage (nothing more is checked), a ``clusterSelector``
    with a ``rayClusterSpec`` is refused; ``spec.suspend`` is Kueue's to set (its create-time
    defaulter, ``ApplyDefaultForSuspend``) and not refused here. KubeRay's own suspend rules
    (``suspend`` needs ``shutdownAfterJobFinishes``, none with ``clusterSelector``: validation.go
    ``ValidateRayJobSpec``) are the operator check's (:mod:`components.raycrs.operator`)."""
    name = rayjob["metadata"]["name"]
    spec = rayjob.get("spec") or {}
    where = f"RayJob {name}"
    out = []
    cluster = spec.get("rayClusterSpec")
    if spec.get("clusterSelector"):
        if cluster is None:  # an existing cluster: Kueue does not manage the job
            return out
        out.append(
            Problem(
                "",
                f"{where}: spec.clusterSelector with spec.rayClusterSpec on a queued RayJob: a "
                f"kueue managed job should not use an existing cluster ({KUEUE_RAYJOB_WEBHOOK})",
            )
        )
    if not cluster:
        out.append(
            Problem(
                "",
                f"{where}: spec.rayClusterSpec is required for a queued RayJob ({KUEUE_RAYJOB_WEBHOOK})",
            )
        )
        return out
    if not spec.get("shutdownAfterJobFinishes"):
        out.append(
            Problem(
                "", f"{where}: spec.shutdownAfterJobFinishes must be true ({KUEUE_RAYJOB_WEBHOOK})"
            )
        )
    if cluster.get("enableInTreeAutoscaling") and not _elastic(rayjob, elastic_gate):
        out.append(
            Problem(
                "",
                f"{where}: spec.rayClusterSpec.enableInTreeAutoscaling: a kueue managed job should "
                f"only use autoscaling when workload slicing is enabled ({KUEUE_RAYCLUSTER_COMMON})",
            )
        )
    for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
        if g.get("groupName") == HEAD_POD_SET:
            out.append(
                Problem(
                    "",
                    f"{where}: spec.rayClusterSpec.workerGroupSpecs[{i}].groupName 'head' is reserved "
                    f"for the head pod set ({KUEUE_RAYCLUSTER_COMMON})",
                )
            )
    # head + worker groups + the submitter in K8sJobMode (preview.pod_sets), counted without
    # reading the templates
    n = len(cluster.get("workerGroupSpecs") or []) + 1
    n += spec.get("submissionMode", "K8sJobMode") == "K8sJobMode"
    if n > MAX_POD_SETS:
        out.append(
            Problem(
                "",
                f"{where}: {n} pod sets; a Kueue workload has at most {MAX_POD_SETS} (MaxPodSets, "
                "kueue pkg/controller/jobframework/constants.go)",
            )
        )
    return out


def flavor_problems(p: Plan, cluster_queues: Sequence[ClusterQueueConfig]) -> list[Problem]:
    """Two flavors of one cluster queue (``capacity.cluster_queues``) that select the same nodes
    (the plan's flavors, :attr:`components.plan.plan.Plan.resource_flavors`)."""
    flavors = p.resource_flavors
    out = []
    for q in cluster_queues:
        seen: dict[str, str] = {}
        for f in q.flavors:
            if f.pool not in flavors:  # an undeclared pool: the stack rules said so
                continue
            spec = flavors[f.pool]["spec"]
            key = repr(sorted(spec.get("nodeLabels", {}).items()))
            if key in seen:
                out.append(
                    Problem(
                        "",
                        f"capacity.cluster_queues[{q.name}]: flavors {seen[key]!r} and {f.pool!r} "
                        "select the same nodes (same node labels); give one pool a "
                        "distinguishing labels: entry so Kueue can tell them apart",
                    )
                )
            seen.setdefault(key, f.pool)
    return out


def dws_problems(p: Plan, verdicts: list[Any], cqs: list[dict[str, Any]]) -> list[Problem]:
    """One pod set per ProvisioningRequest (ray-project/ray#57839): per job at most one pod set on a
    queued flavor and never the head or submitter; the DWS check scoped with ``onFlavors``
    (queued pools: the plan's :attr:`~components.plan.plan.Plan.pool_specs`)."""
    from components.capacity.render import DWS_CHECK, queued_pool

    pool_specs = p.pool_specs
    out = []
    for v in verdicts:
        on_dws = [a for a in v.assignments if a.flavor and a.provisioning]
        for a in on_dws:
            if a.pod_set.name in (HEAD_POD_SET, "submitter"):
                out.append(
                    Problem(
                        "",
                        f"{v.where}: the {a.pod_set.name} pod set would be admitted on queued "
                        f"flavor {a.flavor!r} and join the ProvisioningRequest; GKE accepts one "
                        "PodSet per request (ray-project/ray#57839)",
                    )
                )
        workers = [a for a in on_dws if a.pod_set.name not in (HEAD_POD_SET, "submitter")]
        if len(workers) > 1:
            out.append(
                Problem(
                    "",
                    f"{v.where}: {len(workers)} pod sets on queued flavors; GKE accepts one "
                    "PodSet per ProvisioningRequest (ray-project/ray#57839)",
                )
            )
    for cq in cqs:
        spec = cq["spec"]
        dws = [
            f["name"]
            for g in spec["resourceGroups"]
            for f in g["flavors"]
            if queued_pool(pool_specs, f["name"])
        ]
        rules = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        scoped = {f for r in rules if r.get("name") == DWS_CHECK for f in r.get("onFlavors") or []}
        if dws and (set(dws) - scoped or spec.get("admissionChecks")):
            out.append(
                Problem(
                    "",
                    f"ClusterQueue {cq['metadata']['name']}: the {DWS_CHECK} check must be scoped "
                    f"onFlavors {dws} so the head is not in the ProvisioningRequest",
                )
            )
    return out


def class_selector_problems(p: Plan, verdicts: list[Any]) -> list[Problem]:
    """A queued pod set whose own template selects a ComputeClass
    (``cloud.google.com/compute-class``) and would be admitted on a flavor whose nodes lack that
    label: Kueue adds the flavor's labels to the pods (kueue v0.19.2 ``pkg/podset/podset.go``
    ``Merge``) but keeps theirs, so they wait forever for nodes that are both (a DWS flavor's
    nodes never carry a class label). The render leaves the class out of every queued object's
    worker groups (:func:`components.raycrs.raycluster.worker_group_spec` ``compute_class``); this
    check catches a render where both apply to the same pods (flavors: the plan's
    :attr:`~components.plan.plan.Plan.resource_flavors`)."""
    from components.config.computeclass import COMPUTE_CLASS_LABEL

    flavors = p.resource_flavors
    out = []
    for v in verdicts:
        for a in v.assignments:
            want = a.pod_set.node_selector.get(COMPUTE_CLASS_LABEL)
            if not want or not a.flavor:
                continue
            labels = flavors[a.flavor]["spec"].get("nodeLabels") or {}
            if labels.get(COMPUTE_CLASS_LABEL) != want:
                out.append(
                    Problem(
                        "",
                        f"{v.where}: pod set {a.pod_set.name!r} selects ComputeClass {want!r} but "
                        f"would be admitted on flavor {a.flavor!r}, whose nodes lack "
                        f"{COMPUTE_CLASS_LABEL}={want}: its pods would stay Pending; queued pods "
                        "must not select a class (Kueue's flavor places them)",
                    )
                )
    return out


def elastic_flavor_problems(
    p: Plan, capacity: CapacityConfig, verdicts: list[Any]
) -> list[Problem]:
    """An elastic queued object's worker group that starts at 0 pods is admitted on the first
    flavor its pods match, since 0 pods fit any quota (kueue v0.19.2
    ``pkg/scheduler/flavorassigner/flavorassigner.go``: a zero request fits), and Kueue keeps
    that flavor for every later slice ("When scaling up a previously admitted job the new
    workload must reuse the originally assigned flavor", site/content/en/docs/concepts/
    elastic_workload.md, Limitations). A TPU or GPU group whose first match is a flavor without
    quota for its accelerator (e.g. the ``system`` flavor, whose nodes are untainted and whose
    only label is ``cloud.google.com/gke-nodepool``, a key accelerator pods do not select)
    could never scale up. Fix: list the accelerator flavors before the CPU ones in the queue
    (taints keep CPU pods off them), or a ``min_replicas`` of at least 1. ``capacity``: the
    ``capacity`` block of the stack whose plan is ``p``."""
    from components.capacity.preview import cohort_borrowable, queue_quotas
    from components.capacity.render import cluster_queue

    out = []
    for v in verdicts:
        cq = capacity.cluster_queue(v.cluster_queue)
        quotas = queue_quotas(cluster_queue(p, cq))
        for a in v.assignments:
            if a.pod_set.count or not a.flavor:
                continue
            for r in (catalog.TPU_RESOURCE, catalog.GPU_RESOURCE):
                if not a.pod_set.per_pod.get(r):
                    continue
                q = quotas.get(a.flavor, {}).get(r) or {}
                lend = cohort_borrowable(p, capacity.cluster_queues, cq, a.flavor, r)
                if float(q.get("nominal") or 0) + lend <= 0:
                    out.append(
                        Problem(
                            "",
                            f"{v.where}: worker group {a.pod_set.name!r} starts at 0 pods and would "
                            f"be admitted on flavor {a.flavor!r} of cluster queue {cq.name}, which "
                            f"has no {r} quota; Kueue keeps that flavor for every scale-up of an "
                            "elastic workload (kueue site/content/en/docs/concepts/"
                            "elastic_workload.md), so the group could never grow: list the "
                            f"accelerator flavors before {a.flavor!r} in the queue, or set "
                            "min_replicas: 1",
                        )
                    )
    return out


def job_on_create(obj: dict[str, Any]) -> list[Problem]:
    """Kueue's ``ValidateJobOnCreate`` on a queued Ray object
    (:func:`components.capacity.webhooks.validate_job_on_create`), one line each."""
    name = obj["metadata"]["name"]
    return [
        Problem("", f"{obj['kind']} {name}: {e} ({webhooks.KUEUE} {e.source})")
        for e in webhooks.validate_job_on_create(obj)
    ]


def queued_ray_problems(obj: dict[str, Any], elastic_gate: bool = True) -> list[Problem]:
    """Kueue's webhook rules on one queued RayJob or RayCluster: :func:`rayjob_problems` or
    :func:`raycluster_problems`, then :func:`job_on_create`; a RayJob on an existing cluster
    (``clusterSelector``, no ``rayClusterSpec``) is not Kueue's: its ``validateCreate``
    (``rayjob_webhook.go``) returns before checking anything, ``ValidateJobOnCreate`` included."""
    if obj.get("kind") == "RayJob":
        spec = obj.get("spec") or {}
        if spec.get("clusterSelector") and "rayClusterSpec" not in spec:
            return []
        return rayjob_problems(obj, elastic_gate) + job_on_create(obj)
    return raycluster_problems(obj, elastic_gate) + job_on_create(obj)


def render_problems(
    p: Plan, capacity: CapacityConfig, manifests: list[dict[str, Any]]
) -> list[Problem]:
    """Every render-level capacity problem (see the module docstring) of ``capacity`` (the
    ``capacity`` block of the stack whose plan is ``p``); ``manifests`` are the rendered Ray
    objects (:func:`components.raycrs.render.render_manifests`)."""
    from components.capacity.preview import preview
    from components.capacity.render import QUEUE_LABEL, render_capacity

    if not capacity.enabled:
        return []
    try:
        objects = render_capacity(p, capacity)
    except KeyError as e:  # an undeclared flavor pool: the stack rules said so
        return [Problem("", f"rendering the Kueue objects failed: unknown pool {e}")]
    out = kueue_schema_problems(objects, capacity.kueue.version)
    out += flavor_problems(p, capacity.cluster_queues)
    queued = [
        m
        for m in manifests
        if m.get("kind") in ("RayJob", "RayCluster", "RayService")
        and QUEUE_LABEL in (m["metadata"].get("labels") or {})
    ]
    gate = capacity.kueue.elastic_jobs
    for m in queued:
        if m["kind"] in ("RayJob", "RayCluster"):
            out += queued_ray_problems(m, gate)
        else:
            out += webhooks.ray_object_problems([m], gate)
    queued = [m for m in queued if m["kind"] != "RayService"]
    try:
        verdicts = preview(p, capacity, queued)
    except KeyError:  # an undeclared queue: the stack rules said so
        return out
    for v in verdicts:
        if v.state == "never":
            note = f" ({v.note})" if v.note else ""
            out.append(
                Problem(
                    "", f"{v.where}: can never be admitted by queue {v.queue}: {v.reason}{note}"
                )
            )
    out += class_selector_problems(p, verdicts)
    out += elastic_flavor_problems(p, capacity, verdicts)
    out += dws_problems(p, verdicts, [o for o in objects if o["kind"] == "ClusterQueue"])
    return out
