"""raygke/local/capacity.py without Ray: what a job needs, whether it fits what a cluster has
free, the refusal's numbers and fixes, and the watch that stops a job waiting forever."""

from __future__ import annotations

import pytest

from raygke.local.capacity import (
    HANG_FOREVER,
    JobStalled,
    Need,
    StallWatch,
    fits,
    job_need,
    refusal,
)

TWO_NODES = [{"CPU": 1.0, "memory": 1e9}, {"CPU": 1.0, "memory": 1e9}]


def test_a_trainer_needs_its_workers_and_a_cpu_for_ray_datas_reads() -> None:
    need = job_need("train_lm", {"num_workers": 2, "cpus_per_worker": 1.5})
    assert need.workers == 2 and need.per_worker == {"CPU": 1.5} and need.task_cpus == 1.0
    assert need.total() == {"CPU": 4.0}
    assert need.describe() == "2 workers x 1.5 CPU + 1 CPU for Ray Data's tasks = 4 CPU"
    assert need.sets_workers
    gpu = job_need("train_lm", {"use_gpu": True})
    assert gpu.per_worker == {"CPU": 1.0, "GPU": 1.0}
    elastic = job_need("train_lm", {"scaling": {"num_workers": [2, 4]}})
    assert elastic.workers == 2 and not elastic.sets_workers  # the fewest an elastic run starts


def test_prepare_needs_one_cpu_and_evaluate_nothing() -> None:
    assert job_need("prepare", {}).total() == {"CPU": 1.0}
    assert job_need("evaluate", {}).total() == {}


def test_the_silent_hang_serve_holding_one_of_two_cpus_does_not_fit_train_lm() -> None:
    """The first hour's hang: Serve holds one of the two CPUs; train_lm's worker takes the
    other and Ray Data's read never gets a CPU."""
    need = job_need("train_lm", {})
    assert fits(need, TWO_NODES)  # an idle cluster: worker on one node, reads on the other
    serving = [{"CPU": 0.0}, {"CPU": 1.0}]
    assert not fits(need, serving)
    assert fits(job_need("prepare", {}), serving)  # prepare alone would have run
    line = refusal(need, serving, TWO_NODES, workers=1, cpus_per_node=1, serving=True)
    assert line is not None
    assert "job train_lm needs 1 worker x 1 CPU + 1 CPU for Ray Data's tasks = 2 CPU" in line
    assert "has 1 CPU free of 2 CPU (1 CPU in use, a Serve application among them)" in line
    assert "`raygke local serve --stop`" in line


def test_the_refusal_names_the_workers_and_num_workers_that_would_fit() -> None:
    need = job_need("train_lm", {"num_workers": 4})  # 5 CPU on a 2-CPU cluster
    line = refusal(need, TWO_NODES, TWO_NODES, workers=1, cpus_per_node=1, serving=False)
    assert line is not None and "serve --stop" not in line
    assert "`raygke local up --workers 4`" in line  # 2 CPU + 3 more nodes of 1 CPU = 5
    assert "`--set train_lm.num_workers=1`" in line  # 1 worker + 1 CPU for reads fit
    assert refusal(need, [{"CPU": 8.0}], [{"CPU": 8.0}], workers=0, cpus_per_node=8,
                   serving=False) is None  # fmt: skip


def test_bundles_fit_per_node_as_the_placement_strategy_allows() -> None:
    per = {"CPU": 2.0}
    nodes = [{"CPU": 3.0}, {"CPU": 3.0}]  # 6 CPU in all, but only one 2-CPU bundle per node
    assert fits(Need("t", 2, per), nodes)
    assert not fits(Need("t", 3, per), nodes)
    assert not fits(Need("t", 2, per, task_cpus=2.0), nodes)  # 1 + 1 left: no node has 2
    assert fits(Need("t", 2, per, task_cpus=1.0), nodes)
    assert not fits(Need("t", 2, {"CPU": 1.0}, placement="STRICT_PACK"), [{"CPU": 1}, {"CPU": 1}])
    assert fits(Need("t", 2, {"CPU": 1.0}, placement="STRICT_SPREAD"), [{"CPU": 1}, {"CPU": 1}])
    assert not fits(Need("t", 2, {"CPU": 1.0}, placement="STRICT_SPREAD"), [{"CPU": 4}])
    assert not fits(Need("t", 1, {"CPU": 1.0, "GPU": 1.0}), [{"CPU": 4}])  # no GPU


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_ray_datas_hang_forever_line_stops_the_job_at_once_with_the_numbers() -> None:
    watch = StallWatch("train_lm", None, describe=lambda: "free now: 0 of 2 CPU")
    watch.line("some other line", progress=False)
    with pytest.raises(JobStalled) as e:
        watch.line(f"(pid=1) {HANG_FOREVER} from ReadParquet. The job may hang forever", False)
    assert "train_lm cannot get the resources it needs" in str(e.value)
    assert str(e.value).endswith("; free now: 0 of 2 CPU")


def test_a_job_without_progress_for_the_set_time_fails_and_progress_resets_it() -> None:
    clock = Clock()
    watch = StallWatch("prepare", 600.0, clock=clock)
    clock.t = 599.0
    watch.check()
    watch.line("RAYGKE_PROGRESS {}", progress=True)
    clock.t = 1198.0
    watch.check()  # 599 s since the progress line
    clock.t = 1199.0
    with pytest.raises(JobStalled, match="made no progress for 10 min"):
        watch.check()


def test_a_waiting_signal_fails_the_job_when_no_progress_follows_within_the_grace() -> None:
    clock = Clock()
    watch = StallWatch("train_lm", None, grace_s=120.0, clock=clock)
    watch.line("Warning: The following resource request cannot be scheduled right now", False)
    clock.t = 119.0
    watch.check()
    watch.line("RAYGKE_PROGRESS {}", progress=True)  # it got its resources
    clock.t = 1000.0
    watch.check()
    watch.line("The worker group startup timed out after 30.0 seconds", False)
    clock.t = 1120.0
    with pytest.raises(JobStalled, match="after Ray said: The worker group startup timed out"):
        watch.check()


def test_printed_local_commands_carry_the_stack_options_given(tmp_path) -> None:
    """``with_target``: every `raygke local ...` command in a message gets the --config or
    --stack the command was given (shell-quoted), none for the built-in stack."""
    from raygke.local import app

    app._target_opts[:] = []
    assert app.with_target("run `raygke local up`") == "run `raygke local up`"
    app._target_opts[:] = ["--config '/a b/Pulumi.x.yaml'"]
    try:
        text = app.with_target("`raygke local down` and then `raygke local up --workers 3`")
        assert text == (
            "`raygke local down --config '/a b/Pulumi.x.yaml'` and then "
            "`raygke local up --workers 3 --config '/a b/Pulumi.x.yaml'`"
        )
        assert app.target_opts() == " --config '/a b/Pulumi.x.yaml'"
    finally:
        app._target_opts[:] = []


def test_a_batch_inference_job_needs_its_engines_and_a_cpu_for_ray_data() -> None:
    from raygke.local.brief import job_summary

    need = job_need("batch_generate", {"prompts": "/p", "num_cpus": 2, "concurrency": 1})
    assert (need.workers, dict(need.per_worker), need.task_cpus) == (1, {"CPU": 2.0}, 1.0)
    assert need.describe() == "1 engine x 2 CPU + 1 CPU for Ray Data's tasks = 3 CPU"
    gpu = job_need(
        "batch_generate", {"prompts": "/p", "accelerator": "gpu", "tensor_parallel_size": 2}
    )
    assert dict(gpu.per_worker) == {"GPU": 2.0}
    line = job_summary(
        "batch_generate",
        {"completions": 3, "completion_tokens": 12, "tokens_per_s": 0.5, "output": "/a/g/r/t"},
    )
    assert line == "3 completions (12 tokens, 0.5 tokens/s) written to /a/g/r/t"
