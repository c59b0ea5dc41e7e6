"""Benchmark: wall time of the offline render (``raygke synth``) for dev, prod and generated
stacks with 10/25/50 node pools and as many jobs. Reports seconds and resources per second.

Run: ``python bench/synth.py`` (in-process, after one warm-up render that pays the imports; the
first-render cost is reported separately). Target: prod under 3 s, growth linear in pools + jobs,
i.e. the largest generated stack renders about as many resources per second as prod.
``--smoke`` renders dev and a 5-pool generated stack once each (seconds; run by the tests).

Last line: ``ratio: res-per-cpu-s <largest generated>/<reference> = R``: resources rendered per
CPU second (this process's CPU time, steadier than wall time on a shared machine) of the largest
generated stack over prod's (dev's in smoke mode); R near 1 = linear growth.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.kernel.base import PROJECT_NAMESPACE  # noqa: E402
from components.plan.resolve import nap_needs  # noqa: E402
from components.stack.loader import read_stack_yaml, validate  # noqa: E402
from raygke.synth import synth  # noqa: E402

# One pool kind per slot, rotating. The shapes and zones are the shipped prod stack's (region
# us-east5): v5e and v6e are offered in us-east5-b, H100 in us-east5-a, L4 in both
# (components/catalog/); multi-host v6e 4x4 needs the TPU webhook, which prod's
# kuberay.mode gke-addon provides.
_POOL_KINDS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"machine_type": "n2-standard-8", "min_nodes": 0, "max_nodes": 2}, "prepare"),
    (
        {"tpu": {"generation": "v5e", "topology": "2x2"}, "zones": ["us-east5-b"], "max_slices": 2},
        "train_lm_jax",
    ),
    (
        {"tpu": {"generation": "v6e", "topology": "4x4"}, "zones": ["us-east5-b"], "max_slices": 1},
        "train_lm_jax",
    ),
    ({"gpu": {"type": "nvidia-l4", "count": 1}, "min_nodes": 0, "max_nodes": 2}, "train_lm"),
    (
        {"gpu": {"type": "nvidia-h100-80gb", "count": 8}, "zones": ["us-east5-a"], "max_nodes": 1},
        "train_lm",
    ),
)


def generated_stack(pools: int, jobs: int, base: Path = ROOT / "Pulumi.prod.yaml") -> dict:
    """A valid stack file (``{"config": {...}}``) shaped like ``base`` (the shipped prod stack:
    network, cluster, KubeRay add-on, buckets, identities, secrets) with ``pools`` node pools
    (CPU, v5e 2x2, v6e 4x4, L4, 8xH100 rotating), one RayCluster with a worker group per pool,
    and ``jobs`` RayJobs spread over those groups (prepare on CPU groups, train_lm_jax on TPU,
    train_lm on GPU). NAP limits are exactly what the pools can scale to
    (:func:`components.plan.resolve.nap_needs`), memory 64 GiB per vCPU.

    Raises:
        StackConfigError: the generated stack does not validate (a rule changed; fix the shapes here).
    """
    prefix = PROJECT_NAMESPACE + ":"
    cfg = copy.deepcopy(read_stack_yaml(base.read_text(), str(base))["config"])
    cfg[prefix + "cluster"].update(name="ray-bench", deletion_protection=False)
    node_pools, groups, workloads = [], [], []
    for i in range(pools):
        shape, workload = _POOL_KINDS[i % len(_POOL_KINDS)]
        node_pools.append({"name": f"p{i:03d}", **copy.deepcopy(shape)})
        groups.append({"name": f"g{i:03d}", "node_pool": f"p{i:03d}", "max_replicas": 1})
        workloads.append(workload)
    cluster = cfg[prefix + "ray_clusters"][0]["name"]
    cfg[prefix + "ray_clusters"][0]["worker_groups"] = groups
    for key in ("queue", "priority"):  # prod's queues are dropped below
        cfg[prefix + "ray_clusters"][0].pop(key, None)
    cfg[prefix + "node_pools"] = node_pools
    # they name prod's pools and jobs, replaced here
    for key in ("services", "compute_classes", "capacity"):
        cfg.pop(prefix + key, None)
    cfg[prefix + "jobs"] = [
        {
            "name": f"job-{j:03d}",
            "workload": workloads[j % pools],
            "cluster": cluster,
            "worker_group": groups[j % pools]["name"],
        }
        for j in range(jobs)
    ]
    data = {k.removeprefix(prefix): v for k, v in cfg.items() if k.startswith(prefix)}
    data["nap"] = {**data["nap"], "enabled": False}
    off = validate(data, "generated stack (NAP off)")
    limits = nap_needs(off.cluster.system_pool, off.node_pools)
    limits["memory"] = 64 * limits["cpu"]
    cfg[prefix + "nap"]["resource_limits"] = limits
    validate({**data, "nap": cfg[prefix + "nap"]}, f"generated stack ({pools} pools)")
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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="dev + one 5-pool stack, one render each")
    p.add_argument("--repeats", type=int, default=3, help="renders per stack (best is reported)")
    args = p.parse_args(argv)
    sizes = ((5, 5),) if args.smoke else ((10, 10), (25, 25), (50, 50))
    repeats = 1 if args.smoke else args.repeats
    reference = "dev" if args.smoke else "prod"
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        stacks = {"dev": ROOT / "Pulumi.dev.yaml"}
        if not args.smoke:
            stacks["prod"] = ROOT / "Pulumi.prod.yaml"
        for pools, jobs in sizes:
            path = tmpd / f"Pulumi.gen{pools}.yaml"
            path.write_text(yaml.safe_dump(generated_stack(pools, jobs), sort_keys=False))
            stacks[f"gen-{pools}p-{jobs}j"] = path
        t0 = time.perf_counter()
        synth(stacks[reference], tmpd / "warm")
        print(f"first render (imports included): {time.perf_counter() - t0:.2f} s")
        print(f"{'stack':<16}{'resources':>10}{'wall s':>10}{'cpu s':>10}{'res/cpu-s':>10}")
        rate = {}
        for name, path in stacks.items():
            secs, cpu, n = measure(path, tmpd / name, repeats)
            rate[name] = n / max(cpu, 1e-9)
            print(f"{name:<16}{n:>10}{secs:>10.3f}{cpu:>10.3f}{rate[name]:>10.0f}")
    largest = list(stacks)[-1]
    print(f"ratio: res-per-cpu-s {largest}/{reference} = {rate[largest] / rate[reference]:.2f}")


if __name__ == "__main__":
    main()
