"""Defaults epochs (components/config/epochs.py) and deprecated spellings
(components/config/deprecations.py): an old stack keeps what it created, a new one gets today's
defaults, a renamed workload is read with a warning (issue 46, docs/upgrading.md)."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from components.config.epochs import NEW_DEFAULTS, NEW_REFUSALS, read_epoch
from components.config.storage import hns_of
from components.kernel.base import StackConfigError
from components.kernel.release import RELEASE
from components.stack.loader import validate
from tests.helpers import config

H100 = {
    "name": "h100",
    "gpu": {"type": "nvidia-h100-80gb", "count": 8},
    "max_nodes": 2,
    "zones": ["us-east5-a"],
}


def _old(**overrides: Any) -> dict[str, Any]:
    """The tests' stack as a file of before defaults epochs writes it (no ``defaults``), with an
    A3 High pool (GPUDirect-TCPX is its family's networking)."""
    data = config(**overrides)
    del data["defaults"]
    data["node_pools"] = [*data["node_pools"], H100]
    data["nap"]["resource_limits"].update({"nvidia-h100-80gb": 16, "memory": 16384})
    return data


def _pool(cfg: Any, name: str) -> Any:
    return next(p for p in cfg.node_pools if p.name == name)


def test_a_stack_without_defaults_keeps_the_defaults_it_was_created_with() -> None:
    cfg = validate(_old())
    assert cfg.epoch.date == "" and "no feature newer" in cfg.epoch.why
    assert _pool(cfg, "h100").gpu_networking == "off" and _pool(cfg, "h100").gpu_net is None
    assert hns_of("checkpoints", cfg.buckets.checkpoints) is False
    assert sorted(h.path for h in cfg.held_defaults) == [
        "buckets.checkpoints.hierarchical_namespace",
        "node_pools[h100].gpu_networking",
    ]
    note = next(h for h in cfg.held_defaults if "gpu_networking" in h.path).note()
    assert (
        "keeps off" in note and "gpu_networking: auto" in note and "replaces the node pool" in note
    )
    # an L4 pool has no GPU networking: auto and off are the same there, nothing is held
    assert not any("[l4]" in h.path for h in cfg.held_defaults)


def test_a_new_stack_gets_this_releases_defaults() -> None:
    data = _old()
    data["defaults"] = RELEASE
    cfg = validate(data)
    assert cfg.held_defaults == ()
    assert _pool(cfg, "h100").gpu_net.kind == "tcpx"
    assert hns_of("checkpoints", cfg.buckets.checkpoints) is True
    # a date between the two: the defaults of that day (both changes landed 2026-12-03)
    data["defaults"] = "2026-12-02"
    assert len(validate(data).held_defaults) == 2
    data["defaults"] = datetime.date(2026, 12, 3)  # YAML reads an unquoted date as a date
    assert validate(data).held_defaults == ()


def test_what_a_stack_sets_itself_is_never_held_back() -> None:
    data = _old(buckets={"checkpoints": {"hierarchical_namespace": True}})
    data["node_pools"][-1] = {**H100, "gpu_networking": "auto"}
    cfg = validate(data)
    assert cfg.held_defaults == ()
    assert _pool(cfg, "h100").gpu_net.kind == "tcpx"
    assert hns_of("checkpoints", cfg.buckets.checkpoints) is True


def test_a_stack_without_defaults_is_dated_by_the_newest_feature_it_uses() -> None:
    """A file that uses a feature of a later release was written for it: it gets the defaults
    it was deployed with (the shipped stacks of 2026-12-03 to 2026-12-05 named no epoch)."""
    data = _old()
    data["node_pools"][-1] = {**H100, "max_nodes": 1}
    data["cluster"]["maintenance_exclusions"] = [
        {"name": "run", "scope": "NO_UPGRADES", "start_time": "2026-12-01T00:00:00Z",
         "end_time": "2026-12-08T00:00:00Z"}
    ]  # fmt: skip
    cfg = validate(data)
    assert cfg.epoch.date == "2026-12-03" and "cluster.maintenance_exclusions" in cfg.epoch.why
    assert cfg.held_defaults == ()
    assert _pool(cfg, "h100").gpu_net.kind == "tcpx"
    # the shipped checkpoints block of that release: no versioning, for hierarchical namespace
    assert read_epoch({"buckets": {"checkpoints": {"soft_delete_days": 0}}}).date == "2026-12-03"
    assert read_epoch({"buckets": {"checkpoints": {"versioning": True}}}).date == ""
    assert read_epoch({"services": [{"workload": "serve_llm"}]}).date == "2026-12-04"
    assert read_epoch({"services": [{"workload": "serve_lm"}]}).date == ""
    assert read_epoch({"defaults": "2026-12-01", "services": [{"workload": "serve_llm"}]}) == (
        read_epoch({"defaults": "2026-12-01"})
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("2027-01-01", f"newer than this release's defaults ({RELEASE})"),
        ("2026-13-01", "is not a date"),
        ("last week", "is not a release date; write a date as YYYY-MM-DD"),
    ],
)
def test_defaults_must_be_a_release_date_up_to_this_release(value: str, says: str) -> None:
    with pytest.raises(StackConfigError) as e:
        validate(config(defaults=value))
    (line,) = e.value.problems
    assert line.path == "defaults" and says in line


def test_a_refusal_newer_than_the_stack_is_a_warning_that_says_so() -> None:
    """Rules added after a stack's epoch (NEW_REFUSALS) warn instead of refusing it."""
    assert NEW_REFUSALS["job_identity_can_write_outputs"] == "2026-11-30"
    data = config(
        workload_identities=[
            {"name": "ray-train", "buckets": {"datasets": "read", "checkpoints": "write"}}
        ],
        jobs=[{"name": "prep", "workload": "prepare", "node_pool": "cpu"}],
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert "runs as 'ray-train', which has read access" in e.value.problems[0]
    old = copy.deepcopy(data)
    del old["defaults"]
    cfg = validate(old)
    (warning,) = [n for n in cfg.notices if n.rule == "job_identity_can_write_outputs"]
    assert warning.severity == "warning"
    assert "refused for stacks written for defaults 2026-11-30 or later" in warning


def test_every_new_default_names_its_release_and_what_opting_in_does() -> None:
    for change in NEW_DEFAULTS:
        assert change.since <= RELEASE
        # what opting in does to a deployed stack: a replacement, a creation or an upgrade
        assert any(w in change.opt_in for w in ("replaces", "creates", "in place")), change.key
    assert all(since <= RELEASE for since in NEW_REFUSALS.values())


def test_serve_lm_is_read_as_serve_llm_with_a_warning_per_rewrite() -> None:
    """The retired workload and its arguments, mapped to the nearest meaning (contract.registry
    RENAMED); the stack itself is not changed."""
    service = {
        "name": "lm",
        "workload": "serve_lm",
        "checkpoint": "train",
        "node_pool": "l4",
        "args": {
            "torch_threads": 2,
            "max_batch_size": 16,
            "batch_wait_timeout_s": 0.01,
            "min_replicas": 1,
            "max_replicas": 2,
        },
    }
    data = config(
        jobs=[{"name": "train", "workload": "train_lm", "node_pool": "cpu"}],
        services=[service],
    )
    original = copy.deepcopy(data)
    cfg = validate(data)
    assert data == original
    (svc,) = cfg.services
    assert svc.workload == "serve_llm"
    assert svc.args == {"cpu_threads": 2, "min_replicas": 1, "max_replicas": 2}
    warnings = {n.path: n for n in cfg.notices if n.rule == "deprecated"}
    assert sorted(warnings) == [
        "services[lm].args.batch_wait_timeout_s",
        "services[lm].args.max_batch_size",
        "services[lm].args.torch_threads",
        "services[lm].workload",
    ]
    assert (
        "'serve_lm' is deprecated since 2026-12-04 and read as 'serve_llm'"
        in (warnings["services[lm].workload"])
    )
    assert "read as serve_llm's cpu_threads" in warnings["services[lm].args.torch_threads"]
    assert (
        "ignored (vLLM batches requests continuously)"
        in (warnings["services[lm].args.max_batch_size"])
    )
    assert all(n.severity == "warning" for n in warnings.values())


def test_each_new_default_reads_stack_blocks_named_by_its_parameters() -> None:
    """``NewDefault.reads`` is ``held``'s parameter names: stack blocks, the first the one its
    ``apply`` changes (hold_defaults hands them by these names)."""
    from components.config.stack import StackConfig

    assert [d.reads for d in NEW_DEFAULTS] == [
        ("buckets",),
        ("node_pools",),
        ("gcs_fault_tolerance", "services"),
        ("services",),
    ]
    assert all(set(d.reads) <= set(StackConfig.model_fields) for d in NEW_DEFAULTS)
