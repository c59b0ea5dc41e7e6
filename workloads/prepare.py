"""Prepare a byte-level LM dataset with Ray Data.

Pipeline: list the corpus by URI on the driver and assign each file to a shard from the
sha256 of its relative path (split + shard; no shuffle needed) -> one Ray Data
``map_batches`` task per shard reads its files by URI (``pyarrow.fs``, so ``gs://`` works),
drops non-text files, windows the bytes and writes one Parquet file -> ``_manifest.json``.

Output layout under ``dataset`` (local path or ``gs://``)::

    train/part-00000.parquet ... validation/part-00003.parquet   (only non-empty shards)
    _manifest.json   {"rows", "val_rows", "files", "bytes", "shards", "skipped",
                      "skipped_by", "val_carved", ...}

Row schema: one column ``tokens``: ``fixed_size_list<uint8>[context_length + 1]`` (with
``tokenizer``, a Hugging Face folder, its ``int32`` ids: :mod:`workloads.hf_model`). A shard is
the concatenation of its documents sorted by relative path, each followed by the separator byte
``0``, cut into windows of ``context_length + 1`` bytes with stride ``context_length`` (so
``x = tokens[:-1]``, ``y = tokens[1:]`` cover every byte once as a target); the last
partial window of a shard (< context_length bytes) is dropped.

Filters: a folder corpus takes every file (``include`` None = ``*``) except the default
corpus, the standard library, whose Python sources (``*.py``) are taken; ``exclude`` leaves out
``site-packages``, ``__pycache__`` and ``.git`` folders. The text policy then decides: a file
that contains a NUL byte or is not valid UTF-8 is "not text"; an empty file is "empty". When the
corpus is a folder or glob such files are skipped with a warning naming each one (the first 10;
all listed in the manifest under ``skipped``). How many files each filter left out (include,
each exclude pattern, each text-policy reason) is ``skipped_by`` in the manifest and the result.
An explicitly named single file that is not text fails with :class:`CorpusError` naming it, and
so does a corpus where no usable file remains.

Validation: files go to validation by the hash of their path (:func:`group_of`; a corpus of 2+
files always gets one there, :func:`assign_groups`). When the validation split still has no row
(a single file; only tiny files went there), :func:`carve_validation` moves the last training
rows of the largest training shard there, saying so (``val_carved`` in the result); a corpus
with fewer than 2 windows is refused, before any training job starts.

Idempotent: shard names depend only on the content's relative paths, and a local output is
built in ``<dataset>.tmp`` and swapped into place at the end, so a re-run after a crash neither
duplicates nor loses rows. Remote outputs are overwritten shard by shard (same names), stale
shards are deleted, and the manifest is written last.

Arguments: :class:`contract.args.prepare.PrepareArgs` (names, types, defaults, units).
Result: ``{"rows", "val_rows", "files", "bytes", "dataset", "skipped", "skipped_by",
"val_carved"}`` (:func:`result_of`: files = files kept; skipped = files left out by any filter,
the sum of skipped_by = {filter: files}; val_carved = None or ``{"from": train shard, "rows":
n}``). The manifest's ``skipped`` lists the text-policy skips by name (a part of the count).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import logging
import os
import re
import shutil
import sysconfig
from collections.abc import Iterable
from typing import Any

from contract.args.prepare import PrepareArgs
from workloads.common import InputError, emit_progress, ensure_ray, is_local, resolve_fs, run_cli
from workloads.hf_model import load_tokenizer, token_windows, tokenizer_facts

log = logging.getLogger(__name__)

SEPARATOR = 0
SPLITS = ("train", "validation")
MANIFEST = "_manifest.json"


class CorpusError(InputError):
    """The corpus is empty, unreadable or not text. The message names the file(s)."""


def default_corpus() -> str:
    """The Python standard library source folder of this interpreter."""
    return sysconfig.get_paths()["stdlib"]


def _has_glob(s: str) -> bool:
    return any(c in s for c in "*?[")


DEFAULT_EXCLUDE = ("site-packages/*", "__pycache__/*", "*/__pycache__/*", ".git/*", "*/.git/*")


def list_corpus(
    data: str | None,
    include: str | None = None,
    exclude: Iterable[str] | str = DEFAULT_EXCLUDE,
    counts: dict[str, int] | None = None,
) -> tuple[Any, str, list[str], bool]:
    """Resolve the corpus into ``(filesystem, base_dir, sorted relative paths, explicit_file)``.

    ``data`` may be a folder (recursive, filtered by ``include``/``exclude`` on the relative
    path), a glob (``/x/**/*.txt``; the non-glob prefix is the base), a single file, or a
    ``gs://`` URI of any of those; None is :func:`default_corpus`. ``include`` None means every
    file (``*``; the text policy then keeps the text files), except for the default corpus,
    whose Python sources (``*.py``) are taken.

    ``counts``, when given, is filled with how many files each filter left out: key
    ``include '<pattern>'`` (files it does not match) and ``exclude '<pattern>'`` (files the
    first matching exclude pattern removed; folders it pruned unlisted count as
    ``exclude '<pattern>' (folders)``).

    Raises:
        CorpusError: nothing matches.
    """
    import pyarrow.fs as pafs

    if include is None:
        include = "*.py" if not data else "*"
    data = data or default_corpus()
    exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())
    if _has_glob(data):
        head, pattern = [], []
        for part in data.split("/"):
            (pattern if pattern or _has_glob(part) else head).append(part)
        # "/*.txt" -> base "/"; "*.txt" -> the current folder
        base_uri = "/".join(head) or ("/" if head else ".")
        include = "/".join(pattern)
    else:
        base_uri = data
    fs, base = resolve_fs(base_uri)
    info = fs.get_file_info(base)
    if info.type == pafs.FileType.File:
        return fs, os.path.dirname(base), [os.path.basename(base)], True
    if info.type != pafs.FileType.Directory:
        raise CorpusError(f"corpus {data!r} not found")
    wanted = _matcher(include, ())
    excluded = [(x, re.compile(fnmatch.translate(x))) for x in exclude]
    tally: dict[str, int] = {} if counts is None else counts
    tally[f"include {include!r}"] = 0
    for x in exclude:
        tally[f"exclude {x!r}"] = 0
    pruned: dict[str, int] = {}
    rels = []
    for rel in _walk(fs, base, exclude, pruned):
        if not wanted(rel):
            tally[f"include {include!r}"] += 1
            continue
        hit = next((x for x, rx in excluded if rx.match(rel)), None)
        if hit is not None:
            tally[f"exclude {hit!r}"] += 1
            continue
        rels.append(rel)
    for x, n in pruned.items():
        tally[f"exclude {x!r} (folders)"] = n
    if not rels:
        raise CorpusError(f"corpus {data!r}: no files match include={include!r} exclude={exclude}")
    return fs, base, sorted(rels), False


def _matcher(include: str, exclude: tuple[str, ...]):
    """``rel -> bool``: ``include`` matches the relative path (or, for a pattern without ``/``,
    its basename; ``**/`` also matches zero folders) and no ``exclude`` pattern matches it.
    The patterns are :mod:`fnmatch` patterns (``*`` also matches ``/``), compiled once."""
    inc = [include] + ([include.replace("**/", "")] if "**/" in include else [])
    inc_re = re.compile("|".join(fnmatch.translate(p) for p in inc))
    base_re = re.compile(fnmatch.translate(include)) if "/" not in include else None
    exc_re = re.compile("|".join(fnmatch.translate(x) for x in exclude)) if exclude else None

    def wanted(rel: str) -> bool:
        ok = bool(inc_re.match(rel)) or bool(base_re and base_re.match(rel.rsplit("/", 1)[-1]))
        return ok and not (exc_re and exc_re.match(rel))

    return wanted


def _walk(
    fs: Any, base: str, exclude: tuple[str, ...], pruned: dict[str, int] | None = None
) -> Iterable[str]:
    """Relative paths (``/``-separated) of every file under ``base``.

    On a local filesystem, folders that an ``exclude`` pattern ending in ``*`` matches as
    ``"<folder>/"`` are not entered at all (every file below would be excluded anyway), so
    ``site-packages/*`` costs nothing however large ``site-packages`` is. Symlinked folders are
    followed (each real folder once, so a link cycle ends); only regular files are listed, so a
    dangling symlink (an editor's ``.#lock``) or a FIFO is left out. Object stores (``gs://``)
    are listed recursively in one request stream. ``pruned``, when given, counts the folders
    each pattern kept out.

    Raises:
        CorpusError: a local folder cannot be listed (named in the message).
    """
    import pyarrow.fs as pafs

    if isinstance(fs, pafs.LocalFileSystem):
        prune = [(x, re.compile(fnmatch.translate(x))) for x in exclude if x.endswith("*")]

        def kept_out(folder: str) -> bool:
            hit = next((x for x, p in prune if p.match(folder)), None)
            if hit is not None and pruned is not None:
                pruned[hit] = pruned.get(hit, 0) + 1
            return hit is not None

        def unreadable(e: OSError) -> None:
            raise CorpusError(f"corpus folder {e.filename!r} cannot be listed: {e.strerror}")

        def first_visit(path: str) -> bool:
            try:
                st = os.stat(path)
            except OSError as e:
                unreadable(e)
            if (st.st_dev, st.st_ino) in seen:
                return False
            seen.add((st.st_dev, st.st_ino))
            return True

        seen: set[tuple[int, int]] = set()
        first_visit(base)
        for root, dirs, files in os.walk(base, onerror=unreadable, followlinks=True):
            rel_root = os.path.relpath(root, base).replace(os.sep, "/")
            prefix = "" if rel_root == "." else rel_root + "/"
            dirs[:] = [
                d
                for d in dirs
                if not kept_out(f"{prefix}{d}/") and first_visit(os.path.join(root, d))
            ]
            yield from (prefix + f for f in files if os.path.isfile(os.path.join(root, f)))
        return
    skip = len(base.rstrip("/")) + 1 if base.rstrip("/") else 0
    for fi in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        if fi.type == pafs.FileType.File:
            yield fi.path[skip:]


def _digest(rel: str) -> int:
    # surrogateescape: a file name that is not UTF-8 hashes as the bytes it has on disk
    return int.from_bytes(
        hashlib.sha256(rel.encode("utf-8", "surrogateescape")).digest()[:8], "big"
    )


def group_of(rel: str, val_fraction: float, num_shards: int) -> str:
    """Shard of a file, e.g. ``"train/part-00003"``, from sha256 of its relative path only.

    The split uses the top bits of the digest (validation when below ``val_fraction``), the
    shard the low bits, so both are stable across runs and machines.
    """
    h = _digest(rel)
    split = "validation" if (h >> 32) / 2**32 < val_fraction else "train"
    return f"{split}/part-{(h & 0xFFFFFFFF) % num_shards:05d}"


def assign_groups(rels: list[str], val_fraction: float, num_shards: int) -> dict[str, list[str]]:
    """Shard -> files, by :func:`group_of`. A small corpus whose hash split leaves the validation
    split empty gets its file with the lowest split score moved there (deterministically), so
    that `evaluate` always has validation data when there are at least two files."""
    groups: dict[str, list[str]] = {}
    for rel in rels:
        groups.setdefault(group_of(rel, val_fraction, num_shards), []).append(rel)
    if val_fraction > 0 and len(rels) >= 2 and not any(g.startswith("validation/") for g in groups):
        rel = min(rels, key=lambda r: (_digest(r) >> 32, r))
        old = group_of(rel, val_fraction, num_shards)
        groups[old].remove(rel)
        if not groups[old]:
            del groups[old]
        groups.setdefault("validation/" + old.split("/", 1)[1], []).append(rel)
    return groups


def text_problem(data: bytes) -> str:
    """``""`` for usable text, else why not: empty, contains NUL bytes, or not UTF-8."""
    if not data:
        return "empty"
    if b"\x00" in data:
        return "not text (contains NUL bytes)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 ({e.reason} at byte {e.start})"
    return ""


def classify(rel: str, data: bytes, val_fraction: float, num_shards: int) -> tuple[str, str]:
    """Return ``(group, reason)``: ``(group_of(...), "")`` for text, ``("", reason)`` if not."""
    why = text_problem(data)
    return ("", why) if why else (group_of(rel, val_fraction, num_shards), "")


def windows(docs: list[bytes], context_length: int, tokenizer: Any = None):
    """Cut ``doc + SEP`` concatenated into ``[n, context_length + 1]`` uint8 rows, stride L;
    with a Hugging Face ``tokenizer`` its int32 ids (:func:`workloads.hf_model.token_windows`)."""
    import numpy as np

    if tokenizer is not None:
        return token_windows(tokenizer, docs, context_length)
    sep = bytes([SEPARATOR])
    stream = np.frombuffer(sep.join(docs) + sep, dtype=np.uint8) if docs else np.zeros(0, np.uint8)
    n = max(0, (len(stream) - 1) // context_length)
    if n == 0:
        return np.zeros((0, context_length + 1), dtype=np.uint8)
    view = np.lib.stride_tricks.sliding_window_view(stream, context_length + 1)
    return np.ascontiguousarray(view[: n * context_length : context_length])


def write_shard(fs: Any, path: str, rows) -> None:
    """Write a ``[n, L+1]`` uint8 (int32: token ids) array as Parquet (column ``tokens``)."""
    import pyarrow as pa

    flat = pa.array(rows.reshape(-1), type=pa.from_numpy_dtype(rows.dtype))
    col = pa.FixedSizeListArray.from_arrays(flat, rows.shape[1])
    _write_table(fs, path, pa.table({"tokens": col}))


def build_group(
    fs: Any, out_dir: str, group: str, rels: list[str], docs: list[bytes], L: int, tok: Any = None
):
    """Sort a shard's documents by relative path, window them and write the shard.

    Returns ``(rows, files, bytes)`` for the shard.
    """
    order = sorted(range(len(rels)), key=lambda i: rels[i])
    sorted_docs = [docs[i] for i in order]
    rows = windows(sorted_docs, L, tok)
    if len(rows):
        write_shard(fs, f"{out_dir}/{group}.parquet", rows)
    return len(rows), len(docs), sum(len(d) for d in docs)


def _finalize(dataset: str, tmp_dir: str, summary: dict[str, Any]) -> None:
    """Write the manifest last and move the finished tree into place."""
    fs, out = resolve_fs(dataset)
    if is_local(dataset):
        with open(os.path.join(tmp_dir, MANIFEST), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
        old = out + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(out):
            os.rename(out, old)
        os.rename(tmp_dir, out)
        shutil.rmtree(old, ignore_errors=True)
        return
    import pyarrow.fs as pafs

    keep = {f"{g}.parquet" for g in summary["shards"]}
    for fi in fs.get_file_info(pafs.FileSelector(out, recursive=True, allow_not_found=True)):
        rel = fi.path[len(out.rstrip("/")) + 1 :]
        if fi.type == pafs.FileType.File and rel.endswith(".parquet") and rel not in keep:
            fs.delete_file(fi.path)
    with fs.open_output_stream(f"{out}/{MANIFEST}") as f:
        f.write(json.dumps(summary, indent=1, sort_keys=True).encode())


def _reason_kind(reason: str) -> str:
    """The filter a text-policy reason belongs to (``not UTF-8 (... at byte 3)`` -> ``not
    UTF-8``), for the per-filter counts."""
    return reason.split(" (", 1)[0]


def _summarize(
    results: list[dict[str, Any]], dataset: str, args: PrepareArgs, filtered: dict[str, int]
):
    shards, skipped = {}, []
    for r in results:
        skipped.extend(json.loads(r["skipped"]))
        if r["rows"]:
            shards[r["group"]] = int(r["rows"])
    skipped_by = dict(filtered)
    for _rel, reason in skipped:
        kind = _reason_kind(reason)
        skipped_by[kind] = skipped_by.get(kind, 0) + 1
    return {
        "rows": sum(v for g, v in shards.items() if g.startswith("train/")),
        "val_rows": sum(v for g, v in shards.items() if g.startswith("validation/")),
        "files": sum(int(r["files"]) for r in results),
        "bytes": sum(int(r["bytes"]) for r in results),
        "shards": dict(sorted(shards.items())),
        "skipped": sorted(skipped),
        "skipped_by": skipped_by,
        "val_carved": None,
        "context_length": args.context_length,
        "val_fraction": float(args.val_fraction),
        "dataset": dataset,
    }


def _check(summary: dict[str, Any], explicit: bool, data: str) -> None:
    not_text = [(rel, reason) for rel, reason in summary["skipped"] if reason != "empty"]
    for rel, reason in summary["skipped"]:
        if explicit:
            raise CorpusError(f"corpus file {rel!r} ({data}): {reason}")
    for rel, reason in not_text[:10]:
        log.warning("prepare: skipping %s: %s", rel, reason)
    if len(not_text) > 10:
        log.warning("prepare: skipping %d more files that are not text", len(not_text) - 10)
    if summary["files"] == 0:
        names = ", ".join(f"{r} ({why})" for r, why in summary["skipped"][:10])
        raise CorpusError(f"corpus {data!r} has no usable text files; skipped: {names}")
    if summary["rows"] == 0:
        raise CorpusError(
            f"corpus {data!r}: {summary['bytes']} bytes give no training window of "
            f"{summary['context_length'] + 1} bytes"
        )


def carve_validation(summary: dict[str, Any], fs: Any, out_dir: str, data: str) -> None:
    """Give a corpus whose validation split came out empty (one file, or only files too small
    for a window went there) a validation split cut from its training rows, before any
    training starts: the last ``max(1, round(rows * val_fraction))`` rows of the largest
    training shard move to ``validation/part-<same number>``; ``summary`` is updated
    (``rows``, ``val_rows``, ``shards``, ``val_carved = {"from", "rows"}``) and a warning says
    so. With ``val_fraction`` 0 nothing is carved (validation was declined; a warning says
    evaluate will have nothing to score).

    Raises:
        CorpusError: fewer than 2 training rows: none could be spared for validation.
    """
    if summary["val_rows"] or summary["val_fraction"] == 0:
        if summary["val_fraction"] == 0:
            log.warning("prepare: val_fraction is 0: no validation rows; evaluate cannot score")
        return
    rows = summary["rows"]
    if rows < 2:
        raise CorpusError(
            f"corpus {data!r} gives {rows} training window(s) of {summary['context_length'] + 1} "
            "bytes and no validation rows; at least 2 windows are needed (one to validate): "
            "add text, or lower context_length"
        )
    import pyarrow.parquet as pq

    source = max(
        (g for g in summary["shards"] if g.startswith("train/")),
        key=lambda g: (summary["shards"][g], g),
    )
    # leave at least one training row, take at most the source shard
    take = min(max(1, round(rows * summary["val_fraction"])), rows - 1, summary["shards"][source])
    path = f"{out_dir}/{source}.parquet"
    with fs.open_input_file(path) as f:
        table = pq.read_table(f)
    keep, carved = table.num_rows - take, table.slice(table.num_rows - take)
    val_group = "validation/" + source.split("/", 1)[1]
    _write_table(fs, f"{out_dir}/{val_group}.parquet", carved)
    if keep:
        _write_table(fs, path, table.slice(0, keep))
        summary["shards"][source] = keep
    else:
        fs.delete_file(path)
        del summary["shards"][source]
    summary["shards"][val_group] = take
    summary["shards"] = dict(sorted(summary["shards"].items()))
    summary["rows"], summary["val_rows"] = rows - take, take
    summary["val_carved"] = {"from": source, "rows": take}
    log.warning(
        "prepare: no file of corpus %r went to validation (too few or too small files); "
        "carved the last %d of %d training rows (%s) into %s",
        data,
        take,
        rows,
        source,
        val_group,
    )


def _write_table(fs: Any, path: str, table: Any) -> None:
    import pyarrow.parquet as pq

    fs.create_dir(os.path.dirname(path), recursive=True)
    tmp = path + ".inprogress"
    with fs.open_output_stream(tmp) as out:
        pq.write_table(table, out, compression="zstd")
    fs.move(tmp, path)


@contextlib.contextmanager
def _shard_task_context():
    """Let every shard task run at once, for the datasets built inside the block.

    Each task writes its Parquet shard itself and returns one small summary row, so Ray Data's
    object-store based scheduling (operator resource reservation and downstream-capacity
    backpressure, see ``ray.data.DataContext``) has nothing to protect here; left on, on a
    small node (2 CPUs) it runs the shard tasks one at a time (measured with Ray 2.60:
    ``bench/prepare.py``). The previous settings are restored on exit.
    """
    import ray

    ctx = ray.data.DataContext.get_current()
    saved = ctx.op_resource_reservation_enabled, ctx.downstream_capacity_backpressure_ratio
    ctx.op_resource_reservation_enabled = False
    ctx.downstream_capacity_backpressure_ratio = None
    try:
        yield
    finally:
        ctx.op_resource_reservation_enabled, ctx.downstream_capacity_backpressure_ratio = saved


def main(config: dict[str, Any]) -> dict[str, Any]:
    """Run the preparation with Ray Data; see the module docstring for keys and results."""
    import ray

    args = PrepareArgs.parse(config)
    ensure_ray()
    data = args.data or default_corpus()
    dataset = args.dataset
    L = args.context_length
    val_fraction = args.val_fraction
    num_shards = args.num_shards
    filtered: dict[str, int] = {}
    _fs, base, rels, explicit = list_corpus(args.data, args.include, args.exclude, filtered)
    if is_local(dataset):
        _, out_abs = resolve_fs(dataset)
        tmp_dir = out_abs + ".tmp"
        shutil.rmtree(tmp_dir, ignore_errors=True)
        os.makedirs(tmp_dir)
        write_uri = tmp_dir
    else:
        tmp_dir = write_uri = dataset
    scheme = "" if is_local(data) else data.split("://", 1)[0] + "://"
    base_uri = scheme + base
    groups = assign_groups(rels, val_fraction, num_shards)
    vocab = tokenizer_facts(args.tokenizer) if args.tokenizer else {}  # refused here, first

    def work(batch: dict[str, Any]) -> dict[str, Any]:
        """One shard: read its files by URI, drop non-text ones, window and write."""
        rfs, rbase = resolve_fs(base_uri)
        wfs, wdir = resolve_fs(write_uri)
        tok = load_tokenizer(str(args.tokenizer)) if args.tokenizer else None
        out: dict[str, list[Any]] = {k: [] for k in ("group", "rows", "files", "bytes", "skipped")}
        for group, rels_json in zip(batch["group"], batch["rels"], strict=True):
            kept, docs, skipped = [], [], []
            for rel in json.loads(str(rels_json)):
                try:
                    with rfs.open_input_stream(f"{rbase.rstrip('/')}/{rel}") as f:
                        blob = f.read()
                except UnicodeEncodeError:  # pyarrow takes UTF-8 paths only
                    shown = rel.encode("utf-8", "backslashreplace").decode()
                    skipped.append([shown, "file name is not UTF-8 (rename it to read it)"])
                    continue
                except OSError as e:
                    raise CorpusError(f"corpus file {rel!r} under {base_uri}: {e}") from e
                why = text_problem(blob)
                if why:
                    skipped.append([rel, why])
                else:
                    kept.append(rel)
                    docs.append(blob)
            n_rows, n_files, n_bytes = build_group(wfs, wdir, str(group), kept, docs, L, tok)
            for k, v in zip(
                out, (str(group), n_rows, n_files, n_bytes, json.dumps(skipped)), strict=True
            ):
                out[k].append(v)
        return out

    items = [{"group": g, "rels": json.dumps(rs)} for g, rs in sorted(groups.items())]
    results: list[dict[str, Any]] = []
    emit_progress("prepare", 0, len(items), unit="shards", files=0, rows=0)
    with _shard_task_context():
        ds = ray.data.from_items(items, override_num_blocks=len(items))
        for row in ds.map_batches(work, batch_size=1, batch_format="numpy").iter_rows():
            results.append(row)
            files = sum(int(r["files"]) for r in results)
            rows = sum(int(r["rows"]) for r in results if str(r["group"]).startswith("train/"))
            emit_progress(
                "prepare", len(results), len(items), unit="shards", files=files, rows=rows
            )
    summary = _summarize(results, dataset, args, filtered)
    summary.update(vocab)
    try:
        _check(summary, explicit, data)
        carve_validation(summary, *resolve_fs(write_uri), data)
    except CorpusError:
        if is_local(dataset):
            shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    _finalize(dataset, tmp_dir, summary)
    result = result_of(summary)
    log.info(
        "prepare: %d files kept, %d skipped (by filter: %s)",
        result["files"],
        result["skipped"],
        ", ".join(f"{k}: {v}" for k, v in result["skipped_by"].items()) or "none",
    )
    return result


def result_of(summary: dict[str, Any]) -> dict[str, Any]:
    """The job's result from the manifest's summary: ``rows``, ``val_rows``, ``files`` (kept),
    ``bytes``, ``dataset``, ``skipped_by`` ({filter: files left out}), ``val_carved``, and
    ``skipped``: every file left out, the sum of ``skipped_by`` (so the figures add up wherever
    they are shown: the success line, the run's summary)."""
    keys = ("rows", "val_rows", "files", "bytes", "dataset", "skipped_by", "val_carved")
    result = {k: summary[k] for k in keys}
    result["skipped"] = sum(int(v) for v in summary["skipped_by"].values())
    return result


if __name__ == "__main__":
    run_cli("prepare", main)
