"""The training memory estimate (contract/train_fit.py): its terms, the sharding, activation
checkpointing, the reserve, the auto choice and the fixes."""

from __future__ import annotations

import pytest

from contract.serve_fit import CausalLmShape
from contract.train_fit import (
    GB,
    LmShape,
    choose_parallelism,
    estimate,
    fixes,
    reserve_bytes,
)

SMALL = LmShape(d_model=128, n_layers=4, context=256)


def test_parameters_are_the_gpt2_count_of_the_same_network() -> None:
    for s in (SMALL, LmShape(8192, 64, 256), LmShape(96, 3, 64, mlp_ratio=2)):
        g = CausalLmShape(s.vocab, s.context, s.d_model, s.n_layers, 1, s.hidden)
        assert s.params() == g.params()


def test_states_follow_the_optimizer_and_shard_by_the_degree() -> None:
    n, m = SMALL.params(), SMALL.matrix_params()
    adamw = estimate(SMALL, rows=1, optimizer="adamw", parallelism="fsdp", framework="jax")
    assert adamw.states == 16 * n  # weights, gradients, two moments: float32
    muon = estimate(SMALL, rows=1, optimizer="muon", parallelism="fsdp", framework="jax")
    assert muon.states == 16 * n - 4 * m  # Muon keeps one moment for the matrices
    ddp = estimate(SMALL, rows=1, optimizer="adamw", parallelism="ddp")
    assert ddp.states == 20 * n  # DDP's bucket copy of the gradients
    half = estimate(SMALL, rows=1, optimizer="adamw", parallelism="fsdp", degree=2)
    assert half.states == pytest.approx(adamw.states / 2)


def test_activations_scale_with_the_batch_and_checkpointing_keeps_less() -> None:
    one = estimate(SMALL, rows=1, compute="bf16")
    eight = estimate(SMALL, rows=8, compute="bf16")
    assert eight.activations == pytest.approx(8 * one.activations)
    fp32 = estimate(SMALL, rows=8, compute="fp32")
    assert fp32.activations > eight.activations
    ckpt = estimate(SMALL, rows=8, compute="bf16", checkpointing=True)
    assert ckpt.activations < eight.activations / 2


def test_the_reserve_and_the_auto_choice() -> None:
    assert reserve_bytes("gpu", 80 * GB) == pytest.approx(9 * GB)
    assert reserve_bytes("cpu", 10 * GB) == pytest.approx(4.5 * GB)  # object store + Ray
    small = estimate(SMALL, rows=32, memory=80 * GB, kind="gpu")
    assert small.fits and choose_parallelism(small) == "ddp"
    big = estimate(LmShape(4096, 32, 256), rows=8, memory=80 * GB, kind="gpu")
    assert not big.fits and choose_parallelism(big) == "fsdp"
    unknown = estimate(LmShape(4096, 32, 256), rows=8)
    assert choose_parallelism(unknown) == "ddp"  # no memory known: today's behaviour


def test_fixes_come_in_order_each_on_top_of_the_last() -> None:
    shape = LmShape(8192, 64, 256)
    opts = {"optimizer": "muon", "compute": "bf16", "framework": "torch", "kind": "gpu"}
    est = estimate(shape, rows=32, memory=80 * GB, **opts)
    out = fixes(
        est,
        shape,
        workers_degree=8,
        more_devices=16,
        fsdp_available=True,
        checkpointing_available=True,
        **opts,
    )
    assert [s.split(":")[0] for s in out] == [
        "parallelism",
        "more chips",
        "activation_checkpointing",
    ]
    assert out[-1].endswith("(fits)") and "still does not fit" in out[0]
