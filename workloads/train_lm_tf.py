"""Train the byte-level transformer LM in Keras 3 (TensorFlow backend) with Ray Train's
``TensorflowTrainer`` and ``tf.distribute.MultiWorkerMirroredStrategy``.

The TensorFlow twin of :mod:`workloads.train_lm` and :mod:`workloads.train_lm_jax`: the same
network and optimiser (:mod:`workloads.model_tf`), the same loop (:mod:`workloads.train_loop`:
Ray Data Parquet input through ``ray.train.get_dataset_shard("train")``, seeded local shuffle,
report/checkpoint schedule, verified resume, throughput, the too-small-dataset error), so losses
are comparable across the three trainers.

Distribution. Ray Train's TensorFlow backend writes ``TF_CONFIG`` (cluster = every worker's
``host:port``, task = this worker's rank) on each worker before the loop starts
(``ray/train/tensorflow/config.py`` ``_setup_tensorflow_environment``). Each worker then builds
``tf.distribute.MultiWorkerMirroredStrategy`` from it, first thing, before any other TensorFlow
op (TensorFlow requires the strategy before the runtime starts). Variables created in its scope
are mirrored and initialised from worker 0's values; every step all-reduces the gradients
(:func:`workloads.model_tf.make_train_step`), so all workers hold the same weights after each
step. Collectives (:func:`collective_implementation`): ``NCCL`` when the worker sees a GPU
(``tf.distribute.experimental.CommunicationOptions(implementation=NCCL)``), else ``AUTO`` (ring
all-reduce over gRPC on CPU). See https://www.tensorflow.org/api_docs/python/tf/distribute/MultiWorkerMirroredStrategy
and https://docs.ray.io/en/latest/train/distributed-tensorflow-keras.html.

Input: each worker iterates its Ray Data shard in pyarrow batches of ``batch_size`` rows (the
shared loop), converted to an int32 tensor ``[B, T+1]``; the shard is the worker's own, so each
step trains on ``batch_size x workers`` rows, like DDP.

Checkpoints: ``params.npz`` (JAX names/layouts) + ``opt_state.npz``, ``framework:
"tensorflow"`` (:mod:`workloads.model_tf`), written by rank 0 and reported as
``checkpoint_<step:08d>``; :mod:`workloads.evaluate` scores them with the PyTorch model (same
network, same nats/byte). On (re)start every worker restores the verified checkpoint
(:func:`workloads.common.restore_checkpoint`) into its mirrored variables and the step count
continues, so with ``FailureConfig(max_failures)`` every step is counted once across a killed
worker.

ParameterServerStrategy is not offered: see :data:`PARAMETER_SERVER_NOTE`.

Ray Tune (:mod:`workloads.tune_lm`, ``trainer: tf``) runs the same stepper in one process on one
device (:func:`tune_stepper`: ``OneDeviceStrategy``, no Ray Train worker group).

Arguments: :class:`contract.args.train_lm_tf.TrainLmTfArgs`; the same ``scaling`` shape as
:mod:`workloads.train_lm` (CPU/GPU pools; TPUs are not supported by this trainer).

Metrics per logging step: ``step``, ``loss`` (nats/byte, global batch), ``first_loss``,
``tokens_per_s`` (global, steady-state mean, the first traced step excluded), ``step_time_s``,
``epoch``, ``replicas``, ``collective``, ``mfu``, ``peak_flops``, ``model_flops``,
``precision``.
Result: ``{"steps", "first_loss", "last_loss", "tokens_per_s", "checkpoint", "hf_model",
"collective", "mfu", "peak_flops", "model_flops", "precision"}`` (``hf_model``: the Hugging
Face folder in the last checkpoint).

Precision: the run's ``precision`` (:mod:`workloads.precision`, decided once by rank 0 for the
strategy's device, measured with ``tf.linalg.matmul``; a checkpoint's recorded one kept under
``auto``): ``bf16`` builds the model under Keras' ``mixed_bfloat16`` policy
(:func:`workloads.model_tf.dtype_policy`: float32 variables and loss, bfloat16 compute);
recorded in every checkpoint. MFU is against the matmul peak measured at start on this
worker's threads (:func:`workloads.precision.tf_matmul_flops`).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from contract.args.train_lm_tf import TrainLmTfArgs
from workloads.common import cpu_threads, restore_checkpoint, run_cli
from workloads.train_loop import fit, fit_summary, run_loop

log = logging.getLogger(__name__)

PARAMETER_SERVER_NOTE = (
    "tf.distribute.ParameterServerStrategy is not supported under Ray Train: it needs a "
    "TF_CONFIG cluster with distinct 'chief', 'worker' and 'ps' tasks, where only the chief runs "
    "the training function and the workers and parameter servers run a blocking "
    "tf.distribute.Server; Ray Train's TensorflowTrainer starts N identical workers that all run "
    "the same training function and writes TF_CONFIG with 'worker' tasks only "
    "(ray/train/tensorflow/config.py). Use MultiWorkerMirroredStrategy (this trainer) for "
    "synchronous data parallelism; for asynchronous or very large embedding tables, run a "
    "ParameterServerStrategy cluster outside Ray Train (e.g. Ray actors that each start a "
    "tf.distribute.Server, with the coordinator in the driver)."
)


def collective_implementation(num_gpus: int) -> str:
    """The ``tf.distribute.experimental.CommunicationImplementation`` name for a worker that
    sees ``num_gpus`` GPUs: ``"NCCL"`` with GPUs, else ``"AUTO"`` (ring over gRPC on CPU)."""
    return "NCCL" if num_gpus > 0 else "AUTO"


def make_strategy() -> tuple[Any, str]:
    """``(MultiWorkerMirroredStrategy from TF_CONFIG, collective name)``; call before any other
    TensorFlow op in the process."""
    import tensorflow as tf

    impl = collective_implementation(len(tf.config.list_physical_devices("GPU")))
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=getattr(tf.distribute.experimental.CommunicationImplementation, impl)
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options), impl


class TfStepper:
    """The TensorFlow side of :func:`workloads.train_loop.run_loop`."""

    def __init__(
        self,
        model: Any,
        optimizer: Any,
        strategy: Any,
        grad_clip: float,
        impl: str,
        precision: Any = None,
    ):
        from workloads.model_tf import make_train_step
        from workloads.precision import Precision

        self.model, self.optimizer, self.collective = model, optimizer, impl
        self.replicas = strategy.num_replicas_in_sync
        self.precision = precision or Precision("fp32", "not decided")
        self.flops_per_token = model.cfg.flops_per_token()
        self.train_step = make_train_step(model, optimizer, strategy, grad_clip)

    def load(self, batch: Any) -> Any:
        import tensorflow as tf

        from workloads.model_tf import arrow_to_tokens

        return tf.constant(arrow_to_tokens(batch))

    def step(self, tokens: Any) -> tuple[float, int]:
        loss = float(self.train_step(tokens))  # float() blocks until the step is done
        return loss, int(tokens.shape[0]) * (int(tokens.shape[1]) - 1)

    def save(
        self, directory: str, *, step: int, first_loss: float | None, final: bool = False
    ) -> Any:
        from workloads.model_tf import save_checkpoint

        return save_checkpoint(
            directory,
            self.model,
            step=step,
            optimizer=self.optimizer,
            extra={"first_loss": first_loss, "precision": self.precision.dtype},
            hf=final,
        )

    def extra_metrics(self, tokens_per_s: float) -> dict[str, Any]:
        from workloads.precision import mfu_metrics

        return {
            **mfu_metrics(tokens_per_s, self.flops_per_token, self.precision, self.replicas),
            "replicas": self.replicas,
            "collective": self.collective,
        }


def decide_precision(
    args: TrainLmTfArgs, strategy: Any, metadata: dict[str, Any] | None, source: str = ""
) -> Any:
    """The run's :class:`workloads.precision.Precision` on the strategy's device
    (:func:`workloads.precision.for_run`), measured with ``tf.linalg.matmul`` at the model's
    widest matmul (call after the strategy exists: TensorFlow wants it before any op)."""
    from workloads import model_tf as M
    from workloads.lm_config import ModelConfig
    from workloads.precision import for_run, matmul_shape, tf_matmul_flops

    cfg = (
        ModelConfig(**metadata["model"])
        if metadata and "model" in metadata
        else ModelConfig.from_config(args.to_dict())
    )
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, args.batch_size, cfg.context_length)
    kw = {"measure": lambda dtype: tf_matmul_flops(dtype, shape), "cuda_bf16": True}
    return for_run(args.precision, M.platform(strategy), metadata, source, **kw)


def set_threads(threads: int) -> bool:
    """Give TensorFlow ``threads`` intra-op and ``threads`` inter-op threads; True when they
    are in effect.

    TensorFlow reads these settings once, when its runtime initialises (the first op, or the
    first strategy): setting another value afterwards raises ``RuntimeError("Intra op
    parallelism cannot be modified after initialization.")``, while setting the value already
    in effect is allowed (checked with TensorFlow 2.21;
    https://www.tensorflow.org/api_docs/python/tf/config/threading). A process whose runtime
    already started with other values keeps them: one warning, False. Ray Train workers and
    Ray Tune trial actors are fresh processes (Tune's ``reuse_actors`` defaults to False,
    https://docs.ray.io/en/latest/tune/api/doc/ray.tune.TuneConfig.html), so there the
    settings always apply.
    """
    import tensorflow as tf

    threading = tf.config.threading
    try:
        threading.set_intra_op_parallelism_threads(threads)
        threading.set_inter_op_parallelism_threads(threads)
        return True
    except RuntimeError as e:
        log.warning(
            "TensorFlow already initialised with %d intra-op / %d inter-op threads; keeping "
            "them, not %d (%s)",
            threading.get_intra_op_parallelism_threads(),
            threading.get_inter_op_parallelism_threads(),
            threads,
            e,
        )
        return False


def build_stepper(
    args: TrainLmTfArgs, restored: str | None, strategy: Any, impl: str, precision: Any = None
) -> tuple[TfStepper, int, float | None]:
    """The stepper, start step and first loss under ``strategy``: from the verified checkpoint
    folder ``restored`` (its model config, weights and optimiser variables, the iteration
    counter among them; the step counter continues) or fresh from ``args``. The optimiser is
    ``args.optimizer`` (``muon``: Muon at ``args.muon_lr`` on the block kernels, AdamW at
    ``args.lr`` on the rest; ``adamw``: AdamW at ``args.lr``); the learning-rate schedules are
    always ``args``' (:func:`workloads.model_tf.make_optimizer`; they are functions of the
    restored iteration counter, not part of the optimiser state).

    Muon's Newton-Schulz dtype: ``args.ns_dtype`` resolved for the strategy's devices once per
    run (:func:`workloads.common.ns_dtype_for_run`). The model is built in ``precision``
    (decided by the caller for the worker group, else :func:`decide_precision` here).

    Raises:
        workloads.checkpoint.CheckpointError: ``restored`` does not verify or does not fit, or
            its optimiser state was written by the other optimiser (the message names both), or
            with another explicit ``ns_dtype``.
    """
    from workloads import model_tf as M
    from workloads.common import ns_dtype_for_run
    from workloads.lm_config import ModelConfig

    meta = M.read_checkpoint(restored) if restored is not None else None
    cfg = (
        ModelConfig(**meta["model"])
        if meta is not None
        else ModelConfig.from_config(args.to_dict())
    )
    ns_dtype = ns_dtype_for_run(args.ns_dtype, M.platform(strategy), meta, str(restored))
    if precision is None:
        precision = decide_precision(args, strategy, meta, str(restored))
    with strategy.scope(), M.dtype_policy(precision.dtype):
        model = M.TfGPT(cfg, seed=args.seed)
        optimizer = M.make_optimizer(
            args.lr,
            args.steps,
            args.warmup,
            optimizer=args.optimizer,
            muon_lr=args.muon_lr,
            ns_dtype=ns_dtype,
        )
        optimizer.build(model.trainable_variables)
    start_step, first_loss = 0, None
    if restored is not None:
        meta = M.restore_into(restored, model, optimizer)
        start_step, first_loss = int(meta["step"]), meta.get("first_loss")
    stepper = TfStepper(model, optimizer, strategy, args.grad_clip, impl, precision)
    return stepper, start_step, first_loss


def tune_stepper(
    args: TrainLmTfArgs, restored: str | None, threads: int, use_gpu: bool = False
) -> tuple[TfStepper, int, float | None]:
    """The stepper of one Ray Tune trial (:mod:`workloads.tune_lm`; no Ray Train, no
    MultiWorkerMirroredStrategy): one process, one device through
    ``tf.distribute.OneDeviceStrategy`` (``/GPU:0`` when ``use_gpu`` and TensorFlow sees a GPU,
    else ``/CPU:0``; https://www.tensorflow.org/api_docs/python/tf/distribute/OneDeviceStrategy),
    the same train step (:func:`workloads.model_tf.make_train_step`, its all-reduce over one
    replica) and ``threads`` intra/inter-op threads (:func:`set_threads`; call before the
    process runs any TensorFlow op). The ``collective`` metric is ``"none"``.

    From a checkpoint (a resumed trial, or PBT's copy of a better trial) the learning rates are
    ``args.lr`` and ``args.muon_lr`` (PBT may have changed them) applied on the restored
    schedule position: the optimiser's schedules are built from ``args`` and evaluated at the
    restored iteration counter (= the checkpoint's step), as ``train_lm.tune_stepper`` does for
    PyTorch.

    Raises:
        workloads.checkpoint.CheckpointError: ``restored`` does not verify or does not fit, or
            its optimiser state was written by the other optimiser (the message names both).
    """
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf

    set_threads(max(1, threads))
    gpus = tf.config.list_physical_devices("GPU") if use_gpu else []
    strategy = tf.distribute.OneDeviceStrategy("/GPU:0" if gpus else "/CPU:0")
    return build_stepper(args, restored, strategy, "none")


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function (one per worker, MultiWorkerMirroredStrategy); ``config``
    is :meth:`TrainLmTfArgs.to_dict` of the resolved arguments."""
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import ray.train

    args = TrainLmTfArgs.parse(config)
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    set_threads(cpu_threads(args.tf_threads))  # this worker's Ray CPUs
    strategy, impl = make_strategy()

    from workloads import model_tf as M
    from workloads.precision import for_workers

    restored = restore_checkpoint(args.storage_path, args.name)
    path, meta = restored if restored is not None else (None, None)
    precision = for_workers(lambda: decide_precision(args, strategy, meta, str(path)), rank, world)
    stepper, start_step, first_loss = build_stepper(args, path, strategy, impl, precision)
    step = run_loop(
        args, stepper, rank=rank, world=world, start_step=start_step, first_loss=first_loss
    )
    if args.weights_log:
        record = {"rank": rank, "step": step, "weights_sha256": M.weights_digest(stepper.model)}
        with open(args.weights_log, "a") as f:
            f.write(json.dumps(record) + "\n")


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Fit the trainer; see the module docstring for arguments and results.

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        workloads.train_loop.DatasetTooSmall: fewer rows than one batch per worker.
        ray.train.TrainingFailedError: training failed more than ``max_failures`` times.
    """
    from ray.train.tensorflow import TensorflowTrainer

    args = TrainLmTfArgs.parse(config)
    result = fit(TensorflowTrainer, train_loop_per_worker, args)
    return {**fit_summary(result), "collective": (result.metrics or {}).get("collective")}


if __name__ == "__main__":
    run_cli("train_lm_tf", main)
