"""``workloads.serve_lm`` without Ray: request limits, checkpoint verification, batched decoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.args.base import ArgError
from contract.args.serve_lm import ServeLmArgs
from workloads.checkpoint import CheckpointError
from workloads.lm_config import ModelConfig
from workloads.serve_lm import LmGenerator, build_app
from workloads.serve_request import GenerateRequest, RequestError, parse_request

ARGS = ServeLmArgs.parse({"checkpoint": "/x", "max_prompt_bytes": 8, "max_new_tokens": 5})


def tiny_checkpoint(root: Path, step: int = 3) -> Path:
    """A real torch checkpoint of a tiny model at ``<root>/checkpoint_00000<step>``."""
    import torch

    from workloads.model_torch import GPT, save_checkpoint

    torch.manual_seed(0)
    model = GPT(ModelConfig(d_model=16, n_layers=1, n_heads=2, context_length=16))
    return save_checkpoint(root / f"checkpoint_{step:06d}", model, step)


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"x" * 20000, 413, "body: 20000 bytes is over the limit of 16384"),
        (b"{not json", 400, "body: not valid JSON"),
        (b"[1]", 400, "body: expected a JSON object"),
        (b'{"prompt": "a", "top_k": 3}', 400, "top_k: unknown key"),
        (b'{"prompt": 5}', 400, "prompt: expected a string, got 5"),
        (b'{"prompt": "123456789"}', 400, "prompt: 9 bytes is over the limit of 8 bytes"),
        (b'{"prompt": "a", "max_new_tokens": 6}', 400, "max_new_tokens: 6 is not an integer"),
        (b'{"prompt": "a", "max_new_tokens": true}', 400, "max_new_tokens: true"),
        (b'{"prompt": "a", "temperature": -1}', 400, "temperature: -1 is not a number"),
        (b'{"prompt": "a", "seed": -2}', 400, "seed: -2 is not an integer"),
    ],
)
def test_bad_requests_are_refused_with_the_field_named(body: bytes, status: int, says: str) -> None:
    with pytest.raises(RequestError) as e:
        parse_request(body, ARGS)
    assert e.value.status == status
    assert says in str(e.value)


def test_a_good_request_takes_the_defaults() -> None:
    req = parse_request(b'{"prompt": "def "}', ARGS)
    assert req == GenerateRequest(b"def ", 5, 0.0, 0)  # the default, capped at the limit


def test_args_rules_and_missing_checkpoint() -> None:
    with pytest.raises(ArgError, match="min_replicas 3 > max_replicas 2"):
        ServeLmArgs.parse({"min_replicas": 3, "max_replicas": 2})
    with pytest.raises(ArgError, match="'checkpoint' of workload serve_lm is required"):
        build_app({})


def test_batched_greedy_decoding_equals_one_by_one(tmp_path: Path) -> None:
    ckpt = tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))  # an experiment folder: its newest valid checkpoint
    assert lm.checkpoint == str(ckpt)
    reqs = [
        GenerateRequest(b"def ", 6, 0.0, 0),
        GenerateRequest(b"import", 4, 0.0, 0),
        GenerateRequest(b"x = 1", 20, 0.0, 0),  # past the 16-byte context
    ]
    batched = lm.generate(reqs)
    alone = [lm.generate([r])[0] for r in reqs]
    assert [b["tokens"] for b in batched] == [a["tokens"] for a in alone]
    assert [len(b["tokens"]) for b in batched] == [6, 4, 20]
    # mean requests per forward that decoded it: the 4-token request leaves after 4 steps,
    # the 6-token one after 6, the 20-token one decodes its last 14 tokens alone
    assert [b["batch_size"] for b in batched] == [round(16 / 6, 2), 3.0, 1.5]
    # sampling: the same seed repeats, inside a batch or alone
    sampled = GenerateRequest(b"a", 8, 1.0, 7)
    assert lm.generate([sampled, reqs[0]])[0]["tokens"] == lm.generate([sampled])[0]["tokens"]
    assert lm.health()["step"] == 3


def test_a_damaged_checkpoint_names_the_file(tmp_path: Path) -> None:
    ckpt = tiny_checkpoint(tmp_path)
    weights = ckpt / "model.pt"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model\.pt: sha256 mismatch"):
        LmGenerator(str(ckpt))
    manifest = json.loads((ckpt / "manifest.json").read_text())
    assert "model.pt" in manifest["files"]


def test_local_default_checkpoint_survives_a_forgotten_run(tmp_path: Path) -> None:
    from raygke.local.cluster import LocalError
    from raygke.local.serve import default_checkpoint

    state = {"buckets": {"checkpoints": str(tmp_path)}}
    with pytest.raises(LocalError, match="no valid checkpoint under"):
        default_checkpoint(state)
    ckpt = tiny_checkpoint(tmp_path / "lm-stdlib-20260101-000000")
    assert default_checkpoint(state) == str(ckpt)  # no last_run (after `down`): newest run
    other = tiny_checkpoint(tmp_path / "lm-other", step=5)
    assert default_checkpoint({**state, "last_run": "lm-other"}) == str(other)


def uncached_decode(lm: LmGenerator, req: GenerateRequest) -> list[int]:
    """The reference: one request alone, a full forward over the last context bytes per token."""
    import torch

    ctx = lm.model.cfg.context_length
    seq, out = list(req.prompt) or [0], []
    gen = torch.Generator().manual_seed(req.seed)
    with torch.no_grad():
        while len(out) < req.max_new_tokens:
            logits = lm.model(torch.tensor([seq[-ctx:]]))[0, -1].float()
            if req.temperature <= 0:
                nxt = int(logits.argmax())
            else:
                probs = torch.softmax(logits / req.temperature, -1)
                nxt = int(torch.multinomial(probs, 1, generator=gen))
            seq.append(nxt)
            out.append(nxt)
    return out


def test_cached_batched_decode_equals_uncached_one_by_one(tmp_path: Path) -> None:
    tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))
    reqs = [
        GenerateRequest(b"def ", 6, 0.0, 0),
        GenerateRequest(b"", 3, 0.0, 0),  # an empty prompt starts from byte 0
        GenerateRequest(b"x = 1", 20, 0.0, 0),  # runs past the 16-byte context
        GenerateRequest(b"a" * 18, 4, 0.0, 0),  # a prompt longer than the context
        GenerateRequest(b"import", 12, 0.8, 7),  # sampled: its own seeded generator
        GenerateRequest(b"import", 12, 0.8, 8),
    ]
    dec = lm.start(reqs)
    steps = 0
    while not dec.done:
        dec.step()
        steps += 1
    assert steps == 20  # one step per token of the longest request, for the whole batch
    assert dec.forwards < sum(r.max_new_tokens for r in reqs)  # batched, not one by one
    got = [dec.pop(i)["tokens"] for i in range(len(reqs))]
    assert got == [uncached_decode(lm, r) for r in reqs]
    assert got[4] != got[5]  # the seeds matter


def test_requests_join_a_running_batch_and_get_the_same_tokens(tmp_path: Path) -> None:
    tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))
    first, later = GenerateRequest(b"def ", 8, 0.0, 0), GenerateRequest(b"import os", 4, 0.9, 3)
    dec = lm.start([first])
    dec.step()
    dec.step()
    (j,) = dec.add([later])  # joins at the next step (continuous batching)
    assert dec.running == 2 and dec.cache.rows == 2
    while not dec.done:
        dec.step()
    a, b = dec.pop(0), dec.pop(j)
    assert a["tokens"] == uncached_decode(lm, first)
    assert b["tokens"] == uncached_decode(lm, later)
    assert b["batch_size"] == 2.0 and 1.0 < a["batch_size"] < 2.0  # mean requests per forward
    assert not dec.results and not dec.seqs  # nothing kept of finished requests


def test_finished_requests_leave_the_batch_and_stop_sequences_end_them(tmp_path: Path) -> None:
    tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))
    free = uncached_decode(lm, GenerateRequest(b"ab", 10, 0.0, 0))
    stop = bytes(free[3:5])  # the 4th and 5th bytes this prompt generates
    cut = next(k for k in range(4) if bytes(free[k : k + 2]) == stop)  # its first occurrence
    reqs = [GenerateRequest(b"ab", 10, 0.0, 0, (stop,)), GenerateRequest(b"ab", 2, 0.0, 0),
            GenerateRequest(b"ab", 10, 0.0, 0)]  # fmt: skip
    dec = lm.start(reqs)
    assert dec.step() == [] and dec.step() == [1]  # max_new_tokens reached: answered now
    assert dec.results[1] is not None and dec.results[1]["finish_reason"] == "length"
    assert dec.cache.rows == 2  # its cache row is gone: later forwards skip it
    finished = dec.run_until_finish()
    res = dec.results[0]
    assert finished == [0] and res is not None and res["finish_reason"] == "stop"
    assert res["tokens"] == free[:cut]  # ended there, the stop sequence cut from the answer
    assert dec.cache.rows == 1 and not dec.done
    assert dec.run_until_finish() == [2] and dec.done
    assert dec.results[2] is not None and dec.results[2]["tokens"] == free


def test_the_serve_batch_stream_answers_each_request_when_it_finishes() -> None:
    import asyncio
    from concurrent.futures import Future

    from workloads.serve_lm import stream_batch

    class Engine:  # the futures a DecodeEngine hands out, resolved here in a known order
        def __init__(self) -> None:
            self.futures: list[Future] = []

        def submit(self, requests: list[GenerateRequest]) -> list[Future]:
            self.futures = [Future() for _ in requests]
            return self.futures

    engine = Engine()
    reqs = [GenerateRequest(b"a", 5, 0.0, 0)] * 3

    async def collect() -> list[list]:
        out = []
        stream = stream_batch(engine, reqs)  # type: ignore[arg-type]
        for k in (1, 0, 2):  # request 1 finishes first, then 0, then 2
            task = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0.01)
            assert not task.done()  # nothing to say until a request finishes
            engine.futures[k].set_result({"tokens": [k]})
            out.append(await task)
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
        return out

    yields = asyncio.run(collect())
    assert yields[0] == [None, {"tokens": [1]}, None]
    assert yields[1] == [{"tokens": [0]}, StopIteration, None]  # Serve's end of stream for 1
    assert yields[2] == [StopIteration, StopIteration, {"tokens": [2]}]


def test_the_engine_caps_running_requests_and_answers_all(tmp_path: Path) -> None:
    from workloads.serve_lm import DecodeEngine

    tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))
    engine = DecodeEngine(lm, max_rows=2)
    reqs = [GenerateRequest(bytes([97 + k]), 3 + k, 0.0, 0) for k in range(5)]
    results = [f.result(timeout=60) for f in engine.submit(reqs)]
    assert [r["tokens"] for r in results] == [uncached_decode(lm, r) for r in reqs]
    assert max(r["batch_size"] for r in results) <= 2  # never more than max_rows together


@pytest.mark.parametrize(
    ("stop", "ok"),
    [("\n", True), (["a", "bc"], True), ([], True), (5, False), ([""], False),
     (["a"] * 5, False), ("x" * 65, False)],
)  # fmt: skip
def test_stop_sequences_are_parsed_or_refused(stop: object, ok: bool) -> None:
    body = json.dumps({"prompt": "a", "stop": stop}).encode()
    if ok:
        want = [stop] if isinstance(stop, str) else stop
        assert parse_request(body, ARGS).stop == tuple(s.encode() for s in want)
    else:
        with pytest.raises(RequestError, match=r"^stop: .* at most 4 non-empty strings"):
            parse_request(body, ARGS)


def test_batch_concurrency_and_threads_config() -> None:
    from workloads.serve_lm import set_torch_threads, torch_threads_for

    with pytest.raises(ArgError, match="max_ongoing_requests 4 < max_batch_size 8"):
        build_app({"checkpoint": "/x", "max_batch_size": 8, "max_ongoing_requests": 4})
    app = build_app({"checkpoint": "/x", "max_batch_size": 16, "max_ongoing_requests": 16,
                     "num_cpus": 2})  # fmt: skip
    dep = app._bound_deployment
    assert dep.max_ongoing_requests == 16 and dep.ray_actor_options["num_cpus"] == 2
    assert dep.init_args[0]["max_batch_size"] == 16
    # threads follow the replica's Ray CPUs, not the host's cores; an explicit value wins
    assert [torch_threads_for(None, c) for c in (0.5, 1, 2, 3.5)] == [1, 1, 2, 3]
    assert torch_threads_for(3, 1) == 3
    import torch

    before = torch.get_num_threads()
    try:
        assert set_torch_threads(2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_decode_error_fails_its_requests_and_the_engine_goes_on(tmp_path: Path) -> None:
    from workloads.serve_lm import DecodeEngine

    tiny_checkpoint(tmp_path)
    lm = LmGenerator(str(tmp_path))
    engine = DecodeEngine(lm, max_rows=4)
    real = lm.model.forward
    lm.model.forward = None  # the next full forward (a prompt past the context) fails
    (bad,) = engine.submit([GenerateRequest(b"a" * 20, 2, 0.0, 0)])
    with pytest.raises(TypeError):
        bad.result(timeout=60)
    lm.model.forward = real
    (good,) = engine.submit([GenerateRequest(b"ok", 3, 0.0, 0)])
    assert good.result(timeout=60)["tokens"] == uncached_decode(
        lm, GenerateRequest(b"ok", 3, 0.0, 0)
    )
