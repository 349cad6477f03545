"""Parquet/CSV -> noisy Parquet in record batches, with a ledger entry (``puffer noise``).

Memory is bounded by the batch size whatever the file size: the input is read with pyarrow in
record batches (Parquet row groups are split, CSV is read block by block), each batch gets its
noise and is written at once. The output is written to a temporary name in the output's folder
and renamed at the end, so a failure (bad value, Ctrl-C, full disk) leaves no partial output.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import sys
import time
from typing import Any

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from .arrow import check_schema, noise_batch, nulls_arg, output_schema, pyarrow
from .ledger import LEDGER_VERSION, append_ledger, read_ledger
from .plan import as_columns, column_stream, draw_seed, resolve, seed_fingerprint, threads_arg

__all__ = ["noise_file", "FORMATS"]

FORMATS = ("parquet", "csv")


def _format(path: str, fmt: Any) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise ParameterError("input_format", fmt, f"one of {FORMATS}")
        return fmt
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".csv", ".csv.gz", ".csv.bz2")):
        return "csv"
    raise ParameterError("input", path, "a .parquet/.pq or .csv file (or input_format='parquet'|'csv')")


def _batches(path: str, fmt: str, batch_size: int):
    """(schema, total rows or None, iterator of record batches of at most batch_size rows)."""
    pa = pyarrow()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # pre_buffer=False: pyarrow's default pre-buffers the row groups iter_batches will
        # read, so memory grew with the file (measured: RSS proportional to the input)
        pf = pq.ParquetFile(path, pre_buffer=False)
        return pf.schema_arrow, pf.metadata.num_rows, pf.iter_batches(batch_size=batch_size)
    import pyarrow.csv as pcsv

    reader = pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=1 << 22))

    def gen():
        for b in reader:
            for lo in range(0, b.num_rows, batch_size):
                yield b.slice(lo, batch_size)

    del pa
    return reader.schema, None, gen()


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for blk in iter(lambda: fh.read(1 << 22), b""):
            h.update(blk)
    return "sha256:" + h.hexdigest()


def _progress_bar(enabled: bool, total: int | None):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:  # tqdm is in puffer-privacy[io]; without it, no bar
        return None
    return tqdm(total=total, unit="rows", unit_scale=True, file=sys.stderr, desc="puffer noise", leave=False)


def noise_file(input: str | os.PathLike, output: str | os.PathLike, columns: Any, mechanism: Any, *,
               seed: int | None = None, secure: bool = False, select: str | None = None,
               ledger: str | os.PathLike | None = None, batch_size: int = 1 << 18, nulls: str = "error",
               threads: int | None = None, granularity: float | None = None, input_format: str | None = None,
               progress: bool | None = None, compression: str = "zstd", row_group_size: int = 1 << 20) -> dict:
    """Add calibrated noise to ``columns`` of a Parquet/CSV file and write Parquet; returns the
    ledger entry (also appended to ``ledger`` unless it is None).

    ``mechanism``: a Mechanism, a framework file (TOML/JSON, as ``puffer run`` reads), its dict,
    or a plain noise (see :func:`puffer.io.resolve`; ``select`` picks a mechanism of a file).
    ``seed``: int (reproducible: row ``r`` of column ``c`` gets value ``r`` of
    :func:`~puffer.io.column_stream` ``(seed, c)``, whatever ``batch_size`` and ``threads``);
    None draws a 128-bit seed from OS entropy (only its fingerprint is recorded).
    ``secure=True``: lattice + exact discrete noise from OS entropy (seed must be None).
    ``nulls``: "error" or "keep". ``progress``: a bar on stderr (default: when stderr is a terminal).
    The output has row groups of ``row_group_size`` rows whatever ``batch_size``, so its bytes
    depend only on the input, the mechanism and the seed. Memory: about
    ``batch_size + row_group_size`` rows.

    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq, puffer.io
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [1.0, 2.0, 3.0]}), os.path.join(d, "in.parquet"))
    >>> e = puffer.io.noise_file(os.path.join(d, "in.parquet"), os.path.join(d, "out.parquet"), ["x"],
    ...                          ("laplace", {"b": 1.0}), seed=5, ledger=os.path.join(d, "ledger.jsonl"))
    >>> e["rows"], e["rng"]["mode"], len(puffer.io.read_ledger(os.path.join(d, "ledger.jsonl")))
    (3, 'philox', 1)
    """
    from .._version import __version__

    t0 = time.perf_counter()
    src, dst = os.fspath(input), os.fspath(output)
    cols = as_columns(columns)
    fmt = _format(src, input_format)
    if not os.path.isfile(src):
        raise ParameterError("input", src, "an existing file")
    if os.path.realpath(src) == os.path.realpath(dst) or (os.path.exists(dst) and os.path.samefile(src, dst)):
        raise ParameterError("output", dst, "a path different from the input (the input is read while the "
                             "output is written)")
    out_dir = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(out_dir):
        raise ParameterError("output", dst, "a path in an existing folder")
    if os.path.isdir(dst):
        raise ParameterError("output", dst, "a file path, not a folder")
    batch_size = V.integer("batch_size", batch_size, lo=1)
    row_group_size = V.integer("row_group_size", row_group_size, lo=1)
    nulls = nulls_arg(nulls)
    thr = threads_arg(threads)
    if not isinstance(secure, bool):
        raise ParameterTypeError("secure", secure, "True or False")
    if ledger is not None:
        ledger = os.fspath(ledger)
        if os.path.realpath(ledger) in (os.path.realpath(src), os.path.realpath(dst)):
            raise ParameterError("ledger", ledger, "a file other than the input and the output")
        read_ledger(ledger)  # a corrupt ledger is refused before any work
    plan = resolve(mechanism, select=select)
    plan.check_columns(cols)
    if secure:
        if seed is not None:
            raise ParameterError("seed", seed, "None in secure mode (keys come from OS entropy only)")
        plan.secure_plan(granularity)  # refuse an impossible lattice before reading
        streams, mode, fp = None, "secure", None
    else:
        if granularity is not None:
            raise ParameterError("granularity", granularity, "None unless secure=True")
        drawn = seed is None
        s = draw_seed() if seed is None else seed
        streams = {c: column_stream(s, c) for c in cols}
        mode, fp = "philox", seed_fingerprint(s)
    pa = pyarrow()
    import pyarrow.parquet as pq

    try:
        schema, total, batches = _batches(src, fmt, batch_size)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParameterError("input", src, f"a readable {fmt} file ({exc})") from None
    check_schema(schema, cols)
    out_schema = output_schema(schema, cols)
    tmp = os.path.join(out_dir, f".{os.path.basename(dst)}.puffer-tmp-{os.getpid()}")
    bar = _progress_bar(sys.stderr.isatty() if progress is None else bool(progress), total)
    rows = 0
    ok = False
    try:
        with pq.ParquetWriter(tmp, out_schema, compression=compression) as writer:
            # Row groups of exactly row_group_size rows (the last one shorter), cut from the
            # noisy batches: the file's bytes do not depend on the batch size.
            pending: list = []
            n_pending = 0

            def flush(final: bool) -> None:
                nonlocal pending, n_pending
                if not pending:
                    return
                tab = pa.Table.from_batches(pending, schema=out_schema)
                k = n_pending if final else (n_pending // row_group_size) * row_group_size
                for lo in range(0, k, row_group_size):
                    writer.write_table(tab.slice(lo, min(row_group_size, k - lo)).combine_chunks(),
                                       row_group_size=row_group_size)
                rest = tab.slice(k)
                pending, n_pending = (rest.to_batches() if rest.num_rows else []), rest.num_rows

            try:
                for b in batches:
                    if b.schema != schema:  # CSV: a later block inferred differently
                        raise ParameterError("input", src, f"one schema for the whole file (batch at row {rows} "
                                             f"has {b.schema}, the first had {schema})")
                    pending.append(noise_batch(b, plan, cols, streams, rows, nulls=nulls,
                                               out_schema=out_schema, threads=thr, granularity=granularity))
                    n_pending += b.num_rows
                    rows += b.num_rows
                    if n_pending >= row_group_size:
                        flush(False)
                    if bar is not None:
                        bar.update(b.num_rows)
                flush(True)
            except pa.ArrowInvalid as exc:
                raise ParameterError("input", src, f"a valid {fmt} file (at row {rows}: {exc})") from None
        os.replace(tmp, dst)
        ok = True
    finally:
        if bar is not None:
            bar.close()
        if not ok and os.path.exists(tmp):
            os.remove(tmp)
    entry = {
        "puffer_ledger": LEDGER_VERSION,
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "puffer_version": __version__,
        "input": os.path.abspath(src), "output": os.path.abspath(dst), "output_sha256": _sha256(dst),
        "columns": cols, "rows": rows, "releases_per_row": plan.releases_per_row(len(cols)), "nulls": nulls,
        "rng": {"mode": mode, "seed_fingerprint": fp,
                "stream": None if secure else "philox4x32-10, column_stream v1 (row r = stream value r)",
                **({} if secure or not drawn else {"seed_source": "os entropy"}),
                **({"granularity": plan.secure_plan(granularity).granularity,
                    "inflation": plan.secure_plan(granularity).inflation} if secure else {})},
        **plan.describe(),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if ledger is not None:
        append_ledger(ledger, entry)
    return entry
