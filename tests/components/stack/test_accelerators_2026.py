"""Stack rules for the 2026 accelerators (issue 21 item 5): TPU7x and v5p slices, A4 (B200) and
A4X (GB200, arm64) GPU pools; each rule with a valid and an invalid case."""

from __future__ import annotations

from typing import Any

from components.nodepools.render import node_pool_specs
from components.raycrs.manifests import render_manifests
from components.stack import validate
from tests.components.stack.test_model import problems
from tests.helpers import WORKING_DIR, config


def _gpu_stack(gpu: str, count: int, **extra: Any) -> dict[str, Any]:
    data = config(region="us-central1", zones=["us-central1-a"])
    data["node_pools"] = [
        {"name": "gb", "gpu": {"type": gpu, "count": count}, "allow_unlisted_zone": True}
    ]
    data["nap"] = {"enabled": False}
    data["ray_clusters"] = [
        {
            "name": "research",
            "worker_groups": [{"name": "gpu", "node_pool": "gb", "max_replicas": 1}],
        }
    ]
    data.update(extra)
    return data


def test_a4x_refused_without_an_arm64_image() -> None:
    found = "\n".join(problems(_gpu_stack("nvidia-gb200", 4)))
    assert "node_pools[gb]: nvidia-gb200 nodes (a4x-highgpu-4g) are arm64" in found
    assert "set ray.images.gpu to an image built for arm64 with architectures: [arm64]" in found


def test_a4x_refused_with_an_amd64_image() -> None:
    ray = {"images": {"gpu": {"image": "example/ray-gpu:2.60.0-arm"}}}
    found = "\n".join(problems(_gpu_stack("nvidia-gb200", 4, ray=ray)))
    assert "is built for amd64; add arm64 to its architectures" in found


def test_a4x_accepted_with_an_arm64_image_and_selects_arm_nodes() -> None:
    image = {"image": "example/ray-gpu:2.60.0-arm64", "architectures": ["arm64"]}
    cfg = validate(_gpu_stack("nvidia-gb200", 4, ray={"images": {"gpu": image}}))
    spec = next(s for s in node_pool_specs(cfg) if s.name == "gb")
    assert spec.machine_type == "a4x-highgpu-4g"
    assert spec.labels["kubernetes.io/arch"] == "arm64"
    rc = next(m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayCluster")
    pod = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert pod["containers"][0]["image"] == "example/ray-gpu:2.60.0-arm64"


def test_amd64_gpu_pool_refused_with_an_arm64_only_image() -> None:
    image = {"image": "example/ray-gpu:2.60.0-arm64", "architectures": ["arm64"]}
    found = "\n".join(problems(_gpu_stack("nvidia-b200", 8, ray={"images": {"gpu": image}})))
    assert "nvidia-b200 nodes (a4-highgpu-8g) are amd64" in found


def test_b200_pool_renders_a4() -> None:
    cfg = validate(_gpu_stack("nvidia-b200", 8))
    spec = next(s for s in node_pool_specs(cfg) if s.name == "gb")
    assert (spec.machine_type, spec.accelerator_type, spec.accelerator_count) == (
        "a4-highgpu-8g",
        "nvidia-b200",
        8,
    )
    assert "kubernetes.io/arch" not in spec.labels


def _tpu7x(version: str | None) -> dict[str, Any]:
    data = config(region="us-central1", zones=["us-central1-c"])
    data["node_pools"] = [{"name": "iw", "tpu": {"generation": "tpu7x", "topology": "2x2x2"}}]
    data["nap"] = {"enabled": False}
    if version:
        data["cluster"] = {**data["cluster"], "min_master_version": version}
    return data


def test_tpu7x_needs_gke_1_34_0_gke_2201000() -> None:
    validate(_tpu7x("1.35"))
    found = "\n".join(problems(_tpu7x("1.34.0-gke.1000")))
    assert "older than 1.34.0-gke.2201000, the oldest GKE version with TPU tpu7x" in found


def test_tpu_topology_must_be_the_generations() -> None:
    data = _tpu7x(None)
    data["node_pools"][0]["tpu"]["topology"] = "4x4"
    assert "topology 4x4 is not a tpu7x topology; valid: 2x2x1" in "\n".join(problems(data))
    data["node_pools"][0]["tpu"] = {"generation": "v5p", "topology": "2x2x2"}
    data["zones"] = ["us-central1-a"]
    cfg = validate(data)
    spec = node_pool_specs(cfg)[1]
    assert (spec.tpu_topology, spec.workload_policy) == ("2x2x2", None)  # v5p: COMPACT + topology
