"""What the cluster answers when one object is created, as far as Kueue decides it: the carried
Kueue CRD (schema and CEL: :func:`components.capacity.checks.kueue_schema_problems`) and Kueue
v0.19.2's validating webhook of the kind (:mod:`components.capacity.webhooks`), or, for a Ray
object, the Kueue webhook rules ``raygke check`` runs on a rendered one
(:func:`components.capacity.checks.rayjob_problems`, ``raycluster_problems``, the RayService
webhook and ``ValidateJobOnCreate``).

A kind the project does not model (a ``Workload``, which Kueue's job controllers create and the
stack never renders; ``MultiKueueCluster``, ...) is refused with one Problem saying so, never an
exception: there is no carried CRD or webhook port to answer for it."""

from __future__ import annotations

from typing import Any

from components.capacity import checks, webhooks
from components.kernel.problems import Problem

KUEUE_API = "kueue.x-k8s.io/"
# Kueue kinds with a carried CRD (components/capacity/crds/kueue-v0.19.2)
CARRIED = (
    "AdmissionCheck",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "ProvisioningRequestConfig",
    "ResourceFlavor",
    "Topology",
    "WorkloadPriorityClass",
)
_WEBHOOKS = {
    "ClusterQueue": webhooks.validate_cluster_queue,
    "Cohort": webhooks.validate_cohort,
    "ResourceFlavor": webhooks.validate_resource_flavor,
}


def _head(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind', '?')} {(obj.get('metadata') or {}).get('name', '?')}"


def admission_problems(
    obj: dict[str, Any], version: str = "0.19.2", elastic_gate: bool = True
) -> list[Problem]:
    """The errors (warnings left out) the API server and Kueue's webhooks would answer a create of
    ``obj`` with, one Problem each; ``[]``: admitted."""
    kind = obj.get("kind")
    if kind in ("RayJob", "RayCluster", "RayService"):
        # as checks.render_problems runs them on a rendered queued Ray object
        if kind in ("RayJob", "RayCluster") and _queued(obj):
            return checks.queued_ray_problems(obj, elastic_gate)
        return webhooks.ray_object_problems([obj], elastic_gate)
    if kind not in CARRIED or not str(obj.get("apiVersion", "")).startswith(KUEUE_API):
        return [
            Problem(
                "",
                f"{_head(obj)}: {obj.get('apiVersion', '?')} {kind} is not an object this project "
                "models (it carries Kueue's CRDs of "
                + ", ".join(CARRIED)
                + " and checks Ray objects); nothing here can say whether the cluster admits it",
            )
        ]
    out = [p for p in checks.kueue_schema_problems([obj], version) if p.severity != "warning"]
    hook = _WEBHOOKS.get(kind)
    if hook is not None:
        out += [Problem("", f"{_head(obj)}: {e} ({webhooks.KUEUE} {e.source})") for e in hook(obj)]
    return out


def _queued(obj: dict[str, Any]) -> bool:
    return webhooks.QUEUE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})
