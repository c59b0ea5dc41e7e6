"""Helpers shared by the workload modules: CLI parsing, result line, Ray init, filesystems.

Only the standard library is imported at module level; pyarrow/ray are imported lazily.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from contract.args.base import ArgError, parse_value
from contract.errors import ConfigurationError
from contract.registry import PROGRESS_PREFIX, RESULT_PREFIX, get_workload

# A flag value (``--key value``, ``--set job.key=value``): JSON when it parses, else the string.
json_or_str = parse_value


class InputError(ConfigurationError):
    """Bad input to a workload that is not an argument problem (e.g. a dataset too small for one
    batch). The message names the input, the value and what is needed."""


def parse_config(workload: str, argv: list[str] | None = None) -> dict[str, Any]:
    """Build a workload config from ``--config-json JSON`` plus optional ``--key value`` flags.

    Flags override the JSON, which overrides the registry's ``default_args``. Flag names use
    ``-`` or ``_`` interchangeably; values are parsed as JSON when they parse (``--steps 10``).
    """
    parser = argparse.ArgumentParser(prog=f"python -m workloads.{workload}")
    parser.add_argument("--config-json", default="{}", help="JSON object with the config")
    ns, rest = parser.parse_known_args(argv)
    config = json.loads(ns.config_json)
    if not isinstance(config, dict):
        raise SystemExit("--config-json must be a JSON object")
    i = 0
    while i < len(rest):
        flag = rest[i]
        if not flag.startswith("--"):
            raise SystemExit(f"unexpected argument {flag!r}")
        key = flag[2:].replace("-", "_")
        if "=" in key:
            key, value = key.split("=", 1)
            i += 1
        elif i + 1 < len(rest):
            value = rest[i + 1]
            i += 2
        else:
            raise SystemExit(f"flag {flag} needs a value")
        config[key] = json_or_str(value)
    return get_workload(workload).config(config)


def emit_result(result: Mapping[str, Any]) -> None:
    """Print the result dict as the LAST stdout line: ``RAYGKE_RESULT {json}``."""
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(dict(result), sort_keys=True, default=str), flush=True)


_last_progress: dict[str, float] = {}


def emit_progress(
    stage: str, done: int, total: int | None, *, min_interval_s: float = 1.0, **fields: Any
) -> bool:
    """Print one progress line ``RAYGKE_PROGRESS {"stage", "done", "total", **fields}`` to stdout.

    At most one line per ``min_interval_s`` seconds per stage, but always the first and the last
    (``done >= total``) one, so that a long loop adds few lines to the job log. ``raygke local
    run`` reads these lines from the job log (``raygke.local.progress.parse_progress``) and draws a
    bar per stage. ``fields`` must be JSON-serialisable (e.g. ``loss``, ``tokens_per_s``,
    ``rows``, ``unit``).

    Returns:
        True when a line was printed.
    """
    now = time.monotonic()
    last = _last_progress.get(stage)
    final = total is not None and done >= total
    if last is not None and not final and now - last < min_interval_s:
        return False
    _last_progress[stage] = now
    payload = {"stage": stage, "done": int(done), "total": total, **fields}
    # sys.stdout, not print: Ray Train patches print() in its workers to also log each line
    # (ray/train/v2/_internal/logging/patch_print.py), which doubles it in the job log.
    sys.stdout.write(PROGRESS_PREFIX + json.dumps(payload, default=str) + "\n")
    sys.stdout.flush()
    return True


def run_cli(workload: str, main: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Entry point used by ``python -m workloads.<name>``.

    Bad input (:class:`contract.args.base.ArgError`, :class:`InputError` and its subclasses, a
    :class:`workloads.checkpoint.CheckpointError`) ends the process with exit status 2 and one
    line per problem on stderr (``<workload>: <problem>``), not a traceback.
    """
    from workloads.checkpoint import CheckpointError

    try:
        config = parse_config(workload, sys.argv[1:])
        result = main(config)
    except ArgError as e:
        problems = e.problems
    except (InputError, CheckpointError) as e:
        problems = [str(e)]
    else:
        emit_result(result)
        return
    for p in problems:
        print(f"{workload}: {p}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's pick for port 0)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_local_ray(**init_kwargs: Any) -> Any:
    """``ray.init(address="local", **init_kwargs)``: a new private local Ray instance that the
    Ray processes it starts can find; returns Ray's context.

    Its dashboard (the state API) listens on 127.0.0.1 at a free port, and its address is
    written to ``$RAY_TMPDIR/ray/ray_current_cluster`` under a private ``RAY_TMPDIR`` (set in
    this process's environment, inherited by every Ray process it starts). Why: at the end of
    each ``trainer.fit()`` Ray Train stops its PlacementGroupCleaner actor, whose thread asks
    the state API whether the controller lives. That actor finds the cluster as any Ray process
    does: ``RAY_ADDRESS``, else ``ray_current_cluster`` under ``$RAY_TMPDIR/ray`` (a file only
    ``ray start`` writes, so in ``/tmp/ray`` it can name a long-gone cluster), else a search for
    GCS processes. With a wrong address or no dashboard the thread blocks and each ``fit()``
    waits the stop timeout, 12 s (ray 2.60: ray/train/v2/_internal/callbacks/
    placement_group_callback.py ``_stop_cleaner``; ray/dashboard/utils.py
    ``ray_address_to_api_server_url``). The folder is short, as Ray's socket paths under it
    must fit the 107-byte AF_UNIX limit.
    """
    import ray

    tmp = private_ray_tmpdir()
    kwargs = {"include_dashboard": True, "dashboard_host": "127.0.0.1", **init_kwargs}
    if kwargs["include_dashboard"]:
        kwargs.setdefault("dashboard_port", free_port())
    ctx = ray.init(address="local", **kwargs)
    publish_address(tmp, ray.get_runtime_context().gcs_address)
    return ctx


def private_ray_tmpdir() -> str:
    """A new short folder set as ``RAY_TMPDIR`` in this process's environment (see
    :func:`start_local_ray`); returns its path."""
    import tempfile

    tmp = tempfile.mkdtemp(prefix="raygke-ray-")
    os.environ["RAY_TMPDIR"] = tmp
    return tmp


def publish_address(ray_tmpdir: str, gcs_address: str) -> None:
    """Write ``gcs_address`` (``host:port``) where Ray's auto-detection looks under
    ``ray_tmpdir``: ``<ray_tmpdir>/ray/ray_current_cluster`` (ray/_private/services.py
    ``get_ray_address_from_environment``)."""
    os.makedirs(os.path.join(ray_tmpdir, "ray"), exist_ok=True)
    with open(os.path.join(ray_tmpdir, "ray", "ray_current_cluster"), "w") as f:
        f.write(gcs_address)


def ensure_ray() -> None:
    """``ray.init()`` unless Ray is already initialised in this process (tests, notebooks).

    Inside a Ray job (RayJob on GKE, or the Jobs API locally) ``RAY_ADDRESS`` is set and used.
    Without it a fresh private local instance starts (:func:`start_local_ray`): never Ray's
    auto-detection, which can pick up another (possibly dead) cluster on the host.
    """
    import ray

    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
    else:
        start_local_ray()


def resolve_fs(uri: str):
    """Return ``(pyarrow.fs.FileSystem, path)`` for a local path or URI such as ``gs://b/p``."""
    import pyarrow.fs as pafs

    if "://" not in uri:
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))
    return pafs.FileSystem.from_uri(uri)


def join(uri: str, *parts: str) -> str:
    """Join path parts onto a local path or URI with ``/``."""
    if "://" not in uri:
        return os.path.join(uri, *parts)
    return "/".join([uri.rstrip("/"), *parts])


def is_local(uri: str) -> bool:
    """True for plain local paths (and ``file://`` URIs)."""
    return "://" not in uri or uri.startswith("file://")


def dataset_manifest(dataset: str) -> dict[str, Any] | None:
    """``<dataset>/_manifest.json`` as ``prepare`` wrote it (``rows``: training windows,
    ``val_rows``, ``context_length``, ``shards``, ...); None when absent or unreadable (a dataset
    not written by ``prepare``)."""
    import pyarrow as pa

    fs, path = resolve_fs(join(dataset, "_manifest.json"))
    try:
        with fs.open_input_stream(path) as f:
            out = json.loads(f.read())
    except (FileNotFoundError, OSError, ValueError, pa.ArrowException):
        return None
    return out if isinstance(out, dict) else None


def dataset_context_length(dataset: str) -> int | None:
    """``context_length`` recorded by ``prepare`` in ``<dataset>/_manifest.json``; None if absent."""
    try:
        return int((dataset_manifest(dataset) or {})["context_length"])
    except (KeyError, TypeError, ValueError):
        return None


def with_model_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a trainer config with the model dimensions filled in: ``ModelConfig``'s defaults
    for ``d_model`` / ``n_layers`` / ``n_heads``, and ``context_length`` from the dataset's
    manifest (256 when it has none)."""
    from workloads.lm_config import ModelConfig

    out = dict(config)
    defaults = ModelConfig()
    for key in ("d_model", "n_layers", "n_heads"):
        if out.get(key) is None:
            out[key] = getattr(defaults, key)
    if not out.get("context_length"):
        out["context_length"] = dataset_context_length(str(out["dataset"])) or 256
    return out


def restore_checkpoint(storage_path: str, name: str) -> tuple[str, dict[str, Any]] | None:
    """Inside a Ray Train worker: the local directory and metadata of the checkpoint to resume
    from, verified against its sha256 manifest; None to start fresh.

    Ray Train's own latest checkpoint (``ray.train.get_checkpoint()``) is used when it verifies;
    when it is damaged, or when Ray Train has none because this is a new ``fit()`` of a run
    whose folder already holds checkpoints (a resubmitted job, ``raygke local run`` resuming an
    interrupted pipeline: Ray Train 2.60 (v2) starts such a fit without a checkpoint, measured
    by ``tests/raygke/local/test_commands.py::
    test_an_unfinished_run_resumes_from_its_checkpoint_and_a_worker_retry_is_shown``), the
    newest checkpoint under ``<storage_path>/<name>`` that verifies is used instead (each damaged
    one skipped with a warning naming it).
    """
    import logging
    import tempfile

    import ray.train

    from workloads.checkpoint import CheckpointError, latest_valid_checkpoint, verify_checkpoint

    log = logging.getLogger(__name__)
    ckpt = ray.train.get_checkpoint()
    if ckpt is not None:
        local = ckpt.to_directory(tempfile.mkdtemp(prefix="raygke-restore-"))
        try:
            return local, verify_checkpoint(local)
        except CheckpointError as e:
            log.warning(
                "checkpoint from Ray Train %s is damaged: %s; scanning storage", ckpt.path, e
            )
    found = latest_valid_checkpoint(join(storage_path, name))
    if found is None:
        if ckpt is not None:
            log.warning("no valid checkpoint under %s; starting fresh", join(storage_path, name))
        return None
    if ckpt is None:
        log.warning("resuming run %s from its checkpoint %s", name, found[0])
    return str(found[0]), found[1]


def report_step(
    metrics: Mapping[str, Any],
    step: int,
    *,
    steps: int,
    checkpoint_every: int,
    log_every: int,
    save: Callable[[str], Any] | None,
    report: Callable[[dict[str, Any], str | None, str | None], None] | None = None,
    rank: int | None = None,
) -> None:
    """Report one training step to Ray Train on the shared schedule of both trainers.

    Every ``checkpoint_every`` steps and at the last step, ``save(directory)`` (given on rank 0
    only; it writes the checkpoint with :mod:`workloads.checkpoint` and returns its path) makes
    the checkpoint reported as ``checkpoint_<step:08d>``; other ranks report the metrics alone.
    Otherwise every ``log_every`` steps the metrics are reported without a checkpoint.
    Rank 0 also prints a progress line (:func:`emit_progress`, stage ``train``: ``loss``,
    ``tokens_per_s``, ``mfu``, ``precision``) at most once a second and at the last step.

    ``report(metrics, checkpoint_dir_or_None, checkpoint_dir_name_or_None)`` replaces
    ``ray.train.report`` (a Ray Tune trial reports with ``ray.tune.report`` instead,
    :mod:`workloads.tune_lm`); ``rank`` then replaces Ray Train's world rank.
    """
    import tempfile

    if report is None:
        report = _train_report
    if rank is None:
        import ray.train

        rank = ray.train.get_context().get_world_rank()
    if rank == 0:
        emit_progress(
            "train",
            step,
            steps,
            unit="steps",
            loss=metrics.get("loss"),
            tokens_per_s=metrics.get("tokens_per_s"),
            mfu=metrics.get("mfu"),
            precision=metrics.get("precision"),
        )

    if (checkpoint_every and step % checkpoint_every == 0) or step == steps:
        with tempfile.TemporaryDirectory() as tmp:
            path = str(save(os.path.join(tmp, "ckpt"))) if save is not None else None
            report(dict(metrics), path, f"checkpoint_{step:08d}")
    elif log_every and step % log_every == 0:
        report(dict(metrics), None, None)


# A worker's ``ray.train.report`` puts its result on a queue of size 1 that Ray Train's
# controller empties once per poll, every RAY_TRAIN_HEALTH_CHECK_INTERVAL_S (default 2 s):
# reports more often than that block the training loop until the next poll (ray 2.60:
# ray/train/v2/_internal/execution/context.py ``_wait_then_report``, worker.py
# ``queue.Queue(maxsize=1)``, controller.py ``_poll_workers``). A metrics report that waited longer
# than this is logged once per worker process, naming ``log_every``.
REPORT_WAIT_WARN_S = 1.0
_report_wait_warned = False


def _train_report(metrics: dict[str, Any], path: str | None, dir_name: str | None) -> None:
    """``ray.train.report`` of ``metrics`` with the checkpoint folder ``path`` (if any).

    A metrics-only report that blocks for more than :data:`REPORT_WAIT_WARN_S` (the previous one
    not yet collected by Ray Train's controller) logs one warning per process: steps are then
    paced by the controller's poll, not by the device; raise ``log_every``.
    """
    global _report_wait_warned
    import ray.train

    if dir_name is None:
        t0 = time.monotonic()
        ray.train.report(metrics)
        waited = time.monotonic() - t0
        if waited > REPORT_WAIT_WARN_S and not _report_wait_warned:
            _report_wait_warned = True
            logging.getLogger(__name__).warning(
                "ray.train.report waited %.1f s for Ray Train's controller, which collects one "
                "report per poll (RAY_TRAIN_HEALTH_CHECK_INTERVAL_S, default 2 s): metrics are "
                "reported faster than that, which paces the training loop; raise log_every "
                "(now reporting at step %s)",
                waited,
                metrics.get("step"),
            )
        return
    ckpt = ray.train.Checkpoint.from_directory(path) if path is not None else None
    ray.train.report(metrics, checkpoint=ckpt, checkpoint_dir_name=dir_name)


# ------------------------------------------------------------ Muon's Newton-Schulz dtype

# ``ns_dtype`` values (contract/args/ TrainArgs.ns_dtype): the dtype Muon's Newton-Schulz
# iterations run in. ``auto`` resolves once per run (:func:`resolve_ns_dtype`).
NS_DTYPES = ("float32", "bfloat16")


def resolve_ns_dtype(requested: str | None, platform: str) -> str:
    """The dtype Muon's Newton-Schulz iterations run in on ``platform`` (``"cpu"``, ``"cuda"``
    / ``"gpu"``, ``"tpu"``): ``requested`` when it is ``"float32"`` or ``"bfloat16"``; for
    ``"auto"`` (or None) ``"float32"`` on a CPU and ``"bfloat16"`` on a GPU or TPU.

    Why: the five iterations are ten matmuls per matrix per step. A GPU's or TPU's matrix units
    multiply bfloat16 at several times their float32 rate, so Muon's reference runs them in
    bfloat16 (``torch.optim.Muon`` casts to bfloat16 unconditionally,
    https://github.com/pytorch/pytorch/blob/main/torch/optim/_muon.py; Keller Jordan's
    ``zeropower_via_newtonschulz5``, https://kellerjordan.github.io/posts/muon/). A CPU without
    AVX-512 BF16 / AMX emulates bfloat16 matmul in software (issue 23 measured Muon's step at
    2.40x AdamW's on an AMD EPYC), and even with them the few small matrices here gain little
    (``bench/optimizer_step.py --ns-dtype``), so CPUs take float32 -- where torch, JAX (optax)
    and TensorFlow (Keras) then agree to float32 rounding.

    Raises:
        ValueError: ``requested`` is not ``auto``, ``float32`` or ``bfloat16``.
    """
    if requested in (None, "auto"):
        return "float32" if platform == "cpu" else "bfloat16"
    if requested not in NS_DTYPES:
        raise ValueError(f"ns_dtype {requested!r} is not one of 'auto', {', '.join(NS_DTYPES)}")
    return requested


def ns_dtype_for_run(
    requested: str | None, platform: str, metadata: Mapping[str, Any] | None, source: str = ""
) -> str:
    """The Newton-Schulz dtype of a run that may resume from a checkpoint with ``metadata``:
    decided once per run, so a checkpoint's recorded ``ns_dtype`` is kept under ``auto`` (a run
    started on a GPU in bfloat16 stays bfloat16 when it resumes on a CPU, with a warning that
    it is slower there); otherwise :func:`resolve_ns_dtype`.

    Raises:
        workloads.checkpoint.CheckpointError: ``requested`` is explicit and differs from the
            checkpoint's (``source`` names it), as a resume with the other optimizer is refused.
        ValueError: ``requested`` is not a known value.
    """
    import logging

    from workloads.checkpoint import CheckpointError

    saved = (metadata or {}).get("ns_dtype")
    if saved is None:  # fresh run, or a checkpoint from before the choice
        return resolve_ns_dtype(requested, platform)
    if requested in (None, "auto"):
        here = resolve_ns_dtype("auto", platform)
        if saved != here:
            logging.getLogger(__name__).warning(
                "checkpoint %s ran Newton-Schulz in %s; keeping it (auto would pick %s on %s)",
                source,
                saved,
                here,
                platform,
            )
        return str(saved)
    resolved = resolve_ns_dtype(requested, platform)
    if resolved != saved:
        raise CheckpointError(
            f"checkpoint {source} was written with ns_dtype {saved}; this run has ns_dtype "
            f"{resolved} (set ns_dtype={saved} or auto to resume it, or use a new run name)"
        )
    return resolved


# ----------------------------------------------------------------- threads from Ray's CPUs


def host_cpus() -> int:
    """CPUs this process may run on (``os.sched_getaffinity``, a container's cpuset included;
    ``os.cpu_count()`` where that is not available), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def host_memory() -> float:
    """Bytes of this host's physical memory, or its container's cgroup limit when lower; 0
    when unknown (the CPU device memory the trainers' fit estimate reads)."""
    try:
        total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0.0
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, float(text))
    return total


def ray_cpus() -> float | None:
    """CPUs Ray assigned to the calling worker, actor or task (a Ray Train worker's
    ``resources_per_worker["CPU"]``, a Tune trial's, a task's ``num_cpus``), from
    ``ray.get_runtime_context().get_assigned_resources()``
    (https://docs.ray.io/en/latest/ray-core/api/doc/ray.runtime_context.RuntimeContext.get_assigned_resources.html);
    None outside a Ray worker, or when it was given no CPU."""
    import sys

    if "ray" not in sys.modules:  # never import (or start) Ray only to ask
        return None
    import ray

    if not ray.is_initialized():
        return None
    try:
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # the driver, or a Ray without the call: no allocation to follow
        return None
    return float(cpus) if cpus else None


def cpu_threads(explicit: int | None = None, cpus: float | None = None) -> int:
    """Intra-op (and inter-op) threads for a compute process: ``explicit`` when given; else the
    CPUs Ray gave this worker (``cpus``, else :func:`ray_cpus`) rounded down, at least 1 and at
    most :func:`host_cpus`; else (outside Ray) :func:`host_cpus`.

    Why not the host's core count: a worker that asked Ray for 1 CPU of a 2-core node but runs
    2 threads shares a core with whatever else Ray placed there (or the cluster's own
    processes); each step then waits on its slowest thread, and losing half a core cost issue
    23 a 5x slowdown. With threads = its allocation the same loss costs about its share
    (``bench/contention.py``)."""
    if explicit:
        return int(explicit)
    cpus = cpus if cpus is not None else ray_cpus()
    if cpus:
        return max(1, min(host_cpus(), int(cpus)))
    return host_cpus()


def set_torch_threads(threads: int) -> int:
    """``torch.set_num_threads(threads)`` and, while torch still allows it (before its first
    inter-op parallel work: https://docs.pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html),
    ``torch.set_num_interop_threads(threads)``. Returns ``threads``."""
    import torch

    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != threads:
        # already started: its pool keeps the size it has
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(threads)
    return threads
