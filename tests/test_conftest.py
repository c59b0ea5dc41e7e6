"""The suite's own machinery in tests/conftest.py: the check that the session Ray cluster is
left free."""

from __future__ import annotations

from tests.conftest import RAY_GROUP, _held_cpus, xdist_group


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
