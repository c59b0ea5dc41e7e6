"""Each job runs where its dependencies are (``raygke check``): the images its driver and workers
run provide what its workload needs at the project's pins (:func:`dependency_problems`);
:func:`image_warnings` warns of prebuilt images pinned by tag alone. Which image each part of a
job or service runs, and why: docs/sources.md#images-checks
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from components.config.images import IMAGE_KINDS
from components.images.render import (
    TENSORFLOW,
    job_image_kind,
    job_needs,
    normalize,
    pins,
    planned_refs,
    project_pins,
    provides,
    service_image_kind,
    service_needs,
)
from components.kernel.problems import Problem, at

if TYPE_CHECKING:
    from components.config.raycrs import RayImages
    from components.plan.plan import Plan


def _fix(images: RayImages, where: str, kind: str, name: str, version: str, pip: bool) -> str:
    if kind == "gpu" and normalize(name) == TENSORFLOW and where.startswith("jobs["):
        # only a job on a long-lived cluster's GPU group gets here (its own cluster: gpu-tf)
        return (
            "TensorFlow on GPUs runs in the gpu-tf image, which a job gets on its own RayCluster: "
            f"set {where}.node_pool to the GPU pool instead of cluster/worker_group"
        )
    if images.get(kind) is None:
        return (
            f"add it to the pyproject.toml extras the {kind} image installs "
            "(components/images/render.py IMAGE_EXTRAS) and run `python -m raygke images lock`"
        )
    return (
        f"use the project's images (ray.images.{kind} unset), declare "
        f"ray.images.{kind}.provides: {{{name}: {version}}} if the image has it"
        + (f", or set {where}.runtime_env_pip: true" if pip else "")
    )


def _shortfall(
    images: RayImages,
    refs: Mapping[str, str],
    provided: Callable[[str], Mapping[str, str]],
    where: str,
    workload: Any,
    worker_kind: str,
    runtime_env_pip: bool | None,
    needs: tuple[str, ...] | None = None,
    head_kind: str = "cpu",
) -> str | None:
    """The first need of ``workload`` that the worker-group or head (cpu) image lacks, or holds at
    another version than the project's pin, as one line; None when both provide everything.
    ``images``: ``ray.images``; ``refs``: image kind -> planned reference
    (:func:`components.images.render.planned_refs`); ``provided``: image kind -> what it
    provides (:func:`components.images.render.provides`). ``runtime_env_pip``: None where the
    entry has no such option (services). ``needs``: the entry's needs, default
    ``workload.needs``. ``head_kind``: the head's image kind (``cpu``; a service's head runs
    its workers' image, :func:`components.images.render.service_image_kind`)."""
    wanted = project_pins()
    for kind in dict.fromkeys((worker_kind, head_kind)):
        place = "worker-group" if kind == worker_kind else "head (driver)"
        if runtime_env_pip:
            have = pins(worker_kind)
            image = f"runtime_env_pip (images/requirements-{worker_kind}.txt)"
        else:
            have = provided(kind)
            image = f"{place} image {refs[kind]}"
        for need in workload.needs if needs is None else needs:
            name = normalize(need)
            # the kind's own pin first (tpu-serve: vllm-tpu 0.25.0), else the project's
            pin = pins(kind).get(name) or wanted.get(name, "")
            got = have.get(name)
            fix = _fix(images, where, kind, need, pin, runtime_env_pip is not None)
            if got is None:
                return (
                    f"{where}: workload {workload.name} needs {need}, {image} does not "
                    f"provide it; {fix}"
                )
            if pin and got != pin:
                return (
                    f"{where}: workload {workload.name} needs {need}=={pin} (the project's "
                    f"pin), {image} provides {need} {got}; {fix}"
                )
    return None


def dependency_problems(p: Plan, images: RayImages) -> list[Problem]:
    """One line per job or service of the stack's plan ``p`` whose images (``images``:
    ``ray.images``) lack a distribution its workload needs, or hold it at another version than
    the project's pin, naming the entry, the workload, the distribution, the image and the fix.
    Entries whose target or workload does not resolve are left to the rules that report those."""
    from contract.registry import TF_GPU_CONFLICT, WORKLOADS

    problems: list[Problem] = []
    refs = planned_refs(p.context, images)

    @functools.cache
    def provided(kind: str) -> Mapping[str, str]:
        return provides(images, kind)

    entries = [
        (
            f"jobs[{t.job.name}]",
            t.job.workload,
            t.pool,
            job_image_kind(t),
            t.job.runtime_env_pip,
            job_needs(t.job),
            False,
        )
        for t in p.jobs
    ] + [
        (
            f"services[{s.name}]",
            s.workload,
            t.pool,
            service_image_kind(t.pool, service_needs(s.workload)),
            None,
            None,
            True,
        )
        for s, t in p.services
    ]
    for where, name, target_pool, kind, pip, needs, service in entries:
        workload = WORKLOADS.get(name)
        if workload is None:
            continue
        if workload.refusal(target_pool.kind) and (service or target_pool.kind != "cpu"):
            continue  # refused on that accelerator with its reason (the stack rules)
        wanted = {normalize(n) for n in (workload.needs if needs is None else needs)}
        if target_pool.kind == "gpu" and {TENSORFLOW, "torch"} <= wanted:
            problems.append(
                at(
                    where,
                    f"{where}: workload {workload.name} imports both tensorflow and torch on GPU "
                    f"pool {target_pool.name!r}; {TF_GPU_CONFLICT}",
                    "image-dependencies",
                )
            )
            continue
        head = kind if service else "cpu"
        line = _shortfall(images, refs, provided, where, workload, kind, pip, needs, head)
        if line:
            problems.append(at(where, line, "image-dependencies"))
    return problems


def image_warnings(images: RayImages) -> list[Problem]:
    """Prebuilt images of ``images`` (``ray.images``) referenced by tag alone (no ``@sha256:``
    digest), one ``warning`` Problem each (of its field, rule ``image-pinned``): a tag can
    be moved to other contents between two pod starts. Stacks with deletion protection refuse
    them instead (:func:`components.stack.rules.prebuilt_images_pinned_when_protected`)."""
    out = []
    for kind in IMAGE_KINDS:
        prebuilt = images.get(kind)
        if prebuilt is not None and not prebuilt.pinned:
            line = (
                f"ray.images.{kind}: {prebuilt.image} is a tag, not a digest; pods may run "
                "other contents after the tag moves (write <image>@sha256:<digest>)"
            )
            out.append(Problem("ray.images", line, "image-pinned", "warning"))
    return out
