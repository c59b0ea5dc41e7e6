"""The carried ComputeClass schema accepts the fields GKE's reference documents
(https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass; issue 37: a user who
added ``priorityScore``, ``gpuSharing`` or ``location.zoneTypes`` was told it is unknown), and
still refuses a misspelled one or a value outside what the page allows."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from components.computeclass.render import render_compute_classes
from components.plan.plan import plan
from components.raycrs.crd import validate_other
from components.stack.loader import validate
from tests.helpers import config


def _gpu_class() -> dict[str, Any]:
    data = config(
        compute_classes=[{"name": "l4-spot", "node_pool": "l4", "fallback": ["on-demand"]}]
    )
    (cc,) = render_compute_classes(plan(validate(data)))
    return cc


def _gpu(spec: dict) -> dict:
    return next(p for p in spec["priorities"] if "gpu" in p)


def _scored(spec: dict, score: int) -> None:
    spec["priorities"] = [dict(p, priorityScore=score) for p in spec["priorities"] if "gpu" in p]


DOCUMENTED: list[tuple[str, Callable[[dict], None]]] = [
    # GKE: on every priority or none, and a nodepools priority takes no other field
    ("priorities[].priorityScore", lambda s: _scored(s, 100)),
    (
        "priorities[].location.zoneTypes",
        lambda s: _gpu(s).update(location={"zones": ["us-east5-b"], "zoneTypes": ["AI"]}),
    ),
    (
        "priorityDefaults.location.zoneTypes",
        lambda s: s.setdefault("priorityDefaults", {}).update(location={"zoneTypes": ["AI"]}),
    ),
    (
        "priorities[].gpu.gpuSharing",
        lambda s: _gpu(s)["gpu"].update(
            gpuSharing={
                "sharingStrategy": "TIME_SHARING",
                "maxSharedClientsPerGPU": 4,
                "gpuPartitionSize": "1g.24gb",
            }
        ),
    ),
    (
        "priorities[].gpu.gpuSharing (MPS)",
        lambda s: _gpu(s)["gpu"].update(
            gpuSharing={"sharingStrategy": "MPS", "maxSharedClientsPerGPU": 48}
        ),
    ),
]


@pytest.mark.parametrize(("field", "add"), DOCUMENTED, ids=[d[0] for d in DOCUMENTED])
def test_each_documented_field_is_accepted(field: str, add: Callable[[dict], None]) -> None:
    cc = _gpu_class()
    assert validate_other(cc) == []
    add(cc["spec"])
    assert validate_other(cc) == [], field


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda s: _gpu(s).update(priorityScor=1), "priorityScor: unknown field"),
        (
            lambda s: _gpu(s)["gpu"].update(gpuSharing={"sharingStrategy": "SHARED"}),
            "gpu.gpuSharing.sharingStrategy: 'SHARED' is not one of ['TIME_SHARING', 'MPS']",
        ),
        (
            lambda s: _gpu(s)["gpu"].update(gpuSharing={"maxSharedClientsPerGPU": 64}),
            "gpu.gpuSharing.maxSharedClientsPerGPU: 64 is greater than the maximum of 48",
        ),
        (lambda s: _gpu(s).update(priorityScore="high"), "'high' is not of type 'integer'"),
    ],
)
def test_misspelled_or_out_of_range_is_still_refused(mutate: Any, needle: str) -> None:
    cc = copy.deepcopy(_gpu_class())
    mutate(cc["spec"])
    assert needle in "\n".join(validate_other(cc))
