"""A stack with Kueue queues for the capacity tests: the test BASE stack plus a queued v6e pool."""

from __future__ import annotations

import copy
from typing import Any

from components.config.stack import StackConfig
from components.stack.loader import validate
from tests.helpers import BASE, config

DWS_POOL = {
    "name": "v6e-dws",
    "tpu": {"generation": "v6e", "topology": "4x4"},
    "zones": ["us-east5-b"],
    "max_slices": 2,
    "provisioning": "queued",
    "labels": {"capacity": "dws"},
}

CAPACITY: dict[str, Any] = {
    "priority_classes": [{"name": "high", "value": 1000}],
    "cluster_queues": [
        {
            "name": "team-a",
            "cohort": "ml",
            "flavors": [
                {"pool": "system", "nominal": {"cpu": 8, "memory": "32Gi"}},
                {"pool": "v6e", "nominal": {"cpu": 720, "memory": "2800Gi", "google.com/tpu": 16}},
                {
                    "pool": "v6e-dws",
                    "nominal": {"cpu": 720, "memory": "2800Gi", "google.com/tpu": 16},
                },
            ],
        },
        {
            "name": "team-b",
            "cohort": "ml",
            "flavors": [
                {"pool": "system", "nominal": {"cpu": 8, "memory": "32Gi"}},
                {
                    "pool": "v6e-dws",
                    "nominal": {"cpu": 720, "memory": "2800Gi", "google.com/tpu": 16},
                },
            ],
        },
    ],
    "local_queues": [
        {"name": "team-a", "cluster_queue": "team-a"},
        {"name": "team-b", "cluster_queue": "team-b"},
    ],
}

JOB = {"name": "train", "workload": "train_lm_jax", "node_pool": "v6e", "queue": "team-a"}


def data(**overrides: Any) -> dict[str, Any]:
    """The queued test stack as a mapping; ``overrides`` replace top-level keys."""
    out = config(
        node_pools=[*copy.deepcopy(BASE["node_pools"]), copy.deepcopy(DWS_POOL)],
        capacity=copy.deepcopy(CAPACITY),
        jobs=[dict(JOB, priority="high")],
    )
    out["kuberay"] = {"mode": "gke-addon"}
    out["nap"] = {"resource_limits": {"cpu": 8192, "memory": 32768, "tpu-v6e-slice": 128}}
    out.update(overrides)
    return out


def cfg(**overrides: Any) -> StackConfig:
    return validate(data(**overrides))
