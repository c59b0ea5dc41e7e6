"""Arguments of :mod:`workloads.prepare` (Ray Data corpus preparation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from contract.args.base import WorkloadArgs, arg
from contract.args.train import hf_source_problem


def _fraction(value: float) -> str | None:
    return None if 0 <= value < 1 else "must be >= 0 and < 1"


@dataclass(frozen=True)
class PrepareArgs(WorkloadArgs):
    """Arguments of :mod:`workloads.prepare`."""

    WORKLOAD: ClassVar[str] = "prepare"

    data: str | None = arg(
        None,
        "corpus: folder, glob, single file or gs:// URI; None = this interpreter's standard "
        "library source folder",
        "path or URI",
    )
    dataset: str = arg("/tmp/raygke/dataset", "output dataset folder", "path or URI")
    include: str | None = arg(
        None,
        "glob on the corpus files' relative paths (a folder corpus); None = every file of a "
        "given corpus (the text policy keeps UTF-8 text without NUL bytes), *.py for the "
        "default corpus (the standard library's Python sources)",
    )
    exclude: str | list[str] = arg(  # noqa: RUF009 (arg() returns a dataclasses.field)
        ["site-packages/*", "__pycache__/*", "*/__pycache__/*", ".git/*", "*/.git/*"],
        "glob(s) on relative paths to leave out (a folder corpus)",
    )
    context_length: int = arg(256, "window length T of one training row", "bytes", minimum=1)
    val_fraction: float = arg(
        0.05, "share of files that go to the validation split", "fraction", check=_fraction
    )
    num_shards: int = arg(8, "Parquet shards per split", "files", minimum=1)
    tokenizer: str | None = arg(
        None,
        "Hugging Face model whose tokenizer makes the token ids (a folder, a gs:// folder or a "
        "Hub repo id owner/name; the rows are then int32 ids joined by its end-of-sequence id, "
        "context_length counts tokens, and the manifest records tokenizer and vocab_size); "
        "None = byte-level (uint8 bytes, 256 ids)",
        "path, URI or Hub id",
        check=hf_source_problem,
    )
