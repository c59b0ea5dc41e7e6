"""Maintenance exclusions: upgrades that wait for the job.

GKE upgrades nodes (auto-upgrade is on in every pool) only inside the cluster's daily
maintenance window (:data:`WINDOW_SECONDS`) and outside its exclusions; an upgrade drains the
node, and a multi-day run on it stops. An exclusion of :data:`NODE_SCOPES` keeps a job's nodes
(:data:`MAX_EXCLUSIONS`, :data:`NO_UPGRADES_MAX_SECONDS`). :func:`upgrade_free_seconds` is the
longest stretch in which no node upgrade may start (20 h with no exclusion: 24 h less the 4-hour
window), the figure of ``raygke check``'s warning (:func:`maintenance_warnings`).

Sources: docs/sources.md#cluster-maintenance
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from components.config.cluster import MAINTENANCE_DOC, parse_time
from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig
    from components.plan.plan import Plan

# The limits the model checks live with it (components.config.cluster): MAX_EXCLUSIONS,
# NO_UPGRADES_MAX_SECONDS, parse_time, MAINTENANCE_DOC.
WINDOW_SECONDS = 4 * 3600
DAY_SECONDS = 24 * 3600
NODE_SCOPES = frozenset({"NO_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"})
UNTIL_END_OF_SUPPORT = "UNTIL_END_OF_SUPPORT"
DOC = MAINTENANCE_DOC


def exclusion_inputs(exclusions: Sequence[Any]) -> list[dict[str, Any]]:
    """The cluster's ``maintenancePolicy.maintenanceExclusions``, one dict per exclusion
    (``cluster.maintenance_exclusions``, :class:`components.config.cluster.MaintenanceExclusion`), in the
    order given: ``{"exclusion_name", "start_time", "end_time" (None with end of support),
    "scope", "end_time_behavior" (``UNTIL_END_OF_SUPPORT`` or None)}`` - the pulumi-gcp 10.2.0
    ``ClusterMaintenancePolicyMaintenanceExclusionArgs`` fields (exactly one of ``end_time`` and
    ``end_time_behavior``)."""
    return [
        {
            "exclusion_name": e.name,
            "start_time": e.start_time,
            "end_time": e.end_time,
            "scope": e.scope,
            "end_time_behavior": UNTIL_END_OF_SUPPORT if e.until_end_of_support else None,
        }
        for e in exclusions
    ]


@dataclass(frozen=True)
class Stretch:
    """The longest time no node upgrade may start: ``seconds`` long, from ``start`` to ``end``
    (None: the daily gap between two windows, which repeats every day)."""

    seconds: float
    start: datetime | None = None
    end: datetime | None = None


def _window_end_before(t: datetime, start_hhmm: str) -> datetime:
    """The end of the last daily window that ends at or before ``t`` - or ``t`` itself when a
    window is open at ``t`` (the stretch cannot start before the window closes, but an exclusion
    starting inside a window already forbids the rest of it)."""
    hh, mm = (int(x) for x in start_hhmm.split(":"))
    day = t.replace(hour=hh, minute=mm, second=0, microsecond=0)
    for d in (0, -1, -2):
        w_start = day + timedelta(days=d)
        w_end = w_start + timedelta(seconds=WINDOW_SECONDS)
        if w_start <= t < w_end:
            return t
        if w_end <= t:
            return w_end
    raise AssertionError("a window ends within two days")  # pragma: no cover


def _window_start_after(t: datetime, start_hhmm: str) -> datetime:
    """The start of the first daily window at or after ``t`` - or ``t`` when a window is open at
    ``t`` (an exclusion ending inside a window lets maintenance start right then)."""
    hh, mm = (int(x) for x in start_hhmm.split(":"))
    day = t.replace(hour=hh, minute=mm, second=0, microsecond=0)
    for d in (-1, 0, 1):
        w_start = day + timedelta(days=d)
        w_end = w_start + timedelta(seconds=WINDOW_SECONDS)
        if w_start <= t < w_end:
            return t
        if w_start >= t:
            return w_start
    raise AssertionError("a window starts within a day")  # pragma: no cover


def _merged(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    out: list[tuple[datetime, datetime]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def upgrade_free_seconds(cluster: Any) -> Stretch | None:
    """The longest stretch in which GKE may start no node upgrade (see the module docstring) for
    ``cluster`` (the ``cluster`` block, :class:`components.config.cluster.ClusterConfig`).

    Returns None when a node-excluding exclusion (:data:`NODE_SCOPES`) lasts until the minor
    version's end of support: its end is GKE's to know, so no run of a stack is said to outlast
    it. Otherwise a :class:`Stretch`: the daily gap (``24 h - 4 h``), or, when longer, the
    stretch around the merged node-excluding exclusions, from the end of the last window before
    each to the start of the first window after it.
    """
    node = [e for e in cluster.maintenance_exclusions if e.scope in NODE_SCOPES]
    if any(e.until_end_of_support for e in node):
        return None
    best = Stretch(float(DAY_SECONDS - WINDOW_SECONDS))
    start_hhmm = cluster.maintenance_window.start_time
    spans = [(parse_time(e.start_time), parse_time(e.end_time)) for e in node if e.end_time]
    for s, e in _merged(spans):
        free_from = _window_end_before(s, start_hhmm)
        free_to = _window_start_after(e, start_hhmm)
        seconds = (free_to - free_from).total_seconds()
        if seconds > best.seconds:
            best = Stretch(seconds, free_from, free_to)
    return best


def _hours(seconds: float) -> str:
    h = seconds / 3600
    return f"{h:g} h" if h < 48 else f"{h / 24:g} days ({h:g} h)"


def maintenance_warnings(p: Plan, cluster: ClusterConfig) -> list[Problem]:
    """``raygke check``'s warnings for the jobs of plan ``p`` under the ``cluster`` block's
    maintenance policy: a job that may run longer than GKE leaves without a node upgrade
    (:func:`upgrade_free_seconds`), one :class:`Problem` (severity ``warning``, rule
    ``maintenance-exclusion``) per job.

    A job's longest run is the shortest of what is set of its ``active_deadline_seconds`` (KubeRay
    stops it then) and its pool's ``max_run_duration`` (GKE reclaims the flex-start / queued
    nodes then); a job with neither is not judged (its length is not known). The warning is at
    the field that sets the length.
    """
    from components.config.capacity import duration_seconds

    stretch = upgrade_free_seconds(cluster)
    if stretch is None:
        return []
    out: list[Problem] = []
    for target in p.jobs:
        job, pool = target.job, target.pool
        limits: list[tuple[float, str, str]] = []
        if job.active_deadline_seconds is not None:
            limits.append(
                (
                    float(job.active_deadline_seconds),
                    f"jobs[{job.name}].active_deadline_seconds",
                    f"active_deadline_seconds {job.active_deadline_seconds}",
                )
            )
        run = pool.max_run_duration
        if run:
            limits.append(
                (
                    float(duration_seconds(run)),
                    f"node_pools[{pool.name}].max_run_duration",
                    f"pool {pool.name} max_run_duration {run}",
                )
            )
        if not limits:
            continue
        seconds, path, what = min(limits)
        if seconds <= stretch.seconds:
            continue
        if stretch.start is None:
            where = (
                f"GKE may upgrade nodes in the daily {cluster.maintenance_window.start_time} "
                f"UTC window (4 h), so at most {_hours(stretch.seconds)} pass without one"
            )
        else:
            where = (
                f"the longest stretch without a node upgrade is {_hours(stretch.seconds)} "
                f"({stretch.start:%Y-%m-%dT%H:%MZ} to {stretch.end:%Y-%m-%dT%H:%MZ}, around "
                "cluster.maintenance_exclusions)"
            )
        out.append(
            Problem(
                path,
                f"job {job.name} on pool {pool.name} may run {_hours(seconds)} ({what}), but "
                f"{where}: a node upgrade would drain it mid-run; add a cluster."
                "maintenance_exclusions entry of scope NO_MINOR_OR_NODE_UPGRADES covering the run "
                f"({DOC})",
                "maintenance-exclusion",
                "warning",
            )
        )
    return out
