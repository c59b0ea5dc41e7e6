"""``raygke local``: the local Ray environment — ``up``, ``status``, ``run``, ``serve``, ``down``.

The stack is chosen with ``--stack NAME`` (``Pulumi.NAME.yaml``) or ``--config FILE``; with
neither (or ``--stack local`` and no ``Pulumi.local.yaml``) the built-in ``local`` environment is
used: ``LocalConfig`` defaults (1 worker, 1 CPU per node, GCS port 6380, dashboard 8266, root
``.raygke/local``). ``$RAYGKE_LOCAL_ROOT`` overrides the root.

``run`` shows one progress line or bar per job and writes the jobs' logs (Ray's own lines
included) to ``<root>/<stack>/runs/<YYYYmmdd-HHMMSS>/run.log`` (``--verbose`` also streams them);
a worker failure / Ray Train retry is shown on the console. A run that trained and did not
finish is resumed by the next run of the same pipeline (``runs/pending_run.json``; ``--fresh``
starts over).

Exit codes: 0 success; 1 the operation failed (port in use, dead node, missing dependency, a job
failed), one line on stderr; 2 usage error; 130 interrupted (Ctrl-C, SIGTERM). Ray is imported only
inside these commands.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.table import Table
from rich.text import Text

from raygke import local_cluster
from raygke.console import EXIT_FAILED, EXIT_USAGE, console, err
from raygke.stacks import choose_or_exit, load_or_exit

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The local Ray environment: a head and worker nodes on this machine, buckets as folders.",
)

StackOpt = typer.Option(
    None, "--stack", "-s", help="Stack name: Pulumi.NAME.yaml (default: built-in 'local')"
)
ConfigOpt = typer.Option(None, "--config", "-c", help="Path to a stack file")


def _fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    err.print(f"error: {message}", markup=False)
    raise typer.Exit(code)


def resolve_target(
    stack: str | None, config: Path | None, workers: int | None = None
) -> local_cluster.LocalTarget:
    """The :class:`~raygke.local_cluster.LocalTarget` named by the options (rules in
    :mod:`raygke.stacks`; the built-in stack is ``local``).

    Raises:
        typer.Exit(2): both options, a missing stack file, or ``--workers`` out of 0..16.
        typer.Exit(1): an invalid stack file (every problem listed).
    """
    from components.stack import LocalConfig

    choice = choose_or_exit(stack, config, builtin=local_cluster.BUILTIN_STACK)
    local = load_or_exit(choice.path).local if choice.path is not None else LocalConfig()
    try:
        return local_cluster.make_target(choice.name, local, workers)
    except local_cluster.LocalError as e:
        _fail(str(e), EXIT_USAGE)


def _queue_note(stack: str | None, config: Path | None, names: list[str]) -> None:
    """Say once that Kueue queues do not apply locally (raygke.queue.local_queue_note)."""
    from raygke.queue import local_queue_note

    choice = choose_or_exit(stack, config, builtin=local_cluster.BUILTIN_STACK)
    note = local_queue_note(load_or_exit(choice.path), names) if choice.path else None
    if note:
        err.print(note, markup=False)


def _nodes_table(state: dict[str, Any]) -> Table:
    table = Table(title=f"local cluster {state['stack']!r} (recorded processes)")
    for col in ("node", "role", "pid", "process", "cpus", "resources", "log"):
        table.add_column(col)
    for n in local_cluster.nodes_of(state):
        alive = "[green]alive[/]" if n.alive else "[red]dead[/]"
        res = ", ".join(f"{k}={v:g}" for k, v in sorted(n.resources.items())) or "-"
        table.add_row(n.name, n.role, str(n.pid), alive, str(n.num_cpus), res, n.log)
    return table


def _print_endpoints(state: dict[str, Any]) -> None:
    console.print(f"address    {state['address']}")
    console.print(f"dashboard  {state['dashboard_url']}  (Jobs API; Ray token auth is on)")
    for bucket, folder in state["buckets"].items():
        console.print(f"bucket     {bucket:<12} {folder}")
    for node, url in sorted((state.get("metrics") or {}).items()):
        console.print(f"metrics    {node:<12} {url}  (Prometheus; Ray and Serve metrics)")
    console.print(
        f"ray CLI    RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={state['token_file']} "
        f"ray job list --address {state['dashboard_url']}",
        markup=False,
    )


def _dead(state: dict[str, Any]) -> list[local_cluster.NodeRecord]:
    return [n for n in local_cluster.nodes_of(state) if not n.alive]


def _tpu_nodes(spec: str) -> list[local_cluster.ExtraNode]:
    from raygke.tpu_emulation import emulated_tpu_nodes

    try:
        launches = emulated_tpu_nodes(spec)
    except ValueError as e:
        _fail(f"--tpu {spec!r}: {e}", EXIT_USAGE)
    cap = local_cluster.MAX_NODES
    if len(launches) > cap:
        _fail(
            f"--tpu {spec!r} emulates {len(launches)} TPU hosts, one `ray start` process each; "
            f"at most {cap} here (like --workers). Split the slice's chips over fewer emulated "
            f"hosts with the test-only shape {spec.split('@')[0]}@HOSTS (e.g. "
            f"{spec.split('@')[0]}@{_fewer_hosts(launches, cap)}), or use a smaller slice",
            EXIT_USAGE,
        )
    return [
        local_cluster.ExtraNode(nl.name, "tpu-host", nl.num_cpus, nl.resources, nl.labels, nl.env)
        for nl in launches
    ]


def _fewer_hosts(launches: list[Any], cap: int) -> int:
    """The largest host count <= ``cap`` that divides the slice's chips (for the hint)."""
    chips = int(sum(n.resources.get("TPU", 0) for n in launches))
    return max(h for h in range(1, cap + 1) if chips % h == 0)


@app.command()
def up(
    stack: str | None = StackOpt,
    config: Path | None = ConfigOpt,
    workers: int | None = typer.Option(None, "--workers", "-w", help="CPU worker nodes (0..16)"),
    tpu: str | None = typer.Option(
        None, "--tpu", help="Also start hosts emulating a TPU slice, e.g. v5e:2x2"
    ),
) -> None:
    """Start a Ray head and worker nodes on 127.0.0.1 (one `ray start` each); reuse if up.

    Interrupted (Ctrl-C, SIGTERM, SIGHUP) while starting, it stops every node it started and
    exits 130.
    """
    import signal

    target = resolve_target(stack, config, workers)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # like Ctrl-C: unwind, so the nodes are stopped
        signal.signal(sig, _interrupt)
    try:
        local_cluster.require_ray()
        state = local_cluster.read_state(target)
        if state is not None:
            nodes = local_cluster.nodes_of(state)
            dead = _dead(state)
            if nodes and not dead:
                running_tpu = (state.get("tpu") or {}).get("spec")
                if tpu is not None and tpu != running_tpu:
                    _fail(
                        f"local cluster {target.stack!r} is already up "
                        f"{'with TPU hosts ' + running_tpu if running_tpu else 'without TPU hosts'}"
                        f"; run `raygke local down` first to start it with --tpu {tpu}"
                    )
                local_cluster.wait_ready(target, nodes, timeout_s=30)
                console.print(
                    f"[green]reusing[/] local cluster {target.stack!r}: already up with "
                    f"{len(nodes)} node(s), head pid {nodes[0].pid}"
                )
                if workers is not None and workers != sum(n.role == "worker" for n in nodes):
                    console.print(
                        f"note: --workers {workers} ignored; run `raygke local down` first "
                        "to change the shape"
                    )
                console.print(_nodes_table(state))
                _print_endpoints(state)
                return
            if len(dead) < len(nodes):
                d = dead[0]
                _fail(
                    f"node {d.name} (pid {d.pid}) of local cluster {target.stack!r} is dead; "
                    "run `raygke local down` and then `raygke local up`"
                )
            local_cluster.stop_nodes(nodes)  # every node is gone: sweep leftovers, start afresh
            target.state_file.unlink(missing_ok=True)
            console.print(f"the previous local cluster {target.stack!r} is gone; starting anew")
        extra = _tpu_nodes(tpu) if tpu else []
        tpu_state = {"spec": tpu, "hosts": [x.name for x in extra]} if tpu else None
        t0 = time.monotonic()
        with console.status("starting the local Ray cluster") as status:
            state = local_cluster.start_cluster(
                target, extra, tpu_state, on_progress=lambda m: status.update(m)
            )
        console.print(
            f"[green]up[/] local cluster {target.stack!r}: {len(state['nodes'])} node(s) "
            f"in {time.monotonic() - t0:.1f} s"
        )
        outside = [s for s in local_cluster.cluster_sockets(state) if not s.loopback]
        if outside:  # Ray changed how it binds: say so rather than claim "local"
            shown = ", ".join(f"{s.ip}:{s.port} (pid {s.pid})" for s in outside[:5])
            err.print(f"warning: listening on more than 127.0.0.1: {shown}", markup=False)
        console.print(_nodes_table(state))
        _print_endpoints(state)
    except local_cluster.LocalError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        left = local_cluster.session_pids(
            n.pid for n in local_cluster.nodes_of(_state_or_none(target))
        )
        if left:
            _fail(
                f"interrupted; pid(s) {', '.join(map(str, left))} still run: "
                "`raygke local down` stops them",
                130,
            )
        err.print("interrupted; every node started was stopped", markup=False)
        raise typer.Exit(130) from None


def _interrupt(signum: int, _frame: Any) -> NoReturn:
    raise KeyboardInterrupt


def _state_or_none(target: local_cluster.LocalTarget) -> dict[str, Any] | None:
    try:
        return local_cluster.read_state(target)
    except local_cluster.LocalError:
        return None


@app.command()
def status(stack: str | None = StackOpt, config: Path | None = ConfigOpt) -> None:
    """Show the recorded processes (alive/dead), address, dashboard and Ray's nodes."""
    target = resolve_target(stack, config)
    try:
        state = local_cluster.read_state(target)
    except local_cluster.LocalError as e:
        _fail(str(e))
    if state is None:
        _fail(f"no local cluster is recorded for stack {target.stack!r}; run `raygke local up`")
    console.print(_nodes_table(state))
    _print_endpoints(state)
    dead = _dead(state)
    head = local_cluster.nodes_of(state)[0] if state["nodes"] else None
    if head is not None and head.alive:
        try:
            ray_nodes = local_cluster.cluster_nodes(target)
        except Exception as e:
            _fail(f"the dashboard at {state['dashboard_url']} does not answer: {e}")
        table = Table(title="Ray nodes")
        for col in ("name", "state", "ip", "head", "resources", "labels"):
            table.add_column(col)
        for s in sorted(ray_nodes, key=lambda s: (not s.is_head_node, s.node_name)):
            res = ", ".join(
                f"{k}={v:g}"
                for k, v in sorted(s.resources_total.items())
                if not k.startswith("node:") and k not in ("memory", "object_store_memory")
            )
            labels = ", ".join(
                f"{k}={v}"
                for k, v in sorted((s.labels or {}).items())
                if not k.startswith("ray.io")
            )
            table.add_row(
                s.node_name, s.state, s.node_ip, "yes" if s.is_head_node else "", res, labels or "-"
            )
        console.print(table)
        _print_serve(target)
    if dead:
        names = ", ".join(f"{n.name} (pid {n.pid})" for n in dead)
        _fail(f"dead node(s): {names}; run `raygke local down` and then `raygke local up`")


def _print_serve(target: local_cluster.LocalTarget) -> None:
    """The Serve applications (name, status, URL, replicas per deployment), if any."""
    from raygke import local_serve

    try:
        details = local_serve.serve_details(target)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        console.print(f"serve      (not answering: {first})", markup=False)
        return
    apps = details.get("applications") or {}
    if not apps:
        console.print("serve      no application (`raygke local serve` deploys one)")
        return
    port = (details.get("http_options") or {}).get("port", local_serve.DEFAULT_PORT)
    table = Table(title="Serve applications")
    for col in ("name", "status", "url", "deployments"):
        table.add_column(col)
    for name, app in sorted(apps.items()):
        deps = ", ".join(
            f"{d}: {dd.get('status', '?')} ({len(dd.get('replicas') or [])} replica(s))"
            for d, dd in sorted((app.get("deployments") or {}).items())
        )
        route = app.get("route_prefix") or "/"
        table.add_row(name, app.get("status", "?"), local_serve.url(port) + route, deps or "-")
    console.print(table)


@app.command()
def down(stack: str | None = StackOpt, config: Path | None = ConfigOpt) -> None:
    """Stop exactly the processes `up` started (and their sessions). Idempotent."""
    target = resolve_target(stack, config)
    try:
        state = local_cluster.read_state(target)
    except local_cluster.LocalError as e:
        _fail(str(e))
    if state is None:
        console.print(f"no local cluster is recorded for stack {target.stack!r}; nothing to stop")
        return
    nodes = local_cluster.nodes_of(state)
    with console.status(f"stopping {len(nodes)} node(s)"):
        left = local_cluster.stop_nodes(nodes)
    if left:
        _fail(f"could not stop pid(s) {', '.join(map(str, left))}; state kept in {target.dir}")
    target.state_file.unlink(missing_ok=True)
    pids = ", ".join(str(n.pid) for n in nodes)
    console.print(f"[green]down[/] local cluster {target.stack!r}: stopped pid(s) {pids}")


@app.command()
def serve(
    stack: str | None = StackOpt,
    config: Path | None = ConfigOpt,
    checkpoint: str | None = typer.Option(
        None,
        "--checkpoint",
        help="Checkpoint folder, or an experiment folder (its newest verifying checkpoint); "
        "default: the newest verifying checkpoint of the last `raygke local run`",
    ),
    port: int = typer.Option(8000, "--port", help="HTTP port of Serve on 127.0.0.1"),
    overrides: list[str] | None = typer.Option(
        None, "--set", help="serve_lm argument KEY=VALUE (repeatable), e.g. max_batch_size=16"
    ),
    stop: bool = typer.Option(False, "--stop", help="Delete the application and stop Serve"),
) -> None:
    """Deploy the LM as a Ray Serve application (POST /generate, GET /healthz) on 127.0.0.1."""
    from contract.args.base import ArgError, parse_value
    from contract.args.serve_lm import ServeLmArgs
    from raygke import local_serve

    if not 1024 <= port <= 65535:
        _fail(f"--port {port} is out of range; allowed: 1024..65535", EXIT_USAGE)
    args: dict[str, Any] = {}
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            _fail(f"--set {item!r} is not KEY=VALUE (e.g. max_batch_size=16)", EXIT_USAGE)
        args[key] = parse_value(raw)
    problems = ServeLmArgs.problems(args)
    if problems:
        _fail(f"--set: {problems[0]}", EXIT_USAGE)
    target = resolve_target(stack, config)
    try:
        local_cluster.require_ray()
        state = local_cluster.read_state(target)
        if state is None or not state.get("nodes"):
            _fail(f"no local cluster is up for stack {target.stack!r}; run `raygke local up`")
        if stop:
            with _api_errors(state, "serve"):
                local_serve.stop(target)
            console.print(f"[green]stopped[/] Serve on local cluster {target.stack!r}")
            return
        if checkpoint is None:
            path = local_serve.default_checkpoint(state)
        else:
            path = (
                str(Path(checkpoint).expanduser().resolve())
                if "://" not in checkpoint
                else checkpoint
            )
            if "://" not in path and not Path(path).exists():
                _fail(f"--checkpoint {checkpoint!r} does not exist", EXIT_USAGE)
        args["checkpoint"] = path
        try:
            ServeLmArgs.parse(args)
        except ArgError as e:
            _fail(f"--set: {e.problems[0]}", EXIT_USAGE)
        working_dir = local_serve.stage_archive(state["buckets"]["artifacts"])
        cfg = local_serve.serve_config(working_dir, args, port)
        with console.status("deploying serve_lm") as spin, _api_errors(state, "serve"):
            local_serve.deploy(target, cfg, on_status=lambda s: spin.update(f"serve_lm: {s}"))
    except local_cluster.LocalError as e:
        _fail(str(e))
    console.print(f"[green]serving[/] {path}", highlight=False)
    console.print(
        f"url        {local_serve.url(port)}  (POST /generate, GET /healthz)", markup=False
    )
    console.print(f"curl       {local_serve.curl_line(port)}", markup=False)
    console.print("stop       raygke local serve --stop", markup=False)


def _summary_table(summary: dict[str, Any]) -> Table:
    def num(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    table = Table(title="summary", show_header=False)
    table.add_column("what")
    table.add_column("value", overflow="fold")
    table.add_row("rows (train windows)", num(summary["rows"], ","))
    table.add_row("validation rows", num(summary.get("val_rows"), ","))
    skipped = summary.get("skipped_by") or {}
    files = num(summary.get("files"), ",")
    if skipped:
        files += " (skipped: " + ", ".join(f"{k}: {v:,}" for k, v in skipped.items()) + ")"
    table.add_row("corpus files", Text(files))
    table.add_row("steps", num(summary["steps"], ","))
    table.add_row(
        "loss first -> last (nats/byte)",
        f"{num(summary['first_loss'], '.3f')} -> {num(summary['last_loss'], '.3f')}",
    )
    table.add_row("validation loss (nats/byte)", num(summary["val_loss"], ".3f"))
    table.add_row("xz -9e, same rows (nats/byte)", num(summary.get("xz_nats_per_byte"), ".3f"))
    table.add_row("model / xz (< 1 beats xz)", num(summary.get("val_vs_xz"), ".3f"))
    table.add_row("tokens/s", num(summary["tokens_per_s"], ",.0f"))
    table.add_row("checkpoint", summary["checkpoint"] or "-")
    table.add_row("sample", Text(repr(summary["sample"])) if summary["sample"] else "-")
    table.add_row("wall time (s)", f"{summary['seconds']:.1f}")
    return table


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
    except OSError as e:
        _fail(f"cannot write --summary-json {path}: {e}")


@app.command()
def run(
    jobs: list[str] | None = typer.Argument(
        None, help="Jobs to run in order (default: prepare train_lm evaluate)"
    ),
    stack: str | None = StackOpt,
    config: Path | None = ConfigOpt,
    data: str | None = typer.Option(
        None, "--data", help="Corpus: folder, glob or gs:// URI (default: Python stdlib sources)"
    ),
    summary_json: Path | None = typer.Option(
        None, "--summary-json", help="Also write the summary as JSON here"
    ),
    accelerator: str = typer.Option("cpu", "--accelerator", help="cpu | gpu | tpu"),
    overrides: list[str] | None = typer.Option(
        None, "--set", help="Extra job argument JOB.KEY=VALUE (repeatable), e.g. train_lm.steps=50"
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Stream the jobs' logs (Ray's own lines) here too"
    ),
    fresh: bool = typer.Option(
        False,
        "--fresh",
        help="Start over under a new run name instead of resuming an interrupted run of the "
        "same pipeline",
    ),
) -> None:
    """Submit jobs through the Ray Jobs API, show a progress line per job, and print a summary.

    The jobs' logs (Ray's own lines included) go to ``<root>/<stack>/runs/<time>/run.log``,
    whose path is printed; ``--verbose`` also streams them here. A run that trained and did
    not finish (failed, interrupted) is resumed by the next run of the same pipeline (same
    jobs, corpus, ``--set`` values, accelerator): same run name, so the trainer continues from
    its newest checkpoint ("resumed from checkpoint N"); ``--fresh`` starts over.
    """
    import signal

    from raygke import local_jobs
    from raygke.progress import RunLog

    # SIGTERM (timeout, CI cancellation) stops the running job like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    from contract.registry import DEFAULT_PIPELINE, get_workload

    try:
        names = local_jobs.resolve_jobs(jobs or list(DEFAULT_PIPELINE), accelerator)
        extra_args = local_jobs.parse_overrides(overrides or [])
        local_jobs.check_overrides(names, extra_args)
    except local_cluster.LocalError as e:
        _fail(str(e), EXIT_USAGE)
    target = resolve_target(stack, config)
    _queue_note(stack, config, names)
    exits = contextlib.ExitStack()  # the run log, and Ray's logger sent into it
    try:
        local_cluster.require_ray()
        state = local_cluster.read_state(target)
        if state is None or not state.get("nodes"):
            _fail(f"no local cluster is up for stack {target.stack!r}; run `raygke local up`")
        dead = _dead(state)
        if dead:
            d = dead[0]
            _fail(
                f"node {d.name} (pid {d.pid}) is dead; run `raygke local down` and then "
                "`raygke local up`"
            )
        if accelerator == "tpu":
            local_jobs.tpu_args(state)
        if accelerator == "gpu":
            gpus = sum(s.resources_total.get("GPU", 0) for s in local_cluster.cluster_nodes(target))
            if not gpus:
                _fail("--accelerator gpu: the local cluster has no GPU (Ray found none)")
        data_uri = local_jobs.absolute_data(data)
        ds = local_jobs.dataset_name(data_uri)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        trains = any(get_workload(n).trains for n in names)
        key = local_jobs.pipeline_key(names, data_uri, extra_args, accelerator)
        pending = local_jobs.read_pending(target) if trains else None
        resumed = pending is not None and pending["key"] == key and not fresh
        if resumed:
            run_name = str(pending["run_name"])
        elif trains:
            run_name = f"lm-{ds}-{stamp}"
        else:
            run_name = state.get("last_run") or f"lm-{ds}"
        for name in names:  # every job's arguments, before the first job runs
            try:
                local_jobs.job_args(name, state, data_uri, run_name, {}, accelerator, extra_args)
            except local_cluster.LocalError as e:
                _fail(str(e), EXIT_USAGE)
        if trains:
            local_jobs.write_pending(
                target, {"key": key, "run_name": run_name, "jobs": names, "started": stamp}
            )
        working_dir = local_jobs.stage_working_dir(state["buckets"]["artifacts"])
        console.print(
            f"running {' -> '.join(names)} on local cluster {target.stack!r} "
            f"({state['dashboard_url']}); data: {data_uri or 'Python standard library sources'}"
        )
        run_log = RunLog(target.run_log(stamp))
        console.print(f"log: {run_log.path}", markup=False)
        results: dict[str, dict[str, Any]] = {}
        outcomes: list[local_jobs.JobOutcome] = []
        t0 = time.monotonic()
        exits.callback(run_log.close)
        if not verbose:
            local_cluster.use_cluster_auth(target)  # before Ray is imported
            exits.enter_context(run_log.capture_ray_logging())
        for i, name in enumerate(names, 1):
            try:
                args = local_jobs.job_args(
                    name, state, data_uri, run_name, results, accelerator, overrides=extra_args
                )
            except local_cluster.LocalError as e:
                _fail(str(e), EXIT_USAGE)
            console.rule(f"[bold]{i}/{len(names)} {name}")
            if resumed and get_workload(name).trains:
                point = local_jobs.resume_point(state["buckets"]["checkpoints"], run_name)
                console.print(
                    f"resumed from checkpoint {point[0]} ({point[1]})"
                    if point
                    else f"resuming run {run_name}: it has no checkpoint yet; from step 0",
                    markup=False,
                    highlight=False,
                )
            run_log.write(f"==> {i}/{len(names)} {name} {json.dumps(args, default=str)}")
            with _api_errors(state, name):
                outcome = _run_shown(target, state, name, args, working_dir, run_log, verbose)
            run_log.write(f"==> {name}: job {outcome.job_id} {outcome.status}")
            outcomes.append(outcome)
            if outcome.status != "SUCCEEDED" or outcome.result is None:
                why = outcome.message or "no RAYGKE_RESULT line in its log"
                err.print(f"--- last {len(outcome.log_tail)} log lines of {name} ---", markup=False)
                for line in outcome.log_tail:
                    err.print(Text.from_ansi(line))
                err.print(f"full log: {run_log.path}", markup=False)
                if summary_json is not None:
                    _write_json(
                        summary_json,
                        {
                            "ok": False,
                            "failed_job": name,
                            "log": str(run_log.path),
                            **local_jobs.summarize(results),
                            "jobs": _jobs_json(outcomes),
                        },
                    )
                _fail(
                    f"job {name} ({outcome.job_id}) {outcome.status} after "
                    f"{outcome.seconds:.0f} s: {why.splitlines()[-1] if why else ''}"
                )
            results[name] = outcome.result
            console.print(
                f"[green]{name} succeeded[/] in {outcome.seconds:.1f} s: "
                f"{json.dumps(outcome.result, default=str)[:300]}",
                markup=True,
                highlight=False,
            )
            if get_workload(name).role == "trainer":
                state["last_run"] = run_name
                local_cluster.write_state(target, state)
        if trains:
            local_jobs.write_pending(target, None)  # finished: the next run starts anew
        summary = local_jobs.summarize(results)
        summary["seconds"] = time.monotonic() - t0
        console.print(_summary_table(summary))
        if summary_json is not None:
            payload = {
                "ok": True,
                **summary,
                "run_name": run_name,
                "data": data_uri,
                "log": str(run_log.path),
                "jobs": _jobs_json(outcomes),
            }
            _write_json(summary_json, payload)
            console.print(f"summary written to {summary_json}")
    except local_cluster.LocalError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        err.print("interrupted; the running job was stopped")
        raise typer.Exit(130) from None
    finally:
        exits.close()


def _run_shown(
    target: local_cluster.LocalTarget,
    state: dict[str, Any],
    name: str,
    args: dict[str, Any],
    working_dir: str,
    run_log: Any,
    verbose: bool,
) -> Any:
    """Run one job (``local_jobs.run_job``): every log line into ``run_log``; with ``verbose``
    also printed here under a status spinner, else shown as a progress bar or plain lines
    (:func:`raygke.progress.stage_display`)."""
    from contract.registry import get_workload
    from raygke import local_jobs
    from raygke.progress import parse_progress, stage_display

    watch = local_jobs.RetryWatch(name)

    def retry_notice(line: str, event: dict[str, Any] | None) -> str | None:
        notice = watch.line(line)
        if notice is None and event is not None and get_workload(name).role == "trainer":
            notice = watch.progress(event)
        if notice is not None:
            run_log.write(f"==> {notice}")
        return notice

    if verbose:
        t0 = time.monotonic()

        def log_and_print(line: str) -> None:
            run_log.write(line)
            console.print(Text.from_ansi(line))
            notice = retry_notice(line, parse_progress(line))
            if notice is not None:
                console.print(f"[yellow]{notice}[/]", highlight=False)

        with console.status(f"{name}: submitting") as spin:
            return local_jobs.run_job(
                target,
                state,
                name,
                args,
                working_dir,
                on_log=log_and_print,
                on_status=lambda s: spin.update(f"{name}: {s} ({time.monotonic() - t0:.0f} s)"),
            )
    with stage_display(console, name) as stage:

        def log_and_show(line: str) -> None:
            run_log.write(line)
            event = parse_progress(line)
            notice = retry_notice(line, event)
            if notice is not None:
                console.print(f"[yellow]{notice}[/]", highlight=False)
            if event is not None:
                stage.update(event)

        return local_jobs.run_job(
            target, state, name, args, working_dir, on_log=log_and_show, on_status=stage.status
        )


@contextlib.contextmanager
def _api_errors(state: dict[str, Any], name: str) -> Iterator[None]:
    """Turn a Jobs API failure (connection refused, HTTP error) into a one-line exit 1."""
    try:
        yield
    except (typer.Exit, KeyboardInterrupt, local_cluster.LocalError):
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        _fail(f"job {name}: the Jobs API at {state['dashboard_url']} failed: {first}")


def _jobs_json(outcomes: list[Any]) -> dict[str, Any]:
    return {
        o.name: {"job_id": o.job_id, "status": o.status, "seconds": round(o.seconds, 2)}
        for o in outcomes
    }
