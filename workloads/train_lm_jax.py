"""Train the byte-level transformer LM in JAX with Ray Train's ``JaxTrainer`` (TPU slices, CPU).

The JAX twin of :mod:`workloads.train_lm`: same model (:mod:`workloads.model_jax`), and the
same loop (:mod:`workloads.train_loop`: Parquet input, seeded shuffle, report/checkpoint
schedule, resume rule, throughput, the too-small-dataset error); this module brings the JAX
step and the checkpoint files ``params.npz`` + ``opt_state.npz`` (format of
:mod:`workloads.checkpoint`, written by rank 0, reported as ``checkpoint_<step:08d>``).

Scheduling. With a ``scaling`` dict in the config (``ray.train.ScalingConfig`` kwargs, as
``components.catalog.TpuSlice.scaling_config`` / ``components.raycrs.scaling.scaling_config_for_job``
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

The mesh is the same code on every platform: one JAX process per Ray Train worker (= TPU
host), a ``data`` x ``fsdp`` x ``tensor`` mesh over all devices of all processes
(:mod:`workloads.mesh_jax`), its sizes from the worker group and the arguments
(:func:`run_mesh_shape`, :func:`contract.mesh.mesh_shape`, the sizing ``raygke check`` uses):
the devices are hosts x chips per host (``jax.device_count()``), the slices those of the
devices' ``slice_index`` (else ``scaling``'s ``num_workers`` over a slice's hosts,
:func:`contract.mesh.slices_from_scaling`) on the outer ``data`` axis; ``parallelism``,
``shard_degree`` and ``tensor_degree`` the split (``auto``: data-only when a replica fits this
device's memory with margin, :mod:`contract.train_fit`, :func:`device_memory`). Rank 0 prints one ``mesh:`` line. The global batch is sharded over
``data`` x ``fsdp``, parameters and optimizer state by the partition rules (replicated when
``fsdp`` and ``tensor`` are 1, the trainer before meshes), gradients averaged by the
all-reduce / reduce-scatter XLA inserts for the global-mean loss
(:func:`workloads.model_jax.make_train_step`). Per-worker ``batch_size`` must divide by the
host's local device count (4 on a 4-chip host). At a checkpoint step every worker gathers the
state sharded across processes (:meth:`JaxStepper.gather`, collectives) and rank 0 writes the
same files as a replicated run.

Emulated TPU slice (``raygke local up --tpu ...``, :mod:`raygke.local.tpu_emulation`) vs a real one:
the Ray side is identical (the same ``TPU`` / ``TPU-<pod type>-head`` resources, node labels and
``TPU_*`` env, the same slice reservation and ``jax.distributed.initialize``), but the emulated
hosts set ``JAX_PLATFORMS=cpu``, so each JAX process has ONE CPU device instead of
``chips_per_host`` TPU chips, the gradient all-reduce goes over gloo/TCP instead of ICI (DCN
across slices; MEGASCALE variables are set but unused), and compute is the CPU's precision.

Precision: ``compute_dtype`` when set, else the run's ``precision``
(:mod:`workloads.precision`, decided once by rank 0 for ``jax.default_backend()``: bf16 on a
TPU or GPU, on a CPU only with bf16 matrix instructions and a faster measured ``jnp.dot``; a
checkpoint's recorded one kept under ``auto``), printed once and recorded in every checkpoint.
MFU is against ``peak_flops_per_device`` when given, else the matmul peak measured at start
with ``jnp.dot`` in that dtype on one of this worker's devices
(:func:`workloads.precision.jax_matmul_flops`).

Arguments: :class:`contract.args.train_lm_jax.TrainLmJaxArgs` (names, types, defaults, units); the same
``scaling`` shape as :mod:`workloads.train_lm`. ``optimizer`` (default ``"muon"``: Muon at
``muon_lr`` for the blocks' matrices, AdamW at ``lr`` for the rest; ``"adamw"``: AdamW for all)
is :func:`workloads.model_jax.make_optimizer`; its state is placed like the parameters, and a
checkpoint records it: resuming with the other optimizer stops with one ``CheckpointError``
naming both.

Metrics per logging step: ``step``, ``loss`` (nats/byte, global batch), ``first_loss``,
``tokens_per_s`` (global, steady-state mean, first compiled step excluded), ``step_time_s``,
``mfu``, ``peak_flops``, ``model_flops``, ``precision``, ``epoch``, ``devices``,
``processes``, ``parallelism`` (``data`` | ``fsdp``), ``mesh`` (``{"data", "fsdp", "tensor"}``),
``param_bytes`` (parameter bytes on rank 0's first device: its shards).
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "mfu", "peak_flops",
"model_flops", "precision", "parallelism", "param_bytes", "mesh", "devices", "checkpoint",
"hf_model"}`` (``hf_model``: the Hugging Face
folder in the last checkpoint, :mod:`workloads.hf_export`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Any

from contract.args.train_lm_jax import TrainLmJaxArgs
from workloads.common import cpu_threads, restore_checkpoint, run_cli
from workloads.lm_config import ModelConfig
from workloads.train_loop import fit, fit_summary, run_loop

log = logging.getLogger(__name__)


XLA_ONE_THREAD = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


def limit_xla_cpu_threads(threads: int, host: int) -> bool:
    """Make XLA's CPU backend run one thread when this worker has one CPU of a bigger host:
    the flags ``XLA_ONE_THREAD`` added to ``XLA_FLAGS``, which XLA reads when its backend
    starts (the documented way to make XLA CPU single-threaded:
    https://github.com/jax-ml/jax/discussions/22739 ; XLA has no flag for another count: it
    sizes its pool from the schedulable CPUs). True when set; False when not needed
    (``threads >= host``), not possible (``threads`` between 1 and ``host``: the pool stays
    host-sized) or too late (JAX's backend already started, a warning)."""
    import sys

    if threads != 1 or host <= 1:
        return False
    jax = sys.modules.get("jax")
    if jax is not None and getattr(jax._src.xla_bridge, "_backends", None):
        log.warning("JAX's backend already started; XLA keeps its %d CPU threads", host)
        return False
    flags = os.environ.get("XLA_FLAGS", "").split()
    os.environ["XLA_FLAGS"] = " ".join([*flags, *(f for f in XLA_ONE_THREAD if f not in flags)])
    return True


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

    from workloads.mesh_jax import host_tree
    from workloads.model_jax import to_host

    h = hashlib.sha256()
    for name, arr in sorted(to_host(host_tree(params)).items()):
        h.update(name.encode())
        h.update(arr.tobytes())
    return h.hexdigest()


class JaxStepper:
    """The JAX side of :func:`workloads.train_loop.run_loop`."""

    def __init__(
        self,
        args: TrainLmJaxArgs,
        cfg: Any,
        params: Any,
        opt_state: Any,
        optimizer: Any,
        ns_dtype: str = "float32",
        precision: Any = None,
    ):
        import jax

        from workloads import model_jax as M
        from workloads.mesh_jax import device_bytes, make_mesh, place
        from workloads.precision import Precision

        self.cfg = cfg
        self.optimizer_name = args.optimizer
        self.ns_dtype = ns_dtype  # Muon's Newton-Schulz dtype, recorded in every checkpoint
        precision = precision or Precision("fp32", "not decided")
        self.mesh_shape = run_mesh_shape(args, cfg, precision.dtype)
        if jax.process_index() == 0:
            print(f"mesh: {self.mesh_shape.describe()} ({self.mesh_shape.reason})", flush=True)
        # data-only: the 1-D data mesh, every leaf replicated (the program before meshes)
        sharded = self.mesh_shape.parallelism != "data"
        self.mesh = make_mesh(self.mesh_shape) if sharded else M.data_mesh()
        self.params = place(params, self.mesh)
        self.opt_state = place(opt_state, self.mesh)
        self.param_bytes = device_bytes(self.params)
        self._host: tuple[Any, Any] | None = None  # gathered at a checkpoint step (gather)
        # the run's compute dtype (recorded in every checkpoint); MFU's peak: the catalog's
        # figure when given, else the one measured at start
        if args.peak_flops_per_device:
            precision = dataclasses.replace(precision, peak_flops=args.peak_flops_per_device)
        self.precision = precision
        compute = M.resolve_dtype("bfloat16" if precision.dtype == "bf16" else "float32")
        self.train_step = M.make_train_step(cfg, optimizer, self.mesh, compute)
        self.devices = jax.device_count()
        self.processes = jax.process_count()
        self.flops_per_token = cfg.flops_per_token()

    def load(self, batch: Any) -> Any:
        from workloads.model_jax import arrow_to_tokens

        return arrow_to_tokens(batch)

    def step(self, tokens: Any) -> tuple[float, int]:
        from workloads.model_jax import shard_batch

        self.params, self.opt_state, loss = self.train_step(
            self.params, self.opt_state, shard_batch(tokens, self.mesh)
        )
        return float(loss), tokens.shape[0] * (tokens.shape[1] - 1)  # float() blocks

    def gather(self) -> None:
        """Every worker: the state as whole host arrays, gathered where it is sharded across
        processes (collectives, :func:`workloads.mesh_jax.host_tree`); rank 0's ``save``
        writes them."""
        from workloads.mesh_jax import host_tree, needs_gather

        if needs_gather(self.params) or needs_gather(self.opt_state):
            self._host = (host_tree(self.params), host_tree(self.opt_state))

    def save(
        self, directory: str, *, step: int, first_loss: float | None, final: bool = False
    ) -> Any:
        from workloads.mesh_jax import needs_gather
        from workloads.model_jax import save_checkpoint

        params, opt_state = self._host or (self.params, self.opt_state)
        self._host = None
        if params is self.params and needs_gather(params):
            raise RuntimeError("a state sharded across processes needs gather() on every rank")
        return save_checkpoint(
            directory,
            cfg=self.cfg,
            params=params,
            step=step,
            opt_state=opt_state,
            extra={
                "first_loss": first_loss,
                "ns_dtype": self.ns_dtype,
                "precision": self.precision.dtype,
            },
            optimizer_name=self.optimizer_name,
            hf=final,
        )

    def extra_metrics(self, tokens_per_s: float) -> dict[str, Any]:
        from workloads.precision import mfu_metrics

        return {
            **mfu_metrics(tokens_per_s, self.flops_per_token, self.precision, self.devices),
            "devices": self.devices,
            "processes": self.processes,
            "parallelism": self.mesh_shape.parallelism,
            "mesh": dict(zip(("data", "fsdp", "tensor"), self.mesh_shape.shape, strict=True)),
            "param_bytes": self.param_bytes,
        }


def device_memory() -> float:
    """Bytes one JAX device of this process may use: ``memory_stats()["bytes_limit"]`` on a TPU
    or GPU; on a CPU (no memory stats) the host's (or container's) memory over this process's
    devices and the Ray Train workers sharing the host, as the PyTorch trainer's CPU rule
    (:func:`workloads.common.host_memory`)."""
    import jax

    from workloads.common import host_memory

    device = jax.local_devices()[0]
    if device.platform == "cpu":
        return host_memory() / jax.local_device_count() / _local_workers()
    try:
        stats = device.memory_stats() or {}
    except (RuntimeError, NotImplementedError):
        return 0.0
    return float(stats.get("bytes_limit") or 0)


def _local_workers() -> int:
    """Ray Train workers on this host (1 outside a Ray Train worker)."""
    import sys

    if "ray.train" not in sys.modules:
        return 1
    try:
        import ray.train

        return max(1, int(ray.train.get_context().get_local_world_size()))
    except Exception:  # no Train context here (a Tune trial, a bench): this process alone
        return 1


def run_mesh_shape(args: TrainLmJaxArgs, cfg: Any, compute: str) -> Any:
    """This run's :class:`contract.mesh.MeshShape` (the module docstring): the devices of every
    process, the slices, the arguments, and for ``parallelism: auto`` the estimate of
    :mod:`contract.train_fit` at this device's memory (:func:`device_memory`) and the run's
    compute dtype ``compute`` (``bf16`` | ``fp32``).

    Raises:
        contract.mesh.MeshError: the degrees do not divide the devices or the heads."""
    import jax

    from contract.mesh import mesh_shape, slices_from_scaling
    from contract.train_fit import LmShape, assumed_memory, auto_shard_degree, estimate

    devices = jax.devices()
    if all(hasattr(d, "slice_index") for d in devices):
        slices = len({d.slice_index for d in devices})
    else:
        slices = slices_from_scaling(args.scaling, jax.process_count())
    memory, note = assumed_memory(device_memory(), args.device_memory_gb)
    auto = None
    if memory:
        shape = LmShape(cfg.d_model, cfg.n_layers, cfg.context_length, cfg.mlp_ratio)
        kind = jax.default_backend() if jax.default_backend() in ("tpu", "gpu") else "cpu"
        common: dict[str, Any] = {
            "rows": args.batch_size / jax.local_device_count(),
            "optimizer": args.optimizer,
            "compute": compute,
            "framework": "jax",
            "memory": memory,
            "kind": kind,
        }
        replica = estimate(shape, parallelism="replicated", **common)
        t = args.tensor_degree

        def auto(candidates: list[int]) -> tuple[int, str]:
            def sharded(d: int) -> Any:
                return estimate(shape, parallelism="fsdp", degree=d * t, **common)

            degree, reason = auto_shard_degree(replica, sharded, candidates)
            return degree, reason + note

    return mesh_shape(
        len(devices),
        slices=slices,
        parallelism=args.parallelism,
        shard_degree=args.shard_degree,
        tensor=args.tensor_degree,
        n_heads=cfg.n_heads,
        auto=auto,
    )


def decide_precision(args: TrainLmJaxArgs, metadata: dict[str, Any] | None, source: str = ""):
    """The run's :class:`workloads.precision.Precision` on ``jax.default_backend()``:
    ``compute_dtype`` when set, else ``args.precision`` (a checkpoint's recorded one kept under
    ``auto``), its peak measured with :func:`workloads.precision.jax_matmul_flops` at the
    model's widest matmul."""
    import jax

    from workloads.precision import decide, for_run, jax_matmul_flops, matmul_shape

    cfg = (
        ModelConfig(**metadata["model"])
        if metadata and "model" in metadata
        else ModelConfig.from_config(args.to_dict())
    )
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, args.batch_size, cfg.context_length)
    kw = {"measure": lambda dtype: jax_matmul_flops(dtype, shape), "cuda_bf16": True}
    platform = jax.default_backend()
    if args.compute_dtype != "auto":
        dtype = "fp32" if args.compute_dtype == "float32" else "bf16"
        return decide(dtype, platform, **kw)
    return for_run(args.precision, platform, metadata, source, **kw)


def build_stepper(
    args: TrainLmJaxArgs, restored: str | None, precision: Any = None
) -> tuple[JaxStepper, int, float | None]:
    """The stepper, start step and first loss: from the verified checkpoint folder ``restored``
    (params and optimizer state; the step counter continues) or fresh from ``args``. The
    optimizer is ``args.optimizer`` (:func:`workloads.model_jax.make_optimizer`); the
    learning-rate schedules (AdamW's peak ``lr``, Muon's ``muon_lr``) are always ``args``'
    (they are not part of the optimizer state), so a PBT trial restored with a new ``lr`` runs
    on it.

    Muon's Newton-Schulz dtype: ``args.ns_dtype`` resolved for ``jax.default_backend()`` once
    per run (:func:`workloads.common.ns_dtype_for_run`).

    Raises:
        workloads.checkpoint.CheckpointError: ``restored`` does not verify, or holds another
            optimizer's state than ``args.optimizer`` (the message names both), or was written
            with another explicit ``ns_dtype``."""
    import jax
    import numpy as np

    from workloads import model_jax as M
    from workloads.checkpoint import verify_checkpoint
    from workloads.common import ns_dtype_for_run

    saved = verify_checkpoint(restored) if restored is not None else None
    ns_dtype = ns_dtype_for_run(args.ns_dtype, jax.default_backend(), saved, str(restored))
    optimizer = M.make_optimizer(
        args.lr,
        args.steps,
        args.warmup,
        args.grad_clip,
        optimizer=args.optimizer,
        muon_lr=args.muon_lr,
        ns_dtype=ns_dtype,
    )
    start_step, first_loss = 0, None
    if restored is not None:
        cfg, params, meta, opt_state = M.load_checkpoint(restored, optimizer, args.optimizer)
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    else:
        cfg = ModelConfig.from_config(args.to_dict())
        params, opt_state = M.init_params(cfg, args.seed), None
    if opt_state is None:
        opt_state = jax.tree_util.tree_map(np.asarray, optimizer.init(params))
    if precision is None:
        precision = decide_precision(args, saved, str(restored))
    stepper = JaxStepper(args, cfg, params, opt_state, optimizer, ns_dtype, precision)
    return stepper, start_step, first_loss


def tune_stepper(
    args: TrainLmJaxArgs, restored: str | None, threads: int, use_gpu: bool = False
) -> tuple[JaxStepper, int, float | None]:
    """The stepper of one Ray Tune trial (:mod:`workloads.tune_lm`): one JAX process over this
    host's devices (the chips of one TPU host, or the CPU); ``threads`` and ``use_gpu`` are
    not used (JAX picks its platform from the environment)."""
    return build_stepper(args, restored)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function: one JAX process per worker (= TPU host); ``config`` is
    :meth:`TrainLmJaxArgs.to_dict` of the resolved arguments."""
    import ray.train

    from workloads.common import host_cpus

    args = TrainLmJaxArgs.parse(config)
    limit_xla_cpu_threads(cpu_threads(), host_cpus())  # this worker's Ray CPUs (on a CPU host)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    _ensure_jax_distributed(world, rank)

    if args.placement_log:
        with open(args.placement_log, "a") as f:
            f.write(json.dumps(_placement_record(rank)) + "\n")

    from workloads.precision import for_workers

    restored = restore_checkpoint(args.storage_path, args.name)
    path, meta = restored if restored is not None else (None, None)
    precision = for_workers(lambda: decide_precision(args, meta, str(path)), rank, world)
    stepper, start_step, first_loss = build_stepper(args, path, precision)
    step = run_loop(
        args, stepper, rank=rank, world=world, start_step=start_step, first_loss=first_loss
    )
    if args.placement_log:
        digest = _params_digest(stepper.params)  # every rank: may gather (collectives)
        with open(args.placement_log, "a") as f:
            f.write(json.dumps({"rank": rank, "step": step, "params_sha256": digest}))
            f.write("\n")


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for arguments and results.

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        workloads.train_loop.DatasetTooSmall: fewer rows than one batch per worker.
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    from ray.train.v2.jax import JaxTrainer

    args = TrainLmJaxArgs.parse(config)
    result = fit(JaxTrainer, train_loop_per_worker, args)
    m = result.metrics or {}
    return {**fit_summary(result), "devices": m.get("devices"), "mesh": m.get("mesh")}


if __name__ == "__main__":
    run_cli("train_lm_jax", main)
