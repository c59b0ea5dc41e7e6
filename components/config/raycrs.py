"""The ``ray``, ``ray_clusters`` and ``jobs`` blocks (the ``kuberay`` block is
:mod:`components.config.kuberay`, the ``ray.images`` block :mod:`components.config.images`)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.config.images import IMAGE_KINDS, RayImages
from components.kernel.base import (
    INT32_MAX,
    RAYJOB_NAME_MAX,
    StrictModel,
    k8s_name,
    k8s_quantity,
    quantity_bytes,
)

# --------------------------------------------------------------------------------- ray

# Ray refuses an object store under 75 MiB (ray/_private/ray_constants.py
# OBJECT_STORE_MINIMUM_MEMORY_BYTES).
OBJECT_STORE_MIN_BYTES = 75 * 1024 * 1024
# Largest share of a worker pod's memory its object store may take: the store is shared memory
# (/dev/shm, ray/_private/services.py determine_plasma_store_config) counted against the pod's
# memory limit, and the worker processes (heap, Ray Data blocks, the model) need the rest. Ray's
# default is 30% (ray_constants.DEFAULT_OBJECT_STORE_MEMORY_PROPORTION); 80% leaves a fifth.
OBJECT_STORE_MAX_FRACTION = 0.8
# Paths a spill directory may not be (or be under): memory-backed or system folders.
SPILL_DIR_RESERVED = ("/dev", "/proc", "/sys", "/etc", "/usr", "/bin", "/lib")
# ``ray.train.ScalingConfig(placement_strategy=...)`` values
# (https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html#placement-strategy).
PlacementStrategy = Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"]


class RayConfig(StrictModel):
    """Ray version and images; every image's tag must carry the same Ray version."""

    version: str = Field(
        "2.60.0",
        description="Ray version (`rayVersion` of every RayCluster spec, and the tag of the base "
        "image the project's images build on); every prebuilt image tag must carry it.",
    )
    images: RayImages = Field(
        default_factory=RayImages,
        description="Prebuilt images per accelerator kind; unset kinds use the images this "
        "project builds and pushes to the stack's Artifact Registry repository.",
    )
    delete_untagged_images_after_days: int = Field(
        14,
        ge=1,
        le=3650,
        description="The Artifact Registry repository's cleanup policy deletes untagged images "
        "(replaced builds) older than this many days (https://cloud.google.com/artifact-registry/"
        "docs/repositories/cleanup-policy).",
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.fullmatch(r"\d+\.\d+\.\d+", v):
            raise ValueError(f"{v!r} is not a Ray release version MAJOR.MINOR.PATCH (e.g. 2.60.0)")
        return v

    @model_validator(mode="after")
    def _image_versions(self) -> RayConfig:
        problems = []
        for kind in IMAGE_KINDS:
            prebuilt = self.images.get(kind)
            if prebuilt is None:
                continue
            image = prebuilt.image
            ref = image.split("@", 1)[0]
            tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
            m = re.match(r"(\d+\.\d+\.\d+)", tag)
            if not m:
                problems.append(
                    f"images.{kind} {image!r} has no Ray version tag; use e.g. "
                    f"rayproject/ray:{self.version}-py311"
                )
            elif m.group(1) != self.version:
                problems.append(
                    f"images.{kind} {image!r} is Ray {m.group(1)} but ray.version is {self.version}"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self


def _pod_resource(value: Any, what: str, *, head: bool = False) -> str:
    """``value`` as a quantity string when it is a Kubernetes quantity above zero: the CPU or
    memory request and limit of a Ray head or worker pod.

    Zero is refused for both: KubeRay fills ``ray start --num-cpus`` / ``--memory`` from the Ray
    container's CPU/memory limit (else its request) only when that quantity is not zero
    (ray-operator/controllers/ray/common/pod.go ``generateRayStartCommand``), so a pod asking for
    0 would have Ray advertise the whole node's cores and memory while the scheduler reserved none
    of them. The legitimate "no tasks here" is Ray's own ``num-cpus: "0"``, which the rendered
    head already carries (:func:`components.raycrs.raycluster.head_group_spec`). Negative
    quantities do not parse.

    Raises:
        ValueError: one line naming ``what``, the value and what is allowed.
    """
    from components.kernel.base import quantity_value

    q = k8s_quantity(str(value), what)
    if quantity_value(q) > 0:
        return q
    kind = what.rsplit(".", 1)[-1].rsplit(" ", 1)[-1]
    flag = "--num-cpus" if kind == "cpu" else "--memory"
    if head and kind == "cpu":
        allowed = (
            "above 0 (e.g. 1, 500m); 0 is never right here: raygke already keeps Ray tasks off "
            'the head (rayStartParams num-cpus: "0") and its GCS, dashboard and autoscaler need CPU'
        )
    elif head:
        allowed = "above 0 (e.g. 8Gi); the head's GCS, dashboard and object store live in it"
    else:
        example = "4, 500m" if kind == "cpu" else "16Gi"
        allowed = (
            f"above 0 (e.g. {example}) or unset (the node's allocatable {kind} minus system "
            f"headroom); with 0, KubeRay passes no ray start {flag} (pod.go "
            f"generateRayStartCommand) and Ray would count the whole node's {kind}"
        )
    raise ValueError(f"{what} {value!r} is zero; allowed: {allowed}")


class HeadConfig(StrictModel):
    """The Ray head pod; it runs on the system pool and is never exposed outside the cluster."""

    cpu: str = Field(
        "2",
        description="CPU request and limit of the head pod, a Kubernetes quantity above 0 (`2`, "
        '`1500m`). Ray tasks never run on the head (it is started with `num-cpus: "0"`).',
    )
    memory: str = Field(
        "8Gi",
        description="Memory request and limit of the head pod, a Kubernetes quantity above 0 "
        "(`8Gi`).",
    )

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str:
        return _pod_resource(v, f"head.{info.field_name}", head=True)


class WorkerGroupConfig(StrictModel):
    """A RayCluster worker group bound to one declared node pool.

    For TPU pools replicas count slices (each replica is ``numOfHosts`` pods); for GPU and CPU pools
    replicas count pods (one per node).
    """

    name: str = Field(
        description="Worker group name (`groupName`); jobs refer to it as `worker_group`.",
    )
    node_pool: str = Field(description="Name of a declared node pool the workers run on.")
    min_replicas: int = Field(
        0,
        ge=0,
        le=INT32_MAX,
        description="Replicas kept at all times (slices for TPU pools, pods otherwise).",
    )
    max_replicas: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,
        description="Most replicas (slices for TPU pools, pods otherwise); unset: the pool's "
        "capacity (`max_slices` or `max_nodes`).",
    )
    cpu: str | None = Field(
        None,
        description="CPU request/limit of each worker pod, a quantity above 0 (Ray's `num-cpus` "
        "follows it); unset: the node's allocatable CPU minus headroom for system pods.",
    )
    memory: str | None = Field(
        None,
        description="Memory request/limit of each worker pod, a quantity above 0; unset: the "
        "node's allocatable memory minus headroom for system pods.",
    )

    object_store_memory: str | None = Field(
        None,
        description="Ray object store size of each worker pod (`rayStartParams` "
        "`object-store-memory`, rendered in bytes): bytes (`4294967296`) or a Kubernetes "
        "quantity (`4Gi`). The store lives in the pod's shared memory (`/dev/shm`), so it counts "
        "against `memory`: at least 75 MiB and at most "
        f"{int(OBJECT_STORE_MAX_FRACTION * 100)}% of the worker pod's memory. Unset: Ray's "
        "default, 30% of the pod's memory (https://docs.ray.io/en/latest/ray-core/scheduling/"
        "memory-management.html).",
    )
    spill_dir: str | None = Field(
        None,
        description="Absolute path in each worker pod where Ray spills objects when the object "
        "store is full (`rayStartParams` `object-spilling-directory`, https://docs.ray.io/en/"
        "latest/ray-core/objects/object-spilling.html); rendered with an `emptyDir` volume "
        "`ray-spill` mounted there, i.e. the node's ephemeral storage (its boot disk, "
        "`disk_size_gb` of the pool). Unset: Ray's session folder under /tmp.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return k8s_name(v, "worker group name")

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any, info: Any) -> str | None:
        return None if v is None else _pod_resource(v, f"worker group {info.field_name}")

    @field_validator("object_store_memory", mode="before")
    @classmethod
    def _object_store(cls, v: Any) -> str | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise ValueError(
                f"object_store_memory {v!r} is neither bytes (an integer) nor a Kubernetes "
                "quantity (e.g. 4Gi)"
            )
        q = k8s_quantity(str(v), "worker group object_store_memory")
        if quantity_bytes(q) < OBJECT_STORE_MIN_BYTES:
            raise ValueError(
                f"object_store_memory {v!r} is below Ray's minimum of 75 MiB "
                "(ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES)"
            )
        return q

    @field_validator("spill_dir")
    @classmethod
    def _spill_dir(cls, v: str | None) -> str | None:
        if v is None:
            return None
        bad = not re.fullmatch(r"/[A-Za-z0-9._/-]*", v) or "/../" in v + "/" or v.rstrip("/") == ""
        reserved = [p for p in SPILL_DIR_RESERVED if v.rstrip("/") == p or v.startswith(p + "/")]
        if bad or reserved:
            raise ValueError(
                f"spill_dir {v!r} must be an absolute path of letters, digits, '.', '_', '-' "
                f"and '/', not '/' nor under {', '.join(SPILL_DIR_RESERVED)} (e.g. /mnt/ray-spill)"
            )
        return v.rstrip("/")


class RayClusterConfig(StrictModel):
    """A long-lived RayCluster."""

    name: str = Field(
        description="RayCluster name; jobs refer to it as `cluster`. 1-50 lowercase letters, "
        "digits and hyphens, starting with a letter (a DNS-1035 label: validation.go "
        "ValidateRayClusterMetadata).",
    )
    service_account: str = Field(
        "ray-train",
        description="Name of a `workload_identities` entry the pods run as (its Kubernetes "
        "service account, bound by Workload Identity); its bucket roles decide which buckets "
        "are mounted.",
    )
    head: HeadConfig = Field(
        default_factory=HeadConfig,
        description="The head pod's resources; it runs on the system pool.",
    )
    worker_groups: list[WorkerGroupConfig] = Field(
        default_factory=list, description="Worker groups, each bound to one node pool."
    )
    autoscaling: bool = Field(
        True,
        description="Enable the Ray autoscaler (`enableInTreeAutoscaling`): workers scale "
        "between `min_replicas` and `max_replicas` (https://docs.ray.io/en/latest/cluster/"
        "kubernetes/user-guides/configuring-autoscaling.html).",
    )
    idle_timeout_seconds: int = Field(
        600,
        ge=0,
        le=INT32_MAX,
        description="Seconds an idle worker is kept before the autoscaler removes it "
        "(`autoscalerOptions.idleTimeoutSeconds`, int32).",
    )
    upgrade_strategy: Literal["Recreate", "None"] | None = Field(
        None,
        description="KubeRay v1.7.0 `spec.upgradeStrategy.type`. `Recreate`: a spec change "
        "outside the replica counts (Ray version, image, head or worker size) deletes and "
        "recreates every pod, so running jobs stop (`raygke diff` lists them); `None` or unset: "
        "running pods keep their old template and only new pods get the new one "
        "(validation.go ValidateRayClusterUpgradeOptions, raycluster_controller.go "
        "shouldRecreatePodsForUpgrade).",
    )

    queue: str | None = Field(
        None,
        description="Kueue LocalQueue (`capacity.local_queues`) that admits this RayCluster "
        "(`kueue.x-k8s.io/queue-name`): Kueue admits its head and worker groups against the "
        "queue's quota, and with `autoscaling` each scale-up as an elastic workload slice "
        "(`kueue.x-k8s.io/elastic-job`, needs `capacity.kueue.elastic_jobs`; docs/capacity.md). "
        "Unset: not queued.",
    )
    priority: str | None = Field(
        None,
        description="Kueue WorkloadPriorityClass (`capacity.priority_classes`) of the queued "
        "RayCluster (`kueue.x-k8s.io/priority-class`); only with `queue`.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return k8s_name(v, "ray cluster name", dns1035=True)


class SliceRange(StrictModel):
    """An elastic range of TPU slices: ``{min: 1, max: 2}``.

    Rendered as Ray Train's elastic ``ScalingConfig(num_workers=(min_workers, max_workers))``
    with hosts-per-slice x ``min`` / ``max`` workers: Ray 2.60 takes a ``(min, max)`` tuple
    (``ray/train/v2/api/config.py`` ``ScalingConfig.num_workers``, "To enable elasticity, provide
    a (min_workers, max_workers) tuple of ints") and its elastic scaling policy counts TPU workers
    in whole intact slices (``ray/train/v2/_internal/execution/scaling_policy/elastic.py``
    ``_get_strict_tpu_worker_count``), so the job starts on ``min`` slices and grows to ``max``.
    The RayJob also gets Kueue's ``kueue.x-k8s.io/elastic-job: "true"`` annotation
    (kueue ``pkg/constants/constants.go`` ``ElasticJobAnnotation``; RayJob is one of
    ``supportedElasticJobGVKs``, ``pkg/controller/jobframework/validation.go``), which Kueue
    honours with its ``ElasticJobsViaWorkloadSlices`` feature gate and which has no effect on a
    job Kueue does not manage.
    """

    min: int = Field(
        ge=1,
        le=64,
        description="Fewest slices the job trains on (it starts once these are up; 1-64, the "
        "bound of a TPU pool's max_slices).",
    )
    max: int = Field(
        ge=1,
        le=64,
        description="Most slices (1-64); at most the replicas of the worker group (or node pool) the "
        "job runs on.",
    )

    @model_validator(mode="after")
    def _order(self) -> SliceRange:
        if self.min > self.max:
            raise ValueError(f"slices.min {self.min} is above slices.max {self.max}")
        return self

    @property
    def elastic(self) -> bool:
        """True for a real range (``min < max``)."""
        return self.min < self.max


class JobConfig(StrictModel):
    """A RayJob running one registered workload.

    A job either submits to a long-lived RayCluster (``cluster:``, rendered as ``clusterSelector``)
    or brings its own RayCluster on ``node_pool:`` (rendered as ``rayClusterSpec``).

    Lifecycle fields and the KubeRay v1.7.0 rules they follow
    (ray-operator/controllers/ray/utils/validation.go ``ValidateRayJobSpec`` and
    ``validateDeletionConfiguration``):

    * ``shutdown_after_job_finishes``: delete the job's own RayCluster when the job ends. Default
      true for a job with its own cluster; with ``cluster:`` the job does not own the cluster, so
      it is false and ``true`` is refused.
    * ``ttl_seconds_after_finished``: seconds the finished job (and its own cluster) is kept for
      inspection. KubeRay refuses a TTL above 0 without shutdown, so it is refused with
      ``cluster:`` or ``shutdown_after_job_finishes: false``. Default 60 s with shutdown, else 0:
      the job's GPUs/TPUs are released a minute after the job ends (KubeRay's sample
      ``ray-job.shutdown.yaml`` uses 10 s, its RayJob docs 0-60 s:
      https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html).
    * ``suspend`` needs shutdown and is not supported with ``clusterSelector``;
      ``backoff_limit`` above 0 is incompatible with ``clusterSelector`` (same function).
    """

    name: str = Field(
        description="RayJob name: 1-47 lowercase letters, digits and hyphens, starting with a "
        "letter (KubeRay's MaxRayJobNameLength, validation.go ValidateRayJobMetadata)."
    )
    workload: str = Field(
        description="Name of a registered workload (`contract/registry.py`), e.g. `prepare`, "
        "`train_lm`, `train_lm_jax`, `train_lm_tf`.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of the workload, see workloads; checked against the workload's "
        "accepted arguments.",
    )
    cluster: str | None = Field(
        None,
        description="Submit to this long-lived RayCluster (`clusterSelector`); exclusive with "
        "`node_pool`.",
    )
    worker_group: str | None = Field(
        None,
        description="Worker group of `cluster` the job's training workers use; needs `cluster`.",
    )
    node_pool: str | None = Field(
        None,
        description="The job brings its own RayCluster whose one worker group spans this whole "
        "node pool; exclusive with `cluster`.",
    )
    service_account: str = Field(
        "ray-train",
        description="Name of a `workload_identities` entry the job's pods run as; it must be "
        "allowed to write what the workload writes.",
    )
    backoff_limit: int = Field(
        0,
        ge=0,
        le=INT32_MAX,
        description="Retries of the whole RayJob after a failure (`backoffLimit`, "
        "https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/"
        "rayjob-quick-start.html).",
    )
    max_failures: int = Field(
        2,
        ge=0,
        le=INT32_MAX,
        description="Ray Train restarts after worker failures (`FailureConfig.max_failures`, "
        "https://docs.ray.io/en/latest/train/user-guides/fault-tolerance.html), passed to the "
        "workload.",
    )
    active_deadline_seconds: int | None = Field(
        None,
        ge=60,
        le=INT32_MAX,
        description="Seconds the job may run before KubeRay stops it (`activeDeadlineSeconds`, "
        "int32, at least 60); unset: no deadline.",
    )
    ttl_seconds_after_finished: int | None = Field(
        None,
        ge=0,
        le=INT32_MAX,
        description="Seconds a finished RayJob (and its own RayCluster) is kept before deletion "
        "(`ttlSecondsAfterFinished`, int32). Unset: 60 with shutdown, else 0. KubeRay refuses a "
        "TTL above 0 without shutdown (validation.go `validateDeletionConfiguration`).",
    )
    shutdown_after_job_finishes: bool | None = Field(
        None,
        description="Delete the job's own RayCluster when it finishes "
        "(`shutdownAfterJobFinishes`). Unset: true with `node_pool`, false with `cluster` (a "
        "job never shuts down a long-lived cluster; true is refused there).",
    )
    suspend: bool = Field(
        False,
        description="Create the RayJob suspended (`suspend: true`); resume it by setting false.",
    )
    queue: str | None = Field(
        None,
        description="Kueue LocalQueue (`capacity.local_queues`) the RayJob waits in "
        "(`kueue.x-k8s.io/queue-name`); a queued job brings its own cluster (`node_pool`) and "
        "shuts it down, and Kueue owns `suspend` (https://kueue.sigs.k8s.io/docs/tasks/"
        "run/rayjobs/). Unset: no queue.",
    )
    priority: str | None = Field(
        None,
        description="Kueue WorkloadPriorityClass (`capacity.priority_classes`) of the queued job "
        "(`kueue.x-k8s.io/priority-class`); needs `queue`.",
    )
    runtime_env_pip: bool = Field(
        False,
        description="Install the workloads' pinned dependencies (the requirements of the image "
        "kind the job's workers run on, `images/requirements-<kind>.txt`) at job start through "
        "`runtimeEnvYAML` `pip` (https://docs.ray.io/en/latest/ray-core/handling-dependencies."
        "html); for quick experiments on an image that lacks them. Counts as providing them in "
        "`raygke check`.",
    )
    placement_strategy: PlacementStrategy | None = Field(
        None,
        description="How Ray Train places the job's workers (`ScalingConfig(placement_strategy="
        "...)`, passed in the job's `scaling` argument): `PACK` (as few nodes as possible, "
        "best effort), `SPREAD` (as many nodes as possible, best effort), `STRICT_PACK` (one "
        "node), `STRICT_SPREAD` (one worker per node) (https://docs.ray.io/en/latest/ray-core/"
        "scheduling/placement-group.html#placement-strategy). Only for workloads that take "
        "`scaling` (the trainers). `raygke check` refuses a strict one the job's pool can never "
        "meet (STRICT_PACK: the workers exceed one node; STRICT_SPREAD: more workers than "
        "nodes). Unset: Ray Train's default, PACK.",
    )

    hf_token_secret: str | None = Field(
        None,
        description="Name of a `secrets:` entry holding a Hugging Face access token, for a job "
        "whose `args.init_model` (train_lm) or `args.tokenizer` (prepare) is a Hub repo id of a "
        "gated or private model; its `readers` must include `service_account`, and the job "
        "brings its own cluster (`node_pool`), whose pods mount it as services do "
        "(`/var/run/secrets/hf/hf-token`, `HF_TOKEN_PATH`). Unset: no token.",
    )
    slices: SliceRange | None = Field(
        None,
        description="Elastic TPU training: `{min, max}` slices of a multi-host TPU pool, "
        "rendered as Ray Train's elastic `ScalingConfig(num_workers=(hosts x min, hosts x max))` "
        "(Ray 2.60 JaxTrainer) and Kueue's `kueue.x-k8s.io/elastic-job` annotation on the "
        "RayJob; a job with its own cluster (`node_pool`) starts it at `min` slices, the Ray "
        "autoscaler adding slices up to `max` (queued: each a Kueue workload slice). Unset: all "
        "the slices of the worker group (or pool) the job runs on.",
    )
    super_slice: str | None = Field(
        None,
        description="TPU7x super-slice each replica of the job spans, on a `super_slicing` pool "
        "(`node_pool`): whole 4x4x4 cubes, `4i x 4j x 4k` with i <= j <= k, at most 144 "
        "cubes (`4x4x8`: 2 cubes, 32 hosts, 128 chips on one ICI domain; `4x4x16`: 4 cubes; "
        "https://cloud.google.com/kubernetes-engine/docs/reference/crds/slice), stitched by GKE's slice "
        "controller from cubes of one block. Replicas: the pool's cubes over the cubes of one "
        "super-slice (`slices` counts these). Unset: each replica is one cube "
        "(https://cloud.google.com/kubernetes-engine/docs/how-to/use-gke-dynamic-slicing).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return k8s_name(v, "job name", RAYJOB_NAME_MAX, dns1035=True)

    @model_validator(mode="after")
    def _target(self) -> JobConfig:
        if self.cluster and self.node_pool:
            raise ValueError(
                "set either cluster (submit to a long-lived RayCluster) or node_pool (the job "
                "brings its own RayCluster), not both"
            )
        if self.worker_group and not self.cluster:
            raise ValueError(
                f"worker_group {self.worker_group!r} needs cluster: <ray cluster name>"
            )
        return self

    @model_validator(mode="after")
    def _lifecycle(self) -> JobConfig:
        problems = []
        on = f"with cluster: {self.cluster} (the job does not own that RayCluster)"
        if self.cluster and self.shutdown_after_job_finishes:
            problems.append(
                f"shutdown_after_job_finishes: true {on}; remove it, or use node_pool: so the "
                "job brings its own cluster"
            )
        if self.cluster and self.suspend:
            problems.append(
                f"suspend: true {on}; KubeRay suspends only a RayJob with its own cluster"
            )
        if self.cluster and self.backoff_limit > 0:
            problems.append(
                f"backoff_limit: {self.backoff_limit} {on}; KubeRay refuses retries of a job on "
                "an existing cluster (use max_failures for Ray Train retries)"
            )
        ttl = self.ttl_seconds_after_finished
        if ttl and not self.shuts_down:
            why = on if self.cluster else "with shutdown_after_job_finishes: false"
            problems.append(
                f"ttl_seconds_after_finished: {ttl} {why}; KubeRay accepts a TTL only when the "
                "job shuts its cluster down: remove it or set it to 0"
            )
        if self.suspend and not self.cluster and not self.shuts_down:
            problems.append(
                "suspend: true with shutdown_after_job_finishes: false; KubeRay suspends only a "
                "RayJob that shuts its cluster down"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def shuts_down(self) -> bool:
        """Rendered ``shutdownAfterJobFinishes``: false with ``cluster:``, else the field (default
        true)."""
        if self.cluster:
            return False
        return self.shutdown_after_job_finishes is not False

    @property
    def ttl_seconds(self) -> int:
        """Rendered ``ttlSecondsAfterFinished``: the field, else :data:`DEFAULT_JOB_TTL_SECONDS`
        when the job shuts its cluster down, else 0."""
        if self.ttl_seconds_after_finished is not None:
            return self.ttl_seconds_after_finished
        return DEFAULT_JOB_TTL_SECONDS if self.shuts_down else 0


# Seconds a finished job's own RayCluster is kept (see JobConfig).
DEFAULT_JOB_TTL_SECONDS = 60
