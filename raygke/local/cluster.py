"""The local Ray cluster: one ``ray start --block`` process per node, recorded in ``state.json``.

Layout of a stack's folder ``<root>/<stack>/`` (``root`` from ``local.root`` in the stack file, or
the environment variable ``RAYGKE_LOCAL_ROOT``; relative roots are relative to the current
directory)::

    state.json       pids, ports, address, dashboard URL, bucket folders (see :func:`start_cluster`)
    auth_token       the cluster's Ray auth token (mode 0600; Ray token authentication is on)
    logs/<node>.log  stdout/stderr of each ``ray start`` process
    runs/<YYYYmmdd-HHMMSS>/run.log   the job logs of one ``raygke local run`` (Ray's lines too)
    buckets/{datasets,checkpoints,artifacts}/   the local stand-ins for the GCS buckets

Each node is a separate ``ray start --block`` started with ``start_new_session=True``: its pid is
also the session id of every process it spawns (GCS, raylet, dashboard, workers), so
:func:`stop_nodes` stops exactly those processes and nothing else. Linux only (reads ``/proc``).

Every node's IP is 127.0.0.1, so every server of the cluster (GCS, raylets, object managers,
dashboard and its agents, runtime-env agents, metrics exporters, Ray Client server, workers)
listens on 127.0.0.1 only (see :data:`raygke.local.ray_settings.LOOPBACK_RAY_START`); :func:`cluster_sockets` lists them.
At most :data:`MAX_NODES` CPU workers and as many emulated TPU hosts. An interrupted
:func:`start_cluster` stops every node it started.

Only the standard library is imported at module level; Ray is imported inside the functions that
talk to the cluster.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contract.errors import ConfigurationError
from raygke.local import gcs_ft as gcs
from raygke.local.procs import (
    LOCALHOST,
    ListeningSocket,
    cluster_ports,
    free_port,
    interrupts_deferred,
    is_alive,
    listening_sockets,
    port_in_use,
    proc_start_ticks,
    session_pids,
)
from raygke.local.ray_settings import (
    LOCAL_DRAIN_ENV,
    LOCAL_DRAIN_S,
    LOCAL_PARQUET_FOOTER_ACTORS,
    LOCAL_PARQUET_FOOTER_ACTORS_ENV,
    LOCAL_PREEMPTION_WATCHER,
    LOCAL_PREEMPTION_WATCHER_ENV,
    LOCAL_TRAIN_POLL_ENV,
    LOCAL_TRAIN_POLL_S,
    LOOPBACK_HEAD_ENV,
    LOOPBACK_RAY_START,
)

BUILTIN_STACK = "local"
ROOT_ENV = "RAYGKE_LOCAL_ROOT"
BUCKETS = ("datasets", "checkpoints", "artifacts")
# The most CPU worker nodes, and the most emulated TPU hosts, one ``ray start`` process each
# (each node runs a raylet, agents and workers: about 0.5 GB and a core while starting).
MAX_NODES = 16


class LocalError(ConfigurationError):
    """A user-facing failure of the local environment; ``str(e)`` is the one-line message. The
    commands print it (``error: <message>``, exit 1, or 2 for a bad option); one no command
    catches reaches :func:`raygke.cli.main` as any configuration error does (exit 1)."""


# ----------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class LocalTarget:
    """Which local cluster a command acts on.

    Attributes:
        stack: stack name (``local`` for the built-in environment).
        workers: CPU worker nodes besides the head.
        cpus_per_node: ``--num-cpus`` of every CPU node.
        gcs_port: the head's GCS port (the cluster address is ``127.0.0.1:<gcs_port>``).
        dashboard_port: dashboard / Jobs API port on 127.0.0.1.
        dir: ``<root>/<stack>``, absolute.
    """

    stack: str
    workers: int
    cpus_per_node: int
    gcs_port: int
    dashboard_port: int
    dir: Path

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def token_file(self) -> Path:
        return self.dir / "auth_token"

    @property
    def ray_temp_dir(self) -> str:
        """Ray's ``--temp-dir`` for this cluster: its own, so that a job driver's ``auto`` address
        resolves to this cluster even when other Ray clusters run on the machine. Short
        (``/tmp/raygke-<10 hex>``): Ray's Unix socket paths live under it (107-byte limit)."""
        import hashlib

        return f"/tmp/raygke-{hashlib.sha1(str(self.dir).encode()).hexdigest()[:10]}"

    def run_log(self, stamp: str) -> Path:
        """The log file of the ``raygke local run`` started at ``stamp`` (``YYYYmmdd-HHMMSS``)."""
        return self.dir / "runs" / stamp / "run.log"

    @property
    def buckets(self) -> dict[str, str]:
        return {b: str(self.dir / "buckets" / b) for b in BUCKETS}


def make_target(stack: str, local: Any, workers: int | None = None) -> LocalTarget:
    """Build a :class:`LocalTarget` from a ``LocalConfig`` (``components.stack``).

    ``workers`` overrides ``local.workers``; ``$RAYGKE_LOCAL_ROOT`` overrides ``local.root``;
    ports unset in the stack file are the recorded or free ones (:func:`cluster_ports`).

    Raises:
        LocalError: ``workers`` is negative or above 16.
    """
    n = local.workers if workers is None else workers
    if not 0 <= n <= MAX_NODES:
        raise LocalError(f"--workers {n} is out of range; allowed: 0..{MAX_NODES}")
    root = Path(os.environ.get(ROOT_ENV) or local.root).expanduser()
    folder = root.resolve() / stack
    gcs, dash = cluster_ports(folder, local.gcs_port, local.dashboard_port)
    return LocalTarget(
        stack=stack, workers=n, cpus_per_node=local.cpus_per_node, gcs_port=gcs,
        dashboard_port=dash, dir=folder,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- processes


def require_ray() -> None:
    """Raises LocalError naming the fix when Ray is not importable in this Python."""
    if importlib.util.find_spec("ray") is None:
        raise LocalError(
            f"ray is not installed in {sys.executable}; install the workloads extra: "
            "pip install -e '.[workloads]' (or run `make local`)"
        )


def ray_command() -> list[str]:
    """The ``ray`` CLI of this interpreter's environment (not whatever is first on PATH)."""
    exe = Path(sys.executable).parent / "ray"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def use_cluster_auth(target: LocalTarget) -> None:
    """Point this process's Ray client at the cluster's token (call before importing ray)."""
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(target.token_file)
    os.environ.pop("RAY_ADDRESS", None)


# The local nodes' Ray settings and their reasons: raygke/local/ray_settings.py.


def node_env(target: LocalTarget, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of a ``ray start`` process and so of every job on it.

    This interpreter's ``bin`` folder goes first on PATH so that a job's ``python -m workloads.x``
    runs the project's environment; token auth uses the cluster's own token file; Ray Train's
    controller polls every :data:`LOCAL_TRAIN_POLL_S` seconds, starts no preemption watcher
    (:data:`LOCAL_PREEMPTION_WATCHER`), a Parquet listing uses
    :data:`LOCAL_PARQUET_FOOTER_ACTORS` footer-reading actor(s), and a node stops without
    draining first (:data:`LOCAL_DRAIN_S`), unless the caller's environment sets
    :data:`LOCAL_TRAIN_POLL_ENV` / :data:`LOCAL_PREEMPTION_WATCHER_ENV` /
    :data:`LOCAL_PARQUET_FOOTER_ACTORS_ENV` / :data:`LOCAL_DRAIN_ENV`.
    """
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = str(target.token_file)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env.setdefault(LOCAL_TRAIN_POLL_ENV, LOCAL_TRAIN_POLL_S)
    env.setdefault(LOCAL_DRAIN_ENV, LOCAL_DRAIN_S)
    env.setdefault(LOCAL_PREEMPTION_WATCHER_ENV, LOCAL_PREEMPTION_WATCHER)
    env.setdefault(LOCAL_PARQUET_FOOTER_ACTORS_ENV, LOCAL_PARQUET_FOOTER_ACTORS)
    env.update(extra or {})
    return env


# -------------------------------------------------------------------------------------- state


@dataclass
class NodeRecord:
    """One ``ray start --block`` process we started.

    ``pid`` is also the session id of every process it spawned; ``start_ticks`` guards against
    pid reuse.
    """

    name: str
    role: str  # "head" | "worker" | "tpu-host"
    pid: int
    start_ticks: int | None
    num_cpus: int
    log: str
    command: list[str]
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return is_alive(self.pid, self.start_ticks)


def read_state(target: LocalTarget) -> dict[str, Any] | None:
    """The recorded state of the stack's cluster, or None when none is recorded.

    Raises:
        LocalError: state.json exists but is not valid JSON.
    """
    try:
        return json.loads(target.state_file.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise LocalError(f"cannot read {target.state_file}: {e}; remove it and retry") from None


def write_state(target: LocalTarget, state: Mapping[str, Any]) -> None:
    """Write state.json atomically (temporary file, then rename)."""
    target.dir.mkdir(parents=True, exist_ok=True)
    tmp = target.state_file.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    tmp.replace(target.state_file)


def nodes_of(state: Mapping[str, Any] | None) -> list[NodeRecord]:
    """The node records of a state dict (empty for None)."""
    return [NodeRecord(**n) for n in (state or {}).get("nodes", [])]


# -------------------------------------------------------------------------------- start, stop


@dataclass(frozen=True)
class ExtraNode:
    """A node beyond the CPU workers (an emulated TPU host): its resources, labels and env."""

    name: str
    role: str
    num_cpus: int
    resources: dict[str, float]
    labels: dict[str, str]
    env: dict[str, str]


def _log_tail(path: str, lines: int = 8) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def _launch(
    target: LocalTarget,
    name: str,
    role: str,
    args: list[str],
    num_cpus: int,
    resources: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    script: str = LOOPBACK_RAY_START,
) -> NodeRecord:
    logs = target.dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{name}.log"
    cmd = [sys.executable, "-c", script, "start", "--block", *args]
    cmd += ["--num-cpus", str(num_cpus)]
    env = {**(env or {}), **(LOOPBACK_HEAD_ENV if role == "head" else {})}
    # Each node gets its own temp dir: nodes sharing one also share its session log folder,
    # and every node's log monitor then forwards every worker's log line (each line printed
    # once per node).
    temp_dir = target.ray_temp_dir if role == "head" else f"{target.ray_temp_dir}-{name}"
    cmd += ["--node-name", name, "--temp-dir", temp_dir, "--disable-usage-stats"]
    if resources:
        cmd += ["--resources", json.dumps(dict(resources), sort_keys=True)]
    if labels:
        cmd += ["--labels", ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=node_env(target, env),
            cwd=target.dir,
            start_new_session=True,
        )
    # The Popen object is dropped on purpose: the node outlives this command; ``down`` stops it
    # by pid. Mark it reaped so that Python does not warn about a still-running child.
    proc.returncode = 0
    return NodeRecord(
        name=name,
        role=role,
        pid=proc.pid,
        start_ticks=proc_start_ticks(proc.pid),
        num_cpus=num_cpus,
        log=str(log_path),
        command=cmd,
        resources=dict(resources or {}),
        labels=dict(labels or {}),
        env=dict(env or {}),
    )


def dashboard_url(target: LocalTarget) -> str:
    return f"http://{LOCALHOST}:{target.dashboard_port}"


# What ``ray start`` prints when its raylet did not register with the GCS within 30 s (Ray 2.60
# ray/_private/node.py ``Node.__init__``).
STARTUP_TIMEOUT_SIGN = "timed out during startup"


def _timed_out_at_start(node: NodeRecord) -> bool:
    return STARTUP_TIMEOUT_SIGN in _log_tail(node.log, lines=40)


def _check_started(nodes: list[NodeRecord]) -> None:
    for n in nodes:
        if not n.alive:
            tail = _log_tail(n.log)
            raise LocalError(f"node {n.name} (pid {n.pid}) exited during start; {n.log}: {tail}")


# `up` waits twice (head, then every node); a poll is two small HTTP calls to the local
# dashboard, and each second of the old 1 s poll was on average half a second of nothing.
READY_POLL_S = 0.25


def wait_ready(target: LocalTarget, nodes: list[NodeRecord], timeout_s: float = 120.0) -> list[Any]:
    """Wait until the Jobs API answers and every recorded node is ALIVE in Ray's node table
    (polled every :data:`READY_POLL_S` seconds).

    Returns:
        Ray's ``NodeState`` list (``ray.util.state.list_nodes``).

    Raises:
        LocalError: a ``ray start`` process exited, or ``timeout_s`` (seconds) passed.
    """
    use_cluster_auth(target)
    from ray.job_submission import JobSubmissionClient
    from ray.util.state import list_nodes

    url = dashboard_url(target)
    deadline = time.monotonic() + timeout_s
    want = {n.name for n in nodes}
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        _check_started(nodes)
        try:
            JobSubmissionClient(url)
            states = list_nodes(address=url, raise_on_missing_output=False)
            alive = {s.node_name for s in states if s.state == "ALIVE"}
            if want <= alive:
                return states
            last_error = f"nodes not alive yet: {', '.join(sorted(want - alive))}"
        except Exception as e:  # the dashboard is still starting: connection refused, 5xx, ...
            last_error = str(e).splitlines()[0] if str(e) else type(e).__name__
        time.sleep(READY_POLL_S)
    raise LocalError(f"the cluster did not become ready within {timeout_s:.0f} s ({last_error})")


def start_cluster(
    target: LocalTarget,
    extra_nodes: list[ExtraNode] | None = None,
    tpu: Mapping[str, Any] | None = None,
    on_progress: Callable[[str], None] = lambda _msg: None,
    gcs_ft: bool = False,
) -> dict[str, Any]:
    """Start the head and workers (plus ``extra_nodes``), wait until ready, record state.json.
    ``gcs_ft``: a local Redis holds the GCS, the head restarts (:mod:`raygke.local.gcs_ft`).

    Returns:
        The state dict: ``stack``, ``address`` (``127.0.0.1:<gcs_port>``), ``dashboard_url``,
        ``gcs_port``, ``dashboard_port``, ``buckets`` ({datasets, checkpoints, artifacts} ->
        folder), ``metrics`` ({node name -> ``http://127.0.0.1:<port>/metrics``}: each node's
        Prometheus endpoint, ``ray start --metrics-export-port``, where Ray's and Serve's metrics
        are exported as on GKE's port 8080), ``nodes`` (list of :class:`NodeRecord` dicts), ``tpu`` (spec and hosts or
        None), ``token_file``, ``started_at`` (unix seconds).

    Raises:
        LocalError: a port is in use, a node exits during start (one whose raylet timed out
            registering with the GCS is started once more first), or readiness times out. The
            processes started so far are stopped before raising.
    """
    require_ray()
    for what, port in (
        ("local.gcs_port", target.gcs_port),
        ("local.dashboard_port", target.dashboard_port),
    ):
        if port_in_use(port):
            raise LocalError(
                f"port {port} ({what}) is in use on this machine; stop what holds it, or set "
                f"another {what} in the stack file (or leave it unset: a free port is taken)"
            )
    target.dir.mkdir(parents=True, exist_ok=True)
    for folder in target.buckets.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    if not target.token_file.exists():
        fd = os.open(target.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))

    address = f"{LOCALHOST}:{target.gcs_port}"
    state: dict[str, Any] = {
        "stack": target.stack,
        "address": address,
        "dashboard_url": dashboard_url(target),
        "gcs_port": target.gcs_port,
        "dashboard_port": target.dashboard_port,
        "buckets": target.buckets,
        "token_file": str(target.token_file),
        "ray_temp_dir": target.ray_temp_dir,
        "tpu": dict(tpu) if tpu else None,
        "started_at": time.time(),
        "status": "starting",
        "nodes": [],
        "metrics": {},
    }
    nodes: list[NodeRecord] = []
    head_env, head_script, worker_env = {}, LOOPBACK_RAY_START, {}
    if gcs_ft:  # state["gcs_ft"]: the Redis; raises gcs.RedisError
        on_progress("starting redis-server")
        ft = gcs.prepare(target.dir, target.stack, LOOPBACK_RAY_START)
        state["gcs_ft"], head_env, head_script, worker_env = ft

    def record() -> None:
        state["nodes"] = [asdict(n) for n in nodes]
        write_state(target, state)

    launched: dict[str, tuple[Any, ...]] = {}

    def launch(*args: Any) -> None:
        # a node is recorded before an interrupt can unwind: none is ever started unrecorded
        with interrupts_deferred():
            nodes.append(_launch(target, *args))
            launched[args[0]] = args
            record()

    def wait_all() -> None:
        # ``ray start`` exits when its raylet has not registered with the GCS in 30 s (a constant,
        # ray/_private/node.py; a loaded machine): started once more, its first log <name>.log.1
        try:
            wait_ready(target, nodes)
            return
        except LocalError:
            timed_out = [n for n in nodes if not n.alive and _timed_out_at_start(n)]
            if not timed_out:
                raise
        for n in timed_out:
            on_progress(f"{n.name} timed out registering with Ray's GCS; starting it again")
            with interrupts_deferred():
                left = stop_nodes([n])
                if left:  # kept recorded: the cleanup below and `down` stop them
                    raise LocalError(
                        f"node {n.name} timed out during start and pids {left} of its session "
                        "did not stop; `raygke local down` stops them"
                    )
                nodes.remove(n)
                Path(n.log).replace(f"{n.log}.1")
                record()
            launch(*launched[n.name])
        wait_ready(target, nodes)

    try:
        on_progress("starting head")
        head_args = [
            "--head",
            "--node-ip-address",
            LOCALHOST,
            "--port",
            str(target.gcs_port),
            "--include-dashboard",
            "true",
            "--dashboard-host",
            LOCALHOST,
            "--dashboard-port",
            str(target.dashboard_port),
            "--ray-client-server-port",
            str(free_port()),
            "--dashboard-agent-listen-port",
            str(free_port()),
            *_metrics_args(state, "head"),
        ]
        launch("head", "head", head_args, target.cpus_per_node, {}, {}, head_env, head_script)
        wait_all()
        worker_args = ["--address", address, "--node-ip-address", LOCALHOST, "--num-gpus", "0"]
        workers = [
            ExtraNode(f"worker-{i}", "worker", target.cpus_per_node, {}, {}, {})
            for i in range(1, target.workers + 1)
        ]
        for x in [*workers, *(extra_nodes or [])]:
            on_progress(f"starting {x.name}")
            args = [
                *worker_args,
                "--dashboard-agent-listen-port",
                str(free_port()),
                *_metrics_args(state, x.name),
            ]
            launch(x.name, x.role, args, x.num_cpus, x.resources, x.labels, {**x.env, **worker_env})
        on_progress("waiting for all nodes")
        wait_all()
    except BaseException:
        on_progress(f"stopping {len(nodes)} node(s)")
        with interrupts_deferred():  # a second Ctrl-C must not cut the cleanup short
            left = stop_nodes(nodes) + gcs.stop_redis(state.get("gcs_ft"))
            if not left:  # else state.json stays, so that `down` can finish the job
                with contextlib.suppress(FileNotFoundError):
                    target.state_file.unlink()
        raise
    state["status"] = "up"
    record()
    return state


def _metrics_args(state: dict[str, Any], node: str) -> list[str]:
    """``--metrics-export-port <free port>`` for ``node``, its URL recorded in
    ``state["metrics"]`` (the metrics agent listens on the node's IP, 127.0.0.1 here:
    https://docs.ray.io/en/latest/cluster/metrics.html)."""
    port = free_port()
    state["metrics"][node] = f"http://{LOCALHOST}:{port}/metrics"
    return ["--metrics-export-port", str(port)]


def stop_nodes(nodes: list[NodeRecord], grace_s: float = 15.0) -> list[int]:
    """Stop the recorded ``ray start`` processes and every process in their sessions.

    SIGTERM to each recorded process (Ray's own shutdown path), then SIGKILL to whatever is left
    in their sessions after ``grace_s`` seconds. A recorded pid now used by another process (start
    time differs) is left alone.

    Returns:
        pids still running afterwards (empty on success).
    """
    sids = []
    for n in reversed(nodes):  # workers first, then the head
        now = proc_start_ticks(n.pid)
        if now is not None and n.start_ticks is not None and now != n.start_ticks:
            continue  # pid reused by an unrelated process: not ours
        sids.append(n.pid)
        if now is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(n.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while session_pids(sids) and time.monotonic() < deadline:
        time.sleep(0.25)
    left = session_pids(sids)
    if left:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while session_pids(sids) and time.monotonic() < deadline:
            time.sleep(0.1)
    return session_pids(sids)


def cluster_sockets(state: Mapping[str, Any] | None) -> list[ListeningSocket]:
    """:func:`listening_sockets` of every process in the recorded nodes' sessions."""
    return listening_sockets(session_pids(n.pid for n in nodes_of(state)))


def cluster_nodes(target: LocalTarget) -> list[Any]:
    """Ray's node table (``NodeState`` list) through the dashboard; raises on no answer."""
    use_cluster_auth(target)
    from ray.util.state import list_nodes

    return list_nodes(address=dashboard_url(target), raise_on_missing_output=False, timeout=10)
