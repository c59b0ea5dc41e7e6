"""A vLLM service's replicas on its worker group (components/raycrs/serve_replicas.py): what one
replica takes and how many the group holds per pool kind, the autoscaling arguments ``raygke
check`` refuses (one line each, rule ``serve-autoscaling-fit``), and what ``raygke queue``
shows for prod's service."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.config.stack import StackConfig
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.raycrs.serve_replicas import RULE, replica_plan, service_autoscaling_problems
from components.stack.loader import validate
from components.stack.rules import run_rule
from tests.helpers import WORKING_DIR, config, stack


def _data(pool: str, **args: Any) -> dict[str, Any]:
    svc = {"name": "lm", "hf_model": "o/m", "node_pool": pool, "args": args}
    return config(services=[svc], kuberay={"mode": "gke-addon"})


def _refused(pool: str, **args: Any) -> list[Any]:
    """The rule's problems (an error for stacks written for 2026-12-08 or later; a warning for
    older ones: components/config/epochs.py NEW_REFUSALS)."""
    found = run_rule(service_autoscaling_problems, StackConfig.model_validate(_data(pool, **args)))
    assert all(p.rule == RULE for p in found)
    return found


def test_replicas_per_pool_kind() -> None:
    """l4: 2 nodes of 1 L4; v5e: 3 single-host 2x2 slices; v6e: 2 multi-host 4x4 slices, one
    replica each; cpu: 2 n2-standard-8 pods of 6.5 CPUs, 3 engines of 2 CPUs each."""
    l4 = replica_plan(plan(cfg := validate(_data("l4"))), cfg.services[0])
    assert l4 is not None and (l4.per_replica, l4.fits, l4.max_replicas) == ("1 x NVIDIA L4", 2, 2)
    v5e = replica_plan(plan(cfg := validate(_data("v5e", tensor_parallel_size=2))), cfg.services[0])
    assert v5e is not None and (v5e.replicas_per_pod, v5e.fits) == (2, 6)
    v6e = replica_plan(plan(cfg := validate(_data("v6e"))), cfg.services[0])
    assert v6e is not None and v6e.per_replica == "a v6e 4x4 slice (4 hosts x 4 chips)"
    assert (v6e.pods_per_replica, v6e.max_pods, v6e.fits) == (4, 8, 2)
    cpu = replica_plan(plan(cfg := validate(_data("cpu", num_cpus=2))), cfg.services[0])
    assert cpu is not None and (cpu.per_replica, cpu.replicas_per_pod, cpu.fits) == ("2 CPUs", 3, 6)


@pytest.mark.parametrize("pool", ["l4", "cpu", "v6e"])
def test_the_max_replicas_shown_is_the_one_the_application_gets(pool: str) -> None:
    """raygke queue's max_replicas is the rendered Serve application's (on a CPU pool one
    replica per worker pod: 2 here, while 6 engines of 2 CPUs would fit)."""
    cfg = validate(_data(pool, num_cpus=2) if pool == "cpu" else _data(pool))
    rp = replica_plan(plan(cfg), cfg.services[0])
    (svc,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayService"]
    (app,) = yaml.safe_load(svc["spec"]["serveConfigV2"])["applications"]
    assert rp is not None and rp.max_replicas == app["args"]["max_replicas"]
    if pool == "cpu":
        assert (rp.max_replicas, rp.fits) == (2, 6)


def test_autoscaling_that_can_never_take_effect_is_refused() -> None:
    (p,) = _refused("l4", max_replicas=3)
    assert str(p) == (
        "services[lm].args.max_replicas: 3 (allowed: at most 2; the worker group holds 2 "
        "replica(s) of 1 x NVIDIA L4: 2 pod(s) of pool 'l4' (services[lm].max_workers, else the "
        "pool's max_nodes / max_slices); a replica past that waits for a pod the autoscaler may "
        "not add)"
    )
    high, low = _refused("v6e", min_replicas=3, max_replicas=3)  # 2 slices: 2 replicas
    assert str(high).startswith("services[lm].args.max_replicas: 3 (allowed: at most 2;")
    assert str(low).startswith(
        "services[lm].args.min_replicas: 3 (allowed: at most 2; the worker group holds 2 "
        "replica(s) of a v6e 4x4 slice (4 hosts x 4 chips): 8 pod(s) of pool 'v6e'"
    )
    (p,) = _refused("l4", target_ongoing_requests=80)
    assert str(p) == (
        "services[lm].args.target_ongoing_requests: 80 (allowed: at most max_ongoing_requests "
        "64: a replica never holds more, so Serve's autoscaler would never add one)"
    )
    # within the group, and a target below the cap: accepted, delays and routing too
    validate(
        _data("l4", max_replicas=2, target_ongoing_requests=8, upscale_delay_s=10,
              downscale_delay_s=120, routing="prefix_cache")
    )  # fmt: skip


def test_prod_service_replicas_as_queue_shows_them() -> None:
    from raygke.queue import service_plans

    prod = stack("prod")
    (p,) = service_plans(plan(prod))
    assert (p.service, p.pool, p.per_replica) == ("lm", "l4-serve", "1 x NVIDIA L4")
    assert (p.min_replicas, p.max_replicas, p.fits, p.routing) == (1, 3, 3, "power_of_two")
