"""Train the byte-level transformer LM in JAX with Ray Train's ``JaxTrainer`` (TPU slices, CPU).

The JAX twin of :mod:`workloads.train_lm`: same model (:mod:`workloads.model_jax`), same
Parquet input (``ray.data.read_parquet(<dataset>/train)`` as the ``"train"`` dataset, read by
each worker with ``ray.train.get_dataset_shard("train")`` in batches of ``batch_size`` rows
``[B, context_length + 1]``), same checkpoint format (:mod:`workloads.checkpoint`, files
``params.npz`` + ``opt_state.npz``, written by rank 0, reported as ``checkpoint_<step:08d>``),
same resume rule (verify the manifest of ``ray.train.get_checkpoint()``, else fall back to the
newest valid checkpoint under ``<storage_path>/<name>``), same metrics.

Scheduling. With a ``scaling`` dict in the config (``ray.train.ScalingConfig`` kwargs, as
``components.catalog.TpuSlice.scaling_config`` / ``components.builders.scaling.scaling_config_for_job``
produce them: ``use_tpu``, ``topology``, ``accelerator_type``, ``num_workers`` = hosts x slices,
``resources_per_worker={"TPU": chips_per_host}``) Ray Train reserves the slice(s) itself:
``ray.train.v2._internal.execution.worker_group.WorkerGroup._create_placement_group`` builds a
``ray.util.tpu.SlicePlacementGroup``, which for a multi-host slice first claims the
``TPU-<pod type>-head`` resource on the node labelled ``ray.io/tpu-worker-id=0`` /
``ray.io/tpu-pod-type=<pod type>`` and then gang-schedules one bundle per host with the label
``ray.io/tpu-slice-name=<that slice>``. ``ray/train/v2/jax/config.py`` then calls
``jax.distributed.initialize(<rank 0 address>, num_workers, rank)`` on every worker (setting
``JAX_PLATFORMS=tpu`` unless the environment already sets a platform) and the MEGASCALE_*
variables when there are several slices. Without ``scaling``: ``num_workers`` CPU workers
(``cpus_per_worker`` CPUs each); with more than one, this module joins them with
``jax.distributed`` itself (rank 0's address broadcast with ``ray.train.collective``).

Data parallelism is the same code on every platform: one JAX process per Ray Train worker
(= TPU host), a 1-D mesh over all devices of all processes, the global batch sharded over it,
params replicated, gradients averaged by the all-reduce XLA inserts for the global-mean loss
(:func:`workloads.model_jax.make_train_step`). Per-worker ``batch_size`` must divide by the
host's local device count (4 on a 4-chip host).

Emulated TPU slice (``raygke local up --tpu ...``, :mod:`raygke.tpu_emulation`) vs a real one:
the Ray side is identical (the same ``TPU`` / ``TPU-<pod type>-head`` resources, node labels and
``TPU_*`` env, the same slice reservation and ``jax.distributed.initialize``), but the emulated
hosts set ``JAX_PLATFORMS=cpu``, so each JAX process has ONE CPU device instead of
``chips_per_host`` TPU chips, the gradient all-reduce goes over gloo/TCP instead of ICI (DCN
across slices; MEGASCALE variables are set but unused), compute is float32 (``compute_dtype
"auto"``), and MFU is not reported unless ``peak_flops_per_device`` is given.

Config keys: ``dataset``, ``storage_path``, ``name``, ``scaling`` (ScalingConfig kwargs or
None), ``num_workers`` (1, without ``scaling``), ``cpus_per_worker`` (1), ``steps``,
``batch_size`` (rows per worker), ``lr``, ``warmup`` (50), ``grad_clip`` (1.0), ``d_model``,
``n_layers``, ``n_heads``, ``mlp_ratio``, ``context_length`` (default: the dataset's),
``compute_dtype`` (``"auto"``|``"bfloat16"``|``"float32"``), ``peak_flops_per_device`` (FLOP/s
of one chip/GPU, e.g. the catalog's ``197e12`` for v5e; None -> no MFU), ``checkpoint_every``,
``keep_checkpoints``, ``max_failures``, ``seed``, ``log_every`` (10), ``placement_log``
(optional local JSONL: one line per worker with where it ran — used by tests).

Metrics per logging step: ``step``, ``loss`` (nats/byte, global batch), ``first_loss``,
``tokens_per_s`` (global, steady-state mean, first compiled step excluded), ``step_time_s``,
``mfu`` (or None), ``epoch``, ``devices``, ``processes``.
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "mfu", "devices", "checkpoint"}``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from functools import partial
from typing import Any

from workloads.common import (
    ensure_ray,
    fit_summary,
    join,
    report_step,
    restore_checkpoint,
    run_cli,
    run_config,
    with_absolute_storage,
    with_model_defaults,
)

log = logging.getLogger(__name__)


def _ensure_jax_distributed(world: int, rank: int) -> None:
    """Join the workers with ``jax.distributed`` when JaxTrainer's backend has not (CPU path)."""
    import jax

    if world <= 1 or jax.distributed.is_initialized():
        return
    import ray.train.collective
    from ray.train._internal.utils import get_address_and_port

    addr = None
    if rank == 0:
        host, port = get_address_and_port()
        addr = f"{host}:{port}"
    addr = ray.train.collective.broadcast_from_rank_zero(addr)
    jax.distributed.initialize(addr, world, rank)


def _placement_record(rank: int) -> dict[str, Any]:
    """Where this worker runs, as Ray and the node see it (for tests and logs)."""
    import jax
    import ray

    rc = ray.get_runtime_context()
    return {
        "rank": rank,
        "node_id": rc.get_node_id(),
        "labels": {k: v for k, v in rc.get_node_labels().items() if k.startswith("ray.io/")},
        "assigned": rc.get_assigned_resources(),
        "tpu_ids": rc.get_accelerator_ids().get("TPU", []),
        "env": {
            k: os.environ.get(k)
            for k in (
                "TPU_NAME",
                "TPU_WORKER_ID",
                "TPU_TOPOLOGY",
                "TPU_ACCELERATOR_TYPE",
                "TPU_VISIBLE_CHIPS",
                "JAX_PLATFORMS",
            )
        },
        "jax_process_index": jax.process_index(),
        "jax_process_count": jax.process_count(),
        "jax_devices": jax.device_count(),
        "jax_local_devices": jax.local_device_count(),
        "jax_backend": jax.default_backend(),
        "tpu_head_placement_groups": _tpu_head_pgs() if rank == 0 else None,
    }


def _tpu_head_pgs() -> list[dict[str, Any]]:
    """Placement groups holding a ``TPU-<pod type>-head`` bundle and the nodes they landed on."""
    from ray.util import placement_group_table

    out = []
    for pg in placement_group_table().values():
        bundles = pg.get("bundles", {})
        if any(k.startswith("TPU-") and k.endswith("-head") for b in bundles.values() for k in b):
            out.append(
                {
                    "state": pg.get("state"),
                    "bundles": bundles,
                    "nodes": pg.get("bundles_to_node_id", {}),
                }
            )
    return out


def _params_digest(params: Any) -> str:
    """sha256 over this process's copy of every parameter (equal on all workers iff in sync)."""
    import hashlib

    from workloads.model_jax import to_host

    h = hashlib.sha256()
    for name, arr in sorted(to_host(params).items()):
        h.update(name.encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function: one JAX process per worker (= TPU host)."""
    import ray.train

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    _ensure_jax_distributed(world, rank)

    import jax
    import numpy as np

    from workloads import model_jax as M

    if config.get("placement_log"):
        with open(config["placement_log"], "a") as f:
            f.write(json.dumps(_placement_record(rank)) + "\n")

    steps = int(config["steps"])
    optimizer = M.make_optimizer(
        float(config["lr"]),
        steps,
        int(config.get("warmup", 50)),
        float(config.get("grad_clip", 1.0)),
    )
    restored = restore_checkpoint(str(config["storage_path"]), str(config["name"]))
    start_step, first_loss = 0, None
    if restored is not None:
        cfg, params, meta, opt_state = M.load_checkpoint(restored[0], optimizer)
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    else:
        cfg = M.ModelConfig.from_config(config)
        params, opt_state = M.init_params(cfg, int(config["seed"])), None
    if opt_state is None:
        opt_state = jax.tree_util.tree_map(np.asarray, optimizer.init(params))

    mesh = M.data_mesh()
    params, opt_state = M.replicate(params, mesh), M.replicate(opt_state, mesh)
    dtype = M.resolve_dtype(config.get("compute_dtype", "auto"))
    train_step = M.make_train_step(cfg, optimizer, mesh, dtype)
    devices = jax.device_count()
    fpt = cfg.flops_per_token()
    peak = config.get("peak_flops_per_device")

    from workloads.flops import mfu

    shard = ray.train.get_dataset_shard("train")
    batch_size = int(config["batch_size"])
    ckpt_every = int(config.get("checkpoint_every") or 0) or steps
    log_every = max(1, int(config.get("log_every", 10)))
    step, epoch = start_step, 0
    tok_count, tok_time = 0, 0.0
    while step < steps:
        seen = 0
        for batch in shard.iter_batches(
            batch_size=batch_size,
            batch_format="pyarrow",
            drop_last=True,
            local_shuffle_buffer_size=8 * batch_size,
            local_shuffle_seed=int(config["seed"]) + 1000 * epoch + step + rank,
        ):
            seen += 1
            local = M.arrow_to_tokens(batch)
            t0 = time.perf_counter()
            params, opt_state, loss_arr = train_step(params, opt_state, M.shard_batch(local, mesh))
            loss = float(loss_arr)  # blocks until the step is done
            dt = time.perf_counter() - t0
            step += 1
            if first_loss is None:
                first_loss = loss
            if step > start_step + 1:  # the first step compiles; keep it out of throughput
                tok_count += local.shape[0] * (local.shape[1] - 1) * world
                tok_time += dt
            tps = tok_count / tok_time if tok_time else 0.0
            metrics = {
                "step": step,
                "loss": loss,
                "first_loss": first_loss,
                "tokens_per_s": tps,
                "step_time_s": dt,
                "mfu": mfu(tps, fpt, peak, devices) if tps else None,
                "epoch": epoch,
                "devices": devices,
                "processes": jax.process_count(),
            }
            report_step(
                metrics,
                step,
                steps=steps,
                checkpoint_every=ckpt_every,
                log_every=log_every,
                save=partial(
                    M.save_checkpoint,
                    cfg=cfg,
                    params=params,
                    step=step,
                    opt_state=opt_state,
                    extra={"first_loss": first_loss},
                )
                if rank == 0
                else None,
            )
            if step >= steps:
                break
        if seen == 0:
            raise RuntimeError(
                f"worker {rank}: dataset shard yields no batch of {batch_size} rows; "
                "lower batch_size or num_workers"
            )
        epoch += 1
    if config.get("placement_log"):
        with open(config["placement_log"], "a") as f:
            f.write(
                json.dumps({"rank": rank, "step": step, "params_sha256": _params_digest(params)})
            )
            f.write("\n")


def scaling_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    """ScalingConfig kwargs: ``config["scaling"]`` when given, else CPU workers from config."""
    if config.get("scaling"):
        return dict(config["scaling"])
    return {
        "num_workers": int(config.get("num_workers", 1)),
        "resources_per_worker": {"CPU": float(config.get("cpus_per_worker", 1))},
    }


def build_trainer(config: dict[str, Any]):
    """The configured ``JaxTrainer`` (not yet fitted)."""
    import ray.data
    from ray.train import ScalingConfig
    from ray.train.v2.jax import JaxTrainer

    config = with_model_defaults(config)
    train_ds = ray.data.read_parquet(join(config["dataset"], "train"))
    return JaxTrainer(
        train_loop_per_worker,
        train_loop_config=config,
        scaling_config=ScalingConfig(**scaling_kwargs(config)),
        run_config=run_config(config),
        datasets={"train": train_ds},
    )


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for keys and results.

    Raises:
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    import ray

    owns_ray = not ray.is_initialized()
    ensure_ray()
    result = build_trainer(with_absolute_storage(config)).fit()
    if owns_ray:  # stop the worker-log stream so RAYGKE_RESULT really is the last stdout line
        ray.shutdown()
    m = result.metrics or {}
    return {**fit_summary(result), "mfu": m.get("mfu"), "devices": m.get("devices")}


if __name__ == "__main__":
    run_cli("train_lm_jax", main)
