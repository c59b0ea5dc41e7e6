"""The ``ray.io/v1`` RayJob (:func:`ray_job_manifest`): its workload arguments, runtime
environment, own cluster (a queued job brings its own RayCluster) and submitter pod.
Sources: docs/sources.md#raycrs-rayjob
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from components.config.nodepools import TpuPool
from components.config.raycrs import HeadConfig
from components.images.render import job_image_kind
from components.images.render import runtime_env_pip as _runtime_env_pip
from components.kernel.ray import JOB_CLUSTER_LABEL
from components.plan.context import object_metadata
from components.plan.plan import Context, Plan
from components.plan.resolve import JobTarget
from components.raycrs.pod import API_VERSION, DATASET_PATH, submitter_template
from components.raycrs.raycluster import (
    ELASTIC_JOB,
    WorkerGroupInput,
    ray_cluster_spec,
)
from components.raycrs.scaling import job_workers
from contract.args.base import JobContext
from contract.registry import bind_job_args, get_workload

# ----------------------------------------------------------------------------------------- jobs


def job_args(ctx: Context, target: JobTarget) -> dict[str, Any]:
    """The workload arguments of ``target.job`` (its record in the stack's plan,
    :meth:`components.plan.plan.Plan.job`; ``ctx`` the plan's context), bound by :func:`contract.registry.bind_job_args` (the
    one binding ``raygke local run`` uses too): ``job.args`` on top of the platform values the
    workload has an argument for:

    * ``scaling``: the ``ray.train.ScalingConfig`` kwargs (:mod:`components.raycrs.scaling`),
      the same shape for every trainer, with the job's ``placement_strategy`` when set;
    * ``max_failures``: ``job.max_failures``;
    * ``storage_path``: the checkpoints bucket URL;
    * ``name`` (workloads that write checkpoints): the job name, the Ray Train experiment name,
      so each job checkpoints to and resumes from its own folder ``<storage_path>/<job name>``
      (two jobs running the same trainer never share one). A reader such as ``evaluate`` keeps
      its default; set its ``args.name`` to the training job's name;
    * ``dataset``: ``<datasets bucket URL>/<args.dataset>``, a folder of the datasets bucket
      (default ``lm-bytes``; a fine-tuning job's tokenized dataset names its own);
    * ``peak_flops_per_device``: the catalog's peak bf16 FLOP/s of one chip / GPU (for MFU);
    * for a batch-inference job (role ``inference``): its engines' accelerator, tensor-parallel
      size and count, the checkpoints mount and the artifacts bucket
      (:func:`components.raycrs.batch_fit.batch_platform_args`).

    Raises:
        KeyError: unknown workload.
        contract.args.base.ArgError: ``job.args`` do not fit the workload (the stack rules report
            the same problems first).
    """
    job = target.job
    workload = get_workload(job.workload)
    folder = job.args.get("dataset") or DATASET_PATH
    scaling, peak_flops = job_workers(target)
    context = JobContext(
        dataset=f"{ctx.bucket_url('datasets')}/{folder}",
        storage_path=ctx.bucket_url("checkpoints"),
        name=job.name if "checkpoints" in workload.writes else None,
        scaling=scaling,
        max_failures=job.max_failures,
        peak_flops_per_device=peak_flops,
    )
    args = {k: v for k, v in job.args.items() if k != "dataset"}  # the folder, bound above
    if workload.role == "inference":
        from components.raycrs.batch_fit import batch_platform_args

        args = batch_platform_args(ctx.bucket_url("artifacts"), target, args)
    return bind_job_args(job.workload, context, args)


# Idle seconds before the autoscaler of an elastic job's cluster removes a slice Ray Train no
# longer uses: KubeRay's default for ``autoscalerOptions.idleTimeoutSeconds`` (60,
# https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html).
ELASTIC_IDLE_TIMEOUT_SECONDS = 60


def elastic_slices(target: JobTarget) -> tuple[int, int] | None:
    """``(min, max)`` slices of an elastic job bringing its own cluster on a TPU pool (``slices``
    with ``min < max``; ``max`` capped at the pool's slices), else None."""
    job, pool = target.job, target.pool
    if not target.own_cluster or job.slices is None or not isinstance(pool, TpuPool):
        return None
    most = min(job.slices.max, target.replicas)
    return (job.slices.min, most) if job.slices.min < most else None


# The head of a job's own cluster: the default head.
OWN_CLUSTER_HEAD = HeadConfig()


def _own_cluster_spec(
    p: Plan, target: JobTarget, images: Mapping[str, Any], kind: str
) -> dict[str, Any]:
    """The ``rayClusterSpec`` of a job bringing its own RayCluster: one worker group spanning
    the whole node pool (:func:`components.plan.resolve.own_cluster_group`), fixed size, its
    workers on ``images[kind]`` (:func:`components.images.render.job_image_kind`).

    An elastic job (:func:`elastic_slices`, ``slices: {min, max}``) renders at its minimum:
    the group's ``replicas`` and ``minReplicas`` are ``min`` slices, ``maxReplicas`` is ``max``,
    with in-tree autoscaling on. Ray Train V2 starts once ``min`` slices' workers are up and asks
    for more up to ``max`` (``ScalingConfig(num_workers=(min, max))``, ray 2.60
    ``ray/train/v2/api/config.py``, :meth:`components.catalog.TpuSlice.scaling_config`); the Ray
    autoscaler adds the slices. A queued one carries ``kueue.x-k8s.io/elastic-job``: Kueue
    admits the first workload at ``min`` slices (``BuildPodSets`` counts the RayJob's
    ``replicas``, kueue v0.19.2 ``pkg/controller/jobs/raycluster/common.go``) and each
    scale-up of the RayCluster as a further workload slice (``UpdatePodSets``, same file: with
    workload slicing and ``enableInTreeAutoscaling`` it counts the RayCluster's replicas;
    site/content/en/docs/tasks/run/rayjobs.md "Autoscaling", docs/concepts/elastic_workload.md),
    so it waits for one slice of quota, not ``max``."""
    job = target.job
    labels = {JOB_CLUSTER_LABEL: job.name}
    group_target, replicas = target.group_target, target.replicas
    elastic = elastic_slices(target)
    if elastic is not None:
        low, high = elastic
        group = group_target.group.model_copy(update={"min_replicas": low, "max_replicas": high})
        group_target, replicas = dataclasses.replace(group_target, group=group), low
    spec = ray_cluster_spec(
        p,
        head=OWN_CLUSTER_HEAD,
        service_account=job.service_account,
        worker_groups=[
            WorkerGroupInput(
                group_target,
                replicas=replicas,
                labels=labels,
                image_kind=kind,
                compute_class=not job.queue,
            )
        ],
        autoscaling=elastic is not None,
        idle_timeout_seconds=ELASTIC_IDLE_TIMEOUT_SECONDS if elastic is not None else 0,
        images=images,
        auth_name=job.name,
        labels=labels,
    )
    if "vllm" in get_workload(job.workload).needs:
        # batch inference: the driver on the head builds Ray Data LLM's processor (vLLM's
        # engine config, the model's tokenizer files), so the head runs the workers' vLLM image
        spec["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = images[kind]
    if job.hf_token_secret is not None:  # the Hub token of a fine-tuning job's model
        from components.raycrs.ingress import add_hf_token

        groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
        add_hf_token([g["template"] for g in groups], job)
    return spec


def job_runtime_env(target: JobTarget, working_dir_uri: str, kind: str) -> dict[str, Any]:
    """The RayJob's runtime environment: ``working_dir`` (the workloads archive) and, with
    ``runtime_env_pip: true``, ``pip``: the requirement lines of ``kind``, the image kind of the
    job's workers (:func:`components.images.render.job_image_kind`,
    :func:`components.images.render.runtime_env_pip`), installed by Ray for the
    driver and every worker (https://docs.ray.io/en/latest/ray-core/handling-dependencies.html).
    """
    env: dict[str, Any] = {"working_dir": working_dir_uri}
    if target.job.runtime_env_pip:
        env["pip"] = _runtime_env_pip(kind)
    return env


def ray_job_manifest(
    p: Plan, target: JobTarget, working_dir_uri: str, images: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayJob for the job of ``target`` (its record in the plan ``p``,
    :meth:`components.plan.plan.Plan.job`; ``p`` gives the node-pool shapes, ComputeClasses and
    identity buckets its pods use, ``images`` (kind -> reference,
    :func:`components.images.render.pod_images`) their images).

    ``entrypoint`` from the workload registry with :func:`job_args`; ``runtimeEnvYAML`` sets
    ``working_dir`` to ``working_dir_uri`` (the content-addressed workloads archive);
    ``clusterSelector: {ray.io/cluster: <name>}`` for a job on a long-lived RayCluster, else an own
    ``rayClusterSpec`` whose one worker group spans the whole node pool; the submitter pod runs as
    the job's service account. ``shutdownAfterJobFinishes`` / ``ttlSecondsAfterFinished`` are
    :attr:`JobConfig.shuts_down` / :attr:`JobConfig.ttl_seconds`: false / 0 on a long-lived
    cluster (KubeRay v1.7.0 refuses a TTL without shutdown, validation.go
    ``validateDeletionConfiguration``), true / 60 s by default for a job with its own cluster.

    Raises:
        KeyError: unknown workload.
    """
    job = target.job
    ctx = p.context
    workload = get_workload(job.workload)
    kind = job_image_kind(target)  # the image kind of the job's workers
    env = job_runtime_env(target, working_dir_uri, kind)
    spec: dict[str, Any] = {
        "entrypoint": workload.entrypoint(job_args(ctx, target)),
        "runtimeEnvYAML": yaml.safe_dump(env, sort_keys=True),
        "backoffLimit": job.backoff_limit,
        "shutdownAfterJobFinishes": job.shuts_down,
        "ttlSecondsAfterFinished": job.ttl_seconds,
    }
    if job.cluster:
        spec["clusterSelector"] = {"ray.io/cluster": job.cluster}
    else:
        spec["rayClusterSpec"] = _own_cluster_spec(p, target, images, kind)
    if job.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    if job.suspend:
        spec["suspend"] = True
    spec["submitterPodTemplate"] = submitter_template(
        p.accounts[job.service_account].workers, images["cpu"], job.cluster or job.name
    )
    metadata = object_metadata(ctx, job.name)
    if job.slices is not None and job.slices.elastic:
        # Kueue's elastic-job marker (kueue pkg/constants/constants.go ElasticJobAnnotation;
        # RayJob is in supportedElasticJobGVKs, pkg/controller/jobframework/validation.go):
        # honoured with Kueue's ElasticJobsViaWorkloadSlices gate, inert without Kueue.
        metadata = {**metadata, "annotations": {**metadata.get("annotations", {}), **ELASTIC_JOB}}
    if job.queue:  # Kueue admits it (components.capacity.render.queue_labels); it owns suspend
        from components.capacity.render import queue_labels
        from components.capacity.topology import annotate_worker_groups

        metadata["labels"].update(queue_labels(job))
        if "rayClusterSpec" in spec:  # its pod sets ask for a topology level (TAS)
            annotate_worker_groups(
                p.pool_specs,
                p.capacity_topology,
                spec["rayClusterSpec"],
                {target.group.name: target.pool},
            )
    return {"apiVersion": API_VERSION, "kind": "RayJob", "metadata": metadata, "spec": spec}
