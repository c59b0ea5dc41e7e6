"""workloads/serve_ingress.py without a cluster: the OpenAI app's error handlers answer every 4xx
with OpenAI's error object (one request id, no exception class), an unknown model is
``model_not_found``, and a replica's inter-deployment gRPC server is bound to a loopback node IP
(issue 50: Serve replicas listened on every interface)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("ray.serve.llm")
from fastapi import Body
from fastapi.testclient import TestClient
from pydantic import BaseModel
from ray.llm._internal.serve.core.configs.openai_api_models import (
    OpenAIHTTPException,
)

from workloads import serve_ingress


class _Body(BaseModel):
    model: str
    max_tokens: int = 16


def _client() -> TestClient:
    app = serve_ingress.openai_fastapi_app()

    @app.post("/v1/completions")
    async def completions(body: _Body = Body(...)) -> dict:
        if body.model == "nope":  # as LocalIngress raises it
            ingress = object.__new__(serve_ingress.LocalIngress)
            ingress._model_cards = {"tiny": None}
            await ingress._get_model_id(body.model)
        raise OpenAIHTTPException(
            status_code=400,
            message="max_tokens=500 cannot be greater than max_model_len=64 (Request ID: r-1)",
            type="BadRequestError",
        )

    return TestClient(app)


def _error(r) -> dict:
    doc = r.json()
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "type", "param", "code"}
    assert "Exception" not in doc["error"]["message"] and "Internal" not in doc["error"]["message"]
    assert "detail" not in doc
    return doc["error"]


def test_every_4xx_is_an_openai_error_object_with_one_request_id() -> None:
    client = _client()
    r = client.post("/v1/completions", json={"model": "tiny", "max_tokens": 500})
    err = _error(r)
    assert r.status_code == 400 and err["type"] == "invalid_request_error"
    rid = r.headers["x-request-id"]
    assert err["message"] == (
        f"max_tokens=500 cannot be greater than max_model_len=64 (request id {rid})"
    )
    assert err["message"].count(rid) == 1 and "r-1" not in err["message"]

    r = client.post("/v1/completions", json={"model": "nope"})
    err = _error(r)
    assert r.status_code == 404 and err["code"] == "model_not_found" and err["param"] == "model"
    assert err["message"].startswith('The model "nope" does not exist; this server serves "tiny"')

    r = client.post("/v1/completions", json={"model": "tiny", "max_tokens": "x"})
    err = _error(r)
    assert r.status_code == 400 and err["param"] == "max_tokens", err

    r = client.get("/v1/nothing-here")
    err = _error(r)
    assert r.status_code == 404 and err["message"].startswith("Not Found")


def test_an_unknown_model_keeps_other_errors_as_they_were() -> None:
    ingress = object.__new__(serve_ingress.LocalIngress)
    ingress._model_cards = {"tiny": None}
    assert asyncio.run(ingress._get_model_id("tiny")) == "tiny"
    with pytest.raises(OpenAIHTTPException) as e:
        asyncio.run(ingress._get_model_id("other"))
    assert e.value.status_code == 404 and e.value.type == serve_ingress.MODEL_NOT_FOUND


def test_a_replica_grpc_server_binds_the_loopback_node_ip_not_every_interface() -> None:
    from ray.serve._private import replica

    class Server:
        def __init__(self) -> None:
            self.addresses: list[str] = []

        def add_insecure_port(self, address: str) -> int:
            self.addresses.append(address)
            return 1234

    original = replica.add_port_to_grpc_server
    try:
        assert not serve_ingress.bind_replica_grpc_to_loopback("10.1.2.3")  # GKE: a pod IP
        assert replica.add_port_to_grpc_server is original
        assert serve_ingress.bind_replica_grpc_to_loopback("127.0.0.1")
        assert serve_ingress.bind_replica_grpc_to_loopback("127.0.0.1"), "idempotent"
        server = Server()
        # what Serve's replica calls (ray/serve/_private/replica.py _on_initialized)
        assert replica.add_port_to_grpc_server(server, "[::]:0") == 1234
        assert server.addresses == ["127.0.0.1:0"]
    finally:
        replica.add_port_to_grpc_server = original
