"""``raygke local run batch_generate`` on a real local cluster (head + 1 worker, one CPU each, on
free ports under tmp_path): a trained model's experiment folder (a checkpoint whose ``hf/`` is
a tiny random GPT-2 with the byte tokenizer, as the trainers export it) completes a JSON-lines
prompt set with vLLM's CPU build under Ray Data (``ray.data.llm``), and the completions land in
the local artifacts bucket, one row per prompt with its own keys. One cluster, one engine, one
test (2 shared cores): vLLM's start is most of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raygke.local import cluster as local_cluster
from tests.raygke.local.test_commands import RAYGKE, _raygke, _stack_file
from tests.workloads.test_serve_llm import tiny_hf_folder

pytestmark = pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")

PROMPTS = [
    {"id": "a", "prompt": "def add(x, y):"},
    {"id": "b", "prompt": "class Point:"},
    {"id": "c", "prompt": "def add(x, y):"},  # the same prompt: greedy gives the same text
]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.vllm
def test_local_batch_generate_writes_completions_from_a_trained_model(tmp_path: Path) -> None:
    from workloads.checkpoint import write_checkpoint

    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    run = tmp_path / "runs" / "lm-run"
    write_checkpoint(
        run / "checkpoint_000003",
        lambda d: tiny_hf_folder(d / "hf", n_positions=64),
        {"step": 3},
    )
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "set.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    summary = tmp_path / "summary.json"
    try:
        r = _raygke("up", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        state = json.loads((tmp_path / "root" / "t" / "state.json").read_text())
        r = _raygke(
            "run", "batch_generate", "--config", str(cfg), "--summary-json", str(summary),
            "--set", f"batch_generate.prompts={prompts}",
            "--set", f"batch_generate.model={run}",
            "--set", "batch_generate.max_tokens=4",
            "--set", "batch_generate.batch_size=2",
            cwd=tmp_path, timeout=1200,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        assert "batch_generate succeeded" in r.stdout
        result = json.loads(summary.read_text())
        assert result["ok"] and result["jobs"]["batch_generate"]["status"] == "SUCCEEDED"

        # the completions are in the local artifacts bucket, under generations/<run name>/
        artifacts = Path(state["buckets"]["artifacts"])
        outputs = sorted((artifacts / "generations").glob("*/*/part-*.jsonl"))
        assert outputs, sorted(p for p in artifacts.rglob("*") if "working_dir" not in p.parts)
        assert f"written to {outputs[0].parent}" in r.stdout
        rows = [json.loads(line) for p in outputs for line in p.read_text().splitlines()]
        by_id = {row["id"]: row for row in rows}
        assert sorted(by_id) == ["a", "b", "c"] and len(rows) == 3
        for p in PROMPTS:
            row = by_id[p["id"]]
            assert row["prompt"] == p["prompt"]
            # the model's own tokenizer: one token per byte (tests/workloads/test_serve_llm.py)
            assert row["prompt_tokens"] == len(p["prompt"].encode())
            assert 1 <= row["completion_tokens"] <= 4 and isinstance(row["completion"], str)
        assert by_id["a"]["completion"] == by_id["c"]["completion"]  # greedy, seeded
    finally:
        _raygke("down", "--config", str(cfg), cwd=tmp_path)
