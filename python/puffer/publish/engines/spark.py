"""Publishing Spark DataFrames (optional extra ``puffer-privacy[spark]``): noise through ``mapInArrow``.

:func:`add_noise` is :func:`puffer.io.noise_file` for a DataFrame: the same keywords (``key``,
``ledger``, ``unit``/``order``/``per_unit``, ...), the same key and nonce rules, the same
per-unit checks and query, and the same ledger entry (apart from the fields naming where the
data lives), written by the driver (:func:`puffer.publish.begin_release`) before the noisy frame is
returned. The noise of a value is value ``p`` of the release stream ``release_stream(key, nonce,
c)`` (:mod:`puffer.publish.streams`), so one dataset released with one key and nonce gives the same
bits in a file, on Spark and on Dask, whatever the partitioning. The position ``p`` is:

* with ``unit=`` (records: one answer per unit, grouped by a Spark shuffle; each partition runs
  :func:`puffer.publish.units.group_answers`) or ``unit=`` with ``per_unit=True``: the unit's
  position (:func:`puffer.io.unit_positions`), which depends on the id only;
* otherwise the row's position. ``df`` is first computed once and frozen
  (``DataFrame.checkpoint`` when the context has a checkpoint folder, else
  ``localCheckpoint``): its partitions cannot change any more, whatever ``orderBy``,
  ``repartition``, adaptive query execution or a non-deterministic source did upstream. The
  partition sizes are counted on the frozen frame, and the noising stage reads each row's
  (partition, position) from a column computed on that same frame
  (``monotonically_increasing_id``), not from the task it runs in, so no two rows share a
  stream (a position outside the counted partition is an error, never a reused stream). Row
  ``r`` is then the ``r``-th row ``collect()`` returns. Or ``row_id=``: an integer column of
  unique ids >= 0, checked on the frozen frame.

Unit ids are integers or strings (a Spark column has one type; Spark itself converts a mix
such as a pandas object column of 1 and "1" to one type when the frame is created, so keep ids of
one type); other types are refused, their text forms collide.

The noisy frame is frozen too (checkpointed), and its content digest (and the input's:
:data:`puffer.publish.digest.DIGEST_NOTE`) goes into the ledger, so every action, retry or later
shuffle sees the recorded values. ``secure=True``: exact lattice noise keyed by a secret drawn
once per release from OS entropy and addressed by position (:func:`puffer.publish.noise.secure_streams`):
two ``collect()`` calls return the same values and cannot be averaged.

The Python workers must run an interpreter with puffer and pyarrow: when neither
``PYSPARK_PYTHON`` nor ``spark.pyspark.python`` is set, a local master is given this interpreter
and another master is probed with one task (a clear error when it lacks them).
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...errors import ParameterError, ParameterTypeError, PufferError
from ..digest import DIGEST_NOTE, PartDigest, combine_digests
from ..options import PublishOptions
from ..plan import as_columns, threads_arg
from ..preamble import prepare
from ..units import check_id_counts
from .arrow import check_schema, noise_batch, output_schema, pyarrow

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..unitsets import UnitHasher

__all__ = ["add_noise"]


def _spark_schema(df: Any) -> Any:
    """The Arrow schema of a Spark DataFrame (via Spark's own type mapping)."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema
    except ModuleNotFoundError as exc:  # pragma: no cover - the test set-up installs it
        raise ModuleNotFoundError("puffer.spark needs pyspark: pip install 'puffer-privacy[spark]'") from exc
    try:
        return to_arrow_schema(df.schema)
    except TypeError:  # pyspark >= 4 wants the session's timezone settings; default ones do here
        return to_arrow_schema(df.schema, timezone="UTC", prefers_large_types=False)


_ROW = "__puffer_row__"  # the hidden column carrying (partition, position) into the noising stage
_LOCAL_BITS = 33         # monotonically_increasing_id(): partition index << 33 | position in the partition


def _python_workers(sc: Any) -> None:
    """Make the Python workers run an interpreter that has puffer and pyarrow.

    Spark starts its workers with ``$PYSPARK_PYTHON``, by default ``python3`` on the PATH, which is
    often not this interpreter: every task then died with "No module named pyarrow" deep in a
    worker traceback. With neither ``PYSPARK_PYTHON`` nor ``spark.pyspark.python`` set, a local
    master gets this interpreter (``sys.executable``); another master is probed with one small
    task and a failure is an error saying what to set."""
    import sys

    conf_python = sc.getConf().get("spark.pyspark.python", None)
    if str(sc.master).startswith("local"):
        # The workers run sc.pythonExec, which the context read from PYSPARK_PYTHON when it was
        # created (default "python3"; the variable may have changed since, and a session's
        # spark.pyspark.python does not reach it): only that default is replaced, by the
        # configured interpreter or this one; a path someone chose stays.
        if sc.pythonExec in (None, "", "python3", "python"):
            sc.pythonExec = conf_python or sys.executable  # read when mapInArrow wraps its function
        return
    if os.environ.get("PYSPARK_PYTHON") or conf_python:
        return

    def probe(_: Any) -> Iterator[int]:
        import pyarrow  # noqa: F401

        import puffer  # noqa: F401
        yield 0

    try:
        sc.parallelize([0], 1).mapPartitions(probe).collect()
    except Exception as exc:
        raise PufferError(
            f"the Spark workers' Python ({sc.pythonExec!r}: PYSPARK_PYTHON is not set) cannot import puffer "
            f"and pyarrow; set PYSPARK_PYTHON (or spark.pyspark.python) to an interpreter that has them "
            f"({type(exc).__name__})") from None


def _materialise(df: Any) -> Any:
    """``df`` computed once and frozen: a reliable checkpoint when the context has a checkpoint
    folder, else a local checkpoint (executor storage; losing an executor then fails the job
    instead of recomputing different rows)."""
    if df.sparkSession.sparkContext.getCheckpointDir():
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


def _partition_sizes(cp: Any) -> NDArray[np.int64]:
    """Rows per partition of a checkpointed frame (its partitions cannot change any more)."""
    from pyspark.sql import functions as F

    sizes = np.zeros(cp.rdd.getNumPartitions(), dtype=np.int64)
    for row in cp.select(F.spark_partition_id().alias("pid")).groupBy("pid").count().collect():
        sizes[row["pid"]] = int(row["count"])
    return sizes


# the parameter is quoted ('x') unless its name holds quotes itself (column 'x'): puffer.errors
_WORKER_ERROR = re.compile(r"puffer\.errors\.(ParameterError|ParameterTypeError): parameter ('[^']*'|.+?) = (.*?)"
                           r"(?: \(type \w+\))?: expected (.*)")


@contextlib.contextmanager
def _worker_errors() -> Iterator[None]:
    """A puffer error raised in a Python worker (a bad value found while noising) comes back as
    that error, not as a JVM stack trace."""
    try:
        yield
    except PufferError:
        raise
    except Exception as exc:
        hits = _WORKER_ERROR.findall(str(exc))
        if not hits:
            raise
        kind, param, value, expected = hits[-1]
        if len(param) >= 2 and param[0] == param[-1] == "'":
            param = param[1:-1]
        cls = ParameterError if kind == "ParameterError" else ParameterTypeError
        raise cls(param, value, expected.strip()) from None


def _digest_parts(frame: Any, columns: list[str]) -> list[list[Any]]:
    """Per partition of a checkpointed frame: [rows, sha256 of each column] (one Python pass)."""
    from pyspark.sql import functions as F

    cols = list(columns)

    def fn(it: Iterator[Any]) -> Iterator[Any]:
        import json

        import pyarrow as pa

        acc: dict[int, PartDigest] = {}
        for b in it:
            if b.num_rows == 0:
                continue
            pids = np.asarray(b.column(0))
            for pid in np.unique(pids):
                sel = np.flatnonzero(pids == pid)
                part = b.take(pa.array(sel)) if sel.size != b.num_rows else b
                d = acc.setdefault(int(pid), PartDigest(cols))
                d.update(lambda c, part=part: part.column(cols.index(c) + 1), part.num_rows)
        if acc:
            yield pa.RecordBatch.from_pydict({"pid": pa.array(list(acc), pa.int32()),
                                              "d": pa.array([json.dumps(v.result()) for v in acc.values()])})

    import json

    src = frame.select(F.spark_partition_id().alias(_ROW), *[frame[c] for c in cols])
    got = {int(r["pid"]): json.loads(r["d"]) for r in src.mapInArrow(fn, "pid int, d string").collect()}
    return [got.get(i, PartDigest(cols).result()) for i in range(frame.rdd.getNumPartitions())]


def _unit_hashes(frame: Any, column: str, hasher: UnitHasher) -> NDArray[np.uint64]:
    """The keyed hashes of the distinct ids of ``column`` (:mod:`puffer.publish.unitsets`),
    computed on the workers: one blob of sorted hashes per partition comes back."""
    def fn(it: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        got = [np.unique(b.column(0).to_numpy(zero_copy_only=False)) for b in it if b.num_rows]
        ids = np.unique(np.concatenate(got)) if got else np.zeros(0, dtype=np.int64)
        data = np.unique(hasher.hashes(ids)).astype("<u8").tobytes()
        yield pa.RecordBatch.from_pydict({"h": pa.array([data], pa.binary())})

    blobs = [r["h"] for r in frame.select(frame[column]).mapInArrow(fn, "h binary").collect()]
    if not blobs:
        return np.zeros(0, dtype=np.uint64)
    return np.unique(np.frombuffer(b"".join(blobs), dtype="<u8").astype(np.uint64))


def add_noise(df: Any, columns: Any, mechanism: Any, *, options: PublishOptions | None = None,
              row_id: str | None = None, threads: int | None = 1, **keywords: Any) -> Any:
    """Publish ``columns`` of ``df`` with noise: the noisy DataFrame (computed and frozen), with
    its ledger entry written by the driver before it is returned.

    The release's options are those of every engine (:func:`puffer.io.noise_file`):
    ``options=`` a :class:`~puffer.publish.PublishOptions` and/or its fields as keywords
    (``key``, ``ledger`` -- default ``puffer-ledger.jsonl`` in the working folder --,
    ``unit``/``order``/``per_unit``: with ``unit`` and records, one noisy answer per unit comes
    back, grouped by a Spark shuffle and checked per unit as the file engine does;
    ``allow_unnoised``, ``allow_uncomposed``, ``budget``, ``secure``, ``granularity``,
    ``select``, ``nulls``, ``insecure_seed``; ``rerun`` is for the file engine only).
    This engine's own: ``row_id``: without a unit, an integer column of unique row ids >= 0 as stream positions,
    or None (positional, see the module doc). ``threads``: threads per task (default 1).

    Every action on the result returns the same values (the result is a checkpoint). Two calls
    are two releases with independent noise (a fresh nonce each).
    """
    try:
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F
    except ModuleNotFoundError as exc:  # pragma: no cover - the test set-up installs it
        raise ModuleNotFoundError("puffer.spark needs pyspark: pip install 'puffer-privacy[spark]'") from exc

    if not isinstance(df, DataFrame):
        raise ParameterTypeError("df", df, "a pyspark.sql.DataFrame")
    opts = PublishOptions.of(options, **keywords)
    cols = as_columns(columns)
    nulls = opts.nulls
    thr = threads_arg(threads)
    if opts.rerun is not None:
        raise ParameterError("rerun", opts.rerun, "None: re-runs are for the file engine (puffer.io.noise_file)")
    if row_id is not None and not isinstance(row_id, str):
        raise ParameterTypeError("row_id", row_id, "a column name or None")
    schema = _spark_schema(df)
    check_schema(schema, cols, "DataFrame", row_id)
    if _ROW in schema.names:
        raise ParameterError("df", f"a column named {_ROW!r}", "no column of that name (puffer.spark uses it)")
    op = prepare(mechanism, cols, opts, default_ledger=os.path.abspath("puffer-ledger.jsonl"))
    # a unit secret created for this release is removed again if the release is refused or fails
    with op.unit_secret_kept_if_recorded():
        spec = op.spec
        for name in (spec.column, spec.order):
            if name is not None and name not in schema.names:
                raise ParameterError("unit" if name == spec.column else "order", repr(name),
                                     f"a column of the DataFrame; it has {list(schema.names)}")
        op.check_input_types(lambda c: schema.field(c).type)
        if row_id is not None and spec.column is not None:
            raise ParameterError("row_id", row_id, "None with unit= (the unit ids are the stream positions)")
        _python_workers(df.sparkSession.sparkContext)

        cp = _materialise(df)
        used = [c for c in dict.fromkeys([*cols, spec.column, spec.order, row_id]) if c is not None]
        parts = _digest_parts(cp, used)
        sizes = np.array([p[0] for p in parts], dtype=np.int64)
        if row_id is not None or spec.mode == "answers" and spec.column is not None:
            ident = cast(str, row_id if row_id is not None else spec.column)
            what = "row_id" if row_id is not None else "unit"
            n, distinct, nonnull, lowest = cp.agg(F.count(F.lit(1)), F.countDistinct(cp[ident]), F.count(cp[ident]),
                                                  F.min(cp[ident])).first()
            check_id_counts(what, ident, n, distinct, nonnull, lowest if row_id is not None else None)
        units = None if op.hasher is None else _unit_hashes(cp, cast(str, spec.column), op.hasher)
        rel = op.begin(input_sha256=combine_digests(parts), path_kind="spark", units=units)
        noise = op.noise(rel, threads=thr)

        from pyspark.sql.pandas.types import from_arrow_schema

        if spec.mode == "records":
            pa = pyarrow()
            out_schema = pa.schema([schema.field(spec.column)] +  # the answers' names: c_sum_noisy
                                   [pa.field(spec.output_column(c), pa.float64()) for c in cols])
            need = [c for c in (spec.column, spec.order, *cols) if c is not None]

            def per_unit_fn(it: Iterator[Any]) -> Iterator[Any]:
                import pyarrow as pa

                from puffer.publish.units import group_answers

                batches = [b for b in it if b.num_rows]
                if not batches:
                    return
                table = pa.Table.from_batches(batches).select(need)
                answers, pos = group_answers(table, spec, cols)
                arrays = [answers.column(spec.column).combine_chunks()]
                for c in cols:
                    vals = answers.column(c).to_numpy()
                    arrays.append(pa.array(noise.add(vals, c, pos), type=pa.float64()))
                yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)

            noisy = cp.repartition(max(cp.rdd.getNumPartitions(), 1), cp[spec.column]) \
                .mapInArrow(per_unit_fn, from_arrow_schema(out_schema)).orderBy(spec.column)  # the file's order
        else:
            out_schema = output_schema(schema, cols, lattice=noise.lattice is not None)
            offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
            by_unit = spec.column is not None
            positional = row_id is None and not by_unit
            src = cp.withColumn(_ROW, F.monotonically_increasing_id()) if positional else cp

            def fn(it: Iterator[Any]) -> Iterator[Any]:
                import pyarrow as pa

                from puffer.publish.streams import unit_positions
                from puffer.publish.units import check_answers

                for b in it:
                    ids = None
                    if by_unit:
                        ids = b.column(b.schema.get_field_index(spec.column)).to_numpy(zero_copy_only=False)
                        rows: Any = unit_positions(ids)
                    elif not positional:
                        rows = np.asarray(b.column(b.schema.get_field_index(row_id)))
                    else:
                        j = b.schema.get_field_index(_ROW)
                        mid = np.asarray(b.column(j), dtype=np.int64)
                        pid, pos = mid >> _LOCAL_BITS, mid & ((1 << _LOCAL_BITS) - 1)
                        if mid.size and (int(pid.max()) >= sizes.size or np.any(pos >= sizes[pid])):
                            raise RuntimeError("puffer.spark: a row position outside its checkpointed partition "
                                               "(row identity changed between jobs); nothing was released")
                        rows = offsets[pid] + pos  # consecutive runs: one sampler call each
                        b = pa.RecordBatch.from_arrays([b.column(i) for i in range(b.num_columns) if i != j],
                                                       names=[nm for i, nm in enumerate(b.schema.names) if i != j])
                    if spec.range is not None and b.num_rows:
                        for c in cols:
                            v = b.column(b.schema.get_field_index(c)).to_numpy(zero_copy_only=False)
                            check_answers(spec, c, np.asarray(v, dtype=np.float64), ids, int(np.asarray(rows)[0]))
                    yield noise_batch(b, noise, cols, rows, nulls=nulls, out_schema=out_schema)

            noisy = src.mapInArrow(fn, from_arrow_schema(out_schema))
        with _worker_errors():
            out = _materialise(noisy)
        # records: the unit column and the answers, in unit order as the file engine writes them
        out_cols = cols if spec.mode != "records" else [cast(str, spec.column), *map(spec.output_column, cols)]
        out_parts = _digest_parts(out, out_cols)
        rel.commit(combine_digests(out_parts), int(sum(p[0] for p in out_parts)),
                   extra={"digests": DIGEST_NOTE, "partitions": len(out_parts)})
        cp.unpersist()
        return out
