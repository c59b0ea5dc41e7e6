"""``raygke queue``: the offline admission preview of a stack's queued RayJobs.

Per job (:func:`components.capacity.preview.preview`): each Kueue pod set (head, worker groups,
submitter) with its pods and requests, the flavor it would get and whether it fits nominal quota
or must borrow; the verdict ``admitted`` (fits at once), ``waits`` (needs quota borrowed from the
cohort) or ``never`` (the resource, what it needs, what the queue can ever have). Exit 1 when some
job can never be admitted (``raygke check`` refuses it too). ``--set`` tries a change (a quota, a
job's size) without editing the file; ``--format json`` gives the verdicts as data.

Services (RayServices) are not Kueue workloads: the Ray autoscaler scales each within its worker
group. For each the preview shows its replicas (:func:`components.raycrs.serve_replicas.replica_plan`):
what one replica takes, the pods of its worker group, the replicas they hold against Serve's
``min_replicas`` .. ``max_replicas``, the autoscaling target and delays and the routing; a
``max_replicas`` the group cannot hold is also refused by ``raygke check``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from raygke.console import EXIT_FAILED, console, err, print_table
from raygke.console import table as make_table
from raygke.stacks import SetOption, choose_or_exit, format_or_exit, load_for_check

if TYPE_CHECKING:
    from components.plan.plan import Plan

FORMATS = ("text", "json")


def _requests(per_pod: dict[str, float]) -> str:
    from components.capacity.preview import fmt_amount

    return ", ".join(f"{r} {fmt_amount(r, v)}" for r, v in sorted(per_pod.items()) if v)


def queue(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    sets: SetOption = None,
    fmt: str = typer.Option(
        "text",
        "--format",
        "-f",
        help="text | json (the verdicts as data: per job its state and pod sets)",
    ),
) -> None:
    """Preview Kueue admission offline: per queued job its pod sets, flavors and quota verdict."""
    from components.capacity.preview import preview
    from components.plan.plan import plan
    from components.raycrs.archive import working_dir_uri, workloads_archive
    from components.raycrs.render import render_manifests

    format_or_exit(fmt, FORMATS)
    choice = choose_or_exit(stack, config, fmt=fmt)
    assert choice.path is not None
    cfg = load_for_check(choice.path, sets, fmt).cfg
    unqueued = [j.name for j in cfg.jobs if not j.queue]
    services = service_plans(plan(cfg))
    if not cfg.capacity.enabled:
        if fmt == "json":
            doc = {"kueue": False, "jobs": [], "not_queued": unqueued}
            doc["services"] = [p.as_json() for p in services]
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
            return
        console.print("no capacity.cluster_queues: Kueue is not installed, no job is queued")
        print_services(services)
        return
    _, sha = workloads_archive()
    stack_plan = plan(cfg)
    manifests = render_manifests(cfg, working_dir_uri(stack_plan.context, sha))
    verdicts = preview(stack_plan, cfg.capacity, manifests)
    never = [v for v in verdicts if v.state == "never"]
    if fmt == "json":
        doc = {"kueue": True, "jobs": [_verdict_json(v) for v in verdicts]}
        doc["services"] = [p.as_json() for p in services]
        sys.stdout.write(json.dumps({**doc, "not_queued": unqueued}, indent=2) + "\n")
        if never:
            raise typer.Exit(EXIT_FAILED)
        return
    table = make_table(
        f"Kueue admission preview of {cfg.cluster.name} (each job alone)",
        ("job", "queue", "pod set", "pods", "per pod", "flavor", "topology", "verdict"),
    )
    for v in verdicts:
        for i, a in enumerate(v.assignments):
            flavor = a.flavor or "-"
            if a.provisioning:
                flavor += " (DWS)"
            how = {"nominal": "nominal", "borrow": "borrows"}.get(a.mode, "no fit")
            table.add_row(
                v.job if i == 0 else "",
                f"{v.queue} -> {v.cluster_queue}" if i == 0 else "",
                a.pod_set.name,
                str(a.pod_set.count),
                _requests(a.pod_set.per_pod),
                f"{flavor}, {how}",
                a.topology,
                v.state if i == 0 else "",
            )
    print_table(table)
    for v in verdicts:
        line = {
            "admitted": "admitted at once",
            "waits": "waits for quota",
            "never": "can never be admitted",
        }[v.state]
        dws = any(a.provisioning for a in v.assignments)
        extra = "; then DWS provisions its nodes (AdmissionCheck dws-provisioning)" if dws else ""
        reason = f": {v.reason}" if v.reason and v.state != "admitted" else ""
        console.print(f"{escape(v.job)}: {line}{escape(reason)}{extra}", soft_wrap=True)
        if v.note:
            console.print(f"  {escape(v.note)}", soft_wrap=True)
    if unqueued:
        console.print(f"not queued (no queue:): {', '.join(unqueued)}")
    print_services(services)
    if never:
        from components.kernel.base import plural

        err.print(f"{plural(len(never), 'job')} can never be admitted", markup=False)
        raise typer.Exit(EXIT_FAILED)


def service_plans(p: Plan) -> list[Any]:
    """Every vLLM service's :class:`components.raycrs.serve_replicas.ReplicaPlan` from plan
    ``p`` (its resolved services), by name."""
    from components.raycrs.serve_replicas import replica_plan

    found = (replica_plan(p, s) for s, _ in sorted(p.services, key=lambda st: st[0].name))
    return [r for r in found if r is not None]


def _delay(value: float | None, default: float) -> str:
    return f"{value:g} s" if value is not None else f"{default:g} s (Ray's)"


def print_services(plans: list[Any]) -> None:
    """The services' replicas, one row each (nothing without services)."""
    if not plans:
        return
    table = make_table(
        "Services: replicas on their worker groups (not Kueue workloads: the Ray autoscaler "
        "scales them)",
        ("service", "pool", "per replica", "pods", "replicas", "autoscaling", "routing"),
    )
    for p in plans:
        share = (
            f"{p.pods_per_replica} pods each"
            if p.pods_per_replica > 1
            else f"{p.replicas_per_pod} per pod"
        )
        table.add_row(
            p.service,
            p.pool,
            f"{p.per_replica} ({share})",
            f"{p.min_pods}..{p.max_pods}",
            f"{p.min_replicas}..{p.max_replicas} (group holds {p.fits})",
            f"target {p.target_ongoing_requests:g} of max {p.max_ongoing_requests} ongoing; up "
            f"after {_delay(p.upscale_delay_s, 30)}, down after {_delay(p.downscale_delay_s, 600)}",
            p.routing,
        )
    print_table(table)
    for p in plans:
        if p.max_replicas > p.fits:
            console.print(
                f"{escape(p.service)}: max_replicas {p.max_replicas} > the {p.fits} its worker "
                "group holds (raygke check refuses it)",
                soft_wrap=True,
            )


def _verdict_json(v: Any) -> dict[str, Any]:
    """One job's verdict as data: ``{"job", "kind", "queue", "cluster_queue", "state", "reason",
    "note", "pod_sets": [{"name", "pods", "per_pod", "flavor", "mode", "provisioning",
    "topology"}]}`` (``per_pod``: resource -> amount, cpu in cores and memory in bytes;
    ``topology``: the TAS placement, as the table's column, or null)."""
    return {
        "job": v.job,
        "kind": v.kind,
        "queue": v.queue,
        "cluster_queue": v.cluster_queue,
        "state": v.state,
        "reason": v.reason,
        "note": v.note,
        "pod_sets": [
            {
                "name": a.pod_set.name,
                "pods": a.pod_set.count,
                "per_pod": {r: n for r, n in sorted(a.pod_set.per_pod.items()) if n},
                "flavor": a.flavor,
                "mode": a.mode,
                "provisioning": a.provisioning,
                "topology": None if a.topology == "-" else a.topology,  # "-": no TAS
            }
            for a in v.assignments
        ],
    }


def local_queue_note(jobs: list[Any], workloads: list[str]) -> str | None:
    """The one line ``raygke local run`` prints when a job of ``jobs`` (the stack's ``jobs``
    block) running one of ``workloads`` names a Kueue queue: locally there is no Kueue, jobs
    start at once (None: no such job)."""
    queued = sorted(
        f"{j.name} (queue {j.queue})" for j in jobs if j.queue and j.workload in workloads
    )
    if not queued:
        return None
    return (
        f"note: queues do not apply locally: {', '.join(queued)} would wait in Kueue on GKE; "
        "here every job starts at once on the local cluster"
    )
