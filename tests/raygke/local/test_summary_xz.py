"""``raygke local run``'s summary table shows the model's validation nats/byte beside xz -9e's on
the same rows and their ratio (raygke/local/commands.py _summary_table)."""

from __future__ import annotations

from rich.console import Console

from raygke.local import commands as local
from raygke.local import jobs as local_jobs


def _render(summary: dict) -> str:
    console = Console(width=120, record=True)
    console.print(local._summary_table(summary))
    return console.export_text()


def test_summary_table_prints_xz_and_the_ratio() -> None:
    ev = {"val_loss": 0.95, "xz_nats_per_byte": 1.003, "val_vs_xz": 0.95 / 1.003}
    summary = {**local_jobs.summarize({"evaluate": ev}), "seconds": 1.0}
    text = _render(summary)
    assert "xz -9e, same rows (nats/byte)" in text and "1.003" in text
    assert "model / xz (< 1 beats xz)" in text and "0.947" in text
    empty = _render({**local_jobs.summarize({}), "seconds": 1.0})
    row = next(ln for ln in empty.splitlines() if "model / xz" in ln)
    assert row.split("│")[2].strip() == "-"
