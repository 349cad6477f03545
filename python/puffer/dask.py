"""Noise on Dask arrays and DataFrames (optional extra ``puffer[dask]``).

:func:`add_noise` works block by block (``map_blocks`` / ``map_partitions``) with the blocks'
row offsets, so row ``r`` of column ``c`` gets value ``r`` of :func:`puffer.io.column_stream`
``(seed, c)`` whatever the chunking and the number of workers: the result is bitwise identical
to ``puffer.add_noise(x, noise, rng=column_stream(seed, c))`` on the computed column.

* Arrays: a 1-D array is one column (``columns`` = its name); an ``(n, d)`` array has ``d``
  columns named by a list of ``d`` names; rows are the first axis. Chunks along either axis.
* DataFrames: ``columns`` are column names; rows are numbered by position (partition order,
  one ``len`` pass to find the offsets) or by an integer ``row_id`` column (unique ids >= 0).
  Missing values (NaN / ``pd.NA``, pandas' null) are refused or, with ``nulls="keep"``, kept
  as they are without noise.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ParameterError, ParameterTypeError
from .io.arrow import nulls_arg
from .io.plan import add_rows, as_columns, column_stream, draw_seed, resolve, threads_arg

__all__ = ["add_noise"]


def _is_numeric(dtype: Any) -> bool:
    import pandas as pd

    return (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype)) \
        and not pd.api.types.is_bool_dtype(dtype) and np.dtype(getattr(dtype, "numpy_dtype", dtype)) != np.float16


def _out_dtype(dtype: Any) -> np.dtype:
    d = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    return np.dtype(np.float32) if d == np.float32 else np.dtype(np.float64)


def _array(arr: Any, cols: list[str], plan: Any, seed: Any, secure: bool, thr: Any, gran: Any) -> Any:
    if arr.ndim not in (1, 2):
        raise ParameterError("array", f"shape {arr.shape}", "a 1-D array (one column) or an (n, d) array")
    d = 1 if arr.ndim == 1 else arr.shape[1]
    if isinstance(d, float) and np.isnan(d):
        raise ParameterError("array", f"shape {arr.shape}", "a known number of columns")
    if len(cols) != d:
        raise ParameterError("columns", cols, f"{d} column name(s), one per column of the array (shape {arr.shape})")
    if arr.dtype.kind not in "iuf" or arr.dtype == np.float16:
        raise ParameterTypeError("array", f"dtype {arr.dtype}", "an integer or float32/float64 array")
    plan.check_columns(cols)
    out_dt = np.dtype(np.float32) if arr.dtype == np.float32 else np.dtype(np.float64)

    def block(x, block_info=None):
        loc = block_info[0]["array-location"]
        r0 = loc[0][0]
        x2 = x.reshape(x.shape[0], -1)
        out = np.empty(x2.shape, dtype=out_dt)
        c0 = 0 if x.ndim == 1 else loc[1][0]
        for j in range(x2.shape[1]):
            c = cols[c0 + j]
            st = None if secure else column_stream(seed, c)
            out[:, j] = add_rows(plan, x2[:, j].astype(out_dt, copy=False), st, r0, threads=thr,
                                 secure_granularity=gran, column=c)
        return out.reshape(x.shape)

    return arr.map_blocks(block, dtype=out_dt)


def _frame(ddf: Any, cols: list[str], plan: Any, seed: Any, secure: bool, thr: Any, gran: Any,
           row_id: Any, nulls: str) -> Any:
    names = list(ddf.columns)
    for c in cols + ([row_id] if row_id else []):
        if c not in names:
            raise ParameterError("columns" if c != row_id else "row_id", repr(c),
                                 f"a column of the DataFrame; it has {names}")
    for c in cols:
        if not _is_numeric(ddf.dtypes[c]):
            raise ParameterTypeError(f"column {c!r}", str(ddf.dtypes[c]), "an integer or floating-point column")
    if row_id is not None:
        import pandas as pd

        if row_id in cols:
            raise ParameterError("row_id", row_id, "a column that is not one of the noisy columns")
        if not pd.api.types.is_integer_dtype(ddf.dtypes[row_id]):
            raise ParameterTypeError("row_id", str(ddf.dtypes[row_id]), "an integer column of row ids")
        ids = ddf[row_id]
        n, distinct, nonnull, lo = (int(v) for v in _compute(ids.size, ids.nunique(), ids.count(), ids.min()))
        if nonnull != n:
            raise ParameterError("row_id", row_id, f"a column without nulls ({n - nonnull} null ids)")
        if distinct != n:
            raise ParameterError("row_id", row_id, f"unique row ids ({n - distinct} duplicates: rows sharing "
                                 "an id would share their noise)")
        if n and lo < 0:
            raise ParameterError("row_id", row_id, f"row ids >= 0 (minimum {lo})")
        offsets = None
    else:
        sizes = ddf.map_partitions(len).compute()
        offsets = [int(v) for v in np.concatenate(([0], np.cumsum(np.asarray(sizes))[:-1]))]
    plan.check_columns(cols)
    meta = ddf._meta.copy()
    for c in cols:
        meta[c] = meta[c].astype(_out_dtype(ddf.dtypes[c]))

    def part(pdf, partition_info=None):
        pdf = pdf.copy()
        if row_id is None:
            rows: Any = offsets[partition_info["number"]]
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
            dt = _out_dtype(s.dtype)
            vals = s.to_numpy(dtype=dt, na_value=0.0) if valid is not None else s.to_numpy(dtype=dt)
            out = add_rows(plan, vals, None if secure else column_stream(seed, c), rows, valid=valid,
                           threads=thr, secure_granularity=gran, column=c)
            if valid is not None:
                out[~valid] = np.nan
            pdf[c] = out
        return pdf

    return ddf.map_partitions(part, meta=meta)


def _compute(*xs: Any) -> tuple:
    import dask

    return dask.compute(*xs)


def add_noise(data: Any, columns: Any, mechanism: Any, *, seed: int | None = None, row_id: str | None = None,
              secure: bool = False, select: str | None = None, nulls: str = "error",
              granularity: float | None = None, threads: int | None = 1) -> Any:
    """``data`` (dask Array or DataFrame) with noise added to ``columns`` (lazy, like Dask).

    ``mechanism``: Mechanism, framework file/dict or plain noise (:func:`puffer.io.resolve`).
    ``seed``: int, or None for 128 bits of OS entropy. ``row_id``: DataFrames only (see module
    doc). ``threads``: threads per block (default 1: Dask already runs a task per core).
    """
    try:
        import dask.array as da
        import dask.dataframe as dd
    except ModuleNotFoundError as exc:  # pragma: no cover - the test set-up installs it
        raise ModuleNotFoundError("puffer.dask needs dask: pip install 'puffer[dask]'") from exc

    nulls = nulls_arg(nulls)
    thr = threads_arg(threads)
    plan = resolve(mechanism, select=select)
    if secure:
        if seed is not None:
            raise ParameterError("seed", seed, "None in secure mode (keys come from OS entropy only)")
        wplan = plan.for_workers(secure=True, granularity=granularity)
    else:
        if granularity is not None:
            raise ParameterError("granularity", granularity, "None unless secure=True")
        seed = draw_seed() if seed is None else seed
        wplan = plan.for_workers()
    if isinstance(data, da.Array):
        if row_id is not None:
            raise ParameterError("row_id", row_id, "None for a dask array (rows are the first axis)")
        if nulls != "error":
            raise ParameterError("nulls", nulls, "'error' for a dask array (arrays have no nulls; NaN is an error)")
        cols = as_columns(columns)
        plan.check_columns(cols)
        if seed is not None:
            column_stream(seed, cols[0])
        return _array(data, cols, wplan, seed, secure, thr, granularity)
    if isinstance(data, dd.DataFrame):
        cols = as_columns(columns)
        if seed is not None:
            column_stream(seed, cols[0])
        if row_id is not None and not isinstance(row_id, str):
            raise ParameterTypeError("row_id", row_id, "a column name or None")
        return _frame(data, cols, wplan, seed, secure, thr, granularity, row_id, nulls)
    raise ParameterTypeError("data", type(data).__name__, "a dask.array.Array or a dask.dataframe.DataFrame")
from ._cluster_w_inf import dask_w_inf as w_inf  # noqa: E402,F401  (Markov Delta_G on the workers)
