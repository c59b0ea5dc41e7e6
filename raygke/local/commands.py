"""``raygke local``: the local Ray environment — ``up``, ``status``, ``run``, ``serve``, ``down``.

The stack is chosen with ``--stack NAME`` (``Pulumi.NAME.yaml``) or ``--config FILE``; with
neither (or ``--stack local`` and no ``Pulumi.local.yaml``) the built-in ``local`` environment is
used: ``LocalConfig`` defaults (1 worker, 1 CPU per node, free GCS and dashboard ports, root
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

import time
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.table import Table

from raygke.console import EXIT_USAGE, console, err, print_table
from raygke.console import table as make_table
from raygke.local import cluster as local_cluster
from raygke.local import gcs_ft as local_gcs_ft
from raygke.local import leases
from raygke.local.app import ConfigOpt, StackOpt, app, resolve_target, target_opts, with_target
from raygke.local.app import api_errors as _api_errors
from raygke.local.app import dead_nodes as _dead
from raygke.local.app import fail as _fail


def _nodes_table(state: dict[str, Any]) -> Table:
    table = make_table(
        f"local cluster {state['stack']!r} (recorded processes)",
        ("node", "role", "pid", "process", "cpus", "resources", "log"),
    )
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
    redis = state.get("gcs_ft")
    if redis:
        console.print(
            f"gcs ft     redis-server {redis['address']} (pid {redis['pid']}); the head restarts "
            "when it exits and its GCS recovers from Redis",
            markup=False,
        )
    for node, url in sorted((state.get("metrics") or {}).items()):
        console.print(f"metrics    {node:<12} {url}  (Prometheus; Ray and Serve metrics)")
    console.print(
        f"ray CLI    RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={state['token_file']} "
        f"ray job list --address {state['dashboard_url']}",
        markup=False,
    )


def _tpu_nodes(spec: str) -> list[local_cluster.ExtraNode]:
    from raygke.local.tpu_emulation import emulated_tpu_nodes

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
    gcs_ft: bool = typer.Option(
        False,
        "--gcs-ft",
        help="GCS fault tolerance: the head's GCS in a local redis-server (started and stopped "
        "with the cluster) and the head restarted when it exits, as KubeRay runs a RayService "
        "with gcsFaultToleranceOptions",
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
                if gcs_ft and not state.get("gcs_ft"):
                    _fail(
                        f"local cluster {target.stack!r} is already up without GCS fault "
                        "tolerance; run `raygke local down` first to start it with --gcs-ft"
                    )
                local_cluster.wait_ready(target, nodes, timeout_s=30)
                console.print(
                    f"[green]reusing[/] local cluster {target.stack!r}: already up with "
                    f"{len(nodes)} node(s), head pid {nodes[0].pid}"
                )
                if workers is not None and workers != sum(n.role == "worker" for n in nodes):
                    console.print(
                        with_target(
                            f"note: --workers {workers} ignored; run `raygke local down` first "
                            "to change the shape"
                        ),
                        markup=False,
                    )
                print_table(_nodes_table(state))
                _print_endpoints(state)
                _print_users(target, state)
                return
            if len(dead) < len(nodes):
                d = dead[0]
                _fail(
                    f"node {d.name} (pid {d.pid}) of local cluster {target.stack!r} is dead; "
                    "run `raygke local down` and then `raygke local up`"
                )
            local_cluster.stop_nodes(nodes)  # every node is gone: sweep leftovers, start afresh
            local_gcs_ft.stop_redis(state.get("gcs_ft"))
            target.state_file.unlink(missing_ok=True)
            console.print(f"the previous local cluster {target.stack!r} is gone; starting anew")
        extra = _tpu_nodes(tpu) if tpu else []
        tpu_state = {"spec": tpu, "hosts": [x.name for x in extra]} if tpu else None
        t0 = time.monotonic()
        with console.status("starting the local Ray cluster") as status:
            state = local_cluster.start_cluster(
                target, extra, tpu_state, on_progress=lambda m: status.update(m), gcs_ft=gcs_ft
            )
        state["started_by"] = leases.caller()  # who started it: `down --if-mine` reads it
        local_cluster.write_state(target, state)
        leases.forget(target.dir)  # a former cluster's Serve lease and last `down`
        console.print(
            f"[green]up[/] local cluster {target.stack!r}: {len(state['nodes'])} node(s) "
            f"in {time.monotonic() - t0:.1f} s"
        )
        outside = [s for s in local_cluster.cluster_sockets(state) if not s.loopback]
        if outside:  # Ray changed how it binds: say so rather than claim "local"
            shown = ", ".join(f"{s.ip}:{s.port} (pid {s.pid})" for s in outside[:5])
            err.print(f"warning: listening on more than 127.0.0.1: {shown}", markup=False)
        print_table(_nodes_table(state))
        _print_endpoints(state)
    except (local_cluster.LocalError, local_gcs_ft.RedisError) as e:
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


def _print_users(target: local_cluster.LocalTarget, state: dict[str, Any]) -> None:
    """Who started the cluster and which commands use it now (:mod:`raygke.local.leases`)."""
    owner = state.get("started_by") or {}
    if owner:
        since = time.strftime("%H:%M:%S", time.localtime(owner.get("at") or 0))
        console.print(
            f"started by `{owner.get('command')}` (pid {owner.get('pid')}, at {since})",
            markup=False,
            highlight=False,
        )
    for lease in leases.live_leases(target.dir, exclude_pid=None):
        console.print(f"used by    {lease.describe()}", markup=False, highlight=False)


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
    print_table(_nodes_table(state))
    _print_endpoints(state)
    _print_users(target, state)
    dead = _dead(state)
    head = local_cluster.nodes_of(state)[0] if state["nodes"] else None
    if head is not None and head.alive:
        try:
            ray_nodes = local_cluster.cluster_nodes(target)
        except Exception as e:
            _fail(f"the dashboard at {state['dashboard_url']} does not answer: {e}")
        table = make_table("Ray nodes", ("name", "state", "ip", "head", "resources", "labels"))
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
        print_table(table)
        _print_serve(target)
    if dead:
        names = ", ".join(f"{n.name} (pid {n.pid})" for n in dead)
        _fail(f"dead node(s): {names}; run `raygke local down` and then `raygke local up`")


def _print_serve(target: local_cluster.LocalTarget) -> None:
    """The Serve applications (name, status, URL, replicas per deployment), if any."""
    from raygke.local import serve as local_serve

    try:
        details = local_serve.serve_details(target)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        console.print(f"serve      (not answering: {first})", markup=False)
        return
    apps = details.get("applications") or {}
    if not apps:
        console.print(
            with_target("serve      no application (`raygke local serve` deploys one)"),
            markup=False,
        )
        return
    port = (details.get("http_options") or {}).get("port", local_serve.DEFAULT_PORT)
    table = make_table("Serve applications", ("name", "status", "url", "deployments"))
    for name, entry in sorted(apps.items()):
        deps = ", ".join(
            f"{d}: {dd.get('status', '?')} ({len(dd.get('replicas') or [])} replica(s))"
            for d, dd in sorted((entry.get("deployments") or {}).items())
        )
        route = entry.get("route_prefix") or "/"
        table.add_row(name, entry.get("status", "?"), local_serve.url(port) + route, deps or "-")
    print_table(table)


@app.command()
def down(
    stack: str | None = StackOpt,
    config: Path | None = ConfigOpt,
    force: bool = typer.Option(
        False, "--force", help="Stop it even while other commands use it (they are interrupted)"
    ),
    if_mine: bool = typer.Option(
        False,
        "--if-mine",
        help="Stop it only if this shell's `raygke local up` started it and no other command "
        "uses it; else leave it up and say who holds it (the Makefile's exit step)",
    ),
) -> None:
    """Stop exactly the processes `up` started (and their sessions). Idempotent.

    While another command uses the cluster (a `raygke local run`, a Serve application), it
    names them and stops nothing unless --force is given."""
    target = resolve_target(stack, config)
    try:
        state = local_cluster.read_state(target)
    except local_cluster.LocalError as e:
        _fail(str(e))
    if state is None:
        console.print(f"no local cluster is recorded for stack {target.stack!r}; nothing to stop")
        return
    users = leases.live_leases(target.dir, exclude_pid=None)
    if if_mine:
        owner = state.get("started_by") or {}
        held = "; ".join(x.describe() for x in users)
        if not leases.started_here(state):
            who = f"`{owner['command']}` (pid {owner['pid']})" if owner else "another command"
            console.print(
                f"left local cluster {target.stack!r} up: it was started by {who}, not by this "
                "command" + (f"; in use by {held}" if held else ""),
                markup=False,
                highlight=False,
            )
            return
        if users:
            console.print(
                with_target(
                    f"left local cluster {target.stack!r} up: in use by {held}; "
                    "`raygke local down` stops it once they are done"
                ),
                markup=False,
                highlight=False,
            )
            return
    elif users and not force:
        held = "".join(f"\n  {x.describe()}" for x in users)
        _fail(
            f"local cluster {target.stack!r} is in use; stopping it would interrupt:{held}\n"
            "run `raygke local down --force` to stop it anyway",
        )
    nodes = local_cluster.nodes_of(state)
    with console.status(f"stopping {len(nodes)} node(s)"):
        left = local_cluster.stop_nodes(nodes) + local_gcs_ft.stop_redis(state.get("gcs_ft"))
    if left:
        _fail(f"could not stop pid(s) {', '.join(map(str, left))}; state kept in {target.dir}")
    leases.record_down(target.dir, users)
    target.state_file.unlink(missing_ok=True)
    pids = ", ".join(str(n.pid) for n in nodes)
    console.print(f"[green]down[/] local cluster {target.stack!r}: stopped pid(s) {pids}")
    for x in users:
        console.print(f"interrupted {x.describe()}", markup=False, highlight=False)


@app.command()
def serve(
    stack: str | None = StackOpt,
    config: Path | None = ConfigOpt,
    checkpoint: str | None = typer.Option(
        None,
        "--checkpoint",
        help="Checkpoint folder (its hf/ is served), experiment folder (its newest verifying "
        "checkpoint) or Hugging Face model folder; "
        "default: the newest verifying checkpoint of the last `raygke local run`",
    ),
    port: int = typer.Option(8000, "--port", help="HTTP port of Serve on 127.0.0.1"),
    overrides: list[str] | None = typer.Option(
        None,
        "--set",
        help="serve_llm argument KEY=VALUE (repeatable), e.g. max_model_len=256 "
        "(`python -m contract.registry` lists them)",
    ),
    stop: bool = typer.Option(False, "--stop", help="Delete the application and stop Serve"),
) -> None:
    """Serve a checkpoint's Hugging Face folder (hf/) on 127.0.0.1 with vLLM behind Ray Serve
    LLM: the OpenAI API under /v1 (models, completions, chat completions, streaming)."""
    from contract.args.base import ArgError, parse_value
    from contract.args.serve_llm import ServeLlmArgs
    from raygke.local import serve as local_serve

    if not 1024 <= port <= 65535:
        _fail(f"--port {port} is out of range; allowed: 1024..65535", EXIT_USAGE)
    args: dict[str, Any] = {}
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            _fail(f"--set {item!r} is not KEY=VALUE (e.g. max_model_len=256)", EXIT_USAGE)
        args[key] = parse_value(raw)
    problems = ServeLlmArgs.problems(args)
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
            leases.drop_serve_lease(target.dir, local_serve.APP_NAME)
            console.print(f"[green]stopped[/] Serve on local cluster {target.stack!r}")
            return
        if checkpoint is None:
            path = local_serve.default_checkpoint(state)
        else:
            path = str(Path(checkpoint).expanduser().resolve())
            if not Path(path).exists():
                _fail(f"--checkpoint {checkpoint!r} does not exist", EXIT_USAGE)
        args["model"] = path
        try:
            parsed = ServeLlmArgs.parse(args)
        except ArgError as e:
            _fail(f"--set: {e.problems[0]}", EXIT_USAGE)
        problem = local_serve.model_problem(args)  # the folder and the fit, before a slow deploy
        if problem:
            _fail(f"--checkpoint: {problem}", EXIT_USAGE)
        working_dir = local_serve.stage_archive(state["buckets"]["artifacts"])
        cfg = local_serve.serve_config(working_dir, args, port)
        t0 = time.monotonic()
        with (
            console.status("deploying vLLM behind Ray Serve LLM") as spin,
            _api_errors(state, "serve"),
        ):
            local_serve.deploy(
                target,
                cfg,
                timeout_s=900.0,  # vLLM imports and starts its engine for minutes on 2 cores
                on_status=lambda s: spin.update(f"vLLM: {s}"),
            )
            leases.serve_lease(target.dir, local_serve.APP_NAME)  # `down` asks before stopping
            loaded = time.monotonic() - t0
            spin.update("vLLM: the warm-up request")
            first = local_serve.warm_up(port, parsed.model_id)
    except local_cluster.LocalError as e:
        _fail(str(e))
    outside = [s for s in local_cluster.cluster_sockets(state) if not s.loopback]
    if outside:  # Ray changed how Serve binds: say so rather than claim "local"
        shown = ", ".join(f"{s.ip}:{s.port} (pid {s.pid})" for s in outside[:5])
        err.print(f"warning: listening on more than 127.0.0.1: {shown}", markup=False)
    console.print(f"[green]serving[/] {path}", highlight=False)
    console.print(
        f"ready      loading took {loaded:.0f} s; the warm-up request answered in {first:.1f} s",
        markup=False,
        highlight=False,
    )
    for line in local_serve.openai_lines(port, parsed.model_id):
        console.print(line, markup=False, highlight=False)
    console.print(f"stop       raygke local serve --stop{target_opts()}", markup=False)


# the run command lives in its own module (raygke/local/run.py) and registers itself on ``app``
from raygke.local import run as local_run  # noqa: E402
from raygke.local.run import summary_table  # noqa: E402

__all__ = ["app", "local_run", "resolve_target", "summary_table"]
