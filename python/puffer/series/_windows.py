"""Validation of a series' windows on a framework's horizon."""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError

__all__ = ["check_windows"]


def _int(name: str, x: Any) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
        raise ParameterTypeError(name, x, "an integer position")
    return int(x)


def check_windows(windows: Any, T: int) -> tuple[tuple[int, int], ...]:
    """The windows as a tuple of half-open (start, stop) position ranges on a horizon of ``T``
    positions (0 .. T - 1): each 0 <= start < stop <= T, sorted and disjoint (stop_k <=
    start_{k+1}). An int LEN means consecutive windows of LEN positions covering the horizon
    (T must be a multiple of LEN). Anything else is refused, naming the window.

    >>> check_windows(4, 12)
    ((0, 4), (4, 8), (8, 12))
    >>> check_windows([(0, 3), (5, 9)], 12)
    ((0, 3), (5, 9))
    >>> check_windows([(0, 5), (4, 9)], 12)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'windows[1]' = (4, 9): expected a window starting at or after the end of windows[0] = (0, 5) (windows sorted and disjoint)
    """
    if isinstance(windows, (numbers.Integral, np.integer)) and not isinstance(windows, (bool, np.bool_)):
        n = int(windows)
        if n < 1 or n > T:
            raise ParameterError("windows", n, f"a window length in [1, {T}] (the horizon has T = {T} positions)")
        if T % n:
            raise ParameterError("windows", n, f"a window length dividing the horizon T = {T} (consecutive windows "
                                 "covering it), or a list of (start, stop) ranges")
        return tuple((i, i + n) for i in range(0, T, n))
    if isinstance(windows, (str, bytes)) or not isinstance(windows, (Sequence, np.ndarray)):
        raise ParameterTypeError("windows", windows, "a sequence of (start, stop) position ranges or a window length")
    out: list[tuple[int, int]] = []
    for i, w in enumerate(windows):
        name = f"windows[{i}]"
        if isinstance(w, (str, bytes)) or not isinstance(w, (Sequence, np.ndarray)) or len(w) != 2:
            raise ParameterTypeError(name, w, "a (start, stop) pair of positions")
        a, b = _int(f"{name}.start", w[0]), _int(f"{name}.stop", w[1])
        if not 0 <= a < b <= T:
            raise ParameterError(name, (a, b), f"a half-open range 0 <= start < stop <= T = {T}")
        if out and a < out[-1][1]:
            raise ParameterError(name, (a, b), f"a window starting at or after the end of windows[{i - 1}] = "
                                 f"{out[-1]} (windows sorted and disjoint)")
        out.append((a, b))
    if not out:
        raise ParameterError("windows", "an empty sequence", "at least one window")
    return tuple(out)
