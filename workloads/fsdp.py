"""PyTorch FSDP2 for :mod:`workloads.train_lm`: the parallelism choice, the sharding, and the
full state dicts a sharded run checkpoints.

* choice (:func:`decide_parallelism`): ``args.parallelism`` ``ddp`` or ``fsdp``; ``auto`` reads
  :func:`contract.train_fit.choose_parallelism` over the same estimate ``raygke check`` uses
  (:mod:`contract.train_fit`), with this device's memory (:func:`device_memory`): a GPU's total
  memory, a CPU worker's share of its host's (or container's) memory; ``device_memory_gb``
  when the job sets it (a smaller device emulated). Degree: ``shard_degree``,
  else every worker; it must divide the workers (HSDP: a 2-D mesh ``(replicate, shard)``,
  replicated across the groups, sharded within).
* sharding (:func:`fsdp_wrap`): ``torch.distributed.fsdp.fully_shard`` per transformer block
  (``model.blocks``: a fine-tuned ``transformers`` model's decoder layers,
  :class:`workloads.hf_model.HFCausalLM`), then the root (the embeddings, the final LayerNorm; the tied output head is the token
  embedding), after the model is on its device (Ray Train's ``prepare_model`` is DDP; FSDP2
  is applied here instead, on the process group Ray Train's TorchTrainer set up: NCCL on GPUs,
  gloo on CPUs). Mixed precision from the run's precision (:mod:`workloads.precision`): on a
  GPU in bf16, ``MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)`` (bf16
  compute, float32 gradient reduction); elsewhere float32 parameters and reduction, the compute
  dtype the CPU rule chose applied by autocast as under DDP. Parameters and optimizer state
  stay float32 shards.
* checkpoints (:func:`full_state`): every rank takes part in gathering the full model state dict
  (``torch.distributed.checkpoint.state_dict.get_model_state_dict`` with
  ``full_state_dict=True, cpu_offload=True``: rank 0 gets it) and the full optimizer state
  (each sharded tensor's ``full_tensor()``), which rank 0 writes with the unchanged
  :mod:`workloads.checkpoint` format (atomic commit, sha256 manifest, ``hf/`` export), the
  same files as a DDP run's. On restore every rank loads that checkpoint before sharding
  (``fully_shard`` keeps each rank's shard of the loaded parameters) and
  :func:`shard_optimizer_state` cuts the optimizer state to the parameters' shards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract.train_fit import LmShape, assumed_memory, choose_parallelism, estimate

MODES = ("ddp", "fsdp")


def device_memory(device: Any, local_world: int = 1) -> float:
    """Bytes of memory one worker may use on ``device``: a CUDA device's total memory; on a CPU
    the host's physical memory (or the container's cgroup limit, when lower) over the workers
    sharing the host (``local_world``); 0 when unknown."""
    import torch

    if device.type == "cuda":
        return float(torch.cuda.get_device_properties(device).total_memory)
    from workloads.common import host_memory

    total = host_memory()
    return total / max(1, local_world)


def decide_parallelism(
    args: Any,
    device: Any,
    world: int,
    local_world: int = 1,
    compute: str = "fp32",
    shape: LmShape | None = None,
) -> dict[str, Any]:
    """``{"mode": "ddp"|"fsdp", "degree": int, "reason": str, "bytes_per_device": float}`` for
    this run (see the module docstring); ``args``: :class:`contract.args.train_lm.TrainLmArgs`
    with ``context_length`` resolved; ``shape``: the model's sizes when not ``args``' (a
    fine-tuned model's, :func:`workloads.hf_model.lm_shape`).

    Raises:
        ValueError: ``shard_degree`` does not divide the workers.
    """
    if shape is None:
        shape = LmShape(args.d_model, args.n_layers, args.context_length or 256, args.mlp_ratio)
    kind = "gpu" if device.type == "cuda" else "cpu"
    memory, note = assumed_memory(
        device_memory(device, local_world), getattr(args, "device_memory_gb", None)
    )
    common = {
        "rows": args.batch_size,
        "optimizer": args.optimizer,
        "compute": compute,
        "checkpointing": args.activation_checkpointing,
        "memory": memory,
        "kind": kind,
    }
    replica = estimate(shape, parallelism="ddp", **common)
    if args.parallelism == "auto":
        mode = choose_parallelism(replica) if world > 1 else "ddp"
        reason = f"auto: a replica needs {replica.describe()}{note}"
    else:
        mode, reason = args.parallelism, "set by the parallelism argument"
    degree = 1
    est = replica
    if mode == "fsdp":
        degree = args.shard_degree or world
        if degree > world or world % degree:
            raise ValueError(
                f"argument 'shard_degree' of workload train_lm is {degree}, which does not "
                f"divide the run's {world} workers (FSDP shards over groups of shard_degree "
                "workers and replicates across them)"
            )
        est = estimate(shape, parallelism="fsdp", degree=degree, **common)
    return {"mode": mode, "degree": degree, "reason": reason, "bytes_per_device": est.total}


def fsdp_wrap(model: Any, *, device: Any, precision: str, degree: int, world: int) -> Any:
    """``model`` (on ``device``) sharded with FSDP2 over ``degree`` of the ``world`` workers
    (see the module docstring); returns the same module, its parameters now DTensor shards."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if device.type == "cuda" and precision == "bf16":
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    else:
        policy = MixedPrecisionPolicy()
    if degree == world:
        mesh = init_device_mesh(device.type, (world,))
    else:
        mesh = init_device_mesh(
            device.type, (world // degree, degree), mesh_dim_names=("replicate", "shard")
        )
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model


def is_sharded(model: Any) -> bool:
    """Whether ``model``'s parameters are DTensors (FSDP2)."""
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in model.parameters())


def local_param_bytes(model: Any) -> int:
    """Bytes of the parameters this rank holds (its shards under FSDP, everything under DDP)."""
    from torch.distributed.tensor import DTensor

    total = 0
    for p in model.parameters():
        local = p.to_local() if isinstance(p, DTensor) else p
        total += local.numel() * local.element_size()
    return total


def _gather(value: Any, keep: bool) -> Any:
    """``value`` (a nested state dict) with every DTensor gathered to a full CPU tensor (a
    collective: every rank calls it, in the same order); None where not ``keep``."""
    import torch
    from torch.distributed.tensor import DTensor

    if isinstance(value, DTensor):
        full = value.full_tensor()
        return full.cpu() if keep else None
    if isinstance(value, Mapping):
        return {k: _gather(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_gather(v, keep) for v in value]
    if keep and isinstance(value, torch.Tensor):
        return value.detach().cpu()
    return value


def full_state(model: Any, optimizer: Any, rank: int) -> tuple[dict[str, Any], Any] | None:
    """The full model and optimizer state dicts of a sharded ``model``: every rank calls it (the
    gathers are collectives); rank 0 gets ``(model_state, optimizer_state)``, the others None.
    The optimizer's is its ``state_dict()`` (for :class:`workloads.model_torch.MuonAdamW`
    ``{"muon": ..., "adamw": ...}``) with each sharded tensor made whole: the format a DDP run
    writes."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_state = get_model_state_dict(model, options=options)
    opt_state = _gather(optimizer.state_dict(), keep=rank == 0)
    return (dict(model_state), opt_state) if rank == 0 else None


def _shard_state(state: dict[str, Any], opt: Any) -> dict[str, Any]:
    """One torch optimizer's full ``state_dict`` with each tensor of a DTensor parameter's shape
    cut to that parameter's shard (``distribute_tensor(..., src_data_rank=None)``: every rank
    holds the full tensor, so no communication)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    params = [p for g in opt.param_groups for p in g["params"]]
    ids = [i for g in state["param_groups"] for i in g["params"]]
    by_id = dict(zip(ids, params, strict=True))
    out = dict(state)
    out["state"] = {}
    for i, entry in state["state"].items():
        p = by_id[i]
        new = dict(entry)
        if isinstance(p, DTensor):
            for k, v in entry.items():
                if hasattr(v, "shape") and tuple(v.shape) == tuple(p.shape):
                    new[k] = distribute_tensor(
                        v.to(p.device_mesh.device_type),
                        p.device_mesh,
                        p.placements,
                        src_data_rank=None,
                    )
        out["state"][i] = new
    return out


def shard_optimizer_state(optimizer: Any, state: Mapping[str, Any]) -> dict[str, Any]:
    """A full optimizer state (what :func:`full_state` or a DDP run saved) for ``optimizer``
    built over sharded parameters: its ``load_state_dict`` argument."""
    if hasattr(optimizer, "muon") and set(state) == {"muon", "adamw"}:
        return {
            "muon": _shard_state(dict(state["muon"]), optimizer.muon),
            "adamw": _shard_state(dict(state["adamw"]), optimizer.adamw),
        }
    return _shard_state(dict(state), optimizer)
