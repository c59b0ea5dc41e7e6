"""The formats of ``raygke diff``: text (rich console), markdown (the pull-request comment) and
JSON, from a :class:`raygke.diff.compare.Plan`."""

from __future__ import annotations

import json
import re
from typing import Any

from raygke.diff.compare import SYMBOLS, Change, FieldChange, Plan

FIELDS_SHOWN = 8
"""Changed fields ``raygke diff`` prints per resource without ``--full`` (those that force a
replacement always show)."""
_DIGEST = re.compile(r"(sha256:)?[0-9a-f]{12,}")


def digest_only(f: FieldChange) -> bool:
    """True when ``f``'s old and new values differ only in hex digests (an image's
    ``@sha256:...``, a content-addressed archive name, a hash suffix): derived values that
    change with their source, summarised per resource unless ``--full``."""
    old, new = _v(f.old), _v(f.new)
    return old != new and _DIGEST.sub("#", old) == _DIGEST.sub("#", new)


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


def render_text(plan: Plan, console: Any, full: bool = False) -> None:
    """Print the plan on a rich console (colour when it is a terminal). Unless ``full``, a
    resource's digest-only field changes (:func:`digest_only`) are one line, and at most
    :data:`FIELDS_SHOWN` other changed fields are listed, with a line saying how many more
    ``--full`` shows."""
    from rich.text import Text

    styles = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red"}
    console.print(
        Text(f"Stack {plan.stack}: {plan.base} -> {plan.head}", style="bold"), soft_wrap=True
    )
    if product := plan.product_line():
        console.print(Text(product, style="bold"), soft_wrap=True)
    for c in plan.changes:
        sym = SYMBOLS[c.op]
        console.print(Text(f"  {sym:<2} {_headline(c)}", style=styles[c.op]), soft_wrap=True)
        for line in _field_lines(c.fields, full):
            console.print(Text(line), soft_wrap=True)
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
    if plan.refused:
        console.print(Text(refused_headline(plan), style="bold red"), soft_wrap=True)
        for line in plan.refused:
            console.print(Text(f"  - {line}"), soft_wrap=True)


def refused_headline(plan: Plan) -> str:
    """``Refused: raygke check finds 2 problems in the head side (it renders, but would not
    run)``; the problems follow it."""
    from components.kernel.base import plural

    return (
        f"Refused: raygke check finds {plural(len(plan.refused), 'problem')} in the head side "
        "(it renders, but would not run)"
    )


def _field_lines(fields: list[FieldChange], full: bool) -> list[str]:
    def line(f: FieldChange) -> str:
        mark = " (forces replacement)" if f.forces_replacement else ""
        old = "(absent)" if f.added else _v(f.old)
        new = "(absent)" if f.removed else _v(f.new)
        return f"        {f.path}: {old} => {new}{mark}"

    if full:
        return [line(f) for f in fields]
    digests = [f for f in fields if digest_only(f) and not f.forces_replacement]
    rest = [f for f in fields if f not in digests]
    shown = [f for f in rest if f.forces_replacement]
    shown += [f for f in rest if not f.forces_replacement][: max(0, FIELDS_SHOWN - len(shown))]
    out = [line(f) for f in rest if f in shown]
    hidden = len(rest) - len(shown)
    if digests:
        out.append(
            f"        {len(digests)} digest-only "
            f"{'change' if len(digests) == 1 else 'changes'} "
            f"({', '.join(sorted({f.path.rsplit('.', 1)[-1] for f in digests}))}; --full lists them)"
        )
    if hidden:
        out.append(f"        ... and {hidden} more changed fields (--full lists them)")
    return out


def _dline(d: dict[str, str]) -> str:
    return f"{d['target']}: {d['effect']} - {d['detail']}"


def disruption_summary(plan: Plan) -> str:
    """``Disruption: none (no running work stops or restarts)``, ``Disruption: 1 change stops
    or restarts running work`` or ``Disruption: 3 changes stop or restart running work``."""
    n = sum(bool(c.disruption) for c in plan.changes)
    if not n:
        return "Disruption: none (no running work stops or restarts)"
    from components.kernel.base import plural

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
    if product := plan.product_line():
        lines += [f"**{_md(product)}**", ""]
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
                    if not f.added:
                        lines.append(f"-     {f.path}: {_v(f.old)}")
                    if not f.removed:
                        lines.append(f"+     {f.path}: {_v(f.new)}{mark}")
            lines += ["```", "", "</details>"]
        lines.append("")
    lines.append(f"**{plan.summary()}**")
    lines += ["", f"**{disruption_summary(plan)}**"]
    cl = cost_lines(plan.cost)
    if cl:
        lines += ["", "**Cost of the change** (USD)", "", *[f"- {_md(x)}" for x in cl]]
    if plan.refused:
        lines += ["", f"🛑 **{refused_headline(plan)}**", ""]
        lines += [f"- {_md(x)}" for x in plan.refused]
    lines += [
        "",
        "_Offline render under mocks (no cloud state); `pulumi preview` shows drift._",
    ]
    return "\n".join(lines) + "\n"


def render_json(plan: Plan) -> str:
    """The plan as JSON text."""
    return json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"
