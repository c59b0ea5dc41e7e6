"""tune_lm without Ray: arguments, search space bounds, per-trial resources, the trials table."""

from __future__ import annotations

import pytest

from contract.args.base import ArgError
from contract.args.tune_lm import TuneLmArgs
from workloads.tune_lm import _row, format_table, trial_id, trial_resources


def test_rules_name_the_field_and_the_allowed_values() -> None:
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"widths": [96, 130], "n_heads": 4})
    assert e.value.problems == [
        "workload tune_lm: n_heads 4 does not divide width(s) 130 (d_model)"
    ]
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"trainer": "mxnet"})
    assert "must be one of torch, jax, tf" in e.value.problems[0]
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"lr_min": 0.02, "lr_max": 0.01})
    assert "lr_min 0.02 is above lr_max 0.01" in e.value.problems[0]
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"scaling": {"num_workers": 1, "use_tpu": True}})
    assert "needs trainer 'jax'" in e.value.problems[0]
    with pytest.raises(ArgError):
        TuneLmArgs.parse({"batch_sizes": []})


def test_every_tune_trainer_is_accepted_and_brings_a_tune_stepper() -> None:
    from workloads.tune_lm import trainer_stepper

    for name in ("torch", "jax", "tf"):
        assert TuneLmArgs.parse({"trainer": name}).trainer == name
        assert callable(trainer_stepper(name)), name


def test_tf_trainer_on_a_gpu_pool_is_accepted_by_the_arguments() -> None:
    """train_lm_tf runs on GPU pools (in the gpu-tf image), so the arguments accept trainer tf
    with a GPU ScalingConfig (the image check refuses a GPU tune_lm job that needs both
    TensorFlow and torch: components/images/checks.py); TPU slices need trainer jax."""
    from contract.registry import get_workload

    gpu = {"num_workers": 2, "use_gpu": True, "resources_per_worker": {"GPU": 1}}
    assert get_workload("train_lm_tf").refusal("gpu") is None
    assert TuneLmArgs.parse({"trainer": "tf", "scaling": gpu}).trainer == "tf"
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"trainer": "tf", "scaling": {"num_workers": 1, "use_tpu": True}})
    assert "needs trainer 'jax', not 'tf'" in e.value.problems[0]


def test_a_trial_scales_muons_lr_with_the_sampled_lr() -> None:
    from contract.args.train_lm import TrainLmArgs
    from workloads.tune_lm import trial_args

    config = {"lr": 1.5e-3, "warmup": 10, "d_model": 64, "n_layers": 2, "batch_size": 8}
    args = trial_args(TuneLmArgs.parse({}), config, 64)
    ratio = TrainLmArgs.defaults()["muon_lr"] / TrainLmArgs.defaults()["lr"]
    assert args.lr == 1.5e-3
    assert args.muon_lr == pytest.approx(1.5e-3 * ratio)
    assert args.optimizer == "muon"


def test_search_space_stays_within_its_bounds() -> None:
    pytest.importorskip("ray")
    from workloads.tune_lm import search_space

    args = TuneLmArgs.parse({"lr_min": 1e-3, "lr_max": 1e-2, "widths": [64], "depths": [2]})
    space = search_space(args)
    lrs = [space["lr"].sample() for _ in range(200)]
    assert all(1e-3 <= x <= 1e-2 for x in lrs)
    assert {space["d_model"].sample() for _ in range(20)} == {64}
    assert {space["optimizer"].sample() for _ in range(20)} == {"muon"}  # the default list
    both = search_space(TuneLmArgs.parse({"optimizers": ["muon", "adamw"]}))
    assert {both["optimizer"].sample() for _ in range(40)} == {"muon", "adamw"}
    with pytest.raises(ArgError) as e:
        TuneLmArgs.parse({"optimizers": ["sgd"]})
    assert "'sgd' is not one of 'muon', 'adamw'" in e.value.problems[0]


def test_each_trial_takes_one_worker_of_the_pool() -> None:
    assert trial_resources(TuneLmArgs.parse({})) == {"CPU": 1.0}
    gpu = {"num_workers": 4, "use_gpu": True, "resources_per_worker": {"GPU": 1}}
    assert trial_resources(TuneLmArgs.parse({"scaling": gpu})) == {"CPU": 1.0, "GPU": 1.0}
    tpu = {"num_workers": 4, "use_tpu": True, "resources_per_worker": {"TPU": 4}}
    args = TuneLmArgs.parse({"scaling": tpu, "trainer": "jax", "cpus_per_trial": 2})
    assert trial_resources(args) == {"CPU": 2.0, "TPU": 4.0}


def test_table_sorts_by_validation_loss_and_shows_unstarted_trials() -> None:
    row = {"lr": 1e-3, "warmup": 10, "d_model": 64, "n_layers": 2, "batch_size": 8, "steps": 4}
    rows = [
        {**row, "trial": "a", "val_loss": 2.5, "status": "stopped early", "exploited": False},
        {**row, "trial": "b", "val_loss": 2.0, "status": "finished", "exploited": True},
        {
            **row,
            "trial": "c",
            "lr": None,
            "val_loss": None,
            "status": "not started",
            "exploited": False,
            "steps": 0,
        },
    ]
    lines = format_table(rows).splitlines()
    assert [ln.split("|")[1].strip() for ln in lines[2:]] == ["b", "a", "c"]
    assert "finished (exploited)" in lines[2] and "| - |" in lines[4]


def test_trial_id_from_folder_name() -> None:
    name = "trainable_e4ce1_00003_3_batch_size=16,d_model=192_2026-11-30_08-06-11"
    assert trial_id(f"/x/{name}") == "e4ce1_00003"


def test_a_trial_tune_did_not_end_is_interrupted_even_with_every_step_reported() -> None:
    """An interrupt between a trial's last report and Tune processing its checkpoint leaves the
    step count complete but ``done`` unset: a restore runs the trial again, so it is not
    "finished" (CI saw such a trial's checkpoint change across a resume)."""
    from types import SimpleNamespace

    def result(**metrics: object) -> SimpleNamespace:
        path = "/runs/x/trainable_a292f_00001_1_lr=0.001_2026-12-07"
        return SimpleNamespace(
            metrics=metrics,
            metrics_dataframe=None,
            config={},
            error=None,
            path=path,
            checkpoint=None,
        )

    assert _row(result(step=6, done=True), 6)["status"] == "finished"
    assert _row(result(step=3, done=True), 6)["status"] == "stopped early"
    assert _row(result(step=6, done=False), 6)["status"] == "interrupted"
    assert _row(result(step=3), 6)["status"] == "interrupted"
    assert _row(result(), 6)["status"] == "not started"
