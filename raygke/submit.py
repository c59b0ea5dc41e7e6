"""``raygke submit``: a researcher's job, from a laptop, on a stack's long-lived RayCluster.

What it does (GKE), with the stack file as the only input besides the script:

1. picks the stack's long-lived RayCluster (``ray_clusters:``; ``--cluster`` when it has several)
   and resolves what the stack renders for it (:func:`plan_for_stack`): the namespace
   (``kuberay.namespace``), KubeRay's head Service ``<cluster>-head-svc``
   (:func:`components.raycrs.render.head_service_host`), the dashboard / Jobs API port 8265
   and the token Secret ``<cluster>-ray-auth``, key ``auth_token``
   (:func:`components.kernel.ray.auth_secret_name`, ``AUTH_TOKEN_KEY``);
2. reads the token with ``kubectl get secret`` (the caller's own Kubernetes RBAC decides: reading
   that Secret is the permission to submit);
3. opens ``kubectl port-forward svc/<cluster>-head-svc :8265 --address 127.0.0.1`` through the
   Kubernetes API (the cluster's private DNS endpoint; no Service is exposed, the dashboard stays
   off every network: a port-forward enters the pod through the kubelet, so the namespace's
   default-deny NetworkPolicy is not in the way,
   https://kubernetes.io/docs/tasks/access-application-cluster/port-forward-access-application-cluster/);
4. submits through the Ray Jobs API with ``Authorization: Bearer <token>``
   (``ray.job_submission.JobSubmissionClient(headers=...)``; Ray 2.60 keeps a caller's own
   ``Authorization`` header, ``ray/_private/authentication/http_token_authentication.py``
   ``get_auth_headers_if_auth_enabled``), uploading ``--working-dir`` (Ray's runtime_env
   ``working_dir``, https://docs.ray.io/en/latest/ray-core/handling-dependencies.html), then
   follows the job's logs until it ends (``--no-wait`` returns at once; Ctrl-C detaches, the job
   keeps running).

The local twin (``--local``, or ``--stack local`` without a ``Pulumi.local.yaml``) submits the same
way to the running ``raygke local`` cluster: its dashboard URL and token file from its
``state.json``, no kubectl.

Exit codes: 0 the job succeeded (or was submitted, with ``--no-wait``); 1 it failed, or kubectl /
the cluster / the Jobs API failed (one line on stderr); 2 usage error. kubectl is the only
external program (https://kubernetes.io/docs/tasks/tools/); credentials come from the caller's
kubeconfig (``gcloud container clusters get-credentials``, or ``--kubeconfig``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from contract.errors import ConfigurationError
from raygke.console import EXIT_FAILED, EXIT_USAGE, console, err
from raygke.submit_log import JobLog, failure_detail
from raygke.upload import DEFAULT_EXCLUDES, DEFAULT_MAX_UPLOAD_MIB

if TYPE_CHECKING:
    from components.plan.plan import Plan

FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) ->")


class SubmitError(ConfigurationError):
    """A user-facing failure of a submission; ``str(e)`` is the one-line message (``error:
    <message>``, exit 1)."""


@dataclass(frozen=True)
class SubmitPlan:
    """Where a submission to a stack's RayCluster goes, as the stack renders it.

    Attributes:
        stack: stack name.
        cluster: the RayCluster's name.
        namespace: its namespace (``kuberay.namespace``, or the ``-gpudirect`` one of a cluster
            on a ``gpu_networking: gpudirect`` pool).
        service: KubeRay's head Service (``<cluster>-head-svc``).
        port: the head's dashboard / Jobs API port (8265).
        secret: the Secret holding the cluster's Ray token (``<cluster>-ray-auth``).
        secret_key: the key in it (``auth_token``).
        kubectl: the ``kubectl`` command with global flags (``--kubeconfig``, ``--context``).
    """

    stack: str
    cluster: str
    namespace: str
    service: str
    port: int
    secret: str
    secret_key: str
    kubectl: tuple[str, ...] = ("kubectl",)

    def token_command(self) -> list[str]:
        """``kubectl get secret`` printing the token, base64-encoded (the Secret's data)."""
        return [
            *self.kubectl,
            "get",
            "secret",
            "--namespace",
            self.namespace,
            self.secret,
            "--output",
            f"jsonpath={{.data.{self.secret_key}}}",
        ]

    def port_forward_command(self, local_port: int = 0) -> list[str]:
        """``kubectl port-forward`` of the head Service's Jobs API port to 127.0.0.1 only
        (``local_port`` 0: kubectl picks a free one and prints it)."""
        local = str(local_port) if local_port else ""
        return [
            *self.kubectl,
            "port-forward",
            "--namespace",
            self.namespace,
            "--address",
            "127.0.0.1",
            f"svc/{self.service}",
            f"{local}:{self.port}",
        ]


def plan_for_stack(
    p: Plan,
    stack: str,
    cluster: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> SubmitPlan:
    """The :class:`SubmitPlan` for the long-lived RayCluster ``cluster`` of the stack whose plan
    is ``p`` (the only one when None).

    Raises:
        SubmitError: the stack has no RayCluster, ``cluster`` is not one of them, or it has
            several and none was named.
    """
    from components.kernel.ray import AUTH_TOKEN_KEY, DASHBOARD_PORT, auth_secret_name
    from components.raycrs.render import head_service_host

    names = list(p.clusters)
    if not names:
        raise SubmitError(
            f"stack {stack!r} has no long-lived RayCluster (ray_clusters:) to submit to; add "
            "one, or run the job as a RayJob (jobs:)"
        )
    if cluster is None:
        if len(names) > 1:
            raise SubmitError(
                f"stack {stack!r} has {len(names)} RayClusters; choose one with --cluster: "
                f"{', '.join(names)}"
            )
        cluster = names[0]
    if cluster not in names:
        raise SubmitError(
            f"--cluster {cluster!r} is not a RayCluster of stack {stack!r}; it has: "
            f"{', '.join(names)}"
        )
    ctx = p.context
    host = head_service_host(ctx, cluster)
    kubectl = ["kubectl"]
    if kubeconfig:
        kubectl += ["--kubeconfig", kubeconfig]
    if context:
        kubectl += ["--context", context]
    return SubmitPlan(
        stack=stack,
        cluster=cluster,
        namespace=ctx.namespace_of(cluster),
        service=host.split(".", 1)[0],
        port=DASHBOARD_PORT,
        secret=auth_secret_name(cluster),
        secret_key=AUTH_TOKEN_KEY,
        kubectl=tuple(kubectl),
    )


def _kubectl_exe(plan: SubmitPlan) -> str:
    exe = shutil.which(plan.kubectl[0])
    if exe is None:
        raise SubmitError(
            "kubectl is not on PATH; install it (https://kubernetes.io/docs/tasks/tools/, or "
            "`gcloud components install kubectl`) and get the cluster's credentials with "
            "`gcloud container clusters get-credentials CLUSTER --region REGION --dns-endpoint`"
        )
    return exe


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def read_token(plan: SubmitPlan, timeout_s: float = 60.0) -> str:
    """The cluster's Ray token from its Secret (``kubectl get secret``), decoded.

    Raises:
        SubmitError: kubectl missing or failing (its last stderr line quoted), or the Secret
            has no such key.
    """
    cmd = [_kubectl_exe(plan), *plan.token_command()[1:]]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"`{shlex.join(plan.token_command())}` did not answer") from None
    if r.returncode != 0:
        raise SubmitError(
            f"cannot read the token Secret {plan.namespace}/{plan.secret}: "
            f"{_first_line(r.stderr)} (`{shlex.join(plan.token_command())}`)"
        )
    try:
        token = base64.b64decode(r.stdout.strip(), validate=True).decode().strip()
    except (ValueError, UnicodeDecodeError):
        token = ""
    if not token:
        raise SubmitError(
            f"Secret {plan.namespace}/{plan.secret} has no {plan.secret_key!r} value; is "
            f"RayCluster {plan.cluster!r} deployed (`pulumi up`)?"
        )
    return token


@contextlib.contextmanager
def port_forward(plan: SubmitPlan, timeout_s: float = 30.0) -> Iterator[str]:
    """Run ``kubectl port-forward`` for the plan; yields ``http://127.0.0.1:<port>`` once kubectl
    says it forwards, and stops it on exit.

    Raises:
        SubmitError: kubectl missing, exiting early (its last line quoted) or silent for
            ``timeout_s`` seconds.
    """
    cmd = [_kubectl_exe(plan), *plan.port_forward_command()[1:]]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = _wait_forwarding(proc, plan, timeout_s)
        yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _wait_forwarding(proc: subprocess.Popen[str], plan: SubmitPlan, timeout_s: float) -> str:
    import selectors

    shown = shlex.join(plan.port_forward_command())
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for _key, _ in sel.select(timeout=0.5):
            line = proc.stdout.readline()
            m = FORWARDING.search(line)
            if m:
                sel.close()
                return f"http://127.0.0.1:{m.group(1)}"
        if proc.poll() is not None:
            sel.close()
            raise SubmitError(
                f"kubectl port-forward to {plan.namespace}/svc/{plan.service} exited: "
                f"{_first_line(proc.stderr.read())} (`{shown}`)"
            )
    sel.close()
    raise SubmitError(f"kubectl port-forward gave no port within {timeout_s:.0f} s (`{shown}`)")


# -------------------------------------------------------------------------------- submission


@dataclass
class Submission:
    """What goes to the Jobs API: ``entrypoint`` (a shell command), ``runtime_env``."""

    entrypoint: str
    runtime_env: dict[str, Any] = field(default_factory=dict)


def build_submission(
    command: Sequence[str],
    working_dir: str | None,
    env: Sequence[str] = (),
    pip: Sequence[str] = (),
) -> Submission:
    """The entrypoint and runtime_env of ``raygke submit``.

    A single ``.py`` file as the command becomes ``python <file name>`` with the file's folder
    as the working dir (unless ``--working-dir`` is given, then the path is taken relative to
    it); any other command is run as given (quoted with :func:`shlex.join`).

    Raises:
        SubmitError: empty command, a working dir that is not a folder, ``--env`` not KEY=VALUE.
    """
    if not command:
        raise SubmitError("no command: give a script (train.py) or a command after --")
    parts = list(command)
    if len(parts) == 1 and parts[0].endswith(".py") and not Path(parts[0]).is_file():
        raise SubmitError(f"script {parts[0]!r} not found")
    if len(parts) == 1 and parts[0].endswith(".py") and Path(parts[0]).is_file():
        script = Path(parts[0]).resolve()
        if working_dir is None:
            working_dir = str(script.parent)
            parts = ["python", script.name]
        else:
            try:
                rel = script.relative_to(Path(working_dir).resolve())
            except ValueError:
                raise SubmitError(
                    f"script {parts[0]} is not under --working-dir {working_dir}"
                ) from None
            parts = ["python", rel.as_posix()]
    runtime_env: dict[str, Any] = {}
    if working_dir is not None:
        wd = Path(working_dir).expanduser()
        if not wd.is_dir():
            raise SubmitError(f"--working-dir {working_dir!r} is not a folder")
        runtime_env["working_dir"] = str(wd.resolve())
        runtime_env["excludes"] = list(DEFAULT_EXCLUDES)
    env_vars = {"PYTHONUNBUFFERED": "1"}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise SubmitError(f"--env {item!r} is not KEY=VALUE")
        env_vars[key] = value
    runtime_env["env_vars"] = env_vars
    if pip:
        runtime_env["pip"] = list(pip)
    return Submission(shlex.join(parts), runtime_env)


def new_job_id() -> str:
    """``raygke-submit-<YYYYmmdd-HHMMSS>-<4 hex>``, the submission id."""
    return f"raygke-submit-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


def submit_and_follow(
    url: str,
    headers: dict[str, str],
    submission: Submission,
    wait: bool,
    on_log: Callable[[str], None],
    job_id: str,
    metadata: dict[str, str] | None = None,
    poll_s: float = 1.0,
) -> str:
    """Submit as ``job_id`` through the Jobs API at ``url``; with ``wait`` stream the logs to
    ``on_log`` until the job ends. Returns the final status, or ``SUBMITTED`` without ``wait``.

    Ctrl-C while following detaches (KeyboardInterrupt propagates; the job keeps running)."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(url, headers=headers)
    client.submit_job(
        entrypoint=submission.entrypoint,
        runtime_env=submission.runtime_env,
        submission_id=job_id,
        metadata=metadata or {},
    )
    if not wait:
        return "SUBMITTED"
    printed, pending = 0, ""
    while True:
        status = client.get_job_status(job_id)
        logs = client.get_job_logs(job_id)
        if len(logs) > printed:
            chunk, printed = pending + logs[printed:], len(logs)
            *lines, pending = chunk.split("\n")
            for line in lines:
                on_log(line)
        if status.is_terminal():
            if pending:
                on_log(pending)
            return str(status.value)
        time.sleep(poll_s)


def _fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    err.print(f"error: {message}", markup=False)
    raise typer.Exit(code)


def _local_endpoint(stack: str | None, config: Path | None) -> tuple[str, str, str, str, Path]:
    """``(stack, dashboard URL, token, GCS address, log folder)`` of the running local cluster
    (the log folder: its ``runs/``, beside ``raygke local run``'s logs)."""
    from raygke.local import cluster as local_cluster
    from raygke.local import commands as local
    from raygke.local.app import with_target

    target = local.resolve_target(stack, config)
    try:
        state = local_cluster.read_state(target)
    except local_cluster.LocalError as e:
        raise SubmitError(str(e)) from None
    if state is None or not state.get("nodes"):
        raise SubmitError(
            with_target(f"no local cluster is up for stack {target.stack!r}; run `raygke local up`")
        )
    try:
        token = Path(state["token_file"]).read_text().strip()
    except OSError as e:
        raise SubmitError(
            f"cannot read the local cluster's token {state['token_file']}: {e}"
        ) from None
    return target.stack, state["dashboard_url"], token, state["address"], target.dir / "runs"


def _is_local(local: bool, stack: str | None, config: Path | None) -> bool:
    from raygke.local import cluster as local_cluster

    if local:
        return True
    return (
        config is None
        and stack == local_cluster.BUILTIN_STACK
        and not Path(f"Pulumi.{stack}.yaml").exists()
    )


def submit(
    command: list[str] | None = typer.Argument(
        None, help="A script (train.py) or a command (after --: -- python -m pkg.main --lr 3)"
    ),
    stack: str | None = typer.Option(None, "--stack", "-s", help="Stack name: Pulumi.NAME.yaml"),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    local: bool = typer.Option(
        False, "--local", help="Submit to the running `raygke local` cluster instead"
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", help="The stack's RayCluster (needed when it has several)"
    ),
    working_dir: str | None = typer.Option(
        None, "--working-dir", "-w", help="Folder uploaded as the job's working dir"
    ),
    env: list[str] | None = typer.Option(None, "--env", help="KEY=VALUE for the job (repeatable)"),
    pip: list[str] | None = typer.Option(
        None, "--pip", help="pip requirement installed for the job (repeatable)"
    ),
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubectl --kubeconfig"),
    context: str | None = typer.Option(None, "--context", help="kubectl --context"),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Follow the logs until the job ends"),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print where it would submit, what it would upload and the kubectl commands; no call",
    ),
    max_upload_mib: float = typer.Option(
        DEFAULT_MAX_UPLOAD_MIB,
        "--max-upload-mib",
        help="Refuse a working dir holding more than this to upload (MiB, before compression)",
    ),
) -> None:
    """Submit a script to a stack's long-lived RayCluster (kubectl port-forward, the token from
    the stack's Secret, the Ray Jobs API), or with --local to the local cluster."""
    if not local and stack is None and config is None:
        _fail(
            "give --stack NAME or --config FILE (a stack's RayCluster on GKE), or --local "
            "(the running `raygke local` cluster)",
            EXIT_USAGE,
        )
    try:
        sub = build_submission(command or [], working_dir, env or (), pip or ())
        _show_upload(sub, max_upload_mib)
        if _is_local(local, stack, config):
            if kubeconfig or context or cluster:
                _fail("--kubeconfig, --context and --cluster apply to a GKE stack, not --local", 2)
            name, url, token, address, log_dir = _local_endpoint(
                None if local and stack is None else stack, config
            )
            # the job's own Ray clients find this cluster, not another one on the machine
            sub.runtime_env["env_vars"].setdefault("RAY_ADDRESS", address)
            console.print(f"submitting to local cluster {name!r} ({url})", markup=False)
            if dry_run:
                console.print(f"entrypoint {sub.entrypoint}", markup=False)
                return
            from raygke.local import leases

            with leases.hold(log_dir.parent):  # `down` names it while the job is followed
                _run(url, token, sub, wait, {"raygke_stack": name}, log_dir)
            return
        from components.plan.plan import plan as stack_plan
        from raygke.stacks import choose_or_exit, load_or_exit

        choice = choose_or_exit(stack, config)
        assert choice.path is not None
        cfg = load_or_exit(choice.path)
        plan = plan_for_stack(stack_plan(cfg), choice.name, cluster, kubeconfig, context)
        console.print(
            f"submitting to RayCluster {plan.namespace}/{plan.cluster} of stack {plan.stack!r} "
            f"(svc/{plan.service}:{plan.port}, token from Secret {plan.secret})",
            markup=False,
        )
        if dry_run:
            console.print(f"token      {shlex.join(plan.token_command())}", markup=False)
            console.print(f"forward    {shlex.join(plan.port_forward_command())}", markup=False)
            console.print(f"entrypoint {sub.entrypoint}", markup=False)
            return
        token = read_token(plan)
        with port_forward(plan) as url:
            _run(
                url, token, sub, wait, {"raygke_stack": plan.stack, "raygke_cluster": plan.cluster}
            )
    except SubmitError as e:
        _fail(str(e))


def _show_upload(sub: Submission, max_mib: float) -> None:
    """Print what the job's working dir uploads (:mod:`raygke.upload`); refuse it over
    ``max_mib``."""
    wd = sub.runtime_env.get("working_dir")
    if wd is None:
        return
    from raygke.upload import measure, too_large

    upload = measure(Path(wd), tuple(sub.runtime_env["excludes"]))
    console.print(f"upload     {upload.describe()}", markup=False, soft_wrap=True)
    refusal = too_large(upload, max_mib)
    if refusal:
        raise SubmitError(refusal)


def _run(
    url: str,
    token: str,
    sub: Submission,
    wait: bool,
    metadata: dict[str, str],
    log_dir: Path | None = None,
) -> None:
    """Submit and follow; exit 1 when the job does not succeed (with its exit code). The job's
    output goes to ``<log_dir>/submit-<job>.log`` (default ``.raygke/submit``), Ray's own
    records only there (:class:`JobLog`)."""
    from raygke.local import cluster as local_cluster

    local_cluster.require_ray()
    os.environ.pop("RAY_ADDRESS", None)
    headers = {"Authorization": f"Bearer {token}"}
    job_id = new_job_id()
    console.print(f"job        {job_id}", markup=False)
    log = JobLog((log_dir or Path(".raygke") / "submit").resolve() / f"submit-{job_id}.log")
    if wait:
        console.print(f"log        {log.path}  (Ray's own lines are only there)", markup=False)
    try:
        status = submit_and_follow(url, headers, sub, wait, log.line, job_id, metadata)
    except KeyboardInterrupt:
        err.print(
            f"detached; job {job_id} keeps running (`ray job logs {job_id}` / `ray job stop "
            f"{job_id}` on the same address and token)",
            markup=False,
        )
        raise typer.Exit(130) from None
    except (typer.Exit, SubmitError):
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SubmitError(f"the Jobs API at {url} failed: {first}") from None
    finally:
        log.close()
    if status == "SUBMITTED":
        console.print(f"submitted {job_id}", markup=False)
        return
    if status != "SUCCEEDED":
        _fail(f"job {job_id} {status}{failure_detail(url, headers, job_id)}; log: {log.path}")
    console.print(f"[green]job {job_id} SUCCEEDED[/]", highlight=False)


__all__ = ["SubmitError", "SubmitPlan", "build_submission", "plan_for_stack", "submit"]
