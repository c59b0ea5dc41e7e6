"""``workloads.model_torch.forward_cached``: the KV-cached incremental forward equals the
training forward (``GPT.forward``) it reuses the weights of, position by position."""

from __future__ import annotations

import pytest
import torch

from workloads.lm_config import ModelConfig
from workloads.model_torch import GPT, KVCache, forward_cached

CFG = ModelConfig(d_model=32, n_layers=2, n_heads=4, context_length=16)


def model() -> GPT:
    torch.manual_seed(0)
    return GPT(CFG).eval()


def test_prefill_then_one_token_steps_equal_the_full_forward() -> None:
    m = model()
    g = torch.Generator().manual_seed(1)
    seqs = torch.randint(0, 256, (3, CFG.context_length), generator=g)
    with torch.no_grad():
        full = m(seqs)  # [3, 16, 256]: the training forward, causal over the whole row
    cache = KVCache(m, 3)
    pre = forward_cached(m, seqs[:, :5], cache, torch.zeros(3, dtype=torch.long))
    torch.testing.assert_close(pre, full[:, :5], rtol=1e-5, atol=1e-5)
    for p in range(5, CFG.context_length):
        step = forward_cached(m, seqs[:, p : p + 1], cache, torch.full((3,), p))
        torch.testing.assert_close(step[:, 0], full[:, p], rtol=1e-5, atol=1e-5)


def test_rows_at_different_positions_and_padded_prefill_share_one_forward() -> None:
    m = model()
    g = torch.Generator().manual_seed(2)
    lens = [2, 7, 4]
    rows = [torch.randint(0, 256, (12,), generator=g) for _ in lens]
    cache = KVCache(m, 3)
    width = max(lens)
    padded = torch.stack([torch.cat([r[:n], torch.zeros(width - n, dtype=torch.long)])
                          for r, n in zip(rows, lens, strict=True)])  # fmt: skip
    forward_cached(m, padded, cache, torch.zeros(3, dtype=torch.long))
    pos = list(lens)
    for _ in range(4):  # each row continues from its own length; the pads' keys are overwritten
        x = torch.stack([r[p : p + 1] for r, p in zip(rows, pos, strict=True)])
        got = forward_cached(m, x, cache, torch.tensor(pos))[:, 0]
        for b, (r, p) in enumerate(zip(rows, pos, strict=True)):
            with torch.no_grad():
                want = m(r[None, : p + 1])[0, -1]
            torch.testing.assert_close(got[b], want, rtol=1e-5, atol=1e-5)
        pos = [p + 1 for p in pos]


def test_the_context_is_enforced() -> None:
    m = model()
    g = torch.Generator().manual_seed(3)
    seqs = torch.randint(0, 256, (3, CFG.context_length), generator=g)
    cache = KVCache(m, 3)
    forward_cached(m, seqs[:, :6], cache, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="position 16 >= context_length 16"):
        forward_cached(m, seqs[:2, :1], cache, torch.tensor([16, 3]))
