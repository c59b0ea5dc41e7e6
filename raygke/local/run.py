"""``raygke local run``: the pipeline command (see :mod:`raygke.local.commands` for the environment and
:mod:`raygke.local.jobs` for the jobs' arguments, submission and results)."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from raygke.console import EXIT_USAGE, console, err
from raygke.local import cluster as local_cluster
from raygke.local import leases
from raygke.local import resume as local_resume
from raygke.local import summary as local_summary
from raygke.local.app import ConfigOpt, StackOpt, app, resolve_target
from raygke.local.app import api_errors as _api_errors
from raygke.local.app import dead_nodes as _dead
from raygke.local.app import fail as _fail
from raygke.local.app import queue_note as _queue_note
from raygke.local.brief import (
    BRIEF_STR_MAX,
    corpus_files,
    job_summary,
    result_brief,
    shorten,
    skip_reason,
    success_line,
)
from raygke.local.capacity import STALL_MINUTES, StallWatch

__all__ = [
    "BRIEF_STR_MAX",
    "corpus_files",
    "job_summary",
    "result_brief",
    "run",
    "shorten",
    "skip_reason",
    "success_line",
]


def summary_table(summary: dict[str, Any]) -> Table:
    def num(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    table = Table(title="summary", show_header=False)
    table.add_column("what")
    table.add_column("value", overflow="fold")
    table.add_row("rows (train windows)", num(summary["rows"], ","))
    table.add_row("validation rows (scored)", num(summary.get("val_rows"), ","))
    table.add_row(
        "corpus files", Text(corpus_files(summary.get("files"), summary.get("skipped_by")))
    )
    table.add_row("steps", num(summary["steps"], ","))
    table.add_row(
        "loss first -> last (nats/byte)",
        f"{num(summary['first_loss'], '.3f')} -> {num(summary['last_loss'], '.3f')}",
    )
    table.add_row("validation loss (nats/byte)", num(summary["val_loss"], ".3f"))
    table.add_row("xz -9e, same rows (nats/byte)", num(summary.get("xz_nats_per_byte"), ".3f"))
    table.add_row("model / xz (< 1 beats xz)", num(summary.get("val_vs_xz"), ".3f"))
    table.add_row(
        "PPMd order 16, same rows (nats/byte)", num(summary.get("ppmd_nats_per_byte"), ".3f")
    )
    table.add_row("model / PPMd (< 1 beats PPMd)", num(summary.get("val_vs_ppmd"), ".3f"))
    segments = summary.get("segments")
    table.add_row(
        "tokens/s (last segment)" if segments else "tokens/s", num(summary["tokens_per_s"], ",.0f")
    )
    mfu, peak = summary.get("mfu"), summary.get("peak_flops")
    table.add_row(
        "MFU (model FLOP/s / measured matmul peak)",
        "-"
        if mfu is None
        else f"{mfu:.1%} of {peak / 1e9:,.1f} GFLOP/s {summary.get('precision') or ''}".rstrip(),
    )
    table.add_row("checkpoint", summary["checkpoint"] or "-")
    table.add_row("Hugging Face model", summary.get("hf_model") or "-")
    table.add_row("sample", Text(repr(summary["sample"])) if summary["sample"] else "-")
    if segments:  # a resumed run: every segment, the total below
        table.add_row("segments", Text(local_resume.segments_text(segments)))
    table.add_row(
        "wall time (s)",
        f"{summary['seconds']:.1f}" + (f" (all {len(segments)} segments)" if segments else ""),
    )
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
    stall_minutes: float = typer.Option(
        STALL_MINUTES,
        "--stall-minutes",
        min=0,
        help="Fail a job that prints no progress line for this many minutes (0: wait forever)",
    ),
) -> None:
    """Submit jobs through the Ray Jobs API, show a progress line per job, and print a summary.

    The jobs' logs (Ray's own lines included) go to <root>/<stack>/runs/<time>/run.log,
    whose path is printed; --verbose also streams them here. A run that trained and did
    not finish (failed, interrupted) is resumed by the next run of the same pipeline (same
    jobs, corpus, --set values, accelerator): same run name, so the trainer continues from
    its newest checkpoint ("resumed from checkpoint N"), and a job that succeeded in it
    (prepare) is not run again: its result is reused ("result reused from run ...") while its
    arguments are the same and its outputs are there; --fresh starts over.

    Before the first job, each job's needs (trainer workers x CPUs, a CPU for Ray Data's
    tasks) are compared with what the cluster has free (a Serve application holds CPUs too): a
    run that cannot start is refused with the numbers and the fix. A job that waits for
    resources (Ray's "not enough resources" lines) or prints no progress for --stall-minutes
    fails with that, instead of waiting forever.
    """
    import signal

    from raygke.local import jobs as local_jobs
    from raygke.local.progress import RunLog

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
    # what an interrupt or a failure records and says (raygke/local/resume.py)
    run_name, trains, record, current, t0, from_step = None, False, None, None, 0.0, 0
    state: dict[str, Any] | None = None
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
        try:  # one pipeline per cluster; a refused run writes nothing
            exits.enter_context(leases.hold(target.dir, exclusive_of="raygke local run"))
        except leases.Busy as busy:
            _fail(
                f"local cluster {target.stack!r} is in use by {busy}; wait for it to finish "
                "(`raygke local status` lists who uses the cluster) or use another stack. "
                "Nothing was submitted"
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
        planned = {}
        for name in names:  # every job's arguments, before the first job runs
            try:
                planned[name] = local_jobs.job_args(
                    name, state, data_uri, run_name, {}, accelerator, extra_args
                )
            except local_cluster.LocalError as e:
                _fail(str(e), EXIT_USAGE)
        _refuse_what_cannot_start(target, state, planned)
        # the jobs that succeeded in the interrupted run (reused below where still valid)
        done: dict[str, Any] = dict((pending or {}).get("done") or {}) if resumed else {}
        earlier = list((pending or {}).get("segments") or []) if resumed else []
        record = {
            "key": key,
            "run_name": run_name,
            "jobs": names,
            "started": stamp,
            "done": done,
            "segments": earlier,
        }
        if trains:
            local_jobs.write_pending(target, record)
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
            prior = local_jobs.reusable(name, done.get(name), args) if resumed else None
            if prior is not None:
                job_id = str(done[name].get("job_id"))
                console.print(
                    f"{name}: result reused from run {run_name} (job {job_id} succeeded "
                    "before the interruption; --fresh runs it again)",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
                run_log.write(f"==> {i}/{len(names)} {name}: result of job {job_id} reused")
                results[name] = prior
                outcomes.append(
                    local_jobs.JobOutcome(
                        name,
                        job_id,
                        "SUCCEEDED",
                        float(done[name].get("seconds") or 0.0),
                        result=prior,
                        reused=True,
                    )
                )
                continue
            done.pop(name, None)  # runs again: an older result of it is stale
            current = name
            if resumed and get_workload(name).trains:
                point = local_jobs.resume_point(state["buckets"]["checkpoints"], run_name)
                from_step = point[0] if point else 0
                console.print(
                    f"resumed from checkpoint {point[0]} ({point[1]})"
                    if point
                    else f"resuming run {run_name}: it has no checkpoint yet; from step 0",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,  # one line, however long the checkpoint's path
                )
            run_log.write(f"==> {i}/{len(names)} {name} {json.dumps(args, default=str)}")
            stall = StallWatch(
                name, stall_minutes * 60 or None, describe=lambda: _free_now(target, state)
            )
            with _api_errors(state, name, _resume_hint(trains)):
                outcome = _run_shown(
                    target, state, name, args, working_dir, run_log, verbose, stall
                )
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
                            **local_summary.summarize(results),
                            "jobs": _jobs_json(outcomes),
                        },
                    )
                _fail(
                    f"job {name} ({outcome.job_id}) {outcome.status} after "
                    f"{outcome.seconds:.0f} s: {why.splitlines()[-1] if why else ''}"
                )
            results[name] = outcome.result
            if trains:  # a resumed run reuses it (local_jobs.reusable)
                done[name] = local_jobs.done_entry(outcome, args)
                local_jobs.write_pending(target, record)
            console.print(
                success_line(name, outcome.seconds, outcome.result), markup=True, highlight=False
            )
            if get_workload(name).role == "trainer":
                state["last_run"] = run_name
                local_cluster.write_state(target, state)
        if trains:
            local_jobs.write_pending(target, None)  # finished: the next run starts anew
        summary = local_summary.summarize(results)
        summary["seconds"] = time.monotonic() - t0
        local_resume.whole_run(summary, earlier, from_step)  # a resumed run: every segment
        console.print(summary_table(summary))
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
            console.print(f"summary written to {summary_json}", markup=False)
    except local_cluster.LocalError as e:
        _fail(str(e))
    except typer.Exit as e:
        if e.exit_code and trains:  # a job failed, the cluster went away: a segment ended
            _end_segment(target, state, record, t0, from_step, "failed")
        raise
    except KeyboardInterrupt:
        point = _end_segment(
            target, state, record if trains else None, t0, from_step, "interrupted"
        )
        for line in local_resume.interrupted_lines(current, run_name, trains, point):
            err.print(line, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    finally:
        exits.close()


def _end_segment(
    target: local_cluster.LocalTarget,
    state: dict[str, Any] | None,
    record: dict[str, Any] | None,
    t0: float,
    from_step: int,
    ended: str,
) -> tuple[int, str] | None:
    """Add this run's segment to the pending record of a training run that did not finish
    (:mod:`raygke.local.resume`); return the newest checkpoint it left, ``(step, path)``."""
    from raygke.local import jobs as local_jobs

    if record is None or state is None or not t0:
        return None
    point = local_jobs.resume_point(state["buckets"]["checkpoints"], record["run_name"])
    to_step = point[0] if point else from_step
    seconds = time.monotonic() - t0
    record["segments"] = [
        *record.get("segments", []),
        local_resume.segment(seconds, from_step, to_step, ended),
    ]
    local_jobs.write_pending(target, record)
    return point


def _resume_hint(trains: bool) -> str:
    """How to go on after this run was cut short: the command that resumes it."""
    again = "raygke " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    hint = f"start it again with `raygke local up`, then run `{again}`"
    return hint + (": it resumes from the newest checkpoint" if trains else "")


def _run_shown(
    target: local_cluster.LocalTarget,
    state: dict[str, Any],
    name: str,
    args: dict[str, Any],
    working_dir: str,
    run_log: Any,
    verbose: bool,
    stall: Any = None,
) -> Any:
    """Run one job (``local_jobs.run_job``): every log line into ``run_log``; with ``verbose``
    also printed here under a status spinner, else shown as a progress bar or plain lines
    (:func:`raygke.local.progress.stage_display`); ``stall`` (a
    :class:`~raygke.local.capacity.StallWatch`) stops a job that waits."""
    from contract.registry import get_workload
    from raygke.local import jobs as local_jobs
    from raygke.local.progress import parse_progress, stage_display

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
                console.print(f"[yellow]{escape(notice)}[/]", highlight=False)

        with console.status(f"{name}: submitting") as spin:
            return local_jobs.run_job(
                target,
                state,
                name,
                args,
                working_dir,
                on_log=log_and_print,
                on_status=lambda s: spin.update(f"{name}: {s} ({time.monotonic() - t0:.0f} s)"),
                watch=stall,
            )
    with stage_display(console, name) as stage:

        def log_and_show(line: str) -> None:
            run_log.write(line)
            event = parse_progress(line)
            notice = retry_notice(line, event)
            if notice is not None:
                console.print(f"[yellow]{escape(notice)}[/]", highlight=False)
            if event is not None:
                stage.update(event)

        return local_jobs.run_job(
            target,
            state,
            name,
            args,
            working_dir,
            on_log=log_and_show,
            on_status=stage.status,
            watch=stall,
        )


def _refuse_what_cannot_start(
    target: local_cluster.LocalTarget, state: dict[str, Any], planned: dict[str, dict[str, Any]]
) -> None:
    """Exit 1 with :func:`raygke.local.capacity.refusal`'s line when a job of ``planned``
    (name -> bound arguments) cannot start on what the cluster has free now. When Ray's account
    cannot be read, say so and go on (the jobs' :class:`~raygke.local.capacity.StallWatch` still
    stops a job that waits)."""
    from raygke.local import capacity

    try:
        free, total = capacity.cluster_resources(target, state["address"])
    except Exception as e:  # an older/newer Ray, the GCS not answering: the watch still guards
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        err.print(f"note: cannot read the cluster's free resources ({first})", markup=False)
        return
    for name, args in planned.items():
        try:
            need = capacity.job_need(name, args)
        except Exception:  # arguments a workload reads its own way: its watch still guards
            continue
        if not need.total() or capacity.fits(need, free):
            continue
        why = capacity.refusal(
            need,
            free,
            total,
            workers=sum(n.role == "worker" for n in local_cluster.nodes_of(state)),
            cpus_per_node=target.cpus_per_node,
            serving=_serving(target),
        )
        _fail(f"{why}. Nothing was submitted")


def _serving(target: local_cluster.LocalTarget) -> bool:
    """Whether a Serve application is deployed on the cluster (False when Serve does not
    answer)."""
    from raygke.local import serve as local_serve

    try:
        return bool(local_serve.serve_details(target).get("applications"))
    except Exception:
        return False


def _free_now(target: local_cluster.LocalTarget, state: dict[str, Any]) -> str:
    """``"free now: 0 of 2 CPU"`` (for a stalled job's message), or ``""``."""
    from raygke.local import capacity

    try:
        free, total = capacity.cluster_resources(target, state["address"])
    except Exception:
        return ""
    keys = ["CPU", *(k for k in ("GPU", "TPU") if any(t.get(k) for t in total))]
    have = {k: sum(f.get(k, 0.0) for f in free) for k in keys}
    of = {k: sum(t.get(k, 0.0) for t in total) for k in keys}
    text = ", ".join(f"{have[k]:g} of {of[k]:g} {k}" for k in keys)
    return f"free now: {text}" + (
        "; `raygke local serve --stop` frees what Serve holds" if _serving(target) else ""
    )


def _jobs_json(outcomes: list[Any]) -> dict[str, Any]:
    return {
        o.name: {
            "job_id": o.job_id,
            "status": o.status,
            "seconds": round(o.seconds, 2),
            "reused": o.reused,
        }
        for o in outcomes
    }
