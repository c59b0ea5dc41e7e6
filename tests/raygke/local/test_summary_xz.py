"""``raygke local run``'s summary table shows the model's validation nats/byte beside xz -9e's on
the same rows and their ratio (raygke/local/commands.py summary_table)."""

from __future__ import annotations

from rich.console import Console

from raygke.local import commands as local
from raygke.local import summary as local_summary


def _render(summary: dict) -> str:
    console = Console(width=120, record=True)
    console.print(local.summary_table(summary))
    return console.export_text()


def test_summary_table_prints_xz_and_the_ratio() -> None:
    ev = {"val_loss": 0.95, "xz_nats_per_byte": 1.003, "val_vs_xz": 0.95 / 1.003}
    summary = {**local_summary.summarize({"evaluate": ev}), "seconds": 1.0}
    text = _render(summary)
    assert "xz -9e, same rows (nats/byte)" in text and "1.003" in text
    assert "model / xz (< 1 beats xz)" in text and "0.947" in text
    empty = _render({**local_summary.summarize({}), "seconds": 1.0})
    row = next(ln for ln in empty.splitlines() if "model / xz" in ln)
    assert row.split("│")[2].strip() == "-"


def test_summary_table_prints_ppmd_mfu_and_the_scored_rows() -> None:
    prep = {"rows": 60_000, "val_rows": 7_045}
    ev = {
        "val_loss": 0.9,
        "val_rows": 4_096,
        "xz_nats_per_byte": 1.08,
        "val_vs_xz": 0.9 / 1.08,
        "ppmd_nats_per_byte": 0.951,
        "val_vs_ppmd": 0.9 / 0.951,
    }
    train = {"steps": 5, "mfu": 0.4123, "peak_flops": 3.44e11, "precision": "bf16"}
    summary = local_summary.summarize({"prepare": prep, "train_lm": train, "evaluate": ev})
    assert summary["val_rows"] == 4_096  # the rows the loss was computed on, not the split's
    assert (summary["mfu"], summary["peak_flops"], summary["precision"]) == (
        0.4123,
        3.44e11,
        "bf16",
    )
    text = _render({**summary, "seconds": 1.0})
    assert "PPMd order 16, same rows (nats/byte)" in text and "0.951" in text
    assert "model / PPMd (< 1 beats PPMd)" in text and "0.946" in text
    assert "41.2% of 344.0 GFLOP/s bf16" in text
    assert "4,096" in text and "7,045" not in text
    # no evaluate: the split's rows; no trainer: no MFU
    alone = local_summary.summarize({"prepare": prep})
    assert alone["val_rows"] == 7_045 and alone["mfu"] is None
    row = next(ln for ln in _render({**alone, "seconds": 1.0}).splitlines() if "MFU" in ln)
    assert row.split("│")[2].strip() == "-"
