"""The stack config inside a Pulumi program (``pulumi.Config``)."""

from __future__ import annotations

import json
from typing import Any

from components.config.stack import StackConfig
from components.kernel.base import PROJECT_NAMESPACE
from components.stack.loader import validate


def load_pulumi_config() -> StackConfig:
    """Read and validate the current stack's config through ``pulumi.Config`` (inside a program).

    Raises:
        StackConfigError: the stack config is invalid.
    """
    import pulumi

    cfg = pulumi.Config(PROJECT_NAMESPACE)
    data: dict[str, Any] = {}
    for name in StackConfig.model_fields:
        raw = cfg.get(name)
        if raw is None:
            continue
        try:
            data[name] = json.loads(raw)
        except json.JSONDecodeError:
            data[name] = raw
    gcp = pulumi.Config("gcp")
    for name in ("project", "region"):
        if name not in data and gcp.get(name):
            data[name] = gcp.get(name)
    return validate(data, f"stack {pulumi.get_stack()}")
