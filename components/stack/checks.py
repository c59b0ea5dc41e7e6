"""Checks on the rendered stack (``raygke check``): what the API server, the scheduler and IAM
would otherwise only tell you after ``pulumi up``. Entry point :func:`check_stack` (its docstring
lists the checks); ``raygke check --no-render`` skips them all.
Sources: docs/sources.md#stack-checks
"""

from __future__ import annotations

import contextlib
from typing import Any

from components.cluster.render import stack_nap_limits
from components.computeclass.checks import compute_class_problems
from components.config.stack import StackConfig
from components.images.checks import dependency_problems
from components.kernel.crdschema import NOTE_RULE, problems_with_notes
from components.kernel.problems import Problem, at
from components.kuberay.namespace import namespace_manifests, namespace_objects, resource_quota
from components.nodepools.render import (
    node_pool_specs,
)
from components.plan.naming import workload_accounts
from components.plan.nodepools import nap_shapes
from components.plan.plan import plan
from components.plan.resolve import ResolveError
from components.raycrs.crd import (
    CrdsMissingError,
    crds_available,
    missing_crds_message,
    server_view,
)
from components.raycrs.crd import validate_manifests as _validate_crds
from components.raycrs.gates import gate_problems, installed_gates
from components.raycrs.operator import operator_problems
from components.raycrs.placement import (
    object_store_problems,
    parse_quantity,
    placement_problems,
    schedule_problems,
)
from components.raycrs.rayjob import job_args
from components.raycrs.render import render_manifests
from components.security.iam import bucket_bindings, iam_problems, project_bindings
from components.security.rules import security_problems
from components.stack.name_checks import name_problems

_CLUSTER_SPEC = {
    "RayCluster": "spec",
    "RayJob": "spec.rayClusterSpec",
    "RayService": "spec.rayClusterConfig",
}


def _groups(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(how lines name the group, the group spec, its stack field) for the head and each worker
    group of a RayCluster / RayJob / RayService (:func:`stack_field`)."""
    kind = manifest.get("kind")
    name = (manifest.get("metadata") or {}).get("name", "?")
    spec = manifest.get("spec") or {}
    key = {"RayJob": "rayClusterSpec", "RayService": "rayClusterConfig"}.get(str(kind))
    cluster = spec.get(key) if key else spec
    if not isinstance(cluster, dict):
        return []
    out = []
    if isinstance(cluster.get("headGroupSpec"), dict):
        field = stack_field(manifest, "head") or ""
        out.append((f"{kind} {name}: head group", cluster["headGroupSpec"], field))
    for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
        if isinstance(g, dict):
            label = g.get("groupName", f"[{i}]")
            field = stack_field(manifest, i) or ""
            out.append((f"{kind} {name}: worker group {label}", g, field))
    return out


def _requests(template: dict[str, Any]) -> dict[str, float]:
    """Summed container requests of a pod template (``cpu``, ``memory``, extended resources),
    limits standing in where a request is unset (Kubernetes defaults the request to the limit)."""
    total: dict[str, float] = {}
    for c in (template.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for name, value in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            with contextlib.suppress(ValueError, TypeError):
                total[name] = total.get(name, 0.0) + parse_quantity(value)
    return total


def _amount(resource: str, value: float) -> str:
    return f"{value / 2**30:.3g}Gi" if resource == "memory" else f"{value:g}"


def quota_problems(cfg: StackConfig, manifests: list[dict[str, Any]]) -> list[Problem]:
    """Every Ray group fits the namespace's ResourceQuota (:func:`components.kuberay.namespace.
    resource_quota`) on its own: one head, one worker pod, and a TPU worker group's whole slice
    (``numOfHosts`` pods, which only run together). A quota refuses a pod whose requests would
    exceed it (https://kubernetes.io/docs/concepts/policy/resource-quotas/), so a quota below one
    group leaves that Ray cluster never running. One line per group and resource."""
    nap_limits = stack_nap_limits(cfg.nap, cfg.cluster.system_pool, cfg.node_pools)
    hard = {
        k.removeprefix("requests."): parse_quantity(v)
        for k, v in resource_quota(cfg.kuberay, nap_limits)["spec"]["hard"].items()
        if k.startswith("requests.")
    }
    out: list[Problem] = []
    for m in manifests:
        for where, group, _ in _groups(m):
            template = group.get("template")
            if not isinstance(template, dict):
                continue
            hosts = int(group.get("numOfHosts") or 1)
            for name, value in sorted(_requests(template).items()):
                need = value * hosts
                if name in hard and need > hard[name]:
                    what = f"{hosts} hosts x {_amount(name, value)}" if hosts > 1 else ""
                    out.append(
                        at(
                            "kuberay.quota",
                            f"{where}: requests {name} {what or _amount(name, value)}, more than "
                            f"kuberay.quota allows the whole namespace ({_amount(name, hard[name])}); "
                            "raise kuberay.quota",
                            "namespace-quota",
                        )
                    )
    return out


def _server_views(manifests: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    """Each object as the API server stores it (:func:`components.raycrs.crd.server_view`), or
    as rendered when the CRDs are absent."""
    try:
        return [server_view(m, version=version) for m in manifests]
    except CrdsMissingError:
        return manifests


def check_manifests(cfg: StackConfig, manifests: list[dict[str, Any]]) -> list[Problem]:
    """Problems of rendered (or hand-edited) KubeRay objects: CRD schema (unknown fields included)
    and KubeRay operator rules of the stack's ``kuberay.chart_version``, and schedulability of
    every head/worker group on the stack's node pools. Each problem of an object is a
    :class:`~components.kernel.problems.Problem` of the stack field the object comes from
    (:func:`stack_field`), its line ending ``; edit <field> in the stack file``.

    When the CRD folder is absent the schema check contributes one line saying how to set
    ``RAYGKE_CRDS_DIR``.
    """
    problems: list[Problem] = []
    version = cfg.kuberay.chart_version
    with_crds = crds_available(version=version)
    if not with_crds:
        problems.append(
            at("kuberay.chart_version", missing_crds_message(version=version), "crd-schema")
        )
    # the operator's rules and its feature gates apply to what the cluster stores (CRD defaults)
    stored = _server_views(manifests, version)
    gates, source = installed_gates(cfg.kuberay, cfg.services)
    candidates = node_pool_specs(plan(cfg)) + nap_shapes(cfg.nap)
    # in today's order: every object's schema problems, then operator rules, then feature gates,
    # then scheduling and object-store memory per group
    if with_crds:
        try:
            for m in manifests:
                problems += [
                    _object_problem(m, p, "crd-schema")
                    for p in _validate_crds([m], version=version)
                ]
        except CrdsMissingError as e:
            problems.append(at("kuberay.chart_version", str(e), "crd-schema"))
    for m, view in zip(manifests, stored, strict=True):
        lines = operator_problems(view, version)
        problems += [_object_problem(m, line, "kuberay-operator") for line in lines]
    for m, view in zip(manifests, stored, strict=True):
        lines = gate_problems(view, gates, source)
        problems += [_object_problem(m, line, "kuberay-feature-gate") for line in lines]
    for m in manifests:
        for where, group, field in _groups(m):
            for rule, lines in (
                ("scheduling", schedule_problems(where, group, candidates)),
                ("object-store-memory", object_store_problems(where, group)),
            ):
                problems += [_edit(field, line, rule) for line in lines]
    return problems


def stack_field(manifest: dict[str, Any], group: str | int | None = None) -> str | None:
    """The stack-file field a rendered ``manifest`` (or one of its groups) comes from: a
    RayCluster ``x`` is ``ray_clusters[x]``, its ``head`` (``group="head"``) or
    ``worker_groups[g]`` (``group`` the index of worker group ``g`` in ``workerGroupSpecs``); a
    RayJob ``x`` is ``jobs[x]`` (its own cluster is built from the job's ``node_pool``), a
    RayService ``services[x]``; None for other kinds. Names follow
    :func:`components.raycrs.render.render_manifests` (the config name is the object name).
    """
    kind = manifest.get("kind")
    name = (manifest.get("metadata") or {}).get("name")
    if not isinstance(name, str):
        return None
    if kind == "RayJob":
        return f"jobs[{name}]"
    if kind == "RayService":
        return f"services[{name}]"
    if kind != "RayCluster":
        return None
    field = f"ray_clusters[{name}]"
    if group == "head":
        return f"{field}.head"
    groups = (manifest.get("spec") or {}).get("workerGroupSpecs") or []
    if isinstance(group, int) and 0 <= group < len(groups) and isinstance(groups[group], dict):
        named = groups[group].get("groupName")
        return f"{field}.worker_groups[{named}]" if isinstance(named, str) else field
    return field


def _edit(field: str | None, line: str, rule: str) -> Problem:
    """``line`` as a Problem of ``field``, with ``; edit <field> in the stack file`` appended."""
    if not field:
        return at("", line, rule)
    return at(field, f"{line}; edit {field} in the stack file", rule)


def _object_problem(manifest: dict[str, Any], found: Problem, rule: str) -> Problem:
    """A CRD / operator / gate problem of ``manifest`` as a Problem of its stack field: the
    group's when the object field it is about (``found.object_field``, a path into the object
    that the CRD schema check, the operator rules and the gate check give:
    :func:`~components.kernel.problems.in_object`) lies in a group of the embedded RayCluster
    spec; its words are never read. A note (a CEL rule of the CRD that was not evaluated,
    :data:`~components.kernel.crdschema.NOTE_RULE`) is about the CRD, not the stack: a warning of
    that field with no ``edit <field>`` advice."""
    kind = str(manifest.get("kind"))
    where = found.object_field
    group: str | int | None = None
    spec = _CLUSTER_SPEC.get(kind)
    if spec and where.startswith(f"{spec}.headGroupSpec"):
        group = "head"
    elif spec:
        cluster = manifest.get("spec") or {}
        if kind != "RayCluster":
            cluster = cluster.get(spec.rsplit(".", 1)[-1]) or {}
        for i in range(len(cluster.get("workerGroupSpecs") or [])):
            prefix = f"{spec}.workerGroupSpecs[{i}]"
            if where == prefix or where.startswith(f"{prefix}."):
                group = i
    field = stack_field(manifest, group)
    if found.rule == NOTE_RULE:
        return found.changed(path=field or "")
    return _edit(field, found, rule)


def workload_problems(cfg: StackConfig) -> list[Problem]:
    """A job whose workload does not support the accelerator kind of its node pool (resolved by
    the stack's plan, :meth:`components.plan.plan.Plan.job`), whose target or workload cannot be resolved, or whose
    arguments, bound with what its pool provides (:func:`components.raycrs.rayjob.job_args`:
    the pool's ``scaling`` among them), break a rule of the workload (e.g. ``tune_lm`` on a TPU
    slice with a trainer other than ``jax``)."""
    from contract.args.base import ArgError
    from contract.registry import get_workload

    problems = []
    p = plan(cfg)
    for job in cfg.jobs:
        try:
            target = p.job(job)
        except ResolveError as e:
            problems.append(at(e.field, str(e), "workload"))
            continue
        try:
            workload = get_workload(job.workload)
        except KeyError as e:
            where = f"jobs[{job.name}].workload"
            problems.append(at(where, f"{where}: {e.args[0] if e.args else e}", "workload"))
            continue
        kind = target.pool.kind
        refusal = workload.refusal(kind) if kind != "cpu" else None
        if refusal:
            line = f"jobs[{job.name}]: {refusal} (node pool {target.pool.name!r})"
            problems.append(at(f"jobs[{job.name}].node_pool", line, "workload-accelerator"))
            continue
        try:
            job_args(p.context, target)
        except ArgError as e:
            where = f"jobs[{job.name}].args"
            problems += [at(where, f"{where}: {p}", "workload-args") for p in e.problems]
    return problems


def monitoring_problems(cfg: StackConfig) -> list[Problem]:
    """The rendered Managed Prometheus PodMonitorings
    (:func:`components.monitoring.render.render_monitoring`) against the carried PodMonitoring
    CRD (:func:`components.raycrs.crd.validate_other`)."""
    from components.monitoring.render import render_monitoring
    from components.raycrs.crd import validate_other

    out: list[Problem] = []
    for m in render_monitoring(plan(cfg), cfg.cluster):
        out += problems_with_notes(validate_other(m), "monitoring", "podmonitoring-schema")
    return out


# The largest object the API server can store: etcd refuses a request over 1.5 MiB by default
# (``--max-request-bytes``, https://etcd.io/docs/v3.5/dev-guide/limit/), and Kubernetes objects
# are written to etcd whole; ConfigMaps and Secrets are limited to 1 MiB of data
# (https://kubernetes.io/docs/concepts/configuration/configmap/#motivation,
# https://kubernetes.io/docs/concepts/configuration/secret/#restriction-data-size).
OBJECT_BYTES_MAX = 1536 * 1024
DATA_OBJECT_BYTES_MAX = 1024 * 1024


def object_size_problems(objects: list[dict[str, Any]]) -> list[Problem]:
    """One line per rendered Kubernetes object whose JSON is larger than the API server can
    store (:data:`OBJECT_BYTES_MAX`, ConfigMaps and Secrets :data:`DATA_OBJECT_BYTES_MAX`),
    with its size: ``RayJob x: 3.2 MiB rendered; the API server stores at most 1.5 MiB per
    object``. A job's ``args`` and ``runtime_env`` are the stack keys that grow an object."""
    import json

    problems = []
    for obj in objects:
        size = len(json.dumps(obj, separators=(",", ":"), default=str).encode())
        kind = str(obj.get("kind", "?"))
        limit = DATA_OBJECT_BYTES_MAX if kind in ("ConfigMap", "Secret") else OBJECT_BYTES_MAX
        if size > limit:
            name = (obj.get("metadata") or {}).get("name", "?")
            problems.append(
                at(
                    stack_field(obj) or "",
                    f"{kind} {name}: {size / 2**20:.1f} MiB rendered; the API server stores at most "
                    f"{limit / 2**20:g} MiB per object (etcd's request limit): shorten what the "
                    "stack puts in it (a job's args, a runtime_env)",
                    "object-size",
                )
            )
    return problems


def capacity_problems(cfg: StackConfig, manifests: list[dict[str, Any]]) -> list[Problem]:
    """Kueue objects against their carried CRDs, Kueue's rules on the queued RayJobs and the
    admission preview (:func:`components.capacity.checks.render_problems`)."""
    from components.capacity.checks import render_problems

    return problems_with_notes(
        render_problems(plan(cfg), cfg.capacity, manifests), "capacity", "kueue"
    )


# What :func:`check_stack` checks, in words -> the function that checks it, for ``raygke check
# --no-render`` to say what it skipped (tests/components/checks/test_stack_checks.py keeps the
# functions in step with the ones check_stack and check_manifests call).
RENDER_CHECKS: dict[str, str] = {
    "workload accelerators and arguments": "workload_problems",
    "placement strategies": "placement_problems",
    "image dependencies": "dependency_problems",
    "names and labels": "name_problems",
    "object sizes": "object_size_problems",
    "CRD schemas": "_validate_crds",
    "KubeRay operator rules": "operator_problems",
    "KubeRay feature gates": "gate_problems",
    "scheduling": "schedule_problems",
    "object store memory": "object_store_problems",
    "PodMonitorings": "monitoring_problems",
    "ComputeClasses": "compute_class_problems",
    "namespace quota": "quota_problems",
    "IAM": "iam_problems",
    "security rules": "security_problems",
    "Kueue queues and admission": "capacity_problems",
}


def check_stack(cfg: StackConfig) -> list[Problem]:
    """Problems found in the rendered stack (empty when none), each a
    :class:`~components.kernel.problems.Problem` with the stack field it is about (``""`` when none:
    a render that fails) and the id of the check that found it, one line each:

    1. every RayCluster / RayJob / RayService validates against the CRD of the stack's KubeRay
       version (``kuberay.chart_version``) as the API server would on create - unknown (pruned)
       fields, defaults, schema, ``metadata``, list types and the CRD's CEL rules
       (:mod:`components.raycrs.crd` on the one checker :mod:`components.kernel.crdschema`; a CEL
       rule not evaluated is a ``warning`` Problem, ``crd-cel-not-evaluated``), and passes the
       rules the KubeRay operator of that version applies when it reconciles
       (:mod:`components.raycrs.operator`); every Managed Prometheus PodMonitoring
       (:mod:`components.monitoring.render`) validates against the carried PodMonitoring CRD
       (:func:`components.raycrs.crd.validate_other`), and every GKE ComputeClass
       (:mod:`components.computeclass.render`) against the schema carried in
       ``components/computeclass/crds`` (:func:`components.computeclass.checks.compute_class_problems`);
    2. every head and worker group can schedule on a declared node pool or on a node shape Node
       Auto Provisioning may create (NAP creates TPU and GPU nodes for the accelerator types named
       in ``resource_limits``): nodeSelector labels are a subset of the node's labels, the
       tolerations cover the node's taints, the pod's requests (plus the GCS FUSE sidecar when
       injected) fit the node's allocatable, and for TPU groups ``numOfHosts`` equals the slice's
       hosts and the ``google.com/tpu`` request equals its chips per host;
    3. every job's workload supports the accelerator kind of the pool it runs on, and a
       ``STRICT_PACK`` / ``STRICT_SPREAD`` placement strategy fits its pool
       (:func:`components.raycrs.placement.placement_problems`);
    4. IAM (:mod:`components.security.iam`): no bucket is public and no workload identity holds a
       project-wide storage role;
    5. every job's images (head and worker group, or its ``runtime_env_pip``) provide what its
       workload needs at the project's pinned versions (:mod:`components.images.checks`);
    6. every GCP and Kubernetes name the stack declares, derived names included, follows that
       system's rule, no two config entries produce the same name, and labels follow the rules of
       where they are applied (:mod:`components.stack.name_checks`);
    7. the secure-default rules ``ray-auth``, ``pod-security`` and ``network-policy``
       (:mod:`components.security.rules`) over the Ray objects, the Namespace and its
       NetworkPolicies / ResourceQuota / LimitRange (:mod:`components.kuberay.namespace`).

    When the CRD folder is absent, check 1 cannot run; rather than pass silently (a misspelled
    field is exactly what it exists to catch), it reports one problem line saying where it looked
    and how to set ``RAYGKE_CRDS_DIR``, and still runs the other checks."""
    from components.raycrs.archive import working_dir_uri, workloads_archive
    from contract.args.base import ArgError

    problems = workload_problems(cfg) + placement_problems(plan(cfg))
    problems += dependency_problems(plan(cfg), cfg.ray.images) + name_problems(cfg)
    try:
        _, sha = workloads_archive()
        manifests = render_manifests(cfg, working_dir_uri(plan(cfg).context, sha))
    except ResolveError as e:  # the same line workload_problems gave: do not say it twice
        said = str(e) in problems
        return problems if said else [*problems, at(e.field, str(e), "render")]
    except ArgError as e:  # the lines workload_problems gave, or the spec rules'
        said = [p for p in e.problems if not any(p in q for q in problems)]
        return [
            *problems,
            *(at("", f"rendering the KubeRay objects failed: {p}", "render") for p in said),
        ]
    except (ValueError, KeyError) as e:
        return [*problems, at("", f"rendering the KubeRay objects failed: {e}", "render")]
    p = plan(cfg)
    nap_limits = stack_nap_limits(cfg.nap, cfg.cluster.system_pool, cfg.node_pools)
    guards = [
        *namespace_manifests(p.context, cfg.kuberay),
        *namespace_objects(p, cfg.kuberay, cfg.network.master_ipv4_cidr, nap_limits),
    ]
    too_big = object_size_problems([*guards, *manifests])
    problems += too_big
    if too_big:  # schema and rule checks of a many-MiB object take long and add nothing
        return problems
    problems += check_manifests(cfg, manifests)
    problems += monitoring_problems(cfg)
    problems += problems_with_notes(
        compute_class_problems(plan(cfg)), "compute_classes", "computeclass-schema"
    )
    problems += quota_problems(cfg, manifests)
    problems += capacity_problems(cfg, manifests)
    accounts = workload_accounts(cfg.workload_identities)
    problems += iam_problems(
        cfg.project,
        accounts,
        bucket_bindings(cfg.project, accounts),
        project_bindings(cfg.project, cfg.cluster.name),
    )
    # GPU networking's objects too: the installers' exemption is narrow (security/rules.py).
    from components.gpunet.render import gpu_vpcs, gpunet_objects

    vpcs = gpu_vpcs(cfg.node_pools, cfg.zones, cfg.network)
    objects = [*guards, *manifests, *gpunet_objects(vpcs, cfg.node_pools, cfg.kuberay.namespace)]
    problems += locate_security_lines(objects, security_problems(objects))
    return problems


def locate_security_lines(objects: list[dict[str, Any]], lines: list[str]) -> list[Problem]:
    """The secure-default rules' ``lines`` over ``objects`` (:func:`security_problems`) as
    Problems of the stack field each object comes from (:func:`stack_field`: ``jobs[x]``,
    ``services[x]``, ``ray_clusters[x]``), found from the objects, not the words: a line is the
    first Ray object's whose rules, run over that object and the objects that are not Ray
    objects (the namespace, its NetworkPolicies, quota), give it; a line those other objects give
    alone, or that no single object gives (a rule over several), is ``kuberay.namespace``'s,
    where they are rendered (:func:`components.kuberay.namespace.namespace_objects`)."""
    owned = [(field, o) for o in objects if (field := stack_field(o))]
    context = [o for o in objects if not stack_field(o)]
    alone = set(security_problems(context)) if owned else set(lines)
    per_object = [(field, set(security_problems([*context, o]))) for field, o in owned]
    out = []
    for line in lines:
        field = "kuberay.namespace"
        if line not in alone:
            field = next((f for f, found in per_object if line in found), field)
        out.append(at(field, line, "security"))
    return out
