"""Cross-field rules of a stack (rules that span several top-level blocks): :data:`RULES`, in the
order they run, each with the top-level keys it reads (``needs``); :func:`rule_problems` runs
them all, :func:`run_rule` one. A rule is handed what it reads by its parameters' names
(:func:`components.plan.plan.rule_inputs`): ``p``, the stack's Plan; a block's name (``zones``,
``node_pools``), that block; ``cfg``, the whole stack (only for a rule over every block).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

from components import catalog
from components.capacity.rules import stack_rules as capacity_stack_rules
from components.capacity.superslice import problems as superslice_problems
from components.computeclass.rules import (
    compute_class_fallback_capabilities,
    compute_class_flex_start_min_gke_version,
    compute_class_pools,
    compute_class_pools_not_queued,
    compute_class_shapes_fit_nap,
)
from components.config.images import IMAGE_KINDS
from components.config.nodepools import GpuPool, TpuPool
from components.gcsft.rules import gcs_ft_rules
from components.gpunet.rules import gpu_networking_rules
from components.kernel.base import NODES_PER_POOL_ZONE_MAX, ZONE_NAME, plural
from components.kernel.problems import Problem, Rule, at
from components.plan.plan import rule_inputs
from components.plan.resolve import ResolveError, nap_needs, reference_problem
from components.raycrs.batch_fit import batch_job_problems
from components.raycrs.gates import incremental_upgrade_needs_helm
from components.raycrs.rules import (
    incremental_upgrade_gateway,
    job_checkpoint_references,
    job_hf_sources,
    job_identity_can_write_outputs,
    job_service_accounts_declared,
    job_slices_fit,
    job_targets_exist,
    job_workloads_registered,
    service_gateway_not_public,
    service_hf_token_readable,
    service_identity_can_read,
    service_targets_fit,
    service_workloads_and_checkpoints,
)
from components.raycrs.serve_replicas import service_autoscaling_problems
from components.raycrs.serving import service_fit_problems
from components.raycrs.training_fit import job_memory_fits

if TYPE_CHECKING:
    from components.config.cluster import ClusterConfig, NapConfig
    from components.config.kuberay import KubeRayConfig
    from components.config.nodepools import NodePool
    from components.config.raycrs import JobConfig, RayClusterConfig, RayConfig
    from components.config.stack import StackConfig
    from components.config.storage import BucketsConfig, SecretConfig
    from components.plan.plan import Plan


def _duplicates(names: Iterable[str]) -> list[str]:
    return sorted(n for n, c in Counter(names).items() if c > 1)


# ------------------------------------------------------------------------------------- location


def zones_in_region(region: str, zones: list[str]) -> Iterable[Problem]:
    """Every stack zone is a zone of the stack's region (``<region>-<letter>``, a letter the
    region has per :data:`components.catalog.GCP_REGIONS`): GKE node locations must be in the
    cluster's region (https://cloud.google.com/kubernetes-engine/docs/concepts/regional-clusters,
    https://cloud.google.com/compute/docs/regions-zones)."""
    for z in zones:
        if not ZONE_NAME.match(z) or not z.startswith(region + "-"):
            yield at("zones", f"zones: {z!r} is not a zone of region {region} (e.g. {region}-a)")
        elif problem := catalog.zone_problem(z, region):
            yield at(
                "zones",
                f"zones: {problem} (catalog GCP_REGIONS, recorded {catalog.REGIONS_RECORDED})",
            )


def pool_zones_in_region(region: str, node_pools: list[NodePool]) -> Iterable[Problem]:
    """A node pool's own ``zones`` are zones of the stack's region: a node pool's locations are
    zones of its cluster's region
    (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools,
    ``locations``)."""
    for pool in node_pools:
        field = f"node_pools[{pool.name}].zones"
        for z in pool.zones or []:
            if not z.startswith(region + "-"):
                yield at(field, f"{field}: {z!r} is not in region {region}")
            elif not ZONE_NAME.match(z):
                yield at(
                    field, f"{field}: {z!r} is not a zone of region {region} (e.g. {region}-a)"
                )
            elif problem := catalog.zone_problem(z, region):
                yield at(field, f"{field}: {problem}")


def unique_names(cfg: StackConfig) -> Iterable[Problem]:
    """Names are unique per list: GKE node pools of a cluster (``system`` is the built-in
    system pool), Kubernetes objects of a namespace (RayClusters, RayJobs, Secrets), the
    worker groups of a RayCluster (KubeRay keys pods by ``groupName``), and Google service
    accounts of a project (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/).

    Handed ``cfg``, not its six lists, with no ``needs``: in a partial validation an invalid list
    holds its default, which has no duplicates, so the valid lists are still checked.
    """
    for what, names in (
        ("node_pools", [p.name for p in cfg.node_pools] + ["system"]),
        ("ray_clusters", [c.name for c in cfg.ray_clusters]),
        ("jobs", [j.name for j in cfg.jobs]),
        ("workload_identities", [w.name for w in cfg.workload_identities]),
        ("secrets", [s.name for s in cfg.secrets]),
        ("services", [s.name for s in cfg.services]),
    ):
        for dup in _duplicates(names):
            note = " ('system' is the built-in system pool)" if dup == "system" else ""
            # the path names the entry, so an annotation lands on it, not on the list
            yield at(f"{what}[{dup}]", f"{what}: name {dup!r} is used more than once{note}")
    for rc in cfg.ray_clusters:
        for dup in _duplicates(g.name for g in rc.worker_groups):
            yield at(
                f"ray_clusters[{rc.name}].worker_groups[{dup}]",
                f"ray_clusters[{rc.name}].worker_groups: name {dup!r} is used more than once",
            )


# ---------------------------------------------------------------------------------- accelerators


def accelerator_zones_offered(zones: list[str], node_pools: list[NodePool]) -> Iterable[Problem]:
    """A TPU or GPU pool's zones offer its accelerator, per :mod:`components.catalog` (sources:
    https://cloud.google.com/tpu/docs/regions-zones, https://cloud.google.com/compute/docs/gpus/gpu-regions-zones);
    ``allow_unlisted_zone: true`` waives it when Google offers it there after the catalog's date."""
    for pool in node_pools:
        if not isinstance(pool, TpuPool | GpuPool) or pool.allow_unlisted_zone:
            continue
        acc = pool.slice.generation if isinstance(pool, TpuPool) else pool.gpu.gpu
        label = f"TPU {acc.name}" if isinstance(pool, TpuPool) else acc.name
        for z in pool.zones or zones:
            if z not in acc.zones and ZONE_NAME.match(z):  # a malformed zone is reported as such
                yield at(
                    f"node_pools[{pool.name}]",
                    f"node_pools[{pool.name}]: {label} is not offered in zone {z} per the "
                    f"catalog; offered in: {', '.join(acc.zones)} (set allow_unlisted_zone: "
                    "true if Google offers it there now)",
                )


def gke_version_offered(cluster: ClusterConfig) -> Iterable[Problem]:
    """A pinned ``cluster.min_master_version`` is one GKE offers for new clusters in the
    cluster's release channel (:func:`components.catalog.gke_version_problem`, from the catalog's
    dated record of https://cloud.google.com/kubernetes-engine/docs/release-schedule)."""
    have = cluster.min_master_version
    if have and (problem := catalog.gke_version_problem(have, cluster.release_channel)):
        yield at(
            "cluster.min_master_version",
            f"cluster.min_master_version: min_master_version {problem}",
        )


def tpu_min_gke_version(cluster: ClusterConfig, node_pools: list[NodePool]) -> Iterable[Problem]:
    """``cluster.min_master_version`` is at least the minimum GKE version for node pools of each
    declared TPU generation (``TpuGeneration.min_gke_version`` in :mod:`components.catalog`, from
    https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#availability; where no
    page states the oldest version, a sourced version that supports the generation, as the
    catalog entry says)."""
    have = cluster.min_master_version
    if not have:
        return
    for pool in node_pools:
        if not isinstance(pool, TpuPool):
            continue
        need = pool.slice.generation.min_gke_version
        if catalog.parse_gke_version(have) < catalog.parse_gke_version(need):
            yield at(
                "cluster.min_master_version",
                f"cluster.min_master_version {have} is older than {need}, the minimum GKE "
                f"version for TPU {pool.slice.generation.name} node pools "
                f"(node_pools[{pool.name}])",
            )


def nap_limits_cover_pools(
    nap: NapConfig, cluster: ClusterConfig, node_pools: list[NodePool]
) -> Iterable[Problem]:
    """With Node Auto Provisioning on, each ``nap.resource_limits`` entry (cpu and memory
    included, defaulted when not given) is at least what the declared pools can scale to: the cluster-wide limits count every node, autoscaled pools
    included, and the autoscaler stops adding nodes at the limit
    (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning#resource_limits)."""
    if not nap.enabled:
        return
    needed = nap_needs(cluster.system_pool, node_pools)
    for key, have in nap.effective_limits.items():
        if key in needed and have < needed[key]:
            yield at(
                f"nap.resource_limits.{key}",
                f"nap.resource_limits[{key}] {have} is smaller than the declared node pools "
                f"can scale to ({needed[key]}); raise it to at least {needed[key]}",
            )


def pool_node_counts_within_gke_limits(
    cluster: ClusterConfig, zones: list[str], node_pools: list[NodePool]
) -> Iterable[Problem]:
    """A CPU or GPU pool's ``max_nodes`` (a total over its zones) is at most 1,000 per zone:
    GKE allows 1,000 nodes per node pool per zone
    (https://cloud.google.com/kubernetes-engine/quotas#limits_per_cluster)."""
    pools = [(f"node_pools[{p.name}]", p, list(p.zones or zones)) for p in node_pools]
    pools.append(("cluster.system_pool", cluster.system_pool, list(zones)))
    for where, pool, zones in pools:
        if isinstance(pool, TpuPool):
            continue  # one GKE node pool per slice of at most 64 hosts (catalog topologies)
        limit = NODES_PER_POOL_ZONE_MAX * len(zones)
        if pool.max_nodes > limit:
            yield at(
                f"{where}.max_nodes",
                f"{where}.max_nodes {pool.max_nodes} exceeds GKE's 1,000 nodes per node pool "
                f"per zone ({plural(len(zones), 'zone')}: at most {limit})",
            )


# ------------------------------------------------------------------------------ ray clusters


def cluster_service_accounts_declared(
    ray_clusters: list[RayClusterConfig], p: Plan
) -> Iterable[Problem]:
    """A RayCluster's ``service_account`` is a declared workload identity: its pods run as that
    identity's Kubernetes service account, which only exists when declared
    (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."""
    for rc in ray_clusters:
        for e in p.errors(rc, "identity"):
            yield reference_problem(e)


def worker_group_pools_exist_and_fit(
    ray_clusters: list[RayClusterConfig], p: Plan
) -> Iterable[Problem]:
    """A worker group's ``node_pool`` is declared, ``min_replicas`` <= ``maxReplicas``, and
    ``maxReplicas`` fits the pool: a replica is one slice on TPU pools, one node otherwise
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html); more would stay
    Pending."""
    for rc in ray_clusters:
        for g in rc.worker_groups:
            try:
                t = p.group(rc, g)
            except ResolveError as e:
                yield reference_problem(e)
                continue
            if g.min_replicas > t.max_replicas:
                yield at(
                    f"{t.field}.min_replicas",
                    f"{t.field}: min_replicas {g.min_replicas} > max_replicas {t.max_replicas}",
                )
            if t.max_replicas > t.capacity:
                yield at(
                    f"{t.field}.max_replicas",
                    f"{t.field}.max_replicas {t.max_replicas} exceeds node pool {t.pool.name!r} "
                    f"capacity of {plural(t.capacity, t.unit.removesuffix('s'))}",
                )


def multi_host_tpu_needs_webhook(
    kuberay: KubeRayConfig, ray_clusters: list[RayClusterConfig], jobs: list[JobConfig], p: Plan
) -> Iterable[Problem]:
    """Multi-host TPU slices need the TPU initialization webhook, which injects each pod's
    ``TPU_WORKER_ID`` / ``TPU_WORKER_HOSTNAMES``
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html); the GKE Ray add-on
    installs it, the ``kuberay-operator`` Helm chart does not
    (https://github.com/GoogleCloudPlatform/ai-on-gke/tree/main/ray-on-gke/tpu/kuberay-tpu-webhook).
    Unresolvable references are left to the rules that report them."""
    if kuberay.mode != "helm" or kuberay.tpu_webhook:
        return
    users = [
        (f"ray_clusters[{rc.name}].worker_groups[{g.name}]", ".node_pool", g.node_pool)
        for rc in ray_clusters
        for g in rc.worker_groups
    ]
    users += [(f"jobs[{j.name}].node_pool", "", j.node_pool) for j in jobs if j.node_pool]
    for where, suffix, pool_name in users:
        pool = p.pools.get(pool_name)  # an undeclared pool is reported by the reference rules
        if isinstance(pool, TpuPool) and pool.slice.multi_host:
            yield at(
                where + suffix,
                f"{where}: the multi-host TPU slice {pool.tpu.generation} "
                f"{pool.tpu.topology} needs the TPU initialization webhook, which "
                "kuberay.mode 'helm' does not install; set kuberay.mode: gke-addon, or "
                "kuberay.tpu_webhook: true once you have installed it",
            )


# --------------------------------------------------------------------------------------- images


def ray_version_locked(ray: RayConfig, node_pools: list[NodePool]) -> Iterable[Problem]:
    """``ray.version`` has a locked requirement set (:func:`components.images.locks.ray_version_problem`)
    when the stack builds any of the project's images: the base image follows ``ray.version`` and
    the pins follow the lock (:mod:`components.images.locks`), so the two must be the same Ray. The
    stack builds the CPU image unless ``ray.images.cpu`` is given (every head runs it), the GPU
    and TPU images when it has such pools and no prebuilt image for them."""
    from components.images.locks import ray_version_problem

    images = ray.images
    builds = (
        images.get("cpu") is None
        or (any(isinstance(p, GpuPool) for p in node_pools) and images.get("gpu") is None)
        or (any(isinstance(p, TpuPool) for p in node_pools) and images.get("tpu") is None)
    )
    if builds and (problem := ray_version_problem(ray.version)):
        yield at("ray.version", f"ray.version {problem}")


def secret_readers_declared(secrets: list[SecretConfig], p: Plan) -> Iterable[Problem]:
    """A secret's ``readers`` are declared workload identities: each is granted
    ``roles/secretmanager.secretAccessor`` on the secret
    (https://cloud.google.com/secret-manager/docs/access-control)."""
    for secret in secrets:
        for e in p.errors(secret, "identity"):
            yield reference_problem(e)


def prebuilt_images_pinned_when_protected(
    cluster: ClusterConfig, ray: RayConfig
) -> Iterable[Problem]:
    """With ``cluster.deletion_protection: true`` (production), a prebuilt image in
    ``ray.images`` is referenced by digest (``@sha256:``): a tag can be moved to other contents,
    a digest names exactly one image
    (https://cloud.google.com/kubernetes-engine/docs/concepts/about-container-images#image_digests).
    The project's own images are always referenced by their pushed digest."""
    if not cluster.deletion_protection:
        return
    for kind in IMAGE_KINDS:
        prebuilt = ray.images.get(kind)
        if prebuilt is not None and not prebuilt.pinned:
            yield at(
                f"ray.images.{kind}",
                f"ray.images.{kind}: {prebuilt.image} is a tag; a stack with "
                "cluster.deletion_protection: true references prebuilt images by digest: write "
                f"{prebuilt.image.split('@')[0]}@sha256:<digest>, or unset ray.images.{kind} to "
                "use the project's image",
            )


def gpu_pool_arch_has_image(ray: RayConfig, node_pools: list[NodePool]) -> Iterable[Problem]:
    """A GPU pool whose machine type is not amd64 (A4X ``a4x-highgpu-4g``, GB200 on NVIDIA
    Grace: ``GpuType.arch`` ``arm64`` in :mod:`components.catalog`) runs a ``gpu`` image built for
    that architecture: ``ray.images.gpu`` with it in ``architectures``. This project's own images
    (``images/*/Dockerfile``) and Ray's CUDA images are amd64 builds; GKE schedules a pod on an
    Arm node only when its image is declared to run there
    (https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment).
    An amd64 GPU pool likewise needs ``amd64`` among a prebuilt ``gpu`` image's architectures."""
    for pool in node_pools:
        if not isinstance(pool, GpuPool):
            continue
        arch = pool.gpu.gpu.arch
        image = ray.images.get("gpu")
        if image is None and arch != "amd64":
            yield at(
                f"node_pools[{pool.name}]",
                f"node_pools[{pool.name}]: {pool.gpu.type} nodes ({pool.machine_type}) are "
                f"{arch}, and this project's gpu image is amd64 only; set ray.images.gpu to an "
                f"image built for {arch} with architectures: [{arch}] (or a multi-arch image with "
                f"architectures: [amd64, {arch}])",
            )
        elif image is not None and arch not in image.architectures:
            yield at(
                f"node_pools[{pool.name}]",
                f"node_pools[{pool.name}]: {pool.gpu.type} nodes ({pool.machine_type}) are "
                f"{arch}, but ray.images.gpu {image.image} is built for "
                f"{', '.join(image.architectures)}; add {arch} to its architectures only if the "
                "image is built for it",
            )


def fuse_caches_fit(
    buckets: BucketsConfig, ray_clusters: list[RayClusterConfig], p: Plan
) -> Iterable[Problem]:
    """GCS FUSE file caches fit where they live: on ephemeral storage the boot disks of the
    pools they run on, in memory each Ray pod beside its object store
    (:func:`components.storage.fuse.cache_problems`;
    https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-perf)."""
    from components.raycrs.cache_fit import memory_cache_problems
    from components.storage.fuse import cache_problems

    yield from cache_problems(buckets, p)
    yield from memory_cache_problems(buckets, ray_clusters, p)


# ------------------------------------------------------------------------------------- running


def _rule(
    check: Callable[..., Iterable[Problem]], *needs: str, name: str = "", path: str = ""
) -> Rule:
    return Rule(check, needs=frozenset(needs), rule_id=name, path=path)


# Every cross-field rule, in the order they run, each a named function yielding one Problem per
# problem (the stack field it is about, and the readable line) with a docstring citing where its
# fact comes from. References are read from the stack's plan (components.plan.plan.plan),
# resolved once by components.plan.resolve (the one resolver), whose records the builders and
# checks use too, so a wrong reference is reported once and reads the same at every layer. The
# rules on jobs and services live with the Ray CRs (components.raycrs.rules), the compute-class
# rules in components.computeclass.rules, the capacity rules in components.capacity; this table
# lists them all.
RULES: tuple[Rule, ...] = (
    _rule(zones_in_region, "region", "zones"),
    _rule(pool_zones_in_region, "region", "node_pools"),
    _rule(unique_names),
    _rule(accelerator_zones_offered, "zones", "node_pools"),
    _rule(gke_version_offered, "cluster.min_master_version", "cluster.release_channel"),
    _rule(tpu_min_gke_version, "cluster.min_master_version", "node_pools"),
    _rule(nap_limits_cover_pools, "nap", "cluster.system_pool", "node_pools"),
    _rule(pool_node_counts_within_gke_limits, "cluster.system_pool", "zones", "node_pools"),
    _rule(cluster_service_accounts_declared, "ray_clusters", "workload_identities"),
    _rule(worker_group_pools_exist_and_fit, "ray_clusters", "node_pools"),
    _rule(
        multi_host_tpu_needs_webhook,
        "kuberay.mode",
        "kuberay.tpu_webhook",
        "ray_clusters",
        "jobs",
        "node_pools",
    ),
    _rule(job_targets_exist, "jobs", "ray_clusters", "node_pools"),
    _rule(job_service_accounts_declared, "jobs", "workload_identities"),
    _rule(job_slices_fit, "jobs", "ray_clusters", "node_pools"),
    _rule(job_workloads_registered, "jobs"),
    _rule(batch_job_problems, "jobs", "ray_clusters", "node_pools"),
    # project and region too: a CPU pool's worker pod size comes from the plan's node pools
    _rule(job_memory_fits, "jobs", "ray_clusters", "node_pools", "project", "region"),
    _rule(job_identity_can_write_outputs, "jobs", "ray_clusters", "workload_identities"),
    _rule(secret_readers_declared, "secrets", "workload_identities"),
    _rule(prebuilt_images_pinned_when_protected, "cluster.deletion_protection", "ray.images"),
    _rule(gpu_pool_arch_has_image, "ray.images", "node_pools"),
    _rule(compute_class_pools, "compute_classes", "node_pools"),
    _rule(compute_class_shapes_fit_nap, "compute_classes", "nap", "cluster", "node_pools"),
    _rule(compute_class_pools_not_queued, "compute_classes", "node_pools"),
    _rule(compute_class_fallback_capabilities, "compute_classes", "node_pools"),
    _rule(
        compute_class_flex_start_min_gke_version,
        "compute_classes",
        "cluster.min_master_version",
        "node_pools",
    ),
    _rule(service_targets_fit, "services", "node_pools"),
    _rule(service_workloads_and_checkpoints, "services", "jobs"),
    _rule(
        service_fit_problems,
        "kuberay.mode",
        "kuberay.tpu_webhook",
        "services",
        "node_pools",
        "jobs",
    ),
    # project and region too: a CPU pool's pod size (replicas per pod) comes from the plan
    _rule(service_autoscaling_problems, "services", "node_pools", "project", "region"),
    _rule(job_checkpoint_references, "jobs", "project", "cluster", "buckets"),
    _rule(ray_version_locked, "ray", "node_pools"),
    _rule(service_identity_can_read, "services", "workload_identities"),
    _rule(service_hf_token_readable, "services", "secrets"),
    _rule(
        job_hf_sources, "jobs", "secrets", "workload_identities", "project", "cluster", "buckets"
    ),
    _rule(service_gateway_not_public, "services"),
    _rule(incremental_upgrade_needs_helm, "kuberay.mode", "kuberay.chart_version", "services"),
    _rule(incremental_upgrade_gateway, "services"),
    _rule(gcs_ft_rules, "gcs_fault_tolerance", "services", "cluster", "network", "secrets"),
    _rule(
        superslice_problems,
        "node_pools",
        "cluster",
        "capacity",
        "jobs",
        "ray_clusters",  # a job on a RayCluster is queued by the cluster's queue (_unqueued)
        name="super_slicing_supported",
    ),
    _rule(
        fuse_caches_fit,
        "buckets",
        "workload_identities",
        "node_pools",
        "ray_clusters",
        "jobs",
        "project",
        "cluster",
    ),
    _rule(
        gpu_networking_rules,
        "node_pools",
        "network",
        "zones",
        name="gpu_networking",
    ),
    # project and region too: flavors and queues are built from the rendered node pools, which
    # need the stack's Context (components.plan.plan.context)
    _rule(
        capacity_stack_rules,
        "capacity",
        "jobs",
        "ray_clusters",
        "node_pools",
        "compute_classes",
        "kuberay.namespace",
        "cluster",
        "zones",
        "project",
        "region",
        name="capacity_rules",
        path="capacity",
    ),
)
"""Every cross-field rule, in the order they run."""


def _blocked(valid: Collection[str] | None, broken: Collection[str]) -> set[str]:
    """The invalid paths: ``broken``, plus every top-level key not in ``valid``."""
    from components.config.stack import StackConfig

    out = set(broken)
    if valid is not None:
        out |= set(StackConfig.model_fields) - set(valid)
    return out


def rule_problems(
    cfg: StackConfig, valid: Collection[str] | None = None, *, broken: Collection[str] = ()
) -> list[Problem]:
    """Every problem of every rule that reads no invalid key (each a
    :class:`~components.kernel.problems.Problem` with its path and the rule's name), in
    :data:`RULES` order. ``valid``: the top-level keys that validated (None: all of them); ``broken``: dotted
    paths of invalid keys inside otherwise valid blocks (``cluster.min_master_version``). Every
    line is collected, so a typo in ``labels`` does not hide a wrong ``jobs[x].node_pool``
    (:func:`components.stack.loader.validate`)."""
    from components.config.epochs import gate_refusals

    bad = _blocked(valid, broken)
    problems: list[Problem] = []
    for r in RULES:
        if r.blocked_by(bad) is None:
            problems.extend(r.problems(**rule_inputs(r.check, cfg)))
    return gate_refusals(cfg.epoch, problems)


def skipped_rules(
    valid: Collection[str] | None = None, *, broken: Collection[str] = ()
) -> list[str]:
    """What :func:`rule_problems` did not run because a rule reads an invalid key, one line per
    invalid key: ``not checked because <key> is invalid: <rule>, <rule> (fix it first)``."""
    bad = _blocked(valid, broken)
    by_key: dict[str, list[str]] = {}
    for r in RULES:
        if (b := r.blocked_by(bad)) is not None:
            by_key.setdefault(b, []).append(r.summary)
    return [
        f"not checked because {key} is invalid: {', '.join(rules)} (fix it first)"
        for key, rules in sorted(by_key.items())
    ]


def run_rule(check: Callable[..., Iterable[Problem]], cfg: StackConfig) -> list[Problem]:
    """The Problems of one rule's check over ``cfg``, handed its inputs as :func:`rule_problems`
    hands them (:func:`components.plan.plan.rule_inputs`), without the rule's id or path."""
    return list(check(**rule_inputs(check, cfg)) or ())
