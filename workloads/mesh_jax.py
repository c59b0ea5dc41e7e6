"""The JAX trainer's mesh and partition rules: a ``jax.sharding.Mesh`` of axes ``data`` x
``fsdp`` x ``tensor`` (sizes from :func:`contract.mesh.mesh_shape`), where each parameter and
optimizer-state leaf lives, and the activation constraints.

Mesh (:func:`make_mesh`): the devices in the order ``jax.experimental.mesh_utils`` gives for the
physical topology (TPU); across several TPU slices ``create_hybrid_device_mesh`` with the slices
on the outer ``data`` axis (DCN) and ``fsdp`` / ``tensor`` inside a slice (ICI), as MaxText
does; devices without a ``slice_index`` (CPU, the emulated slices) in (process, id) order, so
consecutive processes share an ``fsdp`` group.

Partition rules (:func:`partition_spec`, by the leaf's pytree path and shape, so the same rule
places a parameter and each optimizer-state leaf of it: ``1/0/mu/blocks/0/qkv/w`` ends with the
parameter's path ``blocks/0/qkv/w``):

* ``tok`` ``[256, d]``, ``pos`` ``[T, d]``: ``P(None, "fsdp")`` (the embedding dimension);
* ``qkv/w`` ``[d, 3d]``, ``mlp1/w`` ``[d, h]``: ``P("fsdp", "tensor")`` (input rows on fsdp,
  output columns on tensor);
* ``proj/w`` ``[d, d]``, ``mlp2/w`` ``[h, d]``: ``P("tensor", "fsdp")``;
* everything else (LayerNorms, biases, the optimizer's step counts): replicated.

A dimension that does not divide by its axis' size, or an axis the mesh lacks (the 1-D
``data`` mesh of :func:`workloads.model_jax.data_mesh`), stays whole: on a data-only mesh every
leaf is replicated, the program before meshes. Activations (:func:`activation_constraint`): the
batch dimension over ``("data", "fsdp")``; the attention heads and the MLP's hidden units over
``tensor``. XLA inserts the parameter all-gathers and the gradient reduce-scatters; the loss is
the global-batch mean either way, so a sharded step computes the unsharded one's loss (to
floating-point reduction order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from contract.mesh import AXES, MeshShape

BATCH_AXES = ("data", "fsdp")
# (path suffix, the spec of a 2-D leaf with that suffix)
RULES: tuple[tuple[str, tuple[str | None, str | None]], ...] = (
    ("tok", (None, "fsdp")),
    ("pos", (None, "fsdp")),
    ("qkv/w", ("fsdp", "tensor")),
    ("mlp1/w", ("fsdp", "tensor")),
    ("proj/w", ("tensor", "fsdp")),
    ("mlp2/w", ("tensor", "fsdp")),
)


def make_mesh(shape: MeshShape, devices: list[Any] | None = None) -> Mesh:
    """The ``("data", "fsdp", "tensor")`` mesh of ``shape`` over ``devices`` (default: every
    device of every process); see the module docstring for the device order."""
    from jax.experimental import mesh_utils

    devs = list(devices if devices is not None else jax.devices())
    if len(devs) != shape.devices:
        raise ValueError(f"mesh {shape.describe()} needs {shape.devices} devices, got {len(devs)}")
    if shape.slices > 1 and all(hasattr(d, "slice_index") for d in devs):
        ici = (shape.data // shape.slices, shape.fsdp, shape.tensor)
        arr = mesh_utils.create_hybrid_device_mesh(ici, (shape.slices, 1, 1), devs)
    elif devs[0].platform == "tpu":
        arr = mesh_utils.create_device_mesh(shape.shape, devs)
    else:
        devs.sort(key=lambda d: (d.process_index, d.id))
        arr = np.array(devs, dtype=object).reshape(shape.shape)
    return Mesh(arr, AXES)


def _axis(mesh: Mesh, name: str | None, size: int) -> str | None:
    n = dict(mesh.shape).get(name, 1) if name else 1
    return name if n > 1 and size % n == 0 else None


def partition_spec(name: str, shape: tuple[int, ...], mesh: Mesh) -> P:
    """Where the leaf at path ``name`` (``blocks/0/qkv/w``, ``1/0/mu/tok``) of ``shape`` lives
    on ``mesh`` (the rules of the module docstring)."""
    if len(shape) == 2:
        for suffix, spec in RULES:
            if name == suffix or name.endswith("/" + suffix):
                return P(*(_axis(mesh, a, n) for a, n in zip(spec, shape, strict=True)))
    return P()


def path_name(path: tuple[Any, ...]) -> str:
    """A pytree path as ``blocks/0/qkv/w`` (the checkpoints' array names)."""
    parts = []
    for k in path:
        for attr in ("key", "idx", "name"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "/".join(parts)


def tree_shardings(tree: Any, mesh: Mesh) -> Any:
    """``tree``'s pytree of ``NamedSharding`` by :func:`partition_spec`."""
    return jax.tree_util.tree_map_with_path(
        lambda path, x: NamedSharding(mesh, partition_spec(path_name(path), np.shape(x), mesh)),
        tree,
    )


def place(tree: Any, mesh: Mesh) -> Any:
    """A pytree of host arrays (identical on every process) placed on ``mesh`` by the rules:
    each device gets its shard (``jax.make_array_from_callback``, across processes too)."""

    def put(path: tuple[Any, ...], x: Any) -> jax.Array:
        x = np.asarray(x)
        sharding = NamedSharding(mesh, partition_spec(path_name(path), x.shape, mesh))
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree_util.tree_map_with_path(put, tree)


def constrain(tree: Any, mesh: Mesh) -> Any:
    """``tree`` (inside a jitted function) held to the rules' shardings."""
    return jax.tree_util.tree_map_with_path(
        lambda path, x: jax.lax.with_sharding_constraint(
            x, NamedSharding(mesh, partition_spec(path_name(path), x.shape, mesh))
        ),
        tree,
    )


def batch_spec(mesh: Mesh) -> P:
    """The batch dimension over the mesh's ``data`` and ``fsdp`` axes (those it has)."""
    axes = tuple(a for a in BATCH_AXES if a in mesh.axis_names)
    return P(axes if len(axes) > 1 else axes[0])


def activation_constraint(mesh: Mesh) -> Callable[[jax.Array, str], jax.Array]:
    """``constrain(x, kind)`` for :func:`workloads.model_jax.forward`: ``resid`` ``[B, T, d]``
    (batch over data x fsdp), ``heads`` ``[B, T, H, D]`` (heads over tensor), ``hidden``
    ``[B, T, h]`` (hidden units over tensor)."""
    batch = batch_spec(mesh)[0]
    tensor = "tensor" if "tensor" in mesh.axis_names else None
    specs = {
        "resid": P(batch, None, None),
        "heads": P(batch, None, tensor, None),
        "hidden": P(batch, None, tensor),
    }

    def apply(x: jax.Array, kind: str) -> jax.Array:
        spec = specs[kind]
        if tensor and kind != "resid" and x.shape[2] % dict(mesh.shape)["tensor"]:
            spec = specs["resid"] if kind == "hidden" else P(batch, None, None, None)
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    return apply


def device_bytes(tree: Any, device: Any | None = None) -> int:
    """Bytes of ``tree``'s leaves that ``device`` (default: this process's first) holds."""
    device = device or jax.local_devices()[0]
    total = 0
    for leaf in jax.tree_util.tree_leaves(tree):
        for s in leaf.addressable_shards:
            if s.device == device:
                total += s.data.nbytes
    return total


def host_tree(tree: Any) -> Any:
    """``tree`` with every leaf a whole host NumPy array. A leaf sharded across processes is
    gathered (``multihost_utils.process_allgather``: a collective, so every process calls this,
    in the same order)."""
    from jax.experimental import multihost_utils

    def get(x: Any) -> np.ndarray:
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if x.sharding.is_fully_replicated:
                return np.asarray(x.addressable_data(0))
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    return jax.tree_util.tree_map(get, tree)


def needs_gather(tree: Any) -> bool:
    """Whether some leaf of ``tree`` is sharded across processes (:func:`host_tree` must run on
    every process)."""
    return any(
        isinstance(x, jax.Array)
        and not x.is_fully_addressable
        and not x.sharding.is_fully_replicated
        for x in jax.tree_util.tree_leaves(tree)
    )
