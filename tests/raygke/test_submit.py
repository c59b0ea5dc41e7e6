"""``raygke submit``, the GKE side offline: what it resolves from a stack (the RayCluster's
namespace, head Service, port, token Secret — the same names the stack renders), the kubectl
commands it runs, its submission, and its errors (no kubectl, a Secret it may not read, a stack
without a RayCluster). A fake ``kubectl`` stands in for the real one; the end-to-end submissions
(GKE path through a fake kubectl to a real Jobs API, and ``--local``) are in
``tests/raygke/local/test_commands.py``."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import stat
from pathlib import Path

import pytest

from components.images.render import planned_refs
from components.plan.plan import plan as stack_plan
from components.raycrs.raycluster import ray_cluster_manifest
from components.raycrs.render import cluster_endpoints
from raygke import submit
from raygke.cli import main
from tests.helpers import ROOT, stack

DEV = str(ROOT / "Pulumi.dev.yaml")


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_plan_names_what_the_stack_renders_for_its_raycluster(name: str) -> None:
    cfg = stack(name)
    (rc,) = cfg.ray_clusters
    plan = submit.plan_for_stack(stack_plan(cfg), name)
    manifest = ray_cluster_manifest(
        stack_plan(cfg), rc, planned_refs(stack_plan(cfg).context, cfg.ray.images)
    )
    assert plan.cluster == rc.name == manifest["metadata"]["name"]
    assert plan.namespace == manifest["metadata"]["namespace"] == cfg.kuberay.namespace
    assert plan.secret == manifest["spec"]["authOptions"]["secretName"]
    assert manifest["spec"]["authOptions"]["mode"] == "token"
    assert plan.secret_key == "auth_token"
    # the Service and port of the stack's own `ray_clusters` output (docs/outputs.md)
    dashboard = cluster_endpoints(stack_plan(cfg).context, rc.name)["dashboard"]
    assert dashboard == f"http://{plan.service}.{plan.namespace}.svc.cluster.local:{plan.port}"
    assert plan.port == 8265


def test_kubectl_commands_forward_to_loopback_and_read_only_the_token_key() -> None:
    plan = submit.plan_for_stack(
        stack_plan(stack("dev")), "dev", kubeconfig="/k/cfg", context="gke_x"
    )
    assert plan.port_forward_command() == [
        "kubectl", "--kubeconfig", "/k/cfg", "--context", "gke_x", "port-forward",
        "--namespace", "ray", "--address", "127.0.0.1", "svc/research-head-svc", ":8265",
    ]  # fmt: skip
    assert plan.port_forward_command(18265)[-1] == "18265:8265"
    assert plan.token_command() == [
        "kubectl", "--kubeconfig", "/k/cfg", "--context", "gke_x", "get", "secret",
        "--namespace", "ray", "research-ray-auth", "--output", "jsonpath={.data.auth_token}",
    ]  # fmt: skip


def test_plan_refuses_a_stack_without_or_with_several_rayclusters() -> None:
    cfg = stack("dev")
    none = cfg.model_copy(update={"ray_clusters": []})
    with pytest.raises(submit.SubmitError, match=r"no long-lived RayCluster \(ray_clusters:\)"):
        submit.plan_for_stack(stack_plan(none), "dev")
    (rc,) = cfg.ray_clusters
    two = cfg.model_copy(update={"ray_clusters": [rc, rc.model_copy(update={"name": "other"})]})
    with pytest.raises(submit.SubmitError, match=r"2 RayClusters; choose one with --cluster"):
        submit.plan_for_stack(stack_plan(two), "dev")
    assert submit.plan_for_stack(stack_plan(two), "dev", cluster="other").secret == "other-ray-auth"
    with pytest.raises(submit.SubmitError, match=r"--cluster 'nope' is not a RayCluster"):
        submit.plan_for_stack(stack_plan(cfg), "dev", cluster="nope")


def test_a_script_becomes_python_file_in_its_folder(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    script = tmp_path / "pkg" / "train.py"
    script.write_text("print('hi')\n")
    sub = submit.build_submission([str(script)], None, ["LR=3e-4"], ["einops==0.8.1"])
    assert sub.entrypoint == "python train.py"
    assert sub.runtime_env == {
        "working_dir": str(tmp_path / "pkg"),
        "excludes": list(submit.DEFAULT_EXCLUDES),
        "env_vars": {"PYTHONUNBUFFERED": "1", "LR": "3e-4"},
        "pip": ["einops==0.8.1"],
    }
    sub = submit.build_submission([str(script)], str(tmp_path), (), ())
    assert sub.entrypoint == "python pkg/train.py"
    assert sub.runtime_env["working_dir"] == str(tmp_path)
    sub = submit.build_submission(["python", "-c", "print('a b')"], None, (), ())
    assert sub.entrypoint == "python -c 'print('\"'\"'a b'\"'\"')'"
    assert "working_dir" not in sub.runtime_env
    for bad, match in (
        ([], "no command"),
        ([str(tmp_path / "missing.py")], "not found"),
    ):
        with pytest.raises(submit.SubmitError, match=match):
            submit.build_submission(bad, None, (), ())
    with pytest.raises(submit.SubmitError, match=r"--env 'LR' is not KEY=VALUE"):
        submit.build_submission(["true"], None, ["LR"], ())
    with pytest.raises(submit.SubmitError, match=r"is not a folder"):
        submit.build_submission(["true"], str(script), (), ())


def test_dry_run_prints_the_plan_without_calling_anything(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    rc, out = run("submit", "--config", DEV, "--dry-run", str(script))
    assert rc == 0, out
    assert "RayCluster ray/research of stack 'dev'" in out
    assert "kubectl port-forward --namespace ray --address 127.0.0.1 svc/research-head-svc" in out
    assert "entrypoint python train.py" in out


def _fake_kubectl(folder: Path, body: str) -> None:
    folder.mkdir(exist_ok=True)
    exe = folder / "kubectl"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def test_without_kubectl_one_line_names_the_fix(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no kubectl
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    rc, out = run("submit", "--config", DEV, str(script))
    assert rc == 1
    assert "error: kubectl is not on PATH; install it" in out and "Traceback" not in out


def test_a_secret_the_caller_may_not_read_is_one_line(tmp_path: Path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    _fake_kubectl(
        bin_dir,
        "echo 'Error from server (Forbidden): secrets research-ray-auth is forbidden' >&2\n"
        "exit 1\n",
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    rc, out = run("submit", "--config", DEV, "--", "python", "-c", "1")
    assert rc == 1, out
    assert (
        "cannot read the token Secret ray/research-ray-auth: Error from server (Forbidden)" in out
    )
    assert "Traceback" not in out


def test_token_is_decoded_and_a_failing_port_forward_is_named(tmp_path: Path, monkeypatch) -> None:
    token = "t0ken-" + "a" * 58
    b64 = base64.b64encode(token.encode()).decode()
    bin_dir = tmp_path / "bin"
    _fake_kubectl(
        bin_dir,
        'for a in "$@"; do [ "$a" = secret ] && { printf %s ' + b64 + "; exit 0; }; done\n"
        'echo "error: services \\"research-head-svc\\" not found" >&2\nexit 1\n',
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    plan = submit.plan_for_stack(stack_plan(stack("dev")), "dev")
    assert submit.read_token(plan) == token
    with (
        pytest.raises(submit.SubmitError, match=r'exited: error: services "research-head-svc"'),
        submit.port_forward(plan, timeout_s=20),
    ):
        pass


def _job_folder(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    (job / ".venv" / "lib").mkdir(parents=True)
    (job / ".venv" / "lib" / "torch.so").write_bytes(b"\0" * 3_000_000)
    (job / "data").mkdir()
    (job / "data" / "big.bin").write_bytes(b"\0" * 2_000_000)
    (job / ".gitignore").write_text("data/\n")
    (job / "train.py").write_text("print('hi')\n")
    (job / "util.py").write_text("X = 1\n")
    return job


def test_dry_run_names_the_upload_root_its_size_and_what_it_leaves_out(tmp_path: Path) -> None:
    job = _job_folder(tmp_path)
    rc, out = run("submit", "--config", DEV, "--dry-run", str(job / "train.py"))
    assert rc == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("upload "))
    # train.py, util.py and .gitignore: not the .venv (default excludes), not data/ (.gitignore)
    assert f"{job} (3 files, 0.0 MiB before compression; excluded: .venv/" in line
    assert "and the patterns of .gitignore" in line
    sub = submit.build_submission([str(job / "train.py")], None, (), ())
    assert sub.runtime_env["excludes"][0] == ".venv/"  # what Ray is told to leave out, too


def test_an_upload_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    job = _job_folder(tmp_path)
    (job / ".gitignore").unlink()  # data/ (2 MB) is uploaded now
    rc, out = run(
        "submit", "--config", DEV, "--dry-run", "--max-upload-mib", "1", str(job / "train.py")
    )
    assert rc == 1, out
    assert (
        f"the working dir {job} holds 1.9 MiB to upload (3 files), over --max-upload-mib 1" in out
    )
    assert "Traceback" not in out


def test_without_a_target_submit_names_local_too(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    rc, out = run("submit", str(script))
    assert rc == 2, out
    assert "give --stack NAME or --config FILE" in out and "or --local" in out


def test_a_jobs_output_keeps_rays_own_records_in_its_log_file_only(tmp_path: Path, capsys) -> None:
    """Issue 50: `submit` printed Ray's INFO lines with raw ANSI codes."""
    from raygke.submit_log import JobLog

    log = JobLog(tmp_path / "runs" / "submit-x.log")
    lines = [
        "2026-12-07 03:40:12,345\tINFO worker.py:1917 -- Connecting to existing Ray cluster at "
        "address: 127.0.0.1:6379...",
        "\x1b[36m(pid=4242, ip=127.0.0.1)\x1b[0m 2026-12-07 03:40:13,001\tINFO "
        "streaming_executor.py:108 -- Starting execution",
        "\x1b[32mepoch 1\x1b[0m loss 2.5",
        "2026-12-07 03:40:14,000\tWARNING worker.py:10 -- something the user should see",
        "plain output",
    ]
    for line in lines:
        log.line(line)
    log.close()
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "epoch 1 loss 2.5",
        "2026-12-07 03:40:14,000\tWARNING worker.py:10 -- something the user should see",
        "plain output",
    ]
    written = log.path.read_text().splitlines()
    assert len(written) == 5 and "\x1b[" not in log.path.read_text() and log.hidden == 2
    assert written[1].startswith("(pid=4242, ip=127.0.0.1) 2026-12-07")


def test_a_failed_job_is_named_with_its_exit_code(monkeypatch) -> None:
    import ray.job_submission

    from raygke.submit_log import failure_detail

    class Info:
        driver_exit_code = 3
        message = "Job entrypoint command failed with exit code 3, last available logs:\n..."

    class Client:
        def __init__(self, url: str, headers: dict) -> None:
            assert headers == {"Authorization": "Bearer t"}

        def get_job_info(self, job_id: str) -> Info:
            return Info()

    monkeypatch.setattr(ray.job_submission, "JobSubmissionClient", Client)
    detail = failure_detail("http://127.0.0.1:1", {"Authorization": "Bearer t"}, "raysubmit_x")
    assert detail == " (Job entrypoint command failed with exit code 3)"
    Info.message = "stopped"
    assert failure_detail("u", {"Authorization": "Bearer t"}, "x") == " (exit code 3: stopped)"


def test_a_local_submission_holds_a_lease_while_it_follows_the_job(
    tmp_path: Path, monkeypatch
) -> None:
    """`raygke local down` names a followed `raygke submit --local` (issue 50)."""
    from raygke.local import leases

    state_dir = tmp_path / "root" / "local"
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    monkeypatch.setattr(
        submit,
        "_local_endpoint",
        lambda stack, config: (
            "local",
            "http://127.0.0.1:1",
            "t",
            "127.0.0.1:2",
            state_dir / "runs",
        ),
    )
    held: list[list[str]] = []

    def fake_run(url, token, sub, wait, metadata, log_dir) -> None:
        held.append([x.command for x in leases.live_leases(state_dir)])

    monkeypatch.setattr(submit, "_run", fake_run)
    monkeypatch.setattr("sys.argv", ["raygke", "submit", str(script), "--local"])
    rc, out = run("submit", "--local", str(script))
    assert rc == 0, out
    assert held == [[f"raygke submit {script}"]]
    assert leases.live_leases(state_dir) == [], "released when the command ends"
