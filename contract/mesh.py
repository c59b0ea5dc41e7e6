"""The JAX trainer's device mesh: its axes ``data`` x ``fsdp`` x ``tensor`` and their sizes,
from the worker group (hosts x chips per host, slices) and the job's arguments, the split
between ``data`` and ``fsdp`` from the memory estimate (:mod:`contract.train_fit`) unless the
job sets it. Read by the trainer (:mod:`workloads.train_lm_jax`, which builds the
``jax.sharding.Mesh``) and by ``raygke check`` (:mod:`components.raycrs.training_fit`), so both
size the mesh the same way.

Standard library only.

The layout is MaxText's: slices on the outer ``data`` axis (data parallelism across slices,
over DCN), ``fsdp`` and ``tensor`` inside one slice (over ICI): ``fsdp * tensor`` divides the
devices of one slice, and ``data = devices / (fsdp * tensor)`` is a multiple of the slices.
``parallelism``:

* ``data``: every device holds a replica (``fsdp`` 1): the trainer before meshes;
* ``fsdp``: parameters and optimizer state sharded over ``shard_degree`` devices (default: every
  device of one slice / ``tensor``);
* ``auto``: ``data`` when a replica fits a device with margin
  (:func:`contract.train_fit.choose_parallelism`), else ``shard_degree`` when set, else the
  smallest fsdp degree dividing a slice whose estimate fits with that margin
  (:func:`contract.train_fit.auto_shard_degree`), else the whole slice. Memory unknown (a CPU
  device): ``data``.

``tensor`` (``tensor_degree``, asked for only): attention heads and the MLP's hidden units split
over that many devices; it must divide ``n_heads``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contract.errors import ConfigurationError

AXES = ("data", "fsdp", "tensor")
PARALLELISMS = ("auto", "data", "fsdp")


class MeshError(ConfigurationError):
    """Mesh arguments that do not fit the devices; ``field`` is the argument at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class MeshShape:
    """Axis sizes of the mesh and how they were chosen.

    Attributes:
        data: replicas (data parallelism; slices are its outer part).
        fsdp: devices parameters and optimizer state are sharded over.
        tensor: devices heads and MLP columns are split over.
        slices: TPU slices (1 elsewhere).
        reason: why this split (printed by the trainer).
    """

    data: int
    fsdp: int
    tensor: int = 1
    slices: int = 1
    reason: str = ""

    @property
    def devices(self) -> int:
        return self.data * self.fsdp * self.tensor

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.data, self.fsdp, self.tensor)

    @property
    def parallelism(self) -> str:
        """``fsdp`` when the state is sharded (fsdp or tensor > 1), else ``data``."""
        return "fsdp" if self.fsdp * self.tensor > 1 else "data"

    def describe(self) -> str:
        """``data 2 x fsdp 4 x tensor 1 (2 slices)``."""
        s = f"data {self.data} x fsdp {self.fsdp} x tensor {self.tensor}"
        return s + (f" ({self.slices} slices)" if self.slices > 1 else "")


def topology_chips(topology: str) -> int:
    """Chips of a TPU topology (``4x4`` -> 16, ``2x2x2`` -> 8)."""
    return math.prod(int(x) for x in topology.lower().split("x"))


def slices_from_scaling(scaling: Mapping[str, Any] | None, workers: int) -> int:
    """TPU slices of a run of ``workers`` Ray Train workers with the ``scaling`` the stack gave
    it (:func:`components.raycrs.scaling.scaling_config_for_job`: ``num_workers`` = hosts x
    slices, ``resources_per_worker = {"TPU": chips_per_host}``, ``topology``); 1 without a TPU
    topology."""
    if not scaling or not scaling.get("use_tpu") or not scaling.get("topology"):
        return 1
    per_host = (scaling.get("resources_per_worker") or {}).get("TPU") or 1
    hosts = max(1, topology_chips(str(scaling["topology"])) // int(per_host))
    return max(1, workers // hosts)


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def mesh_shape(
    devices: int,
    *,
    slices: int = 1,
    parallelism: str = "auto",
    shard_degree: int | None = None,
    tensor: int = 1,
    n_heads: int | None = None,
    auto: Callable[[list[int]], tuple[int, str]] | None = None,
) -> MeshShape:
    """The mesh of ``devices`` devices over ``slices`` slices (see the module docstring).

    Args:
        auto: for ``parallelism: auto``, the fit estimate's pick among the candidate fsdp
            degrees (the divisors of a slice's devices / ``tensor``, ascending): ``(degree,
            reason)``; None: ``data`` (memory unknown).

    Raises:
        MeshError: ``tensor`` does not divide ``n_heads`` or a slice's devices, or
            ``shard_degree`` does not divide a slice's devices / ``tensor``; ``field`` names the
            argument.
    """
    slices = max(1, slices)
    if devices % slices:
        raise MeshError("scaling", f"{devices} devices do not divide over {slices} slices")
    per_slice = devices // slices
    if n_heads is not None and n_heads % tensor:
        raise MeshError(
            "tensor_degree", f"tensor_degree {tensor} does not divide n_heads {n_heads}"
        )
    if per_slice % tensor:
        raise MeshError(
            "tensor_degree",
            f"tensor_degree {tensor} does not divide the {per_slice} devices of a slice",
        )
    room = per_slice // tensor  # the most devices fsdp may span (within one slice)
    if shard_degree is not None and room % shard_degree:
        raise MeshError(
            "shard_degree",
            f"shard_degree {shard_degree} does not divide the {room} devices of a slice"
            + (f" over tensor_degree {tensor}" if tensor > 1 else "")
            + " (fsdp shards within a slice; slices replicate on the data axis)",
        )
    if parallelism == "data":
        fsdp, reason = 1, "set by the parallelism argument"
    elif parallelism == "fsdp":
        fsdp, reason = shard_degree or room, "set by the parallelism argument"
    elif auto is None:
        fsdp, reason = 1, "auto: device memory unknown, replicated"
    else:
        fsdp, reason = auto(divisors(room))
        if fsdp > 1 and shard_degree is not None:
            fsdp = shard_degree
    return MeshShape(devices // (fsdp * tensor), fsdp, tensor, slices, reason)
