"""Offline proof that each image's requirement set resolves for the image's Python (3.11,
manylinux x86_64) against the package index: ``pip install --dry-run`` in a clean target, so
nothing installed here is reused. Needs the package index (PyPI or its mirror)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from components.builders.images import PYTHON_VERSION, requirements_path
from components.spec import IMAGE_KINDS

pytestmark = pytest.mark.slow

# The Ray images are Ubuntu 22.04 (glibc 2.35) on x86_64 (ray-project/ray docker/README.md):
# every manylinux tag up to 2.35.
# ``--platform`` accepts only the tags it is given, so list them all (PEP 600).
GLIBC_MINORS = range(17, 36)
PLATFORM_ARGS = [
    arg
    for tag in ("manylinux2014_x86_64", *(f"manylinux_2_{m}_x86_64" for m in GLIBC_MINORS))
    for arg in ("--platform", tag)
]


@pytest.mark.parametrize("kind", IMAGE_KINDS)
def test_image_requirements_resolve(kind: str, tmp_path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--no-input",
        "--disable-pip-version-check",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        "cp311",
        *PLATFORM_ARGS,
        "--only-binary=:all:",
        "--target",
        str(tmp_path / "t"),
        "--report",
        str(tmp_path / "report.json"),
        "-r",
        str(requirements_path(kind)),
    ]
    # Resolve as the image build does: the package index only. This machine's pip settings (a
    # local torch cap in /etc/xdg/pip, local wheels in PIP_FIND_LINKS) are left out.
    env = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_INDEX_URL")
        or k.endswith("_PROXY")
        or k.endswith("_proxy")
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, (
        f"images/requirements-{kind}.txt does not resolve:\n{r.stderr[-3000:]}"
    )
    report = json.loads((tmp_path / "report.json").read_text())
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report["install"]}
    assert got.get("torch") == "2.13.0"
    if kind == "tpu":
        assert "libtpu" in got, sorted(got)
