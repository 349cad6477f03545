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


def boolean(name: str, x: Any) -> bool:
    """True or False (numpy bools too); anything else, 0/1 and arrays included, is refused."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise ParameterTypeError(name, x, "True or False")


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


def _is_pandas(x: Any) -> bool:
    t = type(x)
    return t.__module__.split(".")[0] == "pandas" and t.__name__ in ("Series", "DataFrame")


def _has_bool(seq: Any, depth: int = 0) -> bool:
    for v in seq:
        if isinstance(v, (bool, np.bool_)):
            return True
        if depth < 32 and isinstance(v, (list, tuple)) and _has_bool(v, depth + 1):
            return True
    return False


def release_values(name: str, values: Any) -> tuple[np.ndarray, Any]:
    """The values a release adds noise to, as a float64 (or float32) array, and a function that
    gives the result the input's form back: a pandas Series keeps its index and name, a
    DataFrame its index and columns; anything else comes back as the array.

    Refused, since the noise would be added to something else than what was given: bool values
    (True/False are no count: cast explicitly, e.g. ``values.astype(float)``), integers that
    float64 cannot hold exactly (|v| > 2^53, not a double: the noise would land on a rounded
    value), complex, datetime and string values. float32/float64 arrays pass through uncopied.

    >>> import numpy as np
    >>> release_values("values", np.array([2**53 + 1]))
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'values' = 9007199254740993 at index 0: expected integers that float64 holds exactly ...
    """
    def keep(res: Any) -> Any:
        return res

    wrap = keep
    if _is_pandas(values):
        pd_obj = values
        if type(values).__name__ == "Series":
            def wrap(res: Any) -> Any:   # noqa: F811
                return type(pd_obj)(res, index=pd_obj.index, name=pd_obj.name, copy=False)
        else:
            def wrap(res: Any) -> Any:   # noqa: F811
                return type(pd_obj)(res, index=pd_obj.index, columns=pd_obj.columns, copy=False)
        dts = [values.dtype] if type(values).__name__ == "Series" else list(values.dtypes)
        if any(getattr(d, "kind", None) == "b" or str(d) == "boolean" for d in dts):
            raise ParameterTypeError(name, f"a pandas {type(values).__name__} of bool values",
                                     "real numbers (noise on True/False is no count: cast explicitly, "
                                     "e.g. values.astype(float))")
        try:
            values = values.to_numpy()
        except (TypeError, ValueError) as exc:
            raise ParameterTypeError(name, f"a pandas {type(pd_obj).__name__}", "real numbers") from exc
    if isinstance(values, np.ndarray) and values.dtype in (np.float32, np.float64):
        return values, wrap
    if isinstance(values, (bool, np.bool_)) or (isinstance(values, (list, tuple)) and _has_bool(values)):
        kind = "b"       # a list mixing bools with numbers would convert them to 0.0 / 1.0 silently
    else:
        check_real_dtype(name, values)   # no imaginary part or datetime silently dropped
        try:
            raw = values if isinstance(values, np.ndarray) else np.asarray(values)
        except (TypeError, ValueError) as exc:
            raise ParameterTypeError(name, values, "an array of real numbers") from exc
        kind = raw.dtype.kind
    if kind == "b":
        raise ParameterTypeError(name, values, "real numbers, not bool values (noise on True/False is no count: "
                                 "cast explicitly, e.g. values.astype(float))")
    if kind in "iuO":
        flat = raw.reshape(-1)
        if kind == "O":
            big = [i for i, v in enumerate(flat.tolist())
                   if isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Integral) and abs(int(v)) > 2**53)]
        else:
            big = np.flatnonzero((flat > 2**53) | (flat < -2**53)).tolist() if flat.size else []
        for i in big:
            v = flat[i]
            if isinstance(v, (bool, np.bool_)):
                raise ParameterTypeError(name, f"bool value {v} at index {i}",
                                         "real numbers, not bool values (cast explicitly)")
            try:
                exact = int(float(v)) == int(v)
            except OverflowError:
                exact = False
            if not exact:
                raise ParameterError(name, f"{int(v)} at index {i}",
                                     "integers that float64 holds exactly (|v| <= 2^53, or a double): the noise "
                                     "would be added to a rounded value; scale or split the values first")
    try:
        src = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterTypeError(name, values, "an array of real numbers") from exc
    return src, wrap
