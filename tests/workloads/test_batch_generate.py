"""``workloads.batch_generate`` without Ray or vLLM: the model it resolves and checks, the
prompt sets it accepts or refuses (before any engine starts), the rows it sends and writes, and
Ray Data LLM's processor settings per accelerator. The run itself is
tests/raygke/local/test_batch_generate.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.args.batch_generate import BatchGenerateArgs
from tests.workloads.test_serve_llm import tiny_hf_folder
from workloads.batch_generate import (
    ModelLoadError,
    PromptError,
    _input_keys,
    main,
    max_model_len_for,
    processor_settings,
    prompt_files,
    resolve,
    to_output,
    to_request,
)


def _args(**kw: object) -> BatchGenerateArgs:
    return BatchGenerateArgs.parse({"prompts": "/p", **kw})


def test_cpu_engine_settings_match_a_cpu_serving_replica(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m", n_positions=64)
    args = _args(num_cpus=2, cpu_kv_cache_gb=2, concurrency=3, batch_size=8, seed=7)
    s = processor_settings(args, str(folder), max_model_len_for(args, str(folder)))
    assert s["model_source"] == str(folder) and (s["concurrency"], s["batch_size"]) == (3, 8)
    assert s["engine_kwargs"] == {
        "dtype": "float32", "tensor_parallel_size": 1, "seed": 7, "max_model_len": 64,
        "enforce_eager": True,
    }  # fmt: skip
    assert s["placement_group_config"] == {"bundles": [{"CPU": 2}], "strategy": "PACK"}
    env = s["runtime_env"]["env_vars"]
    assert (env["VLLM_CPU_KVCACHE_SPACE"], env["OMP_NUM_THREADS"]) == ("2", "2")
    # the engine tokenizes and detokenizes itself: no extra actor pools
    assert not (s["chat_template_stage"] or s["tokenize_stage"] or s["detokenize_stage"])
    assert "accelerator_type" not in s


def test_gpu_and_tpu_engine_settings() -> None:
    gpu = processor_settings(
        _args(accelerator="gpu", accelerator_type="L4", tensor_parallel_size=2), "m", 128
    )
    assert "placement_group_config" not in gpu and "runtime_env" not in gpu  # Ray Data's own
    assert gpu["accelerator_type"] == "L4" and gpu["engine_kwargs"]["tensor_parallel_size"] == 2
    tpu = processor_settings(
        _args(accelerator="tpu", accelerator_type="TPU-V6E", tensor_parallel_size=4), "m", None
    )
    # one process over the host's chips: the actor itself holds them (vllm-tpu's uni executor)
    assert tpu["engine_kwargs"]["distributed_executor_backend"] == "uni"
    assert tpu["placement_group_config"]["bundles"] == [{"CPU": 1, "TPU": 4}]
    assert "max_model_len" not in tpu["engine_kwargs"]  # a Hub model: vLLM's own


def test_the_model_is_the_newest_verifying_checkpoint_of_the_run(tmp_path: Path) -> None:
    from workloads.checkpoint import write_checkpoint

    run = tmp_path / "runs" / "r"
    for step in (1, 2):
        write_checkpoint(
            run / f"checkpoint_00000{step}", lambda d: tiny_hf_folder(d / "hf"), {"step": step}
        )
    args = _args(storage_path=str(tmp_path / "runs"), name="r")
    assert resolve(args) == str(run / "checkpoint_000002" / "hf")
    # an explicit checkpoint wins over the run, a model over both
    one = str(run / "checkpoint_000001")
    assert resolve(_args(storage_path=str(tmp_path / "runs"), name="r", checkpoint=one)) == (
        f"{one}/hf"
    )
    assert resolve(_args(model="owner/name", checkpoint=one)) == "owner/name"


def test_a_model_that_cannot_start_is_one_line_before_any_engine(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m", n_positions=64)
    with pytest.raises(ModelLoadError, match=r"max_model_len: 128 \(allowed: at most the"):
        main({"prompts": str(tmp_path), "model": str(folder), "max_model_len": 128})
    with pytest.raises(ModelLoadError, match=r"no config\.json"):
        main({"prompts": str(tmp_path), "model": str(tmp_path / "nothing")})


def test_prompt_sets_are_one_kind_and_each_json_line_has_a_prompt(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": 1, "prompt": "x"}) + "\n")
    (tmp_path / "notes.md").write_text("ignored\n")
    kind, files = prompt_files(str(tmp_path))
    assert (kind, files) == ("jsonl", [str(tmp_path / "a.jsonl")])
    assert _input_keys(kind, files) == ("prompt", "id")
    (tmp_path / "b.txt").write_text("def f(\n")
    with pytest.raises(PromptError, match=r"both JSON lines .* and text .* files"):
        prompt_files(str(tmp_path))
    assert prompt_files(str(tmp_path / "*.txt")) == ("text", [str(tmp_path / "b.txt")])
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": "x"}) + "\n")
    with pytest.raises(PromptError, match=r"c.jsonl: the first line has no string 'prompt'"):
        _input_keys("jsonl", [str(tmp_path / "c.jsonl")])
    with pytest.raises(PromptError, match=r"no \.jsonl, \.json, \.txt file among 1 file"):
        prompt_files(str(tmp_path / "notes.md"))


def test_rows_sent_and_written() -> None:
    sampling = {"max_tokens": 4, "temperature": 0.0, "seed": 0}
    # a .txt line (Ray Data's text column) becomes the prompt; the file path is dropped
    assert to_request({"text": "def f(", "path": "/p/a.txt"}, sampling) == {
        "prompt": "def f(",
        "sampling_params": sampling,
    }
    with pytest.raises(PromptError, match=r"/p/b.jsonl: a line has no string 'prompt'"):
        to_request({"id": 3, "path": "/p/b.jsonl"}, sampling)
    engine_row = {
        "id": 3, "prompt": "ab", "sampling_params": sampling, "generated_text": "cd",
        "num_input_tokens": 2, "num_generated_tokens": 2, "request_id": "x", "batch_uuid": "y",
    }  # fmt: skip
    assert to_output(engine_row, ("prompt", "id")) == {
        "prompt": "ab", "id": 3, "completion": "cd", "prompt_tokens": 2, "completion_tokens": 2,
    }  # fmt: skip


def test_an_output_folder_with_completions_is_refused(tmp_path: Path) -> None:
    folder = tiny_hf_folder(tmp_path / "m", n_positions=64)
    (tmp_path / "p.txt").write_text("x\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-00000.jsonl").write_text("{}\n")
    with pytest.raises(PromptError, match=r"already holds \.jsonl files; give a new folder"):
        main({"prompts": str(tmp_path / "p.txt"), "model": str(folder), "output": str(out)})
