"""``raygke local serve`` on a real local cluster (head + 1 worker on free ports under tmp_path):
a checkpoint's ``hf/`` folder is served by vLLM's CPU build behind Ray Serve LLM. The ``openai``
client lists the model, completes a prompt and streams a chat reply; ``serve`` returns after a
warm-up request, every listener of the cluster (the replicas' too) is on 127.0.0.1; bad requests
get OpenAI's error object with a 4xx and the replica keeps answering; a run that the serving replica leaves no room for is
refused with the numbers (the first hour's silent hang); Serve's request counter reaches the
nodes' metrics ports; a damaged checkpoint or one without ``hf/`` is refused before any deploy,
naming the file; ``--stop`` removes the application. One cluster, one test (2 shared cores)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from raygke.local import cluster as local_cluster
from tests.raygke.local.test_commands import RAYGKE, _make_local_recipe, _raygke, _stack_file
from tests.workloads.test_serve_llm import tiny_hf_folder

pytestmark = pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")


def _post(url: str, body: dict) -> tuple[int, dict]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


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
@pytest.mark.vllm
def test_local_serve_openai_api_refusals_metrics_and_stop(tmp_path: Path) -> None:
    import openai

    from workloads.checkpoint import write_checkpoint

    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    state_file = tmp_path / "root" / "t" / "state.json"
    ckpt = write_checkpoint(
        tmp_path / "runs" / "r" / "checkpoint_000003",
        lambda d: tiny_hf_folder(d / "hf", n_positions=64),
        {"step": 3},
    )
    port = str(local_cluster.free_port())
    try:
        r = _raygke("up", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        state = json.loads(state_file.read_text())
        assert set(state["metrics"]) == {"head", "worker-1"}

        r = _raygke(
            "serve", "--checkpoint", str(ckpt), "--port", port,
            "--set", "model_id=tiny", "--config", str(cfg), cwd=tmp_path, timeout=1200,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        # it returned once a warm-up request had answered, and says how long loading took
        assert re.search(r"ready      loading took \d+ s; the warm-up request answered", r.stdout)
        assert "listening on more than 127.0.0.1" not in r.stderr
        # every listener of the cluster while serving, Serve's replicas and proxy included,
        # is on 127.0.0.1 (Serve binds a replica's gRPC server to [::] by itself)
        sockets = local_cluster.cluster_sockets(json.loads(state_file.read_text()))
        replicas = {s.pid for s in sockets if "ServeReplica" in _cmdline(s.pid)}
        assert len(replicas) >= 2, "the ingress and the engine replica listen and are checked"
        assert int(port) in {s.port for s in sockets}, "the proxy's port is checked"
        assert [s for s in sockets if not s.loopback] == []
        base = f"http://127.0.0.1:{port}/v1"
        assert f"url        {base}" in r.stdout and "openai.OpenAI(base_url=" in r.stdout
        assert f"curl -s {base}/completions" in r.stdout
        # the printed stop command acts on this cluster: it carries the --config given
        assert f"stop       raygke local serve --stop --config {cfg}" in r.stdout

        client = openai.OpenAI(base_url=base, api_key="none", max_retries=0, timeout=120)
        assert [m.id for m in client.models.list().data] == ["tiny"]
        done = client.completions.create(model="tiny", prompt="def ", max_tokens=5, temperature=0)
        assert done.usage.completion_tokens == 5 and isinstance(done.choices[0].text, str)
        assert done.usage.prompt_tokens == 4  # byte tokenizer: one token per byte
        chunks = list(
            client.chat.completions.create(
                model="tiny",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=4,
                temperature=0,
                stream=True,
            )
        )
        assert len(chunks) >= 2  # streamed: more than one server-sent event

        # every 4xx is OpenAI's error object (workloads/serve_ingress.py), one request id, no
        # exception class; the openai client shows the server's message
        status, doc = _post(f"{base}/completions", {"model": "nope", "prompt": "a"})
        assert status == 404 and doc["error"]["code"] == "model_not_found", doc
        with pytest.raises(openai.NotFoundError) as e:
            client.completions.create(model="nope", prompt="a", max_tokens=1)
        assert 'The model "nope" does not exist; this server serves "tiny"' in str(e.value)
        status, doc = _post(
            f"{base}/completions", {"model": "tiny", "prompt": "a", "max_tokens": 500}
        )
        message = doc["error"]["message"]
        assert status == 400 and "max_tokens=500 cannot be greater" in message, doc
        assert "Exception" not in message and message.count("request id") == 1, message
        status, doc = _post(
            f"{base}/completions", {"model": "tiny", "prompt": "a", "max_tokens": "x"}
        )
        assert status == 400 and doc["error"]["param"] == "max_tokens", doc
        # the replica still answers after the refusals, the same greedy text
        again = client.completions.create(model="tiny", prompt="def ", max_tokens=5, temperature=0)
        assert again.choices[0].text == done.choices[0].text

        # the first hour's silent hang: the engine replica (1 CPU) and the OpenAI ingress (0.25)
        # hold 1.25 of the 2 CPUs; prepare's Ray Data tasks need a whole one. Refused before
        # anything is submitted, with the numbers (a hang would end in TimeoutExpired here).
        # Run as `make local`'s recipe runs it (up, the EXIT trap's `down --if-mine`, run): the
        # refused command stops nothing, serving survives it (issue 50).
        r = _make_local_recipe(cfg, tmp_path)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "reusing local cluster 't'" in r.stdout
        assert "left local cluster 't' up: it was started by" in r.stdout, r.stdout
        assert 'in use by "raygke local serve (application lm)"' in r.stdout
        after = client.completions.create(model="tiny", prompt="def ", max_tokens=5, temperature=0)
        assert after.choices[0].text == done.choices[0].text, "still serving"
        assert (
            "job prepare needs 1 CPU for Ray Data's tasks; the local cluster has 0.75 CPU free "
            "of 2 CPU (1.25 CPU in use, a Serve application among them)" in r.stderr
        )
        assert f"`raygke local serve --stop --config {cfg}`" in r.stderr
        assert "Nothing was submitted" in r.stderr and "prepare succeeded" not in r.stdout

        r = _raygke("status", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert re.search(r"lm\s.*RUNNING", r.stdout), r.stdout

        # Serve's request counter reaches the metrics ports (exported every few seconds)
        urls = list(state["metrics"].values())
        metric = "ray_serve_num_http_requests_total"
        seen = 0.0
        for _ in range(120):  # 60 s at most
            seen = _scrape(urls, metric)
            if seen >= 3:
                break
            time.sleep(0.5)
        assert seen >= 3, f"{metric} not exported on {urls}"

        # a damaged checkpoint: refused before the deploy, naming the file
        (ckpt / "hf" / "model.safetensors").write_bytes(
            b"\0" + (ckpt / "hf" / "model.safetensors").read_bytes()[1:]
        )
        r = _raygke("serve", "--checkpoint", str(ckpt), "--port", port, "--config", str(cfg),
                    cwd=tmp_path)  # fmt: skip
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{ckpt / 'hf' / 'model.safetensors'}: sha256 mismatch" in r.stderr
        # a checkpoint without hf/ (trained before the export): refused before any deploy
        old = write_checkpoint(tmp_path / "runs" / "old" / "checkpoint_000001", {"x": b"1"}, {})
        r = _raygke("serve", "--checkpoint", str(old), "--port", port, "--config", str(cfg),
                    cwd=tmp_path)  # fmt: skip
        assert r.returncode == 2 and "has no Hugging Face folder hf/config.json" in r.stderr
        assert "Traceback" not in r.stderr

        r = _raygke("serve", "--stop", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{base}/models", timeout=10)
    finally:
        if state_file.exists():  # --force: a failed test may leave the application's lease
            _raygke("down", "--force", "--config", str(cfg), cwd=tmp_path)


def test_serve_config_runs_the_serve_llm_builder_and_prints_openai_calls() -> None:
    from raygke.local import serve as local_serve

    cfg = local_serve.serve_config("file:///w.zip", {"model": "/m"}, 8123)
    (app,) = cfg["applications"]
    assert app["import_path"] == "workloads.serve_llm:build_app" and app["args"] == {"model": "/m"}
    assert cfg["http_options"] == {"host": "127.0.0.1", "port": 8123}
    lines = local_serve.openai_lines(8123, "tiny")
    assert lines[0].startswith("url        http://127.0.0.1:8123/v1")
    assert (
        "curl -s http://127.0.0.1:8123/v1/completions" in lines[1] and '"model": "tiny"' in lines[1]
    )
    assert "base_url='http://127.0.0.1:8123/v1'" in lines[2] and "model='tiny'" in lines[2]
    reason = local_serve.failure_reason(
        {"message": "x\nworkloads.serve_llm.ModelError: model head size: 16 (allowed: ...)"}
    )
    assert reason == "workloads.serve_llm.ModelError: model head size: 16 (allowed: ...)"
