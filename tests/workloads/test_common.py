"""Threads from the CPUs Ray gives (workloads/common.py cpu_threads, ray_cpus,
set_torch_threads; workloads/train_lm_jax.py limit_xla_cpu_threads): a worker runs as many
compute threads as its Ray allocation, not the host's core count."""

from __future__ import annotations

import sys

import pytest

from workloads import common


def test_explicit_then_allocation_then_host(monkeypatch) -> None:
    monkeypatch.setattr(common, "host_cpus", lambda: 8)
    monkeypatch.setattr(common, "ray_cpus", lambda: None)
    assert common.cpu_threads() == 8  # outside Ray: the CPUs it may run on
    assert common.cpu_threads(3) == 3  # an explicit torch_threads / tf_threads wins
    assert common.cpu_threads(cpus=2.0) == 2
    assert common.cpu_threads(cpus=1.5) == 1  # rounded down
    assert common.cpu_threads(cpus=0.5) == 1  # at least one
    assert common.cpu_threads(cpus=32) == 8  # never more than the host has
    monkeypatch.setattr(common, "ray_cpus", lambda: 1.0)  # inside a 1-CPU Ray worker
    assert common.cpu_threads() == 1
    assert common.cpu_threads(4) == 4


def test_host_cpus_follows_the_affinity_mask() -> None:
    import os

    assert common.host_cpus() == len(os.sched_getaffinity(0))


def test_set_torch_threads_sets_intra_op() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        assert common.set_torch_threads(1) == 1
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_xla_one_thread_flags_only_for_a_one_cpu_worker(monkeypatch) -> None:
    from workloads.train_lm_jax import XLA_ONE_THREAD, limit_xla_cpu_threads

    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    monkeypatch.delitem(sys.modules, "jax", raising=False)  # as in a fresh worker
    assert not limit_xla_cpu_threads(2, 2)
    assert not limit_xla_cpu_threads(1, 1)
    assert limit_xla_cpu_threads(1, 2)
    import os

    flags = os.environ["XLA_FLAGS"].split()
    assert flags == ["--xla_dump_to=/tmp/x", *XLA_ONE_THREAD]
    assert limit_xla_cpu_threads(1, 4)  # idempotent
    assert os.environ["XLA_FLAGS"].split() == flags


PLACE_TIMEOUT_S = 180


@pytest.mark.ray
@pytest.mark.slow
def test_a_ray_worker_takes_its_threads_from_its_num_cpus(ray_cluster) -> None:
    """In a Ray actor that asked for 1 CPU of the 2-CPU test cluster, ray_cpus() is 1 and
    cpu_threads() is 1, and torch runs 1 thread after set_torch_threads; with 2 CPUs, 2 (capped
    by the host); the driver has no allocation."""
    import ray

    @ray.remote
    class Probe:
        def threads(self) -> tuple[float | None, int, int]:
            import torch

            from workloads.common import cpu_threads, ray_cpus, set_torch_threads

            set_torch_threads(cpu_threads())
            return ray_cpus(), cpu_threads(), torch.get_num_threads()

    def call(num_cpus: int) -> tuple[float | None, int, int]:
        # An actor that cannot be placed (a CPU still held by an earlier test's actor on the
        # shared session cluster) waits forever: fail with the cluster's free resources instead
        # (seen once: a full `make test` hung here for 2 hours at 99 %).
        probe = Probe.options(num_cpus=num_cpus).remote()
        try:
            return ray.get(probe.threads.remote(), timeout=PLACE_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            pytest.fail(
                f"a {num_cpus}-CPU actor was not placed in {PLACE_TIMEOUT_S} s; free: "
                f"{ray.available_resources()} of {ray.cluster_resources()}"
            )
        finally:
            ray.kill(probe)

    assert call(1) == (1.0, 1, 1)
    cpus, threads, torch_threads = call(2)
    assert cpus == 2.0 and threads == torch_threads == min(2, common.host_cpus())
    assert common.ray_cpus() is None


def test_a_metrics_report_that_waits_for_the_controller_warns_once(monkeypatch, caplog) -> None:
    """``ray.train.report`` blocks while the previous report waits for the controller's poll;
    a wait over REPORT_WAIT_WARN_S logs one warning naming log_every, later ones none, and a
    report that returns at once none."""
    import logging

    import ray.train

    calls: list[dict] = []
    clock = iter([0.0, 0.1, 10.0, 12.5, 20.0, 23.0])
    monkeypatch.setattr(ray.train, "report", lambda metrics, **kw: calls.append(metrics))
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(common, "_report_wait_warned", False)
    with caplog.at_level(logging.WARNING, logger="workloads.common"):
        common._train_report({"step": 1}, None, None)  # 0.1 s: no warning
        assert not caplog.records
        common._train_report({"step": 2}, None, None)  # 2.5 s: warns
        common._train_report({"step": 3}, None, None)  # 3 s: already warned
    assert [c["step"] for c in calls] == [1, 2, 3]
    (record,) = caplog.records
    assert "waited 2.5 s" in record.getMessage() and "log_every" in record.getMessage()
    assert "step 2" in record.getMessage()
