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

from typing import Any

__all__ = [
    "PufferError",
    "ParameterError",
    "ParameterTypeError",
    "NumericalError",
    "UnboundedSensitivityError",
    "PufferIOError",
    "LedgerError",
]


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class PufferError(Exception):
    """Base class of every exception puffer raises on purpose."""


class ParameterError(PufferError, ValueError):
    """A parameter has the right type but a bad value (NaN, out of range, inconsistent)."""

    def __init__(self, param: str, value: Any, expected: str):
        self.param = param
        self.value = value
        self.expected = expected
        super().__init__(f"parameter '{param}' = {_short(value)}: expected {expected}")

    def __reduce__(self):  # picklable across processes (Spark/Dask workers)
        return (type(self), (self.param, self.value, self.expected))


class ParameterTypeError(PufferError, TypeError):
    """A parameter has the wrong type (a string where a number is needed, a ragged list, ...)."""

    def __init__(self, param: str, value: Any, expected: str):
        self.param = param
        self.value = value
        self.expected = expected
        super().__init__(
            f"parameter '{param}' = {_short(value)} (type {type(value).__name__}): expected {expected}"
        )

    def __reduce__(self):
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
        super().__init__(f"sensitivity is unbounded: {reason}")

    def __reduce__(self):
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

    def __reduce__(self):
        return (type(self), (self.path, self.what, self.reason))


class LedgerError(PufferError, ValueError):
    """A release ledger failed verification: ``entry`` is the 0-based line index, ``reason``
    says what (an edited, deleted or reordered entry). ``puffer ledger verify`` exits with 7."""

    def __init__(self, path: Any, entry: int, reason: str):
        self.path, self.entry, self.reason = path, entry, reason
        super().__init__(f"ledger {path!s}: entry {entry} (line {entry + 1}): {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.entry, self.reason))
