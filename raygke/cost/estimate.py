"""Hourly and monthly cost of a rendered stack, per node pool, at minimum and maximum scale.

Pure function of the render (``resources.json`` records of :mod:`raygke.synth`, or the same list
from :func:`raygke.synth.run_program`), priced from :mod:`raygke.cost.prices`'s tables (the dated, sourced list
``raygke/cost/prices.json``: every machine family, GPU and TPU generation, on-demand and Spot, per
region), so
``raygke cost`` and the cost delta of ``raygke diff`` read the same figures:

* a node pool's nodes: ``autoscaling.minNodeCount``/``maxNodeCount`` per zone times its zones, or
  ``totalMinNodeCount``/``totalMaxNodeCount``; at minimum scale, at least the nodes that the
  stack's RayServices and RayClusters keep up (their heads and ``minReplicas`` workers,
  :mod:`raygke.cost.floors`: prod's ``lm`` service keeps an ``l4-serve`` node up);
  https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler#minimum_and_maximum_node_pool_size
* the price of a node: its machine type without accelerators, plus GPUs x the GPU price, or the
  TPU chips of the machine type x the chip price; Spot when ``nodeConfig.spot``; a pool that
  consumes a specific reservation pays the on-demand rate (the reservation itself is billed
  whether nodes run or not, and its size is not in the stack);
* a flex-start pool (``nodeConfig.flexStart``) or one with queued provisioning
  (``queuedProvisioning.enabled``, Dynamic Workload Scheduler) is billed at DWS prices, which are
  discounted ("discounts (up to 53%) for vCPUs, GPUs and TPUs", :data:`FLEX_START_PRICING`) by
  SKU; the dated price table records no DWS rate and no source gives one discount for every
  machine, so such a pool is priced at its on-demand rate and marked an upper bound
  (:attr:`PoolCost.upper_bound`: ``<=`` in the table, ``upper_bound`` in JSON, and the note
  :data:`FLEX_START_NOTE`);
* the cluster: the GKE management fee per cluster.

A price that the catalog does not record makes the pool's cost ``None`` (unknown); totals are
``None`` when any part is unknown, and :attr:`StackCost.known_min_hourly` etc. give the known part.
Not included: boot disks, network egress, storage, NAT, load balancers, logging, NAP-created pools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.catalog import tpu_machine
from raygke.cost.floors import floors
from raygke.cost.prices import (
    CLUSTER_FEE,
    GPU_PRICES,
    HOURS_PER_MONTH,
    MACHINE_PRICES,
    RESERVATION_PRICING,
    TPU_CHIP_PRICES,
    Price,
)

# Flex-start and queued provisioning (DWS) pricing: "Flex-start is powered by Dynamic Workload
# Scheduler and is billed using Dynamic Workload Scheduler pricing: discounts (up to 53%) for
# vCPUs, GPUs, and TPUs; pay as you go" (GKE, "About GPU, TPU and H4D consumption with the
# flex-start provisioning mode", section "Flex-start pricing"); Compute Engine: "For A4, A3, A2,
# and H4D machine types, you obtain vCPUs, memory, and any attached GPUs at a discounted price"
# (https://cloud.google.com/compute/docs/instances/about-flex-start-vms). A per-SKU rate is not
# in the price table (raygke/cost/prices.json), so these pools are shown at the on-demand rate.
FLEX_START_PRICING = "https://cloud.google.com/kubernetes-engine/docs/concepts/dws"
FLEX_START_NOTE = (
    f"on-demand price, upper bound (DWS flex-start is billed at its own rate: {FLEX_START_PRICING})"
)
DWS_PROVISIONING = ("queued", "flex-start")

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"


@dataclass
class PoolCost:
    """Cost of one node pool.

    Attributes:
        name: the GKE node pool name.
        machine_type, region: what is priced.
        provisioning: ``on-demand`` | ``spot`` | ``reservation`` | ``queued`` (DWS queued
            provisioning) | ``flex-start``.
        accelerators: e.g. ``8 x nvidia-h100-80gb`` or ``16 TPU v6e chips`` per node ('' for CPU).
        min_nodes, max_nodes: node count at minimum and maximum scale.
        node_hourly: USD per node-hour, None when a price is unknown.
        sources: the source URL of every price used (or the missing one, named).
        missing: what has no recorded price.
        notes: how derived prices were derived (``"e2-standard-8 in us-east5: derived: ..."``).
    """

    @property
    def upper_bound(self) -> bool:
        """The price is an upper bound: a ``queued`` or ``flex-start`` pool, priced on demand
        while DWS bills its own, discounted rate (:data:`FLEX_START_NOTE`)."""
        return self.provisioning in DWS_PROVISIONING

    name: str
    machine_type: str
    region: str
    provisioning: str
    accelerators: str
    min_nodes: int
    max_nodes: int
    node_hourly: float | None
    sources: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    floor_nodes: int = 0
    floor_by: list[str] = field(default_factory=list)

    @property
    def min_scale_nodes(self) -> int:
        """Nodes at minimum scale: the pool's own minimum, or the nodes its long-lived Ray
        clusters keep up (:attr:`floor_nodes`, :mod:`raygke.cost.floors`) when more, at most
        its maximum."""
        return min(max(self.min_nodes, self.floor_nodes), max(self.max_nodes, self.min_nodes))

    @property
    def min_hourly(self) -> float | None:
        """USD per hour at minimum scale (:attr:`min_scale_nodes`; None: unknown; 0 nodes cost
        $0 even when the node price is unknown)."""
        return _times(self.node_hourly, self.min_scale_nodes)

    @property
    def max_hourly(self) -> float | None:
        """USD per hour at maximum scale (None: unknown; 0 nodes cost $0)."""
        return _times(self.node_hourly, self.max_nodes)


def _times(node_hourly: float | None, nodes: int) -> float | None:
    if nodes == 0:
        return 0.0
    return None if node_hourly is None else node_hourly * nodes


@dataclass
class StackCost:
    """Cost of a rendered stack: its pools and the cluster fee (USD per hour)."""

    pools: list[PoolCost]
    cluster_fee_hourly: float
    clusters: int

    def _total(self, attr: str) -> float | None:
        values = [getattr(p, attr) for p in self.pools]
        if any(v is None for v in values):
            return None
        return sum(values) + self.cluster_fee_hourly

    def _known(self, attr: str) -> float:
        return sum(getattr(p, attr) or 0.0 for p in self.pools) + self.cluster_fee_hourly

    @property
    def min_hourly(self) -> float | None:
        """Total USD per hour at minimum scale; None when any pool's price is unknown."""
        return self._total("min_hourly")

    @property
    def max_hourly(self) -> float | None:
        """Total USD per hour at maximum scale; None when any pool's price is unknown."""
        return self._total("max_hourly")

    @property
    def upper_bound_pools(self) -> list[str]:
        """The pools whose cost is an upper bound (:attr:`PoolCost.upper_bound`)."""
        return [p.name for p in self.pools if p.upper_bound]

    def is_upper_bound(self, attr: str) -> bool:
        """The total ``attr`` (``min_hourly`` / ``max_hourly``) includes an upper-bound price
        (an upper-bound pool with nodes at that scale)."""
        return any(p.upper_bound and (getattr(p, attr) or 0) > 0 for p in self.pools)

    @property
    def known_min_hourly(self) -> float:
        """The priced part of the minimum-scale total (a lower bound when some are unknown)."""
        return self._known("min_hourly")

    @property
    def known_max_hourly(self) -> float:
        """The priced part of the maximum-scale total."""
        return self._known("max_hourly")

    def to_json(self) -> dict[str, Any]:
        """Plain data (hourly and monthly at 730 h), unknown values as None."""

        def month(v: float | None) -> float | None:
            return None if v is None else round(v * HOURS_PER_MONTH, 2)

        def hour(v: float | None) -> float | None:  # a sum of prices: no 0.36804000000000003
            return None if v is None else round(v, 5)

        return {
            "hours_per_month": HOURS_PER_MONTH,
            "cluster_fee_hourly": self.cluster_fee_hourly,
            "pools": [
                {
                    "name": p.name,
                    "machine_type": p.machine_type,
                    "region": p.region,
                    "provisioning": p.provisioning,
                    "accelerators": p.accelerators,
                    "min_nodes": p.min_nodes,
                    "max_nodes": p.max_nodes,
                    "floor_nodes": p.floor_nodes,
                    "floor_by": p.floor_by,
                    "min_scale_nodes": p.min_scale_nodes,
                    "node_hourly": p.node_hourly,
                    "upper_bound": p.upper_bound,
                    "price_basis": FLEX_START_NOTE if p.upper_bound else p.provisioning,
                    "min_hourly": hour(p.min_hourly),
                    "max_hourly": hour(p.max_hourly),
                    "min_monthly": month(p.min_hourly),
                    "max_monthly": month(p.max_hourly),
                    "sources": p.sources,
                    "missing": p.missing,
                    "notes": p.notes,
                }
                for p in self.pools
            ],
            "min_hourly": hour(self.min_hourly),
            "max_hourly": hour(self.max_hourly),
            "min_is_upper_bound": self.is_upper_bound("min_hourly"),
            "max_is_upper_bound": self.is_upper_bound("max_hourly"),
            "upper_bound_pools": self.upper_bound_pools,
            "min_monthly": month(self.min_hourly),
            "max_monthly": month(self.max_hourly),
        }


def region_of(location: str) -> str:
    """``us-east5-a`` -> ``us-east5``; a region is returned as is."""
    parts = location.split("-")
    return "-".join(parts[:2]) if len(parts) == 3 and len(parts[2]) == 1 else location


def _provisioning(inputs: dict[str, Any]) -> str:
    """How a rendered node pool's nodes are bought (:attr:`PoolCost.provisioning`)."""
    nc = inputs.get("nodeConfig") or {}
    if nc.get("spot") or nc.get("preemptible"):
        return "spot"
    if (inputs.get("queuedProvisioning") or {}).get("enabled"):
        return "queued"
    if nc.get("flexStart"):
        return "flex-start"
    affinity = (nc.get("reservationAffinity") or {}).get("consumeReservationType")
    return "reservation" if affinity == "SPECIFIC_RESERVATION" else "on-demand"


def _pick(price: Price, provisioning: str) -> float | None:
    return price.spot if provisioning == "spot" else price.on_demand


def _nodes(inputs: dict[str, Any]) -> tuple[int, int]:
    a = inputs.get("autoscaling") or {}
    zones = max(1, len(inputs.get("nodeLocations") or []))
    if "totalMinNodeCount" in a or "totalMaxNodeCount" in a:
        return int(a.get("totalMinNodeCount") or 0), int(a.get("totalMaxNodeCount") or 0)
    if a:
        return int(a.get("minNodeCount") or 0) * zones, int(a.get("maxNodeCount") or 0) * zones
    n = int(inputs.get("nodeCount") or inputs.get("initialNodeCount") or 0) * zones
    return n, n


def pool_cost(inputs: dict[str, Any], name: str | None = None) -> PoolCost:
    """The :class:`PoolCost` of one ``gcp.container.NodePool``'s rendered inputs (camelCase)."""
    nc = inputs.get("nodeConfig") or {}
    machine = str(nc.get("machineType") or "")
    region = region_of(str(inputs.get("location") or ""))
    provisioning = _provisioning(inputs)
    lo, hi = _nodes(inputs)
    parts: list[tuple[str, Price | None, int]] = []
    tpu = tpu_machine(machine)
    accelerators = ""
    if tpu:
        gen, chips = tpu
        accelerators = f"{chips} TPU {gen} chips"
        parts.append((f"TPU {gen} chip in {region}", TPU_CHIP_PRICES.get((region, gen)), chips))
    else:
        parts.append((f"{machine} in {region}", MACHINE_PRICES.get((region, machine)), 1))
        for g in nc.get("guestAccelerators") or []:
            gtype, count = str(g.get("type")), int(g.get("count") or 0)
            accelerators = f"{count} x {gtype}"
            parts.append((f"{gtype} in {region}", GPU_PRICES.get((region, gtype)), count))
    node: float | None = 0.0
    sources: list[str] = []
    missing: list[str] = []
    notes: list[str] = []
    for what, price, k in parts:
        value = _pick(price, provisioning) if price else None
        if value is None:
            node = None
            missing.append(f"{what} ({provisioning})")
            continue
        if node is not None:
            node += value * k
        if price and price.source not in sources:
            sources.append(price.source)
        if price and price.note:
            notes.append(f"{what}: {price.note}")
    if provisioning in DWS_PROVISIONING:
        sources.append(FLEX_START_PRICING)
    if provisioning == "reservation" and RESERVATION_PRICING not in sources:
        sources.append(RESERVATION_PRICING)
    return PoolCost(
        name or str(inputs.get("name")),
        machine,
        region,
        provisioning,
        accelerators,
        lo,
        hi,
        None if node is None else round(node, 5),
        sources,
        missing,
        notes,
    )


def stack_cost(records: list[dict[str, Any]]) -> StackCost:
    """The :class:`StackCost` of a render: every node pool record, at minimum scale with the
    nodes its RayServices and RayClusters keep up (:mod:`raygke.cost.floors`), and the cluster
    fee."""
    pools = [
        pool_cost(r.get("inputs") or {}, (r.get("inputs") or {}).get("name") or r["name"])
        for r in records
        if r.get("type") == NODE_POOL
    ]
    pools.sort(key=lambda p: p.name)
    kept = floors(records, {p.name: p.node_hourly for p in pools})
    for p in pools:
        if p.name in kept:
            p.floor_nodes, p.floor_by = kept[p.name].nodes, kept[p.name].reasons
    clusters = sum(r.get("type") == CLUSTER for r in records)
    return StackCost(pools, (CLUSTER_FEE.on_demand or 0.0) * clusters, clusters)


def money(value: float | None) -> str:
    """``$1,234.56`` or ``unknown``."""
    return "unknown" if value is None else f"${value:,.2f}"


def signed(value: float | None) -> str:
    """``+$12.00`` / ``-$3.50`` / ``$0.00`` or ``unknown``."""
    if value is None:
        return "unknown"
    if abs(value) < 0.005:
        return "$0.00"
    return f"{'+' if value > 0 else '-'}${abs(value):,.2f}"


def delta_lines(base: StackCost, head: StackCost) -> list[str]:
    """Review lines for the cost change between two renders: one per pool whose cost changed
    (monthly, at min and max scale) and the stack total; empty when nothing changed."""

    def monthly(v: float | None) -> float | None:
        return None if v is None else v * HOURS_PER_MONTH

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else b - a

    lines = []
    old = {p.name: p for p in base.pools}
    new = {p.name: p for p in head.pools}
    for name in sorted(set(old) | set(new)):
        o, n = old.get(name), new.get(name)
        o_min, o_max = (o.min_hourly, o.max_hourly) if o else (0.0, 0.0)
        n_min, n_max = (n.min_hourly, n.max_hourly) if n else (0.0, 0.0)
        if (o_min, o_max) == (n_min, n_max) and (o and n and o.node_hourly == n.node_hourly):
            continue
        what = (
            f"{o.provisioning} -> {n.provisioning}"
            if o and n and o.provisioning != n.provisioning
            else ("new pool" if not o else "removed pool" if not n else "changed")
        )
        if (o.floor_nodes if o else 0) != (n.floor_nodes if n else 0):
            kept = "; ".join((n or o).floor_by) if (n and n.floor_by) or (o and o.floor_by) else ""
            what += (
                f"; kept up by Ray: {o.floor_nodes if o else 0} -> {n.floor_nodes if n else 0} "
                f"node(s){' (' + kept + ')' if kept else ''}"
            )
        if (o and o.upper_bound) or (n and n.upper_bound):
            what += "; DWS pools at the on-demand price, an upper bound"
        lines.append(
            f"pool {name} ({what}): {signed(diff(monthly(o_min), monthly(n_min)))}/month at min "
            f"scale, {signed(diff(monthly(o_max), monthly(n_max)))}/month at max scale "
            f"({money(monthly(o_max))} -> {money(monthly(n_max))})"
        )
    t_min = diff(monthly(base.min_hourly), monthly(head.min_hourly))
    t_max = diff(monthly(base.max_hourly), monthly(head.max_hourly))
    if lines or base.cluster_fee_hourly != head.cluster_fee_hourly:
        lines.append(
            f"total: {signed(t_min)}/month at min scale, {signed(t_max)}/month at max scale "
            f"({money(monthly(base.max_hourly))} -> {money(monthly(head.max_hourly))} at max; "
            f"{HOURS_PER_MONTH} h/month, list prices, {PRICES_NOTE})"
        )
    return lines


PRICES_NOTE = "sources: raygke cost"
