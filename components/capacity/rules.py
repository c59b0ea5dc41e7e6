"""Capacity checks: Kueue's rules for Ray objects, the DWS / flex-start limits, the carried CRDs.

Two layers, each a list of one-line problems:

* :func:`stack_rules` - cross-field rules on the stack model (run by :mod:`components.stack.rules`
  with the other rules, so ``raygke check`` and ``pulumi up`` both refuse them):

  - a job's ``queue`` is a declared LocalQueue, whose ``cluster_queue`` is declared; ``priority``
    a declared WorkloadPriorityClass and only with a queue; a flavor's ``pool`` a declared pool;
  - a queued RayJob brings its own cluster: Kueue refuses ``clusterSelector`` on a queued RayJob
    and requires ``rayClusterSpec`` (kueue v0.19.2 ``pkg/controller/jobs/rayjob/rayjob_webhook.go``
    ``validateCreate``: "a kueue managed job should not use an existing cluster");
  - it shuts its cluster down (same function: "a kueue managed job should delete the cluster after
    finishing", ``shutdownAfterJobFinishes``);
  - Kueue owns ``suspend``: its webhook sets it on create and the job controller flips it on
    admission (``pkg/controller/jobframework/defaults.go`` ``ApplyDefaultForSuspend``,
    ``rayjob_controller.go`` ``Suspend``/``RunWithPodSetsInfo``), so ``suspend: true`` is refused;
  - a job on a ``queued`` pool names a queue: only Kueue's ProvisioningRequest gets nodes there
    ([GKE-DWS-QUEUED] in :mod:`components.catalog`);
  - a ``queued`` / ``flex-start`` pool: minimum GKE versions, non-queued TPU flex-start single-host
    only, a queued pool scales from 0 ([GKE-DWS-QUEUED], [GKE-FLEX-START]).

* :func:`render_problems` - on the rendered objects (run by ``raygke check`` with the other
  render checks):

  - every Kueue object validates against the carried CRD of ``capacity.kueue.version``
    (:func:`kueue_schema_problems`, the project's checker :mod:`components.raycrs.crd`);
  - a queued RayJob's cluster: no in-tree autoscaling (Kueue: "a kueue managed job should only
    use autoscaling when workload slicing is enabled", ``pkg/controller/jobs/raycluster/common.go``
    ``ValidateCreate``), at most ``MaxPodSets`` pod sets (18 in v0.19.2,
    ``pkg/controller/jobframework/constants.go``), no worker group called ``head`` (same
    function), no ``spec.suspend`` rendered;
  - GKE accepts one PodSet per ProvisioningRequest (ray-project/ray#57839): at most one pod set of
    a job lands on a queued flavor, the head and submitter never, and the ClusterQueue scopes the
    DWS check with ``onFlavors``;
  - every pod set fits some flavor (resources, node selector, tolerations) and the job's quota
    fits the queue's nominal plus borrowable quota (:mod:`components.capacity.preview`): a job
    that can never be admitted is an error naming the job, the resource and both numbers;
  - two flavors of one queue that select the same nodes (same node labels) are refused:
    Kueue could not tell them apart.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components import catalog
from components.stack.base import repeated
from components.stack.problems import Problem, at

if TYPE_CHECKING:
    from components.stack.model import StackConfig

CRDS_ROOT = Path(__file__).resolve().parent / "crds"
MAX_POD_SETS = 18  # kueue v0.19.2 pkg/controller/jobframework/constants.go MaxPodSets
HEAD_POD_SET = "head"  # pkg/controller/jobs/raycluster/common.go headGroupPodSetName
KUEUE_RAYJOB_WEBHOOK = "kueue pkg/controller/jobs/rayjob/rayjob_webhook.go"
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
    if not path.is_file():
        raise ValueError(f"no carried Kueue v{version} CRD for kind {kind!r} ({path})")
    return path


def _python_patterns(schema: Any) -> Any:
    """Go's regexp accepts inline flags after ``^`` (``^(?i)[a-z]...`` in the AdmissionCheck CRD);
    Python's ``re`` wants them first: move them, same meaning."""
    if isinstance(schema, dict):
        out = {k: _python_patterns(v) for k, v in schema.items()}
        p = out.get("pattern")
        if isinstance(p, str) and p.startswith("^(?i)"):
            out["pattern"] = "(?i)^" + p[len("^(?i)") :]
        return out
    if isinstance(schema, list):
        return [_python_patterns(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=32)
def _kueue_validator(path: str, version: str) -> Any:
    import jsonschema

    from components.raycrs.crd import _json_schema, _load_schema

    schema = _python_patterns(_json_schema(copy.deepcopy(_load_schema(path, version))))
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)(schema)


def kueue_schema_problems(manifests: Iterable[dict[str, Any]], version: str) -> list[str]:
    """Each Kueue object against the carried CRD of ``version``: unknown (pruned) fields, then the
    schema, with the helpers of :mod:`components.raycrs.crd`. One line each,
    ``<Kind> <name>: <path>: <why>``."""
    from components.raycrs.crd import _fmt, _load_schema, unknown_fields

    out: list[str] = []
    for m in manifests:
        kind, name = m.get("kind", "?"), (m.get("metadata") or {}).get("name", "?")
        api = str(m.get("apiVersion", ""))
        if not api.startswith("kueue.x-k8s.io/"):
            out.append(f"{kind} {name}: apiVersion {api!r} is not kueue.x-k8s.io")
            continue
        path, ver = str(kueue_crd_file(kind, version)), api.split("/", 1)[1]
        schema = _load_schema(path, ver)
        body = {k: v for k, v in m.items() if k != "metadata"}
        out += [
            f"{kind} {name}: {_fmt(p)}: unknown field (the API server would prune it)"
            for p in unknown_fields(body, schema)
        ]
        errors = sorted(
            _kueue_validator(path, ver).iter_errors(body),
            key=lambda e: (list(map(str, e.path)), e.message),
        )
        out += [f"{kind} {name}: {_fmt(e.absolute_path)}: {e.message}" for e in errors]
    return out


# ------------------------------------------------------------------------------- stack rules


def _older(have: str | None, need: str) -> bool:
    return bool(have) and catalog.parse_gke_version(have) < catalog.parse_gke_version(need)  # type: ignore[arg-type]


def pool_problems(cfg: StackConfig) -> Iterable[Problem | str]:
    """The ``queued`` / ``flex-start`` limits of each pool (sources in the module docstring)."""
    from components.nodepools.model import GpuPool, TpuPool

    have = cfg.cluster.min_master_version
    for pool in cfg.node_pools:
        if pool.provisioning not in ("queued", "flex-start"):
            continue
        where = f"node_pools[{pool.name}]"
        kind = "tpu" if isinstance(pool, TpuPool) else "gpu" if isinstance(pool, GpuPool) else None
        if kind is None:
            yield (
                at(
                    f"{where}.provisioning",
                    f"{where}: provisioning {pool.provisioning} is for TPU and GPU pools (Dynamic "
                    f"Workload Scheduler, {catalog.DWS_QUEUED_DOC}); use on-demand or spot for CPUs",
                )
            )
            continue
        if pool.provisioning == "queued":
            need, doc = catalog.QUEUED_MIN_GKE_VERSION[kind], catalog.DWS_QUEUED_DOC
            low = pool.min_slices if isinstance(pool, TpuPool) else pool.min_nodes
            if low:
                yield (
                    at(
                        f"{where}.provisioning",
                        f"{where}: provisioning queued scales from 0 (DWS creates the nodes for an "
                        f"admitted job, {doc}); set {'min_slices' if kind == 'tpu' else 'min_nodes'}: 0",
                    )
                )
        else:
            need, doc = catalog.FLEX_START_MIN_GKE_VERSION[kind], catalog.DWS_FLEX_DOC
            if isinstance(pool, TpuPool) and pool.slice.multi_host:
                yield (
                    at(
                        f"{where}.provisioning",
                        f"{where}: provisioning flex-start without queueing takes single-host TPU "
                        f"slices only ({doc}); topology {pool.tpu.topology} is multi-host: use "
                        "provisioning: queued with a Kueue queue",
                    )
                )
        if _older(have, need):
            yield (
                at(
                    f"{where}.provisioning",
                    f"{where}: provisioning {pool.provisioning} needs GKE {need} or later for "
                    f"{kind.upper()}s ({doc}); cluster.min_master_version is {have}",
                )
            )


def queue_reference_problems(cfg: StackConfig) -> Iterable[Problem | str]:
    """Queues, cluster queues, priorities and flavor pools name declared things; names unique."""
    cap = cfg.capacity
    pools = {"system", *(p.name for p in cfg.node_pools)}
    cqs = [q.name for q in cap.cluster_queues]
    for kind, names in (
        ("cluster_queues", cqs),
        ("local_queues", [q.name for q in cap.local_queues]),
        ("priority_classes", [p.name for p in cap.priority_classes]),
    ):
        for n in sorted(repeated(names)):
            yield at(f"capacity.{kind}", f"capacity.{kind}: {n!r} is declared twice")
    for q in cap.cluster_queues:
        for f in q.flavors:
            if f.pool not in pools:
                yield (
                    at(
                        f"capacity.cluster_queues[{q.name}].flavors",
                        f"capacity.cluster_queues[{q.name}].flavors: pool {f.pool!r} is not a "
                        f"declared node pool; valid: {', '.join(sorted(pools))}",
                    )
                )
    for lq in cap.local_queues:
        if lq.cluster_queue not in cqs:
            yield (
                at(
                    f"capacity.local_queues[{lq.name}].cluster_queue",
                    f"capacity.local_queues[{lq.name}].cluster_queue {lq.cluster_queue!r} is not "
                    f"declared; declared: {', '.join(cqs) or 'none'}",
                )
            )
    if cap.local_queues and not cap.enabled:
        yield at(
            "capacity.local_queues",
            "capacity.local_queues: declared without cluster_queues (Kueue is not installed)",
        )


def job_problems(cfg: StackConfig) -> Iterable[Problem | str]:
    """Kueue's rules for a queued RayJob and the queue a job on a queued pool needs."""
    cap = cfg.capacity
    local = {q.name for q in cap.local_queues}
    prios = {p.name for p in cap.priority_classes}
    queued = {p.name for p in cfg.node_pools if p.provisioning == "queued"}
    for job in cfg.jobs:
        where = f"jobs[{job.name}]"
        if job.priority and not job.queue:
            yield at(
                f"{where}.priority",
                f"{where}.priority {job.priority!r} needs queue: <local queue> (Kueue reads it)",
            )
        elif job.priority and job.priority not in prios:
            yield (
                at(
                    f"{where}.priority",
                    f"{where}.priority {job.priority!r} is not a capacity.priority_classes entry; "
                    f"declared: {', '.join(sorted(prios)) or 'none'}",
                )
            )
        if not job.queue:
            if job.node_pool in queued:
                yield (
                    at(
                        f"{where}.node_pool",
                        f"{where}: node pool {job.node_pool!r} has provisioning: queued; its nodes "
                        "come only through a ProvisioningRequest that Kueue creates for an admitted "
                        f"job ({catalog.DWS_QUEUED_DOC}): set queue: <local queue>",
                    )
                )
            continue
        if job.queue not in local:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}.queue {job.queue!r} is not a capacity.local_queues entry; declared: "
                    f"{', '.join(sorted(local)) or 'none'}",
                )
            )
        if job.cluster:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: queue {job.queue!r} with cluster: {job.cluster}; Kueue refuses a queued "
                    "RayJob on an existing cluster ('a kueue managed job should not use an existing "
                    f"cluster', {KUEUE_RAYJOB_WEBHOOK}): use node_pool: so it brings its own",
                )
            )
        elif not job.shuts_down:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: queue {job.queue!r} with shutdown_after_job_finishes: false; Kueue "
                    "refuses it ('a kueue managed job should delete the cluster after finishing', "
                    f"{KUEUE_RAYJOB_WEBHOOK})",
                )
            )
        if job.suspend:
            yield (
                at(
                    f"{where}.queue",
                    f"{where}: suspend: true with queue {job.queue!r}; Kueue owns spec.suspend (it "
                    "suspends the job on create and resumes it on admission, kueue pkg/controller/"
                    "jobframework/defaults.go ApplyDefaultForSuspend): remove suspend",
                )
            )


def flavor_quota_shape_problems(cfg: StackConfig) -> Iterable[Problem]:
    """Each accelerator flavor's quota against the shape and size of the pool behind it.

    Kueue admits on quota alone: it does not look at nodes (kueue v0.19.2
    ``pkg/scheduler/flavorassigner/flavorassigner.go`` fits a pod set to a flavor by the
    ClusterQueue's quota, taints and labels only; https://kueue.sigs.k8s.io/docs/concepts/
    cluster_queue/: "nominalQuota ... the quantity of this resource that is available for
    admission"). So a quota out of step with the pool is one of two silent failures:

    * more ``google.com/tpu`` / ``nvidia.com/gpu`` nominal quota, summed over every cluster queue
      listing the flavor, than the pool can ever hold (``max_slices`` x chips per slice,
      ``max_nodes`` x GPUs per node): Kueue admits workloads whose pods then stay Pending, the
      admitted-but-cannot-fit case;
    * a queue whose nominal plus borrowable quota for the flavor is above 0 but below one
      scaling unit of the pool's shape (a TPU slice's chips: its hosts are admitted together,
      GKE creates them atomically; a GPU node's GPUs): no worker pod set of that pool is ever
      admitted on it, the never-admitted case.

    Every priority of a ComputeClass has its pool's shape (:mod:`components.computeclass.model`),
    and a class's pool is never a flavor (:func:`components.computeclass.rules.
    compute_class_pools_not_kueue_flavors`), so this one check per flavor covers every priority
    a queued pod can be admitted to."""
    from components.capacity.preview import borrowable
    from components.nodepools.model import GpuPool, TpuPool
    from components.stack.base import quantity_value

    declared = {p.name: p for p in cfg.node_pools}
    total: dict[tuple[str, str], float] = {}
    owners: dict[tuple[str, str], list[str]] = {}
    for q in cfg.capacity.cluster_queues:
        for f in q.flavors:
            pool = declared.get(f.pool)
            if isinstance(pool, TpuPool):
                res, unit = catalog.TPU_RESOURCE, pool.slice.chips
                shape = f"TPU {pool.slice.generation.name} {pool.slice.topology} slice"
            elif isinstance(pool, GpuPool):
                res, unit = catalog.GPU_RESOURCE, pool.gpu.count
                shape = f"{pool.gpu.count} x {pool.gpu.type} node"
            else:
                continue
            nominal = quantity_value(f.nominal.get(res, "0"))
            total[(f.pool, res)] = total.get((f.pool, res), 0.0) + nominal
            owners.setdefault((f.pool, res), []).append(f"{q.name} {nominal:g}")
            try:
                available = nominal + borrowable(cfg, q, f.pool, res)
            except KeyError:  # an undeclared flavor pool elsewhere: queue_reference_problems
                continue
            if 0 < available < unit:
                yield at(
                    f"capacity.cluster_queues[{q.name}].flavors[{f.pool}]",
                    f"capacity.cluster_queues[{q.name}].flavors[{f.pool}]: {res} nominal plus "
                    f"borrowable quota is {available:g}, less than one {shape} ({unit}); Kueue "
                    "never admits a worker pod set of this pool on it: give it at least "
                    f"{unit} or 0",
                )
    for (pool_name, res), n in total.items():
        pool = declared[pool_name]
        if isinstance(pool, TpuPool):
            unit, cap, what = pool.slice.chips, pool.max_slices, "slices"
        else:
            unit, cap, what = pool.gpu.count, pool.max_nodes, "nodes"  # type: ignore[union-attr]
        if n > unit * cap:
            yield at(
                "capacity.cluster_queues",
                f"capacity.cluster_queues: flavor {pool_name!r} has {res} nominal quota "
                f"{n:g} in all ({', '.join(owners[(pool_name, res)])}), more than node pool "
                f"{pool_name!r} can ever hold ({cap} {what} x {unit} = {unit * cap}); Kueue "
                "admits on quota alone, so the jobs admitted beyond it stay Pending: lower "
                f"the quota or raise the pool's max_{what}",
            )


def elastic_problems(cfg: StackConfig) -> Iterable[Problem]:
    """Queued elastic workloads need Kueue's ``ElasticJobsViaWorkloadSlices`` gate
    (``capacity.kueue.elastic_jobs``): a queued job with a ``slices`` range carries the
    elastic-job annotation, and a queued autoscaling RayCluster must be an elastic job (kueue
    v0.19.2 ``pkg/controller/jobs/raycluster/raycluster_webhook.go`` ``validateCreate``); with
    the gate off Kueue refuses the RayCluster and admits the job as one fixed workload, never
    slice by slice (``pkg/workloadslicing/workloadslicing.go`` ``Enabled``)."""
    if cfg.capacity.kueue.elastic_jobs:
        return
    for job in cfg.jobs:
        if job.queue and job.slices is not None and job.slices.elastic:
            yield at(
                f"jobs[{job.name}].slices",
                f"jobs[{job.name}]: slices {{min: {job.slices.min}, max: {job.slices.max}}} "
                f"with queue {job.queue!r} is an elastic Kueue workload, but "
                "capacity.kueue.elastic_jobs is false (Kueue's ElasticJobsViaWorkloadSlices "
                "gate off): set it true, or fixed slices",
            )
    for rc in cfg.ray_clusters:
        if rc.queue and rc.autoscaling:
            yield at(
                f"ray_clusters[{rc.name}].queue",
                f"ray_clusters[{rc.name}]: queue {rc.queue!r} with autoscaling; Kueue admits an "
                "autoscaling RayCluster only as an elastic job (kueue pkg/controller/jobs/"
                "raycluster/raycluster_webhook.go), but capacity.kueue.elastic_jobs is false: "
                "set it true, or autoscaling: false",
            )


def ray_cluster_queue_problems(cfg: StackConfig) -> Iterable[Problem]:
    """A queued RayCluster names a declared LocalQueue; its ``priority`` a declared
    WorkloadPriorityClass, and only with a queue; a cluster with a group on a ``queued`` pool
    is queued (only Kueue's ProvisioningRequest gets nodes there, [GKE-DWS-QUEUED])."""
    cap = cfg.capacity
    local = {q.name for q in cap.local_queues}
    prios = {p.name for p in cap.priority_classes}
    queued = {p.name for p in cfg.node_pools if p.provisioning == "queued"}
    for rc in cfg.ray_clusters:
        where = f"ray_clusters[{rc.name}]"
        if rc.priority and not rc.queue:
            yield at(
                f"{where}.priority",
                f"{where}.priority {rc.priority!r} needs queue: <local queue> (Kueue reads it)",
            )
        elif rc.priority and rc.priority not in prios:
            yield at(
                f"{where}.priority",
                f"{where}.priority {rc.priority!r} is not a capacity.priority_classes entry; "
                f"declared: {', '.join(sorted(prios)) or 'none'}",
            )
        if rc.queue and rc.queue not in local:
            yield at(
                f"{where}.queue",
                f"{where}.queue {rc.queue!r} is not a capacity.local_queues entry; declared: "
                f"{', '.join(sorted(local)) or 'none'}",
            )
        if not rc.queue:
            for g in rc.worker_groups:
                if g.node_pool in queued:
                    yield at(
                        f"{where}.worker_groups[{g.name}].node_pool",
                        f"{where}.worker_groups[{g.name}]: node pool {g.node_pool!r} has "
                        "provisioning: queued; its nodes come only through a "
                        "ProvisioningRequest that Kueue creates for an admitted workload "
                        f"({catalog.DWS_QUEUED_DOC}): set queue: <local queue> on the cluster",
                    )


def stack_rules(cfg: StackConfig) -> Iterable[Problem]:
    """Every capacity rule on the stack model (see the module docstring)."""
    yield from pool_problems(cfg)
    yield from queue_reference_problems(cfg)
    yield from job_problems(cfg)
    yield from ray_cluster_queue_problems(cfg)
    yield from elastic_problems(cfg)
    yield from flavor_quota_shape_problems(cfg)


# ------------------------------------------------------------------------------ render checks


def _elastic(obj: dict[str, Any], gate: bool) -> bool:
    """Kueue treats ``obj`` as an elastic workload: the gate is on and the object carries
    ``kueue.x-k8s.io/elastic-job: "true"`` (kueue v0.19.2 pkg/workloadslicing/workloadslicing.go
    ``Enabled``)."""
    from components.capacity.render import ELASTIC_ANNOTATION

    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return gate and annotations.get(ELASTIC_ANNOTATION) == "true"


def raycluster_problems(rc: dict[str, Any], elastic_gate: bool = True) -> list[str]:
    """Kueue's webhook rules on one rendered queued RayCluster (kueue v0.19.2
    ``pkg/controller/jobs/raycluster/raycluster_webhook.go`` ``validateCreate``): in-tree
    autoscaling only as an elastic job ("a kueue-managed RayCluster can use autoscaling only as
    an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the
    kueue.x-k8s.io/elastic-job annotation"; the elastic-job scheduling gate the same webhook
    requires on every pod template is added by its defaulter, ``Default`` ``GateTemplate``, so the
    stack does not render it), at most ``MaxPodSets`` pod sets (head + worker groups), no worker
    group called ``head``; Kueue owns ``spec.suspend``."""
    name = rc["metadata"]["name"]
    spec = rc.get("spec") or {}
    where = f"RayCluster {name}"
    out = []
    if spec.get("enableInTreeAutoscaling") and not _elastic(rc, elastic_gate):
        out.append(
            f"{where}: spec.enableInTreeAutoscaling on a queued RayCluster that is not an "
            "elastic job; Kueue refuses it ('a kueue-managed RayCluster can use autoscaling only "
            "as an elastic job', kueue pkg/controller/jobs/raycluster/raycluster_webhook.go): "
            "the kueue.x-k8s.io/elastic-job annotation and capacity.kueue.elastic_jobs: true"
        )
    if "suspend" in spec:
        out.append(
            f"{where}: spec.suspend is set; Kueue owns it (jobframework ApplyDefaultForSuspend)"
        )
    groups = spec.get("workerGroupSpecs") or []
    for i, g in enumerate(groups):
        if g.get("groupName") == HEAD_POD_SET:
            out.append(
                f"{where}: spec.workerGroupSpecs[{i}].groupName 'head' is reserved for the head "
                f"pod set ({KUEUE_RAYCLUSTER_COMMON})"
            )
    if len(groups) + 1 > MAX_POD_SETS:
        out.append(
            f"{where}: {len(groups) + 1} pod sets; a Kueue workload has at most {MAX_POD_SETS} "
            "(MaxPodSets, kueue pkg/controller/jobframework/constants.go)"
        )
    return out


def rayjob_problems(rayjob: dict[str, Any], elastic_gate: bool = True) -> list[str]:
    """Kueue's webhook rules on one rendered queued RayJob (sources in the module docstring);
    in-tree autoscaling is allowed on an elastic RayJob (gate on and the elastic-job annotation:
    ``ValidateCreate`` in ``pkg/controller/jobs/raycluster/common.go`` of v0.19.2)."""
    from components.capacity.preview import pod_sets

    name = rayjob["metadata"]["name"]
    spec = rayjob.get("spec") or {}
    where = f"RayJob {name}"
    out = []
    if spec.get("clusterSelector"):
        out.append(f"{where}: spec.clusterSelector on a queued RayJob ({KUEUE_RAYJOB_WEBHOOK})")
    cluster = spec.get("rayClusterSpec")
    if not cluster:
        out.append(
            f"{where}: spec.rayClusterSpec is required for a queued RayJob ({KUEUE_RAYJOB_WEBHOOK})"
        )
        return out
    if not spec.get("shutdownAfterJobFinishes"):
        out.append(f"{where}: spec.shutdownAfterJobFinishes must be true ({KUEUE_RAYJOB_WEBHOOK})")
    if "suspend" in spec:
        out.append(
            f"{where}: spec.suspend is set; Kueue owns it (jobframework ApplyDefaultForSuspend)"
        )
    if cluster.get("enableInTreeAutoscaling") and not _elastic(rayjob, elastic_gate):
        out.append(
            f"{where}: spec.rayClusterSpec.enableInTreeAutoscaling: a kueue managed job should "
            f"only use autoscaling when workload slicing is enabled ({KUEUE_RAYCLUSTER_COMMON})"
        )
    for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
        if g.get("groupName") == HEAD_POD_SET:
            out.append(
                f"{where}: spec.rayClusterSpec.workerGroupSpecs[{i}].groupName 'head' is reserved "
                f"for the head pod set ({KUEUE_RAYCLUSTER_COMMON})"
            )
    n = len(pod_sets(rayjob))
    if n > MAX_POD_SETS:
        out.append(
            f"{where}: {n} pod sets; a Kueue workload has at most {MAX_POD_SETS} (MaxPodSets, "
            "kueue pkg/controller/jobframework/constants.go)"
        )
    return out


def flavor_problems(cfg: StackConfig) -> list[str]:
    """Two flavors of one cluster queue that select the same nodes."""
    from components.capacity.render import resource_flavor

    out = []
    for q in cfg.capacity.cluster_queues:
        seen: dict[str, str] = {}
        for f in q.flavors:
            try:
                spec = resource_flavor(cfg, f.pool)["spec"]
            except KeyError:
                continue
            key = repr(sorted(spec.get("nodeLabels", {}).items()))
            if key in seen:
                out.append(
                    f"capacity.cluster_queues[{q.name}]: flavors {seen[key]!r} and {f.pool!r} "
                    "select the same nodes (same node labels); give one pool a "
                    "distinguishing labels: entry so Kueue can tell them apart"
                )
            seen.setdefault(key, f.pool)
    return out


def dws_problems(cfg: StackConfig, verdicts: list[Any], cqs: list[dict[str, Any]]) -> list[str]:
    """One pod set per ProvisioningRequest (ray-project/ray#57839): per job at most one pod set on a
    queued flavor and never the head or submitter; the DWS check scoped with ``onFlavors``."""
    from components.capacity.render import DWS_CHECK, queued_pool

    out = []
    for v in verdicts:
        on_dws = [a for a in v.assignments if a.flavor and a.provisioning]
        for a in on_dws:
            if a.pod_set.name in (HEAD_POD_SET, "submitter"):
                out.append(
                    f"{v.where}: the {a.pod_set.name} pod set would be admitted on queued "
                    f"flavor {a.flavor!r} and join the ProvisioningRequest; GKE accepts one "
                    "PodSet per request (ray-project/ray#57839)"
                )
        workers = [a for a in on_dws if a.pod_set.name not in (HEAD_POD_SET, "submitter")]
        if len(workers) > 1:
            out.append(
                f"{v.where}: {len(workers)} pod sets on queued flavors; GKE accepts one "
                "PodSet per ProvisioningRequest (ray-project/ray#57839)"
            )
    for cq in cqs:
        spec = cq["spec"]
        dws = [
            f["name"]
            for g in spec["resourceGroups"]
            for f in g["flavors"]
            if queued_pool(cfg, f["name"])
        ]
        rules = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        scoped = {f for r in rules if r.get("name") == DWS_CHECK for f in r.get("onFlavors") or []}
        if dws and (set(dws) - scoped or spec.get("admissionChecks")):
            out.append(
                f"ClusterQueue {cq['metadata']['name']}: the {DWS_CHECK} check must be scoped "
                f"onFlavors {dws} so the head is not in the ProvisioningRequest"
            )
    return out


def class_selector_problems(cfg: StackConfig, verdicts: list[Any]) -> list[str]:
    """A queued pod set whose own template selects a ComputeClass
    (``cloud.google.com/compute-class``) and would be admitted on a flavor whose nodes lack that
    label: Kueue adds the flavor's labels to the pods (kueue v0.19.2 ``pkg/podset/podset.go``
    ``Merge``) but keeps theirs, so they wait forever for nodes that are both (a DWS flavor's
    nodes never carry a class label). The render leaves the class out of every queued object's
    worker groups (:func:`components.raycrs.render.worker_group_spec` ``compute_class``); this
    check catches a render where both apply to the same pods."""
    from components.capacity.render import resource_flavor
    from components.computeclass.model import COMPUTE_CLASS_LABEL

    out = []
    for v in verdicts:
        for a in v.assignments:
            want = a.pod_set.node_selector.get(COMPUTE_CLASS_LABEL)
            if not want or not a.flavor:
                continue
            labels = resource_flavor(cfg, a.flavor)["spec"].get("nodeLabels") or {}
            if labels.get(COMPUTE_CLASS_LABEL) != want:
                out.append(
                    f"{v.where}: pod set {a.pod_set.name!r} selects ComputeClass {want!r} but "
                    f"would be admitted on flavor {a.flavor!r}, whose nodes lack "
                    f"{COMPUTE_CLASS_LABEL}={want}: its pods would stay Pending; queued pods "
                    "must not select a class (Kueue's flavor places them)"
                )
    return out


def elastic_flavor_problems(cfg: StackConfig, verdicts: list[Any]) -> list[str]:
    """An elastic queued object's worker group that starts at 0 pods is admitted on the first
    flavor its pods match, since 0 pods fit any quota (kueue v0.19.2
    ``pkg/scheduler/flavorassigner/flavorassigner.go``: a zero request fits), and Kueue keeps
    that flavor for every later slice ("When scaling up a previously admitted job the new
    workload must reuse the originally assigned flavor", site/content/en/docs/concepts/
    elastic_workload.md, Limitations). A TPU or GPU group whose first match is a flavor without
    quota for its accelerator (e.g. the ``system`` flavor, whose nodes are untainted and whose
    only label is ``cloud.google.com/gke-nodepool``, a key accelerator pods do not select)
    could never scale up. Fix: list the accelerator flavors before the CPU ones in the queue
    (taints keep CPU pods off them), or a ``min_replicas`` of at least 1."""
    from components.capacity.preview import _quotas, borrowable
    from components.capacity.render import cluster_queue

    out = []
    for v in verdicts:
        cq = cfg.capacity.cluster_queue(v.cluster_queue)
        quotas = _quotas(cluster_queue(cfg, cq))
        for a in v.assignments:
            if a.pod_set.count or not a.flavor:
                continue
            for r in (catalog.TPU_RESOURCE, catalog.GPU_RESOURCE):
                if not a.pod_set.per_pod.get(r):
                    continue
                q = quotas.get(a.flavor, {}).get(r) or {}
                if float(q.get("nominal") or 0) + borrowable(cfg, cq, a.flavor, r) <= 0:
                    out.append(
                        f"{v.where}: worker group {a.pod_set.name!r} starts at 0 pods and would "
                        f"be admitted on flavor {a.flavor!r} of cluster queue {cq.name}, which "
                        f"has no {r} quota; Kueue keeps that flavor for every scale-up of an "
                        "elastic workload (kueue site/content/en/docs/concepts/"
                        "elastic_workload.md), so the group could never grow: list the "
                        f"accelerator flavors before {a.flavor!r} in the queue, or set "
                        "min_replicas: 1"
                    )
    return out


def render_problems(cfg: StackConfig, manifests: list[dict[str, Any]]) -> list[str]:
    """Every render-level capacity problem (see the module docstring); ``manifests`` are the
    rendered Ray objects (:func:`components.raycrs.render.render_manifests`)."""
    from components.capacity.preview import preview
    from components.capacity.render import QUEUE_LABEL, render_capacity

    if not cfg.capacity.enabled:
        return []
    try:
        objects = render_capacity(cfg)
    except KeyError as e:  # an undeclared flavor pool: the stack rules said so
        return [f"rendering the Kueue objects failed: unknown pool {e}"]
    out = kueue_schema_problems(objects, cfg.capacity.kueue.version)
    out += flavor_problems(cfg)
    queued = [
        m
        for m in manifests
        if m.get("kind") in ("RayJob", "RayCluster")
        and QUEUE_LABEL in (m["metadata"].get("labels") or {})
    ]
    gate = cfg.capacity.kueue.elastic_jobs
    for m in queued:
        out += rayjob_problems(m, gate) if m["kind"] == "RayJob" else raycluster_problems(m, gate)
    try:
        verdicts = preview(cfg, queued)
    except KeyError:  # an undeclared queue: the stack rules said so
        return out
    for v in verdicts:
        if v.state == "never":
            out.append(f"{v.where}: can never be admitted by queue {v.queue}: {v.reason}")
    out += class_selector_problems(cfg, verdicts)
    out += elastic_flavor_problems(cfg, verdicts)
    out += dws_problems(cfg, verdicts, [o for o in objects if o["kind"] == "ClusterQueue"])
    return out
