"""The formats of ``raygke diff``: text (rich console), markdown (the pull-request comment) and
JSON, from a :class:`raygke.diff.compare.Plan`."""

from __future__ import annotations

import json
from typing import Any

from raygke.diff.compare import SYMBOLS, Change, Plan


def _v(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else json.dumps(value)


def _headline(c: Change) -> str:
    extra = []
    if c.op == "replace":
        extra.append("job re-run" if c.rerun else "replace")
        if c.reasons:
            extra.append("forced by " + ", ".join(c.reasons))
        if c.delete_before_replace:
            extra.append("delete before replace")
    return f"{c.type} {c.name}" + (f"  ({'; '.join(extra)})" if extra else "")


def render_text(plan: Plan, console: Any) -> None:
    """Print the plan on a rich console (colour when it is a terminal)."""
    from rich.text import Text

    styles = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red"}
    console.print(
        Text(f"Stack {plan.stack}: {plan.base} -> {plan.head}", style="bold"), soft_wrap=True
    )
    for c in plan.changes:
        sym = SYMBOLS[c.op]
        console.print(Text(f"  {sym:<2} {_headline(c)}", style=styles[c.op]), soft_wrap=True)
        for f in c.fields:
            mark = " (forces replacement)" if f.forces_replacement else ""
            console.print(
                Text(f"        {f.path}: {_v(f.old)} => {_v(f.new)}{mark}"), soft_wrap=True
            )
        for flag in c.flags:
            console.print(Text(f"        ! {flag}", style="bold red"), soft_wrap=True)
        for note in c.notes:
            console.print(Text(f"        note: {note}", style="dim"), soft_wrap=True)
        for d in c.disruption:
            console.print(Text(f"        disrupts: {_dline(d)}", style="bold red"), soft_wrap=True)
    console.print(Text(plan.summary(), style="bold"), soft_wrap=True)
    console.print(Text(disruption_summary(plan), style="bold"), soft_wrap=True)
    for line in cost_lines(plan.cost):
        console.print(Text(line), soft_wrap=True)


def _dline(d: dict[str, str]) -> str:
    return f"{d['target']}: {d['effect']} - {d['detail']}"


def disruption_summary(plan: Plan) -> str:
    """``Disruption: none (no running work stops or restarts)``, ``Disruption: 1 change stops
    or restarts running work`` or ``Disruption: 3 changes stop or restart running work``."""
    n = sum(bool(c.disruption) for c in plan.changes)
    if not n:
        return "Disruption: none (no running work stops or restarts)"
    from components.stack.base import plural

    verb = "stops or restarts" if n == 1 else "stop or restart"
    return f"Disruption: {plural(n, 'change')} {verb} running work"


def cost_lines(cost: dict[str, Any] | None) -> list[str]:
    """The cost-delta lines of a plan (empty without cost data)."""
    if not cost:
        return []
    return list(cost.get("lines") or [])


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render_markdown(plan: Plan) -> str:
    """One pull-request comment body. The first line is a marker
    (``<!-- raygke-diff:<stack> -->``) so a workflow can find and update its own comment."""
    lines = [
        f"<!-- raygke-diff:{plan.stack} -->",
        f"### `raygke diff` — stack `{plan.stack}`",
        "",
        f"{_md(plan.base)} → {_md(plan.head)}",
        "",
    ]
    if plan.changes:
        lines += ["| | resource | type | why |", "|---|---|---|---|"]
        for c in plan.changes:
            op = "job re-run" if c.rerun else c.op
            why = []
            if c.op == "replace":
                why += [f"`{r}`" for r in c.reasons]
                if c.delete_before_replace:
                    why.append("delete before replace")
            elif c.op == "update":
                why += [f"`{f.path}`" for f in c.fields[:4]]
                if len(c.fields) > 4:
                    why.append(f"+{len(c.fields) - 4} more")
            why += [f"⚠️ {_md(f)}" for f in c.flags]
            why += [f"ℹ️ {_md(n)}" for n in c.notes]
            why += [f"🛑 {_md(_dline(d))}" for d in c.disruption]
            lines.append(
                f"| {SYMBOLS[c.op]} {op} | `{_md(c.name)}` | `{c.type}` | {_md(', '.join(why))} |"
            )
        detailed = [c for c in plan.changes if c.fields]
        if detailed:
            lines += ["", "<details><summary>Changed fields</summary>", "", "```diff"]
            for c in detailed:
                lines.append(f"{SYMBOLS[c.op]} {c.type} {c.name}")
                for f in c.fields:
                    mark = "  # forces replacement" if f.forces_replacement else ""
                    lines.append(f"-     {f.path}: {_v(f.old)}")
                    lines.append(f"+     {f.path}: {_v(f.new)}{mark}")
            lines += ["```", "", "</details>"]
        lines.append("")
    lines.append(f"**{plan.summary()}**")
    lines += ["", f"**{disruption_summary(plan)}**"]
    cl = cost_lines(plan.cost)
    if cl:
        lines += ["", "**Cost of the change** (USD)", "", *[f"- {_md(x)}" for x in cl]]
    lines += [
        "",
        "_Offline render under mocks (no cloud state); `pulumi preview` shows drift._",
    ]
    return "\n".join(lines) + "\n"


def render_json(plan: Plan) -> str:
    """The plan as JSON text."""
    return json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"
