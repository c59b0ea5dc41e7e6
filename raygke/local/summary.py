"""The summary of a ``raygke local run``: the figures of its jobs' results in one dict
(:func:`summarize`), which ``raygke local run`` prints (:mod:`raygke.local.run`) and writes with
``--summary-json``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from contract.registry import with_role
from raygke.local.jobs import trained_result

SUMMARY_KEYS = (
    "rows",
    "val_rows",
    "files",
    "skipped_by",
    "steps",
    "first_loss",
    "last_loss",
    "val_loss",
    "xz_nats_per_byte",
    "val_vs_xz",
    "ppmd_nats_per_byte",
    "val_vs_ppmd",
    "tokens_per_s",
    "mfu",
    "peak_flops",
    "precision",
    "checkpoint",
    "hf_model",
    "sample",
)


def _role_result(results: Mapping[str, Mapping[str, Any]], role: str) -> Mapping[str, Any]:
    return next((results[n] for n in with_role(role) if results.get(n)), {})


def summarize(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The summary dict (keys :data:`SUMMARY_KEYS`, None where no job produced the value)."""
    prep = _role_result(results, "data")
    train = trained_result(results)
    ev = _role_result(results, "evaluator")
    checkpoint = ev.get("checkpoint") or train.get("checkpoint")
    return {
        "rows": prep.get("rows"),
        # the rows evaluate computed the loss on (its max_val_rows draw), else the split's
        "val_rows": ev.get("val_rows", prep.get("val_rows")),
        "files": prep.get("files"),
        "skipped_by": {k: v for k, v in (prep.get("skipped_by") or {}).items() if v} or None,
        "steps": train.get("steps"),
        "first_loss": train.get("first_loss"),
        "last_loss": train.get("last_loss"),
        "val_loss": ev.get("val_loss"),
        # xz -9e on the same validation rows (workloads/evaluate.py xz_nats_per_byte); < 1 beats it
        "xz_nats_per_byte": ev.get("xz_nats_per_byte"),
        "val_vs_xz": ev.get("val_vs_xz"),
        # PPMd order 16 (7-Zip's text compressor) on the same rows (evaluate ppmd_nats_per_byte)
        "ppmd_nats_per_byte": ev.get("ppmd_nats_per_byte"),
        "val_vs_ppmd": ev.get("val_vs_ppmd"),
        "tokens_per_s": train.get("tokens_per_s"),
        # model FLOP/s over the workers' measured matmul peak in the run's dtype
        # (workloads/precision.py mfu_metrics)
        "mfu": train.get("mfu"),
        "peak_flops": train.get("peak_flops"),
        "precision": train.get("precision"),
        "checkpoint": checkpoint,
        "hf_model": hf_model(checkpoint),
        "sample": ev.get("sample"),
    }


def hf_model(checkpoint: str | None) -> str | None:
    """The Hugging Face model folder of a checkpoint (``<checkpoint>/hf``, which a finished
    trainer writes into its last checkpoint: ``workloads/hf_export.py``): a local one when it
    exists, a remote one (``gs://``) as named; None without a checkpoint."""
    from contract.checkpoint import HF_SUBDIR

    if not checkpoint:
        return None
    path = f"{checkpoint.rstrip('/')}/{HF_SUBDIR}"
    return path if "://" in checkpoint or os.path.isdir(path) else None
