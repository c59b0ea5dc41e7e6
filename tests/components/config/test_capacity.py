"""The capacity block's model (components/config/capacity.py): each rule valid and invalid."""

from __future__ import annotations

import copy

import pytest

from components.config.capacity import duration_seconds
from components.kernel.base import StackConfigError
from tests.components.capacity.common import CAPACITY, cfg


def test_valid_capacity_block_parses_quotas_and_queues():
    c = cfg()
    q = c.capacity.cluster_queue("team-a")
    assert q.cohort == "ml" and [f.pool for f in q.flavors] == ["system", "v6e", "v6e-dws"]
    assert q.flavors[1].nominal == {"cpu": "720", "memory": "2800Gi", "google.com/tpu": "16"}
    assert c.capacity.enabled and c.capacity.local_queue("team-b").cluster_queue == "team-b"


def test_unknown_kueue_version_is_refused_with_the_carried_ones():
    with pytest.raises(StackConfigError, match=r"0\.3\.0.*valid: 0\.19\.2"):
        cfg(capacity={**CAPACITY, "kueue": {"version": "0.3.0"}})


def test_quota_on_a_resource_no_ray_pod_requests_is_refused():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][0]["nominal"]["ephemeral-storage"] = "10Gi"
    with pytest.raises(StackConfigError, match=r"ephemeral-storage.*valid: cpu, memory"):
        cfg(capacity=cap)


def test_borrowing_limit_without_cohort_is_refused_as_kueue_does():
    cap = copy.deepcopy(CAPACITY)
    del cap["cluster_queues"][0]["cohort"]
    cap["cluster_queues"][0]["flavors"][1]["borrowing_limit"] = {"google.com/tpu": 16}
    with pytest.raises(StackConfigError, match="borrowing_limit needs a cohort"):
        cfg(capacity=cap)
    cap["cluster_queues"][0]["cohort"] = "ml"
    assert cfg(capacity=cap).capacity.cluster_queues[0].flavors[1].borrowing_limit


def test_duplicate_flavor_and_bad_strategy_are_refused():
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"].append(cap["cluster_queues"][0]["flavors"][0])
    with pytest.raises(StackConfigError, match="flavors: 'system' listed more than once"):
        cfg(capacity=cap)
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["queueing_strategy"] = "LIFO"
    with pytest.raises(StackConfigError, match=r"LIFO.*BestEffortFIFO, StrictFIFO"):
        cfg(capacity=cap)


def test_max_run_duration_needs_flex_start_and_at_most_seven_days():
    from tests.components.capacity.common import DWS_POOL, data

    d = data()
    d["node_pools"][-1] = {**DWS_POOL, "max_run_duration": "2d"}
    assert validate_ok(d).pool("v6e-dws").max_run_duration == "2d"
    d["node_pools"][-1] = {**DWS_POOL, "max_run_duration": "8d"}
    with pytest.raises(StackConfigError, match="at most 7 days"):
        validate_ok(d)
    d["node_pools"][-1] = {**DWS_POOL, "provisioning": "spot", "max_run_duration": "1h"}
    with pytest.raises(StackConfigError, match="needs provisioning: flex-start or queued"):
        validate_ok(d)


def validate_ok(d):
    from components.stack.loader import validate

    return validate(d)


def test_duration_units():
    assert duration_seconds("90m") == 5400 and duration_seconds("2d") == 172800
    with pytest.raises(ValueError, match="not a duration"):
        duration_seconds("1w")


def test_a_flavor_field_error_names_the_flavor_by_its_pool():
    """Flavors have no ``name``: the path names the entry by its ``pool``, as the rules do."""
    cap = copy.deepcopy(CAPACITY)
    cap["cluster_queues"][0]["flavors"][1]["nominal"]["memory"] = "28x00Gi"
    with pytest.raises(StackConfigError) as e:
        cfg(capacity=cap)
    (p,) = [p for p in e.value.items if "28x00Gi" in p.message]
    assert p.path == "capacity.cluster_queues[team-a].flavors[v6e].nominal", p.path
