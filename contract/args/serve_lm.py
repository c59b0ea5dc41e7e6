"""Arguments of the Ray Serve application :mod:`workloads.serve_lm`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from contract.args.base import WorkloadArgs, arg


def _upper_bounds(values: Mapping[str, Any]) -> str | None:
    """``min_replicas`` <= ``max_replicas``."""
    lo, hi = values.get("min_replicas"), values.get("max_replicas")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        return f"min_replicas {lo} > max_replicas {hi}"
    return None


def _batch_fits(values: Mapping[str, Any]) -> str | None:
    """``max_ongoing_requests`` >= ``max_batch_size``: a replica only ever holds
    ``max_ongoing_requests`` requests, so a larger batch could never fill (Serve warns of the
    same in ``ray/serve/batching.py``, ``_warn_if_max_batch_size_exceeds_max_ongoing_requests``)."""
    batch, ongoing = values.get("max_batch_size"), values.get("max_ongoing_requests")
    if isinstance(batch, int) and isinstance(ongoing, int) and ongoing < batch:
        return (
            f"max_ongoing_requests {ongoing} < max_batch_size {batch}: a batch could never fill; "
            f"set max_ongoing_requests >= {batch}"
        )
    return None


@dataclass(frozen=True)
class ServeLmArgs(WorkloadArgs):
    """Arguments of the Ray Serve application :mod:`workloads.serve_lm` (its builder
    ``workloads.serve_lm:build_app`` receives them as the Serve config's ``args``)."""

    WORKLOAD: ClassVar[str] = "serve_lm"
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = (
        _upper_bounds,
        _batch_fits,
    )

    checkpoint: str | None = arg(
        None,
        "a checkpoint folder (its manifest verified), or an experiment folder whose newest "
        "verifying checkpoint_* is served; required",
        "path or URI",
    )
    max_prompt_bytes: int = arg(
        1024, "longest prompt accepted (UTF-8 bytes); longer: 400", "bytes", minimum=1
    )
    max_new_tokens: int = arg(
        256, "most tokens one request may ask for; more: 400", "tokens", minimum=1
    )
    default_new_tokens: int = arg(
        64,
        "tokens generated when a request gives no max_new_tokens (at most max_new_tokens)",
        "tokens",
        minimum=1,
    )
    max_body_bytes: int = arg(
        16384, "largest request body accepted; larger: 413", "bytes", minimum=64
    )
    max_batch_size: int = arg(
        8,
        "most requests a replica decodes together, one forward per token for all (also "
        "@serve.batch max_batch_size); 1 = unbatched",
        "requests",
        minimum=1,
    )
    batch_wait_timeout_s: float = arg(
        0.01,
        "longest wait for a batch to fill (@serve.batch batch_wait_timeout_s)",
        "s",
        minimum=0,
    )
    min_replicas: int = arg(1, "autoscaling: fewest replicas", "replicas", minimum=0)
    max_replicas: int = arg(1, "autoscaling: most replicas", "replicas", minimum=1)
    target_ongoing_requests: float = arg(
        4.0, "autoscaling: ongoing requests per replica Serve aims at", "requests", minimum=0.1
    )
    max_ongoing_requests: int = arg(
        32,
        "requests one replica takes at once (more wait in the proxy); at least max_batch_size, "
        "so a batch can fill",
        "requests",
        minimum=1,
    )
    num_cpus: float = arg(1.0, "CPUs each replica reserves", "CPUs", minimum=0)
    num_gpus: float = arg(
        0.0, "GPUs each replica reserves (the model moves to cuda)", "GPUs", minimum=0
    )
    torch_threads: int | None = arg(
        None,
        "torch intra- and inter-op threads per replica; None = the replica's Ray CPUs (num_cpus, "
        "at least 1)",
        "threads",
        minimum=1,
    )
