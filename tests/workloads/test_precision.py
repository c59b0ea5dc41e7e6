"""The run's compute dtype (workloads/precision.py decide / for_run): CPU flags -> choice, the
measurement that confirms bf16, the override, the checkpoint's record; and the MFU figures."""

from __future__ import annotations

import logging

import pytest

from workloads import precision as P

# /proc/cpuinfo lines of the two machine classes issue 38 names (flags abridged to the ones
# that matter plus neighbours): a Zen 3 AMD EPYC (AVX2 only) and a Sapphire Rapids Xeon (AMX).
AMD_EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC
flags\t\t: fpu sse2 ssse3 sse4_1 sse4_2 avx f16c avx2 bmi2 fma sha_ni vaes vpclmulqdq
"""
XEON_AMX = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""


class Meter:
    """A stand-in for torch.mm timing: FLOP/s per dtype, and which dtypes were measured."""

    def __init__(self, fp32: float, bf16: float) -> None:
        self.rates, self.calls = {"fp32": fp32, "bf16": bf16}, []

    def __call__(self, dtype: str) -> float:
        self.calls.append(dtype)
        return self.rates[dtype]


def test_cpu_flags_are_read_from_cpuinfo() -> None:
    assert "avx2" in P.cpu_flags(AMD_EPYC) and "amx_bf16" not in P.cpu_flags(AMD_EPYC)
    assert P.native_bf16(P.cpu_flags(AMD_EPYC)) == []
    assert P.native_bf16(P.cpu_flags(XEON_AMX)) == ["amx_bf16", "avx512_bf16"]
    assert P.cpu_flags("processor : 0\n") == frozenset()
    assert P.cpu_flags("Features\t: fp asimd bf16\n") == {"fp", "asimd", "bf16"}


def test_a_cpu_without_bf16_flags_takes_fp32_and_never_times_bf16() -> None:
    meter = Meter(fp32=100e9, bf16=3e9)
    chosen = P.decide("auto", "cpu", flags=P.cpu_flags(AMD_EPYC), measure=meter)
    assert chosen.dtype == "fp32" and chosen.peak_flops == 100e9
    assert meter.calls == ["fp32"]  # the peak only: no flags, no bf16 timing
    assert "no amx_bf16/avx512_bf16" in chosen.line()


def test_this_machines_flags_decide_like_the_rule() -> None:
    """Whatever CPU runs the tests: bf16 is picked only with a bf16 flag (here, an AMD EPYC
    with AVX2 only, that means fp32)."""
    meter = Meter(fp32=100e9, bf16=600e9)
    chosen = P.decide("auto", "cpu", measure=meter)
    assert chosen.dtype == ("bf16" if P.native_bf16(P.cpu_flags()) else "fp32")


def test_a_cpu_with_amx_takes_bf16_when_it_measures_faster() -> None:
    fast = Meter(fp32=170e9, bf16=1_100e9)
    chosen = P.decide("auto", "cpu", flags=P.cpu_flags(XEON_AMX), measure=fast)
    assert chosen.dtype == "bf16" and chosen.peak_flops == 1_100e9
    assert chosen.flags == ("amx_bf16", "avx512_bf16") and set(fast.calls) == {"fp32", "bf16"}
    # the flags are there but bf16 does not measure MIN_GAIN times faster: fp32
    slow = Meter(fp32=170e9, bf16=1.1 * 170e9)
    chosen = P.decide("auto", "cpu", flags=P.cpu_flags(XEON_AMX), measure=slow)
    assert chosen.dtype == "fp32" and chosen.peak_flops == 170e9


def test_the_argument_overrides_the_rule_and_bad_values_are_refused() -> None:
    meter = Meter(fp32=100e9, bf16=3e9)
    forced = P.decide("bf16", "cpu", flags=P.cpu_flags(AMD_EPYC), measure=meter)
    assert forced.dtype == "bf16" and forced.peak_flops == 3e9
    assert "set by the precision argument" in forced.reason
    kept = P.decide("fp32", "cpu", flags=P.cpu_flags(XEON_AMX), measure=Meter(1e9, 9e9))
    assert kept.dtype == "fp32"
    with pytest.raises(ValueError, match="precision 'fp16' is not one of auto, bf16, fp32"):
        P.decide("fp16", "cpu")


def test_gpus_and_tpus() -> None:
    meter = Meter(fp32=60e12, bf16=700e12)
    assert P.decide("auto", "gpu", measure=meter, cuda_bf16=True).dtype == "bf16"
    assert P.decide("auto", "cuda", measure=meter, cuda_bf16=False).dtype == "fp32"
    tpu = P.decide("auto", "tpu")
    assert tpu.dtype == "bf16" and tpu.peak_flops is None


def test_a_resumed_run_keeps_its_checkpoints_precision_unless_overridden(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kw = {"flags": P.cpu_flags(AMD_EPYC), "measure": Meter(fp32=100e9, bf16=3e9)}
    with caplog.at_level(logging.WARNING):
        kept = P.for_run("auto", "cpu", {"precision": "bf16"}, "ckpt_1", **kw)
    assert kept.dtype == "bf16" and kept.reason == "kept from checkpoint ckpt_1"
    assert "auto would pick fp32 here" in caplog.text
    assert P.for_run("fp32", "cpu", {"precision": "bf16"}, "c", **kw).dtype == "fp32"
    assert P.for_run("auto", "cpu", {"step": 3}, "c", **kw).dtype == "fp32"  # older checkpoint


def test_mfu_figures() -> None:
    chosen = P.Precision("fp32", "test", peak_flops=100e9)
    m = P.mfu_metrics(20_000.0, 6.5e6, chosen, devices=2)
    assert m["mfu"] == pytest.approx(20_000 * 6.5e6 / 200e9)
    assert m["peak_flops"] == 200e9 and m["model_flops"] == pytest.approx(1.3e11)
    assert m["precision"] == "fp32"
    assert P.mfu_metrics(0.0, 6.5e6, chosen, 2)["mfu"] is None  # before the first timed step
    assert P.mfu_metrics(1.0, 1.0, P.Precision("bf16", "tpu"), 1)["mfu"] is None  # no peak
    assert P.Precision.from_dict(chosen.to_dict()) == chosen


def test_the_matmul_peak_is_measured() -> None:
    pytest.importorskip("torch")
    rate = P.matmul_flops("fp32", (64, 32, 32), seconds=0.05)
    assert rate > 0
    assert P.matmul_shape(128, 4, 32, 256) == (4096, 128, 512)
    assert P.matmul_shape(32, 4, 2, 8) == (16, 32, 128)


def test_the_checkpoint_records_the_runs_precision(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from contract.args.train_lm import TrainLmArgs
    from workloads.checkpoint import verify_checkpoint
    from workloads.train_lm import build_stepper

    args = TrainLmArgs.parse(
        {"d_model": 16, "n_layers": 1, "n_heads": 2, "context_length": 8, "batch_size": 2}
    )
    chosen = P.Precision("bf16", "test", peak_flops=1e9)
    stepper, _, _ = build_stepper(args, None, torch.device("cpu"), precision=chosen, devices=2)
    loss, n = stepper.step(torch.randint(0, 256, (2, 9)))  # runs under bf16 autocast
    assert n == 16 and loss > 0
    path = stepper.save(str(tmp_path / "ckpt"), step=1, first_loss=loss)
    assert verify_checkpoint(path)["precision"] == "bf16"
    assert stepper.extra_metrics(1000.0)["peak_flops"] == 2e9
    # resuming under auto keeps it; the stepper built from the checkpoint records it again
    resumed, step, _ = build_stepper(args, str(path), torch.device("cpu"))
    assert step == 1 and resumed.precision.dtype == "bf16"


@pytest.mark.slow  # imports JAX
def test_the_jax_trainer_takes_the_same_decision_and_records_it(tmp_path) -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("jax")
    from contract.args.train_lm_jax import TrainLmJaxArgs
    from workloads.checkpoint import verify_checkpoint
    from workloads.train_lm_jax import build_stepper

    tiny = {"d_model": 16, "n_layers": 1, "n_heads": 2, "context_length": 8, "batch_size": 2}
    stepper, _, _ = build_stepper(TrainLmJaxArgs.parse({**tiny, "precision": "bf16"}), None)
    assert stepper.precision.dtype == "bf16" and stepper.precision.peak_flops > 0
    loss, n = stepper.step(np.random.default_rng(0).integers(0, 256, (2, 9)).astype(np.int32))
    assert 4.5 < loss < 6.5 and n == 16
    path = stepper.save(str(tmp_path / "ckpt"), step=1, first_loss=loss)
    assert verify_checkpoint(path)["precision"] == "bf16"
    metrics = stepper.extra_metrics(1000.0)
    assert metrics["precision"] == "bf16" and metrics["mfu"] > 0
    # compute_dtype, when set, wins over precision; a catalog peak replaces the measured one
    args = TrainLmJaxArgs.parse({**tiny, "compute_dtype": "float32", "peak_flops_per_device": 1e12})
    forced, _, _ = build_stepper(args, None)
    assert forced.precision.dtype == "fp32" and forced.precision.peak_flops == 1e12
