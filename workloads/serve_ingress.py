"""The OpenAI application of ``workloads.serve_llm``, built from Ray Serve LLM's public pieces
(Ray 2.60: ``ray.serve.llm.build_llm_deployment``, ``ray.serve.llm.ingress.OpenAiIngress`` and
``make_fastapi_ingress(cls, app=...)``, the way Ray's docs customise the ingress) instead of
``build_openai_app``, for two things that builder offers no setting for:

* **OpenAI error objects for every 4xx.** ``build_openai_app`` makes its own FastAPI app, whose
  errors are FastAPI's ``{"detail": ...}`` (an unknown ``model``, an unknown route) or Ray's
  ``"Message: ..., Internal exception: ...OpenAIHTTPException (Request ID: ...), original
  exception: ..."`` (vLLM's refusals, the request id twice). Here the app is Ray Serve LLM's own
  (``init()``: its request-id, metrics and CORS middleware) plus exception handlers that answer
  ``{"error": {"message", "type", "param", "code"}}`` (OpenAI's shape: the ``openai`` client shows
  the message), the request id once, at the message's end and in ``x-request-id``, no class name.
* **Every listening socket on the node's address.** A Serve replica starts a gRPC server for
  calls between deployments on ``[::]:0``, every interface, whatever the node's IP
  (``ray/serve/_private/replica.py`` ``_on_initialized``: ``add_port_to_grpc_server(self._server,
  "[::]:0")``); on the local cluster (node IP 127.0.0.1) that exposed the unauthenticated
  ingress and the engine replica to the network. The ingress and the engine deployment here are
  subclasses (``ingress_cls`` / ``deployment_cls``, Ray Serve LLM's extension points) whose
  constructor, which runs before that server starts, binds it to the node IP when that is a
  loopback address (:func:`bind_replica_grpc_to_loopback`); on GKE (a pod IP) nothing changes.

Imports Ray, FastAPI and Ray Serve LLM at module level: only the Serve controller (the app
builder) and the replicas import this module.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from ray import serve
from ray.llm._internal.serve.core.configs.openai_api_models import (
    OpenAIHTTPException,
    to_model_metadata,
)
from ray.llm._internal.serve.core.ingress.ingress import init as ray_llm_fastapi_app
from ray.serve.llm import LLMConfig, build_llm_deployment
from ray.serve.llm.deployment import LLMServer
from ray.serve.llm.ingress import OpenAiIngress, make_fastapi_ingress
from starlette.exceptions import HTTPException as StarletteHTTPException

MODEL_NOT_FOUND = "model_not_found"
_REQUEST_ID = re.compile(r"\s*\((?:Request ID|request id):? [^)]*\)")


# ------------------------------------------------------------------------------ the listeners


def node_ip() -> str:
    """The IP of the Ray node this process runs on (what the raylet gave the worker)."""
    import ray

    return ray._private.worker.global_worker.node_ip_address


def bind_replica_grpc_to_loopback(ip: str | None = None) -> bool:
    """Make this replica process's inter-deployment gRPC server listen on the node IP instead
    of ``[::]`` when the node IP is a loopback address; True when it did. Call it in the
    deployment's constructor (before Serve's ``_on_initialized`` starts that server)."""
    from ray.serve._private import replica

    ip = ip or node_ip()
    if not ip.startswith("127."):
        return False
    original = replica.add_port_to_grpc_server
    if getattr(original, "raygke_loopback", False):
        return True

    def add_port(server: Any, address: str) -> int:
        if address.startswith("[::]:") or address.startswith("0.0.0.0:"):
            address = f"{ip}:{address.rsplit(':', 1)[1]}"
        return original(server, address)

    add_port.raygke_loopback = True  # type: ignore[attr-defined]
    replica.add_port_to_grpc_server = add_port
    return True


class LocalLLMServer(LLMServer):
    """Ray Serve LLM's engine deployment, its gRPC server on the node IP when that is loopback."""

    async def __init__(self, *args: Any, **kwargs: Any) -> None:
        bind_replica_grpc_to_loopback()
        await super().__init__(*args, **kwargs)


class LocalIngress(OpenAiIngress):
    """Ray Serve LLM's OpenAI ingress: an unknown model is OpenAI's ``model_not_found``, and its
    gRPC server on the node IP when that is loopback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bind_replica_grpc_to_loopback()
        super().__init__(*args, **kwargs)

    async def _get_model_id(self, model: str | None) -> str:
        try:
            return await super()._get_model_id(model)
        except HTTPException as e:
            if e.status_code != 404:
                raise
            served = ", ".join(f'"{m}"' for m in self._model_cards)
            raise OpenAIHTTPException(
                status_code=404,
                message=f'The model "{model}" does not exist; this server serves {served}',
                type=MODEL_NOT_FOUND,
            ) from None


# ------------------------------------------------------------------------------- the errors


def error_body(
    status: int, message: str, request_id: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object: ``message`` (any request id in it replaced by one at its end, when
    ``request_id``), ``type`` (``invalid_request_error`` for a 4xx, else ``server_error``),
    ``param`` and ``code``."""
    text = _REQUEST_ID.sub("", message).strip()
    if request_id:
        text += f" (request id {request_id})"
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": text, "type": kind, "param": param, "code": code}}


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or request.headers.get("x-request-id", ""))


def _respond(
    request: Request, status: int, message: str, param: str | None = None, code: str | None = None
) -> JSONResponse:
    rid = _request_id(request)
    headers = {"x-request-id": rid} if rid else None
    return JSONResponse(
        error_body(status, message, rid, param, code), status_code=status, headers=headers
    )


async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's / Starlette's HTTPException (an unknown route, a wrong method, Ray Serve LLM's
    own refusals): its status and detail as the error object."""
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    return _respond(request, exc.status_code, detail)


async def on_openai_error(request: Request, exc: Exception) -> JSONResponse:
    """Ray Serve LLM's OpenAIHTTPException (vLLM's refusals, an unknown model): its status and
    message, without the exception's class."""
    assert isinstance(exc, OpenAIHTTPException)
    if exc.type == MODEL_NOT_FOUND:
        return _respond(request, exc.status_code, exc.message, "model", MODEL_NOT_FOUND)
    return _respond(request, exc.status_code, exc.message)


async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """A body of the wrong shape or types: 400 naming the field (``param``), as OpenAI does."""
    assert isinstance(exc, RequestValidationError)
    first = (exc.errors() or [{}])[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = ".".join(loc) or None
    message = f"{param}: {first.get('msg', 'invalid value')}" if param else "invalid request body"
    return _respond(request, 400, message, param, "invalid_value")


def openai_fastapi_app() -> Any:
    """Ray Serve LLM's ingress FastAPI app with the error handlers above."""
    app = ray_llm_fastapi_app()
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(OpenAIHTTPException, on_openai_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    return app


def build_openai_app(llm_config: LLMConfig, ingress_num_cpus: float) -> Any:
    """What ``ray.serve.llm.build_openai_app`` builds for one ``LLMConfig`` (an engine
    deployment behind the OpenAI ingress), with :class:`LocalLLMServer`, :class:`LocalIngress`
    and :func:`openai_fastapi_app`."""
    # Ray Serve LLM's own deployment names (``LLMServer:<model id>``, ``OpenAiIngress``), not the
    # subclasses': a Serve config's ``deployments`` overrides (bench/serve_openai.py) and a
    # running RayService's deployments keep their names, so an upgrade updates them in place.
    server = build_llm_deployment(
        llm_config, deployment_cls=LocalLLMServer, name_prefix=f"{LLMServer.__name__}:"
    )
    options = LocalIngress.get_deployment_options([llm_config])
    options.setdefault("name", OpenAiIngress.__name__)
    options.setdefault("ray_actor_options", {})["num_cpus"] = ingress_num_cpus
    ingress = make_fastapi_ingress(LocalIngress, app=openai_fastapi_app())
    model_id = llm_config.model_id
    return serve.deployment(ingress, **options).bind(
        llm_deployments={model_id: server},
        model_cards={model_id: to_model_metadata(model_id, llm_config)},
    )
