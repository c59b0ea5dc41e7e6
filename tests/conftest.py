"""Shared fixtures. ``ray_cluster``: one private in-process local Ray instance per session.

It never connects to an existing cluster (``address="local"``, RAY_ADDRESS ignored) and avoids
the default ports (6379 / 8265), since other Ray instances may run on this machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from raygke.local import cluster as local_cluster

# Ray Train's controller polls its workers every 2 s by default; the tests' fits (here, in the
# benchmarks' subprocesses and on `raygke local up` clusters) poll a quarter second, start no
# preemption watcher process and list a Parquet dataset with one footer-reading actor (not 32),
# as the local cluster's jobs do (raygke.local.cluster LOCAL_TRAIN_POLL_S,
# LOCAL_PREEMPTION_WATCHER and LOCAL_PARQUET_FOOTER_ACTORS say what each saves per fit).
os.environ.setdefault(local_cluster.LOCAL_TRAIN_POLL_ENV, local_cluster.LOCAL_TRAIN_POLL_S)
os.environ.setdefault(
    local_cluster.LOCAL_PREEMPTION_WATCHER_ENV, local_cluster.LOCAL_PREEMPTION_WATCHER
)
os.environ.setdefault(
    local_cluster.LOCAL_PARQUET_FOOTER_ACTORS_ENV, local_cluster.LOCAL_PARQUET_FOOTER_ACTORS
)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """A 2-CPU local Ray instance, shut down at the end of the session.

    ``ray.init(address="local")`` starts a new head whose GCS/raylet ports are picked at random
    (not 6379); its dashboard listens on 127.0.0.1 at a free port (not 8265), and Ray's
    processes find it through a private ``RAY_TMPDIR``
    (:func:`workloads.common.start_local_ray`, which says why: without that each
    ``trainer.fit()`` waits 12 s at its end).
    """
    ray = pytest.importorskip("ray")
    from workloads.common import start_local_ray

    os.environ.pop("RAY_ADDRESS", None)
    os.environ.setdefault("RAY_TRAIN_V2_ENABLED", "1")
    saved_tmp = os.environ.get("RAY_TMPDIR")
    if ray.is_initialized():
        ray.shutdown()
    ctx = start_local_ray(num_cpus=2, log_to_driver=False, configure_logging=False)
    ray_tmp = os.environ["RAY_TMPDIR"]
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ctx
    finally:
        ray.shutdown()
        if saved_tmp is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved_tmp
        shutil.rmtree(ray_tmp, ignore_errors=True)


# At the end of each module with tests on the session cluster (its module fixtures torn down),
# every CPU of the cluster must be free again within LEAK_GRACE_S, or that test fails naming the
# actors still alive: a Ray Train controller left behind once held the CPUs a later test needed
# and the run waited two hours (docs/development.md).
LEAK_GRACE_S = 30.0


@pytest.fixture(scope="module", autouse=True)
def _session_cluster_left_free(request: pytest.FixtureRequest) -> Iterator[None]:
    """At the end of a module with tests on the session cluster (autouse: torn down after the
    module's other fixtures, before the session's), :func:`_held_cpus` must be empty."""
    yield
    module = request.module
    items = request.session.items
    if any(i.module is module and "ray_cluster" in i.fixturenames for i in items):
        held = _held_cpus()
        if held:
            pytest.fail(held, pytrace=False)


def _held_cpus(grace_s: float = LEAK_GRACE_S) -> str:
    """``""`` when every CPU of the session cluster is free (waiting up to ``grace_s`` seconds
    for actors being stopped), else what holds them."""
    import ray

    if not ray.is_initialized():
        return ""
    total = ray.cluster_resources().get("CPU", 0.0)
    deadline = time.monotonic() + grace_s
    while (free := ray.available_resources().get("CPU", 0.0)) < total:
        if time.monotonic() > deadline:
            from ray.util.state import list_actors

            # this cluster's address: another worker's Ray instance may run beside it
            address = ray.get_runtime_context().gcs_address
            try:
                actors = list_actors(address=address, filters=[("state", "=", "ALIVE")])
                alive: object = sorted(a.class_name or "?" for a in actors)
            except Exception as e:  # the report must still come
                alive = f"unknown (the state API failed: {e})"
            return (
                f"the session Ray cluster still has {total - free:g} of {total:g} CPUs held "
                f"{grace_s:g} s after this module's tests; alive actors: {alive}"
            )
        time.sleep(0.5)
    return ""


# Under pytest-xdist (`make test` runs ``-n 2 --dist loadgroup``) the tests that start Ray run in
# three groups, each in one worker, one test after another: RAY_GROUP, the tests on the session
# ``ray_cluster`` (one session cluster per worker that runs them, started once); VLLM_GROUP, the
# tests that start their own Ray instance and vLLM engines behind Ray Serve (marked ``vllm``: a
# few GiB and minutes of CPU each, so never two at once); and RAY_OWN_GROUP, the other tests that
# start their own Ray instance (`raygke local up` on free ports and a private temp dir, a
# benchmark's subprocess, the TPU emulation). Two groups may run at the same time in the two
# workers: every instance has its own ports and temp dir (``workloads.common.start_local_ray``:
# ``address="local"``, a private RAY_TMPDIR), so none finds another's. (One group of all the
# tests that start their own Ray took ~15 of the suite's ~19 minutes by itself.) Every other
# test runs with the rest of its file (as ``--dist loadfile``), so the work a module caches
# (functools.cache, module fixtures) is done once. The workers take groups as they finish the
# previous one, longest first (:func:`_schedule_rank`: xdist's own order, by test count, is
# turned off in :func:`pytest_configure`), so neither worker is left with a long group at the
# end. https://pytest-xdist.readthedocs.io/en/stable/distribution.html (--dist loadgroup)
RAY_GROUP = "ray"
VLLM_GROUP = "ray-own-vllm"
RAY_OWN_GROUP = "ray-own"
RAY_GROUPS = (RAY_GROUP, VLLM_GROUP, RAY_OWN_GROUP)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # keep :func:`_schedule_rank`'s order


def xdist_group(item: pytest.Item) -> str:
    """The xdist group of ``item``: :data:`RAY_GROUP`, :data:`VLLM_GROUP`,
    :data:`RAY_OWN_GROUP`, or its file."""
    if "ray_cluster" in getattr(item, "fixturenames", ()):
        return RAY_GROUP
    if needs_ray(item):
        return VLLM_GROUP if item.get_closest_marker("vllm") is not None else RAY_OWN_GROUP
    return item.nodeid.split("::", 1)[0]


def _schedule_rank(group: str, slow_groups: set[str]) -> int:
    """The order in which the groups are handed out: the Ray groups (the longest, minutes each),
    then the files with slow tests, then the rest."""
    if group in RAY_GROUPS:
        return 0
    return 1 if group in slow_groups else 2


def _suffix_group(item: pytest.Item, group: str) -> None:
    """Give ``item`` the node id ``<nodeid>@<group>``, from which xdist's loadgroup scheduler
    reads its group (xdist/scheduler/loadgroup.py ``_split_scope``).

    pytest-xdist 3.8 appends the suffix to ``item._nodeid`` on each worker (xdist/remote.py
    ``WorkerInteractor.pytest_collection_modifyitems``), but pytest 9.2's ``Node.nodeid`` is
    ``str(item._id)`` (_pytest/nodes.py) and no longer reads ``_nodeid``: every test reached the
    scheduler as a scope of its own, and ``--dist loadgroup`` ran as ``--dist load`` (module
    fixtures and the session cluster set up in both workers, the Ray groups' tests on both at
    once). The suffix is set here where pytest 9.2 reads it."""
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(f"{item.nodeid}@{group}")


def needs_ray(item: pytest.Item) -> bool:
    """Whether ``item`` starts Ray: marked ``ray`` or using the ``ray_cluster`` fixture (also
    through another fixture)."""
    return item.get_closest_marker("ray") is not None or "ray_cluster" in getattr(
        item, "fixturenames", ()
    )


# The behaviour suites (tests/e2e/) and the property sweeps (tests/properties/) are slow as a
# whole, and so is every test that starts Ray (:func:`needs_ray`: a local Ray instance takes
# ~20 s to start on 2 cores): `make test-fast` (-m 'not slow') is the unit and component tests.
# Marked here, before pytest's -m selection runs (tryfirst), so that no module can forget it.
SLOW_FOLDERS = ("e2e", "properties")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        rel = item.path.relative_to(here) if item.path.is_relative_to(here) else None
        if (rel is not None and rel.parts[0] in SLOW_FOLDERS) or needs_ray(item):
            item.add_marker(pytest.mark.slow)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    groups = {item: xdist_group(item) for item in items}
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):  # an xdist worker under loadgroup
            _suffix_group(item, group)
    slow = {groups[i] for i in items if i.get_closest_marker("slow") is not None}
    items.sort(key=lambda i: _schedule_rank(groups[i], slow))  # stable: file order kept


# A small prepared corpus on the session's real local Ray cluster (the training suites).
@pytest.fixture(scope="session")
def tiny_dataset(ray_cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workloads.prepare import main

    root = tmp_path_factory.mktemp("corpus")
    for i in range(16):
        body = "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(40))
        (root / f"m{i}.py").write_text(body)
    ds = tmp_path_factory.mktemp("data") / "ds"
    main(
        {
            "data": str(root),
            "dataset": str(ds),
            "context_length": 32,
            "val_fraction": 0.2,
            "num_shards": 2,
        }
    )
    return ds
