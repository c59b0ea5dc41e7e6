"""``serve_llm``'s routing and autoscaling arguments reach Ray Serve: the engine deployment's
``autoscaling_config`` (delays) and ``request_router_config`` (Ray Serve LLM's prefix-aware
router), each accepted by Ray Serve's own config models; and the arguments a multi-host TPU
replica adds. No Ray cluster, no vLLM engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract.args.base import ArgError
from tests.workloads.test_serve_llm import tiny_hf_folder
from workloads.serve_llm import app_config


def test_delays_and_prefix_routing_reach_the_engine_deployment(tmp_path: Path) -> None:
    from ray.serve.config import AutoscalingConfig, RequestRouterConfig
    from ray.serve.llm.request_router import PrefixCacheAffinityRouter

    folder = tiny_hf_folder(tmp_path / "m")
    cfg = app_config(
        {"model": str(folder), "max_replicas": 3, "upscale_delay_s": 5, "downscale_delay_s": 90,
         "routing": "prefix_cache", "prefix_imbalanced_threshold": 8,
         "prefix_match_rate_threshold": 0.25}
    )  # fmt: skip
    dep = cfg["deployment_config"]
    auto = AutoscalingConfig(**dep["autoscaling_config"])
    assert (auto.upscale_delay_s, auto.downscale_delay_s, auto.max_replicas) == (5, 90, 3)
    router = RequestRouterConfig(**dep["request_router_config"])
    assert router.get_request_router_class() is PrefixCacheAffinityRouter
    assert router.request_router_kwargs == {"imbalanced_threshold": 8, "match_rate_threshold": 0.25}


def test_the_defaults_leave_ray_serve_its_own(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m")
    dep = app_config({"model": str(folder)})["deployment_config"]
    assert "request_router_config" not in dep  # Serve's power-of-two router
    assert set(dep["autoscaling_config"]) == {"min_replicas", "max_replicas",
                                              "target_ongoing_requests"}  # fmt: skip


def test_prefix_thresholds_need_prefix_routing(tmp_path: Path) -> None:
    with pytest.raises(ArgError, match="prefix_match_rate_threshold is set but routing is"):
        app_config({"model": "x", "prefix_match_rate_threshold": 0.2})
    with pytest.raises(ArgError, match="must be <= 1"):
        app_config({"model": "x", "routing": "prefix_cache", "prefix_match_rate_threshold": 2})


def test_a_multi_host_tpu_replica_reserves_the_slice() -> None:
    """Ray Serve LLM's own per-host bundles (no placement_group_config of ours), the slice's
    topology, vLLM's TPU build on its Ray executor; checked by Ray's LLMConfig, whose engine
    config gives one bundle of 4 chips per host and defers the placement group to the replica
    (a SlicePlacementGroup)."""
    from ray.serve.llm import LLMConfig

    from contract.args.serve_llm import ServeLlmArgs
    from workloads.serve_llm import llm_config

    args = ServeLlmArgs.parse(
        {"model": "o/m", "accelerator": "tpu", "accelerator_type": "TPU-V6E",
         "tensor_parallel_size": 16, "tpu_topology": "4x4"}
    )  # fmt: skip
    cfg = llm_config(args, "o/m", None)
    assert "placement_group_config" not in cfg
    assert cfg["accelerator_config"] == {"kind": "tpu", "topology": "4x4"}
    assert cfg["runtime_env"]["env_vars"] == {"TPU_MULTIHOST_BACKEND": "ray"}
    engine = LLMConfig(**cfg).get_engine_config()
    assert engine.placement_bundles == [{"TPU": 4, "accelerator_type:TPU-V6E": 0.001}] * 4
    assert engine.accelerator.requires_deferred_placement_group


@pytest.mark.ray
@pytest.mark.slow
def test_the_built_application_routes_and_autoscales_as_asked(ray_cluster, tmp_path: Path) -> None:
    """The Serve application the builder returns (what Serve deploys, before any replica
    starts): its engine deployment autoscales with the delays given and routes with Ray Serve
    LLM's PrefixCacheAffinityRouter; the ingress keeps Serve's default router."""
    from ray.serve._private.build_app import build_app
    from ray.serve.llm.request_router import PrefixCacheAffinityRouter

    from workloads.serve_llm import build_app as build_llm_app

    folder = tiny_hf_folder(tmp_path / "m")
    app = build_llm_app(
        {"model": str(folder), "max_replicas": 2, "upscale_delay_s": 5, "downscale_delay_s": 60,
         "routing": "prefix_cache", "prefix_imbalanced_threshold": 4}
    )  # fmt: skip
    deployments = {d.name: d._deployment_config for d in build_app(app, name="lm").deployments}
    engine, ingress = deployments["LLMServer:lm"], deployments["OpenAiIngress"]
    auto = engine.autoscaling_config
    assert (auto.upscale_delay_s, auto.downscale_delay_s, auto.max_replicas) == (5, 60, 2)
    router = engine.request_router_config
    assert router.get_request_router_class() is PrefixCacheAffinityRouter
    assert router.request_router_kwargs == {"imbalanced_threshold": 4}
    assert "PowerOfTwo" in str(ingress.request_router_config.request_router_class)
