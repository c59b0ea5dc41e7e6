"""``raygke local``: through the real entry point (the ``raygke`` console script in a subprocess).

The cluster tests start a private cluster (head + 1 worker, 1 CPU each) on kernel-chosen free
ports under ``tmp_path`` — never Ray's default ports — and check that ``down`` leaves no process of
its sessions behind. Fast tests (no Ray processes) cover usage errors, the port-in-use message,
argument wiring and process stopping.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from contract.registry import FAULTS_ENV, RESULT_PREFIX
from raygke.local import cluster as local_cluster
from raygke.local import jobs as local_jobs
from raygke.local import summary as local_summary

RAYGKE = Path(sys.executable).parent / "raygke"
REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")


def _stack_file(
    folder: Path, root: Path, gcs_port: int, dashboard_port: int, name: str = "t"
) -> Path:
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(
        "config:\n"
        "  ray-gke:project: local-test\n"
        "  ray-gke:region: us-central1\n"
        "  ray-gke:zones: [us-central1-a]\n"
        "  ray-gke:local:\n"
        "    workers: 1\n"
        "    cpus_per_node: 1\n"
        f"    gcs_port: {gcs_port}\n"
        f"    dashboard_port: {dashboard_port}\n"
        f"    root: {root}\n"
    )
    return path


def _raygke(
    *args: str, cwd: Path, timeout: float = 300, faults: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """``raygke local ARGS``; ``faults``: the test-only fault plan (workloads/faults.py) in the
    CLI's environment, which passes it on to the jobs."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", local_cluster.ROOT_ENV)}
    if faults is not None:
        env[FAULTS_ENV] = json.dumps(faults)
    env["COLUMNS"] = "250"  # rich: no wrapping, so lines can be asserted
    env["PYTHONPATH"] = str(REPO)  # this checkout's code, not the editable install's
    return subprocess.run(
        [str(RAYGKE), "local", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _make_local_recipe(
    cfg: Path, cwd: Path, *run: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The Makefile's `local` recipe (up, the EXIT trap's `down --if-mine`, run) in one shell,
    on the stack file ``cfg``, with `run` + ``run`` (default: prepare train_lm)."""
    raygke, c = shlex.quote(str(RAYGKE)), shlex.quote(str(cfg))
    script = (
        f"{raygke} local up --config {c} || exit $?; "
        f"trap '{raygke} local down --if-mine --config {c}' EXIT; "
        f"{raygke} local run {shlex.join(run or ('prepare', 'train_lm'))} --config {c}"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", local_cluster.ROOT_ENV)}
    env.update(COLUMNS="250", PYTHONPATH=str(REPO))
    return subprocess.run(
        ["sh", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# ------------------------------------------------------------------------- fast: no Ray processes


def test_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = _stack_file(tmp_path, tmp_path / "root", port, local_cluster.free_port())
        r = _raygke("up", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"port {port} (local.gcs_port) is in use" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "root" / "t" / "state.json").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    r = _raygke("run", "nosuchjob", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and "unknown job 'nosuchjob'" in r.stderr
    r = _raygke("up", "--stack", "t", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and "at most one of --stack" in r.stderr
    r = _raygke("status", "--stack", "missing", cwd=tmp_path)
    assert r.returncode == 2 and "Pulumi.missing.yaml" in r.stderr
    r = _raygke("run", "--set", "train_lm.steps", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and "JOB.KEY=VALUE" in r.stderr


def test_status_down_run_without_a_cluster(tmp_path: Path) -> None:
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    r = _raygke("down", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 0 and "nothing to stop" in r.stdout
    r = _raygke("status", "--config", str(cfg), cwd=tmp_path)
    # the command to run carries the --config given: as printed, it acts on this stack
    assert r.returncode == 1 and f"run `raygke local up --config {cfg}`" in r.stderr
    r = _raygke("run", "prepare", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 1 and "no local cluster is up for stack 't'" in r.stderr
    (tmp_path / "Pulumi.t.yaml").rename(tmp_path / "Pulumi.other.yaml")
    r = _raygke("status", "--stack", "other", cwd=tmp_path)
    assert r.returncode == 1 and "run `raygke local up --stack other`" in r.stderr
    r = subprocess.run(
        [RAYGKE, "submit", "--stack", "other", "--local", "--dry-run", "--", "true"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1 and "run `raygke local up --stack other`" in r.stderr


def test_job_args_wire_bucket_folders() -> None:
    state = {"buckets": {b: f"/b/{b}" for b in local_cluster.BUCKETS}, "tpu": None}
    prep = local_jobs.job_args("prepare", state, "/data/corpus", "run1", {})
    ds = prep["dataset"]
    assert ds.startswith("/b/datasets/corpus-") and prep["data"] == "/data/corpus"
    train = local_jobs.job_args("train_lm", state, "/data/corpus", "run1", {})
    assert train == {
        "dataset": ds,
        "storage_path": "/b/checkpoints",
        "name": "run1",
        "checkpoint_every": 50,  # the local cadence (contract.registry.LOCAL_CHECKPOINTS)
    }
    ev = local_jobs.job_args(
        "evaluate", state, "/data/corpus", "run1", {"train_lm": {"checkpoint": "/c"}}
    )
    assert ev["checkpoint"] == "/c" and ev["dataset"] == ds
    assert local_jobs.job_args("prepare", state, None, "r", {})["dataset"] == "/b/datasets/stdlib"
    assert local_jobs.dataset_name("/x/a") != local_jobs.dataset_name("/y/a")
    with pytest.raises(local_cluster.LocalError, match="no emulated TPU hosts"):
        local_jobs.job_args("train_lm", state, None, "r", {}, accelerator="tpu")


def test_batch_generate_reads_the_trained_checkpoint_and_writes_to_the_artifacts() -> None:
    state = {"buckets": {b: f"/b/{b}" for b in local_cluster.BUCKETS}, "tpu": None}
    args = local_jobs.job_args(
        "batch_generate", state, None, "run1", {"train_lm": {"checkpoint": "/c"}},
        overrides={"batch_generate": {"prompts": "/p"}},
    )  # fmt: skip
    assert args == {
        "prompts": "/p", "checkpoint": "/c", "storage_path": "/b/checkpoints", "name": "run1",
        "artifacts": "/b/artifacts",
    }  # fmt: skip
    # no prompts: refused before anything is submitted, naming the --set that gives them
    with pytest.raises(local_cluster.LocalError, match=r"--set batch_generate\.prompts=PATH"):
        local_jobs.job_args("batch_generate", state, None, "run1", {})


def test_train_lm_tf_jobs_locally() -> None:
    state = {"buckets": {b: f"/b/{b}" for b in local_cluster.BUCKETS}, "tpu": None}
    assert local_jobs.resolve_jobs(["prepare", "train_lm_tf", "evaluate"], "cpu") == [
        "prepare",
        "train_lm_tf",
        "evaluate",
    ]
    with pytest.raises(local_cluster.LocalError) as e:
        local_jobs.resolve_jobs(["train_lm_tf"], "tpu")
    assert str(e.value) == (
        "--accelerator tpu: workload 'train_lm_tf' supports cpu, gpu, not tpu: TensorFlow on "
        "TPU is not part of this product; use train_lm_jax on TPUs"
    )
    # locally TensorFlow on GPUs needs its CUDA build; the dev environment has tensorflow-cpu
    with pytest.raises(local_cluster.LocalError) as e:
        local_jobs.resolve_jobs(["train_lm_tf"], "gpu")
    assert str(e.value).startswith(
        "--accelerator gpu: train_lm_tf: this environment has no TensorFlow GPU build "
    )
    assert "(the gpu-tf image)" in str(e.value)
    trained = {"train_lm_tf": {"checkpoint": "/c/tf", "steps": 7}}
    ev = local_jobs.job_args("evaluate", state, None, "r", trained)
    assert ev["checkpoint"] == "/c/tf"
    assert local_summary.summarize(trained)["steps"] == 7


def test_summary_names_the_hugging_face_folder_of_the_checkpoint(tmp_path: Path) -> None:
    """A finished run's last checkpoint holds ``hf/`` (workloads/hf_export.py): the summary
    names it when it is there, says nothing when it is not, names a remote one as it is."""
    ckpt = tmp_path / "checkpoint_00000040"
    (ckpt / "hf").mkdir(parents=True)
    summary = local_summary.summarize({"train_lm": {"checkpoint": str(ckpt)}})
    assert summary["hf_model"] == str(ckpt / "hf")
    from rich.console import Console

    from raygke.local import commands as local

    console = Console(width=300, record=True)
    console.print(local.summary_table({**summary, "seconds": 1.0}))
    row = next(ln for ln in console.export_text().splitlines() if "Hugging Face model" in ln)
    assert row.split("│")[2].strip() == str(ckpt / "hf")
    older = tmp_path / "checkpoint_00000020"
    older.mkdir()
    assert local_summary.summarize({"train_lm": {"checkpoint": str(older)}})["hf_model"] is None
    assert local_summary.hf_model("gs://b/runs/x/checkpoint_1/") == "gs://b/runs/x/checkpoint_1/hf"
    assert local_summary.summarize({})["hf_model"] is None


def test_parse_result_takes_the_last_result_line() -> None:
    logs = f'noise\n{RESULT_PREFIX}{{"rows": 1}}\nmore\n{RESULT_PREFIX}{{"rows": 2}}\n'
    assert local_jobs.parse_result(logs) == {"rows": 2}
    assert local_jobs.parse_result("no result here\n") is None
    assert local_summary.summarize({"prepare": {"rows": 2}})["rows"] == 2
    ev = {"val_loss": 0.9, "xz_nats_per_byte": 1.0, "val_vs_xz": 0.9}
    summary = local_summary.summarize({"evaluate": ev})
    assert (summary["xz_nats_per_byte"], summary["val_vs_xz"]) == (1.0, 0.9)
    assert set(summary) == set(local_summary.SUMMARY_KEYS)
    assert local_jobs.parse_overrides(["train_lm.steps=5", "evaluate.prompt=x y"]) == {
        "train_lm": {"steps": 5},
        "evaluate": {"prompt": "x y"},
    }


def test_make_local_recipe_is_valid_and_keeps_a_global_batch_of_32() -> None:
    """The Makefile's ``LOCAL_ARGS`` (the main job's shape) parse as ``raygke local run --set``
    items, the trainer's workers fit the ``LOCAL_WORKERS`` worker nodes (one CPU each), and
    workers x rows per worker is the global batch of 32 the sweep in docs/local.md chose."""
    makefile = (REPO / "Makefile").read_text()
    values = dict(re.findall(r"^(LOCAL_[A-Z]+) \?= (.*)$", makefile, flags=re.M))
    items = shlex.split(values["LOCAL_ARGS"])
    assert items[0::2] == ["--set"] * (len(items) // 2)
    train = local_jobs.parse_overrides(items[1::2])["train_lm"]
    assert train["num_workers"] <= int(values["LOCAL_WORKERS"])
    assert train["num_workers"] * train["batch_size"] == 32
    assert "--workers $(LOCAL_WORKERS)" in makefile and "$(LOCAL_ARGS) $(RUN_ARGS)" in makefile


def test_stop_nodes_stops_a_whole_session_and_spares_a_reused_pid(tmp_path: Path) -> None:
    leader = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(local_cluster.session_pids([leader.pid])) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(local_cluster.session_pids([leader.pid])) == 3
        ours = local_cluster.NodeRecord(
            "n", "head", leader.pid, local_cluster.proc_start_ticks(leader.pid), 1, "", []
        )
        ticks = local_cluster.proc_start_ticks(other.pid)
        assert ticks is not None
        reused = local_cluster.NodeRecord("m", "worker", other.pid, ticks + 1, 1, "", [])
        left = local_cluster.stop_nodes([ours, reused], grace_s=5)
        leader.wait(timeout=5)
        assert left == [] and local_cluster.session_pids([leader.pid]) == []
        assert other.poll() is None, "a pid whose start time differs is not ours to stop"
    finally:
        for p in (leader, other):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


# ------------------------------------------------------------------- a real cluster, end to end


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """``raygke local up`` on free ports under a temp root; ``down`` at the end in any case."""
    pytest.importorskip("ray")
    base = tmp_path_factory.mktemp("local")
    dash = local_cluster.free_port()
    cfg = _stack_file(base, base / "root", local_cluster.free_port(), dash)
    r = _raygke("up", "--config", str(cfg), cwd=base)
    state_file = base / "root" / "t" / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else None
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        yield {"base": base, "cfg": cfg, "state": state, "up": r, "dash": dash}
    finally:
        if state_file.exists():
            _raygke("down", "--config", str(cfg), cwd=base)


@pytest.mark.ray
@pytest.mark.slow
def test_up_records_separate_nodes_on_localhost(cluster) -> None:
    state = cluster["state"]
    assert [n["role"] for n in state["nodes"]] == ["head", "worker"]
    assert state["dashboard_url"] == f"http://127.0.0.1:{cluster['dash']}"
    assert state["address"] == f"127.0.0.1:{state['gcs_port']}"
    for n in state["nodes"]:
        assert local_cluster.is_alive(n["pid"], n["start_ticks"])
        assert os.getsid(n["pid"]) == n["pid"], "each node is its own session"
        cmd = n["command"]
        assert cmd[cmd.index("--node-ip-address") + 1] == "127.0.0.1"
        assert cmd[cmd.index("--num-cpus") + 1] == "1"
        own = state["ray_temp_dir"] + ("" if n["role"] == "head" else f"-{n['name']}")
        assert cmd[cmd.index("--temp-dir") + 1] == own, "own Ray temp dir per node"
    head = state["nodes"][0]["command"]
    assert head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    assert {6379, 8265, 10001}.isdisjoint(
        {
            state["gcs_port"],
            state["dashboard_port"],
            int(head[head.index("--ray-client-server-port") + 1]),
        }
    )
    for folder in state["buckets"].values():
        assert Path(folder).is_dir()


@pytest.mark.ray
@pytest.mark.slow
def test_up_again_reuses_and_status_shows_nodes(cluster) -> None:
    r = _raygke("up", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert r.returncode == 0 and "reusing" in r.stdout
    pids = [n["pid"] for n in cluster["state"]["nodes"]]
    after = json.loads((cluster["base"] / "root" / "t" / "state.json").read_text())
    assert [n["pid"] for n in after["nodes"]] == pids
    r = _raygke("status", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert r.returncode == 0, r.stderr
    for pid in pids:
        assert str(pid) in r.stdout
    assert r.stdout.count("ALIVE") == 2
    assert cluster["state"]["dashboard_url"] in r.stdout
    # asking a running cluster for another shape is an error, not a silent reuse
    r = _raygke("up", "--tpu", "v5e:2x2", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert r.returncode == 1 and "already up without TPU hosts" in r.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_run_prepare_writes_summary_json(cluster) -> None:
    corpus = cluster["base"] / "corpus"
    corpus.mkdir()
    for i in range(4):
        (corpus / f"m{i}.py").write_text(f"def f{i}(x):\n    return x * {i}\n" * 40)
    out = cluster["base"] / "summary.json"
    r = _raygke(
        "run", "prepare", "--data", str(corpus), "--summary-json", str(out),
        "--set", "prepare.context_length=32", "--config", str(cluster["cfg"]), cwd=cluster["base"],
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    summary = json.loads(out.read_text())
    assert summary["ok"] is True and summary["rows"] > 0
    assert summary["jobs"]["prepare"]["status"] == "SUCCEEDED"
    datasets = Path(cluster["state"]["buckets"]["datasets"])
    assert (datasets / local_jobs.dataset_name(str(corpus))).is_dir()
    # the job's log (Ray's own lines too) goes to the run's log file, not to stdout
    logs = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("log: ")]
    assert len(logs) == 1, r.stdout
    log = Path(logs[0])
    assert log.parent.parent == cluster["base"] / "root" / "t" / "runs"
    assert summary["log"] == str(log)
    text = log.read_text()
    assert RESULT_PREFIX.strip() in text and "Running entrypoint for job" in text
    assert " INFO " in text, "Ray's INFO lines are in the log file"
    assert RESULT_PREFIX.strip() not in r.stdout and " INFO " not in r.stdout + r.stderr
    assert "  prepare  " in r.stdout and "shards" in r.stdout, "a plain progress line"
    # one line in words, no JSON; one skipped figure: the success line's is the summary's
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("prepare succeeded in ")]
    assert "training windows" in line and "corpus files: 4 kept, 0 skipped" in line, line
    assert "{" not in line and "4 kept, 0 skipped" in r.stdout.split(line, 1)[1]


@pytest.mark.ray
@pytest.mark.slow
def test_a_task_log_line_reaches_the_job_log_once(cluster) -> None:
    """One line per print on every node (nodes sharing a log folder forwarded each line twice)."""
    state = cluster["state"]
    # Two tasks pinned to each node (SPREAD is best effort: on a loaded machine, with a node's CPU
    # still held by the previous test's workers, it packed all four onto one node).
    job_code = (
        "import ray\n"
        "from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On\n"
        "ray.init()\n"
        "@ray.remote(num_cpus=1)\n"
        "def hello(i):\n"
        "    print(f'hello-from-task-{i}', flush=True)\n"
        "    return ray.get_runtime_context().get_node_id()\n"
        "nodes = sorted(n['NodeID'] for n in ray.nodes() if n['Alive'])\n"
        "refs = [hello.options(scheduling_strategy=On(nodes[i % len(nodes)], soft=False))"
        ".remote(i) for i in range(4)]\n"
        "print('nodes', len(set(ray.get(refs))))\n"
    )
    env_vars = {"RAY_ADDRESS": state["address"], "RAY_DEDUP_LOGS": "0"}
    submit = (
        "import time\n"
        "from ray.job_submission import JobSubmissionClient\n"
        f"c = JobSubmissionClient({state['dashboard_url']!r})\n"
        f"job = c.submit_job(entrypoint={f'{sys.executable} -c {shlex.quote(job_code)}'!r}, "
        f"runtime_env={{'env_vars': {env_vars!r}}})\n"
        "while not c.get_job_status(job).is_terminal():\n"
        "    time.sleep(0.5)\n"
        "# the log monitors forward task output asynchronously: wait for every line, then a\n"
        "# little longer for any second copy\n"
        "deadline = time.monotonic() + 60\n"
        "while time.monotonic() < deadline and not all(\n"
        "    f'hello-from-task-{i}' in c.get_job_logs(job) for i in range(4)):\n"
        "    time.sleep(0.5)\n"
        "time.sleep(3)\n"
        "print(c.get_job_status(job).value)\n"
        "print(c.get_job_logs(job))\n"
    )
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": state["token_file"]}
    env.pop("RAY_ADDRESS", None)
    r = subprocess.run(
        [sys.executable, "-c", submit], env=env, capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0 and r.stdout.startswith("SUCCEEDED"), r.stdout + r.stderr
    assert "nodes 2" in r.stdout, r.stdout
    for i in range(4):
        assert sum(f"hello-from-task-{i}" in ln for ln in r.stdout.splitlines()) == 1, r.stdout


@pytest.mark.ray
@pytest.mark.slow
def test_jobs_api_refuses_a_submission_without_the_token(cluster) -> None:
    """The local cluster runs Ray token authentication (``RAY_AUTH_MODE=token``): the Jobs API
    refuses a client without the cluster's token and runs a job submitted with it; the token
    file is private to the user (0600)."""
    state = cluster["state"]
    token_file = Path(state["token_file"])
    assert token_file.stat().st_mode & 0o777 == 0o600
    submit = (
        "import time\n"
        "from ray.job_submission import JobSubmissionClient\n"
        f"c = JobSubmissionClient({state['dashboard_url']!r})\n"
        "job = c.submit_job(entrypoint='echo token-ok')\n"
        "while not c.get_job_status(job).is_terminal():\n"
        "    time.sleep(0.5)\n"
        "print(c.get_job_status(job).value)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    without = subprocess.run(
        [sys.executable, "-c", submit],
        env={**base, "RAY_AUTH_MODE": "disabled"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert without.returncode != 0, without.stdout
    assert "SUCCEEDED" not in without.stdout
    out = without.stdout + without.stderr
    assert "401" in out or "uthenticat" in out or "token" in out.lower(), out[-2000:]
    wrong = subprocess.run(
        [sys.executable, "-c", submit],
        env={**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode != 0 and "SUCCEEDED" not in wrong.stdout, wrong.stdout
    with_token = subprocess.run(
        [sys.executable, "-c", submit],
        env={**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert with_token.returncode == 0, with_token.stdout + with_token.stderr
    assert with_token.stdout.strip().splitlines()[-1] == "SUCCEEDED", with_token.stdout


@pytest.mark.ray
@pytest.mark.slow
def test_failing_job_stops_with_its_log_tail(cluster) -> None:
    empty = cluster["base"] / "empty"
    empty.mkdir()
    r = _raygke(
        "run", "--verbose", "--data", str(empty), "--config", str(cluster["cfg"]),
        cwd=cluster["base"],
    )  # fmt: skip
    assert r.returncode == 1, r.stdout[-2000:]
    assert "Running entrypoint for job" in r.stdout, "--verbose streams the job's log"
    assert "last" in r.stderr and "log lines of prepare" in r.stderr
    # the job's own one-line error (workloads print bad input without a traceback), from its log tail
    assert "no files match include='*'" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: job prepare")
    assert "2/3 train_lm" not in r.stdout, "the pipeline stops at the first failure"


@pytest.mark.ray
@pytest.mark.slow
def test_a_job_without_progress_for_the_set_time_is_stopped_not_waited_for(cluster) -> None:
    """--stall-minutes 0.01 (0.6 s): prepare's first progress line comes later (its runtime
    env and imports take seconds), so the run fails with the stall, stops the job, and never
    waits forever."""
    r = _raygke(
        "run", "prepare", "--stall-minutes", "0.01", "--config", str(cluster["cfg"]),
        cwd=cluster["base"], timeout=180,
    )  # fmt: skip
    assert r.returncode == 1, r.stdout[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: job prepare (raygke-prepare-") and " STALLED after " in last
    assert "prepare made no progress for 0.01 min" in last and "free now: " in last
    job_id = last.split("(", 1)[1].split(")", 1)[0]
    state = cluster["state"]
    status = (  # stop_job asks; the job ends within seconds
        "import time\n"
        "from ray.job_submission import JobSubmissionClient\n"
        f"c = JobSubmissionClient({state['dashboard_url']!r})\n"
        "for _ in range(60):\n"
        f"    if c.get_job_status({job_id!r}).is_terminal():\n"
        "        break\n"
        "    time.sleep(0.5)\n"
        f"print(c.get_job_status({job_id!r}).value)"
    )
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": state["token_file"]}
    env.pop("RAY_ADDRESS", None)
    r = subprocess.run(
        [sys.executable, "-c", status], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.stdout.strip() in ("STOPPED", "FAILED"), r.stdout + r.stderr  # not left running


def test_listening_sockets_names_every_address_of_a_process() -> None:
    """The /proc reader finds a process's listening TCP and bound UDP sockets with their
    addresses, and tells loopback from every-interface binds."""
    socks = [
        socket.socket(socket.AF_INET, socket.SOCK_STREAM),
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM),
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
        socket.socket(socket.AF_INET, socket.SOCK_STREAM),
    ]
    try:
        socks[0].bind(("127.0.0.1", 0))
        socks[1].bind(("::", 0))
        socks[2].bind(("0.0.0.0", 0))
        socks[3].bind(("127.0.0.1", 0))  # bound, never listening: not a listener
        socks[0].listen()
        socks[1].listen()
        ports = [s.getsockname()[1] for s in socks]
        found = {s.port: s for s in local_cluster.listening_sockets([os.getpid()])}
        assert found[ports[0]].ip == "127.0.0.1" and found[ports[0]].loopback
        assert found[ports[1]].proto == "tcp6" and found[ports[1]].ip == "::"
        assert not found[ports[1]].loopback
        assert found[ports[2]].proto == "udp" and not found[ports[2]].loopback
        assert ports[3] not in found
    finally:
        for s in socks:
            s.close()
    assert local_cluster.ListeningSocket(1, "tcp6", "::ffff:127.0.0.1", 1).loopback
    assert not local_cluster.ListeningSocket(1, "tcp6", "::ffff:10.0.0.1", 1).loopback


@pytest.mark.ray
@pytest.mark.slow
def test_every_listening_socket_is_on_loopback(cluster) -> None:
    """No process of the local cluster (GCS, raylets, object managers, dashboard and its agents,
    runtime-env agents, metrics exporters, Ray Client server, job workers left by the earlier
    tests) accepts connections on another address than 127.0.0.1."""
    state = cluster["state"]
    sockets = local_cluster.cluster_sockets(state)
    ports = {s.port for s in sockets}
    assert {state["gcs_port"], state["dashboard_port"]} <= ports, sockets
    metrics = {int(url.rsplit(":", 1)[1].split("/")[0]) for url in state["metrics"].values()}
    assert metrics <= ports, "each node's metrics port is among those checked"
    assert len({s.pid for s in sockets}) >= 6, "head and worker processes are both listed"
    outside = [s for s in sockets if not s.loopback]
    assert outside == [], outside


def _submit(*args: str, cwd: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", local_cluster.ROOT_ENV)}
    env["COLUMNS"] = "250"
    env["PYTHONPATH"] = str(REPO)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "raygke", "submit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.ray
@pytest.mark.slow
def test_submit_local_twin_runs_a_script_on_the_local_cluster(cluster) -> None:
    """``raygke submit --local``: a researcher's script (its folder as the working dir) runs
    through the Jobs API with the cluster's token; its output streams back; a failing script
    exits 1."""
    work = cluster["base"] / "research"
    work.mkdir()
    (work / "helper.py").write_text("ANSWER = 42\n")
    (work / "train.py").write_text(
        "import ray\nfrom helper import ANSWER\nray.init()\n"
        "print('alive nodes', sum(n['Alive'] for n in ray.nodes()), 'answer', ANSWER)\n"
    )
    r = _submit("--local", "--config", str(cluster["cfg"]), str(work / "train.py"), cwd=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "alive nodes 2 answer 42" in r.stdout and "SUCCEEDED" in r.stdout
    # ray.init()'s INFO records are in the job's log file, not on the terminal, no ANSI codes
    assert not re.search(r"\sINFO \S+\.py:\d+ -- ", r.stdout) and "\x1b[" not in r.stdout
    (log,) = [ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("log        ")]
    assert Path(log).parent == cluster["base"] / "root" / "t" / "runs"
    assert re.search(r"\sINFO \S+\.py:\d+ -- ", Path(log).read_text())
    (work / "bad.py").write_text("raise SystemExit(3)\n")
    r = _submit("--local", "--config", str(cluster["cfg"]), str(work / "bad.py"), cwd=work)
    assert r.returncode == 1 and "FAILED" in r.stderr, r.stdout[-2000:] + r.stderr
    assert "exit code 3" in r.stderr, r.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_submit_gke_path_end_to_end_through_kubectl(cluster) -> None:
    """The GKE path of ``raygke submit --stack dev`` with a stand-in ``kubectl`` whose Secret holds
    the local cluster's token and whose port-forward "forwards" to the local cluster's Jobs API:
    the token read from the Secret authenticates the submission, the job runs, and the
    port-forward process is stopped afterwards."""
    state = cluster["state"]
    token = Path(state["token_file"]).read_text().strip()
    b64 = base64.b64encode(token.encode()).decode()
    fake = cluster["base"] / "fakebin"
    fake.mkdir()
    calls = cluster["base"] / "kubectl-calls"
    (fake / "kubectl").write_text(
        "#!/bin/sh\n"
        f'echo "$$ $*" >> {calls}\n'
        'case " $* " in\n'
        f"  *' get secret '*) printf %s {b64} ;;\n"
        f"  *' port-forward '*) echo 'Forwarding from 127.0.0.1:{cluster['dash']} -> 8265'; "
        "exec sleep 600 ;;\n"
        "  *) exit 9 ;;\n"
        "esac\n"
    )
    (fake / "kubectl").chmod(0o755)
    work = cluster["base"] / "gke-research"
    work.mkdir()
    (work / "job.py").write_text("print('ran on the RayCluster')\n")
    path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    r = _submit(
        "--config", str(REPO / "Pulumi.dev.yaml"), str(work / "job.py"), cwd=work, path=path
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "ran on the RayCluster" in r.stdout
    lines = calls.read_text().splitlines()
    assert any("get secret --namespace ray research-ray-auth" in ln for ln in lines)
    (forward,) = [ln for ln in lines if " port-forward " in ln]
    assert "--address 127.0.0.1 svc/research-head-svc :8265" in forward
    pid = int(forward.split()[0])
    deadline = time.monotonic() + 10
    while local_cluster.proc_start_ticks(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert local_cluster.proc_start_ticks(pid) is None, "the port-forward is stopped"
    # a wrong token (another cluster's Secret) is refused by the Jobs API
    (fake / "kubectl").write_text(
        (fake / "kubectl").read_text().replace(b64, base64.b64encode(b"0" * 64).decode())
    )
    r = _submit(
        "--config", str(REPO / "Pulumi.dev.yaml"), str(work / "job.py"), cwd=work, path=path
    )
    assert r.returncode == 1 and "ran on the RayCluster" not in r.stdout
    assert "the Jobs API at http://127.0.0.1:" in r.stderr, r.stderr


TRAIN_SETS = (
    "--set", "prepare.context_length=32",
    "--set", "train_lm.d_model=32", "--set", "train_lm.n_layers=1", "--set", "train_lm.n_heads=2",
    "--set", "train_lm.batch_size=4", "--set", "train_lm.log_every=1000",
    "--set", "train_lm.warmup=0", "--set", "train_lm.checkpoint_every=2",
)  # fmt: skip


def _train_corpus(base: Path) -> Path:
    corpus = base / "train-corpus"
    if not corpus.exists():
        corpus.mkdir()
        for i in range(6):
            (corpus / f"m{i}.txt").write_text(f"line {i}: the quick brown fox\n" * 120)
    return corpus


@pytest.mark.ray
@pytest.mark.slow
def test_an_unfinished_run_resumes_from_its_checkpoint_and_a_worker_retry_is_shown(
    cluster,
) -> None:
    """A run whose training stopped after a checkpoint (here: its worker dies at step 30, is
    retried once, and dies there again with no retry left: deterministic where a Ctrl-C would
    race a fast machine), then the same command: the same run continues from its newest
    checkpoint ("resumed from checkpoint 20"; the trainer's first step is 21), prepare, which
    succeeded in the first run, is not run again (its result is reused), and no new run folder
    appears. In the resumed run a worker crashes once more: Ray Train's retry is shown on the
    console and the run still succeeds. (Two tests before, each running its own pipelines: this
    one and test_a_worker_retry_is_shown_on_the_console, whose assertions are the second run's.)
    """
    step_log = cluster["base"] / "steps.jsonl"
    died = cluster["base"] / "died-at-30"
    crashed = cluster["base"] / "crashed-once"
    args = (
        "run", "prepare", "train_lm", "--data", str(_train_corpus(cluster["base"])), *TRAIN_SETS,
        "--set", "train_lm.steps=40", "--set", "train_lm.checkpoint_every=20",
        "--set", "train_lm.max_failures=1", "--set", f"train_lm.step_log={step_log}",
        "--config", str(cluster["cfg"]),
    )  # fmt: skip
    checkpoints = Path(cluster["state"]["buckets"]["checkpoints"])
    runs = cluster["base"] / "root" / "t" / "runs"
    before = set(checkpoints.glob("lm-*")) if checkpoints.exists() else set()
    twice = {"fail_at_step": 30, "fail_marker": str(died), "fail_times": 2}
    r = _raygke(*args, cwd=cluster["base"], timeout=900, faults=twice)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert len(died.read_text().splitlines()) == 2, "died, was retried, died again"
    (run_dir,) = set(checkpoints.glob("lm-*")) - before
    assert (run_dir / "checkpoint_00000020").is_dir()
    pending = json.loads((runs / "pending_run.json").read_text())
    assert pending["run_name"] == run_dir.name
    (first_segment,) = pending["segments"]  # the run's first segment, for the summary
    assert (first_segment["from_step"], first_segment["to_step"]) == (0, 20)
    assert first_segment["ended"] == "failed" and first_segment["seconds"] > 0
    assert pending["done"]["prepare"]["result"]["rows"] > 0, "prepare's result is recorded"
    step_log.unlink()
    once = {"fail_at_step": 35, "fail_marker": str(crashed)}
    r = _raygke(*args, cwd=cluster["base"], timeout=900, faults=once)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    resumed = [ln for ln in r.stdout.splitlines() if ln.startswith("resumed from checkpoint ")]
    assert resumed == [f"resumed from checkpoint 20 ({run_dir / 'checkpoint_00000020'})"]
    reused = [ln for ln in r.stdout.splitlines() if "result reused from run" in ln]
    assert len(reused) == 1 and reused[0].startswith(
        f"prepare: result reused from run {run_dir.name} "
    )
    logs = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("log: ")]
    text = Path(logs[0]).read_text()
    assert "==> 1/2 prepare: result of job " in text and "==> 1/2 prepare {" not in text
    assert "prepare succeeded in" not in r.stdout, "no prepare job ran"
    first = json.loads(step_log.read_text().splitlines()[0])
    assert first["step"] == 21, "the trainer continued after the checkpoint"
    assert not (runs / "pending_run.json").exists()
    assert set(checkpoints.glob("lm-*")) - before == {run_dir}, "no new run was started"
    # the resumed run's worker crash: retried, shown on the console, and the run succeeded
    assert crashed.exists(), "the worker crashed once"
    shown = [ln for ln in r.stdout.splitlines() if "train_lm: " in ln and "retr" in ln.lower()]
    shown += [ln for ln in r.stdout.splitlines() if "train_lm: workers restarted at step" in ln]
    assert shown, r.stdout[-4000:]
    # the summary covers the whole run: both segments and their total wall time
    seg = re.search(
        r"segments\s+│\s+([\d.]+) s \(steps 0-20, failed\), ([\d.]+) s \(steps 20-40\)", r.stdout
    )
    assert seg, r.stdout[-3000:]
    total = re.search(r"wall time \(s\)\s+│\s+([\d.]+) \(all 2 segments\)", r.stdout)
    assert total and float(total.group(1)) == pytest.approx(
        float(seg.group(1)) + float(seg.group(2)), abs=0.2
    )
    assert "tokens/s (last segment)" in r.stdout


@pytest.mark.ray
@pytest.mark.slow
def test_ctrl_c_says_what_was_saved_and_the_exact_command_that_resumes(cluster) -> None:
    """Ctrl-C during training: the job is stopped, the newest checkpoint is named, and the
    command that resumes is this one as typed; the pending record keeps the segment."""
    step_log = cluster["base"] / "ctrl-c-steps.jsonl"
    args = [
        "run", "prepare", "train_lm", "--data", str(_train_corpus(cluster["base"])), *TRAIN_SETS,
        "--set", "train_lm.steps=100000", "--set", f"train_lm.step_log={step_log}",
        "--config", str(cluster["cfg"]),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", local_cluster.ROOT_ENV)}
    env.update(COLUMNS="250", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [str(RAYGKE), "local", *args], cwd=cluster["base"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    runs = cluster["base"] / "root" / "t" / "runs"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if step_log.exists() and len(step_log.read_text().splitlines()) >= 6:
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        # a second `make local` beside it (issue 50): refused before it submits or writes
        # anything, and its exit step leaves the cluster up; the first one trains on
        pending_before = (runs / "pending_run.json").read_text()
        second = _make_local_recipe(cluster["cfg"], cluster["base"], "prepare")
        assert second.returncode == 1, second.stdout + second.stderr
        assert 'is in use by "raygke local run" (pid ' in second.stderr, second.stderr
        assert "Nothing was submitted" in second.stderr
        assert "left local cluster 't' up: it was started by" in second.stdout
        assert (runs / "pending_run.json").read_text() == pending_before
        steps = len(step_log.read_text().splitlines())
        deadline = time.monotonic() + 120
        while len(step_log.read_text().splitlines()) == steps and time.monotonic() < deadline:
            time.sleep(0.5)
        assert proc.poll() is None and len(step_log.read_text().splitlines()) > steps
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:] + errs
    assert "interrupted; the running job train_lm was stopped" in errs, errs
    saved = re.search(r"saved: checkpoint (\d+) of run (lm-\S+) \((\S+)\)", errs)
    assert saved and int(saved.group(1)) >= 2, errs
    assert Path(saved.group(3)).name == f"checkpoint_{int(saved.group(1)):08d}"
    assert f"resume: {shlex.join(['raygke', 'local', *args])}  (continues from step " in errs
    pending = json.loads((runs / "pending_run.json").read_text())
    assert pending["run_name"] == saved.group(2)
    (segment,) = pending["segments"]
    assert segment["ended"] == "interrupted" and segment["to_step"] == int(saved.group(1))
    (runs / "pending_run.json").unlink()  # the later tests start their own runs


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.vllm
def test_run_fine_tunes_a_hugging_face_llama_folder_and_the_result_loads_and_serves(
    cluster,
) -> None:
    """prepare with the folder's tokenizer, then train_lm from the folder (issue 47 item 3): a
    tiny Llama built by the test (tests/workloads/hf_folders.py, nothing downloads); its
    exported hf/ loads in transformers with the folder's tokenizer, the weights changed, and
    ``raygke local serve`` serves the checkpoint with vLLM behind Ray Serve LLM (a completion
    of the prompt's tokens, counted by the folder's tokenizer)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.workloads.hf_folders import make_folder

    folder = make_folder("llama", cluster["base"] / "tiny-llama")
    out = cluster["base"] / "finetune.json"
    r = _raygke(
        "run", "prepare", "train_lm", "--data", str(_train_corpus(cluster["base"])),
        "--set", "prepare.context_length=16", "--set", f"prepare.tokenizer={folder}",
        "--set", f"train_lm.init_model={folder}", "--set", "train_lm.steps=6",
        "--set", "train_lm.batch_size=4", "--set", "train_lm.optimizer=adamw",
        "--set", "train_lm.lr=0.01", "--set", "train_lm.warmup=1",
        "--set", "train_lm.log_every=1000", "--set", "train_lm.checkpoint_every=0",
        "--set", "train_lm.precision=fp32", "--set", "train_lm.name=finetune",
        "--summary-json", str(out), "--config", str(cluster["cfg"]), cwd=cluster["base"],
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    summary = json.loads(out.read_text())
    assert summary["steps"] == 6
    assert 0 < summary["last_loss"] < summary["first_loss"], summary
    manifest = json.loads(
        (
            Path(cluster["state"]["buckets"]["datasets"])
            / local_jobs.dataset_name(str(_train_corpus(cluster["base"])))
            / "_manifest.json"
        ).read_text()
    )
    assert manifest["tokenizer"] == str(folder) and manifest["vocab_size"] > 256
    hf = Path(summary["hf_model"])
    tuned = AutoModelForCausalLM.from_pretrained(hf)
    start = AutoModelForCausalLM.from_pretrained(folder)
    text = "line 3: the quick brown fox"
    assert AutoTokenizer.from_pretrained(hf).encode(text) == AutoTokenizer.from_pretrained(
        folder
    ).encode(text)
    before = start.state_dict()
    assert any(not torch.equal(v, before[k]) for k, v in tuned.state_dict().items())

    port = str(local_cluster.free_port())
    r = _raygke(
        "serve", "--checkpoint", str(hf.parent), "--port", port, "--set", "model_id=tuned",
        "--config", str(cluster["cfg"]), cwd=cluster["base"], timeout=1200,
    )  # fmt: skip
    try:
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr
        body = json.dumps({"model": "tuned", "prompt": text, "max_tokens": 3, "temperature": 0})
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=body.encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=120) as resp:
            done = json.loads(resp.read())
        usage = done["usage"]
        prompt_tokens = len(AutoTokenizer.from_pretrained(hf).encode(text))
        assert usage["prompt_tokens"] == prompt_tokens and usage["completion_tokens"] >= 1, done
        assert isinstance(done["choices"][0]["text"], str)
    finally:
        stop = _raygke("serve", "--stop", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert stop.returncode == 0, stop.stdout + stop.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_down_leaves_nothing_behind(cluster) -> None:
    nodes = cluster["state"]["nodes"]
    r = _raygke("down", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert r.returncode == 0, r.stderr
    assert local_cluster.session_pids([n["pid"] for n in nodes]) == []
    assert not any(local_cluster.is_alive(n["pid"], n["start_ticks"]) for n in nodes)
    assert not (cluster["base"] / "root" / "t" / "state.json").exists()
    r = _raygke("down", "--config", str(cluster["cfg"]), cwd=cluster["base"])
    assert r.returncode == 0 and "nothing to stop" in r.stdout
    # the ports are free again at once (connections in TIME-WAIT do not count)
    assert not local_cluster.port_in_use(cluster["state"]["gcs_port"])
    assert not local_cluster.port_in_use(cluster["dash"])


def test_set_rejects_unknown_or_mistyped_arguments_before_submitting(tmp_path: Path) -> None:
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    r = _raygke("run", "--config", str(cfg), "--set", "train_lm.nosuch=3", cwd=tmp_path)
    assert r.returncode == 2 and "unknown argument 'nosuch' for workload train_lm" in r.stderr
    r = _raygke("run", "--config", str(cfg), "--set", "train_lm.steps=abc", cwd=tmp_path)
    assert r.returncode == 2 and "argument 'steps' of workload train_lm is 'abc'" in r.stderr
    assert local_jobs.parse_overrides(["train_lm.steps=20"]) == {"train_lm": {"steps": 20}}


def test_overrides_bind_through_the_workload_and_train_lm_ones_reach_jax() -> None:
    state = {
        "buckets": {b: f"/b/{b}" for b in local_cluster.BUCKETS},
        "tpu": "v5e:2x2",
    }
    over = {"train_lm": {"steps": 7}, "evaluate": {"prompt": "x"}}
    jax = local_jobs.job_args(
        "train_lm_jax", state, None, "r", {}, accelerator="tpu", overrides=over
    )
    assert jax["steps"] == 7 and jax["scaling"]["use_tpu"] is True
    assert local_jobs.job_args("evaluate", state, None, "r", {}, overrides=over)["prompt"] == "x"
    gpu = local_jobs.job_args("train_lm", state, None, "r", {}, accelerator="gpu")
    assert gpu["use_gpu"] is True
    with pytest.raises(
        local_cluster.LocalError, match="unknown argument 'use_gpu' for workload train_lm_jax"
    ):
        local_jobs.check_overrides(["prepare", "train_lm_jax"], {"train_lm": {"use_gpu": True}})
    local_jobs.check_overrides(["prepare", "train_lm"], {"train_lm": {"use_gpu": True}})


@pytest.mark.ray
@pytest.mark.slow
def test_up_interrupted_while_starting_leaves_no_ray_process(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Ctrl-C during `local up` (after some nodes started, before all are ready): every node it
    started is stopped, every process of their sessions and under the cluster's Ray temp dir is
    gone, and it exits 130 saying so."""
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    cfg.write_text(cfg.read_text().replace("workers: 1", "workers: 3"))
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", local_cluster.ROOT_ENV)}
    env.update(COLUMNS="250", PYTHONPATH=str(REPO))
    # Ctrl-C as a terminal delivers it, whatever this test runs under: a shell's background job
    # (`make test &`, nohup) inherits SIGINT ignored, and Python turns SIGINT into
    # KeyboardInterrupt only "if the parent process has not changed it"
    # (https://docs.python.org/3/library/signal.html, General rules)
    proc = subprocess.Popen(
        [str(RAYGKE), "local", "up", "--config", str(cfg)], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    state_file = tmp_path / "root" / "t" / "state.json"
    # whatever fails below (up finished before the interrupt, nodes left), no cluster leaks
    request.addfinalizer(
        lambda: state_file.exists() and _raygke("down", "--config", str(cfg), cwd=tmp_path)
    )
    seen: dict[int, int | None] = {}
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                for n in json.loads(state_file.read_text())["nodes"]:
                    seen[n["pid"]] = n["start_ticks"]
            if len(seen) >= 2:  # the head and a worker are up; two more are to come
                break
            time.sleep(0.2)
        assert proc.poll() is None and len(seen) >= 2, "up finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + errs
    assert "interrupted; every node started was stopped" in errs and "Traceback" not in errs
    assert local_cluster.session_pids(seen) == []
    temp = local_cluster.make_target(
        "t", type("L", (), {"workers": 3, "root": str(tmp_path / "root"), "cpus_per_node": 1,
                            "gcs_port": 1, "dashboard_port": 1})()
    ).ray_temp_dir  # fmt: skip
    left = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if temp.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    left.append(int(entry))
    assert left == [], f"processes of the cluster still run: {left}"
    assert not state_file.exists()


# ------------------------------------------------------------- fast: caps, --set, resume, retries


def test_an_emulated_slice_above_the_host_cap_is_refused_before_starting(tmp_path: Path) -> None:
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    r = _raygke("up", "--tpu", "v5e:16x16", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--tpu 'v5e:16x16' emulates 64 TPU hosts" in r.stderr
    assert f"at most {local_cluster.MAX_NODES} here" in r.stderr and "v5e:16x16@16" in r.stderr
    assert not (tmp_path / "root" / "t" / "state.json").exists(), "nothing was started"


def test_set_values_of_a_job_are_checked_together() -> None:
    """As a stack file's `args:` are: the cross-argument rules see every --set value of the job."""
    ok = local_jobs.parse_overrides(["train_lm.n_heads=3", "train_lm.d_model=96"])
    assert ok == {"train_lm": {"n_heads": 3, "d_model": 96}}
    assert local_jobs.parse_overrides(["tune_lm.steps=5", "tune_lm.report_every=5"])
    with pytest.raises(local_cluster.LocalError, match=r"report_every 50 is above steps 5"):
        local_jobs.parse_overrides(["tune_lm.steps=5"])
    with pytest.raises(local_cluster.LocalError, match=r"n_heads 5 does not divide d_model 96"):
        local_jobs.parse_overrides(["train_lm.d_model=96", "train_lm.n_heads=5"])


def test_a_bad_combination_is_refused_before_any_job_runs(tmp_path: Path) -> None:
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    r = _raygke("run", "--config", str(cfg), "--set", "train_lm.n_heads=5", cwd=tmp_path)
    assert r.returncode == 2 and "n_heads 5 does not divide d_model" in r.stderr, r.stderr


def test_pending_run_record_and_pipeline_key(tmp_path: Path) -> None:
    target = local_cluster.LocalTarget("t", 1, 1, 1, 1, tmp_path)
    assert local_jobs.read_pending(target) is None
    key = local_jobs.pipeline_key(["prepare", "train_lm"], "/c", {"train_lm": {"steps": 5}}, "cpu")
    assert key == local_jobs.pipeline_key(
        ["prepare", "train_lm"], "/c", {"train_lm": {"steps": 5}}, "cpu"
    )
    for other in (
        (["train_lm"], "/c", {"train_lm": {"steps": 5}}, "cpu"),
        (["prepare", "train_lm"], "/d", {"train_lm": {"steps": 5}}, "cpu"),
        (["prepare", "train_lm"], "/c", {"train_lm": {"steps": 6}}, "cpu"),
        (["prepare", "train_lm"], "/c", {"train_lm": {"steps": 5}}, "tpu"),
    ):
        assert local_jobs.pipeline_key(*other) != key
    local_jobs.write_pending(target, {"key": key, "run_name": "lm-c-1"})
    assert local_jobs.read_pending(target) == {"key": key, "run_name": "lm-c-1"}
    (tmp_path / "runs" / local_jobs.PENDING_FILE).write_text("{broken")
    assert local_jobs.read_pending(target) is None
    local_jobs.write_pending(target, None)
    assert not (tmp_path / "runs" / local_jobs.PENDING_FILE).exists()


def test_a_resumed_run_reuses_a_job_result_only_while_its_arguments_and_outputs_hold(
    tmp_path: Path,
) -> None:
    """local_jobs.reusable: a job that succeeded in the interrupted run is not run again while
    its bound arguments are the same and its outputs (a data job's dataset manifest, a reported
    local checkpoint folder) are still there."""
    ds = tmp_path / "datasets" / "corpus-1"
    ds.mkdir(parents=True)
    (ds / "_manifest.json").write_text('{"rows": 10}')
    args = {"data": "/c", "dataset": str(ds), "context_length": 32}
    outcome = local_jobs.JobOutcome("prepare", "raygke-prepare-1", "SUCCEEDED", 3.21, {"rows": 10})
    entry = local_jobs.done_entry(outcome, args)
    assert entry["job_id"] == "raygke-prepare-1" and entry["seconds"] == 3.21
    entry = json.loads(json.dumps(entry))  # as read back from pending_run.json
    assert local_jobs.reusable("prepare", entry, args) == {"rows": 10}
    assert local_jobs.reusable("prepare", entry, {**args, "context_length": 64}) is None
    assert local_jobs.reusable("prepare", None, args) is None
    (ds / "_manifest.json").unlink()  # the dataset is gone: prepare runs again
    assert local_jobs.reusable("prepare", entry, args) is None
    ckpt = tmp_path / "checkpoints" / "lm-1" / "checkpoint_00000040"
    ckpt.mkdir(parents=True)
    train_args = {"dataset": str(ds), "storage_path": str(tmp_path / "checkpoints")}
    trained = local_jobs.JobOutcome("train_lm", "j2", "SUCCEEDED", 9.0, {"checkpoint": str(ckpt)})
    entry = json.loads(json.dumps(local_jobs.done_entry(trained, train_args)))
    assert local_jobs.reusable("train_lm", entry, train_args) == {"checkpoint": str(ckpt)}
    ckpt.rmdir()
    assert local_jobs.reusable("train_lm", entry, train_args) is None


def test_resume_point_is_the_newest_verifying_checkpoint(tmp_path: Path) -> None:
    from workloads.checkpoint import write_checkpoint

    run = tmp_path / "lm-x"
    for step in (20, 40):
        write_checkpoint(run / f"checkpoint_{step:08d}", {"model.pt": b"w" * step}, {"step": step})
    (run / "checkpoint_00000040" / "model.pt").write_bytes(b"damaged")
    assert local_jobs.resume_point(str(tmp_path), "lm-x") == (20, str(run / "checkpoint_00000020"))
    assert local_jobs.resume_point(str(tmp_path), "nope") is None


def test_retry_watch_reads_ray_trains_failure_policy_and_step_restarts() -> None:
    w = local_jobs.RetryWatch("train_lm")
    assert w.line("(TrainController pid=1) [FailurePolicy] RETRY") is None
    assert w.line("  Source: worker group") is None
    assert w.line("  Error count: 1 (max allowed: 2)") == (
        "train_lm: a training worker failed; Ray Train retries (1 of 2)"
    )
    assert w.line("  Error count: 1 (max allowed: 2)") is None, "only after a decision line"
    w.line("[FailurePolicy] RAISE")
    assert "no retry left" in (w.line("Error count: 3 (max allowed: 2)") or "")
    assert w.progress({"stage": "train", "done": 3, "total": 6}) is None
    assert w.progress({"stage": "train", "done": 5, "total": 6}) is None
    assert w.progress({"stage": "train", "done": 3, "total": 6}) == (
        "train_lm: workers restarted at step 3 (were at step 5)"
    )
    assert w.progress({"stage": "prepare", "done": 1, "total": 6}) is None


def test_local_nodes_poll_train_workers_often_and_stop_undrained_unless_the_caller_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The local nodes' Ray Train poll (a quarter second), SIGTERM drain (none) and Parquet
    footer actors (one); the effect of no drain on `down` is test_down_leaves_nothing_behind's
    (every process gone)."""
    target = local_cluster.LocalTarget("t", 1, 1, 1, 1, tmp_path)
    monkeypatch.delenv(local_cluster.LOCAL_TRAIN_POLL_ENV, raising=False)
    monkeypatch.delenv(local_cluster.LOCAL_DRAIN_ENV, raising=False)
    monkeypatch.delenv(local_cluster.LOCAL_PREEMPTION_WATCHER_ENV, raising=False)
    monkeypatch.delenv(local_cluster.LOCAL_PARQUET_FOOTER_ACTORS_ENV, raising=False)
    env = local_cluster.node_env(target)
    assert env[local_cluster.LOCAL_PREEMPTION_WATCHER_ENV] == "0"
    assert env[local_cluster.LOCAL_PARQUET_FOOTER_ACTORS_ENV] == "1"
    assert env[local_cluster.LOCAL_TRAIN_POLL_ENV] == local_cluster.LOCAL_TRAIN_POLL_S == "0.25"
    assert env[local_cluster.LOCAL_DRAIN_ENV] == local_cluster.LOCAL_DRAIN_S == "0"
    monkeypatch.setenv(local_cluster.LOCAL_TRAIN_POLL_ENV, "3")
    monkeypatch.setenv(local_cluster.LOCAL_DRAIN_ENV, "5")
    monkeypatch.setenv(local_cluster.LOCAL_PARQUET_FOOTER_ACTORS_ENV, "8")
    env = local_cluster.node_env(target)
    assert env[local_cluster.LOCAL_PARQUET_FOOTER_ACTORS_ENV] == "8"
    assert (env[local_cluster.LOCAL_TRAIN_POLL_ENV], env[local_cluster.LOCAL_DRAIN_ENV]) == (
        "3",
        "5",
    )
