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
  of Python each);
* ``import-program``: every Pulumi provider module the check itself loaded, imported with the
  collector off as the check runs them: the floor no change of ours can go below. The untimed
  first check records them: the ``pulumi_*`` modules in ``sys.modules`` at exit that are real
  modules, not the providers' lazy stubs (``pulumi_gcp.compute`` alone is 288 modules: its
  package imports every resource class);
* ``import-sdk``: ``python -c "import pulumi, pulumi_gcp, pulumi_kubernetes"``, the bare import of
  Pulumi's SDKs (the providers' lazy top-level packages): the yardstick of issue 48's 8x.

Every child runs with bytecode writing on (``PYTHONDONTWRITEBYTECODE`` dropped from its
environment), as an installed ``raygke`` runs: the untimed first check writes this repository's
``.pyc`` files, as the providers' were written at install, so no variant pays for compiling
source that the others load compiled.

Each figure is the median over rounds of the child's CPU seconds (user + sys, from
``resource.getrusage(RUSAGE_CHILDREN)``: steadier than wall time on a shared machine) and of its
wall seconds. Prints one JSON line, the check's wall time against the 2 s target,
``cache: check/check-cold cpu = R``, then ``ratio: check/import-sdk cpu = R`` (target <= 8), and
``floor: import-program/import-sdk cpu = R`` with ``check/import-program``: how much of the ratio
is the providers' own modules, which no change of ours can import faster.

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


# Run as the untimed first check: that check, then the names of the Pulumi provider modules it
# loaded (real modules, not ``pulumi._utils._LazyModule`` stubs), one per line.
RECORD = """
import atexit, sys, types
out = sys.argv[1]
def _record():
    names = [n for n, m in list(sys.modules.items())
             if n.split(".")[0].startswith("pulumi_") and type(m) is types.ModuleType]
    with open(out, "w") as f:
        f.write("\\n".join(names))
atexit.register(_record)
sys.argv = ["raygke", *sys.argv[2:]]
from raygke.cli import main
sys.exit(main())
"""
IMPORT_PROGRAM = (
    "import gc, importlib, sys; gc.disable(); import pulumi.runtime; "
    "[importlib.import_module(n) for n in open(sys.argv[1]).read().split()]"
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
        modules = os.path.join(warm_dir, "provider-modules.txt")
        # fills the warm cache (and the .pyc files) and records the provider modules, untimed
        timed([py, "-c", RECORD, modules, *check[3:]], warm)
        variants = {
            "check": lambda: timed(check, warm),
            "check-cold": lambda: _cold(check, env),
            "no-render": lambda: timed([*check, "--no-render"], warm),
            "import-gcp": lambda: timed([py, "-c", IMPORT_GCP], env),
            "import-program": lambda: timed([py, "-c", IMPORT_PROGRAM, modules], env),
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
    floor = result["import-program"]["cpu_s"] / result["import-sdk"]["cpu_s"]
    above = result["check"]["cpu_s"] / result["import-program"]["cpu_s"]
    print(f"floor: import-program/import-sdk cpu = {floor:.3f}; check/import-program = {above:.3f}")


def _cold(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as empty:
        return timed(cmd, {**env, "RAYGKE_CACHE_DIR": empty})


if __name__ == "__main__":
    main()
