"""Evaluate a trained checkpoint: validation loss in nats/byte and a short text sample.

Runs driver-side (no Ray Train): the validation split is read from
``<dataset>/validation/*.parquet`` in file-name order (deterministic), at most ``max_val_rows``
rows (0 = all), and scored with the same loss as training (mean next-byte cross-entropy over
``[B, context_length]`` targets). The sample continues ``prompt`` for ``sample_bytes`` bytes,
sampled at ``temperature`` with a ``torch.Generator`` seeded by ``seed`` (so a run repeats
exactly); 0 means greedy, which on a small byte-level model soon loops on one word.

Arguments: :class:`workloads.args.EvaluateArgs` (names, types, defaults, units).
Result: ``{"val_loss", "val_bytes", "sample", "checkpoint", "step"}``.

Raises:
    workloads.checkpoint.CheckpointError: the named checkpoint does not verify, or no valid
        checkpoint exists under the experiment folder.
"""

from __future__ import annotations

from typing import Any

from workloads.args import EvaluateArgs
from workloads.checkpoint import CheckpointError, latest_valid_checkpoint
from workloads.common import (
    cpu_threads,
    emit_progress,
    join,
    resolve_fs,
    run_cli,
    set_torch_threads,
)


def load_validation(dataset: str, max_rows: int = 0):
    """Validation rows as an int64 tensor ``[N, L+1]`` (files in name order, first N rows)."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    import torch

    from workloads.model_torch import arrow_to_tokens

    fs, base = resolve_fs(join(dataset, "validation"))
    infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    files = sorted(i.path for i in infos if i.path.endswith(".parquet"))
    if not files:
        raise FileNotFoundError(f"no validation shards under {join(dataset, 'validation')}")
    parts, n = [], 0
    for path in files:
        t = arrow_to_tokens(pq.read_table(path, filesystem=fs))
        parts.append(t)
        n += len(t)
        if max_rows and n >= max_rows:
            break
    rows = torch.cat(parts)
    return rows[:max_rows] if max_rows else rows


def validation_loss(model, rows, batch_size: int = 32) -> float:
    """Mean next-byte cross-entropy (nats/byte) of ``model`` over ``rows[N, L+1]``."""
    import torch
    import torch.nn.functional as F

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            b = rows[i : i + batch_size]
            logits = model(b[:, :-1])
            total += float(
                F.cross_entropy(logits.reshape(-1, 256), b[:, 1:].reshape(-1), reduction="sum")
            )
            count += b[:, 1:].numel()
            emit_progress("evaluate", i + len(b), len(rows), unit="rows", phase="validation")
    return total / count


def generate(model, prompt: str, n_bytes: int, temperature: float = 0.0, seed: int = 0) -> str:
    """Continue ``prompt`` by ``n_bytes`` bytes; decoded as UTF-8 with replacement."""
    import torch

    model.eval()
    gen = torch.Generator().manual_seed(seed)
    ctx = model.cfg.context_length
    idx = torch.tensor([list(prompt.encode("utf-8")) or [0]], dtype=torch.long)
    with torch.no_grad():
        for k in range(n_bytes):
            logits = model(idx[:, -ctx:])[:, -1, :]
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
        workloads.args.ArgError: bad arguments (one line each).
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
    rows = load_validation(args.dataset, args.max_val_rows)
    rows = rows[:, : model.cfg.context_length + 1]
    loss = validation_loss(model, rows, args.batch_size)
    sample = generate(model, args.prompt, args.sample_bytes, args.temperature, args.seed)
    return {
        "val_loss": loss,
        "val_bytes": int(rows[:, 1:].numel()),
        "sample": sample,
        "checkpoint": str(path),
        "step": int(meta.get("step", 0)),
    }


if __name__ == "__main__":
    run_cli("evaluate", main)
