"""Benchmark: wall time of the offline render (``raygke synth``) for dev, prod and a generated
stack with 50 node pools and 50 jobs. Reports seconds and resources per second.

Run: ``python bench/synth.py`` (in-process, after one warm-up render that pays the imports; the
first-render cost is reported separately). Target: prod under 3 s, growth linear in pools + jobs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raygke.synth import synth  # noqa: E402


def generated_stack(pools: int, jobs: int) -> dict:
    """A valid stack with ``pools`` node pools (CPU, v5e 2x2, v6e 4x4, L4 rotating) and ``jobs``
    RayJobs spread over one RayCluster's worker groups."""
    node_pools, groups = [], []
    for i in range(pools):
        kind = i % 4
        name = f"p{i:03d}"
        if kind == 0:
            node_pools.append({"name": name, "machine_type": "n2-standard-8", "max_nodes": 2})
        elif kind == 1:
            node_pools.append(
                {
                    "name": name,
                    "tpu": {"generation": "v5e", "topology": "2x2"},
                    "zones": ["us-east5-b"],
                    "max_slices": 2,
                }
            )
        elif kind == 2:
            node_pools.append(
                {
                    "name": name,
                    "tpu": {"generation": "v6e", "topology": "4x4"},
                    "zones": ["us-east5-b"],
                    "max_slices": 1,
                }
            )
        else:
            node_pools.append(
                {"name": name, "gpu": {"type": "nvidia-l4", "count": 1}, "max_nodes": 2}
            )
        groups.append({"name": f"g{i:03d}", "node_pool": name, "max_replicas": 1})
    cfg = {
        "ray-gke:project": "ray-gke-bench",
        "ray-gke:region": "us-east5",
        "ray-gke:zones": ["us-east5-b"],
        "ray-gke:cluster": {"name": "ray-bench", "deletion_protection": False},
        "ray-gke:node_pools": node_pools,
        "ray-gke:nap": {"resource_limits": {"cpu": 100000, "memory": 1000000}},
        "ray-gke:ray_clusters": [
            {"name": "bench", "service_account": "ray-train", "worker_groups": groups}
        ],
        "ray-gke:jobs": [
            {
                "name": f"job-{j:03d}",
                "workload": "prepare",
                "cluster": "bench",
                "worker_group": groups[(j * 4) % len(groups)]["name"],
            }
            for j in range(jobs)
        ],
    }
    return {"config": cfg}


def measure(path: Path, out: Path, repeat: int = 3) -> tuple[float, float, int]:
    """Best-of-``repeat`` wall seconds and CPU seconds (this process; less sensitive to other
    load on a shared machine) of one synth of ``path``, and its resource count."""
    best, cpu, n = float("inf"), float("inf"), 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = synth(path, out)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        n = len(result.resources)
    return best, cpu, n


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        stacks = {"dev": ROOT / "Pulumi.dev.yaml", "prod": ROOT / "Pulumi.prod.yaml"}
        for pools, jobs in ((10, 10), (25, 25), (50, 50)):
            p = tmpd / f"Pulumi.gen{pools}.yaml"
            p.write_text(yaml.safe_dump(generated_stack(pools, jobs)))
            stacks[f"gen-{pools}p-{jobs}j"] = p
        t0 = time.perf_counter()
        synth(stacks["prod"], tmpd / "warm")
        print(f"first render (imports included): {time.perf_counter() - t0:.2f} s")
        print(f"{'stack':<16}{'resources':>10}{'wall s':>10}{'cpu s':>10}{'res/s':>10}")
        for name, path in stacks.items():
            secs, cpu, n = measure(path, tmpd / name)
            print(f"{name:<16}{n:>10}{secs:>10.3f}{cpu:>10.3f}{n / secs:>10.0f}")


if __name__ == "__main__":
    main()
