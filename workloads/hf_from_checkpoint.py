"""The Hugging Face model folder of an existing checkpoint: one written before the export
existed, or an intermediate one (a run writes ``hf/`` into its last checkpoint only,
:mod:`workloads.hf_export`).

``python -m workloads.hf_from_checkpoint CHECKPOINT OUT`` writes ``OUT``
(:func:`export_checkpoint`): byte for byte the folder a run writes, plus a ``manifest.json`` of
its files. A separate module
from :mod:`workloads.hf_export` because reading a torch checkpoint goes through
:mod:`workloads.model_torch`, which itself uses :mod:`workloads.hf_export` when it saves.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from workloads.checkpoint import CheckpointError, verify_checkpoint, write_checkpoint
from workloads.hf_export import hf_files
from workloads.lm_config import ModelConfig

# The JAX and TensorFlow checkpoints' weights file, in the JAX layout (model_jax.PARAMS,
# model_tf.PARAMS, model_torch.JAX_PARAMS / NPZ_FRAMEWORKS; here without importing them).
PARAMS_NPZ = "params.npz"
NPZ_FRAMEWORKS = ("jax", "tensorflow")


def checkpoint_arrays(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], ModelConfig]:
    """Verify a checkpoint of any of the three frameworks and read its weights in the JAX
    layout: ``params.npz`` as it is (``jax``, ``tensorflow``), ``model.pt`` through
    :func:`workloads.model_torch.load_checkpoint` (``torch``; imports torch).

    Raises:
        workloads.checkpoint.CheckpointError: it does not verify or its weights are unreadable.
    """
    meta = verify_checkpoint(path)
    cfg = ModelConfig(**meta["model"])
    if meta.get("framework") in NPZ_FRAMEWORKS:
        npz = Path(path) / PARAMS_NPZ
        try:
            with np.load(npz, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}, cfg
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{npz}: unreadable npz: {e}") from None
    from workloads.model_torch import jax_arrays, load_checkpoint

    model, _, _ = load_checkpoint(path)
    return jax_arrays(model), cfg


def export_checkpoint(path: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Write the Hugging Face folder of an existing checkpoint (one written before the export
    existed, or an intermediate one: only a run's last checkpoint has ``hf/``) to ``out``
    (replaced if it exists), atomically, with a ``manifest.json`` of its files
    (:func:`workloads.checkpoint.write_checkpoint`; the loaders ignore it); returns ``out``.
    ``python -m workloads.hf_from_checkpoint CHECKPOINT OUT`` does the same.

    Raises:
        workloads.checkpoint.CheckpointError: as :func:`checkpoint_arrays`.
        KeyError, ValueError: the weights do not fit the checkpoint's model config.
    """
    arrays, cfg = checkpoint_arrays(path)
    meta = {"source": str(path), "model": asdict(cfg), "format": "huggingface"}
    return write_checkpoint(out, hf_files(arrays, cfg, folder=""), meta)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=export_checkpoint.__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="checkpoint folder (torch, jax or tensorflow)")
    parser.add_argument("out", help="folder to create: the Hugging Face model folder")
    ns = parser.parse_args()
    try:
        print(export_checkpoint(ns.checkpoint, ns.out))
    except (CheckpointError, KeyError, ValueError, OSError) as e:
        sys.exit(f"hf_from_checkpoint: {e}")  # one line, exit status 1
