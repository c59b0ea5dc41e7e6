"""``raygke local up --gcs-ft``: the head's GCS lives in a local ``redis-server`` and the head
restarts when it exits, as KubeRay runs a RayService with ``gcsFaultToleranceOptions``
(:mod:`raygke.local.gcs_ft`). The GCS (the ``gcs_server`` process) is killed under a serving
Serve application; the head comes back, its new GCS recovers the application from Redis, and a
request after the restart is answered by the same replica (on the worker, which waited for the
GCS instead of exiting) without the application being deployed again. A tiny Serve application
stands in for vLLM: what is tested is Serve's and the GCS's recovery, not the engine. One
cluster, one test (2 shared cores); ``down`` leaves neither a Ray process nor the Redis."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest

from raygke.local import cluster as local_cluster
from raygke.local import serve as local_serve
from tests.raygke.local.test_commands import RAYGKE, REPO, _raygke, _stack_file

pytestmark = pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")

APP = """
import os

import ray
from ray import serve


@serve.deployment
class Pid:
    def __call__(self, request):
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}


def build(args):
    # pinned to the worker node: it must outlive the head's restart
    selector = {"ray.io/node-id": args["node_id"]}
    return Pid.options(ray_actor_options={"num_cpus": 0, "label_selector": selector}).bind()
"""


def _on_cluster(cfg: Path, body: str) -> Any:
    """Run ``body`` (Python that sets ``out``) in a fresh interpreter with ``target``, the
    cluster of ``cfg`` (:func:`raygke.local.cluster.make_target`), and ``lc`` / ``ls``
    (:mod:`raygke.local.cluster` / :mod:`raygke.local.serve`) in scope; ``out`` as JSON. A
    fresh process: Ray reads its token settings once, when first imported."""
    code = (
        "import json\n"
        "from components.stack.loader import load_stack_file\n"
        "from raygke.local import cluster as lc, serve as ls\n"
        f"target = lc.make_target('t', load_stack_file({str(cfg)!r}).local)\n"
        "out = None\n"
        f"{body}\n"
        "print('OUT=' + json.dumps(out, default=str))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", lc_root())}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    line = [x for x in r.stdout.splitlines() if x.startswith("OUT=")]
    assert r.returncode == 0 and line, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(line[-1][4:])


def lc_root() -> str:
    return local_cluster.ROOT_ENV


def _get(url: str, timeout: float = 10.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def _answer(url: str, timeout_s: float) -> dict:
    """The first 200 answer of ``url`` within ``timeout_s`` seconds."""
    deadline, last = time.monotonic() + timeout_s, "no answer"
    while time.monotonic() < deadline:
        try:
            return _get(url)
        except (OSError, ValueError) as e:  # proxy not up yet: refused, 5xx, reset
            last = str(e) or type(e).__name__
        time.sleep(0.5)
    raise AssertionError(f"{url} not answered within {timeout_s:.0f} s ({last})")


def _gcs_server(head_pid: int) -> int:
    """The pid of the ``gcs_server`` process in the head's session."""
    for pid in local_cluster.session_pids([head_pid]):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "gcs_server":
                return pid
        except OSError:
            continue
    raise AssertionError(f"no gcs_server in the head's session {head_pid}")


@pytest.mark.ray
@pytest.mark.slow
def test_serve_answers_after_the_gcs_is_killed_and_the_head_restarts(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    assert shutil.which("redis-server"), "redis-server is not installed (make system-deps)"
    gcs_port, dash = local_cluster.free_port(), local_cluster.free_port()
    cfg = _stack_file(tmp_path, tmp_path / "root", gcs_port, dash)
    r = _raygke("up", "--config", str(cfg), "--gcs-ft", cwd=tmp_path)
    state_file = tmp_path / "root" / "t" / "state.json"
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        state = json.loads(state_file.read_text())
        redis = state["gcs_ft"]
        assert f"redis-server {redis['address']}" in r.stdout
        head, worker = local_cluster.nodes_of(state)
        password = Path(redis["password_file"]).read_text().strip()
        assert password not in json.dumps(state), "the Redis password is not recorded"
        assert os.stat(redis["password_file"]).st_mode & 0o077 == 0
        nodes = (
            "out = {n.node_name: n.node_id for n in lc.cluster_nodes(target) if n.state == 'ALIVE'}"
        )
        worker_id = _on_cluster(cfg, nodes)["worker-1"]
        # the application: a zip the Serve REST API's runtime_env takes as a file:// URI
        archive = tmp_path / "app.zip"
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("gcs_ft_app.py", APP)
        port = local_cluster.free_port()
        config = local_serve.serve_config(archive.as_uri(), {"node_id": worker_id}, port)
        config["applications"][0]["import_path"] = "gcs_ft_app:build"
        deployed = _on_cluster(cfg, f"out = ls.deploy(target, {config!r}, timeout_s=300)")
        url = f"{local_serve.url(port)}/"
        before = _answer(url, 120)
        assert before["node"] == worker_id

        gcs = _gcs_server(head.pid)
        os.kill(gcs, signal.SIGKILL)
        # the supervised head restarts ray start; the new GCS reads the cluster from Redis
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if _gcs_server(head.pid) != gcs:
                    break
            except AssertionError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("no new gcs_server within 180 s")
        assert "starting it again" in Path(head.log).read_text()

        after = _answer(url, 240)
        assert after == before, "the same replica answers: it outlived the GCS on the worker"
        assert worker.alive and head.alive
        app = _on_cluster(cfg, "out = ls.serve_details(target)['applications']['lm']")
        assert app["status"] == "RUNNING"
        assert app["last_deployed_time_s"] == deployed["last_deployed_time_s"], (
            "recovered from Redis, not deployed again"
        )
        alive = _on_cluster(cfg, nodes)
        assert alive["worker-1"] == worker_id, "the worker's raylet waited for the GCS"
        assert "head" in alive
    finally:
        if state_file.exists():
            down = _raygke("down", "--config", str(cfg), "--force", cwd=tmp_path)
            assert down.returncode == 0, down.stdout + down.stderr
    assert not local_cluster.is_alive(redis["pid"], redis["start_ticks"])
    assert not local_cluster.session_pids([head.pid, worker.pid, redis["pid"]])


def test_up_without_redis_server_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raygke.local import gcs_ft

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(gcs_ft.RedisError, match="apt-get install -y redis-server"):
        gcs_ft.start_redis(tmp_path)
    assert not (tmp_path / "logs").exists()


def test_the_supervised_head_passes_the_password_and_stops_on_sigterm(tmp_path: Path) -> None:
    """The supervisor runs its program with the password file's content appended, runs it
    again when it exits by itself (after removing the head's ``ray_current_cluster``, which
    ``ray start`` would refuse to start over), and ends on SIGTERM (no Ray: a stand-in)."""
    from raygke.local import gcs_ft

    pw = tmp_path / "pw"
    pw.write_text("s3cret\n")
    out, marker = tmp_path / "runs", tmp_path / "ray_current_cluster"
    marker.write_text("127.0.0.1:1234")
    stand_in = (
        "import sys, time\n"
        f"open({str(out)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"sys.exit(1) if len(open({str(out)!r}).readlines()) < 2 else time.sleep(60)\n"
    )
    args = ["start", "--head", "--temp-dir", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-c", gcs_ft.supervised_head(stand_in), *args],
        env={**os.environ, gcs_ft.PASSWORD_FILE_ENV: str(pw)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not out.exists() or len(out.read_text().splitlines()) < 2
        ):
            time.sleep(0.1)
        assert out.read_text().splitlines() == [" ".join(args) + " --redis-password s3cret"] * 2
        assert not marker.exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "starting it again" in (proc.stdout.read() if proc.stdout else "")
    finally:
        if proc.poll() is None:
            proc.kill()
