"""Maintenance exclusions: the model's limits, the rendered maintenance policy and the warning of
``raygke check`` on a job that outlasts the time GKE leaves without a node upgrade."""

from __future__ import annotations

import pytest

from components.cluster.maintenance import (
    exclusion_inputs,
    maintenance_warnings,
    upgrade_free_seconds,
)
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.stack.loader import validate
from tests.helpers import config, of_type, render

CLUSTER = "gcp:container/cluster:Cluster"
RUN = {
    "name": "run",
    "scope": "NO_MINOR_OR_NODE_UPGRADES",
    "start_time": "2026-12-01T00:00:00Z",
    "end_time": "2026-12-08T00:00:00Z",
}


def _cluster(**extra) -> dict:
    return {"name": "ray-test", "deletion_protection": False, **extra}


def _stack(exclusions=(), deadline=None, window="03:00"):
    job = {"name": "train", "workload": "train_lm", "node_pool": "l4"}
    if deadline is not None:
        job["active_deadline_seconds"] = deadline
    return validate(
        config(
            cluster=_cluster(
                maintenance_exclusions=list(exclusions),
                maintenance_window={"start_time": window},
            ),
            jobs=[job],
        )
    )


def _warnings(cfg):
    return maintenance_warnings(plan(cfg), cfg.cluster)


def test_the_exclusion_renders_on_the_cluster_with_scope_and_end():
    records, _ = render(
        config(
            cluster=_cluster(
                maintenance_exclusions=[
                    RUN,
                    {
                        "name": "hold",
                        "scope": "NO_MINOR_UPGRADES",
                        "start_time": "2026-12-01T00:00:00Z",
                        "until_end_of_support": True,
                    },
                ]
            )
        )
    )
    (c,) = of_type(records, CLUSTER)
    assert c["inputs"]["maintenancePolicy"] == {
        "dailyMaintenanceWindow": {"startTime": "03:00"},
        "maintenanceExclusions": [
            {
                "exclusionName": "run",
                "startTime": "2026-12-01T00:00:00Z",
                "endTime": "2026-12-08T00:00:00Z",
                "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
            },
            {
                "exclusionName": "hold",
                "startTime": "2026-12-01T00:00:00Z",
                "exclusionOptions": {
                    "scope": "NO_MINOR_UPGRADES",
                    "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
                },
            },
        ],
    }


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (
            {**RUN, "scope": "NO_UPGRADES", "end_time": "2026-12-31T00:00:01Z"},
            "NO_UPGRADES exclusion lasts at most 30 days",
        ),
        ({**RUN, "end_time": "2026-11-30T00:00:00Z"}, "is not after start_time"),
        ({**RUN, "end_time": None}, "exactly one of end_time and until_end_of_support"),
        ({**RUN, "until_end_of_support": True}, "exactly one of end_time"),
        (
            {**RUN, "scope": "NO_UPGRADES", "end_time": None, "until_end_of_support": True},
            "NO_MINOR_OR_NODE_UPGRADES scopes only",
        ),
        ({**RUN, "start_time": "2026-12-01 00:00"}, "must be in UTC"),
        ({**RUN, "start_time": "2026-12-01T00:00:00+02:00"}, "must be in UTC"),
        ({**RUN, "start_time": "yesterday"}, "not an RFC 3339 time"),
        ({**RUN, "scope": "NO_NODE_UPGRADES"}, "NO_MINOR_OR_NODE_UPGRADES"),
    ],
)
def test_an_exclusion_gke_would_refuse_is_one_line_at_its_field(entry, words):
    with pytest.raises(StackConfigError) as e:
        validate(config(cluster=_cluster(maintenance_exclusions=[entry])))
    (line,) = e.value.problems
    assert line.path.startswith("cluster.maintenance_exclusions")
    assert words in line


def test_no_upgrades_may_last_thirty_days_and_a_cluster_holds_twenty():
    thirty = {**RUN, "scope": "NO_UPGRADES", "end_time": "2026-12-31T00:00:00Z"}
    validate(config(cluster=_cluster(maintenance_exclusions=[thirty])))
    many = [{**RUN, "name": f"x{i}"} for i in range(21)]
    with pytest.raises(StackConfigError, match="at most 20"):
        validate(config(cluster=_cluster(maintenance_exclusions=many)))
    with pytest.raises(StackConfigError, match="listed more than once"):
        validate(config(cluster=_cluster(maintenance_exclusions=[RUN, RUN])))


def test_exclusion_inputs_give_exactly_one_end():
    cfg = _stack(
        [
            RUN,
            {
                "name": "eos",
                "start_time": "2026-12-01T00:00:00Z",
                "until_end_of_support": True,
            },
        ]
    )
    got = exclusion_inputs(cfg.cluster.maintenance_exclusions)
    assert [(e["end_time"], e["end_time_behavior"]) for e in got] == [
        ("2026-12-08T00:00:00Z", None),
        (None, "UNTIL_END_OF_SUPPORT"),
    ]


def test_without_an_exclusion_twenty_hours_pass_between_daily_windows():
    s = upgrade_free_seconds(_stack().cluster)
    assert s is not None and s.seconds == 20 * 3600 and s.start is None


def test_a_node_exclusion_stretches_from_the_window_before_to_the_window_after():
    # window 03:00-07:00; exclusion Dec 1 00:00 - Dec 8 00:00: free from Nov 30 07:00 (end of
    # the last window before) to Dec 8 03:00 (the first window after).
    s = upgrade_free_seconds(_stack([RUN]).cluster)
    assert s is not None
    assert s.seconds == (7 * 24 + 3 - (-17)) * 3600  # Nov 30 07:00 -> Dec 8 03:00
    assert f"{s.start:%Y-%m-%dT%H:%M}" == "2026-11-30T07:00"
    assert f"{s.end:%Y-%m-%dT%H:%M}" == "2026-12-08T03:00"


def test_an_exclusion_starting_inside_a_window_starts_the_stretch_there():
    inside = {**RUN, "start_time": "2026-12-01T05:00:00Z", "end_time": "2026-12-03T05:00:00Z"}
    s = upgrade_free_seconds(_stack([inside]).cluster)
    # starts 05:00 Dec 1 (the window is cut), ends inside the Dec 3 window: maintenance at 05:00
    assert s is not None and s.seconds == 48 * 3600


def test_minor_only_exclusions_do_not_keep_nodes_and_end_of_support_has_no_end():
    minor = {**RUN, "scope": "NO_MINOR_UPGRADES"}
    s = upgrade_free_seconds(_stack([minor]).cluster)
    assert s is not None and s.seconds == 20 * 3600
    eos = {**RUN, "end_time": None, "until_end_of_support": True}
    assert upgrade_free_seconds(_stack([eos]).cluster) is None


def test_check_warns_a_job_longer_than_the_upgrade_free_stretch_at_its_deadline():
    (w,) = _warnings(_stack(deadline=86400))
    assert w.severity == "warning" and w.rule == "maintenance-exclusion"
    assert w.path == "jobs[train].active_deadline_seconds"
    assert "may run 24 h (active_deadline_seconds 86400)" in w
    assert "daily 03:00 UTC window" in w and "at most 20 h" in w
    assert "NO_MINOR_OR_NODE_UPGRADES" in w
    # 20 h fits between two windows; a week-long exclusion covers a 3-day run
    assert _warnings(_stack(deadline=20 * 3600)) == []
    assert _warnings(_stack([RUN], deadline=3 * 86400)) == []
    # a job without a deadline on an on-demand pool has no known length
    assert _warnings(_stack()) == []


def test_check_warns_when_the_job_outlasts_even_the_exclusion():
    (w,) = _warnings(_stack([RUN], deadline=10 * 86400))
    assert "may run 10 days (240 h)" in w
    assert "2026-11-30T07:00Z to 2026-12-08T03:00Z" in w


def test_a_queued_pools_max_run_duration_bounds_the_job():
    data = config(
        node_pools=[
            {
                "name": "h100",
                "gpu": {"type": "nvidia-h100-80gb", "count": 8},
                "machine_type": "a3-highgpu-8g",
                "max_nodes": 2,
                "zones": ["us-east5-a"],
                "provisioning": "queued",
                "max_run_duration": "2d",
            }
        ],
        nap={"enabled": False},
        capacity={
            "cluster_queues": [
                {
                    "name": "gpu",
                    "flavors": [
                        {"pool": "h100", "nominal": {"cpu": 416, "nvidia.com/gpu": 16}},
                        {"pool": "system", "nominal": {"cpu": 16, "memory": "64Gi"}},
                    ],
                }
            ],
            "local_queues": [{"name": "train", "cluster_queue": "gpu"}],
        },
        jobs=[{"name": "big", "workload": "train_lm", "node_pool": "h100", "queue": "train"}],
    )
    (w,) = _warnings(validate(data))
    assert w.path == "node_pools[h100].max_run_duration"
    assert "pool h100 max_run_duration 2d" in w
