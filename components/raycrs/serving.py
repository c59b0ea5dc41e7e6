"""What a vLLM service (the ``serve_llm`` Serve application, :mod:`workloads.serve_llm`) gets from
its node pool, what it serves, and whether that can start (pure; no Pulumi): one source of truth
per fact (devices per pod, memory per device, Ray's accelerator type, :func:`tensor_parallel_size`,
:func:`model_path`, :func:`trained_shape`); :func:`contract.serve_fit.fit_problems` decides.
Where each fact comes from: docs/sources.md#raycrs-serving
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.nodepools import GpuPool, TpuPool
from components.kernel.problems import Problem, at
from components.plan.resolve import ResolveError
from components.raycrs.pod import MOUNT_ROOT
from contract.serve_fit import CausalLmShape, fit_problems

if TYPE_CHECKING:
    from components.config.kuberay import KubeRayConfig
    from components.config.raycrs import JobConfig
    from components.config.serve import ServiceConfig
    from components.plan.plan import Context, Plan
    from components.plan.resolve import GroupTarget

VLLM_APP = "serve_llm"
# GPT-2 folder of our byte-level LM (workloads/hf_export.py VOCAB).
BYTE_VOCAB = 256
# prepare's default window (contract/args/prepare.py context_length), the trainers' default.
DEFAULT_CONTEXT = 256
# Arguments of serve_llm the platform sets (ServiceSpec.app_args): value -> what sets it.
PLATFORM_BOUND_SERVE_ARGS: Mapping[str, str] = {
    "model": "services[].checkpoint (read through the checkpoints bucket's GCS FUSE mount) "
    "or services[].hf_model",
    "model_revision": "services[].hf_revision",
    "accelerator": "the node pool's kind",
    "accelerator_type": "the node pool's GPU type or TPU generation (the catalog)",
    "tpu_topology": "the node pool's TPU topology (a multi-host slice)",
}
# Training workloads whose arguments give the served model's shape (contract/args/train.py).
SHAPED_TRAINERS = ("train_lm", "train_lm_jax", "train_lm_tf")
# Ray's object store on a node without object_store_memory: 30 % of its memory, at most 200 GB
# (ray/_private/ray_constants.py DEFAULT_OBJECT_STORE_MEMORY_PROPORTION,
# DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES); the rest is what a CPU pod's vLLM engines may use.
OBJECT_STORE_FRACTION = 0.3
OBJECT_STORE_MAX_GB = 200.0


@dataclass(frozen=True)
class ServeDevices:
    """The accelerators one worker pod of a service's pool has.

    Attributes:
        kind: ``gpu`` | ``tpu`` | ``cpu`` (``ServeLlmArgs.accelerator``).
        per_pod: GPUs of one node, or chips of one TPU host (a single-host slice's chips); 1 on
            a CPU pool (one engine process: ``tensor_parallel_size`` 1).
        memory_gb: memory per device, GB (the catalog); None on a CPU pool (the pod's memory,
            known from the plan: :func:`service_fit_problems`).
        ray_accelerator_type: Ray's accelerator type (``L4``, ``H100``, ``TPU-V6E``); None on a
            CPU pool.
        what: one phrase for messages (``8 x NVIDIA H100 80GB (80 GB each)``).
        hosts: TPU hosts of one slice (1 for GPU pools and single-host slices).
    """

    kind: str
    per_pod: int
    memory_gb: float | None
    ray_accelerator_type: str | None
    what: str
    hosts: int = 1


def serve_devices(pool: object) -> ServeDevices:
    """The devices of one worker pod of ``pool`` (a CPU pool: its CPUs, one engine).

    Raises:
        components.catalog.CatalogError: a GPU type or TPU generation the catalog lacks (the
            pool model refuses those first).
    """
    if isinstance(pool, GpuPool):
        g = catalog.GPU_TYPES[pool.gpu.type]
        return ServeDevices(
            "gpu",
            pool.gpu.count,
            float(g.memory_gb),
            g.ray_accelerator_type,
            f"{pool.gpu.count} x {g.display} ({g.memory_gb} GB each)",
        )
    if isinstance(pool, TpuPool):
        s = pool.slice
        gen = catalog.tpu_generation(s.generation.name)
        return ServeDevices(
            "tpu",
            s.chips_per_host,
            float(gen.hbm_gb),
            gen.ray_accelerator_type,
            f"{s.chips_per_host} x TPU {gen.name} chip(s) of a {s.topology} slice "
            f"({gen.hbm_gb} GB HBM each)",
            s.hosts,
        )
    machine = getattr(pool, "machine_type", "?")
    return ServeDevices("cpu", 1, None, None, f"the CPUs of one {machine} node")


def tensor_parallel_size(args: Mapping[str, Any], devices: ServeDevices) -> int:
    """``args.tensor_parallel_size`` when given (an int), else the pod's devices
    (``devices.per_pod``): one engine over every GPU of a node / chip of a slice (a
    multi-host slice: every chip of its hosts)."""
    tp = args.get("tensor_parallel_size")
    if isinstance(tp, int) and not isinstance(tp, bool):
        return tp
    return devices.per_pod * devices.hosts


def model_path(ctx: Context, svc: ServiceConfig) -> str:
    """The ``model`` argument: ``svc.hf_model`` (a Hub repo id vLLM downloads) as is; else where
    the workers read the checkpoint, through the GCS FUSE mount
    of the checkpoints bucket (``/mnt/gcs/checkpoints``): ``<mount>/<job name>`` for a job name
    (its experiment folder), ``<mount>/<path>`` for ``gs://<checkpoints bucket>/<path>``.

    Raises:
        components.raycrs.pod.ManifestError: a ``gs://`` path outside the checkpoints bucket.
    """
    from components.raycrs.pod import ManifestError

    if svc.hf_model is not None:
        return svc.hf_model
    assert svc.checkpoint is not None  # ServiceConfig: exactly one of checkpoint, hf_model
    mount = f"{MOUNT_ROOT}/checkpoints"
    if svc.checkpoint_job is not None:
        return f"{mount}/{svc.checkpoint_job}"
    root = ctx.bucket_url("checkpoints")
    if svc.checkpoint.rstrip("/") == root:
        return mount
    if not svc.checkpoint.startswith(root + "/"):
        raise ManifestError(
            f"services[{svc.name}].checkpoint {svc.checkpoint!r} is not in the checkpoints "
            f"bucket {root}/ (allowed: a path under it, or a job name; the serving identity "
            "reads checkpoints from that bucket only)"
        )
    return f"{mount}/{svc.checkpoint[len(root) + 1 :].rstrip('/')}"


def trained_shape(jobs: Iterable[JobConfig], job_name: str) -> CausalLmShape | None:
    """The GPT-2 shape job ``job_name`` of ``jobs`` (the stack's) trains (its ``d_model``,
    ``n_layers``, ``n_heads``, ``mlp_ratio``, ``context_length``, else the stack's ``prepare``
    job's, else prepare's default 256, mapped to GPT-2's ``config.json`` as
    :func:`workloads.hf_export.hf_config` does); None when the job is
    not declared or does not run one of :data:`SHAPED_TRAINERS` (``tune_lm`` picks its own
    widths), or its arguments do not parse (the job rules report that)."""
    from contract.args.base import ArgError
    from contract.registry import get_workload

    jobs = list(jobs)
    job = next((j for j in jobs if j.name == job_name), None)
    if job is None or job.workload not in SHAPED_TRAINERS:
        return None
    try:
        a = get_workload(job.workload).parse(dict(job.args))
    except (ArgError, KeyError, TypeError, ValueError):
        return None
    context = a.context_length or dataset_context(jobs)
    return CausalLmShape(
        vocab_size=BYTE_VOCAB,
        n_positions=context,
        n_embd=a.d_model,
        n_layer=a.n_layers,
        n_head=a.n_heads,
        n_inner=a.mlp_ratio * a.d_model,
    )


def pod_size(p: Any, pool: str, group: Any) -> tuple[float, float] | None:
    """CPUs and memory (GB) of one worker pod of the service
    (:func:`components.raycrs.pod.worker_pod_size` of the pool's first GKE node pool in the
    plan), None when unknown: also for a stack whose ``project`` or ``region`` did not
    validate, whose plan has no context to build node pools with
    (:attr:`components.plan.plan.Plan.pool_specs` raises ``ValueError``)."""
    from components.raycrs.pod import ManifestError, worker_pod_size
    from contract.quantity import quantity_float

    try:
        specs = p.pool_specs.get(pool) or ()
    except ValueError:  # "the stack validated only in part": its field errors are reported
        return None
    if not specs:
        return None
    try:
        cpu, memory = worker_pod_size(specs[0], group)
    except ManifestError:
        return None
    return quantity_float(cpu), quantity_float(memory) / 1e9


def default_object_store_gb(pod_memory_gb: float) -> float:
    """Ray's object store in a pod of ``pod_memory_gb`` when nothing sets it:
    :data:`OBJECT_STORE_FRACTION` of the memory, at most :data:`OBJECT_STORE_MAX_GB`."""
    return min(pod_memory_gb * OBJECT_STORE_FRACTION, OBJECT_STORE_MAX_GB)


def engine_memory_gb(pod_memory_gb: float) -> float:
    """What the vLLM engines of a CPU worker pod may use: its memory less Ray's object store
    (:func:`default_object_store_gb`)."""
    return pod_memory_gb - default_object_store_gb(pod_memory_gb)


@dataclass(frozen=True)
class ServiceSpec:
    """One service as its render and its checks read it, built once per plan
    (:func:`service_spec`).

    Attributes:
        service: the ``services`` entry.
        target: its worker group (:meth:`components.plan.plan.Plan.service`).
        devices: one worker pod's (:func:`serve_devices`).
        tensor_parallel_size: the application's (:func:`tensor_parallel_size`).
        tp_derived: ``args.tensor_parallel_size`` is unset (the pool gave it).
        tpu_topology: a multi-host TPU slice's topology (a replica spans it), else None.
        default_max_replicas: ``max_replicas`` when ``args`` has none: what the worker group
            holds (its pods x devices per pod // tensor_parallel_size; one per slice on a
            multi-host slice; at least 1).
        pod_size: CPUs and memory (GB) of one worker pod (:func:`pod_size`), None when unknown.
        parsed: ``args`` with the pool's ``accelerator`` and :attr:`tensor_parallel_size`,
            parsed (a ``serve_llm`` service only); None otherwise or when they do not parse
            (their rules report that).
        plan: the stack's plan (its context gives the model path).
    """

    service: ServiceConfig
    target: GroupTarget
    devices: ServeDevices
    tensor_parallel_size: int
    tp_derived: bool
    tpu_topology: str | None
    default_max_replicas: int
    pod_size: tuple[float, float] | None
    parsed: Any
    plan: Plan = field(repr=False, compare=False)

    def app_args(self) -> dict[str, Any]:
        """The arguments the Serve application gets (:class:`contract.args.serve_llm.ServeLlmArgs`):
        ``args`` plus what the platform sets: ``model`` (:func:`model_path`),
        ``model_revision`` (``hf_revision``, when set), ``accelerator`` (the pool's kind),
        ``accelerator_type`` (Ray's name for the pool's GPU / TPU generation; none on a CPU
        pool), ``tensor_parallel_size``, ``tpu_topology`` (a multi-host slice) and
        ``max_replicas`` unless given (:attr:`default_max_replicas`). A new dict each call.

        Raises:
            ManifestError: a checkpoint outside the bucket.
            contract.args.base.ArgError: args that do not fit the application.
        """
        from contract.registry import get_workload

        svc, dev = self.service, self.devices
        args = dict(svc.args)
        args["model"] = model_path(self.plan.context, svc)
        if svc.hf_revision is not None:
            args["model_revision"] = svc.hf_revision
        args["accelerator"] = dev.kind
        if dev.ray_accelerator_type is not None:
            args["accelerator_type"] = dev.ray_accelerator_type
        args["tensor_parallel_size"] = self.tensor_parallel_size
        if self.tpu_topology is not None:
            args["tpu_topology"] = self.tpu_topology
        args.setdefault("max_replicas", self.default_max_replicas)
        get_workload(svc.workload).parse(args)
        return args


def service_spec(p: Plan, svc: ServiceConfig) -> ServiceSpec:
    """``svc``'s :class:`ServiceSpec` in plan ``p``, built on first use and kept with the plan
    (:meth:`components.plan.plan.Plan.record`).

    Raises:
        ResolveError: its ``node_pool`` is undeclared (:meth:`components.plan.plan.Plan.service`).
    """
    return p.record(("service_spec", id(svc)), lambda p: _build_spec(p, svc))


def _build_spec(p: Plan, svc: ServiceConfig) -> ServiceSpec:
    from contract.args.base import ArgError
    from contract.registry import get_workload

    target = p.service(svc)
    pool = target.pool
    dev = serve_devices(pool)
    tp = tensor_parallel_size(svc.args, dev)
    per_pod = 1 if dev.hosts > 1 else (dev.per_pod // tp if tp > 0 else 0)
    parsed = None
    if svc.workload == VLLM_APP:
        with suppress(ArgError, KeyError, TypeError, ValueError):
            parsed = get_workload(VLLM_APP).parse(
                {**svc.args, "accelerator": dev.kind, "tensor_parallel_size": tp}
            )
    return ServiceSpec(
        service=svc,
        target=target,
        devices=dev,
        tensor_parallel_size=tp,
        tp_derived="tensor_parallel_size" not in svc.args,
        tpu_topology=pool.slice.topology if dev.hosts > 1 and isinstance(pool, TpuPool) else None,
        default_max_replicas=max(1, target.max_replicas * per_pod),
        pod_size=pod_size(p, pool.name, target.group),
        parsed=parsed,
        plan=p,
    )


def dataset_context(jobs: Iterable[JobConfig]) -> int:
    """The longest ``context_length`` of the ``prepare`` jobs of ``jobs`` (the stack's: the
    dataset's window a trainer without its own takes), else :data:`DEFAULT_CONTEXT`."""
    found = [j.args.get("context_length", DEFAULT_CONTEXT) for j in jobs if j.workload == "prepare"]
    found = [c for c in found if isinstance(c, int) and not isinstance(c, bool)]
    return max(found, default=DEFAULT_CONTEXT)


def service_fit_problems(
    p: Plan, services: list[ServiceConfig], jobs: list[JobConfig], kuberay: KubeRayConfig
) -> Iterable[Problem]:
    """Why a vLLM service (workload ``serve_llm``) would not start on its pool, one Problem of
    the field each, ``<field>: <value> (allowed: ...)``, read from its :class:`ServiceSpec`
    (``jobs``: the trained shapes; ``kuberay``: the TPU webhook):

    * an argument the platform sets (:data:`PLATFORM_BOUND_SERVE_ARGS`);
    * on a multi-host TPU slice (a replica spans it): a ``tensor_parallel_size`` other than its
      chips, or no TPU webhook (:func:`_multi_host_problems`);
    * a replica's placement bundles (``tensor_parallel_size`` x 1 CPU, plus the replica actor's
      1 CPU; on a CPU pool the engine's one bundle of ``args.num_cpus``) above the CPUs of one
      worker pod (:func:`components.raycrs.pod.worker_pod_size`);
    * ``tensor_parallel_size`` (given or derived, :func:`tensor_parallel_size`) above the pod's
      devices (on a CPU pool: above 1), or not dividing the trained model's heads;
    * the trained model's weights + KV cache for ``max_model_len`` above ``tensor_parallel_size x
      device memory x 0.9`` (:func:`contract.serve_fit.fit_problems`), for a checkpoint naming a
      job of :data:`SHAPED_TRAINERS` (a ``gs://`` checkpoint's shape is unknown offline: the
      builder runs the same check on its ``config.json`` at start; a Hub model's
      (``hf_model``) is not checked at all: its config.json is not read offline, and vLLM
      checks memory itself at start);
    * on a CPU pool, instead of device memory: one ``max_model_len`` sequence's KV cache above
      ``args.cpu_kv_cache_gb``, and the engines one worker pod can place (its CPUs //
      ``num_cpus``, at most ``max_replicas``), each its weights (a trained shape's) plus its KV
      cache space, above the pod's memory less Ray's object store (:func:`engine_memory_gb`).

    Unresolved pools and bad arguments are left to their rules.
    """
    for svc in services:
        if svc.workload != VLLM_APP:
            continue
        where = f"services[{svc.name}]"
        for key in sorted(set(svc.args) & set(PLATFORM_BOUND_SERVE_ARGS)):
            yield at(
                f"{where}.args.{key}",
                f"{where}.args.{key}: {svc.args[key]!r} (allowed: unset; the platform sets it "
                f"from {PLATFORM_BOUND_SERVE_ARGS[key]})",
            )
        try:
            spec = service_spec(p, svc)
        except ResolveError:
            continue
        pool, dev, tp = spec.target.pool, spec.devices, spec.tensor_parallel_size
        if dev.hosts > 1:
            found = list(_multi_host_problems(svc, dev, pool, kuberay))
            yield from found
            if found:
                continue
        if dev.kind == "cpu":
            yield from _cpu_fit(spec, jobs)
            continue
        cpus = None if spec.pod_size is None else spec.pod_size[0]
        # Ray Serve LLM's placement group: tp bundles of 1 CPU + 1 device, the replica actor's
        # 1 CPU merged into the first (workloads/serve_llm.py llm_config); PACK in one pod
        need = tp * 1 + 1
        if cpus is not None and need > cpus and dev.hosts == 1:
            yield at(
                f"{where}.args.tensor_parallel_size",
                f"{where}.args.tensor_parallel_size: {tp} needs {need} CPUs in one worker pod "
                f"({tp} bundles of 1 CPU + the replica's 1) (allowed: at most {cpus:g} CPUs, "
                f"the worker pod of pool {pool.name!r}; a larger machine_type or a smaller "
                "tensor_parallel_size)",
            )
        origin = (
            f" (derived: the {dev.per_pod} devices of one node of pool {pool.name!r})"
            if dev.hosts == 1
            else f" (derived: the {tp} chips of the slice of pool {pool.name!r})"
        )
        args = spec.parsed
        if args is None:
            continue  # service_workloads_and_checkpoints reports the arguments
        job = svc.checkpoint_job
        shape = None if job is None else trained_shape(jobs, job)
        if shape is None:
            if tp > dev.per_pod and dev.hosts == 1:  # a slice's: _multi_host_problems
                yield at(
                    f"{where}.args.tensor_parallel_size",
                    f"{where}.args.tensor_parallel_size: {tp} (allowed: at most the "
                    f"{dev.per_pod} {dev.kind.upper()} device(s) of one node of pool "
                    f"{pool.name!r})",
                )
            continue
        found = fit_problems(
            shape,
            dtype=args.dtype,
            max_model_len=args.max_model_len or shape.n_positions,
            tensor_parallel_size=tp,
            devices=dev.per_pod * dev.hosts,
            device_memory_gb=dev.memory_gb,
            device_kind=dev.kind,
        )
        yield from _fit_lines(where, found, tp, spec.tp_derived, origin, job, shape, pool.name, dev)


def _multi_host_problems(
    svc: ServiceConfig, dev: ServeDevices, pool: Any, kuberay: KubeRayConfig
) -> Iterable[Problem]:
    """A service on a multi-host TPU slice: one replica spans the whole slice, so
    ``tensor_parallel_size`` is its chips (Ray Serve LLM's slice placement group has one bundle
    per host, and tpu-inference's Ray executor one worker per bundle); the pods need the TPU
    initialization webhook (``kuberay.mode: helm`` without ``kuberay.tpu_webhook``), as
    :func:`components.stack.rules.multi_host_tpu_needs_webhook` says for jobs and clusters."""
    where = f"services[{svc.name}]"
    chips = dev.per_pod * dev.hosts
    tp = svc.args.get("tensor_parallel_size", chips)
    if tp != chips:
        yield at(
            f"{where}.args.tensor_parallel_size",
            f"{where}.args.tensor_parallel_size: {tp!r} (allowed: {chips}, every chip of the "
            f"multi-host {pool.slice.topology} slice of pool {pool.name!r}: a replica reserves "
            "the whole slice, one engine over its hosts; a smaller model fits a single-host "
            "slice pool)",
        )
    if kuberay.mode == "helm" and not kuberay.tpu_webhook:
        yield at(
            f"{where}.node_pool",
            f"{where}.node_pool: {pool.name!r}, a multi-host {pool.slice.topology} slice "
            "(allowed with kuberay.mode: gke-addon, or kuberay.tpu_webhook: true once the "
            "KubeRay TPU webhook is installed: it gives each pod TPU_WORKER_ID and "
            "TPU_WORKER_HOSTNAMES, which the slice's Ray nodes need)",
        )


def _fit_lines(
    where: str,
    found: Iterable[Problem],
    tp: int,
    derived: bool,
    origin: str,
    job: str,
    shape: CausalLmShape,
    pool: str,
    dev: ServeDevices,
) -> Iterable[Problem]:
    """:func:`contract.serve_fit.fit_problems`' lines as the service's fields, with the model
    and the pool they were measured on."""
    about = (
        f"; model of job {job!r}: d_model {shape.n_embd}, n_layers {shape.n_layer}, "
        f"n_heads {shape.n_head}, n_positions {shape.n_positions}; pool {pool!r}: {dev.what}"
    )
    for prob in found:
        on_model = prob.path in ("model", "model head size")
        field = "checkpoint" if on_model else f"args.{prob.path}"
        text = str(prob).split(": ", 1)[1] if ": " in str(prob) else str(prob)
        if prob.path == "model head size":  # vLLM's CPU attention (the checkpoint's shape)
            text = f"model head size {text}"
        if prob.path == "tensor_parallel_size" and derived:
            text = text.replace(f"{tp} (allowed:", f"{tp}{origin} (allowed:", 1)
            text += f"; set {where}.args.tensor_parallel_size to a divisor of both"
        yield at(f"{where}.{field}", f"{where}.{field}: {text}{about}")


def _cpu_fit(spec: ServiceSpec, jobs: list[JobConfig]) -> Iterable[Problem]:
    """The CPU pool part of :func:`service_fit_problems` (vLLM's CPU build: one engine process
    per replica, one placement bundle of ``num_cpus`` CPUs, a fixed KV cache space)."""
    svc, pool, dev, size = spec.service, spec.target.pool, spec.devices, spec.pod_size
    where = f"services[{svc.name}]"
    tp = svc.args.get("tensor_parallel_size", 1)
    if tp != 1:
        yield at(
            f"{where}.args.tensor_parallel_size",
            f"{where}.args.tensor_parallel_size: {tp!r} (allowed: 1 on CPU pool {pool.name!r}: "
            "a replica of vLLM's CPU build is one engine process, one placement bundle of "
            "args.num_cpus CPUs; give it more CPUs with args.num_cpus)",
        )
        return
    args = spec.parsed  # tensor_parallel_size 1 here, as unset
    if args is None or size is None:
        return  # service_workloads_and_checkpoints reports the arguments
    cpus, memory_gb = size
    try:
        vcpus = catalog.machine_shape(pool.machine_type).vcpus
    except catalog.CatalogError:
        vcpus = None
    if args.num_cpus > cpus:
        if vcpus is None or args.num_cpus <= vcpus:  # above the node: service_targets_fit
            yield at(
                f"{where}.args.num_cpus",
                f"{where}.args.num_cpus: {args.num_cpus:g} (allowed: at most {cpus:g} CPUs, the "
                f"worker pod of pool {pool.name!r}: a replica's engine is one placement bundle "
                "of num_cpus CPUs in one pod)",
            )
        return
    replicas = svc.args.get("max_replicas", spec.default_max_replicas)
    per_pod = int(cpus // args.num_cpus) if args.num_cpus > 0 else replicas
    engines = max(1, min(per_pod, replicas))
    room = engine_memory_gb(memory_gb)
    job = svc.checkpoint_job
    shape = None if job is None else trained_shape(jobs, job)
    if shape is None:
        # weights unknown offline (a gs:// checkpoint, a Hub model): the KV cache spaces alone
        space = args.cpu_kv_cache_gb * 2**30 / 1e9
        if engines * space > room:
            yield at(
                f"{where}.args.cpu_kv_cache_gb",
                f"{where}.args.cpu_kv_cache_gb: {args.cpu_kv_cache_gb:g} GiB x {engines} "
                f"engine(s) per worker pod = {engines * space:.1f} GB (allowed: at most "
                f"{room:.1f} GB together, the {memory_gb:.1f} GB of one worker pod of pool "
                f"{pool.name!r} less Ray's object store; a larger args.num_cpus places fewer "
                "engines per pod)",
            )
        return
    found = fit_problems(
        shape,
        dtype=args.dtype,
        max_model_len=args.max_model_len or shape.n_positions,
        tensor_parallel_size=1,
        devices=1,
        device_memory_gb=None,
        device_kind="cpu",
        cpu_kv_cache_gib=args.cpu_kv_cache_gb,
        host_memory_gb=room,
        engines_per_host=engines,
    )
    yield from _fit_lines(where, found, 1, False, "", job, shape, pool.name, dev)


__all__ = [
    "PLATFORM_BOUND_SERVE_ARGS",
    "ServeDevices",
    "ServiceSpec",
    "model_path",
    "serve_devices",
    "service_fit_problems",
    "service_spec",
    "tensor_parallel_size",
    "trained_shape",
]
