"""Evaluate a trained checkpoint: validation loss in nats/byte and a short text sample.

Runs driver-side (no Ray Train): ``max_val_rows`` rows (0 = all) are drawn from every
``<dataset>/validation/*.parquet`` file (:func:`load_validation`, seeded by ``val_seed``) and
scored with the same loss as training (mean next-byte cross-entropy over ``[B, context_length]``
targets); the same rows, concatenated, are compressed with ``xz -9e``'s preset
(:func:`xz_nats_per_byte`) and with PPMd order 16 (:func:`ppmd_nats_per_byte`, 7-Zip's text
compressor), the baselines the model should beat. The sample continues ``prompt`` for
``sample_bytes`` bytes with the KV cache (:func:`workloads.model_torch.forward_cached`: one
prefill, then one position per byte), sampled at ``temperature`` with a ``torch.Generator``
seeded by ``seed`` (so a run repeats exactly); 0 means greedy, which on a small byte-level
model soon loops on one word. Both run in ``precision`` (:mod:`workloads.precision`, decided
for this process's CPU/GPU; the loss summed in float32).

The sample keeps this loop rather than vLLM (the engine of :mod:`workloads.batch_generate` and
the services), with a measured reason: it is one 200-byte continuation from the model this
process has already loaded for the loss, and vLLM would first have to start. Measured
2026-12-07 on the 2-core development machine under the same load (load average ~25), make
local's model shape (d_model 128, 4 layers, 256 positions), one thread: this loop's 200 bytes
took 1.1 s; the same sample through ``batch_generate`` (one prompt, ``max_tokens`` 200, its
Hugging Face export) took 164 s, of which generation was a fraction of a second and the rest
vLLM's start (Ray Data's engine actor, vLLM's engine core and its CPU worker, each importing
vLLM and torch). Batch generation over many prompts is ``batch_generate``'s.

Arguments: :class:`contract.args.evaluate.EvaluateArgs` (names, types, defaults, units).
Result: ``{"val_loss", "val_rows" (the rows the loss was computed on), "val_bytes",
"xz_nats_per_byte", "val_vs_xz" (val_loss / xz_nats_per_byte: below 1 beats xz),
"ppmd_nats_per_byte", "val_vs_ppmd", "precision", "sample", "checkpoint", "step"}``.

Raises:
    workloads.checkpoint.CheckpointError: the named checkpoint does not verify, or no valid
        checkpoint exists under the experiment folder.
"""

from __future__ import annotations

from typing import Any

from contract.args.evaluate import EvaluateArgs
from workloads.checkpoint import CheckpointError, latest_valid_checkpoint
from workloads.common import (
    cpu_threads,
    emit_progress,
    join,
    resolve_fs,
    run_cli,
    set_torch_threads,
)
from workloads.precision import decide, matmul_shape


def load_validation(dataset: str, max_rows: int = 0, seed: int = 0):
    """Validation rows as an int64 tensor ``[N, L+1]``: all of them (``max_rows`` 0, or at
    least as many as the split has), else ``max_rows`` rows drawn without replacement, uniformly
    over every row of every ``<dataset>/validation/*.parquet`` file (``numpy`` generator seeded
    by ``seed``, so the same sample each run), kept in file-name then row order. Not the first
    rows in path order: those come from a few files (a few source files' bytes) and misstate
    the split's loss.

    Raises:
        FileNotFoundError: no validation shard.
    """
    import numpy as np
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    import torch

    from workloads.model_torch import arrow_to_tokens

    fs, base = resolve_fs(join(dataset, "validation"))
    infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    files = sorted(i.path for i in infos if i.path.endswith(".parquet"))
    if not files:
        raise FileNotFoundError(f"no validation shards under {join(dataset, 'validation')}")
    counts = []
    for path in files:
        with fs.open_input_file(path) as f:
            counts.append(pq.ParquetFile(f).metadata.num_rows)
    total = sum(counts)
    take = None
    if max_rows and max_rows < total:
        take = np.sort(np.random.default_rng(seed).choice(total, max_rows, replace=False))
    parts, offset = [], 0
    for path, n in zip(files, counts, strict=True):
        lo, offset = offset, offset + n
        if take is not None:
            idx = take[(take >= lo) & (take < offset)] - lo
            if not len(idx):
                continue
        t = arrow_to_tokens(pq.read_table(path, filesystem=fs))
        parts.append(t if take is None else t[torch.from_numpy(idx)])
    return torch.cat(parts)


def xz_nats_per_byte(rows) -> float:
    """What ``xz -9e`` needs for ``rows[N, L+1]`` (uint8 values; the rows concatenated in order),
    in nats per byte: ``8 ln(2) * compressed_bytes / raw_bytes``, compressed by the standard
    library's ``lzma`` (``.xz`` format, preset ``9 | lzma.PRESET_EXTREME``, the preset of
    ``xz -9e``: https://docs.python.org/3/library/lzma.html). The baseline a byte-level model
    should beat on the same rows (its ``val_loss`` is in the same unit).

    Raises:
        ValueError: no bytes."""
    import lzma
    import math

    import numpy as np

    raw = np.asarray(rows, dtype=np.uint8).tobytes()
    if not raw:
        raise ValueError("xz_nats_per_byte: no bytes to compress")
    packed = lzma.compress(raw, format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME)
    return 8 * math.log(2) * len(packed) / len(raw)


# PPMd as 7-Zip's .7z format runs it: variant H (Ppmd7; 7-Zip's "PPMd" method), model order
# 16, 64 MiB of model memory (more than 1 MiB of text needs, so the model is never restarted).
# 7-Zip's PPMd parameters: https://7-zip.opensource.jp/chm/cmdline/switches/method.htm#PPMd
PPMD_ORDER = 16
PPMD_MEM = 64 << 20


def ppmd_nats_per_byte(rows, order: int = PPMD_ORDER, mem_size: int = PPMD_MEM) -> float:
    """What PPMd (variant H, ``order``, ``mem_size`` bytes of model) needs for ``rows[N, L+1]``
    (uint8 values; the rows concatenated in order), in nats per byte: ``8 ln(2) *
    compressed_bytes / raw_bytes``, compressed with ``pyppmd.Ppmd7Encoder``
    (https://pyppmd.readthedocs.io/, the PPMd code of 7-Zip / p7zip). A context-mixing-free text
    compressor people use, stronger than xz on text; a byte-level model should beat it.

    Raises:
        ValueError: no bytes."""
    import math

    import numpy as np
    import pyppmd

    raw = np.asarray(rows, dtype=np.uint8).tobytes()
    if not raw:
        raise ValueError("ppmd_nats_per_byte: no bytes to compress")
    enc = pyppmd.Ppmd7Encoder(order, mem_size)
    packed = enc.encode(raw) + enc.flush()
    return 8 * math.log(2) * len(packed) / len(raw)


def validation_loss(model, rows, batch_size: int = 32, precision: str = "fp32") -> float:
    """Mean next-byte cross-entropy (nats/byte) of ``model`` over ``rows[N, L+1]``, the forward
    pass in ``precision`` (:func:`workloads.model_torch.autocast_for`), the loss in float32."""
    import torch
    import torch.nn.functional as F

    from workloads.model_torch import autocast_for

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            b = rows[i : i + batch_size]
            with autocast_for(b.device, precision):
                logits = model(b[:, :-1])
            total += float(
                F.cross_entropy(
                    logits.float().reshape(-1, 256), b[:, 1:].reshape(-1), reduction="sum"
                )
            )
            count += b[:, 1:].numel()
            emit_progress("evaluate", i + len(b), len(rows), unit="rows", phase="validation")
    return total / count


def generate(
    model,
    prompt: str,
    n_bytes: int,
    temperature: float = 0.0,
    seed: int = 0,
    precision: str = "fp32",
    cached: bool = True,
) -> str:
    """Continue ``prompt`` by ``n_bytes`` bytes; decoded as UTF-8 with replacement.

    ``cached``: the prompt is run once and each new byte attends to the cached keys/values
    (:func:`workloads.model_torch.forward_cached`, O(T) per byte); once the sequence fills
    ``context_length`` (learned positions end there) each byte is a full forward pass over the
    last ``context_length`` bytes, which is all there is without the cache (``cached=False``).
    The two give the same bytes up to float rounding (greedy: the same argmax)."""
    import torch

    from workloads.model_torch import KVCache, autocast_for, forward_cached

    model.eval()
    gen = torch.Generator().manual_seed(seed)
    ctx = model.cfg.context_length
    idx = torch.tensor([list(prompt.encode("utf-8")) or [0]], dtype=torch.long)
    cache = KVCache(model, 1) if cached else None
    fed = 0  # positions of idx already in the cache
    with torch.no_grad(), autocast_for(idx.device, precision):
        for k in range(n_bytes):
            if cache is not None and idx.shape[1] <= ctx:
                start = torch.tensor([fed])
                logits = forward_cached(model, idx[:, fed:], cache, start)[:, -1, :].float()
                fed = idx.shape[1]
            else:
                logits = model(idx[:, -ctx:])[:, -1, :].float()
            if temperature <= 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                probs = torch.softmax(logits / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=gen)
            idx = torch.cat([idx, nxt], dim=1)
            emit_progress("evaluate", k + 1, n_bytes, unit="bytes", phase="sample")
    return bytes(idx[0].tolist()).decode("utf-8", errors="replace")


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Evaluate; see the module docstring for arguments and results.

    Raises:
        contract.args.base.ArgError: bad arguments (one line each).
        workloads.checkpoint.CheckpointError: see the module docstring.
    """

    from workloads.model_torch import load_checkpoint

    args = EvaluateArgs.parse(config)
    set_torch_threads(cpu_threads(args.torch_threads))
    path = args.checkpoint
    if not path:
        exp = join(args.storage_path, args.name)
        found = latest_valid_checkpoint(exp)
        if found is None:
            raise CheckpointError(f"no valid checkpoint under {exp}")
        path = str(found[0])
    model, meta, _ = load_checkpoint(path)
    cfg = model.cfg
    shape = matmul_shape(cfg.d_model, cfg.mlp_ratio, args.batch_size, cfg.context_length)
    precision = decide(args.precision, "cpu", shape=shape, measure_peak=False)
    print(precision.line(), flush=True)
    rows = load_validation(args.dataset, args.max_val_rows, args.val_seed)
    rows = rows[:, : model.cfg.context_length + 1]
    loss = validation_loss(model, rows, args.batch_size, precision.dtype)
    xz = xz_nats_per_byte(rows)
    ppmd = ppmd_nats_per_byte(rows)
    sample = generate(
        model, args.prompt, args.sample_bytes, args.temperature, args.seed, precision.dtype
    )
    return {
        "val_loss": loss,
        "val_rows": len(rows),  # the rows the loss was computed on
        "val_bytes": int(rows[:, 1:].numel()),
        "xz_nats_per_byte": xz,
        "val_vs_xz": loss / xz,
        "ppmd_nats_per_byte": ppmd,
        "val_vs_ppmd": loss / ppmd,
        "precision": precision.dtype,
        "sample": sample,
        "checkpoint": str(path),
        "step": int(meta.get("step", 0)),
    }


if __name__ == "__main__":
    run_cli("evaluate", main)
