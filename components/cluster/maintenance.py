"""Maintenance exclusions: upgrades that wait for the job.

GKE upgrades nodes automatically (node auto-upgrade is on in every pool this stack declares) and
does so only inside the cluster's maintenance window and outside its maintenance exclusions
(https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions,
"About GKE maintenance policies": a maintenance window is a repeating window in which automatic
maintenance is permitted, a maintenance exclusion a non-repeating window in which it is
forbidden; GKE makes changes when a window is open and no exclusion is active). A node upgrade
drains the node: a multi-day training run on it stops.

Facts used here, each with its source:

* **Daily window**: ``maintenancePolicy.dailyMaintenanceWindow.startTime`` opens a 4-hour block
  every day ("Non-emergency maintenance will occur in the 4 hour block starting at the specified
  time", gcloud ``container clusters update --maintenance-window``,
  https://cloud.google.com/sdk/gcloud/reference/container/clusters/update); GKE counts only
  contiguous windows of at least four hours (https://cloud.google.com/kubernetes-engine/docs/how-to/maintenance-windows-and-exclusions,
  "Considerations when configuring a maintenance window"). :data:`WINDOW_SECONDS`.
* **Scopes** (``MaintenanceExclusionOptions.Scope``, GKE API v1,
  https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#scope):
  ``NO_UPGRADES`` excludes every upgrade (control plane and nodes, patch and minor);
  ``NO_MINOR_UPGRADES`` excludes minor upgrades only (node patch upgrades still happen);
  ``NO_MINOR_OR_NODE_UPGRADES`` excludes minor upgrades and every node pool upgrade (only
  control-plane patches). So :data:`NODE_SCOPES` keep a job's nodes: the two that exclude node
  upgrades. cluster-toolkit's GKE blueprints hold training clusters with a
  ``NO_MINOR_OR_NODE_UPGRADES`` exclusion (``modules/file-system/gke-storage/README.md``,
  ``maintenance_exclusions: exclusion_scope: NO_MINOR_OR_NODE_UPGRADES``).
* **Limits**: a ``NO_UPGRADES`` exclusion lasts at most 30 days (GKE's maintenance windows and
  exclusions page, "Scope of upgrades": "No upgrades", up to 30 days); the minor scopes may end
  at the minor version's end of support (``exclusionOptions.endTimeBehavior:
  UNTIL_END_OF_SUPPORT``, pulumi-gcp 10.2.0
  ``ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs``); a cluster holds at most
  20 exclusions at a time (pulumi-gcp 10.2.0 ``ClusterMaintenancePolicyArgs.maintenance_exclusions``,
  after the same GKE page). :data:`MAX_EXCLUSIONS`, :data:`NO_UPGRADES_MAX_SECONDS`.
* GKE may still override the policy for critical security fixes, and Compute Engine's own host
  maintenance does not follow it (same page, "Automatic maintenance that doesn't respect
  maintenance policies"): an exclusion is not a guarantee, a job still checkpoints.

:func:`upgrade_free_seconds` is the precise "window GKE may upgrade in" of ``raygke check``'s
warning (:func:`maintenance_warnings`): the longest stretch of time in which no node upgrade may
start, i.e. the longest gap between two daily windows that are not covered by a node-excluding
exclusion. Without such an exclusion that is 24 h - 4 h = 20 h, so any run longer than 20 h meets
at least one window wherever it starts; an exclusion of scope :data:`NODE_SCOPES` covers the
windows inside it, and the stretch grows to reach from the end of the last open window before it
to the start of the first open window after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from components.config.cluster import MAINTENANCE_DOC, parse_time
from components.kernel.problems import Problem

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


def maintenance_warnings(cfg: Any) -> list[Problem]:
    """``raygke check``'s warnings for the stack ``cfg`` (a validated
    :class:`components.config.stack.StackConfig`): a job that may run longer than GKE leaves
    without a node upgrade (:func:`upgrade_free_seconds`), one :class:`Problem` (severity ``warning``, rule
    ``maintenance-exclusion``) per job.

    A job's longest run is the shortest of what is set of its ``active_deadline_seconds`` (KubeRay
    stops it then) and its pool's ``max_run_duration`` (GKE reclaims the flex-start / queued
    nodes then); a job with neither is not judged (its length is not known). The warning is at
    the field that sets the length.
    """
    from components.config.capacity import duration_seconds
    from components.plan.plan import plan

    stretch = upgrade_free_seconds(cfg.cluster)
    if stretch is None:
        return []
    out: list[Problem] = []
    for target in plan(cfg).jobs:
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
                f"GKE may upgrade nodes in the daily {cfg.cluster.maintenance_window.start_time} "
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
