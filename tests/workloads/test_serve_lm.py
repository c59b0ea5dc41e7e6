"""``workloads.serve_lm`` without Ray: request limits, checkpoint verification, batched decoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.args import ArgError, ServeLmArgs
from workloads.checkpoint import CheckpointError
from workloads.lm_config import ModelConfig
from workloads.serve_lm import GenerateRequest, LmGenerator, RequestError, build_app, parse_request

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
    assert {b["batch_size"] for b in batched} == {3}
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
    from raygke.local_cluster import LocalError
    from raygke.local_serve import default_checkpoint

    state = {"buckets": {"checkpoints": str(tmp_path)}}
    with pytest.raises(LocalError, match="no valid checkpoint under"):
        default_checkpoint(state)
    ckpt = tiny_checkpoint(tmp_path / "lm-stdlib-20260101-000000")
    assert default_checkpoint(state) == str(ckpt)  # no last_run (after `down`): newest run
    other = tiny_checkpoint(tmp_path / "lm-other", step=5)
    assert default_checkpoint({**state, "last_run": "lm-other"}) == str(other)
