"""Printing ``raygke cost`` (rich table) from :class:`raygke.cost.estimate.StackCost`."""

from __future__ import annotations

from typing import Any

from components.kernel.base import plural
from raygke.cost.estimate import FLEX_START_NOTE, StackCost, money
from raygke.cost.prices import GKE_PRICING, HOURS_PER_MONTH, PRICES_RECORDED


def _m(v: float | None, bound: bool = False) -> str:
    return _b(money(None if v is None else v * HOURS_PER_MONTH), bound and bool(v))


def _b(text: str, bound: bool) -> str:
    """``<= $1.00`` for an upper bound (:attr:`raygke.cost.estimate.PoolCost.upper_bound`)."""
    return f"<= {text}" if bound and text != "unknown" else text


def print_cost(cost: StackCost, stack: str, console: Any) -> None:
    """Per-pool table (hourly and monthly at min and max scale), totals, and the sources."""
    from raygke.console import print_table
    from raygke.console import table as make_table

    sources = sorted({s for p in cost.pools for s in p.sources} | {GKE_PRICING})
    ref = {s: i + 1 for i, s in enumerate(sources)}
    t = make_table(
        f"cost of stack {stack} (USD, list prices recorded {PRICES_RECORDED})",
        ("pool", "machine", "capacity", "accelerators", "nodes", "src"),
        ("$/h min", "$/h max", "$/month min", "$/month max"),
    )
    for p in cost.pools:
        up = p.upper_bound
        t.add_row(
            p.name,
            p.machine_type,
            p.provisioning,
            p.accelerators or "-",
            f"{p.min_scale_nodes}{'*' if p.min_scale_nodes > p.min_nodes else ''}-{p.max_nodes}",
            ",".join(f"[{ref[s]}]" for s in p.sources) or "-",
            _b(money(p.min_hourly), up and bool(p.min_hourly)),
            _b(money(p.max_hourly), up and bool(p.max_hourly)),
            _m(p.min_hourly, up),
            _m(p.max_hourly, up),
        )
    t.add_row(
        "cluster fee",
        plural(cost.clusters, "cluster"),
        "",
        "",
        "",
        f"[{ref[GKE_PRICING]}]",
        money(cost.cluster_fee_hourly),
        money(cost.cluster_fee_hourly),
        _m(cost.cluster_fee_hourly),
        _m(cost.cluster_fee_hourly),
    )
    t.add_row(
        "total",
        "",
        "",
        "",
        "",
        "",
        _b(money(cost.min_hourly), lo := cost.is_upper_bound("min_hourly")),
        _b(money(cost.max_hourly), hi := cost.is_upper_bound("max_hourly")),
        _m(cost.min_hourly, lo),
        _m(cost.max_hourly, hi),
        style="bold",
    )
    print_table(t, console)
    if cost.min_hourly is None or cost.max_hourly is None:
        console.print(
            f"priced part only: {_m(cost.known_min_hourly)}/month at min scale, "
            f"{_m(cost.known_max_hourly)}/month at max scale",
            markup=False,
        )
    if cost.upper_bound_pools:
        console.print(
            f"<= upper bound: {', '.join(cost.upper_bound_pools)}: {FLEX_START_NOTE}",
            markup=False,
            soft_wrap=True,
        )
    for p in cost.pools:
        if p.min_scale_nodes > p.min_nodes:
            console.print(
                f"* {p.name}: {plural(p.min_scale_nodes, 'node')} kept up at minimum scale (the "
                f"pool's own minimum: {p.min_nodes}) by {'; '.join(p.floor_by)}",
                markup=False,
                soft_wrap=True,
            )
    for p in cost.pools:
        if p.missing:
            console.print(f"unknown price: {p.name}: {', '.join(p.missing)}", markup=False)
    console.print("sources:", markup=False)
    for s in sources:
        console.print(f"  [{ref[s]}] {s}", markup=False)
    for note in sorted({n for p in cost.pools for n in p.notes}):
        console.print(f"  note: {note}", markup=False)
    console.print(
        f"{HOURS_PER_MONTH} h/month; not included: disks, egress, storage, NAT, logging, "
        "NAP-created pools; reservations are billed whether used or not.",
        markup=False,
    )
