"""Training FLOPs of the byte-level decoder-only transformer, shared by the JAX and PyTorch paths.

One formula for both frameworks (``workloads/model_jax.py``, ``workloads/model_torch.py``) and
both step benchmarks (``bench/jax_step.py``, ``bench/torch_step.py``), so their model FLOPs
utilisation (MFU) figures are comparable.

Per trained token (forward + backward), following PaLM (Chowdhery et al. 2022, appendix B,
https://arxiv.org/abs/2204.02311) and Kaplan et al. 2020 (https://arxiv.org/abs/2001.08361)::

    flops_per_token = 6 * N_matmul + 12 * n_layers * d_model * T

* ``N_matmul``: parameters that take part in a matrix multiply per token: in each block the
  fused QKV projection (3 d^2), the output projection (d^2) and the MLP (2 * mlp_ratio * d^2),
  plus the (tied) output head ``vocab * d``. Embedding lookups, biases and LayerNorms are not
  counted (they are O(d) per token).
* ``12 * n_layers * d_model * T``: attention scores ``QK^T`` and ``AV`` (2 matmuls of
  2 * T * d FLOPs each per token in the forward pass, x3 for forward + backward). Like PaLM,
  the causal mask is not used to halve it.

MFU = achieved model FLOP/s / peak FLOP/s of the devices used; the peak per device comes from
``contract/accelerators.py`` (``peak_flops``; the catalog reads the same figures) and is
passed in by the caller: this module is standard library only.
"""

from __future__ import annotations

VOCAB = 256


def matmul_params(d_model: int, n_layers: int, mlp_ratio: int = 4, vocab: int = VOCAB) -> int:
    """Parameters used in matrix multiplies per token (see module docstring), a count."""
    return n_layers * (4 + 2 * mlp_ratio) * d_model * d_model + vocab * d_model


def flops_per_token(
    d_model: int, n_layers: int, context_length: int, mlp_ratio: int = 4, vocab: int = VOCAB
) -> float:
    """Training FLOPs (forward + backward) per token at sequence length ``context_length``."""
    return 6.0 * matmul_params(d_model, n_layers, mlp_ratio, vocab) + 12.0 * (
        n_layers * d_model * context_length
    )


def mfu(
    tokens_per_s: float, flops_per_tok: float, peak_flops_per_device: float | None, devices: int
) -> float | None:
    """Model FLOPs utilisation in [0, 1]: ``tokens_per_s * flops_per_tok / (peak * devices)``.

    Args:
        tokens_per_s: global training throughput, tokens/s.
        flops_per_tok: from :func:`flops_per_token`.
        peak_flops_per_device: peak FLOP/s of one device (chip/GPU), e.g. 197e12 for a TPU v5e
            chip; ``None`` or ``<= 0`` -> MFU unknown (``None``), e.g. on CPU.
        devices: number of devices the throughput was measured over.
    """
    if not peak_flops_per_device or peak_flops_per_device <= 0 or devices <= 0:
        return None
    return tokens_per_s * flops_per_tok / (peak_flops_per_device * devices)
