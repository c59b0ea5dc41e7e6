"""The console lines of a ``raygke local run``'s jobs (:mod:`raygke.local.run`): a job's one-line
summary in words, the corpus files prepare kept and left out, and text cut to fit a line."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

BRIEF_STR_MAX = 60  # characters of a string value on a job's console line


def shorten(text: str, limit: int = BRIEF_STR_MAX) -> str:
    """``text`` in at most ``limit`` characters, cut only at a separator, never inside a word.

    A path (a ``/`` and no whitespace) keeps its first component (two when they fit) and as many
    last components as fit, the middle as ``…``: ``/work/…/checkpoints/run-1/checkpoint_000010``;
    when only the last component fits, ``…/`` and it. Other text is cut after its last word that
    fits and ends in ``…``. Only a single word (or last path component) longer than ``limit``,
    with no separator to cut at, is cut inside: its first ``limit - 1`` characters and ``…``.
    """
    if len(text) <= limit:
        return text
    if "/" in text and not any(c.isspace() for c in text):
        parts = text.split("/")
        for k in range(2, len(parts)):  # the most last components first
            tail = "/".join(parts[k:])
            for head in ("/".join(parts[:2]) if k > 2 else None, parts[0]):
                if head is not None and len(head) + 3 + len(tail) <= limit:
                    return f"{head}/…/{tail}"
        last = "…/" + parts[-1]
        return last if len(last) <= limit else last[: limit - 1] + "…"
    cut = text[: limit - 1]
    if not text[limit - 1].isspace():  # the cut is inside a word: drop that word
        cut = cut[: max((i for i, c in enumerate(cut) if c.isspace()), default=0)]
    return (cut.rstrip() or text[: limit - 1]) + "…"


def result_brief(result: Any) -> str:
    """A job's result as its one console line: JSON of the mapping's numbers, booleans and
    strings (a string over :data:`BRIEF_STR_MAX` characters - a path, the sample text -
    :func:`shorten`-ed to about that, cut at a ``/`` or a space, never inside a word), a nested
    mapping or list as ``"{N keys}"`` / ``"[N items]"``; a result that is not a mapping as its
    JSON, :func:`shorten`-ed to 300 characters. The whole result is in the run's summary (the
    table after the run, ``--summary-json``)."""
    if not isinstance(result, dict):
        return shorten(json.dumps(result, default=str), 300)

    def brief(v: Any) -> Any:
        if isinstance(v, dict):
            return f"{{{len(v)} keys}}"
        if isinstance(v, list | tuple):
            return f"[{len(v)} items]"
        if isinstance(v, str):
            return shorten(v)
        return v

    return json.dumps({k: brief(v) for k, v in result.items()}, default=str, ensure_ascii=False)


def success_line(name: str, seconds: float, result: Any) -> str:
    """The console line (rich markup) of job ``name`` that succeeded in ``seconds``: the
    one-line human summary of its result (:func:`job_summary`), escaped (a ``[...]`` in a path
    is text, not a style)."""
    return f"[green]{name} succeeded[/] in {seconds:.1f} s: {escape(job_summary(name, result))}"


def job_summary(name: str, result: Any) -> str:
    """One line, in words, of what a job produced: prepare's windows and corpus files (what each
    filter left out), a trainer's steps, loss, throughput and checkpoint, evaluate's validation
    loss beside xz's; another job's numbers and short strings as ``key value`` pairs. The whole
    result is in the run's summary and ``--summary-json``."""
    from contract.registry import get_workload

    if not isinstance(result, dict):
        return result_brief(result)
    role = get_workload(name).role if name else ""

    def n(key: str, fmt: str = ",") -> str:
        v = result.get(key)
        return "?" if v is None else format(v, fmt)

    if role == "data" and "rows" in result:
        return (
            f"{n('rows')} training windows, {n('val_rows')} validation; corpus files: "
            f"{corpus_files(result.get('files'), result.get('skipped_by'))}"
        )
    if role == "trainer" and "steps" in result:
        line = f"{n('steps')} steps, loss {n('first_loss', '.3f')} -> {n('last_loss', '.3f')}"
        line += f" nats/byte, {n('tokens_per_s', ',.0f')} tokens/s"
        return line + (
            f"; checkpoint {shorten(result['checkpoint'])}" if result.get("checkpoint") else ""
        )
    if role == "inference" and "completions" in result:
        return (
            f"{n('completions')} completions ({n('completion_tokens')} tokens, "
            f"{n('tokens_per_s', ',.1f')} tokens/s) written to {result.get('output')}"
        )
    if role == "evaluator" and "val_loss" in result:
        line = f"validation loss {n('val_loss', '.3f')} nats/byte on {n('val_rows')} rows"
        if result.get("xz_nats_per_byte") is not None:
            line += f" (xz -9e {n('xz_nats_per_byte', '.3f')}, model/xz {n('val_vs_xz', '.3f')})"
        return line
    parts = []
    for key, v in result.items():
        if isinstance(v, bool | int | float) and not isinstance(v, bool):
            parts.append(f"{key} {v:,.4g}" if isinstance(v, float) else f"{key} {v:,}")
        elif isinstance(v, str) and "\n" not in v:
            parts.append(f"{key} {shorten(v)}")
    return ", ".join(parts) or "done"


def skip_reason(kind: str, count: int) -> str:
    """``"660 not matching include '*.py'"``, ``"786 matching exclude '.git/*'"``,
    ``"28 empty"``: how many files one of prepare's filters left out, in words."""
    if kind.startswith("include "):
        return f"{count:,} not matching {kind}"
    if kind.startswith("exclude "):
        return f"{count:,} matching {kind}"
    return f"{count:,} {kind}"


def corpus_files(files: int | None, skipped_by: dict[str, int] | None) -> str:
    """The corpus files in words: ``"1,234 kept, 814 skipped (786 matching exclude '.git/*',
    28 empty)"``; the skipped figure is the sum of the per-filter counts listed, the same figure
    as prepare's ``skipped`` (:func:`workloads.prepare.result_of`)."""
    if files is None:
        return "-"
    by = {k: v for k, v in (skipped_by or {}).items() if v}
    text = f"{files:,} kept, {sum(by.values()):,} skipped"
    if by:
        text += " (" + ", ".join(skip_reason(k, v) for k, v in by.items()) + ")"
    return text
