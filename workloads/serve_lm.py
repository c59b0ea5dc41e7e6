"""Ray Serve application: the byte-level LM answering ``POST /generate`` from a verified checkpoint.

Routes (FastAPI ingress, https://docs.ray.io/en/latest/serve/http-guide.html):

* ``POST /generate`` — body JSON ``{"prompt": str, "max_new_tokens": int?, "temperature":
  float?, "seed": int?}`` -> ``{"text", "tokens", "prompt_tokens", "checkpoint", "step",
  "timings": {"queue_ms", "generate_ms", "total_ms", "batch_size"}}``. ``text`` is the prompt's
  continuation (UTF-8 with replacement), ``tokens`` its byte values. Bad input answers one JSON
  line ``{"error": "<field>: <why>"}``: 400 (not JSON, wrong type, prompt longer than
  ``max_prompt_bytes``, ``max_new_tokens`` above the limit, negative temperature, unknown key) or
  413 (body longer than ``max_body_bytes``).
* ``GET /healthz`` — ``{"status": "ok", "checkpoint", "step", "framework"}``.

Dynamic batching: requests are gathered by ``@serve.batch`` (``max_batch_size`` /
``batch_wait_timeout_s`` from the arguments, set per replica with ``set_max_batch_size`` /
``set_batch_wait_timeout_s``, https://docs.ray.io/en/latest/serve/advanced-guides/dyn-req-batch.html)
and decoded together: at each step the sequences of equal current length share one forward pass
(no padding, so a batched answer is the answer the request would get alone, up to float
rounding); each request samples with its own ``torch.Generator`` seeded by ``seed``.

Autoscaling: ``min_replicas`` / ``max_replicas`` / ``target_ongoing_requests``
(https://docs.ray.io/en/latest/serve/autoscaling-guide.html). The checkpoint is verified before it
is loaded (:func:`workloads.checkpoint.verify_checkpoint`, sha256 of every file): a replica whose
checkpoint is damaged raises :class:`~workloads.checkpoint.CheckpointError` naming the file in its
constructor, so it never becomes healthy and the deploy fails with that line. Checkpoints of both
trainers load: PyTorch's ``model.pt`` directly, JAX's ``params.npz`` through
:func:`workloads.model_torch.state_dict_from_jax` (the same network; conversion at load time).

Arguments: :class:`workloads.args.ServeLmArgs`; the application builder is :func:`build_app`
(``import_path: workloads.serve_lm:build_app``).
"""

# No "from __future__ import annotations": FastAPI reads the route signatures (``request:
# Request``) at definition time, inside _deployment_class.
import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workloads.args import ServeLmArgs
from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, read_manifest

REQUEST_KEYS = ("prompt", "max_new_tokens", "temperature", "seed")


class RequestError(ValueError):
    """A request that is refused: ``status`` 400 or 413, ``str()`` the one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class GenerateRequest:
    """One parsed ``POST /generate`` body: prompt bytes, tokens to generate, temperature (0 =
    greedy), seed."""

    prompt: bytes
    max_new_tokens: int
    temperature: float
    seed: int


def parse_request(body: bytes, args: ServeLmArgs) -> GenerateRequest:
    """Validate a ``POST /generate`` body against the limits in ``args``.

    Raises:
        RequestError: 413 when ``body`` is longer than ``max_body_bytes``; 400 for anything else
            (not a JSON object, unknown key, wrong type, prompt over ``max_prompt_bytes`` UTF-8
            bytes, ``max_new_tokens`` outside 1..limit, temperature outside 0..10).
    """
    if len(body) > args.max_body_bytes:
        raise RequestError(
            413, f"body: {len(body)} bytes is over the limit of {args.max_body_bytes} bytes"
        )
    try:
        doc = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, f"body: not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise RequestError(400, 'body: expected a JSON object like {"prompt": "def "}')
    unknown = sorted(set(doc) - set(REQUEST_KEYS))
    if unknown:
        raise RequestError(400, f"{unknown[0]}: unknown key; accepted: {', '.join(REQUEST_KEYS)}")
    prompt = doc.get("prompt")
    if not isinstance(prompt, str):
        raise RequestError(400, f"prompt: expected a string, got {json.dumps(prompt)}")
    data = prompt.encode("utf-8", errors="replace")
    if len(data) > args.max_prompt_bytes:
        raise RequestError(
            400, f"prompt: {len(data)} bytes is over the limit of {args.max_prompt_bytes} bytes"
        )
    n = doc.get("max_new_tokens", min(args.default_new_tokens, args.max_new_tokens))
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= args.max_new_tokens:
        raise RequestError(
            400, f"max_new_tokens: {json.dumps(n)} is not an integer in 1..{args.max_new_tokens}"
        )
    t = doc.get("temperature", 0.0)
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t <= 10:
        raise RequestError(400, f"temperature: {json.dumps(t)} is not a number in 0..10")
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise RequestError(400, f"seed: {json.dumps(seed)} is not an integer in 0..2**63-1")
    return GenerateRequest(data, n, float(t), seed)


def resolve_checkpoint(path: str) -> str:
    """A checkpoint folder (has ``manifest.json``) as is, else the newest verifying
    ``checkpoint_*`` under the experiment folder ``path``.

    Raises:
        CheckpointError: no checkpoint folder and no valid checkpoint under ``path``.
    """
    try:
        read_manifest(path)
        return path
    except CheckpointError:
        pass
    found = latest_valid_checkpoint(path)
    if found is None:
        raise CheckpointError(f"{path}: no checkpoint (manifest.json) and no valid checkpoint_*")
    return str(found[0])


class LmGenerator:
    """The model of one replica (or of the bare server in ``bench/serve_load.py``).

    ``LmGenerator(checkpoint, torch_threads, device)`` verifies then loads the checkpoint.

    Raises:
        CheckpointError: missing or damaged checkpoint; the message names the file.
    """

    def __init__(self, checkpoint: str, torch_threads: int = 1, device: str = "cpu") -> None:
        import torch

        from workloads.model_torch import load_checkpoint

        torch.set_num_threads(torch_threads)
        self.checkpoint = resolve_checkpoint(checkpoint)
        self.device = device
        self.model, self.metadata, _ = load_checkpoint(self.checkpoint, device=device)
        self.model.eval()

    def generate(self, requests: list[GenerateRequest]) -> list[dict[str, Any]]:
        """Continue every request's prompt; one dict per request, in order: ``text``,
        ``tokens`` (generated byte values), ``prompt_tokens``, ``generate_ms``, ``batch_size``."""
        import torch

        t0 = time.perf_counter()
        ctx = self.model.cfg.context_length
        seqs = [list(r.prompt) or [0] for r in requests]
        gens = [torch.Generator().manual_seed(r.seed) for r in requests]
        out: list[list[int]] = [[] for _ in requests]
        with torch.no_grad():
            while True:
                live = [i for i, r in enumerate(requests) if len(out[i]) < r.max_new_tokens]
                if not live:
                    break
                by_len: dict[int, list[int]] = {}
                for i in live:
                    by_len.setdefault(min(len(seqs[i]), ctx), []).append(i)
                for length, idx in by_len.items():
                    x = torch.tensor([seqs[i][-length:] for i in idx], device=self.device)
                    logits = self.model(x)[:, -1, :].float().cpu()
                    greedy = logits.argmax(-1).tolist()
                    for row, i in enumerate(idx):
                        t = requests[i].temperature
                        if t <= 0:
                            nxt = greedy[row]
                        else:
                            probs = torch.softmax(logits[row] / t, -1)
                            nxt = int(torch.multinomial(probs, 1, generator=gens[i]))
                        seqs[i].append(nxt)
                        out[i].append(nxt)
        ms = (time.perf_counter() - t0) * 1000
        return [
            {
                "text": bytes(toks).decode("utf-8", errors="replace"),
                "tokens": toks,
                "prompt_tokens": len(r.prompt),
                "generate_ms": round(ms, 3),
                "batch_size": len(requests),
            }
            for r, toks in zip(requests, out, strict=True)
        ]

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "checkpoint", "step", "framework"}``."""
        return {
            "status": "ok",
            "checkpoint": self.checkpoint,
            "step": int(self.metadata.get("step", 0)),
            "framework": self.metadata.get("framework", "torch"),
        }


def _deployment_class() -> Any:
    """The Serve deployment (defined lazily so that importing this module needs no Ray)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from ray import serve

    api = FastAPI(title="raygke serve_lm")

    @serve.deployment(name="LmServer")
    @serve.ingress(api)
    class LmServer:
        def __init__(self, args: dict[str, Any]) -> None:
            self.args = ServeLmArgs.parse(args)
            device = "cuda" if self.args.num_gpus > 0 else "cpu"
            self.lm = LmGenerator(str(self.args.checkpoint), self.args.torch_threads, device)
            self.generate_batch.set_max_batch_size(self.args.max_batch_size)
            self.generate_batch.set_batch_wait_timeout_s(self.args.batch_wait_timeout_s)

        @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
        async def generate_batch(
            self, items: list[tuple[GenerateRequest, float]]
        ) -> list[dict[str, Any]]:
            start = time.perf_counter()
            # In a thread: the replica's event loop keeps taking requests, which queue for the
            # next batch while this one decodes (Serve runs one batch at a time by default).
            results = await asyncio.to_thread(self.lm.generate, [req for req, _ in items])
            for res, (_, t_in) in zip(results, items, strict=True):
                res["queue_ms"] = round((start - t_in) * 1000, 3)
            return results

        @api.post("/generate")
        async def generate(self, request: Request) -> Any:
            t_in = time.perf_counter()
            declared = request.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.args.max_body_bytes:
                return JSONResponse(
                    {
                        "error": f"body: {declared} bytes is over the limit of "
                        f"{self.args.max_body_bytes} bytes"
                    },
                    status_code=413,
                )
            try:
                req = parse_request(await request.body(), self.args)
            except RequestError as e:
                return JSONResponse({"error": str(e)}, status_code=e.status)
            res = await self.generate_batch((req, t_in))
            meta = self.lm.health()
            return {
                "text": res["text"],
                "tokens": res["tokens"],
                "prompt_tokens": res["prompt_tokens"],
                "checkpoint": meta["checkpoint"],
                "step": meta["step"],
                "timings": {
                    "queue_ms": res["queue_ms"],
                    "generate_ms": res["generate_ms"],
                    "total_ms": round((time.perf_counter() - t_in) * 1000, 3),
                    "batch_size": res["batch_size"],
                },
            }

        @api.get("/healthz")
        def healthz(self) -> dict[str, Any]:
            return self.lm.health()

    return LmServer


def build_app(args: Mapping[str, Any]) -> Any:
    """Application builder (Serve config ``import_path: workloads.serve_lm:build_app``): the
    bound ``LmServer`` deployment with autoscaling, concurrency and resources from ``args``.

    Raises:
        workloads.args.ArgError: ``args`` do not fit :class:`~workloads.args.ServeLmArgs`, or no
            ``checkpoint`` is given (one line per problem).
    """
    from workloads.args import ArgError

    parsed = ServeLmArgs.parse(dict(args))
    if not parsed.checkpoint:
        raise ArgError(["argument 'checkpoint' of workload serve_lm is required (a path or URI)"])
    return (
        _deployment_class()
        .options(
            autoscaling_config={
                "min_replicas": parsed.min_replicas,
                "max_replicas": parsed.max_replicas,
                "target_ongoing_requests": parsed.target_ongoing_requests,
            },
            max_ongoing_requests=parsed.max_ongoing_requests,
            ray_actor_options={"num_cpus": parsed.num_cpus, "num_gpus": parsed.num_gpus},
        )
        .bind(parsed.to_dict())
    )
