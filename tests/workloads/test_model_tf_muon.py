"""optimizer=muon in the Keras/TensorFlow trainer (workloads/model_tf.py ``TorchMuon``): the
block kernels get an orthogonalised Muon update scaled by sqrt(max(1, fan_out/fan_in)) while
the embeddings get an AdamW update; one step equals one step of torch.optim.Muon + AdamW on the
same (converted) weights; checkpoints refuse the other optimiser kind (no Ray)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # imports TensorFlow and PyTorch

LR, MUON_LR, STEPS, WARMUP = 3e-3, 0.02, 20, 2
NS = (3.4445, -4.775, 2.0315)


def _setup(seed: int = 0):
    import tensorflow as tf

    from workloads import model_tf as M
    from workloads.lm_config import ModelConfig

    cfg = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=16)
    model = M.TfGPT(cfg, seed=seed)
    opt = M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", muon_lr=MUON_LR)
    opt.build(model.trainable_variables)
    tokens = np.random.default_rng(seed).integers(0, 256, (4, 17)).astype(np.int32)
    return cfg, model, opt, tokens, M.make_train_step(model, opt, tf.distribute.get_strategy())


def _clipped_grads(model, tokens) -> dict[str, np.ndarray]:
    import tensorflow as tf

    from workloads import model_tf as M

    named = model.named_weights()
    with tf.GradientTape() as tape:
        loss = M.loss_fn(model, tf.constant(tokens))
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, list(named.values()))]
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    return {k: g.numpy().astype(np.float64) for k, g in zip(named, grads, strict=True)}


def _newton_schulz(g: np.ndarray) -> np.ndarray:
    a, b, c = NS
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(5):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def test_block_kernels_get_an_orthogonalised_muon_update_and_embeddings_adamw() -> None:
    from workloads import model_tf as M

    _, model, _, tokens, step = _setup()
    before = M.weights_to_host(model)
    grads = _clipped_grads(model, tokens)
    step(tokens)
    after = M.weights_to_host(model)
    factor = 1.0 / WARMUP  # the schedule at step 0
    lr_m, lr_a = MUON_LR * factor, LR * factor

    for name in ("blocks/0/qkv/w", "blocks/0/proj/w", "blocks/1/mlp1/w", "blocks/1/mlp2/w"):
        w0, g = before[name].astype(np.float64), grads[name]
        fan_in, fan_out = w0.shape  # a Keras kernel is [in, out]
        scale = math.sqrt(max(1.0, fan_out / fan_in))  # qkv sqrt(3), mlp1 2, proj/mlp2 1
        # decoupled decay with the unscaled rate, then the scaled orthogonalised step
        update = -(after[name] - w0 * (1 - lr_m * 0.01)) / (lr_m * scale)
        sv = np.linalg.svd(update, compute_uv=False)
        sv_grad = np.linalg.svd(g, compute_uv=False)
        # The gradient's directions above 1% of its largest (a LayerNorm before or after the
        # matrix leaves one exactly zero) spread over 10x and more; Muon's 5 quintic
        # Newton-Schulz steps bring them all to about 1 (Keller Jordan: roughly 0.7 .. 1.2).
        k = int((sv_grad > 1e-2 * sv_grad[0]).sum())
        assert k >= 16 and sv_grad[0] / sv_grad[k - 1] > 10, name
        assert sv[:k].min() > 0.5 and sv[:k].max() < 1.25, name
        # the first Nesterov step is a multiple of the gradient: Newton-Schulz of it, exactly
        np.testing.assert_allclose(update, _newton_schulz(g), atol=2e-4, err_msg=name)

    for name in ("tok", "pos", "blocks/0/ln1/scale", "blocks/0/qkv/b"):
        w0, g = before[name].astype(np.float64), grads[name]
        mask = np.abs(g) > 1e-5
        assert mask.sum() > 0
        adam = -(after[name] - w0 * (1 - lr_a * 0.01)) / lr_a  # first Adam step: ~sign(g)
        np.testing.assert_allclose(adam[mask], np.sign(g[mask]), atol=1e-2, err_msg=name)


def _torch_step(path: Path, tokens: np.ndarray, ns_dtype: str) -> dict:
    """One step of the torch model loaded from ``path`` with train_lm's optimizer
    (``model_torch.make_optimizer``, optimizer muon: ``DtypeMuon`` with Newton-Schulz in
    ``ns_dtype`` for the 2-D block weights, AdamW for the rest; schedule factor 1/WARMUP at step
    0), gradient clipped to norm 1.0."""
    from workloads.model_torch import load_checkpoint, loss_fn, make_optimizer

    model, _, _ = load_checkpoint(path)
    opt, _ = make_optimizer(
        model, LR, STEPS, WARMUP, optimizer="muon", muon_lr=MUON_LR, ns_dtype=ns_dtype
    )
    loss = loss_fn(model, torch.from_numpy(tokens.astype(np.int64)))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _relative_update_error(tf_after: dict, torch_after: dict, torch_before: dict) -> dict:
    out = {}
    for k, t1 in torch_after.items():
        d_torch, d_tf = t1 - torch_before[k], tf_after[k] - torch_before[k]
        out[k] = float(np.linalg.norm(d_tf - d_torch) / np.linalg.norm(d_torch))
    return out


def test_one_step_equals_torch_muon_on_the_converted_weights(tmp_path: Path) -> None:
    from workloads import model_tf as M
    from workloads.model_torch import load_checkpoint

    _, model, _, tokens, step = _setup()
    start = M.save_checkpoint(tmp_path / "start", model, step=0)
    step(tokens)
    done = M.save_checkpoint(tmp_path / "done", model, step=1)
    torch_before = {k: v.numpy() for k, v in load_checkpoint(start)[0].state_dict().items()}
    tf_after = {k: v.numpy() for k, v in load_checkpoint(done)[0].state_dict().items()}

    exact = _relative_update_error(tf_after, _torch_step(start, tokens, "float32"), torch_before)
    shipped = _relative_update_error(tf_after, _torch_step(start, tokens, "bfloat16"), torch_before)
    matrices = [
        k for k in exact if k.startswith("blocks.") and k.endswith("weight") and "ln" not in k
    ]
    assert len(matrices) == 8
    adam = [k for k in exact if k not in matrices]
    # Newton-Schulz in float32 on both sides (both trainers' CPU default, ns_dtype auto): the
    # same Muon update up to float32 rounding (measured 3e-6 .. 5e-6 relative)
    assert max(exact[k] for k in matrices) < 2e-5, exact
    # torch with ns_dtype bfloat16 (the GPU default; 8-bit mantissa): measured 4% .. 6%
    assert max(shipped[k] for k in matrices) < 0.1, shipped
    # AdamW's first step is about lr * sign(g): entries whose gradient is rounding noise (the
    # key bias's is exactly 0 in exact arithmetic, softmax ignores it) take either sign in
    # either framework (measured up to 2.6% on a bias or LayerNorm scale, 0.5% on ``tok``);
    # the same as with optimizer adamw
    assert max(exact[k] for k in adam) < 0.05, exact
    assert sorted(exact[k] for k in adam)[len(adam) // 2] < 1e-3, exact  # the median


def test_checkpoint_resumes_muon_state_and_refuses_the_other_optimizer(tmp_path: Path) -> None:
    from workloads import model_tf as M
    from workloads.checkpoint import CheckpointError, verify_checkpoint

    cfg, model, opt, tokens, step = _setup()
    for _ in range(2):
        step(tokens)
    path = M.save_checkpoint(tmp_path / "c", model, step=2, optimizer=opt)
    assert verify_checkpoint(path)["optimizer"] == "muon"

    other = M.TfGPT(cfg, seed=3)
    other_opt = M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", muon_lr=MUON_LR)
    other_opt.build(other.trainable_variables)
    M.restore_into(path, other, other_opt)
    assert M.weights_digest(other) == M.weights_digest(model)
    assert all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(opt.variables, other_opt.variables, strict=True)
    )
    # the same next step from the restored state
    import tensorflow as tf

    again = M.make_train_step(other, other_opt, tf.distribute.get_strategy())
    assert float(again(tokens)) == pytest.approx(float(step(tokens)), abs=1e-6)
    assert M.weights_digest(other) == M.weights_digest(model)

    adamw = M.make_optimizer(LR, STEPS, WARMUP, optimizer="adamw")
    adamw.build(other.trainable_variables)
    with pytest.raises(CheckpointError, match=r"optimizer 'muon', this run uses optimizer 'adamw'"):
        M.restore_into(path, other, adamw)
    with pytest.raises(ValueError, match=r"optimizer='sgd': expected 'muon' or 'adamw'"):
        M.make_optimizer(LR, STEPS, WARMUP, optimizer="sgd")


def test_decoupled_weight_decay_uses_each_parts_own_rate() -> None:
    import tensorflow as tf

    from workloads import model_tf as M

    _, model, opt, *_ = _setup()
    before = M.weights_to_host(model)
    named = model.named_weights()
    # a zero gradient moves neither part (Adam: m = 0; Muon: Newton-Schulz of 0 is 0): decay only
    opt.apply_gradients([(tf.zeros_like(v), v) for v in named.values()])
    after = M.weights_to_host(model)
    factor = 1.0 / WARMUP
    for name in ("tok", "pos", "blocks/0/ln1/scale", "blocks/1/mlp2/b"):
        want = before[name] * (1 - LR * factor * 0.01)
        np.testing.assert_allclose(after[name], want, rtol=1e-6, err_msg=name)
    for name in ("blocks/0/qkv/w", "blocks/1/mlp1/w"):  # torch: the unscaled Muon rate
        want = before[name] * (1 - MUON_LR * factor * 0.01)
        np.testing.assert_allclose(after[name], want, rtol=1e-6, err_msg=name)


def test_tune_restore_changes_the_adamw_rate_and_keeps_muon_lr(tmp_path: Path) -> None:
    import tensorflow as tf

    from contract.args.train_lm_tf import TrainLmTfArgs
    from workloads import model_tf as M
    from workloads.checkpoint import CheckpointError
    from workloads.train_lm_tf import tune_stepper

    tiny = {"d_model": 16, "n_layers": 1, "n_heads": 2, "context_length": 16, "batch_size": 4}
    tiny |= {"steps": 20, "warmup": 2, "lr": 1e-2, "muon_lr": 0.03, "seed": 0}
    args = TrainLmTfArgs.parse(tiny)
    assert args.optimizer == "muon"  # the default
    stepper, *_ = tune_stepper(args, None, 1)
    tokens = tf.constant(np.random.default_rng(0).integers(0, 256, (4, 17)).astype(np.int32))
    for _ in range(3):
        stepper.step(tokens)
    path = stepper.save(str(tmp_path / "ckpt"), step=3, first_loss=None)

    restored, start, _ = tune_stepper(TrainLmTfArgs.parse({**tiny, "lr": 5e-3}), str(path), 1)
    opt = restored.optimizer
    assert start == 3 and int(opt.iterations) == 3
    assert float(opt.learning_rate) == pytest.approx(float(M.WarmupCosine(5e-3, 20, 2)(3)))
    assert float(opt.muon_rate()) == pytest.approx(float(M.WarmupCosine(0.03, 20, 2)(3)))

    with pytest.raises(CheckpointError, match=r"'muon'.*'adamw'"):
        tune_stepper(TrainLmTfArgs.parse({**tiny, "optimizer": "adamw"}), str(path), 1)


def test_config_round_trips() -> None:
    from workloads import model_tf as M

    opt = M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", muon_lr=MUON_LR)
    back = M.TorchMuon.from_config(
        opt.get_config(), custom_objects={"WarmupCosine": M.WarmupCosine}
    )
    assert float(back.muon_rate()) == pytest.approx(MUON_LR / WARMUP)
    assert float(back.learning_rate) == pytest.approx(LR / WARMUP)
    assert (back.rms_rate, back.adam_lr_ratio, back.weight_decay) == (None, 1.0, 0.01)
    assert (back.adam_weight_decay, back.adam_beta_2, back.epsilon) == (0.01, 0.95, 1e-8)


def test_ns_dtype_auto_is_float32_on_cpu_and_casts_inside_the_iterations() -> None:
    """On a CPU the TF trainer's Muon iterates in float32 (``ns_dtype`` auto); with bfloat16 the
    iterations run in bfloat16 and the result comes back in the input's float32, a bfloat16
    rounding away from the float32 one; the dtype survives get_config/from_config."""
    import tensorflow as tf

    from workloads import model_tf as M

    opt = M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", muon_lr=MUON_LR)
    assert opt.ns_dtype == "float32"
    bf16 = M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", ns_dtype="bfloat16")
    x = tf.random.stateless_normal((16, 48), seed=(1, 2))
    a, b = opt.zeropower_via_newtonschulz5(x, 5), bf16.zeropower_via_newtonschulz5(x, 5)
    assert a.dtype == b.dtype == tf.float32
    rel = float(tf.norm(a - b) / tf.norm(a))
    assert 1e-4 < rel < 0.1
    back = M.TorchMuon.from_config(
        bf16.get_config(), custom_objects={"WarmupCosine": M.WarmupCosine}
    )
    assert back.ns_dtype == "bfloat16"
    with pytest.raises(ValueError, match="ns_dtype 'half'"):
        M.make_optimizer(LR, STEPS, WARMUP, optimizer="muon", ns_dtype="half")
