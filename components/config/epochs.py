"""Defaults epochs: which defaults and refusals a stack file was written for (``ray-gke:defaults:
<date>``, :func:`read_epoch`). A new default applies only to stacks at or after its release
(:data:`NEW_DEFAULTS`, :func:`hold_defaults`), a new refusal is a warning for older stacks
(:data:`NEW_REFUSALS`, :func:`gate_refusals`), and a stack with no date is dated by the features
it uses (:data:`MARKERS`). The contract: docs/upgrading.md. Every later change of a default or
new refusal adds its line here, with its release date, and a line to CHANGELOG.md.
Sources: docs/sources.md#config-epochs
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from components.kernel.problems import Problem
from components.kernel.release import Epoch

if TYPE_CHECKING:
    from components.config.gcsft import GcsFaultToleranceConfig
    from components.config.nodepools import CpuPool, GpuPool, TpuPool
    from components.config.serve import ServiceConfig
    from components.config.stack import StackConfig
    from components.config.storage import BucketsConfig


@dataclass(frozen=True)
class Held:
    """A newer default that one place of a stack does not get, and the value it keeps.

    Attributes:
        path: the stack key, as problems print it (``node_pools[h100].gpu_networking``).
        value: the value the key keeps (what ``raygke migrate`` writes to pin it).
        change: the :class:`NewDefault` it is held back from.
    """

    path: str
    value: Any
    change: NewDefault

    def note(self) -> str:
        """The one-line note ``raygke check`` prints."""
        c = self.change
        key = self.path.rsplit(".", 1)[-1]
        return (
            f"{self.path} keeps {_yaml(self.value)} ({c.old}), the default before {c.since}; "
            f"newer stacks get {c.new}. To opt in: {key}: {_yaml(c.new_value)} ({c.opt_in})"
        )


def _yaml(value: Any) -> str:
    """``value`` as a stack file writes it (``true``, ``off``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class NewDefault:
    """A default that changed what gets created, applied only to stacks from :attr:`since`.

    Attributes:
        key: the key, as docs/stack-config.md lists it.
        since: the release (date) that introduced it.
        old: what older stacks keep, in words.
        new: what newer stacks get, in words.
        new_value: the value a stack writes to opt in.
        opt_in: what opting in does to a deployed stack (what ``raygke diff`` then shows).
        held: the places of a stack (validated as written) that take the default where the
            newer one differs from the older: ``(path, old value, apply)``, ``apply(block)``
            returning its first block (:attr:`reads`) with the old value in place.
    """

    key: str
    since: str
    old: str
    new: str
    new_value: Any
    opt_in: str
    held: Callable[..., Iterable[tuple[str, Any, Callable[[Any], Any]]]]

    @property
    def reads(self) -> tuple[str, ...]:
        """The stack blocks :attr:`held` is handed, named by its parameters (``buckets``,
        ``services``), in order; the first is the one it changes."""
        return tuple(inspect.signature(self.held).parameters)


def _checkpoints_hns(buckets: BucketsConfig) -> Iterable[tuple[str, Any, Callable]]:
    """The checkpoints bucket when its ``hierarchical_namespace`` is unset and nothing in it
    already makes it flat (:func:`components.config.storage.hns_of`)."""
    from components.config.storage import hns_of

    bucket = buckets.checkpoints
    if bucket.hierarchical_namespace is None and hns_of("checkpoints", bucket):

        def apply(b: BucketsConfig) -> BucketsConfig:
            flat = b.checkpoints.model_copy(update={"hierarchical_namespace": False})
            return b.model_copy(update={"checkpoints": flat})

        yield "buckets.checkpoints.hierarchical_namespace", False, apply


def _gpu_networking(
    node_pools: list[CpuPool | TpuPool | GpuPool],
) -> Iterable[tuple[str, Any, Callable]]:
    """GPU pools that leave ``gpu_networking`` unset on a machine type that has GPU networking
    (elsewhere ``auto`` and the old behaviour are the same: no extra NICs)."""
    from components.config.nodepools import GpuPool

    for i, pool in enumerate(node_pools):
        if (
            isinstance(pool, GpuPool)
            and "gpu_networking" not in pool.model_fields_set
            and pool.gpu_net is not None
        ):

            def apply(pools: list[Any], i: int = i) -> list[Any]:
                pools = list(pools)
                pools[i] = pools[i].model_copy(update={"gpu_networking": "off"})
                return pools

            yield f"node_pools[{pool.name}].gpu_networking", "off", apply


def _gcs_fault_tolerance(
    gcs_fault_tolerance: GcsFaultToleranceConfig, services: list[ServiceConfig]
) -> Iterable[tuple[str, Any, Callable]]:
    """``gcs_fault_tolerance.enabled`` left unset in a stack with services (without services
    nothing is created either way)."""
    if services and "enabled" not in gcs_fault_tolerance.model_fields_set:

        def apply(ft: GcsFaultToleranceConfig) -> GcsFaultToleranceConfig:
            return ft.model_copy(update={"enabled": False})

        yield "gcs_fault_tolerance.enabled", False, apply


def _incremental_upgrades(services: list[ServiceConfig]) -> Iterable[tuple[str, Any, Callable]]:
    """Services that leave ``upgrade_strategy`` unset where the newer default differs from
    ``NewCluster`` (those with a ``gateway``: :attr:`ServiceConfig.strategy`)."""
    for i, svc in enumerate(services):
        if svc.upgrade_strategy is None and svc.strategy != "NewCluster":

            def apply(svcs: list[ServiceConfig], i: int = i) -> list[ServiceConfig]:
                svcs = list(svcs)
                svcs[i] = svcs[i].model_copy(update={"upgrade_strategy": "NewCluster"})
                return svcs

            yield f"services[{svc.name}].upgrade_strategy", "NewCluster", apply


NEW_DEFAULTS: tuple[NewDefault, ...] = (
    NewDefault(
        key="buckets.checkpoints.hierarchical_namespace",
        since="2026-12-03",
        old="a flat bucket",
        new="hierarchical namespace (a checkpoint commit is one atomic folder rename)",
        new_value=True,
        opt_in="hierarchical namespace is set at creation only, so this replaces the "
        "checkpoints bucket (copy the checkpoints first; with force_destroy the old ones are "
        "deleted)",
        held=_checkpoints_hns,
    ),
    NewDefault(
        key="node_pools[].gpu_networking",
        since="2026-12-03",
        old="the primary NIC only, NCCL over TCP",
        new="auto, the machine family's GPUDirect NICs",
        new_value="auto",
        opt_in="extra NICs are set at creation only, so this replaces the node pool (its nodes "
        "drained, the Ray pods on them restarted)",
        held=_gpu_networking,
    ),
    NewDefault(
        key="gcs_fault_tolerance.enabled",
        since="2026-12-08",
        old="no GCS fault tolerance: a RayService's head keeps its GCS in memory",
        new="GCS fault tolerance with a Memorystore for Redis the stack creates",
        new_value=True,
        opt_in="creates the Memorystore instance, its private services access, KMS key and "
        "AUTH secret, and gives every RayService gcsFaultToleranceOptions: a rayClusterConfig "
        "change, so each service upgrades once by its upgrade strategy",
        held=_gcs_fault_tolerance,
    ),
    NewDefault(
        key="services[].upgrade_strategy",
        since="2026-12-08",
        old="NewCluster",
        new="NewClusterWithIncrementalUpgrade for a service with a gateway",
        new_value="NewClusterWithIncrementalUpgrade",
        opt_in="the RayService's upgradeStrategy changes in place (the running cluster is "
        "untouched; the next cluster change moves traffic in steps through a Gateway KubeRay "
        "creates, which replaces the service's own Gateway and HTTPRoute)",
        held=_incremental_upgrades,
    ),
)
"""Every default that changed what gets created, with the release that changed it."""


# ``gpu_networking: gpudirect`` (2026-12-07) is refused on a family without TCPX / TCPXO by its
# field (pydantic, not a rule, so not gated here; earlier releases refused the value as unknown),
# and ``gpudirect_kueue_namespace`` below refuses Kueue in its namespace. No stack an earlier
# release accepted meets either; a file that uses the value is dated 2026-12-07 (:data:`MARKERS`).
NEW_REFUSALS: dict[str, str] = {
    "multi_host_tpu_needs_webhook": "2026-11-29",
    "job_identity_can_write_outputs": "2026-11-30",
    "gke_version_offered": "2026-11-30",
    "job_memory_fits": "2026-12-07",
    "fuse-cache-memory": "2026-12-07",
    "gpudirect_kueue_namespace": "2026-12-07",
    "incremental_upgrade_gateway": "2026-12-08",
    "serve-autoscaling-fit": "2026-12-08",
}
"""Rules (by name) that refuse what an earlier release accepted, with the release that added
them: a warning for stacks written for an earlier epoch."""


@dataclass(frozen=True)
class Marker:
    """A feature of a stack file that first appeared in a release: a file that uses it was
    written for that release or a later one.

    Attributes:
        what: the feature, in words (``node_pools[].gpu_networking``).
        since: the release it appeared in.
        found: whether a stack's data (keys without the prefix, as written) uses it.
    """

    what: str
    since: str
    found: Callable[[Mapping[str, Any]], bool]


def _entries(data: Mapping[str, Any], block: str) -> list[Mapping[str, Any]]:
    items = data.get(block)
    return [e for e in items if isinstance(e, Mapping)] if isinstance(items, list) else []


def _sub(data: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    for k in keys:
        data = data.get(k) if isinstance(data.get(k), Mapping) else {}
    return data


def _key(block: str, key: str) -> Callable[[Mapping[str, Any]], bool]:
    """``key`` given in an entry of the list ``block``, or in the mapping at dotted ``block``."""

    def found(data: Mapping[str, Any]) -> bool:
        if isinstance(data.get(block), list):
            return any(key in e for e in _entries(data, block))
        return key in _sub(data, *block.split("."))

    return found


def _bucket_key(key: str) -> Callable[[Mapping[str, Any]], bool]:
    buckets = ("datasets", "checkpoints", "artifacts")
    return lambda data: any(key in _sub(data, "buckets", b) for b in buckets)


def _serve_llm(data: Mapping[str, Any]) -> bool:
    return any(e.get("workload") == "serve_llm" for e in _entries(data, "services"))


def _batch_generate(data: Mapping[str, Any]) -> bool:
    """A ``batch_generate`` job (batch inference, Ray Data LLM), which 2026-12-08 introduced."""
    return any(e.get("workload") == "batch_generate" for e in _entries(data, "jobs"))


def _serve_routing_args(data: Mapping[str, Any]) -> bool:
    """A service's routing or autoscaling-delay argument, which 2026-12-08 introduced."""
    keys = ("routing", "upscale_delay_s", "downscale_delay_s")
    return any(
        isinstance(e.get("args"), Mapping) and any(k in e["args"] for k in keys)
        for e in _entries(data, "services")
    )


def _device_memory_gb(data: Mapping[str, Any]) -> bool:
    """A trainer's ``device_memory_gb`` argument, which 2026-12-08 introduced."""
    return any(
        isinstance(e.get("args"), Mapping) and "device_memory_gb" in e["args"]
        for e in _entries(data, "jobs")
    )


def _gpudirect(data: Mapping[str, Any]) -> bool:
    """A node pool with ``gpu_networking: gpudirect`` (GPUDirect-TCPX / -TCPXO's RxDM sidecar in
    its own namespace), which 2026-12-07 introduced."""
    return any(e.get("gpu_networking") == "gpudirect" for e in _entries(data, "node_pools"))


def _checkpoints_unversioned(data: Mapping[str, Any]) -> bool:
    """``buckets.checkpoints`` written without object versioning: the shipped stacks before
    2026-12-03 versioned it; from 2026-12-03 they dropped versioning for hierarchical namespace."""
    checkpoints = _sub(data, "buckets").get("checkpoints")
    return isinstance(checkpoints, Mapping) and not (
        checkpoints.get("versioning") or checkpoints.get("noncurrent_version_days")
    )


MARKERS: tuple[Marker, ...] = (
    Marker("node_pools[].gpu_networking", "2026-12-03", _key("node_pools", "gpu_networking")),
    Marker("network.gpu_cidr", "2026-12-03", _key("network", "gpu_cidr")),
    Marker("node_pools[].super_slicing", "2026-12-03", _key("node_pools", "super_slicing")),
    Marker(
        "cluster.maintenance_exclusions",
        "2026-12-03",
        _key("cluster", "maintenance_exclusions"),
    ),
    Marker("capacity.topology", "2026-12-03", _key("capacity", "topology")),
    Marker("buckets.file_cache_medium", "2026-12-03", _key("buckets", "file_cache_medium")),
    Marker(
        "buckets.<bucket>.hierarchical_namespace",
        "2026-12-03",
        _bucket_key("hierarchical_namespace"),
    ),
    Marker("buckets.<bucket>.fuse_profile", "2026-12-03", _bucket_key("fuse_profile")),
    Marker("buckets.<bucket>.file_cache_size", "2026-12-03", _bucket_key("file_cache_size")),
    Marker(
        "buckets.checkpoints without versioning",
        "2026-12-03",
        _checkpoints_unversioned,
    ),
    Marker("jobs[].super_slice", "2026-12-04", _key("jobs", "super_slice")),
    Marker("ray.images.tpu-serve", "2026-12-04", _key("ray.images", "tpu-serve")),
    Marker("services[].workload serve_llm", "2026-12-04", _serve_llm),
    Marker("services[].hf_model", "2026-12-04", _key("services", "hf_model")),
    Marker("services[].gateway", "2026-12-04", _key("services", "gateway")),
    Marker("jobs[].hf_token_secret", "2026-12-07", _key("jobs", "hf_token_secret")),
    Marker("node_pools[].gpu_networking gpudirect", "2026-12-07", _gpudirect),
    Marker("gcs_fault_tolerance", "2026-12-08", lambda data: "gcs_fault_tolerance" in data),
    Marker("network.psa_cidr", "2026-12-08", _key("network", "psa_cidr")),
    Marker("jobs[].workload batch_generate", "2026-12-08", _batch_generate),
    Marker(
        "services[].args routing / upscale_delay_s / downscale_delay_s",
        "2026-12-08",
        _serve_routing_args,
    ),
    Marker("jobs[].args device_memory_gb", "2026-12-08", _device_memory_gb),
)
"""Features that appeared from the first default change (2026-12-03) on, with their release
(docs/stack-config.md's history): what dates a stack file that names no ``defaults``."""


def read_epoch(data: Mapping[str, Any]) -> Epoch:
    """The epoch of a stack's data (keys without the prefix, as written): its ``defaults``;
    else the newest release among the :data:`MARKERS` it uses (the oldest release that accepts
    the file); else ``""``, before every release."""
    written = data.get("defaults")
    if isinstance(written, date):
        written = written.isoformat()
    if isinstance(written, str):
        return Epoch(written, "")
    found = [m for m in MARKERS if m.found(data)]
    if not found:
        return Epoch("", "it uses no feature newer than the first default change")
    newest = max(m.since for m in found)
    uses = ", ".join(m.what for m in found if m.since == newest)
    return Epoch(newest, f"it uses {uses}, which {newest} introduced")


def epoch_note(path: Any, epoch: Epoch) -> str:
    """What ``raygke check`` says of a stack file that names no ``defaults``."""
    read = f"as written for {epoch.date}" if epoch.date else "as written before every release"
    return (
        f"{path} names no ray-gke:defaults, so it is read {read} ({epoch.why}); if it was "
        f"deployed with a later release, write that release's date there. `raygke migrate "
        f"--config {path}` writes the defaults it is read with into the file; `--adopt` shows "
        "what taking this release's would replace (docs/upgrading.md)"
    )


def hold_defaults(cfg: StackConfig, epoch: Epoch) -> list[Held]:
    """Put the defaults of ``epoch`` in place of newer ones in ``cfg`` (just validated, not yet
    handed to anyone: the loader's) and return them. It takes the stack because it replaces
    its blocks (each change's first of :attr:`NewDefault.reads`); each change reads only its
    ``reads``."""
    held: list[Held] = []
    for change in NEW_DEFAULTS:
        if epoch.date < change.since:
            block = change.reads[0]
            for path, value, apply in list(change.held(*(getattr(cfg, b) for b in change.reads))):
                # The model is frozen; this runs inside its own validation, before anyone reads
                # or hashes it.
                object.__setattr__(cfg, block, apply(getattr(cfg, block)))
                held.append(Held(path, value, change))
    return held


def gate_refusals(epoch: Epoch, problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` with those of a rule newer than the stack's ``epoch`` made warnings that say
    so (:data:`NEW_REFUSALS`)."""
    out: list[Problem] = []
    for p in problems:
        since = NEW_REFUSALS.get(p.rule)
        if since is not None and epoch.date < since and p.severity == "error":
            p = p.changed(
                message=f"{p.message} (refused for stacks written for defaults {since} or "
                f"later; this one is read as {epoch.date or 'older'})",
                severity="warning",
            )
        out.append(p)
    return out
