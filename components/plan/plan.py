"""The plan of a validated stack: every reference resolved once, into records. :func:`plan`
returns the (cached) :class:`Plan` of a :class:`~components.config.stack.StackConfig`; the
rules, renders and checks read its records instead of resolving or building them again. Pure:
no Pulumi, no I/O.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from components.plan.computeclasses import compute_class_manifest
from components.plan.context import Context, context
from components.plan.flavors import resource_flavor
from components.plan.naming import RunAs, WorkloadAccount, run_as, workload_accounts
from components.plan.nodepools import NodePoolSpec, pool_specs, system_pool_spec
from components.plan.resolve import (
    GroupTarget,
    JobTarget,
    Pool,
    ResolveError,
    resolve_group,
    resolve_identity,
    resolve_job,
    resolve_service,
)

if TYPE_CHECKING:
    from components.config.cluster import SystemPool
    from components.config.computeclass import ComputeClassConfig
    from components.config.raycrs import JobConfig, RayClusterConfig, WorkerGroupConfig
    from components.config.serve import ServiceConfig
    from components.config.stack import StackConfig
    from components.config.storage import WorkloadIdentityConfig

RecordKind = Literal["worker_group", "job", "service", "identity"]


@dataclass(frozen=True)
class Unresolved:
    """A reference the plan could not follow.

    Attributes:
        kind: what was left out: a long-lived ``worker_group``, a ``job``, a ``service``, or an
            ``identity`` reference (a ``service_account`` / secret reader naming no declared
            workload identity; the referring record itself stays in the plan).
        owner: the config entry holding the reference (a ``WorkerGroupConfig``, ``JobConfig``,
            ``ServiceConfig``, ``RayClusterConfig`` or ``SecretConfig``).
        error: the resolver's error (its ``field`` and one-line message).
    """

    kind: RecordKind
    owner: Any
    error: ResolveError


def _first_by_name(items: Any) -> Mapping[str, Any]:
    """``name -> item``, the first of each name (the resolver's lookup takes the first too)."""
    out: dict[str, Any] = {}
    for item in items:
        out.setdefault(item.name, item)
    return MappingProxyType(out)


@dataclass(frozen=True)
class Plan:
    """A stack resolved once: the stack's :class:`Context` (project, region, cluster,
    namespace, labels, bucket names), the declared node pools, ray clusters and workload
    identities by name, and one record per long-lived worker group
    (:class:`~components.plan.resolve.GroupTarget`), job
    (:class:`~components.plan.resolve.JobTarget`) and service (a ``GroupTarget``), and the
    records derived from them, each built on first use: the GKE node pools of the stack
    (:attr:`node_pool_specs`, :attr:`pool_specs`, by :mod:`components.plan.nodepools`), the Kueue
    ResourceFlavors of its pools (:attr:`resource_flavors`, by :mod:`components.plan.flavors`)
    and its ComputeClasses (:attr:`compute_class_manifests`, by
    :mod:`components.plan.computeclasses`). The cross-field rules (:mod:`components.stack.rules`,
    :mod:`components.raycrs.rules`), the renders (:mod:`components.raycrs`,
    :mod:`components.images.render`, the node pools, ComputeClasses and Kueue objects) and the
    rendered-stack checks read these records instead of resolving or building them again.

    A stack with a broken reference still has a plan: the record that cannot be resolved is left
    out and its :class:`~components.plan.resolve.ResolveError` is kept in :attr:`problems` (an
    :class:`Unresolved`), so each rule reports it once, with the resolver's message::

        jobs[train].node_pool 'x' is not a declared node pool; declared: cpu, tpu-v6e

    Asking the plan for a left-out record (:meth:`job`, :meth:`service`, :meth:`group`) raises
    that same error, as the resolver did.

    Attributes:
        partial_context: the :class:`Context`; None for a stack validated only in part (a
            required key such as ``region`` did not validate; its rules read no context). Read
            it as :attr:`context`.
        pools: declared node pools by name.
        clusters: declared long-lived RayClusters by name.
        identities: declared workload identities by name.
        compute_classes: node pool name -> the ``compute_classes`` entry naming it
            (``compute_classes[].node_pool``; the first when several do).
        groups: the long-lived clusters' worker groups resolved to their pools, config order
            (unresolvable ones left out).
        jobs: every job's target, config order (unresolvable ones left out).
        services: every service's one worker group, config order (unresolvable ones left out).
        problems: the references that could not be followed, in the order met: worker groups,
            then jobs, then services, then identity references.
        system_pool: ``cluster.system_pool`` (None for a stack validated only in part).
        declared_pools: ``node_pools`` in config order, every entry (``pools`` keeps the first
            of each name).
        declared_classes: ``compute_classes`` in config order, every entry.
        capacity_topology: ``capacity.topology`` (``required``, ``preferred``, ``off``): whether
            the Kueue flavors name a Topology; ``off`` for a stack validated only in part.
        accounts: workload identity name -> the Kubernetes service accounts its pods run as
            (:func:`components.plan.naming.run_as`), for every ``service_account`` a RayCluster,
            job or service names (declared or not).

    The derived records, computed on first use and kept (the plan is cached per config, so once
    per stack): :attr:`node_pool_specs` and :attr:`pool_specs`, the GKE node pools
    (:class:`~components.plan.nodepools.NodePoolSpec`) that the node pool component creates and
    the Kueue flavors, ComputeClasses, Ray placement and outputs read;
    :attr:`resource_flavors`, the Kueue ResourceFlavor of every pool
    (:mod:`components.plan.flavors`), which the Kueue render, the capacity checks and the
    admission preview read; :attr:`compute_class_manifests`, the stack's ComputeClasses
    (:mod:`components.plan.computeclasses`), which the Ray resources component and the
    ComputeClass check read. The manifests are plain dicts: the renders hand out copies, so
    nothing changes a record. A floor above keeps its own records here too (:meth:`record`).
    """

    partial_context: Context | None
    pools: Mapping[str, Pool]
    clusters: Mapping[str, RayClusterConfig]
    identities: Mapping[str, WorkloadIdentityConfig]
    compute_classes: Mapping[str, str]
    groups: tuple[GroupTarget, ...]
    jobs: tuple[JobTarget, ...]
    services: tuple[tuple[ServiceConfig, GroupTarget], ...]
    problems: tuple[Unresolved, ...] = field(default=())
    system_pool: SystemPool | None = None
    declared_pools: tuple[Pool, ...] = ()
    declared_classes: tuple[ComputeClassConfig, ...] = ()
    capacity_topology: str = "off"
    accounts: Mapping[str, RunAs] = field(default_factory=dict)

    @cached_property
    def node_pool_specs(self) -> tuple[NodePoolSpec, ...]:
        """Every GKE node pool of the stack: the system pool first, then each declared pool's
        (:func:`components.plan.nodepools.pool_specs`, with the node label and taint of the
        ComputeClass naming it: :attr:`compute_classes`), in config order.

        Raises:
            ValueError: the stack was validated only in part (no :attr:`context`).
        """
        ctx = self.context
        specs = [] if self.system_pool is None else [system_pool_spec(ctx, self.system_pool)]
        for pool in self.declared_pools:
            specs += pool_specs(ctx, pool, self.compute_classes.get(pool.name))
        return tuple(specs)

    @cached_property
    def pool_specs(self) -> Mapping[str, tuple[NodePoolSpec, ...]]:
        """Config pool name -> its GKE node pools (several for a multi-host TPU pool), from
        :attr:`node_pool_specs`; ``system`` is the system pool (a declared pool cannot take that
        name: the ``unique_names`` rule)."""
        out: dict[str, tuple[NodePoolSpec, ...]] = {}
        for s in self.node_pool_specs:
            if s.pool == "system" and s.kind != "system":
                continue
            out[s.pool] = (*out.get(s.pool, ()), s)
        return MappingProxyType(out)

    @cached_property
    def resource_flavors(self) -> Mapping[str, dict[str, Any]]:
        """Config pool name -> its Kueue ResourceFlavor (named after the pool), for every pool of
        :attr:`pool_specs` (``system`` included), in that order; the flavor of a pool a
        ComputeClass names selects the class (:attr:`compute_classes`), and it names a Topology
        unless :attr:`capacity_topology` is ``off``
        (:func:`components.plan.flavors.resource_flavor`). Read-only: copy before changing one
        (:func:`components.capacity.render.render_capacity` does).

        Raises:
            ValueError: the stack was validated only in part (no :attr:`context`).
        """
        return MappingProxyType(
            {
                pool: resource_flavor(
                    pool, specs, self.compute_classes.get(pool), self.capacity_topology
                )
                for pool, specs in self.pool_specs.items()
            }
        )

    @cached_property
    def compute_class_manifests(self) -> tuple[dict[str, Any], ...]:
        """The ComputeClass object of every :attr:`declared_classes` entry, in config order
        (:func:`components.plan.computeclasses.compute_class_manifest`), its first priority the
        GKE node pools of its pool (:attr:`pool_specs`). Read-only: copy before changing one
        (:func:`components.computeclass.render.render_compute_classes` does).

        Raises:
            ValueError: the stack was validated only in part (no :attr:`context`), or a class
                names a CPU pool (the stack rules refuse it first).
            KeyError: a class names an undeclared pool (the rules refuse it first).
        """
        ctx = self.context
        out = []
        for cc in self.declared_classes:
            pool = self.pools[cc.node_pool]
            gke_pools = [s.name for s in self.pool_specs.get(pool.name, ())]
            out.append(compute_class_manifest(ctx, cc, pool, gke_pools))
        return tuple(out)

    @cached_property
    def _records(self) -> dict[Hashable, Any]:
        return {}

    def record(self, key: Hashable, build: Callable[[Plan], Any]) -> Any:
        """The record ``key`` a floor above derives from this plan (``build(self)``; a service's
        :class:`components.raycrs.serving.ServiceSpec`), built on first use and kept with the
        plan, as the derived records above are; an error ``build`` raises is not kept."""
        records = self._records
        if key not in records:
            records[key] = build(self)
        return records[key]

    @property
    def context(self) -> Context:
        """The stack's :class:`Context`.

        Raises:
            ValueError: the stack was validated only in part (a required key did not validate).
        """
        if self.partial_context is None:
            raise ValueError("the stack validated only in part: it has no context to render with")
        return self.partial_context

    def errors(self, owner: Any, kind: RecordKind | None = None) -> list[ResolveError]:
        """The errors met resolving the references of config entry ``owner`` (by identity), of
        ``kind`` when given, in the order met."""
        return [
            u.error for u in self.problems if u.owner is owner and (kind is None or u.kind == kind)
        ]

    def _left_out(self, owner: Any, kind: RecordKind) -> ResolveError:
        errors = self.errors(owner, kind)
        if not errors:  # a config entry of another stack
            raise KeyError(f"{getattr(owner, 'name', owner)!r} is not in this plan")
        return errors[0]

    def group(self, rc: RayClusterConfig, group: WorkerGroupConfig) -> GroupTarget:
        """The record of worker group ``group`` of the long-lived RayCluster ``rc``.

        Raises:
            ResolveError: its ``node_pool`` is undeclared (the resolver's error).
            KeyError: the entry is not one of this plan's stack (compared by identity).
        """
        for t in self.groups:
            if t.group is group and t.cluster is rc:
                return t
        raise self._left_out(group, "worker_group")

    def job(self, job: JobConfig) -> JobTarget:
        """The target of ``job`` (:func:`components.plan.resolve.resolve_job`).

        Raises:
            ResolveError: its target cannot be resolved (the resolver's error).
            KeyError: the entry is not one of this plan's stack (compared by identity).
        """
        for t in self.jobs:
            if t.job is job:
                return t
        raise self._left_out(job, "job")

    def service(self, svc: ServiceConfig) -> GroupTarget:
        """The one worker group of service ``svc`` (:func:`components.plan.resolve.resolve_service`).

        Raises:
            ResolveError: its ``node_pool`` is undeclared (the resolver's error).
            KeyError: the entry is not one of this plan's stack (compared by identity).
        """
        for s, t in self.services:
            if s is svc:
                return t
        raise self._left_out(svc, "service")

    def runs_as(self, job: JobConfig) -> str | None:
        """The workload identity ``job``'s Ray processes run as: the RayCluster's
        ``service_account`` when the job is submitted to a long-lived cluster, else the job's own
        (its own RayCluster's pods run as it); None when its ``cluster`` is undeclared."""
        if not job.cluster:
            return job.service_account
        rc = self.clusters.get(job.cluster)
        return None if rc is None else rc.service_account


def _build(cfg: StackConfig) -> Plan:
    problems: list[Unresolved] = []
    groups: list[GroupTarget] = []
    for rc in cfg.ray_clusters:
        for g in rc.worker_groups:
            try:
                groups.append(resolve_group(cfg, rc, g))
            except ResolveError as e:
                problems.append(Unresolved("worker_group", g, e))
    jobs: list[JobTarget] = []
    for job in cfg.jobs:
        try:
            jobs.append(resolve_job(cfg, job))
        except ResolveError as e:
            problems.append(Unresolved("job", job, e))
    services: list[tuple[ServiceConfig, GroupTarget]] = []
    for svc in cfg.services:
        try:
            services.append((svc, resolve_service(cfg, svc)))
        except ResolveError as e:
            problems.append(Unresolved("service", svc, e))
    references: list[tuple[Any, str, str]] = [
        (rc, rc.service_account, f"ray_clusters[{rc.name}].service_account")
        for rc in cfg.ray_clusters
    ]
    references += [(j, j.service_account, f"jobs[{j.name}].service_account") for j in cfg.jobs]
    references += [(s, r, f"secrets[{s.name}].readers:") for s in cfg.secrets for r in s.readers]
    references += [
        (s, s.service_account, f"services[{s.name}].service_account") for s in cfg.services
    ]
    for owner, name, where in references:
        try:
            resolve_identity(cfg, name, where)
        except ResolveError as e:
            problems.append(Unresolved("identity", owner, e))
    runners = [*cfg.ray_clusters, *cfg.jobs, *cfg.services]
    accounts = {x.service_account: run_as(x.service_account) for x in runners}
    classes: dict[str, str] = {}
    for cc in cfg.compute_classes:
        classes.setdefault(cc.node_pool, cc.name)
    try:
        ctx: Context | None = context(cfg)
    except AttributeError:  # a partial validation leaves out a required key that did not validate
        ctx = None
    cluster = getattr(cfg, "cluster", None)
    return Plan(
        partial_context=ctx,
        pools=_first_by_name(cfg.node_pools),
        clusters=_first_by_name(cfg.ray_clusters),
        identities=_first_by_name(cfg.workload_identities),
        compute_classes=MappingProxyType(classes),
        groups=tuple(groups),
        jobs=tuple(jobs),
        services=tuple(services),
        problems=tuple(problems),
        system_pool=getattr(cluster, "system_pool", None),
        declared_pools=tuple(cfg.node_pools),
        declared_classes=tuple(cfg.compute_classes),
        capacity_topology=getattr(getattr(cfg, "capacity", None), "topology", "off"),
        accounts=MappingProxyType(accounts),
    )


def namespace_accounts(p: Plan) -> list[tuple[str, WorkloadAccount]]:
    """``(namespace, account)`` of every Kubernetes service account the stack of plan ``p``
    creates: every :func:`components.plan.naming.workload_accounts` entry of its identities in
    ``kuberay.namespace``, then, when there is a ``gpudirect`` namespace
    (:attr:`components.plan.context.Context.gpudirect_namespace`), the accounts of the
    identities its Ray objects run as (a RayCluster's, a job's, a service's
    ``service_account``), each bound to the same Google service account."""
    accounts = workload_accounts(p.identities.values())
    ctx = p.context
    out = [(ctx.namespace, a) for a in accounts]
    if ctx.gpudirect_namespace is None:
        return out
    moved = set(ctx.ray_namespaces)
    runners = [*p.clusters.values(), *(t.job for t in p.jobs), *(s for s, _ in p.services)]
    used = {x.service_account for x in runners if x.name in moved}
    out += [(ctx.gpudirect_namespace, a) for a in accounts if a.identity.name in used]
    return out


# id(cfg) -> (weak reference to cfg, its plan); an entry goes when its config is collected.
_PLANS: dict[int, tuple[weakref.ref[Any], Plan]] = {}


def plan(cfg: StackConfig) -> Plan:
    """The :class:`Plan` of ``cfg``, walking it once with the one resolver
    (:mod:`components.plan.resolve`), computed on the first call for this object and cached (by
    object identity, held only as long as ``cfg`` lives: a weak reference): a ``StackConfig`` is
    frozen, so every rule of one validation and every render of one ``synth`` / Pulumi program
    share one resolution.

    Never raises :class:`ResolveError`: broken references are in :attr:`Plan.problems`.
    """
    key = id(cfg)
    hit = _PLANS.get(key)
    if hit is not None and hit[0]() is cfg:
        return hit[1]
    result = _build(cfg)
    _PLANS[key] = (weakref.ref(cfg, lambda _ref, key=key: _PLANS.pop(key, None)), result)
    return result


@cache
def _rule_parameters(check: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(check).parameters)


def rule_inputs(check: Callable[..., Any], cfg: StackConfig) -> dict[str, Any]:
    """The arguments a stack rule is handed, by its parameters' names: ``p`` is the stack's
    :class:`Plan` (:func:`plan`), ``cfg`` the whole ``StackConfig`` (a rule over every block,
    such as ``unique_names``), any other name the ``StackConfig`` block of that name (``zones``,
    ``node_pools``, ``cluster``, ...). A rule is handed what it reads, not the stack.

    Raises:
        TypeError: a parameter is none of these (a programming error).
    """
    fields = type(cfg).model_fields
    out: dict[str, Any] = {}
    for name in _rule_parameters(check):
        if name == "p":
            out[name] = plan(cfg)
        elif name == "cfg":
            out[name] = cfg
        elif name in fields:
            out[name] = getattr(cfg, name, None)
        else:
            raise TypeError(
                f"rule {getattr(check, '__name__', check)}: parameter {name!r} is not p (the Plan), "
                f"cfg (the stack) or a stack block ({', '.join(fields)})"
            )
    return out
