"""Benchmark: how long ``raygke check`` takes from the command line, and where its time goes
(issue 35, "the first hour"; target: ``raygke check --stack prod`` <= 2 s on a quiet machine;
issue 48: within 8x the bare import of Pulumi's SDKs, ``import-sdk`` below).

Side by side, in alternating rounds (the order rotates each round, so load that drifts between
rounds touches every variant alike), each a fresh ``python -m raygke`` process:

* ``check``: ``raygke check --stack S`` with the parsed-CRD cache warm (the usual case after the
  first run; components/kernel/yamlcache.py);
* ``check-cold``: the same with an empty cache folder (``RAYGKE_CACHE_DIR``), as the first run
  after an install or a CRD change;
* ``no-render``: ``raygke check --stack S --no-render`` (config rules only);
* ``import-gcp``: ``python -c`` importing pulumi and touching ``pulumi_gcp.compute.Network``,
  ``pulumi_gcp.container.NodePool`` and ``pulumi_kubernetes.core.v1.Namespace``: the generated
  provider modules every render imports (compute's ``_inputs.py`` and ``outputs.py`` are 4.8 MB
  of Python each), the floor no change of ours can go below;
* ``import-sdk``: ``python -c "import pulumi, pulumi_gcp, pulumi_kubernetes"``, the bare import of
  Pulumi's SDKs (the providers' lazy top-level packages): the yardstick of issue 48's 8x.

Every child runs with bytecode writing on (``PYTHONDONTWRITEBYTECODE`` dropped from its
environment), as an installed ``raygke`` runs: the untimed first check writes this repository's
``.pyc`` files, as the providers' were written at install, so no variant pays for compiling
source that the others load compiled.

Each figure is the median over rounds of the child's CPU seconds (user + sys, from
``resource.getrusage(RUSAGE_CHILDREN)``: steadier than wall time on a shared machine) and of its
wall seconds. Prints one JSON line, the check's wall time against the 2 s target,
``cache: check/check-cold cpu = R``, then ``ratio: check/import-sdk cpu = R`` (target <= 8).

Usage: ``python bench/check_time.py [--stack prod] [--rounds 5]``; ``--smoke``: the dev stack,
one round, ``--no-policy`` (no Pulumi program) and no ``import-gcp`` (seconds; run by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 2.0
TARGET_RATIO = 8.0  # check / import-sdk, CPU seconds (issue 48)
IMPORT_SDK = "import pulumi, pulumi_gcp, pulumi_kubernetes"
IMPORT_GCP = (
    "import pulumi, pulumi_gcp, pulumi_kubernetes; pulumi_gcp.compute.Network; "
    "pulumi_gcp.container.NodePool; pulumi_kubernetes.core.v1.Namespace"
)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """``(cpu s, wall s)`` of one child process run to completion.

    Raises:
        RuntimeError: the command failed (its output in the message).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stdout}{r.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stack", default="prod")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="the dev stack, one round")
    a = ap.parse_args()
    if a.smoke:
        a.stack, a.rounds = "dev", 1
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: .pyc files written and read
    check = [py, "-m", "raygke", "check", "--stack", a.stack, *(["--no-policy"] if a.smoke else [])]
    with tempfile.TemporaryDirectory() as warm_dir:
        warm = {**env, "RAYGKE_CACHE_DIR": warm_dir}
        timed(check, warm)  # fills the warm cache (and the .pyc files), untimed
        variants = {
            "check": lambda: timed(check, warm),
            "check-cold": lambda: _cold(check, env),
            "no-render": lambda: timed([*check, "--no-render"], warm),
            "import-gcp": lambda: timed([py, "-c", IMPORT_GCP], env),
            "import-sdk": lambda: timed([py, "-c", IMPORT_SDK], env),
        }
        if a.smoke:
            del variants["import-gcp"]
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        names = list(variants)
        for r in range(a.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                samples[name].append(variants[name]())
    result = {
        name: {
            "cpu_s": round(statistics.median(c for c, _ in s), 3),
            "wall_s": round(statistics.median(w for _, w in s), 3),
        }
        for name, s in samples.items()
    }
    result["stack"], result["rounds"] = a.stack, a.rounds
    print(json.dumps(result))
    cache = result["check"]["cpu_s"] / result["check-cold"]["cpu_s"]
    ratio = result["check"]["cpu_s"] / result["import-sdk"]["cpu_s"]
    print(
        f"target: check --stack {a.stack} {result['check']['wall_s']:.2f} s wall (target {TARGET_S} s)"
    )
    print(f"cache: check/check-cold cpu = {cache:.3f}")
    print(f"ratio: check/import-sdk cpu = {ratio:.3f} (target <= {TARGET_RATIO:g})")


def _cold(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as empty:
        return timed(cmd, {**env, "RAYGKE_CACHE_DIR": empty})


if __name__ == "__main__":
    main()
