"""Publishing Dask arrays and DataFrames (optional extra ``puffer-privacy[dask]``).

:func:`add_noise` is :func:`puffer.io.noise_file` for a Dask collection: the same keywords
(``key``, ``ledger``, ``unit``/``order``/``per_unit``, ...), key and nonce rules, per-unit checks
and query, and the same ledger entry (apart from the fields naming where the data lives),
written by the driver before the noisy collection, computed and persisted, is returned. The
noise of a value is value ``p`` of the release stream ``release_stream(key, nonce, c)``
(:mod:`puffer.publish.streams`), so the result is bitwise identical for any chunking and worker
count, and equal to the file and Spark releases of the same data under one key and nonce.

* Arrays: a 1-D array is one column (``columns`` = its name); an ``(n, d)`` array has ``d``
  columns named by a list of ``d`` names; ``p`` is the row (first axis; chunks along either
  axis). No unit column (``per_unit=True`` declares each row one unit's answer).
* DataFrames: ``columns`` are column names; ``p`` is the row's position (the input is persisted
  once and the partition sizes counted on it), an integer ``row_id`` column (unique ids >= 0),
  or, with ``unit=``, the unit's position: records are shuffled by unit and each partition runs
  :func:`puffer.publish.units.group_answers` (one noisy answer per unit). Missing values (NaN /
  ``pd.NA``) are refused or, with ``nulls="keep"``, kept as they are without noise.

Unit ids are integers or strings, one type in the whole frame: an object column holding
integers in one partition and strings in another is refused (1 and "1" would be two units to
the data and one to anything comparing them as text). Dask's ``dataframe.convert-string``
(on by default) converts an object column to strings when the frame is built, before puffer
sees it: integers 1 and strings "1" are then one unit. Keep unit ids of one type.

``secure=True``: exact lattice noise keyed by a secret drawn once per release and addressed by
position (:func:`puffer.publish.noise.secure_streams`): recomputing a block draws nothing new.

The output's index: a DataFrame without a unit, or with ``per_unit=True``, keeps the input's
own index (rows stay where they were); with ``unit=`` and records, the rows are units sorted by
unit id and the index is 0, 1, ..., n - 1 in that order (unique across partitions, where each
partition used to restart at 0). The grouping shuffle is an implementation detail: the
scheduler's informational log lines about it (distributed's P2P shuffle plugin: "Shuffle ...
initialized by task ..." and "... deactivated due to stimulus ...") are filtered out while
:func:`add_noise` runs, by message (:class:`_ShuffleChatter`); every other record of that
logger, and every warning, still reaches the user.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...errors import ParameterError, ParameterTypeError
from ..digest import DIGEST_NOTE, PartDigest, combine_digests
from ..options import PublishOptions
from ..plan import as_columns, threads_arg
from ..preamble import prepare

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..noise import ColumnNoise
    from ..units import UnitSpec
    from ..unitsets import UnitHasher

__all__ = ["add_noise"]

#: the logger of distributed's P2P shuffle on the scheduler (in this process with a LocalCluster)
_SHUFFLE_LOGGER = "distributed.shuffle._scheduler_plugin"


class _ShuffleChatter(logging.Filter):
    """Drops the two informational lines the P2P shuffle's scheduler plugin logs at WARNING level
    for every shuffle that runs normally ("Shuffle <id> initialized by task <key> executed on
    worker <addr>", "Shuffle <id> deactivated due to stimulus <stimulus>"): they are how
    :func:`add_noise` groups records, not something to act on. Any other record passes (a
    restarted or failed shuffle, for one)."""

    _ROUTINE = re.compile(r"Shuffle \S+ (initialized by task .* executed on worker \S+|deactivated due to stimulus \S+)$",
                          re.DOTALL)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a record that cannot be formatted is not ours to judge
            return True
        return self._ROUTINE.match(msg) is None


@contextlib.contextmanager
def _quiet_shuffles() -> Iterator[None]:
    """:class:`_ShuffleChatter` on distributed's shuffle logger while a release runs."""
    log, flt = logging.getLogger(_SHUFFLE_LOGGER), _ShuffleChatter()
    log.addFilter(flt)
    try:
        yield
    finally:
        log.removeFilter(flt)


def _is_numeric(dtype: Any) -> bool:
    import pandas as pd

    return (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype)) \
        and not pd.api.types.is_bool_dtype(dtype) and np.dtype(getattr(dtype, "numpy_dtype", dtype)) != np.float16


def _out_dtype(dtype: Any, lattice: bool) -> np.dtype[Any]:
    """float32 stays float32 with float noise; lattice points are float64 (exact up to 2^53 steps)."""
    d = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    return np.dtype(np.float32) if d == np.float32 and not lattice else np.dtype(np.float64)


def _digests(parts: list[Any], columns: list[str]) -> list[list[Any]]:
    """[rows, sha256 per column] of each delayed pandas partition (or 2-D numpy row block)."""
    from dask.base import compute as dask_compute
    from dask.delayed import delayed as dask_delayed

    def one(x: Any, cols: tuple[str, ...] = tuple(columns)) -> list[int | str]:
        d = PartDigest(list(cols))
        if isinstance(x, np.ndarray):
            x2 = x.reshape(x.shape[0], -1)
            d.update(lambda c: x2[:, cols.index(c)], x2.shape[0])
        else:
            d.update(lambda c: x[c].to_numpy(), len(x))
        return d.result()

    compute: Callable[..., tuple[Any, ...]] = dask_compute  # unannotated in dask
    delayed: Callable[..., Any] = dask_delayed
    return [list(v) for v in compute(*[delayed(one)(p) for p in parts])]


def _row_blocks(arr: Any) -> list[Any]:
    """One dask array per block of rows (all columns), in row order."""
    return [arr.blocks[i] if arr.ndim == 1 else arr.blocks[i, :] for i in range(arr.numblocks[0])]


def _array(arr: Any, cols: list[str], noise: ColumnNoise) -> Any:
    out_dt = _out_dtype(arr.dtype, noise.lattice is not None)

    def block(x: NDArray[Any], block_info: Any = None) -> NDArray[Any]:
        loc = block_info[0]["array-location"]
        r0 = loc[0][0]
        x2 = x.reshape(x.shape[0], -1)
        out = np.empty(x2.shape, dtype=out_dt)
        c0 = 0 if x.ndim == 1 else loc[1][0]
        for j in range(x2.shape[1]):
            c = cols[c0 + j]
            out[:, j] = noise.add(x2[:, j].astype(out_dt, copy=False), c, r0)
        return out.reshape(x.shape)

    return arr.map_blocks(block, dtype=out_dt)


def _check_array(arr: Any, cols: list[str]) -> None:
    if arr.ndim not in (1, 2):
        raise ParameterError("array", f"shape {arr.shape}", "a 1-D array (one column) or an (n, d) array")
    d = 1 if arr.ndim == 1 else arr.shape[1]
    if isinstance(d, float) and np.isnan(d):
        raise ParameterError("array", f"shape {arr.shape}", "a known number of columns")
    if len(cols) != d:
        raise ParameterError("columns", cols, f"{d} column name(s), one per column of the array (shape {arr.shape})")
    if arr.dtype.kind not in "iuf" or arr.dtype == np.float16:
        raise ParameterTypeError("array", f"dtype {arr.dtype}", "an integer or float32/float64 array")


def _check_frame(ddf: Any, cols: list[str], row_id: Any, spec_cols: list[tuple[str, str | None]]) -> None:
    names = list(ddf.columns)
    for c in cols + ([row_id] if row_id else []):
        if c not in names:
            raise ParameterError("columns" if c != row_id else "row_id", repr(c),
                                 f"a column of the DataFrame; it has {names}")
    for name, c in spec_cols:
        if c is not None and c not in names:
            raise ParameterError(name, repr(c), f"a column of the DataFrame; it has {names}")
    for c in cols:
        if not _is_numeric(ddf.dtypes[c]):
            raise ParameterTypeError(f"column {c!r}", str(ddf.dtypes[c]), "an integer or floating-point column")
    if row_id is not None:
        import pandas as pd

        if row_id in cols:
            raise ParameterError("row_id", row_id, "a column that is not one of the noisy columns")
        if not pd.api.types.is_integer_dtype(ddf.dtypes[row_id]):
            raise ParameterTypeError("row_id", str(ddf.dtypes[row_id]), "an integer column of row ids")


def _unique_ids(ddf: Any, ident: str, what: str, nonneg: bool) -> None:
    from ..units import check_id_counts

    ids = ddf[ident]
    n, distinct, nonnull, lo = (_compute(ids.size, ids.nunique(), ids.count(), ids.min() if nonneg else ids.size))
    check_id_counts(what, ident, n, distinct, nonnull, lo if nonneg else None)


def _one_id_type(ddf: Any, column: str) -> None:
    """Unit ids of one type in every partition (an object column may hold integers in one
    partition and strings in another: 1 and "1" would then be two units to the data)."""
    from dask.delayed import delayed as dask_delayed

    from ..streams import MIXED_IDS, unit_id_kind

    delayed: Callable[..., Any] = dask_delayed
    kinds = _compute(*[delayed(lambda s: unit_id_kind(s.to_numpy()))(p) for p in ddf[column].to_delayed()])
    first: dict[str, int] = {}
    for i, k in enumerate(kinds):
        if k is not None:
            first.setdefault(k, i)
    if len(first) > 1:
        where = ", ".join(f"{'integers' if k == 'int' else 'strings'} in partition {i}" for k, i in first.items())
        raise ParameterTypeError("unit", f"column {column!r} with {where}", MIXED_IDS)


def _converted_ids(ddf: Any, column: str) -> None:
    """Dask's string conversion (``dataframe.convert-string``, on by default) turns an object
    column of a pandas frame given to ``dd.from_pandas`` into strings, so ids ``1`` and ``"1"``
    arrive as two ``"1"``: one household to the release, two units in the data. The pandas
    frames behind the Dask frame (its ``FromPandas`` expressions) are checked as given: one id
    type (:func:`puffer.publish.streams.unit_id_kind`), else refused with
    :data:`~puffer.publish.streams.MIXED_IDS`."""
    from ..streams import unit_id_kind

    expr = getattr(ddf, "expr", None)
    if expr is None or not hasattr(expr, "walk"):
        return
    for node in expr.walk():
        if type(node).__name__ != "FromPandas":
            continue
        frame: Any = getattr(node, "frame", None)
        frame = getattr(frame, "_data", frame)  # (dask-expr wraps the pandas frame)
        cols = getattr(frame, "columns", ())
        if frame is not None and column in cols and str(frame[column].dtype) == "object":
            unit_id_kind(frame[column].to_numpy())  # a mix of integers and strings: refused


def _frame(ddf: Any, cols: list[str], noise: ColumnNoise, spec: UnitSpec, row_id: Any, nulls: str, sizes: list[int]
           ) -> Any:
    offsets = [int(v) for v in np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))[:-1]))]
    meta = ddf._meta.copy()
    for c in cols:
        meta[c] = meta[c].astype(_out_dtype(ddf.dtypes[c], noise.lattice is not None))
    by_unit = spec.column is not None

    def part(pdf: Any, partition_info: Any = None) -> Any:
        import pandas as pd

        from puffer.publish.streams import unit_positions
        from puffer.publish.units import check_answers
        from puffer.publish.values import check_integers

        pdf = pdf.copy()
        ids = None
        if by_unit:
            ids = pdf[spec.column].to_numpy()
            rows: Any = unit_positions(ids)
        elif row_id is None:
            rows = offsets[partition_info["number"]]
        else:
            rows = pdf[row_id].to_numpy(dtype=np.int64)
        for c in cols:
            s = pdf[c]
            isna = s.isna().to_numpy()
            valid = None
            if isna.any():
                if nulls == "error":
                    i = int(np.flatnonzero(isna)[0])
                    where = rows + i if isinstance(rows, int) else int(rows[i])
                    raise ParameterError(f"column {c!r}", f"missing value at row {where}",
                                         "no missing values (or nulls='keep')")
                valid = ~isna
            dt = _out_dtype(s.dtype, noise.lattice is not None)
            if pd.api.types.is_integer_dtype(s.dtype):  # |x| <= 2^53, checked before the conversion rounds
                check_integers(s.to_numpy(dtype=np.dtype(getattr(s.dtype, "numpy_dtype", s.dtype)), na_value=0),
                               c, rows)
            vals = s.to_numpy(dtype=dt, na_value=0.0) if valid is not None else s.to_numpy(dtype=dt)
            if spec.range is not None and vals.size:
                check_answers(spec, c, vals.astype(np.float64), ids, rows if isinstance(rows, int) else 0)
            out = noise.add(vals, c, rows, valid)
            if valid is not None:
                out[~valid] = np.nan
            pdf[c] = out.astype(dt, copy=False)
        return pdf

    return ddf.map_partitions(part, meta=meta)


def _records(ddf: Any, cols: list[str], noise: ColumnNoise, spec: Any) -> Any:
    """One noisy answer per unit: a Dask shuffle puts each unit in one partition, where
    :func:`puffer.publish.units.group_answers` checks it and computes the query as the file path does."""
    import pandas as pd

    need = [c for c in (spec.column, spec.order, *cols) if c is not None]
    meta = pd.DataFrame({spec.column: ddf._meta[spec.column],
                         **{spec.output_column(c): pd.Series([], dtype=np.float64) for c in cols}})

    def part(pdf: Any) -> Any:
        import pyarrow as pa

        from puffer.publish.units import group_answers

        if len(pdf) == 0:
            return meta.copy()
        answers, pos = group_answers(pa.Table.from_pandas(pdf[need], preserve_index=False), spec, cols)
        out = pd.DataFrame({spec.column: answers.column(spec.column).to_pandas()})
        out[spec.column] = out[spec.column].astype(meta[spec.column].dtype)
        for c in cols:
            out[spec.output_column(c)] = noise.add(answers.column(c).to_numpy(), c, pos)
        return out

    # computed once (persist), then sorted by unit: the file engine's order, whatever the shuffle
    noisy = ddf.shuffle(on=spec.column).map_partitions(part, meta=meta).persist()
    ordered = noisy.sort_values(spec.column).persist()
    # each partition's rows came with the index part() gave them (0, 1, ... in every partition):
    # the output's index is the row's place in the sorted output, unique across partitions
    lengths = [int(n) for n in ordered.map_partitions(len).compute()]
    starts = [int(v) for v in np.concatenate(([0], np.cumsum(np.asarray(lengths, dtype=np.int64))[:-1]))]

    def numbered(pdf: Any, partition_info: Any = None) -> Any:
        start = starts[partition_info["number"]]
        return pdf.set_axis(pd.RangeIndex(start, start + len(pdf)), axis=0)

    return ordered.map_partitions(numbered, meta=meta, clear_divisions=True)


def _unit_hashes(ddf: Any, column: str, hasher: UnitHasher) -> NDArray[np.uint64]:
    """The keyed hashes of the distinct ids of ``column`` (:mod:`puffer.publish.unitsets`),
    computed per partition on the workers (sorted hash bytes come back)."""
    from dask.delayed import delayed as dask_delayed

    def one(s: Any) -> bytes:
        ids = s.unique()
        return bytes(np.unique(hasher.hashes(np.asarray(ids))).astype("<u8").tobytes())

    delayed: Callable[..., Any] = dask_delayed
    blobs = _compute(*[delayed(one)(p) for p in ddf[column].to_delayed()])
    return np.unique(np.frombuffer(b"".join(blobs), dtype="<u8").astype(np.uint64))


def _compute(*xs: Any) -> tuple[Any, ...]:
    from dask.base import compute as dask_compute

    compute: Callable[..., tuple[Any, ...]] = dask_compute  # unannotated in dask
    return compute(*xs)


def add_noise(data: Any, columns: Any, mechanism: Any, *, options: PublishOptions | None = None,
              row_id: str | None = None, threads: int | None = 1, **keywords: Any) -> Any:
    """Publish ``columns`` of ``data`` (dask Array or DataFrame) with noise: the noisy collection,
    computed and persisted, with its ledger entry written by the driver before it is returned.

    The release's options are those of every engine (:func:`puffer.io.noise_file`):
    ``options=`` a :class:`~puffer.publish.PublishOptions` and/or its fields as keywords
    (``key``, ``ledger`` -- default ``puffer-ledger.jsonl`` in the working folder --,
    ``unit``/``order``/``per_unit``, ``allow_unnoised``, ``allow_uncomposed``, ``budget``,
    ``secure``, ``granularity``, ``select``, ``nulls``, ``insecure_seed``; an integer ``seed``
    is refused; ``rerun`` is for the file engine only). This engine's own: ``row_id``
    (DataFrames without a unit only, see the module doc), ``threads`` (threads per block).
    """
    try:
        import dask.array as da
        import dask.dataframe as dd
    except ModuleNotFoundError as exc:  # pragma: no cover - the test set-up installs it
        raise ModuleNotFoundError("puffer.dask needs dask: pip install 'puffer-privacy[dask]'") from exc

    opts = PublishOptions.of(options, **keywords)
    nulls, unit, order = opts.nulls, opts.unit, opts.order
    thr = threads_arg(threads)
    if opts.rerun is not None:
        raise ParameterError("rerun", opts.rerun, "None: re-runs are for the file engine (puffer.io.noise_file)")
    cols = as_columns(columns)
    is_array = isinstance(data, da.Array)
    if not is_array and not isinstance(data, dd.DataFrame):
        raise ParameterTypeError("data", data, "a dask.array.Array or a dask.dataframe.DataFrame")
    if row_id is not None and not isinstance(row_id, str):
        raise ParameterTypeError("row_id", row_id, "a column name or None")
    if is_array:
        if row_id is not None:
            raise ParameterError("row_id", row_id, "None for a dask array (rows are the first axis)")
        if unit is not None:
            raise ParameterError("unit", unit, "None for a dask array (no unit column; per_unit=True declares "
                                 "each row one unit's answer)")
        if nulls != "error":
            raise ParameterError("nulls", nulls, "'error' for a dask array (arrays have no nulls; NaN is an error)")
        _check_array(data, cols)
    else:
        _check_frame(data, cols, row_id, [("unit", unit), ("order", order)])
    op = prepare(mechanism, cols, opts, default_ledger=os.path.abspath("puffer-ledger.jsonl"))
    # a unit secret created for this release is removed again if the release is refused or fails
    with op.unit_secret_kept_if_recorded(), _quiet_shuffles():
        spec = op.spec
        if row_id is not None and spec.column is not None:
            raise ParameterError("row_id", row_id, "None with unit= (the unit ids are the stream positions)")
        if not is_array:
            op.check_input_types(lambda c: data.dtypes[c])
            if spec.column is not None:
                _converted_ids(data, spec.column)
        if is_array:
            src = data.persist()
            parts = _digests(_row_blocks(src), cols)
        else:
            src = data.persist()  # one computation of the input for the digest, the checks and the noise
            used = [c for c in dict.fromkeys([*cols, spec.column, spec.order, row_id]) if c is not None]
            parts = _digests(src[used].to_delayed(), used)
            if spec.column is not None:
                import pandas as pd

                if pd.api.types.is_object_dtype(src.dtypes[spec.column]):  # other dtypes hold one type
                    _one_id_type(src, spec.column)
            if row_id is not None:
                _unique_ids(src, row_id, "row_id", True)
            elif spec.mode == "answers" and spec.column is not None:
                _unique_ids(src, spec.column, "unit", False)
        units = None if is_array or op.hasher is None else _unit_hashes(src, cast(str, spec.column), op.hasher)
        rel = op.begin(input_sha256=combine_digests(parts), path_kind="dask", units=units)
        noise = op.noise(rel, threads=thr)
        if is_array:
            out = _array(src, cols, noise).persist()
            out_parts = _digests(_row_blocks(out), cols)
        elif spec.mode == "records":
            out = _records(src, cols, noise, spec).persist()
            ocols = [cast(str, spec.column), *map(spec.output_column, cols)]  # records: the unit and the answers
            out_parts = _digests(out[ocols].to_delayed(), ocols)
        else:
            out = _frame(src, cols, noise, spec, row_id, nulls, [p[0] for p in parts]).persist()
            out_parts = _digests(out[cols].to_delayed(), cols)
        rel.commit(combine_digests(out_parts), int(sum(p[0] for p in out_parts)),
                   extra={"digests": DIGEST_NOTE, "partitions": len(out_parts)})
        return out
