"""Every ``bench/*.py`` runs in ``--smoke`` mode (tiny sizes) and prints its ratio line.

Each benchmark runs as a subprocess with this interpreter and ``PYTHONPATH`` = the repo root,
exactly as a person would run it, so a benchmark that no longer imports, no longer matches the
workloads' API or generates an invalid stack fails here. Only completion and the shape of the
summary are asserted (a parsable ``ratio: <name> = <number or n/a>`` line), never a figure or a
time: the figures depend on the machine and its load.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RATIO = re.compile(
    r"^ratio: (?P<name>\S+(?: \S+)*) = (?P<value>n/a|\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?:\s|$)", re.M
)

# The ones that start Ray are slow (a local Ray instance plus its workers takes tens of seconds)
# and marked `ray`: under xdist they run in the Ray worker (tests/conftest.py).
CASES = [
    pytest.param("synth.py", id="synth"),
    pytest.param("check_time.py", id="check_time"),
    pytest.param("torch_step.py", id="torch_step"),
    pytest.param("jax_step.py", id="jax_step"),
    pytest.param("optimizer_step.py", id="optimizer_step"),
    pytest.param("contention.py", id="contention"),
    pytest.param("shard_step.py", id="shard_step"),
    pytest.param("prepare.py", id="prepare", marks=[pytest.mark.slow, pytest.mark.ray]),
    pytest.param(
        "train_overhead.py", id="train_overhead", marks=[pytest.mark.slow, pytest.mark.ray]
    ),
    pytest.param("scaling.py", id="scaling", marks=[pytest.mark.slow, pytest.mark.ray]),
    pytest.param(
        "serve_openai.py",
        id="serve_openai",
        marks=[
            pytest.mark.slow,
            pytest.mark.ray,
            pytest.mark.vllm,
        ],
    ),
]


@functools.cache  # one run per script (and mode) per session, shared by the tests below
def run_smoke(script: str, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)  # never join another Ray instance on this machine
    return subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_benchmark_is_covered() -> None:
    covered = {p.values[0] for p in CASES}
    assert covered == {p.name for p in BENCH.glob("*.py")}


@pytest.mark.parametrize("script", CASES)
def test_smoke_completes_and_prints_a_ratio(script: str) -> None:
    proc = run_smoke(script)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    ratios = RATIO.findall(proc.stdout)
    assert len(ratios) == 1, f"expected one 'ratio: <name> = <value>' line:\n{proc.stdout}"
    _name, value = ratios[0]
    if value != "n/a":
        assert float(value) > 0, proc.stdout


def test_check_time_reports_check_over_the_bare_sdk_import() -> None:
    """bench/check_time.py's ratio is issue 48's yardstick: ``raygke check`` against the bare
    import of Pulumi's SDKs (``import-sdk``), CPU seconds, both fresh processes; the figure
    itself is the benchmark's to report, not the test's to hold."""
    proc = run_smoke("check_time.py")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    summary = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
    assert {"check", "check-cold", "no-render", "import-sdk"} <= set(summary)
    ratio = RATIO.search(proc.stdout)
    assert ratio is not None and ratio["name"] == "check/import-sdk cpu", proc.stdout
    want = summary["check"]["cpu_s"] / summary["import-sdk"]["cpu_s"]
    assert float(ratio["value"]) == pytest.approx(want, rel=1e-2)
    assert re.search(r"^cache: check/check-cold cpu = [\d.]+$", proc.stdout, re.M), proc.stdout
    floor = re.search(r"^floor: import-program/import-sdk cpu = ([\d.]+); ", proc.stdout, re.M)
    assert floor is not None, proc.stdout
    want = summary["import-program"]["cpu_s"] / summary["import-sdk"]["cpu_s"]
    assert float(floor[1]) == pytest.approx(want, rel=1e-2)


def test_check_time_records_the_provider_modules_the_program_loaded(tmp_path: Path) -> None:
    """``import-program``'s list is what a policy-running check really loaded: the providers'
    packages of the program's resources (``pulumi_gcp.compute``, ``pulumi_kubernetes.core.v1``),
    not the lazy stubs every ``import pulumi_gcp`` makes (``pulumi_gcp.bigquery``)."""
    sys.path.insert(0, str(BENCH))
    try:
        import check_time
    finally:
        sys.path.remove(str(BENCH))
    out = tmp_path / "modules.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", check_time.RECORD, str(out), "check", "--stack", "dev"]
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    names = out.read_text().split()
    assert {"pulumi_gcp.compute", "pulumi_kubernetes.core.v1"} <= set(names), names
    assert "pulumi_gcp.bigquery" not in names


@pytest.mark.parametrize("script", ["torch_step.py", "jax_step.py"])
def test_step_benchmarks_report_tokens_per_second(script: str) -> None:
    proc = run_smoke(script)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    summary = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
    assert summary["tokens_per_s"] > 0
    assert summary["step_time_s"] > 0
    # torch_step measures its peak (workloads/precision.py), so it has an MFU everywhere;
    # jax_step only where a peak is known: none on CPU, so the ratio line says n/a there.
    ratio = RATIO.search(proc.stdout)
    assert ratio is not None and ratio["name"] == "mfu"
    if script == "torch_step.py":
        assert summary["mfu"] > 0 and summary["dtype"] == summary["precision"]["dtype"]
    if summary["peak_tflops_per_device"] is None:
        assert summary["mfu"] is None and ratio["value"] == "n/a"
    else:
        assert summary["mfu"] == pytest.approx(float(ratio["value"]), rel=1e-3)


def test_shard_step_compares_ddp_with_fsdp_and_data_with_data_by_fsdp() -> None:
    """``bench/shard_step.py``: PyTorch DDP vs FSDP2 over two gloo processes and JAX data-only
    vs data x fsdp on two host devices, side by side, each with tokens/s and the MFU against
    the measured matmul peak (no datasheet peak for a CPU); FSDP holds half the parameters per
    rank, the fsdp mesh about half per device."""
    proc = run_smoke("shard_step.py")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    summary = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
    pairs = {"torch": ("ddp", "fsdp"), "jax": ("data", "fsdp")}
    for framework, modes in pairs.items():
        (size,) = summary[framework]["sizes"]
        assert len(size["step_time_s"][modes[0]]) == len(size["step_time_s"][modes[1]]) == 1
        for m in modes:
            assert size["modes"][m]["tokens_per_s"] > 0
            assert size["modes"][m]["mfu_measured_peak"] > 0
            assert size["modes"][m]["mfu_datasheet"] is None  # a CPU: no datasheet peak
    torch_bytes = summary["torch"]["sizes"][0]["param_bytes_per_rank"]
    assert torch_bytes["fsdp"] * 2 == torch_bytes["ddp"]
    jax_bytes = summary["jax"]["sizes"][0]["param_bytes_per_device"]
    assert jax_bytes["fsdp"] < 0.6 * jax_bytes["data"]  # LayerNorms and biases replicated
    ratio = RATIO.search(proc.stdout)
    assert ratio is not None and ratio["name"] == "fsdp/ddp tokens/s"
    want = summary["torch"]["sizes"][0]["fsdp_over_ddp_tokens_per_s"]
    assert float(ratio["value"]) == pytest.approx(want, rel=1e-3)


def test_contention_trains_with_the_threads_of_its_ray_cpus() -> None:
    """bench/contention.py's trainer follows train_lm's rule: 1 Ray CPU -> 1 intra-op and 1
    inter-op thread, whatever the host has."""
    proc = run_smoke("contention.py")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    summary = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
    assert summary["ray_cpus"] == 1.0
    assert summary["threads"] == 1 and summary["interop_threads"] == 1
    assert summary["tokens_per_s_median"]["quiet"] > 0


def test_torch_step_compares_bf16_with_fp32_and_shows_both_mfus() -> None:
    """``bench/torch_step.py --compare``: the step in fp32 and in bf16 autocast, the ratio of
    their step times and each one's MFU against its own dtype's measured matmul peak."""
    proc = run_smoke("torch_step.py", "--compare")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    ratios = RATIO.findall(proc.stdout)
    assert [name for name, _ in ratios] == ["bf16/fp32 step time"], proc.stdout
    summary = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("{")))
    runs = summary["runs"]
    assert set(runs) == {"fp32", "bf16"}
    assert all(r["mfu"] > 0 and r["peak_tflops_per_device"] > 0 for r in runs.values())
    want = runs["bf16"]["step_time_s"] / runs["fp32"]["step_time_s"]
    assert float(ratios[0][1]) == pytest.approx(want, rel=1e-3)
    assert "MFU fp32 " in proc.stdout and " vs bf16 " in proc.stdout
    assert summary["precision"]["dtype"] in ("fp32", "bf16")


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.vllm
def test_serve_fault_case_scales_the_running_app_and_loses_no_request_after_the_kill() -> None:
    """bench/serve_openai.py's fault case (the same smoke run as the ratio test): the second
    engine replica is added beside the running one (the same Serve code version: no restart of
    the first engine), one is killed halfway, and no request that started after the kill failed
    (the exit status)."""
    proc = run_smoke("serve_openai.py")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "scale-up: 1 of 1 running engine replicas kept" in proc.stdout, proc.stdout
    fault = [ln for ln in proc.stdout.splitlines() if ln.startswith("fault: ")]
    assert len(fault) == 1 and ", 0 of them failed;" in fault[0], proc.stdout


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.vllm
def test_serve_bench_pins_both_engines_and_prices_each_hop() -> None:
    """The fair setting (issue 51 item 1), from the same smoke run: both sides' vLLM engine
    processes pinned to the engine CPU, everything else on the rest, and the CPU cost per token
    of the Serve side's hops (proxy, ingress, engine replica) and vLLM's API server printed."""
    proc = run_smoke("serve_openai.py")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert re.search(r"^cpu split: vLLM engine processes on CPU\(s\) \[\d+\]", proc.stdout, re.M)
    pinned = re.search(r"^engine processes pinned: (\d+) \((.*)\)$", proc.stdout, re.M)
    assert pinned and pinned[2].count("VLLM::EngineCore") == 2, proc.stdout  # one per side
    costs = dict(re.findall(r"^cpu ms per token, (\w+) at 16 streams: (.*)$", proc.stdout, re.M))
    assert set(costs) == {"serve", "vllm"}, proc.stdout
    for hop in ("ray::ProxyActor", "ray::ServeReplica:lm:OpenAiIngress", "VLLM::EngineCore"):
        assert hop in costs["serve"], costs
    assert "vllm api_server" in costs["vllm"], costs
    assert re.search(r"^variant default: serve/vllm tokens/s = [\d.]+", proc.stdout, re.M)


def test_serve_bench_variants_and_cpu_split() -> None:
    from bench.serving import fair as bench

    assert bench.variant_settings("default") == ({}, {})
    assert bench.variant_settings("throughput+batch0") == (
        {"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"},
        {"stream_batching_interval_ms": 0},
    )
    with pytest.raises(ValueError, match="variant part 'fast'"):
        bench.variant_settings("throughput+fast")
    mine = sorted(os.sched_getaffinity(0))
    engine, rest = bench.cpu_split(None)
    assert engine == {mine[-1]} and rest == (set(mine) - engine or set(mine))
    with pytest.raises(ValueError, match="may use CPUs"):
        bench.cpu_split(str(max(mine) + 100))
    before = {1: ("ray::ProxyActor", 2.0), 2: ("VLLM::EngineCore", 5.0)}
    after = {1: ("ray::ProxyActor", 2.5), 2: ("VLLM::EngineCore", 6.0), 3: ("raylet", 0.25)}
    assert bench.cpu_used(before, after) == {
        "ray::ProxyActor": 0.5,
        "VLLM::EngineCore": 1.0,
        "raylet": 0.25,
    }
