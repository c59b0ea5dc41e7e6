"""Where Ray pods and Ray Train workers land: a rendered head or worker group against the node
shapes it may run on (:func:`schedule_problems`, :func:`object_store_problems`) and a job's
placement strategy against its pool (:func:`placement_problems`), run by
:func:`components.stack.checks.check_stack` (checks 2 and 3).
Sources: docs/sources.md#raycrs-placement
"""

from __future__ import annotations

import math
from typing import Any

from components import catalog
from components.config.raycrs import OBJECT_STORE_MAX_FRACTION
from components.kernel.problems import Problem, at
from components.nodepools.render import NodePoolSpec
from components.plan.plan import Context, Plan
from components.raycrs.pod import GCSFUSE_ANNOTATION, GCSFUSE_SIDECAR
from contract.quantity import quantity_float


def parse_quantity(value: str | int | float) -> float:
    """A Kubernetes quantity as a number in base units (``"500m"`` -> 0.5, ``"1Gi"`` -> 2**30;
    surrounding blanks ignored): :func:`contract.quantity.quantity_float`.

    Raises:
        ValueError: not a quantity (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/).
    """
    return quantity_float(value.strip() if isinstance(value, str) else value)


def _pod_requests(template: dict[str, Any]) -> dict[str, float]:
    """Summed container requests (limits where no request): cpu cores, memory GiB, others count."""
    total: dict[str, float] = {}
    spec = template.get("spec") or {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        amounts = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for key, q in amounts.items():
            v = parse_quantity(q)
            if key == "memory":
                v /= 2**30
            total[key] = total.get(key, 0.0) + v
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(GCSFUSE_ANNOTATION) == "true":
        for key, v in GCSFUSE_SIDECAR.items():
            total[key] = total.get(key, 0.0) + v
    return total


def _tolerated(taint: catalog.Taint, tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.effect):
            continue
        op = t.get("operator", "Equal")
        if op == "Exists" and t.get("key") in (None, "", taint.key):
            return True
        if op == "Equal" and t.get("key") == taint.key and t.get("value", "") == taint.value:
            return True
    return False


def _slice_of(spec: NodePoolSpec) -> catalog.TpuSlice | None:
    acc = spec.labels.get(catalog.TPU_ACCELERATOR_LABEL)
    topo = spec.labels.get(catalog.TPU_TOPOLOGY_LABEL)
    for gen in catalog.TPU_GENERATIONS.values():
        if gen.gke_accelerator == acc and topo in gen.topologies:
            return catalog.tpu_slice(gen.name, topo)
    return None


def unfit_reasons(group: dict[str, Any], spec: NodePoolSpec) -> list[str]:
    """Why the pods of ``group`` (a head or worker group spec) cannot run on nodes of ``spec``
    (empty when they can), as clauses :func:`schedule_problems` joins into its one Problem. The
    nodeSelector is assumed to match already."""
    template = group.get("template") or {}
    pod = template.get("spec") or {}
    why = []
    for taint in spec.taints:
        if not _tolerated(taint, pod.get("tolerations") or []):
            why.append(
                f"no toleration for taint {taint.key}={taint.value}:{taint.effect} of "
                f"{spec.name} ({spec.machine_type})"
            )
    requests = _pod_requests(template)
    for key, want in sorted(requests.items()):
        if key == "ephemeral-storage" or (key in ("cpu", "memory") and key not in spec.capacity):
            continue  # unknown machine shape: nothing to compare against
        have = spec.capacity.get(key, 0.0)  # an extended resource the node lacks counts as 0
        if want > have + 1e-9:
            unit = {"cpu": " cores", "memory": " GiB"}.get(key, "")
            why.append(
                f"requests {key} {want:g}{unit} > {have:g}{unit} allocatable on {spec.name} "
                f"({spec.machine_type})"
            )
    s = _slice_of(spec) if spec.kind == "tpu" else None
    if s is not None:
        hosts = group.get("numOfHosts", 1)
        if hosts != s.hosts:
            why.append(
                f"numOfHosts {hosts} != {s.hosts} hosts of a {s.generation.name} {s.topology} "
                f"slice ({spec.name})"
            )
        chips = requests.get(catalog.TPU_RESOURCE, 0.0)
        if chips != s.chips_per_host:
            why.append(
                f"{catalog.TPU_RESOURCE} request {chips:g} != {s.chips_per_host} chips per host "
                f"of a {s.generation.name} {s.topology} slice ({spec.name})"
            )
    return why


def schedule_problems(
    where: str, group: dict[str, Any], candidates: list[NodePoolSpec]
) -> list[Problem]:
    """One line if ``group`` fits no candidate node shape: why it fails on the first shape whose
    labels match its nodeSelector (declared pools come before NAP shapes), or that none matches."""
    pod = (group.get("template") or {}).get("spec") or {}
    selector = pod.get("nodeSelector") or {}
    matching = [c for c in candidates if selector.items() <= c.labels.items()]
    if not matching:
        sel = ", ".join(f"{k}: {v}" for k, v in sorted(selector.items())) or "none"
        return [
            Problem(
                "",
                f"{where}: nodeSelector {{{sel}}} matches no declared node pool "
                f"({', '.join(c.name for c in candidates if c.pool != 'nap')}) nor a shape NAP may "
                "create; the pods would stay Pending",
            )
        ]
    failures = []
    for c in matching:
        why = unfit_reasons(group, c)
        if not why:
            return []
        failures.append(why)
    sel = ", ".join(f"{k}: {v}" for k, v in sorted(selector.items()))
    more = f" (and {len(failures) - 1} more matching shape(s) fail)" if len(failures) > 1 else ""
    return [
        Problem(
            "",
            f"{where}: cannot schedule (nodeSelector {{{sel}}}): " + "; ".join(failures[0]) + more,
        )
    ]


def object_store_problems(where: str, group: dict[str, Any]) -> list[Problem]:
    """One line if the group's ``rayStartParams`` ``object-store-memory`` (bytes) exceeds
    :data:`components.config.raycrs.OBJECT_STORE_MAX_FRACTION` of its Ray container's memory (limit,
    else request): the object store is shared memory counted against the pod's memory
    (https://docs.ray.io/en/latest/ray-core/scheduling/memory-management.html), so a larger one
    leaves the worker processes too little and the pod is OOM-killed. Empty when not set or
    the memory is unknown."""
    raw = (group.get("rayStartParams") or {}).get("object-store-memory")
    containers = ((group.get("template") or {}).get("spec") or {}).get("containers") or []
    if raw is None or not containers:
        return []
    res = containers[0].get("resources") or {}
    memory = (res.get("limits") or {}).get("memory") or (res.get("requests") or {}).get("memory")
    try:
        store, limit = float(raw), parse_quantity(memory) if memory else None
    except ValueError:
        return [
            Problem(
                "", f"{where}: rayStartParams object-store-memory {raw!r} is not a number of bytes"
            )
        ]
    if limit is None or store <= OBJECT_STORE_MAX_FRACTION * limit:
        return []
    return [
        Problem(
            "",
            f"{where}: object_store_memory {store / 2**30:.2f} GiB is more than "
            f"{OBJECT_STORE_MAX_FRACTION:.0%} of the worker pod's memory {memory} "
            f"({OBJECT_STORE_MAX_FRACTION * limit / 2**30:.2f} GiB at most); lower it or raise the "
            "worker group's memory",
        )
    ]


# Ray placement-group strategies that are hard constraints: a group they cannot place stays
# pending (https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html#placement-strategy:
# STRICT_PACK "Packs Bundles into one node. The group is not allowed to span multiple nodes";
# STRICT_SPREAD "Packs Bundles across distinct nodes").
PLACEMENT_DOCS = "https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html"


def worker_bundle(scaling: dict[str, Any]) -> dict[str, float]:
    """The placement-group bundle of one Ray Train worker for ``ScalingConfig(**scaling)``:
    ``resources_per_worker`` without zero entries, else ``{"GPU": 1}`` with ``use_gpu``,
    ``{"TPU": 1}`` with ``use_tpu``, ``{"CPU": 1}`` otherwise, plus ``GPU: 1`` when ``use_gpu``
    and it names none (ray/air/config.py and ray/train/v2/api/config.py
    ``ScalingConfig._resources_per_worker_not_none``, Ray 2.60)."""
    given = scaling.get("resources_per_worker")
    if given is not None:
        bundle = {k: float(v) for k, v in given.items() if v != 0}
    elif scaling.get("use_gpu"):
        bundle = {"GPU": 1.0}
    elif scaling.get("use_tpu"):
        bundle = {"TPU": 1.0}
    else:
        bundle = {"CPU": 1.0}
    if scaling.get("use_gpu"):
        bundle.setdefault("GPU", 1.0)
    return bundle


def node_ray_resources(ctx: Context, pool: Any, group: Any) -> dict[str, float]:
    """Ray resources one worker pod of ``group`` on ``pool`` (a pool record of the stack's plan,
    in its Context ``ctx``) advertises (one pod per node, or per
    TPU host): ``CPU`` = the pod's CPU limit rounded up (KubeRay sets ``ray start --num-cpus``
    from it: ray-operator/controllers/ray/common/pod.go ``generateRayStartCommand``,
    ``Quantity.Value()`` rounds up), ``GPU`` = the node's GPUs, ``TPU`` = the host's chips."""
    from components.config.nodepools import GpuPool, TpuPool
    from components.nodepools.render import pool_specs
    from components.raycrs.pod import worker_pod_size

    cpu, _ = worker_pod_size(pool_specs(ctx, pool)[0], group)
    out = {"CPU": float(math.ceil(parse_quantity(cpu)))}
    if isinstance(pool, GpuPool):
        out["GPU"] = float(pool.gpu.count)
    if isinstance(pool, TpuPool):
        out["TPU"] = float(pool.slice.chips_per_host)
    return out


def placement_problems(p: Plan) -> list[Problem]:
    """A job of the plan ``p`` (its records :attr:`Plan.jobs`) whose ``placement_strategy`` is a
    hard constraint its pool can never meet, so Ray Train's placement group would wait forever
    (:data:`PLACEMENT_DOCS`):

    * ``STRICT_PACK`` (all workers on one node): the workers' summed bundles
      (:func:`worker_bundle` x ``num_workers``) exceed one worker pod's Ray resources
      (:func:`node_ray_resources`), e.g. 2 nodes' worth of GPUs or a multi-host TPU slice;
    * ``STRICT_SPREAD`` (each worker on its own node): more workers than the nodes the job may
      use (replicas x hosts per replica), e.g. one worker per GPU on multi-GPU nodes.

    The workers are those of the job's ``ScalingConfig``
    (:func:`components.raycrs.scaling.scaling_config_for_job_target`). Jobs whose target does
    not resolve (not in :attr:`Plan.jobs`) are left to the rules that report that (a strategy
    on ``tune_lm`` is refused by :func:`components.raycrs.rules.job_workloads_registered`)."""
    from components.raycrs.pod import ManifestError
    from components.raycrs.scaling import ScalingError, scaling_config_for_job_target

    problems: list[Problem] = []
    for target in p.jobs:
        job = target.job
        strategy = job.placement_strategy
        if strategy not in ("STRICT_PACK", "STRICT_SPREAD"):
            continue
        try:
            scaling = scaling_config_for_job_target(target)
            node = node_ray_resources(p.context, target.pool, target.group)
        except (ScalingError, ManifestError, IndexError):
            continue  # reported by the target and scheduling checks
        n = scaling["num_workers"]  # an elastic (min, max) is placed at its max
        workers = int(n[1]) if isinstance(n, tuple | list) else int(n)
        bundle = worker_bundle(scaling)
        pool = target.pool
        field = f"jobs[{job.name}].placement_strategy"
        where = f"{field} {strategy}"
        if strategy == "STRICT_SPREAD":
            nodes = target.replicas * target.group_target.hosts
            if workers > nodes:
                problems.append(
                    at(
                        field,
                        f"{where}: Ray Train places {workers} workers, each on a different node, but "
                        f"node pool {pool.name!r} gives the job {nodes} node(s); Ray never places "
                        f"this group ({PLACEMENT_DOCS}); use SPREAD (best effort) or PACK",
                        "placement",
                    )
                )
            continue
        over = [
            f"{k} {workers * v:g} > {node.get(k, 0.0):g}"
            for k, v in sorted(bundle.items())
            if workers * v > node.get(k, 0.0)
        ]
        if workers > 1 and over:
            problems.append(
                at(
                    field,
                    f"{where}: Ray Train's {workers} workers on one node need {', '.join(over)}, "
                    f"what one worker pod of pool {pool.name!r} ({pool.machine_type}) offers Ray; "
                    f"Ray never places this group ({PLACEMENT_DOCS}); use PACK (best effort), or a "
                    "pool whose one node holds all the workers",
                    "placement",
                )
            )
    return problems
