"""The PyTorch trainer's optimizers (workloads/model_torch.py make_optimizer, MuonAdamW) and
how train_lm builds, resumes and re-targets them (build_stepper, tune_stepper)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from contract.args.train_lm import TrainLmArgs  # noqa: E402
from workloads.checkpoint import CheckpointError  # noqa: E402
from workloads.lm_config import ModelConfig  # noqa: E402
from workloads.model_torch import (  # noqa: E402
    GPT,
    MuonAdamW,
    make_optimizer,
    muon_matrices,
    save_checkpoint,
    train_step,
)

CFG = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=16)


def _model() -> GPT:
    torch.manual_seed(0)
    return GPT(CFG)


def test_muon_takes_the_blocks_matrices_and_adamw_the_rest() -> None:
    model = _model()
    names = muon_matrices(model)
    assert sorted(names) == sorted(
        f"blocks.{i}.{m}.weight" for i in range(2) for m in ("qkv", "proj", "mlp.0", "mlp.2")
    )
    opt, _ = make_optimizer(model, 3e-3, 10, 2)
    assert isinstance(opt, MuonAdamW)
    muon_params = {id(p) for g in opt.param_groups if g["muon"] for p in g["params"]}
    by_id = {id(p): n for n, p in model.named_parameters()}
    assert {by_id[i] for i in muon_params} == set(names)
    # every parameter is optimised exactly once
    all_ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(all_ids) == sorted(by_id)


def test_a_muon_step_orthogonalises_a_matrix_update_and_adam_moves_the_embedding() -> None:
    model = _model()
    lr, muon_lr = 1e-3, 0.02
    opt, _ = make_optimizer(model, lr, 100, 0, optimizer="muon", muon_lr=muon_lr)
    w = model.blocks[0].mlp[0].weight  # (out 128, in 32): lr scale sqrt(128 / 32) = 2
    emb = model.tok.weight
    w0, emb0 = w.detach().clone(), emb.detach().clone()
    tokens = torch.randint(0, 256, (4, 17))
    train_step(model, opt, tokens, grad_clip=0)
    grad_sv = torch.linalg.svdvals(w.grad)
    step = (w0 * (1 - muon_lr * 0.01) - w.detach()) / (muon_lr * 2.0)
    # the layer's input is LayerNorm'd (zero mean over its 32 features), so the gradient has
    # rank 31; Newton-Schulz maps each of its non-zero singular values into roughly [0.7, 1.2]
    sv = torch.linalg.svdvals(step)[:31]
    assert float(sv.min()) > 0.5 and float(sv.max()) < 1.3
    assert float(grad_sv.max() / grad_sv[30]) > 5 * float(sv.max() / sv.min())
    # Adam's first step moves each entry with a gradient by about lr (bias-corrected m/sqrt(v))
    moved = (emb.detach() - emb0 * (1 - lr * 0.01)).abs()
    rows = sorted(set(tokens[:, :-1].flatten().tolist()))
    assert torch.allclose(moved[rows].max(dim=1).values, torch.full((len(rows),), lr), rtol=0.05)


def test_adamw_is_the_same_update_as_before() -> None:
    a, b = _model(), _model()
    opt_a, sched_a = make_optimizer(a, 3e-3, 10, 2, optimizer="adamw")
    ref = torch.optim.AdamW(b.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01)
    sched_b = torch.optim.lr_scheduler.LambdaLR(ref, sched_a.lr_lambdas[0])
    tokens = torch.randint(0, 256, (4, 17))
    for _ in range(3):
        train_step(a, opt_a, tokens, sched_a)
        train_step(b, ref, tokens, sched_b)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_unknown_optimizer_is_refused() -> None:
    with pytest.raises(ValueError, match="optimizer 'sgd' is not one of 'muon', 'adamw'"):
        make_optimizer(_model(), 3e-3, 10, optimizer="sgd")


def _checkpoint(tmp_path, optimizer: str) -> str:
    model = _model()
    opt, sched = make_optimizer(model, 3e-3, 10, 2, optimizer=optimizer)
    train_step(model, opt, torch.randint(0, 256, (2, 17)), sched)
    return str(save_checkpoint(tmp_path / optimizer, model, 1, opt, sched))


def _args(**kw) -> TrainLmArgs:
    return TrainLmArgs.parse(
        {"d_model": 32, "n_layers": 2, "n_heads": 2, "context_length": 16, "steps": 10, **kw}
    )


def test_resume_restores_both_optimizers_and_refuses_the_other_kind(tmp_path) -> None:
    from workloads.train_lm import build_stepper

    path = _checkpoint(tmp_path, "muon")
    stepper, start, _ = build_stepper(_args(warmup=2), path, torch.device("cpu"))
    assert start == 1
    assert isinstance(stepper.opt, MuonAdamW)
    assert len(stepper.opt.muon.state) == 8 and len(stepper.opt.adamw.state) > 0
    with pytest.raises(
        CheckpointError, match="written with optimizer muon; this run has optimizer adamw"
    ):
        build_stepper(_args(optimizer="adamw"), path, torch.device("cpu"))
    with pytest.raises(
        CheckpointError, match="written with optimizer adamw; this run has optimizer muon"
    ):
        build_stepper(_args(), _checkpoint(tmp_path, "adamw"), torch.device("cpu"))


def test_tune_stepper_applies_new_peak_lrs_at_the_restored_schedule_position(tmp_path) -> None:
    from workloads.train_lm import tune_stepper

    path = _checkpoint(tmp_path, "muon")
    args = _args(warmup=2, lr=1e-3, muon_lr=0.01)
    stepper, start, _ = tune_stepper(args, path, threads=1)
    factor = stepper.sched.lr_lambdas[0](stepper.sched.last_epoch)
    assert start == 1 and stepper.sched.last_epoch == 1 and factor == 1.0
    lrs = {g["muon"]: g["lr"] for g in stepper.opt.param_groups}
    assert lrs == {True: pytest.approx(0.01 * factor), False: pytest.approx(1e-3 * factor)}


def test_ns_dtype_rule_float32_on_cpu_bfloat16_on_accelerators() -> None:
    from workloads.common import resolve_ns_dtype

    assert resolve_ns_dtype("auto", "cpu") == "float32"
    assert resolve_ns_dtype(None, "cpu") == "float32"
    for platform in ("cuda", "gpu", "tpu"):
        assert resolve_ns_dtype("auto", platform) == "bfloat16"
    assert resolve_ns_dtype("bfloat16", "cpu") == "bfloat16"
    assert resolve_ns_dtype("float32", "tpu") == "float32"
    with pytest.raises(ValueError, match="ns_dtype 'fp8' is not one of 'auto', float32, bfloat16"):
        resolve_ns_dtype("fp8", "cpu")


def test_bfloat16_dtype_muon_is_torch_muon_exactly_and_float32_is_not() -> None:
    """``DtypeMuon(ns_dtype="bfloat16")`` reproduces ``torch.optim.Muon`` bit for bit over three
    steps; float32 iterations move the same weights differently (by a bfloat16 rounding)."""
    from workloads.model_torch import DtypeMuon

    torch.manual_seed(0)
    w0 = torch.randn(48, 16)
    grads = [torch.randn(48, 16) for _ in range(3)]
    runs = {}
    for name in ("torch", "bfloat16", "float32"):
        w = torch.nn.Parameter(w0.clone())
        kw = {"lr": 0.02, "weight_decay": 0.01}
        opt = torch.optim.Muon([w], **kw) if name == "torch" else DtypeMuon([w], name, **kw)
        for g in grads:
            w.grad = g.clone()
            opt.step()
        runs[name] = w.detach()
    assert torch.equal(runs["bfloat16"], runs["torch"])
    rel = float((runs["float32"] - runs["torch"]).norm() / (runs["torch"] - w0).norm())
    assert 1e-4 < rel < 0.1


def test_make_optimizer_resolves_auto_for_the_models_device() -> None:
    opt, _ = make_optimizer(_model(), 3e-3, 10, 2)
    assert opt.ns_dtype == "float32" and opt.muon.ns_dtype == "float32"
    opt, _ = make_optimizer(_model(), 3e-3, 10, 2, ns_dtype="bfloat16")
    assert opt.muon.ns_dtype == "bfloat16"
    with pytest.raises(ValueError, match="ns_dtype 'half'"):
        make_optimizer(_model(), 3e-3, 10, 2, ns_dtype="half")


def test_checkpoint_records_ns_dtype_and_resume_keeps_or_refuses_it(tmp_path) -> None:
    """Decided once per run: the trainer's checkpoint records the resolved dtype; ``auto``
    resumes with the recorded one (even where auto would pick another), an explicit other one
    is refused naming both, an explicit equal one resumes."""
    from workloads.checkpoint import verify_checkpoint
    from workloads.train_lm import build_stepper

    cpu = torch.device("cpu")
    fresh, _, _ = build_stepper(_args(ns_dtype="bfloat16"), None, cpu)
    assert fresh.opt.muon.ns_dtype == "bfloat16"
    path = str(fresh.save(str(tmp_path / "bf16"), step=1, first_loss=5.5))
    assert verify_checkpoint(path)["ns_dtype"] == "bfloat16"
    resumed, start, _ = build_stepper(_args(), path, cpu)  # auto: keeps the run's bfloat16
    assert start == 1 and resumed.opt.muon.ns_dtype == "bfloat16"
    assert build_stepper(_args(ns_dtype="bfloat16"), path, cpu)[0].ns_dtype == "bfloat16"
    with pytest.raises(
        CheckpointError, match="written with ns_dtype bfloat16; this run has ns_dtype float32"
    ):
        build_stepper(_args(ns_dtype="float32"), path, cpu)
    auto, _, _ = build_stepper(_args(), None, cpu)
    assert auto.ns_dtype == "float32"
    path = str(auto.save(str(tmp_path / "auto"), step=1, first_loss=None))
    assert verify_checkpoint(path)["ns_dtype"] == "float32"


def test_ns_dtype_argument_is_validated() -> None:
    from contract.args.base import ArgError

    with pytest.raises(ArgError, match="ns_dtype"):
        _args(ns_dtype="fp16")
