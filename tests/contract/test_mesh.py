"""The JAX trainer's mesh sizes (contract/mesh.py): slices from the scaling config, the
data/fsdp/tensor split by parallelism, shard_degree, tensor_degree and the estimate's pick."""

from __future__ import annotations

import pytest

from contract.args.base import ArgError
from contract.args.train_lm_jax import TrainLmJaxArgs
from contract.mesh import MeshError, mesh_shape, slices_from_scaling
from contract.train_fit import GB, LmShape, auto_shard_degree, estimate

V6E_4X4 = {
    "use_tpu": True,
    "topology": "4x4",
    "accelerator_type": "TPU-V6E",
    "num_workers": 8,
    "resources_per_worker": {"TPU": 4},
}


def test_slices_come_from_the_workers_over_a_slices_hosts() -> None:
    assert slices_from_scaling(V6E_4X4, 8) == 2  # 4 hosts of 4 chips per 4x4 slice
    assert slices_from_scaling(V6E_4X4, 4) == 1  # elastic, at its minimum
    assert slices_from_scaling({**V6E_4X4, "topology": "2x2x2"}, 4) == 2
    assert slices_from_scaling(None, 3) == 1
    assert slices_from_scaling({"use_gpu": True, "num_workers": 8}, 8) == 1


def test_slices_stay_on_the_data_axis_and_fsdp_within_a_slice() -> None:
    m = mesh_shape(32, slices=2, parallelism="fsdp")
    assert (m.shape, m.parallelism) == ((2, 16, 1), "fsdp")
    assert mesh_shape(32, slices=2, parallelism="data").shape == (32, 1, 1)
    assert mesh_shape(8, parallelism="fsdp", shard_degree=4).shape == (2, 4, 1)
    assert mesh_shape(8, parallelism="fsdp", shard_degree=2, tensor=2, n_heads=4).shape == (2, 2, 2)
    with pytest.raises(MeshError) as e:
        mesh_shape(32, slices=2, parallelism="fsdp", shard_degree=32)
    assert e.value.field == "shard_degree" and "16 devices of a slice" in str(e.value)
    with pytest.raises(MeshError) as e:
        mesh_shape(8, tensor=2, n_heads=3)
    assert e.value.field == "tensor_degree"


def test_auto_is_data_only_unless_the_estimate_needs_fsdp() -> None:
    assert mesh_shape(16).shape == (16, 1, 1)  # memory unknown: replicated, as before meshes
    opts = {"rows": 2, "optimizer": "muon", "compute": "bf16", "framework": "jax", "kind": "tpu"}
    for dims, want in (((128, 4, 256), 1), ((4096, 32, 256), 8)):
        shape = LmShape(*dims)
        replica = estimate(shape, parallelism="replicated", memory=32 * GB, **opts)

        def sharded(d: int, shape: LmShape = shape) -> object:
            return estimate(shape, parallelism="fsdp", degree=d, memory=32 * GB, **opts)

        m = mesh_shape(16, auto=lambda c, r=replica, f=sharded: auto_shard_degree(r, f, c))
        assert m.fsdp == want, dims
        assert m.reason.startswith("auto: ")


def test_the_jax_trainers_arguments_default_to_todays_replicas() -> None:
    a = TrainLmJaxArgs.parse({})
    assert (a.parallelism, a.shard_degree, a.tensor_degree) == ("auto", None, 1)
    with pytest.raises(ArgError, match="tensor_degree 3 does not divide n_heads 4"):
        TrainLmJaxArgs.parse({"tensor_degree": 3})
    with pytest.raises(ArgError, match="shard_degree is for parallelism fsdp"):
        TrainLmJaxArgs.parse({"parallelism": "data", "shard_degree": 2})
