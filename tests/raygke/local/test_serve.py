"""``raygke local serve`` on a real local cluster (head + 1 worker on free ports under tmp_path):
a generate request is answered, bad requests get 400/413 with a JSON reason, a Serve request
counter is scraped from the nodes' metrics ports, a damaged checkpoint fails the deploy naming
the file, and ``--stop`` removes the application. One cluster, one test (2 shared cores)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from raygke.local import cluster as local_cluster
from tests.raygke.local.test_commands import RAYGKE, _raygke, _stack_file
from tests.workloads.test_serve_lm import tiny_checkpoint

pytestmark = pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")


def _post(url: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _scrape(urls: list[str], metric: str) -> float:
    total = 0.0
    for url in urls:
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        for m in re.finditer(rf"^{metric}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", text, re.M):
            total += float(m.group(1))
    return total


@pytest.mark.ray
@pytest.mark.slow
def test_local_serve_answers_refuses_and_fails_on_damage(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    state_file = tmp_path / "root" / "t" / "state.json"
    good = tiny_checkpoint(tmp_path / "runs" / "good")
    port = str(local_cluster.free_port())
    try:
        r = _raygke("up", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        state = json.loads(state_file.read_text())
        assert set(state["metrics"]) == {"head", "worker-1"}
        assert all(u.startswith("http://127.0.0.1:") for u in state["metrics"].values())

        r = _raygke(
            "serve", "--checkpoint", str(good), "--port", port, "--set", "max_new_tokens=16",
            "--config", str(cfg), cwd=tmp_path,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        url = f"http://127.0.0.1:{port}"
        assert f"url        {url}" in r.stdout and f"curl -s -X POST {url}/generate" in r.stdout
        # the printed stop command acts on this cluster: it carries the --config given
        assert f"stop       raygke local serve --stop --config {cfg}" in r.stdout

        # the first hour's silent hang: Serve holds one of the 2 CPUs; train_lm's worker and
        # Ray Data's read need both. Refused before anything is submitted, with the numbers
        # (a hang would end in TimeoutExpired here).
        r = _raygke("run", "prepare", "train_lm", "--config", str(cfg), cwd=tmp_path, timeout=180)
        assert r.returncode == 1, r.stdout + r.stderr
        assert (
            "job train_lm needs 1 worker x 1 CPU + 1 CPU for Ray Data's tasks = 2 CPU" in r.stderr
        )
        assert "has 1 CPU free of 2 CPU" in r.stderr and "Serve application" in r.stderr
        assert f"`raygke local serve --stop --config {cfg}`" in r.stderr
        assert "Nothing was submitted" in r.stderr and "prepare succeeded" not in r.stdout

        status, doc = _post(f"{url}/generate", b'{"prompt": "def ", "max_new_tokens": 5}')
        assert status == 200, doc
        assert len(doc["tokens"]) == 5 and isinstance(doc["text"], str)
        assert doc["checkpoint"] == str(good) and doc["timings"]["batch_size"] >= 1
        status, doc = _post(f"{url}/generate", b'{"prompt": "a", "max_new_tokens": 17}')
        assert status == 400 and "max_new_tokens: 17" in doc["error"]
        status, doc = _post(f"{url}/generate", b'{"prompt": "' + b"a" * 20000 + b'"}')
        assert status == 413 and "over the limit of 16384 bytes" in doc["error"]
        with urllib.request.urlopen(f"{url}/healthz", timeout=30) as h:
            assert json.loads(h.read())["status"] == "ok"

        r = _raygke("status", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert re.search(r"lm\s.*RUNNING", r.stdout), r.stdout

        # Serve's request counter reaches the metrics ports (exported every few seconds)
        urls = list(state["metrics"].values())
        metric = "ray_serve_num_http_requests_total"
        seen = 0.0
        for _ in range(120):  # 60 s at most, as before
            seen = _scrape(urls, metric)
            if seen >= 3:
                break
            import time

            time.sleep(0.5)
        assert seen >= 3, f"{metric} not exported on {urls}"

        # a damaged checkpoint: the replica refuses to start and the deploy names the file
        bad = tiny_checkpoint(tmp_path / "runs" / "bad")
        (bad / "model.pt").write_bytes(b"\0" + (bad / "model.pt").read_bytes()[1:])
        r = _raygke("serve", "--checkpoint", str(bad), "--port", port, "--config", str(cfg),
                    cwd=tmp_path)  # fmt: skip
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"{bad / 'model.pt'}: sha256 mismatch" in r.stderr
        assert "Traceback" not in r.stderr

        r = _raygke("serve", "--stop", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        if state_file.exists():
            _raygke("down", "--config", str(cfg), cwd=tmp_path)
