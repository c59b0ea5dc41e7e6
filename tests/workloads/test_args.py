"""Typed workload arguments (contract/args/): checks, defaults, docs rows, binding. No Ray."""

from __future__ import annotations

import datetime
import json
import shlex

import pytest

from components.plan.plan import plan
from contract.args.base import ArgError, JobContext, parse_value
from contract.args.train_lm import TrainLmArgs
from contract.args.train_lm_jax import TrainLmJaxArgs
from contract.registry import WORKLOADS, args_classes, bind_job_args, get_workload
from tests.helpers import stack


def test_every_registered_workload_has_its_dataclass() -> None:
    assert set(args_classes()) == set(WORKLOADS)
    for name, w in WORKLOADS.items():
        assert w.args is args_classes()[name] and name == w.args.WORKLOAD
        assert dict(w.default_args) == w.args.defaults() == w.args.parse().to_dict()


def test_optional_arguments_are_type_checked_and_a_yaml_date_is_one_readable_line() -> None:
    ev = get_workload("evaluate")
    problems = ev.arg_problems({"checkpoint": datetime.date(2001, 12, 14)})
    assert problems == [
        "argument 'checkpoint' of workload evaluate is datetime.date(2001, 12, 14) (a date); "
        "expected str or None"
    ]
    assert ev.arg_problems({"checkpoint": None}) == []
    with pytest.raises(ArgError) as e:
        ev.entrypoint({"checkpoint": datetime.date(2001, 12, 14)})  # never reaches json.dumps
    assert "checkpoint" in str(e.value)
    assert get_workload("train_lm").arg_problems({"keep_checkpoints": "3"}) == [
        "argument 'keep_checkpoints' of workload train_lm is '3'; expected int or None"
    ]


def test_bools_ints_floats_literals_and_minimums() -> None:
    p = TrainLmArgs.problems
    assert p({"lr": 1, "use_gpu": True, "steps": 3}) == []
    assert p({"steps": True}) == [
        "argument 'steps' of workload train_lm is True; expected int (e.g. 450)"
    ]
    assert p({"batch_size": 0}) == ["argument 'batch_size' of workload train_lm is 0; must be >= 1"]
    assert TrainLmJaxArgs.problems({"compute_dtype": "fp8"}) == [
        "argument 'compute_dtype' of workload train_lm_jax is 'fp8'; expected one of 'auto', "
        "'bfloat16', 'bf16', 'float32' (e.g. 'auto')"
    ]
    assert (
        "unknown argument 'use_gpu' for workload train_lm_jax"
        in TrainLmJaxArgs.problems({"use_gpu": True})[0]
    )


def test_argument_problems_are_problems_of_the_argument_and_rules_of_none() -> None:
    """Each argument's problem is a Problem whose path is the argument's name (so a caller tells
    them from the workload's rules over several by the data, not by the words); a rule over
    several arguments is a Problem of none; an ArgError holds them as Problems."""
    from contract.args.serve_llm import ServeLlmArgs
    from contract.problems import Problem

    (unknown,) = TrainLmJaxArgs.problems({"use_gpu": True})
    (low,) = TrainLmArgs.problems({"batch_size": 0})
    assert isinstance(unknown, Problem) and (unknown.path, low.path) == ("use_gpu", "batch_size")
    assert str(low) == "argument 'batch_size' of workload train_lm is 0; must be >= 1"
    rules = ServeLlmArgs.problems({"model": "m", "min_replicas": 3, "max_replicas": 2})
    assert rules and all(p.path == "" and p.startswith("workload serve_llm: ") for p in rules)
    err = ArgError(["a plain line", low])
    assert [(p.path, str(p)) for p in err.problems] == [("", "a plain line"), ("batch_size", low)]


def test_scaling_shape_is_checked_the_same_for_both_trainers() -> None:
    for cls in (TrainLmArgs, TrainLmJaxArgs):
        assert cls.problems({"scaling": {"num_workers": 2, "use_gpu": True}}) == []
        (bad,) = cls.problems({"scaling": {"workers": 2}})
        assert "unknown ScalingConfig key(s) workers" in bad
        (bad,) = cls.problems({"scaling": {"use_gpu": True}})
        assert "needs num_workers" in bad


def test_scaling_of_every_pool_kind_fits_both_trainers() -> None:
    """components/raycrs/scaling.py's output (CPU, GPU, TPU pools) is a valid `scaling` for
    train_lm and train_lm_jax alike."""
    from components.raycrs.scaling import scaling_config_for_pool

    cfg = stack("prod")
    kinds = set()
    for pool in cfg.node_pools:
        scaling = scaling_config_for_pool(pool, 2)
        kinds.add(pool.kind)
        for cls in (TrainLmArgs, TrainLmJaxArgs):
            assert cls.parse({"scaling": scaling}).scaling == scaling
    assert kinds >= {"cpu", "gpu", "tpu"}


def test_docs_rows_give_type_default_unit_and_meaning() -> None:
    rows = {r.name: r for r in get_workload("train_lm_jax").arg_rows()}
    assert rows["peak_flops_per_device"].type == "float or None"
    assert rows["peak_flops_per_device"].unit == "FLOP/s"
    assert rows["steps"].default == "600" and rows["steps"].unit == "steps"
    assert all(r.doc for w in WORKLOADS.values() for r in w.arg_rows())
    assert list(rows) == list(TrainLmJaxArgs.names())


def test_parse_value_is_json_else_string() -> None:
    assert parse_value("10") == 10 and parse_value("true") is True
    assert parse_value('{"a": 1}') == {"a": 1} and parse_value("x y") == "x y"


def test_binding_keeps_what_the_workload_takes_and_explicit_args_win() -> None:
    ctx = JobContext(
        dataset="gs://d/lm",
        storage_path="gs://c",
        scaling={"num_workers": 4, "use_gpu": True},
        max_failures=3,
        peak_flops_per_device=1e15,
        data="gs://corpus",
    )
    assert bind_job_args("prepare", ctx, {"num_shards": 2}) == {
        "dataset": "gs://d/lm",
        "data": "gs://corpus",
        "num_shards": 2,
    }
    train = bind_job_args("train_lm", ctx, {"max_failures": 0})
    assert train["scaling"] == {"num_workers": 4, "use_gpu": True}
    assert train["max_failures"] == 0 and "peak_flops_per_device" not in train
    assert bind_job_args("train_lm_jax", ctx)["peak_flops_per_device"] == 1e15
    with pytest.raises(ArgError, match="unknown argument 'use_gpu' for workload train_lm_jax"):
        bind_job_args("train_lm_jax", ctx, {"use_gpu": True})
    with pytest.raises(KeyError, match="valid names"):
        bind_job_args("nope", ctx)


def test_gke_and_local_bind_through_the_same_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """components/raycrs/rayjob.job_args and raygke/local/jobs.job_args both call
    contract.registry.bind_job_args."""
    import components.raycrs.rayjob as rayjob
    import raygke.local.jobs as lj

    calls = []

    def spy(workload, context, args=None):
        calls.append(workload)
        return {"marker": workload}

    monkeypatch.setattr(rayjob, "bind_job_args", spy)
    monkeypatch.setattr(lj, "bind_job_args", spy)
    cfg = stack("prod")
    job = next(j for j in cfg.jobs if j.workload == "train_lm")
    assert rayjob.job_args(plan(cfg).context, plan(cfg).job(job)) == {"marker": "train_lm"}
    state = {"buckets": {b: f"/b/{b}" for b in ("datasets", "checkpoints", "artifacts")}}
    assert lj.job_args("evaluate", state, None, "r", {}) == {"marker": "evaluate"}
    assert calls == ["train_lm", "evaluate"]


def test_entrypoint_carries_every_default() -> None:
    w = get_workload("prepare")
    payload = json.loads(shlex.split(w.entrypoint({"num_shards": 2}))[-1])
    assert payload == {**w.args.defaults(), "num_shards": 2}


def test_markdown_table_has_a_row_per_argument() -> None:
    from contract.registry import markdown_table

    table = markdown_table("prepare").splitlines()
    assert len(table) == 2 + len(args_classes()["prepare"].names())
    assert any(row.startswith("| `context_length` | int | `256` | bytes |") for row in table)


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"lr": float("nan")}, "must be a finite number"),
        ({"lr": float("inf")}, "must be a finite number"),
        ({"dropout": 2.0}, "must be <= 1"),
        ({"steps": 10**23}, "exact JSON integer"),
        ({"n_heads": 3}, "n_heads 3 does not divide d_model 128"),
    ],
)
def test_numbers_a_trainer_cannot_use_are_refused(values: dict, needle: str) -> None:
    """Values that pass a type check but fail at run time, after the cluster is up: NaN/inf
    learning rates (and NaN is not JSON), dropout above 1 (torch.nn.Dropout needs 0 <= p <= 1),
    integers past what JSON carries exactly, heads that do not divide the width."""
    for workload in ("train_lm", "train_lm_jax"):
        found = args_classes()[workload].problems(values)
        assert len(found) == 1 and needle in found[0], found


def test_the_contracts_model_defaults_are_the_models() -> None:
    """contract/ cannot import workloads.lm_config; its copy of the defaults must agree."""
    import dataclasses

    from workloads.lm_config import ModelConfig

    model = ModelConfig()
    defaults = TrainLmArgs.defaults()
    for f in dataclasses.fields(ModelConfig):
        if f.name != "context_length":
            assert defaults[f.name] == getattr(model, f.name), f.name


def test_test_hooks_are_not_arguments() -> None:
    """The fault hooks live in workloads/faults.py (RAYGKE_TEST_FAULTS), not in any
    workload's arguments, so the job argument reference never shows them."""
    for w in WORKLOADS.values():
        assert not {"fail_at_step", "fail_marker"} & set(w.args.names()), w.name
