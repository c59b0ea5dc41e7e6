"""A trainer added to the registry only (a module, its argument class, one registry entry) is
picked up by every consumer: ``raygke local run``'s job list, arguments and entrypoint,
``tune_lm``'s trainer choice, ``raygke check``'s image needs and ``raygke docs`` (issue 20).

The toy trainer's module is written into a temporary package on ``sys.path``; its entry is
registered for the test only (:func:`contract.workload.registered`).
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from contract.args.base import ArgError, arg
from contract.args.train import TrainArgs
from contract.args.tune_lm import TuneLmArgs
from contract.registry import WORKLOADS, Workload, get_workload, registered, trainers

TOY_MODULE = '''
"""A toy trainer: no framework, one "step" per call."""

def tune_stepper(args, restored, threads, use_gpu):
    return ("toy stepper", args.steps), 0, None


def main(config):
    return {"steps": config["steps"], "checkpoint": "/toy/ckpt"}
'''


@dataclass(frozen=True)
class ToyLmArgs(TrainArgs):
    """Arguments of the toy trainer: the trainers' own plus one."""

    WORKLOAD: ClassVar[str] = "toy_lm"

    name: str = arg("toy_lm", "experiment (run) name under storage_path")
    wiggle: float = arg(0.5, "how much the toy wiggles", "fraction", minimum=0, maximum=1)


@dataclass(frozen=True)
class Toy2LmArgs(TrainArgs):
    WORKLOAD: ClassVar[str] = "toy2_lm"


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workload]:
    package = tmp_path / "toytrain"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "trainer.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = Workload(
        name="toy_lm",
        module="toytrain.trainer",
        description="a toy trainer registered by a test",
        args=ToyLmArgs,
        role="trainer",
        framework="",
        accelerators=("cpu",),
        writes=("checkpoints",),
        # a distribution no project image provides: the image check must name it
        needs=("toy-dist-raygke", "numpy"),
        tune_name="toy",
        tune_stepper="toytrain.trainer:tune_stepper",
    )
    with registered(entry):
        yield entry
    sys.modules.pop("toytrain.trainer", None)
    sys.modules.pop("toytrain", None)


def test_the_registry_lists_it_and_forgets_it(toy: Workload) -> None:
    assert get_workload("toy_lm") is toy
    assert "toy_lm" in trainers()
    with pytest.raises(ValueError, match="already registered"), registered(toy):
        pass
    other = Workload(name="toy2_lm", module="m", description="d", args=Toy2LmArgs)
    with registered(other):
        assert "toy2_lm" in trainers()
    assert "toy2_lm" not in WORKLOADS
    assert "toy_lm" in WORKLOADS  # the failed second registration left the first in place


def test_a_registry_entry_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="tune_name and tune_stepper go together"):
        Workload(name="toy_lm", module="m", description="d", args=ToyLmArgs, tune_name="toy")
    with pytest.raises(ValueError, match="accelerator 'npu' is not one of cpu, gpu, tpu"):
        Workload(name="toy_lm", module="m", description="d", args=ToyLmArgs, accelerators=("npu",))
    with pytest.raises(ValueError, match="WORKLOAD is 'toy_lm'"):
        Workload(name="other", module="m", description="d", args=ToyLmArgs)


def test_raygke_local_run_builds_its_job(toy: Workload) -> None:
    from raygke.local import cluster as local_cluster
    from raygke.local import jobs as local_jobs
    from raygke.local.summary import summarize

    assert local_jobs.resolve_jobs(["prepare", "toy_lm", "evaluate"], "cpu") == [
        "prepare",
        "toy_lm",
        "evaluate",
    ]
    with pytest.raises(local_cluster.LocalError, match="'toy_lm' supports cpu, not gpu"):
        local_jobs.resolve_jobs(["toy_lm"], "gpu")
    overrides = local_jobs.parse_overrides(["toy_lm.wiggle=0.25", "toy_lm.steps=3"])
    with pytest.raises(local_cluster.LocalError, match="'wiggle' of workload toy_lm is 2"):
        local_jobs.parse_overrides(["toy_lm.wiggle=2"])
    state = {"buckets": {b: f"/b/{b}" for b in local_cluster.BUCKETS}, "tpu": None}
    args = local_jobs.job_args("toy_lm", state, None, "run-1", {}, overrides=overrides)
    assert args == {
        "dataset": "/b/datasets/stdlib",
        "storage_path": "/b/checkpoints",
        "name": "run-1",
        "wiggle": 0.25,
        "steps": 3,
    }
    command = shlex.split(toy.entrypoint(args))
    assert command[:3] == ["python", "-m", "toytrain.trainer"]
    assert json.loads(command[-1])["wiggle"] == 0.25
    # evaluate scores the checkpoint the toy trainer reported in this run
    results = {"toy_lm": {"checkpoint": "/toy/ckpt", "steps": 3}}
    ev = local_jobs.job_args("evaluate", state, None, "run-1", results)
    assert ev["checkpoint"] == "/toy/ckpt"
    assert summarize(results)["steps"] == 3


def test_tune_lm_can_choose_it(toy: Workload) -> None:
    from workloads.tune_lm import trainer_stepper, trial_args

    sweep = TuneLmArgs.parse({"trainer": "toy"})
    stepper = trainer_stepper("toy")
    config = {"lr": 2e-3, "warmup": 10, "d_model": 64, "n_layers": 2, "batch_size": 8}
    targs = trial_args(sweep, config, 64)
    assert isinstance(targs, ToyLmArgs) and targs.d_model == 64
    assert stepper(targs, None, 1, False) == (("toy stepper", sweep.steps), 0, None)
    assert get_workload("tune_lm").needs_for({"trainer": "toy"})[-1] == "toy-dist-raygke"


def test_tune_lm_refuses_it_once_unregistered(toy: Workload) -> None:
    from contract.registry import unregister

    unregister("toy_lm")
    try:
        with pytest.raises(ArgError, match="'trainer' of workload tune_lm is 'toy'; must be one"):
            TuneLmArgs.parse({"trainer": "toy"})
    finally:
        from contract.registry import register

        register(toy)


def test_raygke_check_asks_its_image_for_its_needs(toy: Workload) -> None:
    from components.images.checks import dependency_problems
    from components.plan.plan import plan
    from components.stack.loader import validate
    from tests.helpers import config

    cfg = validate(config(jobs=[{"name": "toy", "workload": "toy_lm", "node_pool": "cpu"}]))
    (line,) = dependency_problems(plan(cfg), cfg.ray.images)
    assert line.startswith("jobs[toy]: workload toy_lm needs toy-dist-raygke"), line


def test_raygke_docs_documents_its_arguments(toy: Workload) -> None:
    from components.config.reference import render_reference
    from raygke.cli import app

    text = render_reference()
    section = text[text.index("### `toy_lm`") :]
    assert "| `wiggle` | float | `0.5` | fraction | how much the toy wiggles |" in section
    result = CliRunner().invoke(app, ["docs"])
    assert result.exit_code == 0 and "### `toy_lm`" in result.stdout
    assert "toy_lm" in WORKLOADS
