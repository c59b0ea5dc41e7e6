"""Offline admission preview: for each queued job, its pod sets, the flavor each gets and the
quota it needs against its queue's nominal plus borrowable quota; verdict ``admitted``,
``waits`` or ``never`` (for the job alone). How Kueue builds pod sets and assigns flavors, with
sources:
docs/sources.md#capacity-preview
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.capacity.render import cluster_queue, queued_pool
from components.config.capacity import CapacityConfig, ClusterQueueConfig
from components.kernel.base import quantity_value
from components.plan.plan import Plan
from contract.errors import ConfigurationError
from contract.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    pass

BYTES_PER_GIB = 2**30


@dataclass(frozen=True)
class PodSet:
    """One Kueue pod set: ``name``, ``count`` pods, ``per_pod`` requests (cpu cores, memory
    bytes, accelerators), the pods' ``node_selector`` and ``tolerations``."""

    name: str
    count: int
    per_pod: dict[str, float]
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    topology: tuple[str, str] | None = None  # (mode, level) it asks for (TAS), None: none
    slices: tuple[str, int] | None = None  # (level, pods per slice) each slice asks for

    @property
    def total(self) -> dict[str, float]:
        return {r: v * self.count for r, v in self.per_pod.items()}


@dataclass
class Assignment:
    """The flavor a pod set gets (None: none) and how (``nominal`` / ``borrow``), or why not."""

    pod_set: PodSet
    flavor: str | None
    mode: str  # "nominal" | "borrow" | "never"
    provisioning: bool = False
    why: str = ""

    @property
    def topology(self) -> str:
        """The placement it gets: ``required <level>`` / ``preferred <level>`` (TAS), with
        ``, slices of <n> per <level>`` where each slice asks for a level of its own (a TPU7x
        super-slice's cube), or ``-``."""
        t = self.pod_set.topology
        if t is None or self.flavor is None:
            return "-"
        out = f"{t[0]} {_level(t[1])}".strip()
        if self.pod_set.slices is not None:
            level, size = self.pod_set.slices
            out += f", slices of {size} per {_level(level)}"
        return out


def _level(label: str) -> str:
    """A topology level's short name: ``block`` for ``cloud.google.com/gce-topology-block``,
    ``gke-tpu-partition-4x4x4-id``, ``hostname``."""
    return label.rsplit("/", 1)[-1].removeprefix("gce-topology-")


@dataclass
class Verdict:
    """The preview of one queued job: ``state`` is ``admitted`` / ``waits`` / ``never``;
    ``shortfall`` (never): ``(resource, needed, available)`` in base units; ``note``: for an
    elastic object, the size it is judged at and the most it grows to (:func:`elastic_note`)."""

    job: str
    queue: str
    cluster_queue: str
    state: str
    assignments: list[Assignment] = field(default_factory=list)
    shortfall: tuple[str, float, float] | None = None
    reason: str = ""
    kind: str = "RayJob"
    note: str = ""  # an elastic object: judged at its minimum, what it may grow to (elastic_note)

    @property
    def where(self) -> str:
        """The stack path of the object: ``jobs[<name>]`` or ``ray_clusters[<name>]``."""
        return f"{'ray_clusters' if self.kind == 'RayCluster' else 'jobs'}[{self.job}]"


class PodSetError(ConfigurationError):
    """A pod template Kueue could not count (a request that is not a quantity, or a negative
    one); :func:`preview_job` turns it into a ``never`` verdict naming the field."""


def _q(value: Any) -> float:
    return quantity_value(str(value))


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when a mapping, else ``{}``: a field left out is Go's zero value (an empty
    struct), as Kueue reads it (``BuildPodSets`` deep-copies ``Template`` whether set or not)."""
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def pod_requests(template: dict[str, Any], where: str = "template") -> dict[str, float]:
    """Summed container requests of a pod template (limits where no request), base units;
    a template without spec or containers requests nothing.

    Raises:
        PodSetError: a request or limit that is not a quantity, or is negative (``where`` names
            the template in the message).
    """
    total: dict[str, float] = {}
    containers = _dict(template).get("spec")
    for i, c in enumerate(_dict(containers).get("containers") or []):
        res = _dict(_dict(c).get("resources"))
        amounts = {**_dict(res.get("limits")), **_dict(res.get("requests"))}
        for k, v in amounts.items():
            try:
                n = parse_quantity(v, signed=True)
            except QuantityError as e:
                raise PodSetError(f"{where}.spec.containers[{i}].resources {k}: {e}") from None
            if n < 0:
                raise PodSetError(
                    f"{where}.spec.containers[{i}].resources {k} {v!r} is negative; a request "
                    "is at least 0"
                )
            total[k] = total.get(k, 0.0) + float(n)
    return total


def _pod_set(name: str, count: int, template: Any, extra: dict[str, float], where: str) -> PodSet:
    spec = _dict(_dict(template).get("spec"))
    per_pod = pod_requests(_dict(template), where)
    for k, v in extra.items():
        per_pod[k] = per_pod.get(k, 0.0) + v
    from components.capacity.topology import requested, slice_requested

    annotations = _dict(_dict(_dict(template).get("metadata")).get("annotations"))
    return PodSet(
        name=name,
        count=count,
        per_pod=per_pod,
        node_selector={str(k): str(v) for k, v in _dict(spec.get("nodeSelector")).items()},
        tolerations=[t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
        topology=requested(annotations),
        slices=slice_requested(annotations),
    )


# KubeRay's autoscaler sidecar when no resources are given (Kueue's defaultAutoscalerResources).
AUTOSCALER = {"cpu": 0.5, "memory": 512 * 2**20}


def _cluster_pod_sets(cluster: dict[str, Any], path: str) -> list[PodSet]:
    head_extra = AUTOSCALER if cluster.get("enableInTreeAutoscaling") else {}
    head = _dict(cluster.get("headGroupSpec")).get("template")
    out = [_pod_set("head", 1, head, head_extra, f"{path}.headGroupSpec.template")]
    for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
        g = _dict(g)
        # autoscaled (no replicas): the API server applies the CRD default 0 and KubeRay starts
        # minReplicas (GetWorkerGroupDesiredReplicas), the first workload slice; each
        # scale-up is a further slice on the same flavor.
        replicas = _int(g.get("replicas"), _int(g.get("minReplicas"), 0))
        count = max(0, replicas) * max(1, _int(g.get("numOfHosts"), 1))
        where = f"{path}.workerGroupSpecs[{i}].template"
        out.append(_pod_set(str(g.get("groupName", "")), count, g.get("template"), {}, where))
    return out


def pod_sets(obj: dict[str, Any]) -> list[PodSet]:
    """The pod sets Kueue builds for a rendered RayJob with its own cluster or a RayCluster
    (see the module docstring; a RayCluster has no submitter); ``[]`` for a job on an existing
    cluster (Kueue skips it: ``Skip``). A field left out counts as Go's zero value (a worker
    group without ``template`` requests nothing).

    Raises:
        PodSetError: a request that is not a quantity or is negative.
    """
    spec = _dict(obj.get("spec"))
    if obj.get("kind") == "RayCluster":
        return _cluster_pod_sets(spec, "spec")
    cluster = spec.get("rayClusterSpec")
    if not isinstance(cluster, dict):
        return []
    out = _cluster_pod_sets(cluster, "spec.rayClusterSpec")
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        template = spec.get("submitterPodTemplate") or {
            "spec": {
                "containers": [{"resources": {"requests": {"cpu": "500m", "memory": "200Mi"}}}]
            }
        }
        out.append(_pod_set("submitter", 1, template, {}, "spec.submitterPodTemplate"))
    return out


def _tolerates(taint: dict[str, str], tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        op = t.get("operator", "Equal")
        if op == "Exists" and t.get("key") in (None, "", taint["key"]):
            return True
        if op == "Equal" and t.get("key") == taint["key"] and t.get("value", "") == taint["value"]:
            return True
    return False


def flavor_match(ps: PodSet, flavor: dict[str, Any], tas_only: bool = False) -> str | None:
    """Why pod set ``ps`` cannot use ResourceFlavor ``flavor`` (None: it can): an untolerated
    NoSchedule/NoExecute taint, or a node selector that disagrees with the flavor's labels on
    the flavor's own keys (flavorassigner.go ``checkFlavorForPodSets``), or a topology request
    the flavor cannot serve (:func:`components.capacity.topology.tas_mismatch`; ``tas_only``:
    every flavor of the ClusterQueue has a topology)."""
    from components.capacity.topology import tas_mismatch

    spec = flavor.get("spec") or {}
    tas = tas_mismatch(ps.topology, flavor, tas_only)
    if tas:
        return tas
    tolerations = [*ps.tolerations, *(spec.get("tolerations") or [])]
    for t in spec.get("nodeTaints") or []:
        if t["effect"] in ("NoSchedule", "NoExecute") and not _tolerates(t, tolerations):
            return f"untolerated taint {t['key']}={t['value']}:{t['effect']}"
    labels = spec.get("nodeLabels") or {}
    for k, v in labels.items():
        if k in ps.node_selector and ps.node_selector[k] != v:
            return f"nodeSelector {k}={ps.node_selector[k]} but the flavor has {k}={v}"
    return None


def queue_quotas(cq: dict[str, Any]) -> dict[str, dict[str, dict[str, float | None]]]:
    """flavor -> resource -> {nominal, borrowing, lending} from a rendered ClusterQueue."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for group in cq["spec"]["resourceGroups"]:
        for f in group["flavors"]:
            out[f["name"]] = {
                r["name"]: {
                    "nominal": _q(r["nominalQuota"]),
                    "borrowing": _q(r["borrowingLimit"]) if "borrowingLimit" in r else None,
                    "lending": _q(r["lendingLimit"]) if "lendingLimit" in r else None,
                }
                for r in f["resources"]
            }
    return out


def cohort_borrowable(
    p: Plan,
    cluster_queues: Sequence[ClusterQueueConfig],
    cq: ClusterQueueConfig,
    flavor: str,
    resource: str,
) -> float:
    """Most quota ``cq`` can borrow for ``flavor`` x ``resource``: what the other queues of its
    cohort (``cluster_queues``: ``capacity.cluster_queues`` of the stack whose plan is ``p``) lend
    (lendingLimit, else nominal), capped by its own borrowingLimit; 0 without cohort."""
    if not cq.cohort:
        return 0.0
    lent = 0.0
    for other in cluster_queues:
        if other.name == cq.name or other.cohort != cq.cohort:
            continue
        q = queue_quotas(cluster_queue(p, other)).get(flavor, {}).get(resource)
        if q:
            lent += q["lending"] if q["lending"] is not None else float(q["nominal"] or 0)
    mine = queue_quotas(cluster_queue(p, cq)).get(flavor, {}).get(resource) or {}
    limit = mine.get("borrowing")
    return lent if limit is None else min(lent, limit)


def fmt_amount(resource: str, value: float) -> str:
    """``memory`` in GiB, everything else as a number (``cpu`` in cores)."""
    if resource == "memory":
        return f"{value / BYTES_PER_GIB:g}Gi"
    return f"{value:g}"


def preview_job(p: Plan, capacity: CapacityConfig, rayjob: dict[str, Any], queue: str) -> Verdict:
    """The verdict for one rendered RayJob (or RayCluster) waiting in LocalQueue ``queue`` of
    ``capacity`` (the stack's ``capacity`` block; ``p`` its plan).

    Raises:
        KeyError: the queue or its cluster queue is not declared (the stack rules say so first).
    """
    name = rayjob["metadata"]["name"]
    lq = capacity.local_queue(queue)
    cq = capacity.cluster_queue(lq.cluster_queue)
    rendered = cluster_queue(p, cq)
    quotas = queue_quotas(rendered)
    covered = rendered["spec"]["resourceGroups"][0]["coveredResources"]
    flavors = {f.pool: p.resource_flavors[f.pool] for f in cq.flavors}  # read only
    tas_only = all("topologyName" in f["spec"] for f in flavors.values())
    verdict = Verdict(
        job=name,
        queue=queue,
        cluster_queue=cq.name,
        state="admitted",
        kind=str(rayjob.get("kind", "RayJob")),
    )
    used: dict[tuple[str, str], float] = {}
    try:
        sets = pod_sets(rayjob)
    except PodSetError as e:
        verdict.state, verdict.reason = "never", f"Kueue cannot count its pods: {e}"
        return verdict
    for ps in sets:
        # matching flavor -> its (resource, needed, available) shortfalls
        failures: dict[str, list[tuple[str, float, float]]] = {}
        uncovered = [r for r, v in ps.per_pod.items() if v and r not in covered]
        if uncovered:
            verdict.assignments.append(
                Assignment(ps, None, "never", why=f"requests {uncovered[0]}")
            )
            verdict.state, verdict.reason = (
                "never",
                (
                    f"pod set {ps.name!r} requests {uncovered[0]}, which cluster queue {cq.name} "
                    f"does not cover (covered: {', '.join(covered)})"
                ),
            )
            continue
        chosen: Assignment | None = None
        reasons = []
        for f in cq.flavors:
            why = flavor_match(ps, flavors[f.pool], tas_only)
            if why:
                reasons.append(f"{f.pool}: {why}")
                continue
            fits_nominal, fits_borrow = True, True
            for r, need in ps.total.items():
                if not need:
                    continue
                total = used.get((f.pool, r), 0.0) + need
                nominal = float(quotas[f.pool][r]["nominal"] or 0)
                available = nominal + cohort_borrowable(p, capacity.cluster_queues, cq, f.pool, r)
                if total > nominal:
                    fits_nominal = False
                if total > available:
                    fits_borrow = False
                    failures.setdefault(f.pool, []).append((r, total, available))
            if fits_nominal:
                chosen = Assignment(ps, f.pool, "nominal", queued_pool(p.pool_specs, f.pool))
                break
            if fits_borrow and chosen is None:
                chosen = Assignment(ps, f.pool, "borrow", queued_pool(p.pool_specs, f.pool))
        if chosen is None:
            why = "; ".join(reasons) if reasons and len(reasons) == len(cq.flavors) else ""
            verdict.assignments.append(Assignment(ps, None, "never", why=why or "quota"))
            if verdict.state != "never":
                verdict.state = "never"
                if why:
                    verdict.reason = f"pod set {ps.name!r} matches no flavor ({why})"
                elif failures:
                    # the most telling shortfall: on the matching flavor that comes closest (the
                    # smallest need/available over its short resources; a resource it has none
                    # of is infinitely short), that flavor's largest one
                    def ratio(s: tuple[str, float, float]) -> float:
                        return s[1] / s[2] if s[2] > 0 else float("inf")

                    closest = min(failures.values(), key=lambda fs: max(map(ratio, fs)))
                    worst = max(closest, key=ratio)
                    r, need, avail = worst
                    verdict.shortfall = worst
                    verdict.reason = (
                        f"pod set {ps.name!r} needs {r} {fmt_amount(r, need)}; cluster queue "
                        f"{cq.name} has {fmt_amount(r, avail)} (nominal plus borrowable)"
                    )
            continue
        for r, need in ps.total.items():
            used[(chosen.flavor, r)] = used.get((chosen.flavor, r), 0.0) + need  # type: ignore[index]
        verdict.assignments.append(chosen)
        if chosen.mode == "borrow" and verdict.state == "admitted":
            verdict.state = "waits"
            verdict.reason = "needs quota borrowed from cohort " + str(cq.cohort)
    return verdict


def _group_max_pods(obj: dict[str, Any]) -> dict[str, int]:
    """Worker group -> its most pods (``maxReplicas`` x ``numOfHosts``)."""
    spec = _dict(obj.get("spec"))
    cluster = spec if obj.get("kind") == "RayCluster" else _dict(spec.get("rayClusterSpec"))
    out = {}
    for g in cluster.get("workerGroupSpecs") or []:
        g = _dict(g)
        hosts = max(1, _int(g.get("numOfHosts"), 1))
        out[str(g.get("groupName", ""))] = max(0, _int(g.get("maxReplicas"), 0)) * hosts
    return out


def elastic_note(p: Plan, capacity: CapacityConfig, obj: dict[str, Any], verdict: Verdict) -> str:
    """For an elastic object (``kueue.x-k8s.io/elastic-job: "true"``): the verdict is for its
    first workload, its worker groups at their minimum; each scale-up is a further workload
    slice on the flavor first assigned (kueue site/content/en/docs/concepts/
    elastic_workload.md, Limitations). Says per growing group ``<min> -> <max> pods`` and, when
    that flavor's nominal plus borrowable quota cannot hold the maximum (the group alone), how
    many pods it can reach; ``""`` for a fixed-size object (``capacity``: the stack's
    ``capacity`` block, ``p`` its plan)."""
    from components.capacity.render import ELASTIC_ANNOTATION

    ann = _dict(_dict(obj.get("metadata")).get("annotations"))
    if ann.get(ELASTIC_ANNOTATION) != "true":
        return ""
    most = _group_max_pods(obj)
    cq = capacity.cluster_queue(verdict.cluster_queue)
    quotas = queue_quotas(cluster_queue(p, cq))
    parts = []
    for a in verdict.assignments:
        top = most.get(a.pod_set.name, 0)
        if a.pod_set.name not in most or top <= a.pod_set.count:
            continue
        part = f"worker group {a.pod_set.name!r} {a.pod_set.count} -> {top} pods"
        if a.flavor:
            reach = top
            for r, per in a.pod_set.per_pod.items():
                if per > 0 and r in quotas.get(a.flavor, {}):
                    avail = float(quotas[a.flavor][r]["nominal"] or 0)
                    avail += cohort_borrowable(p, capacity.cluster_queues, cq, a.flavor, r)
                    reach = min(reach, int(avail // per))
            if reach < top:
                part += f" (flavor {a.flavor!r} holds at most {reach})"
        parts.append(part)
    if not parts:
        return ""
    return (
        "elastic: judged at its minimum; grows by further workload slices on the same flavor: "
        + ", ".join(parts)
    )


def preview(p: Plan, capacity: CapacityConfig, manifests: list[dict[str, Any]]) -> list[Verdict]:
    """A verdict per queued RayJob and RayCluster among ``manifests`` (rendered objects with a
    queue label of ``capacity``, the ``capacity`` block of the stack whose plan is ``p``); an elastic object (an autoscaling RayCluster, a job with a ``slices`` range)
    is previewed at its minimum size, its first workload slice, with its maximum in
    :attr:`Verdict.note`."""
    from components.capacity.render import QUEUE_LABEL

    out = []
    for m in manifests:
        if m.get("kind") not in ("RayJob", "RayCluster"):
            continue
        queue = (m["metadata"].get("labels") or {}).get(QUEUE_LABEL)
        if queue:
            v = preview_job(p, capacity, m, queue)
            v.note = elastic_note(p, capacity, m, v)
            out.append(v)
    return out
