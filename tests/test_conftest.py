"""The suite's own machinery in tests/conftest.py: the check that the session Ray cluster is
left free."""

from __future__ import annotations

import pytest

from tests.conftest import (
    RAY_GROUP,
    RAY_OWN_GROUP,
    VLLM_GROUP,
    _held_cpus,
    _schedule_rank,
    xdist_group,
)


def test_an_actor_left_alive_on_the_session_cluster_is_named(ray_cluster, request) -> None:
    import ray

    @ray.remote(num_cpus=1)
    class LeftBehind:
        def ping(self) -> int:
            return 1

    actor = LeftBehind.remote()
    ray.get(actor.ping.remote(), timeout=180)
    try:
        held = _held_cpus(grace_s=1.0)
        assert "1 of 2 CPUs held" in held and "LeftBehind" in held, held
    finally:
        ray.kill(actor)
    assert _held_cpus() == "", "every CPU is free once the actor is gone"
    assert xdist_group(request.node) == RAY_GROUP


class _Item:
    """What :func:`xdist_group` reads of a test item."""

    def __init__(self, nodeid: str, markers: tuple[str, ...] = (), fixtures: tuple = ()) -> None:
        self.nodeid, self.markers, self.fixturenames = nodeid, markers, fixtures

    def get_closest_marker(self, name: str) -> object | None:
        return pytest.mark.ray if name in self.markers else None


def test_tests_that_start_ray_are_grouped_by_what_they_start(request) -> None:
    """The session cluster's tests, the vLLM ones and the other own-Ray ones: three groups that
    the two workers take longest first; every other test goes with its file. Under
    ``--dist loadgroup`` (``make test``) this test's node id carries its group, which is what
    xdist's scheduler reads (pytest 9.2 ignores where pytest-xdist 3.8 puts it)."""
    own = _Item("tests/e2e/test_bench_smoke.py::test_smoke[scaling]", ("ray",))
    vllm = _Item("tests/e2e/test_bench_smoke.py::test_smoke[serve_openai]", ("ray", "vllm"))
    shared = _Item("tests/e2e/test_train_lm.py::test_x", (), ("tmp_path", "ray_cluster"))
    plain = _Item("tests/raygke/test_cli.py::test_y", ("vllm",))
    groups = [xdist_group(i) for i in (own, vllm, shared, plain)]  # type: ignore[arg-type]
    assert groups == [RAY_OWN_GROUP, VLLM_GROUP, RAY_GROUP, "tests/raygke/test_cli.py"]
    assert [_schedule_rank(g, {"tests/raygke/test_cli.py"}) for g in groups] == [0, 0, 0, 1]
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith("::" + request.node.name + "@tests/test_conftest.py")
