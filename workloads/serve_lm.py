"""Ray Serve application: the byte-level LM answering ``POST /generate`` from a verified checkpoint.

Routes (FastAPI ingress, https://docs.ray.io/en/latest/serve/http-guide.html):

* ``POST /generate`` — body JSON ``{"prompt": str, "max_new_tokens": int?, "temperature":
  float?, "seed": int?, "stop": str | [str]?}`` -> ``{"text", "tokens", "prompt_tokens",
  "finish_reason", "checkpoint", "step", "timings": {"queue_ms", "generate_ms", "total_ms",
  "batch_size"}}``. ``text`` is the prompt's continuation (UTF-8 with replacement), ``tokens``
  its byte values; generation ends at ``max_new_tokens`` (``finish_reason: "length"``) or when
  the output ends with one of the ``stop`` sequences (``"stop"``; the sequence is cut from the
  answer, as OpenAI's ``stop``). Bad input answers one JSON line ``{"error": "<field>: <why>"}``:
  400 (not JSON, wrong type, prompt longer than ``max_prompt_bytes``, ``max_new_tokens`` above
  the limit, negative temperature, bad ``stop``, unknown key) or 413 (body longer than
  ``max_body_bytes``; :mod:`workloads.serve_request`). The answer depends only on the body (and
  the checkpoint): the same body with the same ``seed`` gives the same tokens, alone or in any batch, so a request that failed
  with a 5xx because its replica died is safe to send again (``bench/serve_load.py`` clients do).
* ``GET /healthz`` — ``{"status": "ok", "checkpoint", "step", "framework"}``.

Dynamic batching: requests are gathered by ``@serve.batch`` (``max_batch_size`` /
``batch_wait_timeout_s`` from the arguments, set per replica with ``set_max_batch_size`` /
``set_batch_wait_timeout_s``, https://docs.ray.io/en/latest/serve/advanced-guides/dyn-req-batch.html)
and handed to the replica's :class:`DecodeEngine`, one decode loop (continuous batching: a batch
formed while others decode joins them at the next token, up to ``max_batch_size`` requests
decoding together). Its :class:`BatchDecode` runs one prefill forward for the new prompts, then
one forward per generated token for all running requests against a KV cache
(:func:`workloads.model_torch.forward_cached`; a batched answer is the answer the request gets
alone without a cache, up to float rounding); each request samples with its own
``torch.Generator`` seeded by ``seed``. The batch method is an async generator, so each request
is answered the step it finishes and leaves the batch (:func:`stream_batch`). Serve logs a
warning that ``max_batch_size * max_concurrent_batches`` exceeds ``max_ongoing_requests``:
``max_concurrent_batches`` is set to ``max_ongoing_requests`` on purpose (every batch only hands
its requests to the engine, which caps what decodes together). The builder refuses
``max_ongoing_requests < max_batch_size`` (a batch could never fill). Each replica sets torch's
intra- and inter-op threads from its Ray CPU allocation (``num_cpus``, at least 1;
``torch_threads`` overrides), not from the host's cores.

Autoscaling: ``min_replicas`` / ``max_replicas`` / ``target_ongoing_requests``
(https://docs.ray.io/en/latest/serve/autoscaling-guide.html). The checkpoint is verified before it
is loaded (:func:`workloads.checkpoint.verify_checkpoint`, sha256 of every file): a replica whose
checkpoint is damaged raises :class:`~workloads.checkpoint.CheckpointError` naming the file in its
constructor, so it never becomes healthy and the deploy fails with that line. Checkpoints of both
trainers load: PyTorch's ``model.pt`` directly, JAX's ``params.npz`` through
:func:`workloads.model_torch.state_dict_from_jax` (the same network; conversion at load time).

Arguments: :class:`contract.args.serve_lm.ServeLmArgs`; the application builder is :func:`build_app`
(``import_path: workloads.serve_lm:build_app``).
"""

# No "from __future__ import annotations": FastAPI reads the route signatures (``request:
# Request``) at definition time, inside _deployment_class.
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from contract.args.serve_lm import ServeLmArgs
from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, read_manifest
from workloads.serve_request import GenerateRequest, RequestError, parse_request


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


def torch_threads_for(torch_threads: int | None, cpus: float) -> int:
    """Torch intra-/inter-op threads of a replica: ``torch_threads`` when given, else the
    replica's Ray CPU allocation ``cpus`` rounded down, at least 1 (a replica with
    ``num_cpus: 0.5`` gets 1 thread, one with 4 gets 4) — never the host's core count, which
    oversubscribes the CPUs Ray gave the other actors on the node."""
    return int(torch_threads) if torch_threads else max(1, int(cpus))


def ray_cpus(default: float) -> float:
    """The CPUs Ray assigned to the calling actor
    (``ray.get_runtime_context().get_assigned_resources()["CPU"]``,
    https://docs.ray.io/en/latest/ray-core/api/doc/ray.runtime_context.RuntimeContext.get_assigned_resources.html),
    or ``default`` outside a Ray worker or when it holds no CPU."""
    try:
        import ray

        if ray.is_initialized():
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
            if cpus:
                return float(cpus)
    except Exception:  # no Ray, or not in a worker: the caller's figure
        pass
    return default


def set_torch_threads(n: int) -> int:
    """Set torch's intra-op and inter-op thread pools to ``n`` threads; returns ``n``. The
    inter-op pool can only be sized once per process, before its first use
    (https://docs.pytorch.org/docs/stable/generated/torch.set_num_interop_threads.html): where
    it already runs, it keeps its size."""
    import torch

    torch.set_num_threads(n)
    if torch.get_num_interop_threads() != n:
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(n)
    return n


class BatchDecode:
    """The decode of a changing set of requests: one forward pass per generated token for all
    the requests still running, against a :class:`~workloads.model_torch.KVCache`.

    :meth:`add` prefills new requests (their prompts right-padded into one forward) and lets
    them join the running batch at the next step (continuous batching). Each :meth:`step`
    samples one token per running request from its last logits (greedy at temperature 0, else
    ``torch.multinomial`` with the request's own ``torch.Generator(seed)``), finishes the ones
    that reached ``max_new_tokens`` or ended with one of their ``stop`` sequences (they leave the
    batch: their cache rows are dropped and later forwards skip them), then runs the next
    forward for the others. A request whose length passes the context (``context_length``)
    leaves the cache and is decoded by the full forward over its last ``context_length`` bytes,
    as the model was trained (learned positions end there); those share one forward too. The
    tokens equal decoding each request alone without a cache
    (``tests/workloads/test_serve_lm.py``).

    Requests are known by the ids :meth:`add` returns. ``results[id]`` appears when the request
    finished: ``{"text", "tokens", "prompt_tokens", "finish_reason": "length" | "stop",
    "generate_ms", "batch_size"}`` (``batch_size``: the mean number of requests in the forwards
    that decoded it); :meth:`pop` takes it out.
    """

    def __init__(
        self,
        model: Any,
        requests: list[GenerateRequest] | None = None,
        device: str = "cpu",
        capacity: int = 0,
    ) -> None:
        import torch

        from workloads.model_torch import KVCache, forward_cached

        self._torch, self._forward_cached, self._kv = torch, forward_cached, KVCache
        self.model, self.device = model, device
        self.ctx = model.cfg.context_length
        self.requests: dict[int, GenerateRequest] = {}
        self.seqs: dict[int, list[int]] = {}
        self.out: dict[int, list[int]] = {}
        self.gens: dict[int, Any] = {}
        self.t0: dict[int, float] = {}
        self.rows_seen: dict[int, list[int]] = {}  # [sum of batch sizes, forwards]
        self.results: dict[int, dict[str, Any]] = {}
        self.forwards = 0
        self.cached: list[int] = []  # ids in cache row order
        self.windowed: list[int] = []
        self.cache = KVCache(model, 0, capacity)
        self.lc: Any = None  # next-token logits of self.cached, [len(cached), 256]
        self.lw: Any = None  # of self.windowed
        self._next_id = 0
        if requests:
            self.add(requests)

    @property
    def done(self) -> bool:
        """No request is running."""
        return not self.cached and not self.windowed

    @property
    def running(self) -> int:
        return len(self.cached) + len(self.windowed)

    def add(self, requests: list[GenerateRequest]) -> list[int]:
        """Prefill ``requests``; they join the batch at the next :meth:`step`. Their ids."""
        torch = self._torch
        ids = list(range(self._next_id, self._next_id + len(requests)))
        self._next_id += len(requests)
        now = time.perf_counter()
        for i, r in zip(ids, requests, strict=True):
            self.requests[i], self.seqs[i], self.out[i] = r, list(r.prompt) or [0], []
            self.gens[i] = torch.Generator().manual_seed(r.seed)
            self.t0[i], self.rows_seen[i] = now, [0, 0]
        new_cached = [i for i in ids if len(self.seqs[i]) <= self.ctx]
        new_windowed = [i for i in ids if len(self.seqs[i]) > self.ctx]
        with torch.no_grad():
            if new_cached:
                lens = [len(self.seqs[i]) for i in new_cached]
                width = max(lens)
                x = torch.tensor(
                    [self.seqs[i] + [0] * (width - len(self.seqs[i])) for i in new_cached],
                    device=self.device,
                )
                fresh = self._kv(self.model, len(lens))
                zero = torch.zeros(len(lens), dtype=torch.long)
                logits = self._forward_cached(self.model, x, fresh, zero)
                last = torch.tensor(lens, device=logits.device) - 1
                lc = logits[torch.arange(len(lens), device=logits.device), last]
                self.forwards += 1
                self.cache.append(fresh)
                self.cached += new_cached
                self.lc = lc if self.lc is None else torch.cat([self.lc, lc])
            if new_windowed:
                lw = self._window(new_windowed)
                self.windowed += new_windowed
                self.lw = lw if self.lw is None else torch.cat([self.lw, lw])
        return ids

    def _window(self, ids: list[int]) -> Any:
        x = self._torch.tensor([self.seqs[i][-self.ctx :] for i in ids], device=self.device)
        self.forwards += 1
        return self.model(x)[:, -1, :]

    def _stop_reason(self, i: int) -> str | None:
        r, out = self.requests[i], self.out[i]
        for s in r.stop:
            if len(out) >= len(s) and bytes(out[-len(s) :]) == s:
                del out[-len(s) :]  # the stop sequence is not part of the answer
                return "stop"
        return "length" if len(out) >= r.max_new_tokens else None

    def step(self) -> list[int]:
        """Generate one token for every running request; the ids that finished."""
        torch = self._torch
        if self.done:
            return []
        parts = [x for x in (self.lc, self.lw) if x is not None and len(x)]
        logits = torch.cat(parts).float().cpu()
        greedy = logits.argmax(-1).tolist()
        finished: list[int] = []
        n = self.running
        for row, i in enumerate(self.cached + self.windowed):
            t = self.requests[i].temperature
            if t <= 0:
                nxt = greedy[row]
            else:
                probs = torch.softmax(logits[row] / t, -1)
                nxt = int(torch.multinomial(probs, 1, generator=self.gens[i]))
            self.seqs[i].append(nxt)
            self.out[i].append(nxt)
            seen = self.rows_seen[i]
            seen[0], seen[1] = seen[0] + n, seen[1] + 1
            reason = self._stop_reason(i)
            if reason:
                finished.append(i)
                self._finish(i, reason)
        gone = set(finished)
        # requests whose new token would sit past the context leave the cache for the window
        leave = {i for i in self.cached if i not in gone and len(self.seqs[i]) > self.ctx}
        if gone or leave:
            keep = [r for r, i in enumerate(self.cached) if i not in gone and i not in leave]
            if len(keep) < len(self.cached):
                self.cache.keep(keep)
            self.windowed = [i for i in self.windowed if i not in gone] + sorted(leave)
            self.cached = [self.cached[r] for r in keep]
        with torch.no_grad():
            self.lc = self.lw = None
            if self.cached:
                x = torch.tensor([[self.seqs[i][-1]] for i in self.cached], device=self.device)
                start = torch.tensor([len(self.seqs[i]) - 1 for i in self.cached])
                self.lc = self._forward_cached(self.model, x, self.cache, start)[:, -1, :]
                self.forwards += 1
            if self.windowed:
                self.lw = self._window(self.windowed)
        return finished

    def run_until_finish(self) -> list[int]:
        """:meth:`step` until at least one request finished (or none runs); their ids."""
        while not self.done:
            finished = self.step()
            if finished:
                return finished
        return []

    def pop(self, i: int) -> dict[str, Any]:
        """The result of finished request ``i``, forgotten here."""
        return self.results.pop(i)

    def _finish(self, i: int, reason: str) -> None:
        toks = self.out.pop(i)
        req = self.requests.pop(i)
        del self.seqs[i], self.gens[i]
        total, forwards = self.rows_seen.pop(i)
        self.results[i] = {
            "text": bytes(toks).decode("utf-8", errors="replace"),
            "tokens": toks,
            "prompt_tokens": len(req.prompt),
            "finish_reason": reason,
            "generate_ms": round((time.perf_counter() - self.t0.pop(i)) * 1000, 3),
            "batch_size": round(total / max(1, forwards), 2),
        }


class DecodeEngine:
    """Continuous batching for one replica: a single decode loop in its own thread runs one
    :class:`BatchDecode`; requests :meth:`submit` ted while it runs join it at the next step
    (up to ``max_rows`` running; more wait their turn), each is answered the step it finishes.
    This is what makes batches fill under Serve: ``@serve.batch`` forms its batches eagerly
    (``ray/serve/batching.py`` ``_process_batches`` collects the next batch while the last one
    still runs), so without it the queued requests would wait as many small batches instead of
    joining the running one.

    ``submit(requests)`` -> one ``concurrent.futures.Future`` per request (its result dict, or
    the exception the decode raised).
    """

    def __init__(self, lm: "LmGenerator", max_rows: int) -> None:
        import threading

        self.lm, self.max_rows = lm, max(1, max_rows)
        self._cond = threading.Condition()
        self._pending: list[tuple[GenerateRequest, Any]] = []
        self._thread: Any = None

    def submit(self, requests: list[GenerateRequest]) -> list[Any]:
        import threading
        from concurrent.futures import Future

        futures = [Future() for _ in requests]
        with self._cond:
            self._pending += list(zip(requests, futures, strict=True))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="decode", daemon=True)
                self._thread.start()
            self._cond.notify()
        return futures

    def _loop(self) -> None:
        dec = self.lm.start([])
        waiting: dict[int, Any] = {}
        while True:
            with self._cond:
                while not self._pending and dec.done:
                    self._cond.wait()
                room = self.max_rows - dec.running
                take, self._pending = self._pending[:room], self._pending[room:]
            try:
                if take:
                    ids = dec.add([r for r, _ in take])
                    waiting.update(zip(ids, (f for _, f in take), strict=True))
                for i in dec.step():
                    waiting.pop(i).set_result(dec.pop(i))
            except Exception as e:  # a decode error fails its requests, not the replica
                for f in [*waiting.values(), *(f for _, f in take)]:
                    if not f.done():
                        f.set_exception(e)
                waiting.clear()
                dec = self.lm.start([])


class LmGenerator:
    """The model of one replica (or of the bare server in ``bench/serve_load.py``).

    ``LmGenerator(checkpoint, torch_threads, device)`` verifies then loads the checkpoint and
    sets torch's intra-/inter-op threads to ``torch_threads`` (:func:`set_torch_threads`).

    Raises:
        CheckpointError: missing or damaged checkpoint; the message names the file.
    """

    def __init__(self, checkpoint: str, torch_threads: int = 1, device: str = "cpu") -> None:
        from workloads.model_torch import load_checkpoint

        self.threads = set_torch_threads(torch_threads)
        self.checkpoint = resolve_checkpoint(checkpoint)
        self.device = device
        self.model, self.metadata, _ = load_checkpoint(self.checkpoint, device=device)
        self.model.eval()

    def start(self, requests: list[GenerateRequest]) -> BatchDecode:
        """A :class:`BatchDecode` of ``requests`` (ids 0..n-1, prefill done)."""
        return BatchDecode(self.model, requests, self.device)

    def generate(self, requests: list[GenerateRequest]) -> list[dict[str, Any]]:
        """Decode ``requests`` as one batch to the end; one result per request, in order (see
        :class:`BatchDecode`)."""
        dec = self.start(requests)
        while not dec.done:
            dec.step()
        return [dec.pop(i) for i in range(len(requests))]

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "checkpoint", "step", "framework"}``."""
        return {
            "status": "ok",
            "checkpoint": self.checkpoint,
            "step": int(self.metadata.get("step", 0)),
            "framework": self.metadata.get("framework", "torch"),
        }


async def stream_batch(
    engine: DecodeEngine, requests: list[GenerateRequest]
) -> AsyncIterator[list[Any]]:
    """The body of the ``@serve.batch`` generator: hand ``requests`` to the replica's
    :class:`DecodeEngine` and, each time some of them finish, yield one list over the batch with
    the finished requests' results, ``None`` for those still running and ``StopIteration`` for
    those answered before (Serve's per-request end of stream, ``ray/serve/batching.py``
    ``USER_CODE_STREAMING_SENTINELS``). So a request that stops early (``max_new_tokens``, a
    ``stop`` sequence) is answered then, not when the longest one in its batch ends.

    Raises:
        Exception: what the decode raised, for every request of the batch still running.
    """
    futures = [asyncio.wrap_future(f) for f in engine.submit(requests)]
    answered: set[int] = set()
    while len(answered) < len(futures):
        pending = [f for i, f in enumerate(futures) if i not in answered]
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        now = {i for i, f in enumerate(futures) if i not in answered and f.done()}
        yield [
            futures[i].result() if i in now else StopIteration if i in answered else None
            for i in range(len(futures))
        ]
        answered |= now


def _deployment_class(max_concurrent_batches: int = 32) -> Any:
    """The Serve deployment (defined lazily so that importing this module needs no Ray).
    ``max_concurrent_batches``: ``@serve.batch`` batches in flight at once — every batch only
    hands its requests to the :class:`DecodeEngine`, so it is the replica's
    ``max_ongoing_requests`` (each batch holds at least one request: it never binds, and a
    batch formed while others decode joins them at once)."""
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
            threads = torch_threads_for(self.args.torch_threads, ray_cpus(self.args.num_cpus))
            self.lm = LmGenerator(str(self.args.checkpoint), threads, device)
            self.engine = DecodeEngine(self.lm, self.args.max_batch_size)
            self.generate_batch.set_max_batch_size(self.args.max_batch_size)
            self.generate_batch.set_batch_wait_timeout_s(self.args.batch_wait_timeout_s)

        @serve.batch(
            max_batch_size=8,
            batch_wait_timeout_s=0.01,
            max_concurrent_batches=max_concurrent_batches,
        )
        async def generate_batch(
            self, items: list[tuple[GenerateRequest, float]]
        ) -> AsyncIterator[list[Any]]:
            async for results in stream_batch(self.engine, [req for req, _ in items]):
                now = time.perf_counter()
                for res, (_, t_in) in zip(results, items, strict=True):
                    if isinstance(res, dict):  # waited for a batch, then to join the decode
                        waited = (now - t_in) * 1000 - res["generate_ms"]
                        res["queue_ms"] = round(max(0.0, waited), 3)
                yield results

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
            res: dict[str, Any] = {}
            async for res in self.generate_batch((req, t_in)):
                if res is not None:
                    break  # this request's answer; the rest of its batch may still decode
            meta = self.lm.health()
            return {
                "text": res["text"],
                "tokens": res["tokens"],
                "prompt_tokens": res["prompt_tokens"],
                "finish_reason": res["finish_reason"],
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
        contract.args.base.ArgError: ``args`` do not fit :class:`~contract.args.serve_lm.ServeLmArgs`, or no
            ``checkpoint`` is given (one line per problem).
    """
    from contract.args.base import ArgError

    parsed = ServeLmArgs.parse(dict(args))
    if not parsed.checkpoint:
        raise ArgError(["argument 'checkpoint' of workload serve_lm is required (a path or URI)"])
    return (
        _deployment_class(parsed.max_ongoing_requests)
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
