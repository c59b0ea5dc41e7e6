"""The Keras/TensorFlow model (workloads/model_tf.py) is the PyTorch/JAX network: its
checkpoint scores the same loss through evaluate's PyTorch loader, resumes exactly, and the
train step lowers the loss (no Ray)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # imports TensorFlow and PyTorch (about a minute on a busy machine)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    import tensorflow as tf

    from workloads import model_tf as M
    from workloads.lm_config import ModelConfig

    cfg = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=16)
    model = M.TfGPT(cfg, seed=0)
    opt = M.make_optimizer(1e-2, 20, 2)
    opt.build(model.trainable_variables)
    step = M.make_train_step(model, opt, tf.distribute.get_strategy())
    tokens = np.random.default_rng(0).integers(0, 256, (4, 17)).astype(np.int32)
    losses = [float(step(tf.constant(tokens))) for _ in range(4)]
    path = M.save_checkpoint(tmp_path_factory.mktemp("ck") / "c", model, step=4, optimizer=opt)
    return cfg, model, opt, tokens, losses, Path(path)


def test_train_step_lowers_the_loss(trained) -> None:
    losses = trained[4]
    assert losses[0] > 5.0  # about ln(256) untrained
    assert losses[-1] < losses[0] - 0.3


def test_checkpoint_scores_the_same_loss_in_the_pytorch_model(trained) -> None:
    import tensorflow as tf

    from workloads import model_tf as M
    from workloads.model_torch import load_checkpoint, loss_fn

    _, model, _, tokens, _, path = trained
    tf_loss = float(M.loss_fn(model, tf.constant(tokens)))
    torch_model, meta, opt_state = load_checkpoint(path)
    with torch.no_grad():
        torch_loss = float(loss_fn(torch_model, torch.from_numpy(tokens.astype(np.int64))))
    assert meta["framework"] == "tensorflow" and meta["step"] == 4 and opt_state is None
    assert torch_loss == pytest.approx(tf_loss, abs=1e-4)


def test_restore_gives_identical_weights_and_optimizer_state(trained) -> None:
    from workloads import model_tf as M

    cfg, model, _, _, _, path = trained
    other = M.TfGPT(cfg, seed=7)
    assert M.weights_digest(other) != M.weights_digest(model)
    other_opt = M.make_optimizer(1e-2, 20, 2)
    other_opt.build(other.trainable_variables)
    meta = M.restore_into(path, other, other_opt)
    assert meta["step"] == 4
    assert M.weights_digest(other) == M.weights_digest(model)
    assert int(other_opt.iterations.numpy()) == 4


def test_damaged_or_foreign_checkpoint_is_refused(trained, tmp_path: Path) -> None:
    import shutil

    from workloads import model_tf as M
    from workloads.checkpoint import CheckpointError

    cfg, *_, path = trained
    bad = tmp_path / "bad"
    shutil.copytree(path, bad)
    (bad / M.PARAMS).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"params\.npz"):
        M.restore_into(bad, M.TfGPT(cfg))
    wider = M.TfGPT(type(cfg)(d_model=64, n_layers=2, n_heads=2, context_length=16))
    with pytest.raises(CheckpointError, match="expected"):
        M.restore_into(path, wider)


def test_nccl_collectives_only_with_gpus() -> None:
    from workloads.train_lm_tf import collective_implementation

    assert collective_implementation(0) == "AUTO"
    assert collective_implementation(1) == "NCCL"
