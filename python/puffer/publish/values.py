"""What the released values themselves must satisfy, on every engine (file, Spark, Dask).

Noise is added in floating point, so a value is released exactly only where the float spacing
at it is finer than the noise:

* integers beyond 2^53 are refused before they are converted (float64 cannot hold them: 2^53 + 1
  would become 2^53 and the noise land on a rounded value), :func:`check_integers`;
* float values beyond 2^53 (2^24 for a float32 column, which stays float32) are refused
  (:func:`check_floats`): the spacing there is 2 or more, so noise of scale 1 is rounded away;
  2^60 or 1e308 would be published exactly;
* noise below the data's resolution is refused unless ``allow_unnoised``: the noise scale must
  be at least :data:`RESOLUTION` float spacings at the largest value of the batch. A share of
  about ``spacing / (2 scale)`` of Laplace-noised values (``0.4 spacing / sigma`` for Gaussian)
  comes out unchanged, i.e. published raw; at 1024 spacings that is below 1/2000. ``--scale
  1e-300`` on raw readings published every value unchanged.

Every check names the column, the value and its row (or position); nothing is written before.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError

__all__ = ["check_integers", "check_floats", "RESOLUTION"]

#: the least noise scale, in float spacings at the largest value of a batch
RESOLUTION = 1024


def _where(rows: Any, i: int) -> str:
    """'row r' of a batch's i-th value; ``rows``: the first row (int) or the rows/positions."""
    r = int(rows + i) if isinstance(rows, (int, np.integer)) else int(np.asarray(rows)[i])
    return f"row {r}"


def check_integers(raw: np.ndarray, column: str, rows: Any) -> None:
    """64-bit integers with |x| > 2^53 refused (before any conversion to float64)."""
    if raw.dtype.kind not in "iu" or raw.dtype.itemsize < 8 or raw.size == 0:
        return
    big = np.flatnonzero((raw > 2**53) | (raw < -(2**53)) if raw.dtype.kind == "i" else raw > 2**53)
    if big.size:
        i = int(big[0])
        raise ParameterError(f"column {column!r}", f"{int(raw[i])} at {_where(rows, i)}",
                             "integers with |x| <= 2^53 (exact in the float64 output; beyond, the spacing of "
                             "floats swallows the noise)")


def check_floats(vals: np.ndarray, column: str, rows: Any, *, scale: float | None, allow_unnoised: bool) -> None:
    """Finite float values with |x| <= 2^53 (2^24 for float32), and, unless ``allow_unnoised``,
    a noise ``scale`` of at least :data:`RESOLUTION` spacings at the largest |x| (see the module
    docstring). ``scale`` None: no noise (zero sensitivity), nothing to compare.

    >>> check_floats(np.array([1.5, 2.0**60]), "x", 0, scale=1.0, allow_unnoised=False)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter column 'x' = 1.152921504606847e+18 at row 1: expected ...
    >>> check_floats(np.array([1.5, 2.0]), "x", 0, scale=1e-300, allow_unnoised=False)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'allow_unnoised' = False: expected permission to publish ...
    """
    if vals.size == 0 or vals.dtype.kind != "f":
        return
    lo, hi = vals.min(), vals.max()  # two reductions, no temporary: NaN propagates into both
    top = max(-lo, hi)
    bits = np.finfo(vals.dtype).nmant + 1
    if not np.isfinite(top):
        i = int(np.flatnonzero(~np.isfinite(vals))[0])
        raise ParameterError(f"column {column!r}", f"{vals[i]} at {_where(rows, i)}",
                             "finite values (NaN and +-inf cannot be released)")
    i = 0 if top <= 2.0**bits and (scale is None or allow_unnoised or scale >= RESOLUTION * float(np.spacing(top))) \
        else int(np.argmax(vals) if hi >= -lo else np.argmin(vals))  # the row to name: only for an error
    if top > 2.0**bits:
        raise ParameterError(f"column {column!r}", f"{float(vals[i])!r} at {_where(rows, i)}",
                             f"|x| <= 2^{bits} ({vals.dtype} values; beyond, the float spacing is 2 or more and "
                             "swallows the noise, so values such as 2^60 or 1e308 would be published exactly)")
    if scale is None or allow_unnoised:
        return
    spacing = float(np.spacing(top))
    if not scale >= RESOLUTION * spacing:
        raise ParameterError("allow_unnoised", False,
                             f"permission to publish values the noise cannot change: its scale {scale:.3g} is below "
                             f"the resolution of column {column!r} ({RESOLUTION} float spacings at its largest "
                             f"value {float(vals[i]):.6g}, {_where(rows, i)}, = {RESOLUTION * spacing:.3g}), so "
                             "many values would come out unchanged. Use a larger scale, or pass "
                             "allow_unnoised=True / --allow-unnoised if that is intended")
