"""Pure pieces of the GKE cluster: Node Auto Provisioning resource limits.

Source: https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning
"""

from __future__ import annotations

from components import catalog
from components.spec import StackConfig, nap_needs

_ACCELERATOR_TYPES = frozenset(catalog.NAP_RESOURCE_TYPES) - {"cpu", "memory"}


def nap_resource_limits(cfg: StackConfig) -> list[dict[str, object]]:
    """NAP resource limits: ``[{"resource_type", "minimum", "maximum"}]``, cpu and memory first.

    cpu (vCPUs) and memory (GB) come from ``nap.resource_limits`` (defaults 256 / 1024). Every
    accelerator named in config or used by a declared pool gets
    ``max(config limit, what the pools can scale to)`` (chips or GPUs; :func:`nap_needs`).
    """
    limits = cfg.nap.effective_limits
    needs = nap_needs(cfg)
    accelerators = sorted(
        {k for k in limits if k in _ACCELERATOR_TYPES}
        | {k for k in needs if k in _ACCELERATOR_TYPES}
    )
    out: list[dict[str, object]] = [
        {"resource_type": "cpu", "minimum": 0, "maximum": limits["cpu"]},
        {"resource_type": "memory", "minimum": 0, "maximum": limits["memory"]},
    ]
    for acc in accelerators:
        out.append(
            {
                "resource_type": acc,
                "minimum": 0,
                "maximum": max(limits.get(acc, 0), needs.get(acc, 0)),
            }
        )
    return out
