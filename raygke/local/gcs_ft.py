"""GCS fault tolerance on the local cluster (``raygke local up --gcs-ft``): a local
``redis-server`` the head's GCS keeps its state in, and a head that restarts, as KubeRay runs a
RayService with ``gcsFaultToleranceOptions`` (:mod:`components.gcsft`).

* Redis: ``redis-server`` (the Debian package ``redis-server``; ``make system-deps`` installs
  it) started by ``up`` with ``start_new_session=True`` like every node, recorded in
  ``state.json`` under ``gcs_ft`` (pid, start time, port, log) and stopped by ``down``. It
  listens on 127.0.0.1 at a free port, keeps nothing on disk (``save ""``, ``appendonly no``:
  the cluster's lifetime is the Redis's) and requires a password (AUTH, as Memorystore does on
  GKE), kept in ``<root>/<stack>/redis_password`` (mode 0600). Its configuration comes on stdin
  (``redis-server -``, https://redis.io/docs/latest/operate/oss_and_stack/management/config/),
  so the password is on no command line of Redis.
* the head: ``RAY_REDIS_ADDRESS=127.0.0.1:<port>`` (Ray 2.60 ``ray/_private/node.py``: external
  Redis for the GCS), ``RAY_external_storage_namespace`` (the key prefix, as KubeRay sets it,
  ``RAY_EXTERNAL_STORAGE_NS`` in its constant.go) and ``ray start --head --redis-password``.
  ``ray start --block`` stops every process of its node when one of them exits, the GCS included
  (``ray/scripts/scripts.py``, the ``--block`` loop); on GKE the kubelet then restarts the head
  container and the new GCS recovers from Redis. Here :data:`SUPERVISED_HEAD` does the kubelet's
  part: it runs the head's ``ray start`` and starts it again, with the same ports, when it exits
  on its own (SIGTERM from ``down`` stops both). The password file is read by the supervisor, so
  the recorded command (``state.json``) does not hold it.
* workers: ``RAY_gcs_rpc_server_reconnect_timeout_s=600``, KubeRay's value for worker pods under
  GCS fault tolerance (``DefaultWorkerRayGcsReconnectTimeoutS``; Ray's default 60 s): their
  raylets wait for the restarted GCS instead of exiting.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from contract.errors import ConfigurationError
from raygke.local.procs import LOCALHOST, free_port, is_alive, proc_start_ticks, session_pids

REDIS_SERVER = "redis-server"
PASSWORD_FILE_ENV = "RAYGKE_REDIS_PASSWORD_FILE"
WORKER_RECONNECT_ENV = {"RAY_gcs_rpc_server_reconnect_timeout_s": "600"}
RESTART_DELAY_S = 1.0  # between a head's exit and its restart (the kubelet backs off from 10 s)


class RedisError(ConfigurationError):
    """``redis-server`` is missing or did not start; ``str(e)`` is the one-line reason (under the
    one configuration-error root, :mod:`contract.errors`)."""


def redis_server() -> str:
    """The ``redis-server`` executable on PATH.

    Raises:
        RedisError: none is installed (with the command that installs it).
    """
    found = shutil.which(REDIS_SERVER)
    if found is None:
        raise RedisError(
            "--gcs-ft needs redis-server, which is not installed: `sudo apt-get install -y "
            "redis-server` (Debian/Ubuntu; `make system-deps` runs it)"
        )
    return found


def _password(folder: Path) -> Path:
    path = folder / "redis_password"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(24))
    return path


def _answers(port: int, password: str) -> bool:
    """Whether Redis on 127.0.0.1:``port`` answers ``AUTH`` + ``PING`` (RESP inline commands)."""
    try:
        with socket.create_connection((LOCALHOST, port), timeout=1.0) as s:
            s.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            data = b""
            while b"PONG" not in data and len(data) < 256:
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
            return b"+OK" in data and b"PONG" in data
    except OSError:
        return False


def start_redis(folder: Path, timeout_s: float = 30.0) -> dict[str, Any]:
    """Start ``redis-server`` for the cluster in ``folder`` (module docstring) and wait until it
    answers.

    Returns:
        ``{"pid", "start_ticks", "port", "log", "password_file", "address"}`` (address
        ``127.0.0.1:<port>``).

    Raises:
        RedisError: not installed, or no answer within ``timeout_s`` seconds (stopped then).
    """
    exe = redis_server()
    pw_file = _password(folder)
    password = pw_file.read_text().strip()
    port = free_port()
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    log = folder / "logs" / "redis.log"
    conf = (
        f'bind {LOCALHOST}\nport {port}\nprotected-mode yes\nsave ""\nappendonly no\n'
        f"dir {folder}\nrequirepass {password}\n"
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "-"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=folder,
            start_new_session=True,
        )
    assert proc.stdin is not None
    proc.stdin.write(conf.encode())
    proc.stdin.close()
    record = {
        "pid": proc.pid,
        "start_ticks": proc_start_ticks(proc.pid),
        "port": port,
        "log": str(log),
        "password_file": str(pw_file),
        "address": f"{LOCALHOST}:{port}",
    }
    proc.returncode = 0  # it outlives this command; `down` stops it by pid
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _answers(port, password):
            return record
        if not is_alive(proc.pid, record["start_ticks"]):
            break
        time.sleep(0.1)
    stop_redis(record)
    tail = " | ".join(log.read_text(errors="replace").splitlines()[-5:])
    raise RedisError(f"redis-server did not start on port {port}: {tail}")


def stop_redis(record: dict[str, Any] | None, grace_s: float = 5.0) -> list[int]:
    """Stop the recorded ``redis-server`` (SIGTERM, then SIGKILL after ``grace_s``); a pid now
    used by another process is left alone. Returns the pids still running."""
    if not record:
        return []
    pid = int(record["pid"])
    if is_alive(pid, record.get("start_ticks")):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while session_pids([pid]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for left in session_pids([pid]):
        with contextlib.suppress(ProcessLookupError):
            os.kill(left, signal.SIGKILL)
    return session_pids([pid])


def head_env(record: dict[str, Any], stack: str) -> dict[str, str]:
    """The head's environment for GCS fault tolerance (module docstring)."""
    return {
        "RAY_REDIS_ADDRESS": record["address"],
        "RAY_external_storage_namespace": f"raygke-{stack}",
        PASSWORD_FILE_ENV: record["password_file"],
    }


def prepare(
    folder: Path, stack: str, ray_start: str
) -> tuple[dict[str, Any], dict[str, str], str, dict[str, str]]:
    """Start the Redis of the cluster in ``folder`` (:func:`start_redis`) and return its record,
    the head's environment (:func:`head_env`), the head's ``python -c`` program
    (:func:`supervised_head` of ``ray_start``) and the workers' extra environment.

    Raises:
        RedisError: as :func:`start_redis`.
    """
    record = start_redis(folder)
    return record, head_env(record, stack), supervised_head(ray_start), dict(WORKER_RECONNECT_ENV)


def supervised_head(ray_start: str) -> str:
    """The ``python -c`` program of a restarting head: it runs ``python -c <ray_start> ARGS
    --redis-password <password file's content>`` and runs it again when it exits on its own;
    SIGTERM (``raygke local down``) is passed on and ends the loop."""
    return (
        "import os, signal, subprocess, sys, time\n"
        f"ray_start = {ray_start!r}\n"
        f"password = open(os.environ[{PASSWORD_FILE_ENV!r}]).read().strip()\n"
        "cmd = [sys.executable, '-c', ray_start, *sys.argv[1:], '--redis-password', password]\n"
        "stopping = []\n"
        "child = None\n"
        "def stop(signum, _frame):\n"
        "    stopping.append(signum)\n"
        "    if child is not None and child.poll() is None:\n"
        "        child.send_signal(signal.SIGTERM)\n"
        "for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
        "    signal.signal(sig, stop)\n"
        "args = sys.argv[1:]\n"
        "marker = os.path.join(args[args.index('--temp-dir') + 1], 'ray_current_cluster')\n"
        "while True:\n"
        "    child = subprocess.Popen(cmd)\n"
        "    code = child.wait()\n"
        "    if stopping:\n"
        "        sys.exit(0)\n"
        "    print(f'raygke: the head exited (code {code}); starting it again (GCS fault "
        "tolerance: the GCS recovers from Redis)', flush=True)\n"
        "    if os.path.exists(marker):\n"
        "        os.remove(marker)\n"
        f"    time.sleep({RESTART_DELAY_S})\n"
    )
