"""Noise on Arrow record batches (shared by the file engine and the Spark ``mapInArrow`` engine).

Only integer and floating columns are accepted (booleans, decimals, strings, lists are not
numbers puffer releases). float32 stays float32; every other numeric type becomes float64.
Nulls: ``nulls="error"`` (default) refuses them; ``nulls="keep"`` leaves a null row null and
adds no noise there (the row still owns its stream position).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ParameterError, ParameterTypeError
from ..noise import ColumnNoise
from ..options import NULLS
from ..values import check_integers

__all__ = ["pyarrow", "check_schema", "output_schema", "column_values", "noise_batch", "NULLS"]


def pyarrow() -> Any:
    """pyarrow, or a clear error naming the extra to install."""
    try:
        import pyarrow as pa
    except ModuleNotFoundError as exc:  # pragma: no cover - the test set-up installs it
        raise ModuleNotFoundError("puffer.io needs pyarrow: pip install 'puffer-privacy[io]'") from exc
    return pa


def _numeric(t: Any) -> bool:
    pa = pyarrow()
    return pa.types.is_integer(t) or (pa.types.is_floating(t) and not pa.types.is_float16(t))


def check_schema(schema: Any, columns: list[str], where: str = "input", row_id: str | None = None) -> None:
    """Every column exists and is numeric (and the row-id column, if any, is an integer)."""
    pa = pyarrow()
    names = list(schema.names)
    for c in columns + ([row_id] if row_id else []):
        if c not in names:
            raise ParameterError("columns" if c != row_id else "row_id", repr(c),
                                 f"a column of the {where}; it has {names}")
    for c in columns:
        t = schema.field(c).type
        if not _numeric(t):
            raise ParameterTypeError(f"column {c!r}", str(t), "an integer or floating-point column "
                                     "(float16, bool, decimal, string and nested columns are not released)")
    if row_id is not None:
        if row_id in columns:
            raise ParameterError("row_id", row_id, "a column that is not one of the noisy columns")
        if not pa.types.is_integer(schema.field(row_id).type):
            raise ParameterTypeError("row_id", str(schema.field(row_id).type), "an integer column of row ids")


def output_schema(schema: Any, columns: list[str], *, lattice: bool = False) -> Any:
    """The output schema: the noised ``columns`` as float64 (float32 stays float32 with float
    noise; lattice points are float64, exact up to 2^53 lattice steps), the others unchanged."""
    pa = pyarrow()
    fields = []
    for f in schema:
        if f.name in columns:
            t = pa.float32() if pa.types.is_float32(f.type) and not lattice else pa.float64()
            f = pa.field(f.name, t, nullable=f.nullable, metadata=f.metadata)
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)


def _row_of(rows: Any, i: int) -> int:
    """The row number of a batch's i-th row; ``rows``: the first row (int) or the row ids."""
    return int(rows + i) if isinstance(rows, (int, np.integer)) else int(np.asarray(rows)[i])


def column_values(arr: Any, column: str, rows: Any, nulls: str, t: Any) -> tuple[Any, Any]:
    """(values as the output type ``t``'s dtype, validity mask or None) of one Arrow array.

    Nulls are refused (``nulls="error"``) or set to 0 and masked (``"keep"``); 64-bit integers
    beyond 2^53 are refused: float64 cannot hold them, and the noise would land on a rounded
    value (the files, Spark and Dask paths all read their columns here)."""
    valid = None
    if arr.null_count:
        if nulls == "error":
            first = int(np.flatnonzero(~np.asarray(arr.is_valid()))[0])
            raise ParameterError(f"column {column!r}", f"null at row {_row_of(rows, first)}",
                                 "no nulls (or nulls='keep' to leave null rows null, without noise)")
        valid = np.asarray(arr.is_valid(), dtype=bool)
        arr = arr.fill_null(0)
    raw = arr.to_numpy(zero_copy_only=False)
    check_integers(raw, column, rows)
    return raw.astype(t.to_pandas_dtype(), copy=False), valid


def noise_batch(batch: Any, noise: ColumnNoise, columns: list[str], rows: Any, *, nulls: str = "error",
                out_schema: Any = None) -> Any:
    """``batch`` with the release's ``noise`` added to ``columns``; ``rows``: the first
    position (int) or the positions of the batch's rows (:class:`~puffer.publish.noise.ColumnNoise`)."""
    pa = pyarrow()
    arrays = list(batch.columns)
    names = batch.schema.names
    out_schema = output_schema(batch.schema, columns, lattice=noise.lattice is not None) if out_schema is None \
        else out_schema
    for c in columns:
        i = names.index(c)
        arr = arrays[i]
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        t = out_schema.field(c).type
        vals, valid = column_values(arr, c, rows, nulls, t)
        noisy = noise.add(vals, c, rows, valid)
        arrays[i] = pa.array(noisy.astype(t.to_pandas_dtype(), copy=False), type=t,
                             mask=None if valid is None else ~valid)
    return pa.RecordBatch.from_arrays(arrays, schema=out_schema)
