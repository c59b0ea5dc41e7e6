"""Keys a stack file may not set because their value is derived, or because they were removed:
one table, with the explanation a refused key gets instead of "unknown key (check its spelling)".

:func:`components.stack.loader.format_validation_error` looks an ``extra_forbidden`` error up
here by its model path (list indices dropped, the node pool kind kept: ``node_pools.tpu.
machine_type``); ``docs/stack-config.md`` lists the table (:mod:`components.config.reference`).
Derived values come from the catalog (:mod:`components.catalog`), as the builders derive them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from components import catalog


@dataclass(frozen=True)
class KeyHint:
    """Why a key cannot be set, and what to write instead.

    Attributes:
        where: the model path of the key (``node_pools.tpu.machine_type``; list indices dropped,
            a node pool's kind kept as ``cpu``/``tpu``/``gpu``).
        doc: the same path as the reference writes it (``node_pools[] (TPU pool): machine_type``).
        kind: ``derived`` (the value comes from other keys) or ``removed`` (no longer a key).
        text: the explanation, printed after the field path.
        example: the derived value for the block the key was written in (its mapping), e.g.
            ``ct6e-standard-4t for v6e 4x4``; None when it cannot be derived from that block.
    """

    where: str
    doc: str
    kind: Literal["derived", "removed"]
    text: str
    example: Callable[[Mapping[str, Any]], str | None] | None = None

    def message(self, block: Any) -> str:
        """The explanation, with the derived value for ``block`` when it can be computed."""
        shown = None
        if self.example is not None and isinstance(block, Mapping):
            try:
                shown = self.example(block)
            except (ValueError, KeyError, TypeError, AttributeError):  # the block is invalid too
                shown = None
        return f"{self.text} ({shown})" if shown else self.text


def _tpu_slice(block: Mapping[str, Any]) -> tuple[catalog.TpuSlice, str] | None:
    tpu = block.get("tpu")
    if not isinstance(tpu, Mapping):
        return None
    gen, topo = tpu.get("generation"), tpu.get("topology")
    if not isinstance(gen, str) or not isinstance(topo, str):
        return None
    return catalog.tpu_slice(gen, topo), f"{gen} {topo}"


def _tpu_fact(fact: Callable[[catalog.TpuSlice], Any]) -> Callable[[Mapping[str, Any]], str | None]:
    def example(block: Mapping[str, Any]) -> str | None:
        found = _tpu_slice(block)
        return f"{fact(found[0])} for {found[1]}" if found else None

    return example


def _tpu_spec_fact(
    fact: Callable[[catalog.TpuSlice], Any],
) -> Callable[[Mapping[str, Any]], str | None]:
    """Like :func:`_tpu_fact`, for a key written inside the ``tpu:`` block itself."""
    return lambda block: _tpu_fact(fact)({"tpu": block})


def _gpu_machine(block: Mapping[str, Any]) -> str | None:
    gtype, count = block.get("type"), block.get("count", 1)
    if not isinstance(gtype, str) or not isinstance(count, int):
        return None
    return f"{catalog.gpu_type(gtype).machine_type(count)} for {count} x {gtype}"


_TPU_MACHINE = (
    "not set for a TPU pool; it is derived from tpu: {generation, topology}",
    _tpu_fact(lambda s: s.machine_type),
)
_CHIPS_PER_HOST = (
    "not set; chips per host are derived from tpu: {generation, topology}",
    lambda s: f"{s.chips_per_host} chips per host",
)
_HOSTS = (
    "not set; hosts per slice are derived from tpu: {generation, topology} (a multi-host slice "
    "is one GKE node pool of that many nodes); scale with min_slices / max_slices",
    lambda s: f"{s.hosts} host{'' if s.hosts == 1 else 's'}",
)
_CHIPS = (
    "not set; chips per slice are derived from tpu: {generation, topology}",
    lambda s: f"{s.chips} chips",
)
_REPLICAS = (
    "not set on a worker group; KubeRay's replicas range from min_replicas to max_replicas "
    "(slices for a TPU pool, each slice numOfHosts = its hosts' pods; pods otherwise), and a "
    "job's Ray Train num_workers is derived from them (components/raycrs/scaling.py)"
)
_JOB_WORKERS = (
    "not set on a job; Ray Train's num_workers is derived from the job's worker group or node "
    "pool (hosts x slices for TPU, nodes x GPUs per node for GPU, nodes for CPU; "
    "components/raycrs/scaling.py)"
)


def _hints() -> list[KeyHint]:
    out: list[KeyHint] = [
        KeyHint(
            "node_pools.tpu.machine_type",
            "node_pools[].machine_type (TPU pool)",
            "derived",
            *_TPU_MACHINE,
        )
    ]
    for key in (
        "chips_per_host",
        "hosts",
        "hosts_per_slice",
        "num_hosts",
        "chips",
        "chips_per_slice",
    ):
        text, fact = (
            _CHIPS_PER_HOST
            if key == "chips_per_host"
            else _CHIPS
            if key.startswith("chips")
            else _HOSTS
        )
        out.append(
            KeyHint(
                f"node_pools.tpu.{key}",
                f"node_pools[].{key} (TPU pool)",
                "derived",
                text,
                _tpu_fact(fact),
            )
        )
        out.append(
            KeyHint(
                f"node_pools.tpu.tpu.{key}",
                f"node_pools[].tpu.{key}",
                "derived",
                text,
                _tpu_spec_fact(fact),
            )
        )
    for key in ("min_nodes", "max_nodes"):
        slices = key.replace("nodes", "slices")
        out.append(
            KeyHint(
                f"node_pools.tpu.{key}",
                f"node_pools[].{key} (TPU pool)",
                "derived",
                f"not set for a TPU pool, which scales in whole slices; write {slices} "
                "(nodes = slices x hosts per slice)",
                _tpu_fact(lambda s: f"{s.hosts} node{'' if s.hosts == 1 else 's'} per slice"),
            )
        )
    for kind in ("cpu", "gpu"):
        for key in ("min_slices", "max_slices"):
            out.append(
                KeyHint(
                    f"node_pools.{kind}.{key}",
                    f"node_pools[].{key} ({kind.upper()} pool)",
                    "derived",
                    f"not set for a {kind.upper()} pool, which scales in nodes; write "
                    f"{key.replace('slices', 'nodes')} (slices are for tpu: pools)",
                )
            )
    out.append(
        KeyHint(
            "node_pools.gpu.gpu.machine_type",
            "node_pools[].gpu.machine_type",
            "derived",
            "not a key of gpu:; the machine type is derived from gpu: {type, count}, or given "
            "next to gpu: as the pool's machine_type",
            _gpu_machine,
        )
    )
    for key in ("num_workers", "replicas", "num_of_hosts", "numOfHosts"):
        out.append(
            KeyHint(
                f"ray_clusters.worker_groups.{key}",
                f"ray_clusters[].worker_groups[].{key}",
                "derived",
                _REPLICAS,
            )
        )
    for key in ("num_workers", "replicas"):
        out.append(KeyHint(f"jobs.{key}", f"jobs[].{key}", "derived", _JOB_WORKERS))
    out.append(
        KeyHint(
            "cluster.ray_addon",
            "cluster.ray_addon",
            "removed",
            "the GKE Ray add-on follows kuberay.mode; write kuberay: {mode: gke-addon} instead "
            "(and drop cluster.ray_addon)",
        )
    )
    return out


KEY_HINTS: dict[str, KeyHint] = {h.where: h for h in _hints()}
