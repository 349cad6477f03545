"""Parquet/CSV -> noisy Parquet, published with its ledger entry (``puffer noise``).

Order of operations (what makes a killed run harmless, :mod:`puffer.publish.release`):

1. validate everything: paths, the key, the mechanism, the privacy unit, the ledger (writable
   folder, intact chain) and the composition rules; take the output's lock (one writer per
   output: ``.NAME.puffer-lock`` beside it, removed when the release ends) and remove the staging
   files of killed runs in the whole folder (:mod:`puffer.publish.engines.staging`);
2. hash the input; write the output to its staging file ``.NAME.puffer-incomplete-PID-RANDOM``
   (mode 0600) in record batches (memory bounded by the batch size; Parquet page checksums
   verified on read, written on output), hashing it as it is written, every byte XOR-masked by
   a random pad kept in memory (so it is never a usable file without its entry, whatever is
   appended to it: :mod:`puffer.publish.engines.staging`), and fsync it;
3. append the ``pending`` ledger entry (durable);
4. unmask the staging file in place, rename it into place, fsync the folder; append ``completed``.

A kill before 3 leaves no output (the staging file, masked, is removed by the next release
into the folder); a kill between 3 and 4 leaves a pending entry, resolved by the next run. I/O failures are
:class:`~puffer.errors.PufferIOError` (``puffer`` exit code 6).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from ... import _validate as V
from ..._deferred import raise_deferred
from ...errors import ParameterError, ParameterTypeError, PufferIOError
from ..digest import sha256_file
from ..keys import refuse_seed
from ..ledger import default_ledger_path
from ..options import PublishOptions
from ..plan import as_columns, threads_arg
from ..preamble import prepare
from ..units import check_answers, group_answers
from ..values import check_integers
from .arrow import check_schema, noise_batch, output_schema, pyarrow
from .staging import StagingFile, clean_stale

if TYPE_CHECKING:
    from ..noise import ColumnNoise
    from ..units import UnitSpec
    from ..unitsets import UnitHasher

__all__ = ["noise_file", "FORMATS", "sha256_file"]

FORMATS = ("parquet", "csv")


def _format(path: str, fmt: Any) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise ParameterError("input_format", fmt, f"one of {FORMATS}")
        return cast(str, fmt)  # one of FORMATS
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".csv", ".csv.gz", ".csv.bz2")):
        return "csv"
    raise ParameterError("input", path, "a .parquet/.pq or .csv file (or input_format='parquet'|'csv')")


def _batches(path: str, fmt: str, batch_size: int, columns: list[str] | None = None
             ) -> tuple[Any, int | None, Iterator[Any]]:
    """(schema, total rows or None, iterator of record batches of at most batch_size rows)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # pre_buffer=False: pyarrow's default pre-buffers the row groups iter_batches will
        # read, so memory grew with the file (measured: RSS proportional to the input).
        # page_checksum_verification: a corrupted page is an error, not silently wrong values.
        pf = pq.ParquetFile(path, pre_buffer=False, page_checksum_verification=True)
        return pf.schema_arrow, pf.metadata.num_rows, pf.iter_batches(batch_size=batch_size)
    import pyarrow.csv as pcsv

    reader = pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=1 << 22))

    def gen() -> Iterator[Any]:
        for b in reader:
            for lo in range(0, b.num_rows, batch_size):
                yield b.slice(lo, batch_size)

    return reader.schema, None, gen()


def _progress_bar(enabled: bool, total: int | None) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:  # tqdm is in puffer-privacy[io]; without it, no bar
        return None
    return tqdm(total=total, unit="rows", unit_scale=True, file=sys.stderr, desc="puffer noise", leave=False)


def _lock_path(dst: str) -> str:
    return os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.puffer-lock")


@contextlib.contextmanager
def _output_lock(dst: str) -> Iterator[None]:
    """One writer per output path (non-blocking: a second writer gets a PufferIOError). The lock
    file is removed when the release ends, while still locked: a writer that opened it before the
    removal finds, once it holds the lock, that the path no longer names its file, and starts over
    on a new one (so two writers never hold locks on two different files of one path)."""
    lp = _lock_path(dst)
    while True:
        try:
            fd = os.open(lp, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise PufferIOError(dst, "locking the output", exc.strerror or exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise PufferIOError(dst, "locking the output", "another puffer process is writing it") from None
            raise PufferIOError(dst, "locking the output", exc.strerror or exc) from None
        try:
            st = os.stat(lp)
        except FileNotFoundError:
            st = None
        mine = os.fstat(fd)
        if st is not None and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)  # removed by the writer that held it: take the new file's lock
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(lp)
        os.close(fd)


def _busy(dst: str) -> bool:
    """True while another process holds the output's lock (its release is running)."""
    lp = _lock_path(dst)
    try:
        fd = os.open(lp, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _io(path: str, what: str) -> contextlib.AbstractContextManager[None]:
    """Turn OSError into PufferIOError (disk full, read-only, ...)."""
    @contextlib.contextmanager
    def cm() -> Iterator[None]:
        try:
            yield
        except PufferIOError:
            raise
        except OSError as exc:
            raise PufferIOError(path, what, exc.strerror or exc) from None
    return cm()


def noise_file(input: str | os.PathLike[str], output: str | os.PathLike[str], columns: Any, mechanism: Any, *,
               options: PublishOptions | None = None, batch_size: int = 1 << 18, threads: int | None = None,
               input_format: str | None = None, progress: bool | None = None, compression: str = "zstd",
               row_group_size: int = 1 << 20, **keywords: Any) -> dict[str, Any]:
    """Publish ``columns`` of a Parquet/CSV file with calibrated noise as Parquet, with its ledger
    entry; returns the (pending) ledger entry.

    ``mechanism``: a Mechanism, a framework file (TOML/JSON, as ``puffer run`` reads), its dict,
    or a plain noise (see :func:`puffer.io.resolve`; ``select`` picks a mechanism of a file).
    The release's options: ``options=`` a :class:`~puffer.publish.PublishOptions` and/or its
    fields as keywords (``key``, ``ledger`` -- default ``puffer-ledger.jsonl`` beside the
    output --, ``unit``/``order``/``per_unit``, ``rerun``, ``allow_uncomposed``, ``budget``,
    ``allow_unnoised``, ``secure``, ``granularity``, ``select``, ``nulls``, ``insecure_seed``;
    an integer ``seed`` is refused), the same for every engine.
    This engine's own: ``batch_size`` (rows per record batch: memory), ``threads`` (default all
    cores), ``input_format`` ("parquet" or "csv"; default from the extension), ``progress`` (a
    bar on stderr; default when stderr is a terminal), ``compression`` and ``row_group_size``
    of the output. The output's bytes depend only on the input, the options, the key and the
    nonce (row groups of ``row_group_size`` rows whatever ``batch_size``).

    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq, puffer.io
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [1.0, 2.0, 3.0]}), os.path.join(d, "in.parquet"))
    >>> k = puffer.io.keygen(os.path.join(d, "release.key"))
    >>> e = puffer.io.noise_file(os.path.join(d, "in.parquet"), os.path.join(d, "out.parquet"), ["x"],
    ...                          ("laplace", {"b": 1.0}), key=os.path.join(d, "release.key"))
    >>> e["rows"], e["key"]["key_id"] == k.key_id, puffer.io.verify(os.path.join(d, "puffer-ledger.jsonl"))["releases"]
    (3, True, 1)
    """
    t0 = time.perf_counter()
    opts = PublishOptions.of(options, **keywords)
    refuse_seed(opts.seed)
    src, dst = os.fspath(input), os.path.abspath(os.fspath(output))
    for name, path in (("input", src), ("output", dst)):
        if isinstance(path, str) and "\x00" in path:  # the OS calls would raise a bare ValueError
            raise ParameterError(name, path, "a path without NUL bytes")
    cols = as_columns(columns)
    fmt = _format(src, input_format)
    if not os.path.isfile(src):
        raise ParameterError("input", src, "an existing file")
    if os.path.realpath(src) == os.path.realpath(dst) or (os.path.exists(dst) and os.path.samefile(src, dst)):
        raise ParameterError("output", dst, "a path different from the input (the input is read while the "
                             "output is written)")
    out_dir = os.path.dirname(dst)
    if not os.path.isdir(out_dir):
        raise ParameterError("output", dst, "a path in an existing folder")
    if os.path.isdir(dst):
        raise ParameterError("output", dst, "a file path, not a folder")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise PufferIOError(dst, "writing the output", "its folder is read-only")
    batch_size = V.integer("batch_size", batch_size, lo=1)
    row_group_size = V.integer("row_group_size", row_group_size, lo=1)
    thr = threads_arg(threads)
    format_out = {"compression": compression, "row_group_size": row_group_size}
    pa = pyarrow()
    opened: list[Any] = []

    def check_input() -> None:
        # the input's columns (its schema: no rows read), checked by prepare() before the mechanism
        # is resolved, which may fit a model and calibrate: a misspelt column costs no such work
        try:
            opened.extend(_batches(src, fmt, batch_size))
        except (pa.ArrowInvalid, OSError) as exc:
            raise ParameterError("input", src, f"a readable {fmt} file ({exc})") from None
        names = list(opened[0].names)
        check_schema(opened[0], cols)
        for name, c in (("unit", opts.unit), ("order", opts.order)):
            if isinstance(c, str) and c not in names:
                raise ParameterError(name, repr(c), f"a column of the input; it has {names}")

    prep = prepare(mechanism, cols, opts, default_ledger=default_ledger_path(dst), avoid=(src, dst),
                   config={"format_out": format_out}, check_input=check_input)
    schema, total, batches = opened
    spec, nulls = prep.spec, opts.nulls
    with prep.unit_secret_kept_if_recorded(), _output_lock(dst):
        for name in [c for c in (spec.column, spec.order) if c is not None]:
            if name not in schema.names:
                raise ParameterError("unit" if name == spec.column else "order", repr(name),
                                     f"a column of the input; it has {list(schema.names)}")
        prep.check_input_types(lambda c: schema.field(c).type)
        with _io(out_dir, "removing staging files of killed runs"):
            clean_stale(out_dir, dst, _busy)
        with _io(src, "reading the input"):
            in_digest = sha256_file(src)
        units = None if prep.hasher is None else _unit_set(src, fmt, cast(str, spec.column), prep.hasher)
        rel = prep.begin(input_sha256=in_digest, path_kind="file", input=src, units=units, is_busy=_busy)
        noise = prep.noise(rel, threads=thr)
        bar = _progress_bar(sys.stderr.isatty() if progress is None else bool(progress), total)
        rows = 0
        stage: StagingFile | None = None
        try:
            with _io(dst, "creating the output's staging file"):
                stage = StagingFile(dst)
            with _io(stage.path, "writing the output"):
                if spec.mode == "records":
                    rows = _write_units(src, fmt, stage, spec, cols, noise, nulls, compression, row_group_size)
                else:
                    rows = _write_rows(batches, src, fmt, stage, schema, spec, cols, noise, nulls, compression,
                                       row_group_size, bar)
                out_digest = stage.finish()  # durable, but masked: not a usable file yet
            with _io(src, "reading the input"):
                if sha256_file(src) != in_digest:
                    raise ParameterError("input", src, "an input that does not change while it is read (its "
                                         "SHA-256 changed during the release); nothing was published")
            raise_deferred()   # a signal deferred during an import stops the release here, unpublished
            entry = rel.pending(out_digest, rows, output=dst,
                                extra={"seconds": round(time.perf_counter() - t0, 3)})
            with _io(dst, "publishing the output"):
                stage.publish()
            rel.commit()
        except BaseException as exc:
            # The staging file still there means the rename did not happen (a signal may land
            # between os.replace returning and `published = True`: then it is gone, and the
            # pending entry is left for the next run to resolve from the file itself).
            if stage is not None and not stage.published and os.path.exists(stage.path):
                stage.discard()
                if rel.state == "pending":
                    with contextlib.suppress(Exception):
                        rel.abort(f"not published: {type(exc).__name__}")
            raise
        finally:
            if stage is not None:
                stage.close_fd()
            if bar is not None:
                bar.close()
    return entry


def _unit_set(src: str, fmt: str, column: str, hasher: UnitHasher) -> Any:
    """The keyed hashes of the distinct ids in the input's unit column (the units the release
    touches, :mod:`puffer.publish.unitsets`), read before any work."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    pa = pyarrow()
    try:
        if fmt == "parquet":
            col = pq.read_table(src, columns=[column], page_checksum_verification=True, pre_buffer=False).column(0)
        else:
            col = pcsv.read_csv(src, convert_options=pcsv.ConvertOptions(include_columns=[column])).column(0)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParameterError("input", src, f"a valid {fmt} file ({exc})") from None
    if col.null_count:
        raise ParameterError("unit", column, "no null unit ids")
    ids = pc.unique(col).to_numpy(zero_copy_only=False)
    return hasher.unit_set(np.asarray(ids))


def _int_check(batch: Any, cols: list[str], rows: int) -> None:
    """64-bit integers that float64 cannot hold exactly (|x| > 2^53) are refused, never rounded
    (at 2^62 the float spacing is 1024 and Laplace(1) noise vanishes): checked before the
    answers' range check converts the columns to float64."""
    pa = pyarrow()
    for c in cols:
        arr = batch.column(batch.schema.get_field_index(c))
        if pa.types.is_integer(arr.type) and arr.type.bit_width == 64:
            check_integers((arr.fill_null(0) if arr.null_count else arr).to_numpy(zero_copy_only=False), c, rows)


def _writer(sink: StagingFile, schema: Any, compression: str) -> Any:
    import pyarrow.parquet as pq
    return pq.ParquetWriter(sink, schema, compression=compression, write_page_checksum=True)


def _write_rows(batches: Iterator[Any], src: str, fmt: str, tmp: StagingFile, schema: Any, spec: UnitSpec,
                cols: list[str], noise: ColumnNoise, nulls: str, compression: str, row_group_size: int, bar: Any
                ) -> int:
    """Rows mode / answers mode: one output row per input row."""
    import numpy as np

    from ..streams import unit_positions
    pa = pyarrow()

    out_schema = output_schema(schema, cols, lattice=noise.lattice is not None)
    rows = 0
    seen: list[Any] = []
    with _writer(tmp, out_schema, compression) as writer:
        # Row groups of exactly row_group_size rows (the last one shorter), cut from the
        # noisy batches: the file's bytes do not depend on the batch size.
        pending: list[Any] = []
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

        def read() -> Iterator[Any]:  # errors of the input (corrupt pages, bad CSV) are bad input, not I/O failures
            it = iter(batches)
            while True:
                try:
                    b = next(it)
                except StopIteration:
                    return
                except (pa.ArrowInvalid, OSError) as exc:
                    raise ParameterError("input", src, f"a valid {fmt} file (at row {rows}: {exc})") from None
                yield b

        for b in read():
            if b.schema != schema:  # CSV: a later block inferred differently
                raise ParameterError("input", src, f"one schema for the whole file (batch at row {rows} "
                                     f"has {b.schema}, the first had {schema})")
            _int_check(b, cols, rows)
            where: Any = rows
            ids = None
            if spec.column is not None:  # answers keyed by unit id
                ucol = b.column(b.schema.get_field_index(spec.column))
                if ucol.null_count:
                    raise ParameterError("unit", spec.column, "no null unit ids")
                ids = ucol.to_numpy(zero_copy_only=False)
                where = unit_positions(ids)
                seen.append(where)
            if spec.range is not None:
                for c in cols:
                    v = b.column(b.schema.get_field_index(c)).to_numpy(zero_copy_only=False)
                    check_answers(spec, c, np.asarray(v, dtype=np.float64), ids, rows)
            pending.append(noise_batch(b, noise, cols, where, nulls=nulls, out_schema=out_schema))
            n_pending += b.num_rows
            rows += b.num_rows
            if n_pending >= row_group_size:
                flush(False)
            if bar is not None:
                bar.update(b.num_rows)
        flush(True)
    if len(seen) > 1:
        unit_positions(np.concatenate(seen))  # every unit once across batches
    return rows


def _write_units(src: str, fmt: str, tmp: StagingFile, spec: UnitSpec, cols: list[str], noise: ColumnNoise, nulls: str,
                 compression: str, row_group_size: int) -> int:
    """Records mode: group by unit, one noisy answer per unit."""
    pa = pyarrow()
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    need = [spec.column] + ([spec.order] if spec.order else []) + cols
    try:
        if fmt == "parquet":
            table = pq.read_table(src, columns=need, page_checksum_verification=True, pre_buffer=False)
        else:
            table = pcsv.read_csv(src).select(need)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParameterError("input", src, f"a valid {fmt} file ({exc})") from None
    answers, pos = group_answers(table, spec, cols)
    del table
    noisy_schema = pa.schema([answers.schema.field(spec.column)] + [pa.field(c, pa.float64()) for c in cols])
    out_schema = pa.schema([answers.schema.field(spec.column)] +  # the answers' names: c_sum_noisy
                           [pa.field(spec.output_column(c), pa.float64()) for c in cols])
    n: int = answers.num_rows
    with _writer(tmp, out_schema, compression) as writer:
        for lo in range(0, max(n, 1), row_group_size):
            part = answers.slice(lo, row_group_size)
            if part.num_rows == 0 and n:
                break
            b = part.combine_chunks().to_batches()
            batch = b[0] if b else pa.RecordBatch.from_pylist([], schema=noisy_schema)
            noisy = noise_batch(batch, noise, cols, pos[lo:lo + part.num_rows], nulls=nulls, out_schema=noisy_schema)
            out = pa.RecordBatch.from_arrays(noisy.columns, schema=out_schema)
            writer.write_table(pa.Table.from_batches([out], schema=out_schema), row_group_size=row_group_size)
    return n


def clamp_file(input: str | os.PathLike[str], output: str | os.PathLike[str], range: Any, *,
               columns: Any = None, ledger: str | os.PathLike[str] | None = None, signing_key: Any = None,
               compression: str = "zstd", row_group_size: int = 1 << 20) -> dict[str, Any]:
    """Clamp the noisy columns of a published file to ``range`` = (lo, hi) (either may be None:
    unbounded on that side) into a new Parquet file ``output``, recorded in the ledger as
    post-processing of its release (``puffer clamp IN OUT --range A,B``); returns the ledger entry.

    ``input`` must be the output of a release recorded in the ledger (default:
    ``puffer-ledger.jsonl`` beside the input; its SHA-256 names the release); ``columns``: some of
    that release's noisy columns (default: all of them), the others are copied unchanged. The input
    is left as it is. Clamping is post-processing: it costs no privacy (Pierquin et al. 2024, Prop
    2.1), and the entry (``"event": "post_processed"``, ``of_release``, the input's and the output's
    SHA-256 and the step in the form of a release's ``post_processing``) adds nothing to any total.
    It biases what it clamps, toward the inside of the range: an average of clamped noisy values is
    not the average of the data (see :mod:`puffer.mechanisms.postprocess`), so keep the input for
    estimates.

    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq, puffer.io
    >>> from puffer.publish.engines.file import clamp_file
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [0.0, 5.0, 10.0]}), os.path.join(d, "in.parquet"))
    >>> _ = puffer.io.noise_file(os.path.join(d, "in.parquet"), os.path.join(d, "noisy.parquet"), ["x"],
    ...                          ("laplace", {"b": 1.0}), key=puffer.io.keygen(os.path.join(d, "k.key")))
    >>> e = clamp_file(os.path.join(d, "noisy.parquet"), os.path.join(d, "clamped.parquet"), (0.0, 10.0))
    >>> e["event"], e["post_processing"][0]["clamp"]
    ('post_processed', [0.0, 10.0])
    >>> x = pq.read_table(os.path.join(d, "clamped.parquet"))["x"].to_numpy()
    >>> bool(((0.0 <= x) & (x <= 10.0)).all())
    True
    """
    from ...mechanisms.postprocess import RangePost
    from ..ledger import LEDGER_VERSION, Ledger, _now, ledger_path, release_states
    from ..units import ANSWER_SUFFIX

    src, dst = os.path.abspath(os.fspath(input)), os.path.abspath(os.fspath(output))
    if not os.path.isfile(src):
        raise ParameterError("input", src, "an existing file published by `puffer noise`")
    if os.path.realpath(src) == os.path.realpath(dst):
        raise ParameterError("output", dst, "a path other than the input (the published file is kept: clamped "
                             "values are biased, the input is what estimates should use)")
    out_dir = os.path.dirname(dst)
    if not os.path.isdir(out_dir):
        raise ParameterError("output", dst, "a path in an existing folder")
    if not isinstance(range, (tuple, list)) or len(range) != 2:
        raise ParameterTypeError("range", range, "(lo, hi): two numbers, either may be None (unbounded)")
    lo, hi = (None if v is None else V.real("range", v) for v in range)
    if lo is None and hi is None:
        raise ParameterError("range", list(range), "at least one bound")
    if lo is not None and hi is not None and lo > hi:
        raise ParameterError("range", [lo, hi], "lo <= hi")
    step = RangePost(lo, hi, source="given")
    led = Ledger(ledger_path(ledger, default_ledger_path(src)), signing_key=signing_key)
    if not os.path.isfile(led.path):
        raise ParameterError("ledger", led.path, "the ledger of the release that published the input (give "
                             "--ledger L when it is not puffer-ledger.jsonl beside the input)")
    led.check_writable()
    led.check_signer()
    with _io(src, "reading the input"):
        digest = sha256_file(src)
    states = release_states(led.entries())
    found = [s["entry"] for s in states.values() if s["entry"].get("output_sha256") == digest
             and s["status"] in ("completed", "published")]
    if not found:
        raise ParameterError("input", src, f"the output of a release recorded in the ledger {led.path}: its "
                             f"SHA-256 ({digest}) is no completed release's output")
    rel = found[-1]
    mode = (rel.get("unit") or {}).get("mode")
    noisy = [c + ANSWER_SUFFIX if mode == "records" else c for c in rel.get("columns", [])]
    cols = noisy if columns is None else as_columns(columns)
    for c in cols:
        if c not in noisy:
            raise ParameterError("columns", c, f"a noisy column of release {rel['release_id']}: one of {noisy}")
    pa = pyarrow()
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(src)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParameterError("input", src, f"a readable Parquet file ({exc})") from None
    for c in cols:
        col = table.column(c).combine_chunks()
        vals = step(col.to_numpy(zero_copy_only=False).astype(col.type.to_pandas_dtype(), copy=True))
        table = table.set_column(table.schema.get_field_index(c), table.schema.field(c),
                                 pa.array(vals, type=col.type, mask=col.is_null().to_numpy(zero_copy_only=False)))
    with _output_lock(dst):
        stage: StagingFile | None = None
        try:
            with _io(dst, "creating the output's staging file"):
                stage = StagingFile(dst)
            with _io(stage.path, "writing the output"):
                pq.write_table(table, stage, compression=compression, row_group_size=row_group_size)
                out_digest = stage.finish()
            entry = led.append({"puffer_ledger": LEDGER_VERSION, "event": "post_processed",
                                "of_release": rel["release_id"], "input": src, "input_sha256": digest,
                                "output": dst, "output_sha256": out_digest, "rows": table.num_rows,
                                "columns": cols, "post_processing": [step.describe()], "time": _now()})
            with _io(dst, "publishing the output"):
                stage.publish()
        except BaseException:
            if stage is not None and not stage.published and os.path.exists(stage.path):
                stage.discard()
            raise
        finally:
            if stage is not None:
                stage.close_fd()
    return entry
