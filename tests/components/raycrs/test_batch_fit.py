"""A batch-inference job (``batch_generate``) rendered as a RayJob (components/raycrs/batch_fit.py,
rayjob.py): the platform's arguments per pool kind, the vLLM image of its pods, and what
``raygke check`` refuses, one line each."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from components.config.stack import StackConfig
from components.images.render import planned_refs
from components.plan.plan import plan
from components.raycrs.batch_fit import batch_job_problems
from components.raycrs.rayjob import ray_job_manifest
from components.stack.loader import validate
from components.stack.rules import run_rule
from tests.helpers import WORKING_DIR, config

PROMPTS = "gs://ray-gke-test-ray-test-datasets/prompts/"


IDENTITIES = [
    {
        "name": "ray-train",
        "buckets": {"datasets": "write", "checkpoints": "write", "artifacts": "write"},
    },
]


def _data(**job: Any) -> dict[str, Any]:
    """A stack whose job ``train`` trains the model and job ``gen`` generates with it."""
    entry = {"name": "gen", "workload": "batch_generate", "node_pool": "l4", **job}
    entry["args"] = {"name": "train", **entry.get("args", {"prompts": PROMPTS})}
    train = {"name": "train", "workload": "train_lm", "node_pool": "cpu"}
    return config(jobs=[train, entry], workload_identities=IDENTITIES)


def _job_args(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = validate(data)
    job = cfg.jobs[1]
    manifest = ray_job_manifest(
        plan(cfg), plan(cfg).job(job), WORKING_DIR, planned_refs(plan(cfg).context, cfg.ray.images)
    )
    parts = shlex.split(manifest["spec"]["entrypoint"])
    return json.loads(parts[parts.index("--config-json") + 1]), manifest


def _refused(data: dict[str, Any]) -> list[str]:
    """The rule's lines on the field-valid stack (``raygke check`` runs it as
    ``batch_job_problems``)."""
    return [str(p) for p in run_rule(batch_job_problems, StackConfig.model_validate(data))]


@pytest.mark.parametrize(
    ("pool", "kind", "expected"),
    [
        ("l4", "gpu", {"accelerator": "gpu", "accelerator_type": "L4", "tensor_parallel_size": 1,
                       "concurrency": 2}),
        ("v5e", "tpu-serve", {"accelerator": "tpu", "accelerator_type": "TPU-V5LITEPOD",
                              "tensor_parallel_size": 4, "concurrency": 3}),
        ("cpu", "cpu-serve", {"accelerator": "cpu", "tensor_parallel_size": 1, "concurrency": 2}),
    ],
)  # fmt: skip
def test_the_platform_sets_the_engines_and_the_vllm_image(
    pool: str, kind: str, expected: dict[str, Any]
) -> None:
    """l4: 2 nodes of 1 L4; v5e: 3 single-host 2x2 slices of 4 chips; cpu: 2 nodes, one engine
    each. The model is read through the checkpoints mount, the output goes to the bucket."""
    args, manifest = _job_args(_data(node_pool=pool))
    ctx = plan(validate(_data(node_pool=pool))).context
    assert {k: args.get(k) for k in expected} == expected
    assert "accelerator_type" in expected or args.get("accelerator_type") is None
    assert args["storage_path"] == "/mnt/gcs/checkpoints" and args["name"] == "train"
    assert args["artifacts"] == f"gs://{ctx.buckets['artifacts']}"
    cluster = manifest["spec"]["rayClusterSpec"]
    (group,) = cluster["workerGroupSpecs"]
    worker_image = group["template"]["spec"]["containers"][0]["image"]
    head_image = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    assert worker_image.rsplit("/", 1)[-1].startswith(f"ray-{kind}:"), worker_image
    # the driver (build_processor) runs on the head: the workers' vLLM image there too
    assert head_image == worker_image


def test_a_job_may_set_more_engines_per_pool_and_a_smaller_tensor_parallel_size() -> None:
    """v5e: 3 slices of 4 chips hold 6 engines of 2 chips."""
    args, _ = _job_args(
        _data(node_pool="v5e", args={"prompts": PROMPTS, "tensor_parallel_size": 2,
                                     "concurrency": 6})
    )  # fmt: skip
    assert (args["tensor_parallel_size"], args["concurrency"]) == (2, 6)


@pytest.mark.parametrize(
    ("job", "line"),
    [
        ({"node_pool": "v6e"},
         "jobs[gen].node_pool: 'v6e', a multi-host 4x4 slice (allowed: a GPU pool, a CPU pool or "
         "a single-host TPU slice: Ray 2.60's vLLMEngineProcessorConfig has no TPU topology, so "
         "one engine cannot span the slice's hosts; multi-host TPU batch inference is "
         "ray-project/ray#65422)"),
        ({"node_pool": "v5e", "args": {"prompts": PROMPTS, "tensor_parallel_size": 8}},
         "jobs[gen].args.tensor_parallel_size: 8 (allowed: at most the 4 TPU device(s) of one "
         "node of pool 'v5e')"),
        ({"node_pool": "l4", "args": {"prompts": PROMPTS, "concurrency": 3}},
         "jobs[gen].args.concurrency: 3 (allowed: at most 2, the engines the job's 2 pod(s) of "
         "pool 'l4' hold)"),
        ({"node_pool": "cpu", "args": {"prompts": PROMPTS, "tensor_parallel_size": 2}},
         "jobs[gen].args.tensor_parallel_size: 2 (allowed: 1 on CPU pool 'cpu': an engine of "
         "vLLM's CPU build is one process; give it more CPUs with args.num_cpus)"),
        ({"node_pool": "cpu", "args": {"prompts": PROMPTS, "artifacts": "gs://elsewhere"}},
         "jobs[gen].args.artifacts: 'gs://elsewhere' (allowed: unset; the platform sets it from "
         "the artifacts bucket)"),
    ],
)  # fmt: skip
def test_what_cannot_run_is_refused_one_line_each(job: dict[str, Any], line: str) -> None:
    assert line in _refused(_data(**job))


def test_shipped_stacks_have_no_batch_problems() -> None:
    from tests.helpers import stack

    for name in ("dev", "prod", "scale"):
        assert run_rule(batch_job_problems, stack(name)) == []
