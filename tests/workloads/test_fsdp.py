"""The PyTorch trainer's parallelism choice and the pieces of FSDP2 that run in one process
(workloads/fsdp.py, workloads/model_torch.py); FSDP2 across two Ray Train workers is in
tests/e2e/test_train_lm_fsdp.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from contract.args.train_lm import TrainLmArgs  # noqa: E402
from contract.train_fit import LmShape  # noqa: E402
from workloads.fsdp import decide_parallelism, device_memory  # noqa: E402
from workloads.lm_config import ModelConfig  # noqa: E402
from workloads.model_torch import GPT, loss_fn, muon_matrices  # noqa: E402

CPU = torch.device("cpu")


def _args(**values: object) -> TrainLmArgs:
    return TrainLmArgs.parse({"context_length": 256, **values})


def test_the_estimate_counts_the_models_parameters() -> None:
    cfg = ModelConfig(d_model=48, n_layers=3, n_heads=4, context_length=40, mlp_ratio=2)
    model = GPT(cfg)
    shape = LmShape(48, 3, 40, mlp_ratio=2)
    assert sum(p.numel() for p in model.parameters()) == shape.params()
    matrices = dict(model.named_parameters())
    assert sum(matrices[n].numel() for n in muon_matrices(model)) == shape.matrix_params()


def test_auto_picks_ddp_for_the_shipped_model_and_fsdp_for_one_a_worker_cannot_hold() -> None:
    assert device_memory(CPU, 2) > 0
    shipped = decide_parallelism(_args(), CPU, world=2, local_world=2)
    assert (shipped["mode"], shipped["degree"]) == ("ddp", 1)
    assert shipped["reason"].startswith("auto: a replica needs ")
    big = _args(d_model=8192, n_layers=64, n_heads=64)
    chosen = decide_parallelism(big, CPU, world=4, local_world=1)
    assert (chosen["mode"], chosen["degree"]) == ("fsdp", 4)
    # one worker: nothing to shard over
    assert decide_parallelism(big, CPU, world=1)["mode"] == "ddp"


def test_device_memory_gb_shards_for_a_smaller_device_and_never_assumes_a_bigger_one() -> None:
    args = {"d_model": 256, "n_layers": 4, "n_heads": 4, "batch_size": 8, "context_length": 16}
    assert decide_parallelism(_args(**args, device_memory_gb=64), CPU, world=2)["mode"] == "ddp"
    small = decide_parallelism(_args(**args, device_memory_gb=2.2), CPU, world=2)
    assert (small["mode"], small["degree"]) == ("fsdp", 2)
    assert small["reason"].endswith("; a device of 2.2 GB assumed (device_memory_gb)")
    real = device_memory(CPU, 1)
    huge = decide_parallelism(_args(**args, device_memory_gb=real / 1e9 * 10), CPU, world=2)
    assert "is more than this device's" in huge["reason"] and "which is used" in huge["reason"]


def test_an_explicit_choice_wins_and_the_degree_must_divide_the_workers() -> None:
    assert decide_parallelism(_args(parallelism="fsdp"), CPU, world=2)["degree"] == 2
    hsdp = decide_parallelism(_args(parallelism="fsdp", shard_degree=2), CPU, world=4)
    assert (hsdp["mode"], hsdp["degree"]) == ("fsdp", 2)
    with pytest.raises(ValueError, match="does not divide the run's 4 workers"):
        decide_parallelism(_args(parallelism="fsdp", shard_degree=3), CPU, world=4)
    assert TrainLmArgs.problems({"parallelism": "ddp", "shard_degree": 2})


def test_activation_checkpointing_gives_the_same_gradients() -> None:
    cfg = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=16)
    torch.manual_seed(0)
    plain = GPT(cfg)
    ckpt = GPT(cfg)
    ckpt.load_state_dict(plain.state_dict())
    ckpt.checkpointing = True
    tokens = torch.randint(0, 256, (3, 17), generator=torch.Generator().manual_seed(1))
    for m in (plain, ckpt):
        loss_fn(m, tokens).backward()
    for (name, a), b in zip(plain.named_parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, msg=name)
    assert set(plain.state_dict()) == set(ckpt.state_dict())  # the checkpoint files are alike


@pytest.fixture
def one_rank_group(tmp_path):
    """A gloo process group of this process alone (FSDP2 needs one; two ranks run in
    tests/e2e/test_train_lm_fsdp.py)."""
    import torch.distributed as dist

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_a_sharded_checkpoint_is_a_ddp_checkpoint_and_resumes_exactly(
    one_rank_group: None, tmp_path
) -> None:
    from functools import partial

    from workloads.fsdp import fsdp_wrap, is_sharded
    from workloads.model_torch import load_checkpoint
    from workloads.precision import Precision
    from workloads.train_lm import build_stepper

    args = _args(
        d_model=32, n_layers=2, n_heads=2, context_length=16, steps=10, warmup=2, ns_dtype="float32"
    )
    wrap = partial(fsdp_wrap, device=CPU, precision="fp32", degree=1, world=1)
    fp32 = Precision("fp32", "test")
    torch.manual_seed(0)
    stepper, _, _ = build_stepper(args, None, CPU, wrap=wrap, precision=fp32)
    assert stepper.sharded and stepper.parallelism == "fsdp"
    gen = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 256, (4, 17), generator=gen) for _ in range(4)]
    for b in batches[:2]:
        stepper.step(b)
    with pytest.raises(RuntimeError, match="gather"):
        stepper.save(str(tmp_path / "no"), step=2, first_loss=None)
    stepper.gather()
    path = stepper.save(str(tmp_path / "ckpt"), step=2, first_loss=5.5)
    model, meta, opt_state = load_checkpoint(path)
    assert (meta["step"], meta["parallelism"]) == (2, "fsdp")
    assert not is_sharded(model) and opt_state is not None  # plain tensors, DDP's format
    went_on = [stepper.step(b)[0] for b in batches[2:]]
    resumed, start, first = build_stepper(args, str(path), CPU, wrap=wrap, precision=fp32)
    assert (start, first) == (2, 5.5)
    assert [resumed.step(b)[0] for b in batches[2:]] == pytest.approx(went_on, rel=1e-6)
