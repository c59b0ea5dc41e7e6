"""Where an error Kueue's webhooks find on a rendered object (:mod:`components.capacity.webhooks`)
comes from in the stack file: a ClusterQueue's ``spec.resourceGroups[g].flavors[f].resources[r]``
is ``capacity.cluster_queues[<q>].flavors[<pool>]`` and its quota field with the resource named
(``.lending_limit[nvidia.com/gpu]``, the key ``--set`` takes); a ResourceFlavor is named after its
node pool. Pure; reads the rendered objects only."""

from __future__ import annotations

import re
from typing import Any

# ``err`` below is a components.capacity.webhooks.FieldError (its ``path`` and ``str``); not
# imported, since webhooks imports this module.
FieldError = Any

_RES_FIELD = {
    "nominalQuota": "nominal",
    "borrowingLimit": "borrowing_limit",
    "lendingLimit": "lending_limit",
}


_RESOURCE_PATH = re.compile(
    r"spec\.resourceGroups\[(\d+)\]\.flavors\[(\d+)\](?:\.resources\[(\d+)\](?:\.(\w+))?)?"
)


def quota_resource(cq: dict[str, Any], err: FieldError) -> tuple[str, str] | None:
    """``(flavor, resource name)`` of an error inside a flavor's ``resources[i]`` of a rendered
    ClusterQueue (``("v6e", "google.com/tpu")``); None elsewhere."""
    m = _RESOURCE_PATH.match(err.path)
    if not m or m.group(3) is None:
        return None
    flavor = cq["spec"]["resourceGroups"][int(m.group(1))]["flavors"][int(m.group(2))]
    return flavor["name"], flavor["resources"][int(m.group(3))]["name"]


def named_resources(cq: dict[str, Any], err: FieldError) -> str:
    """``err`` as printed, its ``resources[i]`` written as the resource it is
    (``resources[nvidia.com/gpu]``): the index alone names nothing in the stack file."""
    found = quota_resource(cq, err)
    if found is None:
        return str(err)
    m = _RESOURCE_PATH.match(err.path)
    assert m is not None
    head = m.group(0).replace(f".resources[{m.group(3)}]", f".resources[{found[1]}]", 1)
    return head + str(err)[len(m.group(0)) :]


def cluster_queue_field(cq: dict[str, Any], err: FieldError) -> str:
    """The stack field of an error on a rendered ClusterQueue: ``capacity.cluster_queues[<q>]``,
    then ``.flavors[<pool>]`` for an error inside a flavor and ``.nominal`` /
    ``.borrowing_limit`` / ``.lending_limit`` with the resource (``.lending_limit[nvidia.com/gpu]``,
    the key ``--set`` takes) for one on a quota."""
    name = cq["metadata"]["name"]
    base = f"capacity.cluster_queues[{name}]"
    m = _RESOURCE_PATH.match(err.path)
    if not m:
        return base
    group = cq["spec"]["resourceGroups"][int(m.group(1))]
    pool = group["flavors"][int(m.group(2))]["name"]
    leaf = _RES_FIELD.get(m.group(4) or "")
    found = quota_resource(cq, err)
    key = f"[{found[1]}]" if found is not None else ""
    return f"{base}.flavors[{pool}]" + (f".{leaf}{key}" if leaf else "")


def flavor_field(rf: dict[str, Any], err: FieldError) -> str:
    """A ResourceFlavor is named after its node pool: an error on its labels is the pool's
    ``labels``; on its taints or tolerations the pool (derived from its shape)."""
    pool = rf["metadata"]["name"]
    if pool == "system":  # the system pool's flavor: cluster.system_pool, no labels: key
        return "cluster.system_pool"
    base = f"node_pools[{pool}]"
    return f"{base}.labels" if err.path.startswith("spec.nodeLabels") else base
