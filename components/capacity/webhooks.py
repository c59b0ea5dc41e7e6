"""Kueue's validating webhooks, ported from the release the stack pins (v0.19.2), run on the
rendered objects (:func:`validate_cluster_queue`, :func:`validate_cohort`,
:func:`validate_resource_flavor`, :func:`validate_ray_object`); :func:`webhook_problems` maps
every error back to the stack field that produced it. Which kinds have a validator, from where:
docs/sources.md#capacity-webhooks
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from components.capacity.concurrent import concurrent_admission_errors
from components.capacity.fields import cluster_queue_field, flavor_field, named_resources
from components.capacity.labelselector import label_selector_errors
from components.kernel.labels import is_label_value, is_qualified_name
from components.kernel.problems import Problem, at
from contract.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from components.config.capacity import CapacityConfig
    from components.plan.plan import Plan

KUEUE = "kueue v0.19.2"
CQ_GO = "pkg/webhooks/clusterqueue_webhook.go"
COHORT_GO = "pkg/webhooks/cohort_webhook.go"
COMMON_GO = "pkg/webhooks/common.go"
RF_GO = "pkg/webhooks/resourceflavor_webhook.go"
RAYCLUSTER_COMMON_GO = "pkg/controller/jobs/raycluster/common.go"
JOBFRAMEWORK_GO = "pkg/controller/jobframework/validation.go"

LENDING_LIMIT_MSG = "must be less than or equal to the nominalQuota"  # lendingLimitErrorMsg
LIMIT_EMPTY_MSG = "must be nil when {} is empty"  # limitIsEmptyErrorMsgTemplate
NEGATIVE_MSG = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
MAX_FLAVORS = 256  # validateTotalFlavors
MAX_COVERED = 256  # validateTotalCoveredResources
MAX_COMBINATIONS = 512  # validateFlavorResourceCombinations
MAX_POD_SETS = 18  # pkg/controller/jobframework/constants.go MaxPodSets
HEAD_POD_SET = "head"  # pkg/controller/jobs/raycluster headGroupPodSetName
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # pkg/constants QueueLabel
ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"  # workloadslicing.EnabledAnnotationKey
ELASTIC_KINDS = ("RayCluster", "RayJob", "RayService")  # supportedElasticJobGVKs (Ray part)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class FieldError:
    """One ``k8s.io/apimachinery/pkg/util/validation/field.Error``: ``path`` in the object
    (``spec.resourceGroups[0].coveredResources[1]``), ``kind`` (Go's ``ErrorType`` string:
    ``Invalid value``, ``Duplicate value``, ``Forbidden``, ``Required value``, ``Too many``,
    ``Unsupported value``), the offending ``value`` (None where Go prints none) and ``detail``;
    ``source`` is the Go file of the rule."""

    path: str
    kind: str
    value: Any
    detail: str
    source: str

    def __str__(self) -> str:
        value = "" if self.value is None else f"{_go_value(self.value)}"
        parts = [p for p in (value, self.detail) if p]
        return f"{self.path}: {self.kind}: {': '.join(parts)}" if parts else self.path


def _go_value(v: Any) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def _invalid(path: str, value: Any, detail: str, source: str) -> FieldError:
    return FieldError(path, "Invalid value", value, detail, source)


def _quantity(value: Any) -> Decimal | None:
    """A rendered quantity in base units (signed, as ``resource.Quantity``); None: unparsable
    (the CRD schema refuses it first)."""
    try:
        return parse_quantity(value, signed=True)
    except QuantityError:
        return None


# ------------------------------------------------------------------ label / name checks


def _label_name(key: str, path: str, source: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName`` (``IsQualifiedName``)."""
    if is_qualified_name(key):
        return []
    return [
        _invalid(
            path,
            key,
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character, at most 63 characters, with an optional "
            "DNS subdomain prefix and '/'",
            source,
        )
    ]


def _label_value(value: str, path: str, source: str) -> list[FieldError]:
    """``content.IsLabelValue``: empty, or at most 63 alphanumerics, ``-``, ``_``, ``.``."""
    if is_label_value(value):
        return []
    return [
        _invalid(
            path,
            value,
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character (at most 63)",
            source,
        )
    ]


def validate_labels(labels: dict[str, Any], path: str, source: str = RF_GO) -> list[FieldError]:
    """``metav1validation.ValidateLabels``: every key a qualified name, every value a label
    value (errors at ``<path>`` as Go reports them)."""
    out: list[FieldError] = []
    for k, v in (labels or {}).items():
        out += _label_name(str(k), path, source)
        out += _label_value(str(v), path, source)
    return out


# ------------------------------------------------------------------ ClusterQueue / Cohort


def _validate_limit(path: str, value: Any, has_parent: bool, cohort: bool) -> list[FieldError]:
    """``validateLimit``: a borrowing / lending limit needs a cohort (a parent for a Cohort)."""
    if has_parent:
        return []
    return [_invalid(path, value, LIMIT_EMPTY_MSG.format("parent" if cohort else "cohort"), CQ_GO)]


def _non_negative(path: str, value: Any) -> list[FieldError]:
    """``validateResourceQuantity``: not below 0."""
    q = _quantity(value)
    return [_invalid(path, value, NEGATIVE_MSG, CQ_GO)] if q is not None and q < 0 else []


def validate_resource_groups(
    groups: list[dict[str, Any]],
    path: str,
    has_parent: bool,
    lending_le_nominal: bool,
    cohort: bool,
) -> list[FieldError]:
    """``validateResourceGroups`` / ``validateFlavorQuotas`` (``pkg/webhooks/clusterqueue_webhook.go``):
    covered resources are label keys (``common.go`` ``validateResourceName``) and unique across
    groups; flavors unique across groups; each flavor's ``resources[i].name`` equals
    ``coveredResources[i]`` ("must match the name in coveredResources"); quotas not negative;
    a ``borrowingLimit`` / ``lendingLimit`` needs a cohort; a ``lendingLimit`` at most the
    ``nominalQuota`` (ClusterQueues only: ``enforceNominalGreaterThanLending``)."""
    out: list[FieldError] = []
    seen_res: set[str] = set()
    seen_flavors: set[str] = set()
    for i, rg in enumerate(groups or []):
        gpath = f"{path}[{i}]"
        covered = list(rg.get("coveredResources") or [])
        for j, name in enumerate(covered):
            p = f"{gpath}.coveredResources[{j}]"
            out += _label_name(str(name), p, COMMON_GO)
            if name in seen_res:
                out.append(FieldError(p, "Duplicate value", name, "", CQ_GO))
            seen_res.add(name)
        for j, fq in enumerate(rg.get("flavors") or []):
            fpath = f"{gpath}.flavors[{j}]"
            for k, rq in enumerate((fq.get("resources") or [])[: len(covered)]):
                rpath = f"{fpath}.resources[{k}]"
                if rq.get("name") != covered[k]:
                    out.append(
                        _invalid(
                            f"{rpath}.name",
                            rq.get("name"),
                            "must match the name in coveredResources",
                            CQ_GO,
                        )
                    )
                out += _non_negative(f"{rpath}.nominalQuota", rq.get("nominalQuota", 0))
                if "borrowingLimit" in rq:
                    b = rq["borrowingLimit"]
                    out += _validate_limit(f"{rpath}.borrowingLimit", b, has_parent, cohort)
                    out += _non_negative(f"{rpath}.borrowingLimit", b)
                if "lendingLimit" in rq:
                    lend, lpath = rq["lendingLimit"], f"{rpath}.lendingLimit"
                    out += _non_negative(lpath, lend)
                    out += _validate_limit(lpath, lend, has_parent, cohort)
                    lq, nq = _quantity(lend), _quantity(rq.get("nominalQuota", 0))
                    if lending_le_nominal and lq is not None and nq is not None and lq > nq:
                        out.append(_invalid(lpath, lend, LENDING_LIMIT_MSG, CQ_GO))
            name = fq.get("name")
            if name in seen_flavors:
                out.append(FieldError(f"{fpath}.name", "Duplicate value", name, "", CQ_GO))
            seen_flavors.add(name)
    return out


def _validate_fair_sharing(fs: dict[str, Any] | None, path: str) -> list[FieldError]:
    """``validateFairSharing`` (``pkg/webhooks/common.go``): weight not negative, 0 or > 1n."""
    if not fs or fs.get("weight") is None:
        return []
    w = _quantity(fs["weight"])
    if w is None:
        return []
    if w < 0:
        return [_invalid(path, fs["weight"], NEGATIVE_MSG, COMMON_GO)]
    if 0 < w <= Decimal("1e-9"):
        return [_invalid(path, fs["weight"], "When not 0, weight must be > 10e-9", COMMON_GO)]
    return []


def validate_cluster_queue(
    cq: dict[str, Any], concurrent_admission: bool = False
) -> list[FieldError]:
    """``ValidateClusterQueue`` (``pkg/webhooks/clusterqueue_webhook.go``, create): the resource
    groups (:func:`validate_resource_groups`, lending at most nominal), the preemption
    combination ``reclaimWithinCohort: Never`` with a ``borrowWithinCohort`` policy other than
    ``Never``, a fungibility ``preference`` only with both ``TryNextFlavor``, fair sharing, at
    most 256 flavors and 256 covered resources in all and 512 flavor-resource combinations per
    group, every ``admissionChecksStrategy`` ``onFlavors`` entry a flavor of the queue
    (``validateAdmissionCheckOnFlavors``) and the namespace selector a valid label selector
    (:mod:`components.capacity.labelselector`); with ``concurrent_admission`` (Kueue's
    ``ConcurrentAdmission`` gate, alpha and off in v0.19.2) ``validateConcurrentAdmissionPolicy``
    too (:mod:`components.capacity.concurrent`)."""
    spec = cq.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    out = validate_resource_groups(
        groups, "spec.resourceGroups", bool(spec.get("cohortName")), True, cohort=False
    )
    out += label_selector_errors(
        spec.get("namespaceSelector"),
        "spec.namespaceSelector",
        lambda p, kind, value, detail: FieldError(p, kind, value, detail, CQ_GO),
    )
    pre = spec.get("preemption") or {}
    borrow = (pre.get("borrowWithinCohort") or {}).get("policy")
    if pre.get("reclaimWithinCohort") == "Never" and borrow not in (None, "Never"):
        out.append(
            _invalid(
                "spec.preemption",
                pre,
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                CQ_GO,
            )
        )
    fung = spec.get("flavorFungibility") or {}
    if fung.get("preference") is not None and (
        fung.get("whenCanBorrow") != "TryNextFlavor"
        or fung.get("whenCanPreempt") != "TryNextFlavor"
    ):
        out.append(
            _invalid(
                "spec.flavorFungibility.preference",
                fung["preference"],
                f'preference "{fung["preference"]}" requires both whenCanBorrow and '
                "whenCanPreempt to be TryNextFlavor",
                CQ_GO,
            )
        )
    out += _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    flavors = [f.get("name") for g in groups for f in g.get("flavors") or []]
    covered = sum(len(g.get("coveredResources") or []) for g in groups)
    for total, limit, what in (
        (len(flavors), MAX_FLAVORS, "flavors"),
        (covered, MAX_COVERED, "covered resources"),
    ):
        if total > limit:
            out.append(
                _invalid(
                    "spec.resourceGroups",
                    total,
                    f"total number of {what} across all resourceGroups must be ≤ {limit}, got {total}",
                    CQ_GO,
                )
            )
    for i, g in enumerate(groups):
        n = sum(len(f.get("resources") or []) for f in g.get("flavors") or [])
        if n > MAX_COMBINATIONS:
            out.append(
                _invalid(
                    f"spec.resourceGroups[{i}]",
                    n,
                    f"number of flavor-resource combinations in a resourceGroup must be ≤ "
                    f"{MAX_COMBINATIONS}, got {n}",
                    CQ_GO,
                )
            )
    if concurrent_admission:
        out += concurrent_admission_errors(
            spec, lambda p, kind, value, detail: FieldError(p, kind, value, detail, CQ_GO)
        )
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    for i, check in enumerate(checks):
        for j, f in enumerate(check.get("onFlavors") or []):
            if f not in flavors:
                out.append(
                    FieldError(
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                        "Unsupported value",
                        f,
                        "supported values: " + ", ".join(f'"{x}"' for x in flavors),
                        CQ_GO,
                    )
                )
    return out


def validate_cohort(cohort: dict[str, Any]) -> list[FieldError]:
    """``validateCohort`` (``pkg/webhooks/cohort_webhook.go``): fair sharing and the resource
    groups, limits needing a ``parentName``, lending above nominal allowed."""
    spec = cohort.get("spec") or {}
    out = _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    return out + validate_resource_groups(
        spec.get("resourceGroups") or [],
        "spec.resourceGroups",
        bool(spec.get("parentName")),
        False,
        cohort=True,
    )


def validate_resource_flavor(rf: dict[str, Any]) -> list[FieldError]:
    """``ValidateResourceFlavor`` (``pkg/webhooks/resourceflavor_webhook.go``): ``nodeLabels``
    are labels; each node taint's key a label name, its value a label value, unique by key and
    effect ("taints must be unique by key and effect pair"); each toleration's key, when set, a
    label name (``validateTolerations``, ``pkg/webhooks/workload_webhook.go``)."""
    spec = rf.get("spec") or {}
    out = validate_labels(spec.get("nodeLabels") or {}, "spec.nodeLabels")
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(spec.get("nodeTaints") or []):
        p = f"spec.nodeTaints[{i}]"
        out += _label_name(str(t.get("key", "")), f"{p}.key", RF_GO)
        out += _label_value(str(t.get("value", "")), f"{p}.value", RF_GO)
        pair = (str(t.get("key", "")), str(t.get("effect", "")))
        if pair in seen:
            out.append(
                FieldError(
                    p, "Duplicate value", t, "taints must be unique by key and effect pair", RF_GO
                )
            )
        seen.add(pair)
    for i, t in enumerate(spec.get("tolerations") or []):
        if t.get("key"):
            out += _label_name(str(t["key"]), f"spec.tolerations[{i}].key", RF_GO)
    return out


# ------------------------------------------------------------------ Ray integrations


def _elastic(obj: dict[str, Any], gate: bool) -> bool:
    """``workloadslicing.Enabled`` with the feature gate: the annotation is ``"true"``."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    return gate and ann.get(ELASTIC_ANNOTATION) == "true"


def validate_job_on_create(obj: dict[str, Any]) -> list[FieldError]:
    """``ValidateJobOnCreate`` (``pkg/controller/jobframework/validation.go``), the parts a
    rendered Ray object can reach: the queue-name label a DNS-1123 subdomain
    (``ValidateQueueName``) and the elastic-job annotation only on a supported kind
    (``ValidateElasticJobAnnotation``)."""
    meta = obj.get("metadata") or {}
    out: list[FieldError] = []
    q = (meta.get("labels") or {}).get(QUEUE_LABEL)
    if q is not None and (len(q) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(q)):
        out.append(
            _invalid(
                f"metadata.labels[{QUEUE_LABEL}]",
                q,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                JOBFRAMEWORK_GO,
            )
        )
    ann = (meta.get("annotations") or {}).get(ELASTIC_ANNOTATION)
    if ann == "true" and obj.get("kind") not in ELASTIC_KINDS:
        out.append(
            FieldError(
                f"metadata.annotations[{ELASTIC_ANNOTATION}]",
                "Forbidden",
                None,
                f"elastic job is not supported for {obj.get('kind')!r}",
                JOBFRAMEWORK_GO,
            )
        )
    return out


def validate_ray_cluster_spec(
    obj: dict[str, Any], spec: dict[str, Any], path: str, gate: bool, message: str | None = None
) -> list[FieldError]:
    """``ValidateCreate`` (``pkg/controller/jobs/raycluster/common.go``) on the RayCluster spec
    at ``path`` of a queued object: in-tree autoscaling only on an elastic workload ("a kueue
    managed job should only use autoscaling when workload slicing is enabled"; the RayCluster
    webhook's own wording is ``message``), at most ``MaxPodSets`` pod sets (head + worker
    groups), no worker group named ``head`` ("\\"head\\" is reserved for the head group")."""
    out: list[FieldError] = []
    if spec.get("enableInTreeAutoscaling") and not _elastic(obj, gate):
        out.append(
            _invalid(
                f"{path}.enableInTreeAutoscaling",
                True,
                message
                or "a kueue managed job should only use autoscaling when workload "
                "slicing is enabled",
                RAYCLUSTER_COMMON_GO,
            )
        )
    groups = spec.get("workerGroupSpecs") or []
    if len(groups) + 1 > MAX_POD_SETS:
        out.append(
            FieldError(
                f"{path}.workerGroupSpecs",
                "Too many",
                len(groups) + 1,
                f"must have at most {MAX_POD_SETS} items",
                RAYCLUSTER_COMMON_GO,
            )
        )
    for i, g in enumerate(groups):
        if (g or {}).get("groupName") == HEAD_POD_SET:
            out.append(
                FieldError(
                    f"{path}.workerGroupSpecs[{i}].groupName",
                    "Forbidden",
                    None,
                    f'"{HEAD_POD_SET}" is reserved for the head group',
                    RAYCLUSTER_COMMON_GO,
                )
            )
    return out


def validate_ray_object(obj: dict[str, Any], gate: bool = True) -> list[FieldError]:
    """Kueue's validating webhook on a RayJob, RayCluster or RayService that carries the queue
    label (``manageJobsWithoutQueueName: false``, :func:`components.capacity.render.
    manager_config`): ``validateCreate`` of ``pkg/controller/jobs/rayjob/rayjob_webhook.go``
    (no ``clusterSelector`` with a ``rayClusterSpec``, a ``rayClusterSpec`` without one,
    ``shutdownAfterJobFinishes``; a ``clusterSelector`` alone is accepted unchecked: Kueue does not
    manage a job on an existing cluster), ``raycluster_webhook.go`` (autoscaling only as an elastic
    job) and ``rayservice_webhook.go``, each with :func:`validate_ray_cluster_spec` and
    :func:`validate_job_on_create`. ``gate``: the ``ElasticJobsViaWorkloadSlices`` feature gate."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    out: list[FieldError] = []
    queued = QUEUE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})
    if queued and kind == "RayJob":
        go = "pkg/controller/jobs/rayjob/rayjob_webhook.go"
        has_sel, cluster = bool(spec.get("clusterSelector")), spec.get("rayClusterSpec")
        if has_sel and cluster is not None:
            out.append(
                _invalid(
                    "spec.clusterSelector",
                    spec["clusterSelector"],
                    "a kueue managed job should not use an existing cluster",
                    go,
                )
            )
        elif has_sel:  # an existing cluster: not Kueue's job, nothing more is validated
            return out
        elif cluster is None:
            out.append(
                FieldError(
                    "spec.rayClusterSpec",
                    "Required value",
                    None,
                    "rayClusterSpec is required for Kueue-managed jobs that don't use "
                    "clusterSelector",
                    go,
                )
            )
        elif cluster is not None:
            if not spec.get("shutdownAfterJobFinishes"):
                out.append(
                    _invalid(
                        "spec.shutdownAfterJobFinishes",
                        False,
                        "a kueue managed job should delete the cluster after finishing",
                        go,
                    )
                )
            out += validate_ray_cluster_spec(obj, cluster or {}, "spec.rayClusterSpec", gate)
    elif queued and kind == "RayCluster":
        out += validate_ray_cluster_spec(
            obj,
            spec,
            "spec",
            gate,
            "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
            "ElasticJobsViaWorkloadSlices feature gate and set the "
            f'"{ELASTIC_ANNOTATION}": "true" annotation',
        )
    elif queued and kind == "RayService":
        out += validate_ray_cluster_spec(
            obj, spec.get("rayClusterConfig") or {}, "spec.rayClusterConfig", gate
        )
    return out + validate_job_on_create(obj)


# ------------------------------------------------------------------ the stack fields
# Which stack field an error on a rendered object comes from: components/capacity/fields.py.


def kueue_webhook_problems(p: Plan, capacity: CapacityConfig) -> Iterable[Problem]:
    """Kueue's webhooks on every rendered Kueue object of ``capacity`` (the ``capacity`` block of
    the stack whose plan is ``p``) (:func:`validate_cluster_queue`,
    :func:`validate_cohort`, :func:`validate_resource_flavor`), each error at the stack field
    behind it with Kueue's reason and source, a quota's resource named (not its index), e.g.
    ``capacity.cluster_queues[a].flavors[v6e].lending_limit[google.com/tpu]: ...
    resources[google.com/tpu].lendingLimit: Invalid value: "32": must be less than or equal to
    the nominalQuota``. A render that fails (an undeclared pool) is reported by the reference rules."""
    from components.capacity.render import render_capacity

    if not capacity.enabled:
        return
    try:
        objects = render_capacity(p, capacity)
    except KeyError:
        return
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "ClusterQueue":
            errors, where = validate_cluster_queue(obj), cluster_queue_field
        elif kind == "Cohort":
            errors, where = validate_cohort(obj), lambda o, e: "capacity.cluster_queues"
        elif kind == "ResourceFlavor":
            errors, where = validate_resource_flavor(obj), flavor_field
        else:
            continue
        for e in errors:
            path = where(obj, e)
            text = named_resources(obj, e) if kind == "ClusterQueue" else str(e)
            yield at(
                path,
                f"{path}: Kueue's {kind} webhook refuses {kind} {name}: {text} ({KUEUE} "
                f"{e.source})",
            )


def ray_object_problems(manifests: Iterable[dict[str, Any]], gate: bool) -> list[Problem]:
    """:func:`validate_ray_object` on each rendered queued Ray object, one line each:
    ``<Kind> <name>: <field error> (kueue v0.19.2 <Go file>)``."""
    out = []
    for m in manifests:
        if m.get("kind") not in ELASTIC_KINDS:
            continue
        name = (m.get("metadata") or {}).get("name", "?")
        out += [
            Problem("", f"{m['kind']} {name}: {e} ({KUEUE} {e.source})")
            for e in validate_ray_object(m, gate)
        ]
    return out
