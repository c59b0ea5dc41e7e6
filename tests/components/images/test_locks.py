"""One Ray version everywhere: the images build on rayproject/ray:<ray.version> and install the
locked requirement set, so ray.version must be a version the repository has locks for; an
unreleased version (2.99.0) is refused by `raygke check` (exit 1)."""

from __future__ import annotations

import subprocess
import sys

from components.config.images import IMAGE_KINDS
from components.images.render import (
    locked_ray_versions,
    pins,
    ray_version_problem,
    requirements_path,
)
from components.kernel.base import StackConfigError
from components.stack.loader import validate
from tests.helpers import ROOT, config


def test_every_image_lock_pins_the_same_ray_which_is_the_default_version() -> None:
    locked = locked_ray_versions()
    assert len(locked) == 1
    (version,) = locked
    for kind in IMAGE_KINDS:
        assert pins(kind)["ray"] == version
        assert f"=={version}" in requirements_path(kind).read_text()
    assert validate(config()).ray.version == version
    assert ray_version_problem(version) is None


def test_a_version_without_locks_names_the_locked_versions() -> None:
    (version,) = locked_ray_versions()
    line = ray_version_problem("2.59.0")
    assert line is not None and "has no locked requirement set" in line
    assert f"Versions with locks: {version}" in line
    unreleased = ray_version_problem("2.99.0")
    assert unreleased is not None and "newer than every Ray release" in unreleased


def test_validation_refuses_it_when_the_project_builds_images_only() -> None:
    try:
        validate(config(ray={"version": "2.99.0"}))
    except StackConfigError as e:
        (line,) = [p for p in e.problems if p.startswith("ray.version")]
        assert "'2.99.0'" in line and "Versions with locks" in line
    else:
        raise AssertionError("ray.version 2.99.0 passed validation")
    digest = "@sha256:" + "0" * 64
    prebuilt = {
        k: {
            "image": f"rayproject/ray:2.99.0{'-py311-gpu' if k.startswith('gpu') else '-py311'}{digest}"
        }
        for k in IMAGE_KINDS
    }
    # with every kind prebuilt the project builds nothing, so there is no lock to agree with
    assert validate(config(ray={"version": "2.99.0", "images": prebuilt})).ray.version == "2.99.0"


def test_check_with_an_unreleased_ray_version_exits_1() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "raygke",
            "check",
            "--stack",
            "dev",
            "--no-render",
            "--set",
            "ray.version=2.99.0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ray.version: '2.99.0'" in r.stderr


def test_images_lock_check_names_the_locked_ray_version() -> None:
    from typer.testing import CliRunner

    from raygke.cli import app

    (version,) = locked_ray_versions()
    r = CliRunner().invoke(app, ["images", "lock", "--check"])
    assert r.exit_code == 0, r.output
    assert f"lock Ray {version}" in r.output
