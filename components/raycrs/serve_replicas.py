"""A vLLM service's replicas on its worker group: what one replica takes, how many the group
holds (:func:`replica_plan`, printed by ``raygke queue``), and the checks of the stack's
autoscaling arguments against them (:func:`autoscaling_problems`, rule
``serve-autoscaling-fit``). Pure; no Pulumi. What a replica is, and why the checks refuse:
docs/sources.md#raycrs-serve-replicas
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.serve import ServiceConfig
    from components.plan.plan import Plan

RULE = "serve-autoscaling-fit"


@dataclass(frozen=True)
class ReplicaPlan:
    """A service's replicas on its worker group.

    Attributes:
        service: the service's name.
        pool: the node pool.
        per_replica: what one replica takes, in words (``1 x NVIDIA L4``, ``2 CPUs``, ``a v6e
            4x4 slice (4 hosts x 4 chips)``).
        pods_per_replica: worker pods one replica spans (a multi-host slice's hosts, else 1).
        replicas_per_pod: replicas one worker pod holds (0 for a multi-host replica).
        min_pods: worker pods kept (``minReplicas``); max_pods: most worker pods (``maxReplicas``).
        fits: the most replicas the group holds.
        min_replicas, max_replicas: Serve's autoscaling bounds (``max_replicas``: the stack's,
            else the one the RayService's application gets,
            :attr:`components.raycrs.serving.ServiceSpec.default_max_replicas`: on a CPU pool one
            per worker pod, which may be fewer than :attr:`fits`).
        target_ongoing_requests, max_ongoing_requests: per replica.
        upscale_delay_s, downscale_delay_s: None = Ray's defaults (30 s, 600 s).
        routing: ``power_of_two`` | ``prefix_cache``.
    """

    service: str
    pool: str
    per_replica: str
    pods_per_replica: int
    replicas_per_pod: int
    min_pods: int
    max_pods: int
    fits: int
    min_replicas: int
    max_replicas: int
    target_ongoing_requests: float
    max_ongoing_requests: int
    upscale_delay_s: float | None
    downscale_delay_s: float | None
    routing: str

    def as_json(self) -> dict[str, Any]:
        """The plan as data (``raygke queue --format json``)."""
        from dataclasses import asdict

        return asdict(self)


def replica_plan(p: Plan, svc: ServiceConfig) -> ReplicaPlan | None:
    """``svc``'s :class:`ReplicaPlan`, from its record in plan ``p``
    (:func:`components.raycrs.serving.service_spec`); None for a workload other than
    ``serve_llm``, an undeclared pool or arguments that do not parse (their rules report
    those)."""
    from components.plan.resolve import ResolveError
    from components.raycrs.serving import VLLM_APP, service_spec

    if svc.workload != VLLM_APP:
        return None
    try:
        spec = service_spec(p, svc)
    except ResolveError:
        return None
    args, dev, target = spec.parsed, spec.devices, spec.target
    if args is None:
        return None
    groups, kept = target.max_replicas, target.group.min_replicas
    if dev.kind == "cpu":
        size = spec.pod_size
        per_pod = 1 if size is None or args.num_cpus <= 0 else int(size[0] // args.num_cpus)
        per_replica, pods, fits = f"{args.num_cpus:g} CPUs", 1, groups * per_pod
    elif dev.hosts > 1:
        s = target.pool.slice
        per_replica = (
            f"a {s.generation.name} {s.topology} slice ({dev.hosts} hosts x {dev.per_pod} chips)"
        )
        per_pod, pods, fits = 0, dev.hosts, groups
    else:
        tp = spec.tensor_parallel_size
        name = dev.what.split(" (")[0].split(" x ", 1)[-1]
        per_replica = f"{tp} x {name}"
        per_pod, pods, fits = dev.per_pod // tp if tp else 0, 1, groups * (dev.per_pod // tp)
    return ReplicaPlan(
        service=svc.name,
        pool=target.pool.name,
        per_replica=per_replica,
        pods_per_replica=pods,
        replicas_per_pod=per_pod,
        min_pods=kept * dev.hosts,
        max_pods=groups * dev.hosts,
        fits=fits,
        min_replicas=args.min_replicas,
        max_replicas=int(svc.args.get("max_replicas", spec.default_max_replicas)),
        target_ongoing_requests=args.target_ongoing_requests,
        max_ongoing_requests=args.max_ongoing_requests,
        upscale_delay_s=args.upscale_delay_s,
        downscale_delay_s=args.downscale_delay_s,
        routing=args.routing,
    )


def autoscaling_problems(p: Plan, svc: ServiceConfig) -> Iterable[Problem]:
    """What of ``svc``'s autoscaling arguments can never take effect (the module docstring's
    rules; its :func:`replica_plan` in plan ``p``), one Problem of the argument each, rule
    :data:`RULE`."""
    rp = replica_plan(p, svc)
    if rp is None or rp.fits < 1:  # a replica fits no pod: service_fit_problems says why
        return
    where = f"services[{svc.name}].args"
    holds = (
        f"the worker group holds {rp.fits} replica(s) of {rp.per_replica}: {rp.max_pods} pod(s) "
        f"of pool {rp.pool!r} (services[{svc.name}].max_workers, else the pool's max_nodes / "
        "max_slices)"
    )
    if "max_replicas" in svc.args and rp.max_replicas > rp.fits:
        yield at(
            f"{where}.max_replicas",
            f"{where}.max_replicas: {rp.max_replicas} (allowed: at most {rp.fits}; {holds}; a "
            "replica past that waits for a pod the autoscaler may not add)",
            RULE,
        )
    if rp.min_replicas > rp.fits:
        yield at(
            f"{where}.min_replicas",
            f"{where}.min_replicas: {rp.min_replicas} (allowed: at most {rp.fits}; {holds})",
            RULE,
        )
    if rp.target_ongoing_requests > rp.max_ongoing_requests:
        yield at(
            f"{where}.target_ongoing_requests",
            f"{where}.target_ongoing_requests: {rp.target_ongoing_requests:g} (allowed: at most "
            f"max_ongoing_requests {rp.max_ongoing_requests}: a replica never holds more, so "
            "Serve's autoscaler would never add one)",
            RULE,
        )


def service_autoscaling_problems(p: Plan, services: list[ServiceConfig]) -> Iterable[Problem]:
    """:func:`autoscaling_problems` of every service (the stack rule; the facts in
    :mod:`components.raycrs.serve_replicas`' docstring,
    https://docs.ray.io/en/latest/serve/advanced-guides/advanced-autoscaling.html)."""
    for svc in services:
        yield from autoscaling_problems(p, svc)


__all__ = [
    "RULE",
    "ReplicaPlan",
    "autoscaling_problems",
    "replica_plan",
    "service_autoscaling_problems",
]
