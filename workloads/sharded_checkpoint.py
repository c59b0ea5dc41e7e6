"""Sharded checkpoints of :mod:`workloads.train_lm` (``sharded_checkpoints``, issue 47 item 4):
``torch.distributed.checkpoint`` (DCP), every rank writing its own shard in parallel.

Layout of one checkpoint (the files of every rank, merged by Ray Train's upload of each
worker's folder into one ``checkpoint_<step>`` folder, or written into one folder directly)::

    dcp/.metadata          DCP's global plan (rank 0, the coordinator)
    dcp/__<rank>_0.distcp  each rank's shards: model parameters and optimizer state
    scheduler.pt           the LR scheduler's state (rank 0)
    hf/...                 the last checkpoint only: the Hugging Face folder (rank 0, from the
                           full weights every rank helped gather, workloads/hf_export.py)
    manifest.json          rank 0, last: every rank's files with size and sha256, and metadata
                           (``sharded``: the workers that wrote it, ``step``, ``model``, ...)

Integrity and commit: each rank writes its files into a temporary sibling folder and renames it
(:func:`save`), hashes them, and the ranks' ``{file: {sha256, size}}`` entries are gathered to rank
0 (a collective) only after DCP's save returned on every rank; rank 0 writes the manifest over
all of them last (:func:`workloads.checkpoint.write_manifest`). A reader verifies every listed
file (:func:`workloads.checkpoint.verify_checkpoint`), so a checkpoint missing any rank's
shard, or with one damaged, is refused like any damaged checkpoint (the resume then takes the
newest one that verifies).

State: the model's and the optimizer's state dicts from
``torch.distributed.checkpoint.state_dict.get_state_dict`` (FQN keys, DTensor shards under FSDP2;
:class:`workloads.model_torch.MuonAdamW` as its two optimizers). Restore
(:func:`load_into`) builds the model and optimizer for the new run's workers first (any number:
DCP reads each rank's part of every tensor from whichever shards hold it, so a 2-worker FSDP
checkpoint resumes on 1 worker, sharded or not) and loads into them. :func:`load_model_state`
reads the weights alone into an unsharded model (no process group): ``evaluate``, the Hugging
Face export of :mod:`workloads.hf_from_checkpoint`.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

DCP_DIR = "dcp"
SCHEDULER = "scheduler.pt"


def _optimizers(optimizer: Any) -> list[Any]:
    """The torch optimizers behind ``optimizer`` (MuonAdamW: its Muon and AdamW)."""
    if hasattr(optimizer, "muon") and hasattr(optimizer, "adamw"):
        return [optimizer.muon, optimizer.adamw]
    return [optimizer]


def _rank_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def save(
    directory: str | os.PathLike[str],
    *,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    step: int,
    metadata: dict[str, Any],
    hf_files: dict[str, bytes] | None = None,
) -> Path:
    """Every rank's part of the checkpoint into ``directory`` (a folder of this rank's own; the
    ranks' folders are merged afterwards) - a collective: every rank calls it. Rank 0 adds
    ``scheduler.pt``, ``hf_files`` and, last, the manifest of every rank's files. Returns
    ``directory``."""
    import io

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    from workloads.checkpoint import file_entries, write_manifest

    rank, world = _rank_world()
    target = Path(directory)
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    model_sd, optim_sd = get_state_dict(model, _optimizers(optimizer))
    dcp.save(
        {"model": model_sd, "optim": optim_sd},
        storage_writer=dcp.FileSystemWriter(str(tmp / DCP_DIR)),
        no_dist=world == 1,
    )
    if rank == 0:
        buf = io.BytesIO()
        torch.save(scheduler.state_dict() if scheduler is not None else {}, buf)
        (tmp / SCHEDULER).write_bytes(buf.getvalue())
        for rel, data in (hf_files or {}).items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
    mine = file_entries(tmp)
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    entries: list[Any] = [mine]
    if world > 1:
        entries = [None] * world
        dist.all_gather_object(entries, mine)
    if rank == 0:
        merged: dict[str, Any] = {}
        for part in entries:
            overlap = set(merged) & set(part)
            if overlap:
                raise RuntimeError(f"ranks wrote the same checkpoint files: {sorted(overlap)}")
            merged.update(part)
        write_manifest(target, merged, {**metadata, "step": int(step), "sharded": world})
    return target


def load_into(path: str | os.PathLike[str], model: Any, optimizer: Any, scheduler: Any) -> None:
    """Load a sharded checkpoint into this run's (already wrapped) ``model``, ``optimizer`` and
    ``scheduler``: every rank calls it (DCP reads each rank's part, whatever the number of
    workers that wrote it)."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    optimizers = _optimizers(optimizer)
    model_sd, optim_sd = get_state_dict(model, optimizers)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(
        state,
        storage_reader=dcp.FileSystemReader(str(Path(path) / DCP_DIR)),
        no_dist=_rank_world()[1] == 1,
    )
    set_state_dict(
        model, optimizers, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    if hasattr(optimizer, "_share_groups"):  # MuonAdamW: its groups were replaced
        optimizer._share_groups()
    if scheduler is not None:
        saved = torch.load(Path(path) / SCHEDULER, map_location="cpu", weights_only=True)
        if saved:
            scheduler.load_state_dict(saved)


def load_model_state(path: str | os.PathLike[str], model: Any) -> None:
    """The weights of a sharded checkpoint into the unsharded ``model`` (no process group
    needed; the optimizer's shards are not read)."""
    import torch.distributed.checkpoint as dcp

    state = {"model": model.state_dict()}
    dcp.load(state, storage_reader=dcp.FileSystemReader(str(Path(path) / DCP_DIR)), no_dist=True)
    model.load_state_dict(state["model"])
