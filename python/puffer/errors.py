"""puffer's exceptions.

Every error raised on bad input is a :class:`PufferError` that also derives from the
built-in class a numpy/scipy user would catch (``ValueError`` or ``TypeError``), and its
message names the parameter, the value received and what was expected::

    >>> import puffer
    >>> puffer.PP(eps=-1.0)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'eps' = -1.0: expected a number >= 0
"""
from __future__ import annotations

import re
from typing import Any

__all__ = [
    "PufferError",
    "ParameterError",
    "ParameterTypeError",
    "NumericalError",
    "UnboundedSensitivityError",
    "PufferIOError",
    "LedgerError",
    "ClusterError",
]


# numpy >= 2 reprs of scalars (np.float64(0.3), np.True_): shown as the plain value
_NP_REPR = re.compile(r"\bnp\.(?:float|int|uint|complex|longdouble|clongdouble|bool|str|bytes)\d*_?\(([^()]*)\)")
_NP_BOOL = re.compile(r"\bnp\.(True|False)_")
# a string value with none of these reads as a value the user gave (shown quoted, with its type
# when it looks like a number); with one, it is a description written by puffer (shown as is)
_DESCRIPTIVE = re.compile(r"[\s<>()\[\]{}=:,'\"]")
_LINES = re.compile(r"\s*\n\s*")


def _plain(value: Any, depth: int = 0) -> Any:
    """numpy scalars as Python scalars, also inside small lists, tuples and dicts."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    if depth < 3 and type(value) in (list, tuple) and len(value) <= 64:
        return type(value)(_plain(v, depth + 1) for v in value)
    if depth < 3 and type(value) is dict and len(value) <= 64:
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in value.items()}
    return value


def _looks_numeric(text: str) -> bool:
    if text.strip().lower() in ("true", "false", "none", "null", "nan", "inf", "-inf", "+inf"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _clean(text: str) -> str:
    """A message without numpy-2 scalar reprs."""
    return _NP_BOOL.sub(r"\1", _NP_REPR.sub(r"\1", text))


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, str) and _DESCRIPTIVE.search(value):
        text = value                       # a description ("array of shape (3,)", "<missing>")
    else:
        text = repr(_plain(value))         # a value: '24' is not 24, 'stat' is a string
        text = _LINES.sub(" ", text.strip())   # a multi-line repr (an array, a frame) on one line
    text = _clean(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value: Any, *, typed: bool) -> str:
    """The value as a message shows it: repr-like, with its type where it matters (always for a
    type error; for a string that reads like a number, '24' (type str), in a value error)."""
    text = _short(value)
    described = isinstance(value, str) and bool(_DESCRIPTIVE.search(value))   # a description has no type
    if (typed and not described) or (isinstance(value, str) and not described and _looks_numeric(value)):
        text += f" (type {type(value).__name__})"
    return text


def _param(param: str) -> str:
    # a name that holds quotes itself (column 'x') is not quoted again
    return param if "'" in param else f"'{param}'"


class PufferError(Exception):
    """Base class of every exception puffer raises on purpose."""


class ParameterError(PufferError, ValueError):
    """A parameter has the right type but a bad value (NaN, out of range, inconsistent)."""

    def __init__(self, param: str, value: Any, expected: str):
        self.param = param
        self.value = value
        self.expected = expected
        super().__init__(_clean(f"parameter {_param(param)} = {_value(value, typed=False)}: expected {expected}"))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:  # picklable across processes (Spark/Dask workers)
        return (type(self), (self.param, self.value, self.expected))


class ParameterTypeError(PufferError, TypeError):
    """A parameter has the wrong type (a string where a number is needed, a ragged list, ...)."""

    def __init__(self, param: str, value: Any, expected: str):
        self.param = param
        self.value = value
        self.expected = expected
        super().__init__(_clean(f"parameter {_param(param)} = {_value(value, typed=True)}: expected {expected}"))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (self.param, self.value, self.expected))


class NumericalError(PufferError, ArithmeticError):
    """A quantity could not be certified (quadrature failed to converge, overflow, ...).

    puffer raises this instead of returning a number that might under-report privacy loss.
    """


class UnboundedSensitivityError(PufferError, ValueError):
    """A sensitivity (e.g. W-infinity between two conditional laws) is infinite, so no amount
    of the requested additive noise gives a finite guarantee. ``reason`` says why."""

    def __init__(self, reason: str, witness: Any = None):
        self.reason = reason
        self.witness = witness
        super().__init__(_clean(f"sensitivity is unbounded: {reason}"))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (self.reason, self.witness))


class PufferIOError(PufferError, OSError):
    """A file-system operation of a release failed (disk full, read-only or missing folder,
    permission denied, a lock held by another process). ``path`` names the file, ``what``
    the step; nothing was published without its ledger entry. ``puffer`` exits with code 6."""

    def __init__(self, path: Any, what: str, reason: Any = ""):
        self.path = path
        self.what = what
        self.reason = reason
        super().__init__(f"{what} failed for {path!s}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (self.path, self.what, self.reason))


class LedgerError(PufferError, ValueError):
    """A release ledger failed verification: ``entry`` is the 0-based line index, ``reason``
    says what (an edited, deleted or reordered entry). ``puffer ledger verify`` exits with 7."""

    def __init__(self, path: Any, entry: int, reason: str):
        self.path, self.entry, self.reason = path, entry, reason
        super().__init__(f"ledger {path!s}: entry {entry} (line {entry + 1}): {reason}")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (self.path, self.entry, self.reason))


class ClusterError(PufferError, RuntimeError):
    """A Spark/Dask computation could not deliver every part of its result (e.g. a slice of the
    Markov W table of :func:`puffer.dask.w_inf`): no partial result is returned."""
