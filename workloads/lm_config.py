"""The byte-level language model's dimensions, shared by the PyTorch and JAX implementations
(``workloads/model_torch.py``, ``workloads/model_jax.py``). Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workloads.flops import flops_per_token


@dataclass(frozen=True)
class ModelConfig:
    """Model dimensions. ``context_length`` is the maximum sequence length T (bytes); the
    vocabulary is the 256 byte values. ``dropout`` is used by the PyTorch model only."""

    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    context_length: int = 256
    mlp_ratio: int = 4
    dropout: float = 0.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelConfig:
        """Pick the model keys out of a workload config (missing keys take defaults)."""
        names = cls.__dataclass_fields__
        return cls(**{k: config[k] for k in names if k in config and config[k] is not None})

    def flops_per_token(self) -> float:
        """Training FLOPs per token at full context (:func:`workloads.flops.flops_per_token`)."""
        return flops_per_token(self.d_model, self.n_layers, self.context_length, self.mlp_ratio)
