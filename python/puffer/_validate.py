"""Argument checks shared by the facade. Each raises a puffer exception naming the parameter,
the value and what was expected; none silently clips or coerces a bad value."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .errors import ParameterError, ParameterTypeError


def real(name: str, x: Any, *, lo: float = -math.inf, hi: float = math.inf,
         lo_open: bool = False, hi_open: bool = False, allow_inf: bool = False,
         expected: str | None = None) -> float:
    """Return x as a Python float after checking type, NaN and the interval."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        raise ParameterTypeError(name, x, expected or "a real number")
    try:
        v = float(x)
    except OverflowError:  # an int beyond the float range: never silently inf
        raise ParameterError(name, x, (expected or "a real number") + " (within the float range)") from None
    lo_s = "(" if lo_open else "["
    hi_s = ")" if hi_open else "]"
    desc = expected or f"a number in {lo_s}{lo}, {hi}{hi_s}"
    if math.isnan(v):
        raise ParameterError(name, x, desc + " (not NaN)")
    if math.isinf(v) and not allow_inf:
        raise ParameterError(name, x, desc + " (finite)")
    if v < lo or (lo_open and v == lo) or v > hi or (hi_open and v == hi):
        raise ParameterError(name, x, desc)
    return v


def positive(name: str, x: Any, *, allow_inf: bool = False) -> float:
    return real(name, x, lo=0.0, lo_open=True, allow_inf=allow_inf, expected="a number > 0")


def nonneg(name: str, x: Any, *, allow_inf: bool = False) -> float:
    return real(name, x, lo=0.0, allow_inf=allow_inf, expected="a number >= 0")


def alpha(name: str, x: Any, *, allow_inf: bool = True) -> float:
    """Renyi order: alpha > 1, +inf allowed (alpha = inf is pure PP)."""
    return real(name, x, lo=1.0, lo_open=True, allow_inf=allow_inf,
                expected="a Renyi order > 1" + (" (inf allowed)" if allow_inf else ""))


def delta(name: str, x: Any) -> float:
    """A failure probability in [0, 1)."""
    return real(name, x, lo=0.0, hi=1.0, hi_open=True, expected="a probability in [0, 1)")


def delta_open(name: str, x: Any) -> float:
    """A failure probability in (0, 1) (needed where log(1/delta) appears)."""
    return real(name, x, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                expected="a probability in (0, 1)")


def integer(name: str, x: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
        raise ParameterTypeError(name, x, "an integer")
    v = int(x)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else (f"<= {hi}" if lo is None else f"in [{lo}, {hi}]")
        raise ParameterError(name, x, f"an integer {rng}")
    return v


# The largest threads= any kernel accepts (cpp/common/parallel.hpp kMaxThreads; exported as
# puffer.sampling.MAX_THREADS). 0 means all cores where a function allows it.
MAX_THREADS = 256


def threads(x: Any, *, lo: int = 0, name: str = "threads") -> int:
    return integer(name, x, lo=lo, hi=MAX_THREADS)


def float_array(name: str, x: Any, *, ndim: int | tuple[int, ...] | None = None,
                finite: bool = True, allow_empty: bool = False) -> np.ndarray:
    """Convert to a float64 array; reject ragged input, complex, datetime and string dtypes,
    wrong ndim, NaN (and inf if finite). Nothing is dropped silently (e.g. an imaginary part)."""
    check_real_dtype(name, x)
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterTypeError(name, x, "an array of real numbers") from exc
    if ndim is not None:
        dims = (ndim,) if isinstance(ndim, int) else ndim
        if a.ndim not in dims:
            raise ParameterError(name, f"array of shape {a.shape}",
                                 f"an array with ndim in {dims}")
    if not allow_empty and a.size == 0:
        raise ParameterError(name, f"array of shape {a.shape}", "a non-empty array")
    if np.isnan(a).any():
        raise ParameterError(name, f"array with NaN at index {_first(np.isnan(a))}", "no NaN")
    if finite and np.isinf(a).any():
        raise ParameterError(name, f"array with inf at index {_first(np.isinf(a))}", "finite values")
    return a


_NOT_REAL = {"c": "complex", "M": "datetime64", "m": "timedelta64", "S": "bytes", "U": "str",
             "V": "structured"}


def check_real_dtype(name: str, x: Any) -> None:
    """Reject arrays whose dtype is not real-valued (complex, datetime, strings): converting
    them to float would drop information or invent numbers."""
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is None and isinstance(x, (list, tuple)):
        try:
            kind = np.asarray(x).dtype.kind
        except (TypeError, ValueError):
            kind = None
    if isinstance(x, (complex, np.complexfloating)):
        kind = "c"
    if kind in _NOT_REAL:
        raise ParameterTypeError(name, x, f"real numbers (got {_NOT_REAL[kind]} values)")


def _first(mask: np.ndarray) -> tuple[int, ...] | int:
    idx = np.argwhere(mask)[0]
    return int(idx[0]) if idx.size == 1 else tuple(int(i) for i in idx)
