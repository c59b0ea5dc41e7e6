"""train_lm_tf.tune_stepper, the TensorFlow trainer's single-process stepper for Ray Tune trials
(no Ray): a restore continues the step counter and optimiser state and applies PBT's new ``lr``
on the restored schedule position; TensorFlow's thread settings apply in a fresh process and are
kept, with a warning, in one that already started TensorFlow."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # imports TensorFlow (tens of seconds on a busy machine)

TINY = {
    "d_model": 16,
    "n_layers": 1,
    "n_heads": 2,
    "context_length": 16,
    "batch_size": 4,
    "steps": 20,
    "warmup": 2,
    "lr": 1e-2,
    "seed": 0,
}


def test_restore_applies_the_new_lr_on_the_restored_schedule_position(tmp_path: Path) -> None:
    import tensorflow as tf

    from contract.args.train_lm_tf import TrainLmTfArgs
    from workloads import model_tf as M
    from workloads.train_lm_tf import tune_stepper

    args = TrainLmTfArgs.parse(TINY)
    stepper, start, first = tune_stepper(args, None, 1)
    assert (start, first) == (0, None)
    tokens = tf.constant(np.random.default_rng(0).integers(0, 256, (4, 17)).astype(np.int32))
    losses = [stepper.step(tokens)[0] for _ in range(3)]
    assert int(stepper.optimizer.iterations) == 3
    path = stepper.save(str(tmp_path / "ckpt"), step=3, first_loss=losses[0])

    # PBT: another trial's checkpoint, this trial's perturbed lr (x0.5)
    perturbed = TrainLmTfArgs.parse({**TINY, "lr": 5e-3})
    restored, start, first = tune_stepper(perturbed, str(path), 1)
    assert (start, first) == (3, losses[0])
    assert int(restored.optimizer.iterations) == 3
    assert M.weights_digest(restored.model) == M.weights_digest(stepper.model)
    # the schedule's value at step 3 for the new peak (3 > warmup: on the cosine), not the old
    want = float(M.WarmupCosine(5e-3, 20, 2)(3))
    assert float(restored.optimizer.learning_rate) == pytest.approx(want, rel=1e-6)
    assert float(stepper.optimizer.learning_rate) == pytest.approx(2 * want, rel=1e-6)
    # the Adam moments came back too (every optimiser variable, by position)
    donor_vars = [np.asarray(v.numpy()) for v in stepper.optimizer.variables]
    got_vars = [np.asarray(v.numpy()) for v in restored.optimizer.variables]
    assert len(got_vars) == len(donor_vars) > 1
    assert all(np.array_equal(a, b) for a, b in zip(got_vars, donor_vars, strict=True))
    restored.step(tokens)
    assert int(restored.optimizer.iterations) == 4
    extra = restored.extra_metrics(0.0)
    assert (extra["replicas"], extra["collective"], extra["mfu"]) == (1, "none", None)


def test_bf16_builds_a_mixed_bfloat16_model_with_float32_weights_and_loss(tmp_path: Path) -> None:
    """precision bf16 (forced: this CPU may not multiply bf16 natively): Keras' mixed_bfloat16
    policy for every layer, float32 variables, a float32 loss, recorded in the checkpoint."""
    import keras
    import tensorflow as tf

    from contract.args.train_lm_tf import TrainLmTfArgs
    from workloads.checkpoint import verify_checkpoint
    from workloads.train_lm_tf import tune_stepper

    stepper, _, _ = tune_stepper(TrainLmTfArgs.parse({**TINY, "precision": "bf16"}), None, 1)
    assert stepper.precision.dtype == "bf16" and stepper.precision.peak_flops > 0
    assert stepper.model.blocks[0].qkv.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in stepper.model.trainable_variables} == {"float32"}
    assert keras.config.dtype_policy().name == "float32"  # the global policy was restored
    tokens = tf.constant(np.random.default_rng(0).integers(0, 256, (4, 17)).astype(np.int32))
    loss, n = stepper.step(tokens)
    assert 4.5 < loss < 6.5 and n == 64  # about ln(256) untrained
    path = stepper.save(str(tmp_path / "ckpt"), step=1, first_loss=loss)
    assert verify_checkpoint(path)["precision"] == "bf16"
    assert stepper.extra_metrics(1000.0)["mfu"] > 0


def test_threads_apply_in_a_fresh_process_and_are_kept_after_tensorflow_started() -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
        import tensorflow as tf
        from workloads.train_lm_tf import set_threads
        first = set_threads(2)
        tf.constant(1.0) + 1.0  # the runtime starts here
        again = set_threads(2)
        other = set_threads(3)
        t = tf.config.threading
        print("RESULT", first, again, other,
              t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    assert result.split()[1:] == ["True", "True", "False", "2", "2"]
    assert "keeping them, not 3" in out.stdout
