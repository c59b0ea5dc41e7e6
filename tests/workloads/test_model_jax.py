"""The JAX byte LM: same model as the PyTorch one, learns, checkpoints round-trip, damage refused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workloads import model_jax
from workloads.checkpoint import CheckpointError
from workloads.flops import flops_per_token, matmul_params

# one block: every per-block path is exercised, at half the XLA compile time of two
CFG = model_jax.ModelConfig(d_model=32, n_layers=1, n_heads=4, context_length=32)
TEXT = np.frombuffer(b"def train(step):\n    return step + 1\n" * 100, np.uint8)


def _batch(rng: np.random.Generator, rows: int = 8) -> np.ndarray:
    idx = rng.integers(0, len(TEXT) - CFG.context_length - 1, rows)
    return np.stack([TEXT[i : i + CFG.context_length + 1] for i in idx]).astype(np.int32)


def _train(steps: int):
    """``steps`` steps of one optimizer setting (a 40-step schedule) for every test, so the
    module compiles one step: model_jax.make_train_step returns the same jitted step for equal
    arguments (and test_model_jax_muon.py's tests use the same setting)."""
    mesh = model_jax.data_mesh()
    opt = model_jax.make_optimizer(3e-3, 40, warmup=2, muon_lr=0.02)
    host = model_jax.init_params(CFG, 0)
    params = model_jax.replicate(host, mesh)
    state = model_jax.replicate(jax.tree_util.tree_map(np.asarray, opt.init(host)), mesh)
    step = model_jax.make_train_step(CFG, opt, mesh, jnp.float32)
    rng, losses = np.random.default_rng(0), []
    for _ in range(steps):
        params, state, loss = step(params, state, model_jax.shard_batch(_batch(rng), mesh))
        losses.append(float(loss))
    return params, state, opt, losses


def test_loss_decreases_on_a_tiny_corpus() -> None:
    _, _, _, losses = _train(40)
    assert losses[0] == pytest.approx(np.log(256), abs=0.3)  # uniform over bytes at init
    assert np.mean(losses[-5:]) < 0.5 * losses[0]


def test_same_architecture_as_the_torch_model() -> None:
    """Load the torch model's weights into the JAX pytree: logits agree."""
    torch = pytest.importorskip("torch")
    from workloads.model_torch import GPT
    from workloads.model_torch import ModelConfig as TorchConfig

    torch.manual_seed(0)
    tm = GPT(TorchConfig(d_model=32, n_layers=CFG.n_layers, n_heads=4, context_length=32)).eval()
    sd = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    p = model_jax.init_params(CFG)
    assert model_jax.count_params(p) == sum(v.size for v in sd.values())

    def lin(prefix: str) -> dict[str, np.ndarray]:
        return {"w": sd[prefix + ".weight"].T, "b": sd[prefix + ".bias"]}

    def ln(prefix: str) -> dict[str, np.ndarray]:
        return {"scale": sd[prefix + ".weight"], "bias": sd[prefix + ".bias"]}

    p = {
        "tok": sd["tok.weight"],
        "pos": sd["pos.weight"],
        "ln_f": ln("ln_f"),
        "blocks": [
            {
                "ln1": ln(f"blocks.{i}.ln1"),
                "qkv": lin(f"blocks.{i}.qkv"),
                "proj": lin(f"blocks.{i}.proj"),
                "ln2": ln(f"blocks.{i}.ln2"),
                "mlp1": lin(f"blocks.{i}.mlp.0"),
                "mlp2": lin(f"blocks.{i}.mlp.2"),
            }
            for i in range(CFG.n_layers)
        ],
    }
    x = _batch(np.random.default_rng(1), 2)[:, :-1]
    with torch.no_grad():
        want = tm(torch.from_numpy(x.astype(np.int64))).numpy()
    got = np.asarray(model_jax.forward(p, jnp.asarray(x), CFG))
    np.testing.assert_allclose(got, want, atol=2e-4)


def test_bf16_compute_is_close_to_fp32() -> None:
    p = model_jax.init_params(CFG)
    x = jnp.asarray(_batch(np.random.default_rng(2), 2))
    l32 = float(model_jax.loss_fn(p, x, CFG, jnp.float32))
    l16 = float(model_jax.loss_fn(p, x, CFG, jnp.bfloat16))
    assert abs(l16 - l32) < 0.05 and model_jax.resolve_dtype("auto", "tpu") == jnp.bfloat16


def test_checkpoint_round_trips_params_and_optimizer_state(tmp_path) -> None:
    params, state, opt, _ = _train(3)
    path = model_jax.save_checkpoint(
        tmp_path / "checkpoint_00000003", CFG, params, 3, state, {"x": 1}
    )
    cfg, p2, meta, s2 = model_jax.load_checkpoint(path, opt)
    assert cfg == CFG and meta["step"] == 3 and meta["framework"] == "jax" and meta["x"] == 1
    for a, b in zip(
        jax.tree_util.tree_leaves(model_jax.to_host(params)),
        jax.tree_util.tree_leaves(p2),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    assert model_jax.to_host(state).keys() == model_jax.to_host(s2).keys()
    for k, v in model_jax.to_host(state).items():
        np.testing.assert_array_equal(v, model_jax.to_host(s2)[k])


def test_damaged_checkpoint_is_refused_naming_the_file(tmp_path) -> None:
    params, state, opt, _ = _train(1)
    path = model_jax.save_checkpoint(tmp_path / "ck", CFG, params, 1, state)
    f = path / model_jax.PARAMS
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different content
    f.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"params\.npz.*sha256"):
        model_jax.load_checkpoint(path, opt)


def test_flops_formula_counts_matmul_params() -> None:
    d, n, t = 32, 2, 32
    assert matmul_params(d, n) == n * 12 * d * d + 256 * d
    assert flops_per_token(d, n, t) == 6 * matmul_params(d, n) + 12 * n * d * t
    assert CFG.flops_per_token() == flops_per_token(CFG.d_model, CFG.n_layers, CFG.context_length)


def test_evaluate_loads_a_jax_checkpoint_into_the_torch_model(tmp_path) -> None:
    """A JAX checkpoint (params.npz) loads into the PyTorch model: same logits, so `evaluate`
    works after `train_lm_jax` as after `train_lm`."""
    torch = pytest.importorskip("torch")
    from workloads.model_torch import load_checkpoint as load_torch

    params = model_jax.init_params(CFG, seed=3)
    path = model_jax.save_checkpoint(tmp_path / "checkpoint_000007", CFG, params, step=7)
    model, meta, opt = load_torch(path)
    assert meta["framework"] == "jax" and meta["step"] == 7 and opt is None
    x = _batch(np.random.default_rng(2), 2)[:, :-1]
    with torch.no_grad():
        got = model.eval()(torch.from_numpy(x.astype(np.int64))).numpy()
    want = np.asarray(model_jax.forward(params, jnp.asarray(x), CFG))
    np.testing.assert_allclose(got, want, atol=2e-4)
