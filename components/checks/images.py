"""Each job runs where its dependencies are: the images its driver and workers run provide what
its workload needs (``raygke check``).

A workload declares the Python distributions it imports beyond Ray (``Workload.needs`` in
:mod:`workloads.registry`); the version it needs is the project's pin in ``pyproject.toml``, the
one the tests ran with (:func:`components.builders.images.project_pins`). A job's workers run the
image of their node pool's kind (:func:`components.builders.images.pool_image_kind`) and its driver
runs on the head, in the ``cpu`` image (KubeRay runs the entrypoint from the submitter against the
head: https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html).

What an image provides (:func:`components.builders.images.provides`): a project image its
requirement pins; a prebuilt one what ``ray.images.<kind>.provides`` declares. A job with
``runtime_env_pip: true`` gets the requirement lines of its workers' kind through
``runtimeEnvYAML`` ``pip`` for the driver and the workers
(https://docs.ray.io/en/latest/ray-core/handling-dependencies.html), so it is checked against
those pins instead.
"""

from __future__ import annotations

from components.builders.images import (
    normalize,
    pins,
    planned_refs,
    pool_image_kind,
    project_pins,
    provides,
)
from components.spec import IMAGE_KINDS, ResolveError, StackConfig, resolve_job


def _fix(cfg: StackConfig, job: str, kind: str, name: str, version: str) -> str:
    if getattr(cfg.ray.images, kind) is None:
        return (
            f"add it to the pyproject.toml extras the {kind} image installs "
            "(components/builders/images.py IMAGE_EXTRAS) and run `python -m raygke images lock`"
        )
    return (
        f"use the project's images (ray.images.{kind} unset), declare "
        f"ray.images.{kind}.provides: {{{name}: {version}}} if the image has it, or set "
        f"jobs[{job}].runtime_env_pip: true"
    )


def dependency_problems(cfg: StackConfig) -> list[str]:
    """One line per job and needed distribution its images lack or hold at another version than
    the project's pin, naming the job, the workload, the distribution, the image and the fix.
    Jobs whose target or workload does not resolve are left to the rules that report those."""
    from workloads.registry import WORKLOADS

    wanted = project_pins()
    refs = planned_refs(cfg)
    problems = []
    for job in cfg.jobs:
        workload = WORKLOADS.get(job.workload)
        if workload is None:
            continue
        try:
            worker_kind = pool_image_kind(resolve_job(cfg, job).pool)
        except ResolveError:
            continue
        kinds = list(dict.fromkeys((worker_kind, "cpu")))
        for kind in kinds:
            where = "worker-group" if kind == worker_kind else "head (driver)"
            if job.runtime_env_pip:
                have = pins(worker_kind)
                image = f"runtime_env_pip (images/requirements-{worker_kind}.txt)"
            else:
                have = provides(cfg, kind)
                image = f"{where} image {refs[kind]}"
            for need in workload.needs:
                name = normalize(need)
                pin = wanted.get(name, "")
                got = have.get(name)
                if got is None:
                    problems.append(
                        f"jobs[{job.name}]: workload {workload.name} needs {need}, {image} does "
                        f"not provide it; {_fix(cfg, job.name, kind, need, pin)}"
                    )
                    break
                if pin and got != pin:
                    problems.append(
                        f"jobs[{job.name}]: workload {workload.name} needs {need}=={pin} (the "
                        f"project's pin), {image} provides {need} {got}; "
                        f"{_fix(cfg, job.name, kind, need, pin)}"
                    )
                    break
            else:
                continue
            break  # one line per job: the first image that falls short
    return problems


def image_warnings(cfg: StackConfig) -> list[str]:
    """Prebuilt images referenced by tag alone (no ``@sha256:`` digest), one line each: a tag can
    be moved to other contents between two pod starts. Stacks with deletion protection refuse
    them instead (:func:`components.spec.rules.prebuilt_images_pinned_when_protected`)."""
    out = []
    for kind in IMAGE_KINDS:
        prebuilt = getattr(cfg.ray.images, kind)
        if prebuilt is not None and not prebuilt.pinned:
            out.append(
                f"ray.images.{kind}: {prebuilt.image} is a tag, not a digest; pods may run "
                "other contents after the tag moves (write <image>@sha256:<digest>)"
            )
    return out
