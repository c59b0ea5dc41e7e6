"""Serve load: closed-loop HTTP load on 127.0.0.1 against the LM served three ways, side by side.

    python bench/serve_load.py [--clients 16] [--seconds 15] [--rounds 3] [--tokens 16]

Servers (all on 127.0.0.1, the same model and checkpoint, ``--threads`` CPUs each, one replica):

* ``serve-batched``: ``workloads.serve_lm`` under Ray Serve, ``@serve.batch`` max batch = clients,
  ``max_ongoing_requests`` = clients (so a batch can fill), ``num_cpus: --threads`` (the replica
  sets its torch threads from it);
* ``serve-unbatched``: the same application with ``max_batch_size: 1``;
* ``bare``: a single-process ``http.server.ThreadingHTTPServer`` in its own process running the
  same ``workloads.serve_lm.LmGenerator`` and request parsing, one request at a time (a lock),
  ``--threads`` torch threads. It gets the same KV-cached decode as Serve (a batch of one), so
  ``serve-batched / bare`` is what batching under Serve wins over the best one-at-a-time server,
  not over a slower decode; ``serve-unbatched / bare`` is Serve's overhead at equal replicas.

Load: ``--clients`` threads, each with one keep-alive connection, send ``POST /generate`` (a
``--prompt-bytes`` prompt, ``--tokens`` new tokens, greedy) back to back for ``--seconds``
(closed loop: a client sends its next request when the last one is answered). Reported per
server: requests/s, generated tokens/s, p50/p95/p99 latency (ms), errors (requests still
failing, non-200 or no connection, after the retries below), and the mean batch a request was
decoded in (Serve's ``timings.batch_size``: the mean number of requests in the forwards that
decoded it, the replica batching continuously; 1 for bare). The servers alternate over ``--rounds`` rounds (the order rotates each round, so drift
in the machine's load hits all alike); the medians are compared. The 1-minute load average is
recorded before every round.

Fault case: a 2-replica batched application under the same load; after a third of
``--seconds`` one replica actor is killed (``ray.kill`` on the actor found with
``ray.util.list_named_actors``: Serve names replica actors ``SERVE_REPLICA::<app>#<deployment>#<id>``
in namespace ``serve``). What Serve retries itself: a request routed to a replica that died
before accepting it (Ray 2.60 ``ray/serve/_private/router.py``, ``route_and_send_request``: an
``ActorDiedError`` / ``ActorUnavailableError`` from the replica's accept/reject answer re-routes
the request to another replica). What it cannot: a request the dead replica had accepted (it
may have run; the proxy answers 500, ``ray/serve/_private/http_util.py``), since Serve does not
know a request is idempotent. A generation is (the same body and seed give the same tokens), so
the load clients retry a 500/502/503 up to ``RETRIES`` times with the same body. Reported: first
attempts that failed, split into those sent before the kill (in flight: the only ones that can
have reached the killed replica) and after it (must be 0), how many retries succeeded, requests
that failed for good (must be 0), and the recovery time (kill -> Serve reports the deployment
HEALTHY with 2 running replicas again, after it first reported fewer).

The model is a fresh random initialisation of the default LM dimensions (``ModelConfig()``,
``--smoke``: a tiny one): the cost of a forward pass does not depend on the weights. Ray runs
in-process (``ray.init(address="local")``, no dashboard). ``--smoke``: tiny model, 4 clients, 1 s,
1 round (the fault case: 3 s).

Last line: ``ratio: batched/unbatched = R  (batched/bare = S, mean batch M, p99 batched/bare = P;
targets >= 3, >= 2, >= 8, <= 1)``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HOST = "127.0.0.1"
SMOKE = {"clients": 4, "seconds": 1.0, "rounds": 1, "tokens": 4, "tiny": True}
RETRIES = 2  # a generation is idempotent given its seed: safe to resend after a replica died
RETRY_STATUS = (500, 502, 503)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def make_checkpoint(folder: str, tiny: bool) -> str:
    """A random-init checkpoint of the LM in the trainers' format (verified on load)."""
    import torch

    from workloads.lm_config import ModelConfig
    from workloads.model_torch import GPT, save_checkpoint

    torch.manual_seed(0)
    cfg = (
        ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=64) if tiny else ModelConfig()
    )
    return str(save_checkpoint(Path(folder) / "checkpoint_000000", GPT(cfg), 0))


# ------------------------------------------------------------------------------------ bare server


def bare_server(checkpoint: str, port: int, threads: int) -> None:
    """Serve ``POST /generate`` with the stdlib ThreadingHTTPServer, one request at a time."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from contract.args.serve_lm import ServeLmArgs
    from workloads.serve_lm import LmGenerator
    from workloads.serve_request import RequestError, parse_request

    args = ServeLmArgs.parse({"checkpoint": checkpoint, "torch_threads": threads})
    lm = LmGenerator(checkpoint, threads)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            pass

        def _send(self, status: int, doc: dict[str, Any]) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            n = int(self.headers.get("content-length") or 0)
            try:
                req = parse_request(self.rfile.read(n), args)
            except RequestError as e:
                self._send(e.status, {"error": str(e)})
                return
            with lock:
                (res,) = lm.generate([req])
            self._send(200, {"text": res["text"], "tokens": res["tokens"]})

    server = ThreadingHTTPServer((HOST, port), Handler)
    print("READY", flush=True)
    server.serve_forever()


# ------------------------------------------------------------------------------------------ load


def closed_loop(
    port: int,
    path: str,
    clients: int,
    seconds: float,
    body: bytes,
    kill_time: list[float] | None = None,
) -> dict[str, Any]:
    """``clients`` threads posting ``body`` back to back for ``seconds``; the figures. A 5xx or
    a broken connection is retried up to ``RETRIES`` times (same body); ``kill_time[0]``, when
    set by the fault case, splits the failed first attempts into sent before / after it."""
    lat: list[float] = []
    batch: list[float] = []
    tokens = [0]
    counts = {"errors": 0, "failed_first": 0, "failed_before_kill": 0, "failed_after_kill": 0,
              "retried_ok": 0}  # fmt: skip
    failures: list[str] = []
    inside: list[tuple[float, float, float, float]] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            for attempt in range(RETRIES + 1):
                sent = time.perf_counter()
                try:
                    conn.request("POST", path, body, {"content-type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    status = r.status
                except Exception:
                    status, data = 0, b""
                    conn.close()
                    conn = http.client.HTTPConnection(HOST, port, timeout=60)
                if status == 200 or (status and status not in RETRY_STATUS):
                    break
                with lock:
                    if len(failures) < 3:  # what a failure said (the summary JSON shows it)
                        failures.append(f"{status} {data[:300]!r}")
                    if attempt == 0:
                        counts["failed_first"] += 1
                        if kill_time and kill_time[0] and sent >= kill_time[0]:
                            counts["failed_after_kill"] += 1
                        else:
                            counts["failed_before_kill"] += 1
            ok = status == 200
            doc = json.loads(data) if ok else {}
            dt = time.perf_counter() - t0
            with lock:
                if ok:
                    lat.append(dt)
                    tm = doc.get("timings") or {}
                    batch.append(float(tm.get("batch_size", 1)))
                    if "total_ms" in tm:  # where the time went: in the replica vs outside it
                        inside.append((tm["queue_ms"], tm["generate_ms"], tm["total_ms"], dt))
                    tokens[0] += len(doc.get("tokens", []))
                    counts["retried_ok"] += attempt > 0
                else:
                    counts["errors"] += 1
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [lat[0] if lat else 0.0] * 99
    return {
        "requests_per_s": len(lat) / wall,
        "tokens_per_s": tokens[0] / wall,
        "p50_ms": q[49] * 1000,
        "p95_ms": q[94] * 1000,
        "p99_ms": q[98] * 1000,
        **counts,
        "failures": failures,
        # means over answered requests (Serve only): batch queue wait, decode, the replica's
        # whole handling, and the client's latency minus that (proxy, routing, HTTP, client)
        **{
            k: statistics.fmean(x[i] for x in inside) if inside else 0.0
            for i, k in enumerate(("replica_queue_ms", "replica_generate_ms", "replica_total_ms"))
        },
        "outside_replica_ms": statistics.fmean(x[3] * 1000 - x[2] for x in inside)
        if inside
        else 0.0,
        "requests": len(lat),
        "mean_batch": statistics.fmean(batch) if batch else 0.0,
    }


def _replicas(app: str) -> tuple[str, int]:
    from ray import serve

    st = serve.status().applications.get(app)
    if st is None:
        return "MISSING", 0
    (dep,) = st.deployments.values()
    running = dep.replica_states.get("RUNNING", 0)
    return str(getattr(dep.status, "value", dep.status)), running


def fault_case(port: int, clients: int, seconds: float, body: bytes) -> dict[str, Any]:
    """Load on the 2-replica app ``fault``; one replica killed after seconds/3."""
    import ray

    out: dict[str, Any] = {}
    kill_time = [0.0]

    def killer() -> None:
        time.sleep(seconds / 3)
        names = [
            a["name"]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == "serve" and "fault#" in a["name"] and "REPLICA" in a["name"]
        ]
        if not names:
            out["killed"] = None
            return
        victim = sorted(names)[0]
        handle = ray.get_actor(victim, namespace="serve")
        t_kill = time.perf_counter()
        kill_time[0] = t_kill
        ray.kill(handle, no_restart=True)
        noticed = None
        while time.perf_counter() - t_kill < 120:
            status, running = _replicas("fault")
            if noticed is None and (running < 2 or status != "HEALTHY"):
                noticed = time.perf_counter() - t_kill  # Serve saw the replica die
            if noticed is not None and running == 2 and status == "HEALTHY":
                break
            time.sleep(0.1)
        out["detected_s"] = noticed
        out["recovery_s"] = time.perf_counter() - t_kill
        out["killed"] = victim

    k = threading.Thread(target=killer)
    k.start()
    res = closed_loop(port, "/fault/generate", clients, seconds, body, kill_time)
    k.join()
    res.update(out)
    return res


# ------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=16, help="new tokens per request")
    p.add_argument("--prompt-bytes", type=int, default=32)
    p.add_argument(
        "--threads", type=int, default=1, help="CPUs per server: replica num_cpus, bare threads"
    )
    p.add_argument(
        "--batch-wait", type=float, default=0.01, help="batched app's batch_wait_timeout_s"
    )
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--bare-server", nargs=2, metavar=("CHECKPOINT", "PORT"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.bare_server:
        bare_server(a.bare_server[0], int(a.bare_server[1]), a.threads)
        return
    tiny = False
    if a.smoke:
        a.clients, a.seconds, a.rounds, a.tokens = (
            SMOKE["clients"], SMOKE["seconds"], SMOKE["rounds"], SMOKE["tokens"],
        )  # fmt: skip
        tiny = True
    os.environ.pop("RAY_ADDRESS", None)
    import ray
    from ray import serve

    from workloads.serve_lm import build_app

    tmp = tempfile.mkdtemp(prefix="serve-load-")
    ckpt = make_checkpoint(tmp, tiny)
    body = json.dumps(
        {"prompt": "x" * a.prompt_bytes, "max_new_tokens": a.tokens, "temperature": 0}
    ).encode()
    bare_port, serve_port = free_port(), free_port()
    bare = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--bare-server", ckpt, str(bare_port),
         "--threads", str(a.threads)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    loads: list[float] = []
    try:
        assert bare.stdout is not None and bare.stdout.readline().strip() == "READY"
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
        serve.start(http_options={"host": HOST, "port": serve_port})
        common = {
            "checkpoint": ckpt,
            "num_cpus": a.threads,  # the replica sets its torch threads from its Ray CPUs
            "max_ongoing_requests": max(a.clients, 1),
            "max_new_tokens": max(a.tokens, 1),
        }
        apps = {
            "serve-batched": {"max_batch_size": a.clients, "batch_wait_timeout_s": a.batch_wait},
            "serve-unbatched": {"max_batch_size": 1},
        }
        for name, extra in apps.items():
            serve.run(build_app({**common, **extra}), name=name, route_prefix=f"/{name}")
        targets = {
            "serve-batched": (serve_port, "/serve-batched/generate"),
            "serve-unbatched": (serve_port, "/serve-unbatched/generate"),
            "bare": (bare_port, "/generate"),
        }
        for port, path in targets.values():  # warm-up
            closed_loop(port, path, a.clients, 0.5 if tiny else 2.0, body)
        names = list(targets)
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for r in range(a.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            loads.append(os.getloadavg()[0])
            for n in order:
                runs[n].append(closed_loop(*targets[n], a.clients, a.seconds, body))
        med = {
            n: {k: statistics.median(x[k] for x in runs[n]) for k, v in runs[n][0].items()
                if isinstance(v, (int, float))}
            for n in names
        }  # fmt: skip

        fault_args = {**common, "max_batch_size": a.clients, "min_replicas": 2, "max_replicas": 2,
                      "num_cpus": 0.5, "batch_wait_timeout_s": a.batch_wait}  # fmt: skip
        serve.run(build_app(fault_args), name="fault", route_prefix="/fault")
        loads.append(os.getloadavg()[0])
        fault = fault_case(serve_port, a.clients, max(a.seconds, 3.0 if tiny else 15.0), body)
    finally:
        bare.kill()
        bare.wait()
        if ray.is_initialized():
            serve.shutdown()
            ray.shutdown()
    loads.append(os.getloadavg()[0])
    print(
        f"load: {a.clients} clients x {a.seconds:g} s x {a.rounds} rounds, {a.tokens} tokens per "
        f"request, {a.threads} CPU(s) per server; 1-min loadavg per round "
        f"{' '.join(f'{x:.2f}' for x in loads)} on {os.cpu_count()} CPUs ({cpu_model()})"
    )
    print(
        f"{'server':<18}{'req/s':>9}{'tokens/s':>10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
        f"{'errors':>8}{'batch':>7}"
    )
    for n in names:
        m = med[n]
        print(
            f"{n:<18}{m['requests_per_s']:>9.1f}{m['tokens_per_s']:>10.0f}{m['p50_ms']:>9.1f}"
            f"{m['p95_ms']:>9.1f}{m['p99_ms']:>9.1f}{m['errors']:>8.0f}{m['mean_batch']:>7.1f}"
        )
    for n in names[:2]:
        m = med[n]
        print(
            f"{n}: mean ms in the replica {m['replica_total_ms']:.1f} (batch queue "
            f"{m['replica_queue_ms']:.1f}, decode {m['replica_generate_ms']:.1f}), outside it "
            f"{m['outside_replica_ms']:.1f} (proxy, routing, HTTP, client)"
        )
    print(
        f"fault (2 replicas, one killed): {fault['requests_per_s']:.1f} req/s; first attempts "
        f"failed {fault['failed_first']} (sent before the kill {fault['failed_before_kill']}, "
        f"after {fault['failed_after_kill']}), retried ok {fault['retried_ok']}, failed for good "
        f"{fault['errors']}; replica death seen after "
        f"{fault.get('detected_s') or float('nan'):.1f} s, recovery "
        f"{fault.get('recovery_s', float('nan')):.1f} s"
    )
    summary = {"median": med, "rounds": runs, "fault": fault, "loadavg": loads}
    print(json.dumps(summary, default=str))
    tps = {n: med[n]["tokens_per_s"] for n in names}
    b_u = tps["serve-batched"] / tps["serve-unbatched"] if tps["serve-unbatched"] else None
    b_b = tps["serve-batched"] / tps["bare"] if tps["bare"] else None
    p99 = med["serve-batched"]["p99_ms"] / med["bare"]["p99_ms"] if med["bare"]["p99_ms"] else None

    def f(x: float | None) -> str:
        return f"{x:.2f}" if x else "n/a"

    print(
        f"ratio: batched/unbatched = {f(b_u)}  (batched/bare = {f(b_b)}, mean batch "
        f"{med['serve-batched']['mean_batch']:.1f}, p99 batched/bare = {f(p99)}; "
        "targets >= 3, >= 2, >= 8, <= 1)"
    )


def cpu_model() -> str:
    """``model name`` of /proc/cpuinfo and whether it has AVX-512 / AMX (Linux; else the
    platform's processor string)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform

        return platform.processor() or "unknown CPU"
    name = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                 if ln.startswith("model name")), "unknown CPU")  # fmt: skip
    flags = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                      if ln.startswith("flags")), []))  # fmt: skip
    has = [x for x, f in (("AVX-512", "avx512f"), ("AMX", "amx_tile")) if f in flags]
    return f"{name}, {'+'.join(has) or 'no AVX-512/AMX'}"


if __name__ == "__main__":
    main()
