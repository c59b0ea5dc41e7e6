"""Shared helpers for the platform tests: the repo's stacks and the CRD folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import StackConfig, load_stack_file
from components.crd import crds_available, missing_crds_message

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "prod")
WORKING_DIR = "gs://bucket/workloads/0123456789abcdef.zip"


def stack(name: str) -> StackConfig:
    return load_stack_file(ROOT / f"Pulumi.{name}.yaml")


needs_crds = pytest.mark.skipif(not crds_available(), reason=missing_crds_message())
