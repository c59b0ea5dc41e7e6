"""Cross-field rules of a stack about its Ray jobs and services (the Ray CRs concept): a job's
or service's target, slices, workload and arguments, identity and checkpoints.

Each rule is a named function yielding one :class:`~components.kernel.problems.Problem` per
problem, with a docstring citing where its fact comes from, handed what it reads by its
parameters' names (``p`` the stack's Plan, ``jobs``, ``services``, ... those blocks:
:func:`components.plan.plan.rule_inputs`); :data:`components.stack.rules.RULES` lists them with
the other cross-field rules, each with the top-level keys it reads, and runs them. References are
read from the Plan (resolved once by :mod:`components.plan.resolve`), so a wrong reference is
reported once and reads the same at every layer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.nodepools import GpuPool, TpuPool
from components.kernel.problems import Problem, at
from components.plan.resolve import ResolveError, reference_problem

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig
    from components.config.raycrs import JobConfig
    from components.config.serve import ServiceConfig
    from components.config.storage import BucketsConfig, SecretConfig
    from components.plan.plan import Plan


# ----------------------------------------------------------------------------------------- jobs


def job_targets_exist(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """A job names a declared ``cluster`` (and one of its worker groups, which may be left out
    when the cluster has exactly one) or a declared ``node_pool``: the RayJob either selects a
    RayCluster (``clusterSelector``) or carries its own ``rayClusterSpec``
    (https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html).
    A worker group's own undeclared pool is reported by
    :func:`components.stack.rules.worker_group_pools_exist_and_fit`, not again here."""
    for job in jobs:
        for e in p.errors(job, "job"):
            if e.field.startswith(f"jobs[{job.name}]"):
                yield reference_problem(e)


def job_slices_fit(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """A job's ``slices: {min, max}`` range targets a multi-host TPU pool (Ray Train's elastic
    TPU scaling counts workers in whole slices, ``ray/train/v2/_internal/execution/
    scaling_policy/elastic.py``; several slices of one job are a Multislice job, which GKE runs
    on multi-host slices only, https://cloud.google.com/kubernetes-engine/docs/how-to/
    tpu-multislice) and ``max`` is at most the replicas the job's worker group (or its own
    cluster's pool) has."""
    for job in jobs:
        if job.slices is None:
            continue
        try:
            target = p.job(job)
        except ResolveError:  # job_targets_exist reports it
            continue
        where = f"jobs[{job.name}].slices"
        if not isinstance(target.pool, TpuPool):
            yield (
                at(
                    where,
                    f"{where}: node pool {target.pool.name!r} is not a TPU pool; slices are for "
                    "TPU jobs (for GPU or CPU workers the worker group's replicas set the size)",
                )
            )
            continue
        s = target.pool.slice
        if not s.multi_host and job.slices.max > 1:
            yield (
                at(
                    where,
                    f"{where}: max {job.slices.max} slices of the single-host {s.generation.name} "
                    f"{s.topology} pool {target.pool.name!r}; one job spans several slices only on "
                    "multi-host slices (Multislice); use a multi-host topology or max: 1",
                )
            )
        if job.slices.max > target.replicas:
            yield (
                at(
                    where,
                    f"{where}: max {job.slices.max} is above the {target.replicas} slice(s) the job's "
                    f"{'node pool' if target.own_cluster else 'worker group'} has; lower it or raise "
                    "the pool's max_slices / the group's max_replicas",
                )
            )


def job_service_accounts_declared(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """A job's ``service_account`` (its submitter pod's, and its own RayCluster's) is a declared
    workload identity (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."""
    for job in jobs:
        for e in p.errors(job, "identity"):
            yield reference_problem(e)


# Job arguments the platform binds (components.raycrs.rayjob.job_args): a job's args may
# not set them, or a job would train on CPU on a GPU pool (scaling), checkpoint outside its
# folder or bucket (name, storage_path), read another dataset (dataset) or lose its restart
# budget (max_failures). Value: what sets it.
PLATFORM_BOUND_ARGS: dict[str, str] = {
    "scaling": "the job's node pool or worker group (and placement_strategy)",
    "max_failures": "jobs[].max_failures",
    "storage_path": "the checkpoints bucket",
    "name": "the job name (its checkpoint folder <checkpoints bucket>/<job name>)",
    "dataset": "the datasets bucket (<datasets bucket>/<folder>)",
    "peak_flops_per_device": "the catalog's accelerator facts",
}


_FOLDER = re.compile(r"[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*")


def _dataset_folder_problem(value: object) -> str | None:
    """Why a job's ``args.dataset`` is not a folder of the datasets bucket (the platform puts the
    dataset in ``<datasets bucket>/<folder>``, default ``lm-bytes``: a fine-tuning job's
    tokenized dataset names its own), else None."""
    if isinstance(value, str) and _FOLDER.fullmatch(value) and ".." not in value.split("/"):
        return None
    return (
        f"{value!r} is not a folder of the datasets bucket; write a name such as llama-tokens "
        "(lowercase letters, digits, '.', '_', '-', '/' between parts): the platform reads and "
        "writes <datasets bucket>/<folder>, default lm-bytes"
    )


def job_workloads_registered(jobs: list[JobConfig]) -> Iterable[Problem]:
    """A job's ``workload`` is in :data:`contract.registry.WORKLOADS` and its ``args`` are
    arguments of that workload with the types of its defaults (``Workload.arg_problems``), none of
    them one the platform binds (:data:`PLATFORM_BOUND_ARGS`); a ``placement_strategy`` only on a
    workload that takes ``scaling`` and places a group of Ray Train workers (a trainer, not
    ``tune_lm``, whose trials take one worker's resources each)."""
    for job in jobs:
        problem = _workload_problem(job.workload)
        if problem:
            yield at(f"jobs[{job.name}].workload", f"jobs[{job.name}].workload {problem}")
            continue
        workload = _workload(job.workload)
        for p in workload.arg_problems(job.args):
            yield at(f"jobs[{job.name}].args", f"jobs[{job.name}].args: {p}")
        for key in sorted(set(job.args) & set(PLATFORM_BOUND_ARGS)):
            if key == "name" and "checkpoints" not in workload.writes:
                continue  # a reader (evaluate) names the run it reads
            if key == "dataset":
                if (why := _dataset_folder_problem(job.args[key])) is not None:
                    yield at(
                        f"jobs[{job.name}].args.dataset", f"jobs[{job.name}].args.dataset: {why}"
                    )
                continue
            yield (
                at(
                    f"jobs[{job.name}].args.{key}",
                    f"jobs[{job.name}].args.{key}: the platform sets it from "
                    f"{PLATFORM_BOUND_ARGS[key]}; remove it",
                )
            )
        if job.placement_strategy and "scaling" not in workload.args.names():
            yield (
                at(
                    f"jobs[{job.name}].placement_strategy",
                    f"jobs[{job.name}].placement_strategy {job.placement_strategy}: workload "
                    f"{job.workload} places no Ray Train workers (it takes no scaling argument); "
                    "remove it",
                )
            )
        elif job.placement_strategy and job.workload == "tune_lm":
            yield (
                at(
                    f"jobs[{job.name}].placement_strategy",
                    f"jobs[{job.name}].placement_strategy {job.placement_strategy}: tune_lm runs "
                    "each trial as one Ray Tune actor of one worker's resources, so there is no "
                    "group of workers to place; remove it",
                )
            )


def job_identity_can_write_outputs(p: Plan, jobs: list[JobConfig]) -> Iterable[Problem]:
    """The identity a job's Ray processes run as (:meth:`components.plan.plan.Plan.runs_as`:
    the RayCluster's service account on a long-lived cluster, else the job's own) has ``write``
    on every bucket its workload writes (``Workload.writes``); the bucket-level roles are
    granted per :mod:`components.security.iam`
    (https://cloud.google.com/storage/docs/access-control/iam-roles). Jobs with an unknown
    workload, cluster or identity are left to the rules that report those."""
    for job in jobs:
        if _workload_problem(job.workload):
            continue
        runs_as = p.runs_as(job)
        identity = None if runs_as is None else p.identities.get(runs_as)
        if identity is None:
            continue
        for purpose in _workload(job.workload).writes:
            if identity.buckets.get(purpose) != "write":
                yield (
                    at(
                        f"jobs[{job.name}]",
                        f"jobs[{job.name}]: workload {job.workload} writes to the {purpose} bucket "
                        f"but runs as {runs_as!r}, which has "
                        f"{identity.buckets.get(purpose) or 'no'} access there; "
                        f"set workload_identities[{runs_as}].buckets.{purpose}: write",
                    )
                )


def service_targets_fit(p: Plan, services: list[ServiceConfig]) -> Iterable[Problem]:
    """A service's ``node_pool`` is declared, of a kind its Serve application supports
    (``Workload.accelerators`` in :mod:`contract.registry`, with the recorded reason when not;
    ``serve_llm`` runs on all three kinds), ``min_workers`` <= the pool's
    capacity (:func:`components.plan.resolve.resolve_service`), and a replica's ``args.num_gpus``
    / ``args.num_cpus`` within one node of the pool (:func:`components.catalog.machine_shape`)."""
    for svc in services:
        where = f"services[{svc.name}]"
        try:
            t = p.service(svc)
        except ResolveError as e:
            yield reference_problem(e)
            continue
        if svc.min_workers > t.max_replicas:
            yield (
                at(
                    f"{where}.min_workers",
                    f"{where}.min_workers {svc.min_workers} > {t.max_replicas} (max_workers, else "
                    f"the capacity of node pool {t.pool.name!r})",
                )
            )
        if _workload_problem(svc.workload, service=True):
            continue
        workload = _workload(svc.workload)
        kinds = workload.accelerators
        if t.pool.kind not in kinds:
            why = dict(workload.unsupported).get(t.pool.kind)
            yield (
                at(
                    f"{where}.node_pool",
                    f"{where}.node_pool: {t.pool.name!r} is a {t.pool.kind} pool (allowed: "
                    f"{' or '.join(k.upper() for k in kinds)} pools); Serve application "
                    f"{svc.workload} runs on {', '.join(kinds)} pools"
                    + (f": {why}" if why else ""),
                )
            )
        # A replica runs in one worker pod, on one node: it can never ask for more than the node
        # has (machine shapes from the catalog).
        gpus = t.pool.gpu.count if isinstance(t.pool, GpuPool) else 0
        want = svc.args.get("num_gpus")
        if isinstance(want, (int, float)) and want > gpus:
            yield (
                at(
                    f"{where}.args.num_gpus",
                    f"{where}.args.num_gpus {want:g}: a replica runs on one node of pool "
                    f"{t.pool.name!r}, which has {gpus} GPU(s); at most {gpus}",
                )
            )
        want = svc.args.get("num_cpus")
        try:
            vcpus = catalog.machine_shape(t.pool.machine_type).vcpus
        except catalog.CatalogError:
            vcpus = None
        if isinstance(want, (int, float)) and vcpus is not None and want > vcpus:
            yield (
                at(
                    f"{where}.args.num_cpus",
                    f"{where}.args.num_cpus {want:g}: a replica runs on one node of pool "
                    f"{t.pool.name!r} ({t.pool.machine_type}, {vcpus} vCPUs); at most {vcpus}",
                )
            )


def service_workloads_and_checkpoints(
    services: list[ServiceConfig], jobs: list[JobConfig]
) -> Iterable[Problem]:
    """A service's ``workload`` is a registered Serve application (:mod:`contract.registry`, ``serve_apps()``)
    and its ``args`` fit it; a ``checkpoint`` that is not a ``gs://`` path names a declared job
    whose workload writes checkpoints (its folder ``<checkpoints bucket>/<job name>`` is served)."""
    by_name = {j.name: j for j in jobs}
    for svc in services:
        where = f"services[{svc.name}]"
        problem = _workload_problem(svc.workload, service=True)
        if problem:
            yield at(f"{where}.workload", f"{where}.workload {problem}")
        else:
            for p in _workload(svc.workload).arg_problems(svc.args):
                yield at(f"{where}.args", f"{where}.args: {p}")
        name = svc.checkpoint_job
        if name is None:
            continue
        job = by_name.get(name)
        if job is None:
            declared = ", ".join(by_name) or "none"
            yield (
                at(
                    f"{where}.checkpoint",
                    f"{where}.checkpoint {name!r} is neither a gs:// path nor a declared job; "
                    f"declared jobs: {declared}",
                )
            )
        elif not _workload_problem(job.workload) and (
            "checkpoints" not in _workload(job.workload).writes
        ):
            yield (
                at(
                    f"{where}.checkpoint",
                    f"{where}.checkpoint {name!r}: job {name} runs {job.workload}, which writes no "
                    "checkpoints",
                )
            )


def job_checkpoint_references(
    jobs: list[JobConfig], project: str, cluster: ClusterConfig, buckets: BucketsConfig
) -> Iterable[Problem]:
    """A job that reads a training run (a workload of :data:`contract.registry.WORKLOADS` with
    ``name`` and ``checkpoint`` arguments that writes no checkpoints: ``evaluate``) reads ``<checkpoints bucket>/<args.name>``
    (:func:`components.raycrs.rayjob.job_args`), so ``args.name`` (its default when unset)
    names a declared job whose workload writes checkpoints, and a ``gs://`` ``args.checkpoint``
    lies in the checkpoints bucket under that job's folder. Each problem names the field, the
    value and the valid training jobs."""
    from components.kernel.names import bucket_name

    by_name = {j.name: j for j in jobs}
    writers = [
        n
        for n, j in by_name.items()
        if not _workload_problem(j.workload) and "checkpoints" in _workload(j.workload).writes
    ]
    valid = ", ".join(writers) or "none declared"
    bucket = bucket_name(project, cluster.name, buckets.prefix, "checkpoints")
    for job in jobs:
        if _workload_problem(job.workload):
            continue
        workload = _workload(job.workload)
        names = set(workload.args.names())
        if "checkpoints" in workload.writes or not {"name", "checkpoint"} <= names:
            continue
        where = f"jobs[{job.name}].args"
        run = job.args.get("name", workload.args().name)
        if run not in writers:
            default = "" if "name" in job.args else " (the default; set args.name)"
            yield (
                at(
                    f"{where}.name",
                    f"{where}.name {run!r}{default} names no job that writes checkpoints, so "
                    f"{job.name} would read gs://{bucket}/{run}, which nothing writes; valid: {valid}",
                )
            )
            continue
        ckpt = job.args.get("checkpoint")
        if isinstance(ckpt, str) and ckpt.startswith("gs://"):
            b, _, rest = ckpt[len("gs://") :].partition("/")
            folder = rest.split("/", 1)[0]
            if b != bucket or folder != run:
                yield (
                    at(
                        f"{where}.checkpoint",
                        f"{where}.checkpoint {ckpt!r} is not under gs://{bucket}/{run}/, the folder "
                        f"of job {run} that args.name names; valid training jobs: {valid}",
                    )
                )


def service_identity_can_read(p: Plan, services: list[ServiceConfig]) -> Iterable[Problem]:
    """A service's ``service_account`` is a declared workload identity that may read the
    checkpoints (the model, for a ``checkpoint`` service) and artifacts (the workloads archive, its ``working_dir``) buckets
    (bucket roles per :mod:`components.security.iam`; https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."""
    for svc in services:
        where = f"services[{svc.name}].service_account"
        errors = p.errors(svc, "identity")
        yield from (reference_problem(e) for e in errors)
        identity = p.identities.get(svc.service_account)
        if errors or identity is None:
            continue
        # A Hub model (hf_model) is downloaded, not read from the checkpoints bucket.
        purposes = ("checkpoints", "artifacts") if svc.checkpoint is not None else ("artifacts",)
        for purpose in purposes:
            if identity.buckets.get(purpose) not in ("read", "write"):
                yield (
                    at(
                        where,
                        f"{where} {svc.service_account!r} cannot read the {purpose} bucket; set "
                        f"workload_identities[{svc.service_account}].buckets.{purpose}: read",
                    )
                )


def service_hf_token_readable(
    services: list[ServiceConfig], secrets: list[SecretConfig]
) -> Iterable[Problem]:
    """A service's ``hf_token_secret`` names a declared ``secrets:`` entry whose ``readers``
    include the service's ``service_account``: GKE's Secret Manager add-on reads the secret as
    the pod's Kubernetes service account through Workload Identity, and only ``readers`` are
    granted ``roles/secretmanager.secretAccessor`` on it
    (https://cloud.google.com/secret-manager/docs/secret-manager-managed-csi-component;
    :mod:`components.security.component`), so without it the pod never starts (the volume
    mount fails)."""
    secrets = {s.name: s for s in secrets}
    for svc in services:
        if svc.hf_token_secret is not None:
            where = f"services[{svc.name}].hf_token_secret"
            yield from _token_readable(
                where, svc.hf_token_secret, svc.service_account, "service", secrets
            )


def _token_readable(
    where: str, name: str, account: str, owner: str, secrets: dict[str, Any]
) -> Iterable[Problem]:
    """``name`` is a declared secret whose readers include ``account`` (a ``owner``'s)."""
    secret = secrets.get(name)
    if secret is None:
        declared = ", ".join(sorted(secrets)) or "none"
        yield at(
            where,
            f"{where}: {name!r} is not a declared secret (allowed: the name of a secrets: "
            f"entry; declared: {declared})",
        )
    elif account not in secret.readers:
        readers = ", ".join(secret.readers) or "none"
        yield at(
            where,
            f"{where}: {name!r}: its readers ({readers}) lack the {owner}'s service_account "
            f"{account!r}, so the pods cannot read the token (allowed: a secret "
            f"whose readers include it; add {account} to "
            f"secrets[{name}].readers)",
        )


# The workload arguments naming a Hugging Face model a job's pods read (contract/args/).
HF_SOURCE_ARGS = ("init_model", "tokenizer")


def job_hf_sources(
    p: Plan,
    jobs: list[JobConfig],
    secrets: list[SecretConfig],
    project: str,
    cluster: ClusterConfig,
    buckets: BucketsConfig,
) -> Iterable[Problem]:
    """A job's Hugging Face model (``args.init_model`` of train_lm, ``args.tokenizer`` of
    prepare: issue 47's fine-tuning, :mod:`workloads.hf_model`) is read by the job's pods, so it is a ``gs://`` folder in
    the checkpoints bucket (which the job's ``service_account`` reads) or a Hub repo id
    ``owner/name`` (downloaded through the cluster's Cloud NAT); ``hf_token_secret`` goes with
    a Hub id, on a job with its own cluster (``node_pool``: a long-lived RayCluster's pods
    cannot mount the job's token), and names a declared secret the job's ``service_account``
    reads (as a service's)."""
    from components.kernel.names import bucket_name
    from contract.args.serve_llm import is_hub_repo_id

    bucket = bucket_name(project, cluster.name, buckets.prefix, "checkpoints")
    allowed = (
        f"allowed: a folder gs://{bucket}/<path> in the checkpoints bucket or a Hugging Face "
        "Hub repo id owner/name"
    )
    secrets = {s.name: s for s in secrets}
    for job in jobs:
        names = set() if _workload_problem(job.workload) else _workload(job.workload).args.names()
        hub = False
        for key in HF_SOURCE_ARGS:
            value = job.args.get(key)
            if key not in names or not isinstance(value, str):
                continue  # unknown or mistyped arguments: the workload arguments' rule
            where = f"jobs[{job.name}].args.{key}"
            if is_hub_repo_id(value):
                hub = True
                continue
            b, _, rest = value.removeprefix("gs://").partition("/")
            if not value.startswith("gs://") or b != bucket or not rest.strip("/"):
                yield at(where, f"{where} {value!r} is not readable by the job's pods; {allowed}")
                continue
            identity = p.identities.get(job.service_account)
            if identity is not None and identity.buckets.get("checkpoints") not in (
                "read",
                "write",
            ):
                yield at(
                    where,
                    f"{where} {value!r}: the job's service_account {job.service_account!r} "
                    "cannot read the checkpoints bucket (allowed: an identity that reads it; set "
                    f"workload_identities[{job.service_account}].buckets.checkpoints: read)",
                )
        name = job.hf_token_secret
        if name is None:
            continue
        where = f"jobs[{job.name}].hf_token_secret"
        if not hub:
            yield at(
                where,
                f"{where} {name!r} is set but neither args.init_model nor args.tokenizer of the "
                "job names a Hub repo id (allowed: only with a Hub model; remove it)",
            )
        if job.cluster:
            yield at(
                where,
                f"{where} {name!r} with cluster: {job.cluster}: that RayCluster's pods cannot "
                "mount the job's token (allowed: a job with node_pool, which brings its own "
                "cluster)",
            )
        yield from _token_readable(where, name, job.service_account, "job", secrets)


def service_gateway_not_public(services: list[ServiceConfig]) -> Iterable[Problem]:
    """A service's ``gateway`` is internal unless ``public: true`` (secure by default): Serve's
    HTTP port 8000 has no authentication (Ray's token covers the head's APIs, not Serve), so a
    public GatewayClass (``gke-l7-global-external-managed``,
    ``gke-l7-regional-external-managed``, ``gke-l7-gxlb``, their ``-mc`` variants: an internet-
    facing load balancer, https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api)
    would serve the model to anyone. ``public: true`` with an internal class changes nothing and
    is refused too."""
    for svc in services:
        gw = svc.gateway
        if gw is None:
            continue
        where = f"services[{svc.name}].gateway"
        if gw.is_public and not gw.public:
            yield at(
                f"{where}.gateway_class_name",
                f"{where}.gateway_class_name: {gw.gateway_class_name!r} is a public (internet-"
                "facing) load balancer and Serve's port has no authentication (allowed: an "
                "internal class such as gke-l7-rilb, the default; or set gateway.public: true "
                "with your own authentication in front)",
            )
        if gw.public and not gw.is_public:
            yield at(
                f"{where}.public",
                f"{where}.public: true with the internal class {gw.gateway_class_name!r} changes "
                "nothing (allowed: false, or true with a public class such as "
                "gke-l7-global-external-managed)",
            )


def incremental_upgrade_gateway(services: list[ServiceConfig]) -> Iterable[Problem]:
    """With ``NewClusterWithIncrementalUpgrade`` KubeRay's own Gateway ``<name>-gateway`` (class
    ``clusterUpgradeOptions.gatewayClassName``, one HTTP listener on port 80, every host) and
    HTTPRoute ``<name>-httproute`` are the service's ingress in place of its ``gateway``'s
    (rayservice_controller.go ``createGateway`` / ``createHTTPRoute``;
    :func:`components.raycrs.ingress.gateway_manifests`): a ``gateway.hostname`` would not be
    honoured, an ``incremental_upgrade.gateway_class_name`` other than the gateway's class would
    put the Gateway on a class its NetworkPolicy does not admit, and a public class needs
    ``gateway.public`` as :func:`service_gateway_not_public` says
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html).
    """
    from components.config.serve import GatewayConfig

    for svc in services:
        opts = svc.upgrade_options
        if opts is None:
            continue
        gw, where = svc.gateway, f"services[{svc.name}]"
        if gw is not None and gw.hostname is not None:
            yield at(
                f"{where}.gateway.hostname",
                f"{where}.gateway.hostname {gw.hostname!r}: the incremental upgrade's Gateway "
                "(KubeRay's) matches every host name; remove it, or set upgrade_strategy: "
                "NewCluster to keep the service's own Gateway",
            )
        if gw is not None and opts.gateway_class_name != gw.gateway_class_name:
            yield at(
                f"{where}.incremental_upgrade.gateway_class_name",
                f"{where}.incremental_upgrade.gateway_class_name {opts.gateway_class_name!r} "
                f"differs from gateway.gateway_class_name {gw.gateway_class_name!r}: KubeRay's "
                "Gateway replaces the service's; leave it unset (it takes the gateway's)",
            )
        if gw is None and GatewayConfig(gateway_class_name=str(opts.gateway_class_name)).is_public:
            yield at(
                f"{where}.incremental_upgrade.gateway_class_name",
                f"{where}.incremental_upgrade.gateway_class_name {opts.gateway_class_name!r} is "
                "a public load balancer and Serve's port has no authentication; use an internal "
                "class (gke-l7-rilb), or a gateway with public: true",
            )


def _workload(name: str) -> Any:
    from contract.registry import get_workload

    return get_workload(name)


def _workload_problem(name: str, service: bool = False) -> str | None:
    # contract.registry is standard-library only (design: components may refer to workloads by
    # module path, never import ray/torch/jax).
    from contract.registry import WORKLOADS, jobs, serve_apps

    valid = serve_apps() if service else jobs()
    if name not in WORKLOADS:
        return f"{name!r} is not a registered workload; registered: {', '.join(valid)}"
    if name not in valid:
        what = "a job" if service else "a Ray Serve application (a services: entry)"
        return f"{name!r} is {what}; valid here: {', '.join(valid)}"
    return None
