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


def pool_problems(cfg: StackConfig) -> Iterable[str]:
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
                f"{where}: provisioning {pool.provisioning} is for TPU and GPU pools (Dynamic "
                f"Workload Scheduler, {catalog.DWS_QUEUED_DOC}); use on-demand or spot for CPUs"
            )
            continue
        if pool.provisioning == "queued":
            need, doc = catalog.QUEUED_MIN_GKE_VERSION[kind], catalog.DWS_QUEUED_DOC
            low = pool.min_slices if isinstance(pool, TpuPool) else pool.min_nodes
            if low:
                yield (
                    f"{where}: provisioning queued scales from 0 (DWS creates the nodes for an "
                    f"admitted job, {doc}); set {'min_slices' if kind == 'tpu' else 'min_nodes'}: 0"
                )
        else:
            need, doc = catalog.FLEX_START_MIN_GKE_VERSION[kind], catalog.DWS_FLEX_DOC
            if isinstance(pool, TpuPool) and pool.slice.multi_host:
                yield (
                    f"{where}: provisioning flex-start without queueing takes single-host TPU "
                    f"slices only ({doc}); topology {pool.tpu.topology} is multi-host: use "
                    "provisioning: queued with a Kueue queue"
                )
        if _older(have, need):
            yield (
                f"{where}: provisioning {pool.provisioning} needs GKE {need} or later for "
                f"{kind.upper()}s ({doc}); cluster.min_master_version is {have}"
            )


def queue_reference_problems(cfg: StackConfig) -> Iterable[str]:
    """Queues, cluster queues, priorities and flavor pools name declared things; names unique."""
    cap = cfg.capacity
    pools = {"system", *(p.name for p in cfg.node_pools)}
    cqs = [q.name for q in cap.cluster_queues]
    for kind, names in (
        ("cluster_queues", cqs),
        ("local_queues", [q.name for q in cap.local_queues]),
        ("priority_classes", [p.name for p in cap.priority_classes]),
    ):
        for n in sorted({n for n in names if names.count(n) > 1}):
            yield f"capacity.{kind}: {n!r} is declared twice"
    for q in cap.cluster_queues:
        for f in q.flavors:
            if f.pool not in pools:
                yield (
                    f"capacity.cluster_queues[{q.name}].flavors: pool {f.pool!r} is not a "
                    f"declared node pool; valid: {', '.join(sorted(pools))}"
                )
    for lq in cap.local_queues:
        if lq.cluster_queue not in cqs:
            yield (
                f"capacity.local_queues[{lq.name}].cluster_queue {lq.cluster_queue!r} is not "
                f"declared; declared: {', '.join(cqs) or 'none'}"
            )
    if cap.local_queues and not cap.enabled:
        yield "capacity.local_queues: declared without cluster_queues (Kueue is not installed)"


def job_problems(cfg: StackConfig) -> Iterable[str]:
    """Kueue's rules for a queued RayJob and the queue a job on a queued pool needs."""
    cap = cfg.capacity
    local = {q.name for q in cap.local_queues}
    prios = {p.name for p in cap.priority_classes}
    queued = {p.name for p in cfg.node_pools if p.provisioning == "queued"}
    for job in cfg.jobs:
        where = f"jobs[{job.name}]"
        if job.priority and not job.queue:
            yield f"{where}.priority {job.priority!r} needs queue: <local queue> (Kueue reads it)"
        elif job.priority and job.priority not in prios:
            yield (
                f"{where}.priority {job.priority!r} is not a capacity.priority_classes entry; "
                f"declared: {', '.join(sorted(prios)) or 'none'}"
            )
        if not job.queue:
            if job.node_pool in queued:
                yield (
                    f"{where}: node pool {job.node_pool!r} has provisioning: queued; its nodes "
                    "come only through a ProvisioningRequest that Kueue creates for an admitted "
                    f"job ({catalog.DWS_QUEUED_DOC}): set queue: <local queue>"
                )
            continue
        if job.queue not in local:
            yield (
                f"{where}.queue {job.queue!r} is not a capacity.local_queues entry; declared: "
                f"{', '.join(sorted(local)) or 'none'}"
            )
        if job.cluster:
            yield (
                f"{where}: queue {job.queue!r} with cluster: {job.cluster}; Kueue refuses a queued "
                "RayJob on an existing cluster ('a kueue managed job should not use an existing "
                f"cluster', {KUEUE_RAYJOB_WEBHOOK}): use node_pool: so it brings its own"
            )
        elif not job.shuts_down:
            yield (
                f"{where}: queue {job.queue!r} with shutdown_after_job_finishes: false; Kueue "
                "refuses it ('a kueue managed job should delete the cluster after finishing', "
                f"{KUEUE_RAYJOB_WEBHOOK})"
            )
        if job.suspend:
            yield (
                f"{where}: suspend: true with queue {job.queue!r}; Kueue owns spec.suspend (it "
                "suspends the job on create and resumes it on admission, kueue pkg/controller/"
                "jobframework/defaults.go ApplyDefaultForSuspend): remove suspend"
            )


def stack_rules(cfg: StackConfig) -> Iterable[str]:
    """Every capacity rule on the stack model (see the module docstring)."""
    yield from pool_problems(cfg)
    yield from queue_reference_problems(cfg)
    yield from job_problems(cfg)


# ------------------------------------------------------------------------------ render checks


def rayjob_problems(rayjob: dict[str, Any]) -> list[str]:
    """Kueue's webhook rules on one rendered queued RayJob (sources in the module docstring)."""
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
    if cluster.get("enableInTreeAutoscaling"):
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
                    f"jobs[{v.job}]: the {a.pod_set.name} pod set would be admitted on queued "
                    f"flavor {a.flavor!r} and join the ProvisioningRequest; GKE accepts one "
                    "PodSet per request (ray-project/ray#57839)"
                )
        workers = [a for a in on_dws if a.pod_set.name not in (HEAD_POD_SET, "submitter")]
        if len(workers) > 1:
            out.append(
                f"jobs[{v.job}]: {len(workers)} pod sets on queued flavors; GKE accepts one "
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


def render_problems(cfg: StackConfig, manifests: list[dict[str, Any]]) -> list[str]:
    """Every render-level capacity problem (see the module docstring); ``manifests`` are the
    rendered Ray objects (:func:`components.raycrs.manifests.render_manifests`)."""
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
        if m.get("kind") == "RayJob" and QUEUE_LABEL in (m["metadata"].get("labels") or {})
    ]
    for m in queued:
        out += rayjob_problems(m)
    try:
        verdicts = preview(cfg, queued)
    except KeyError:  # an undeclared queue: the stack rules said so
        return out
    for v in verdicts:
        if v.state == "never":
            out.append(f"jobs[{v.job}]: can never be admitted by queue {v.queue}: {v.reason}")
    out += dws_problems(cfg, verdicts, [o for o in objects if o["kind"] == "ClusterQueue"])
    return out
