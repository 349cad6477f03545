"""Golden-section search, shared by the RPP->PP order refinement and the (eps, delta) noise
calibration. Only tightness depends on it: callers evaluate certified quantities at whatever
point it returns."""
from __future__ import annotations

import math
from collections.abc import Callable

_G = (math.sqrt(5.0) - 1.0) / 2.0


def golden_min(f: Callable[[float], float], lo: float, hi: float, *, iters: int,
               tol: float) -> tuple[float, float]:
    """(t, f(t)) for the smallest value of f seen while narrowing [lo, hi] by golden section
    (at most ``iters`` steps, until the bracket is narrower than ``tol``)."""
    c, d = hi - _G * (hi - lo), lo + _G * (hi - lo)
    fc, fd = f(c), f(d)
    best_t, best_v = (c, fc) if fc <= fd else (d, fd)
    for _ in range(iters):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - _G * (hi - lo)
            fc = f(c)
            t, v = c, fc
        else:
            lo, c, fc = c, d, fd
            d = lo + _G * (hi - lo)
            fd = f(d)
            t, v = d, fd
        if v < best_v:
            best_t, best_v = t, v
        if hi - lo < tol:
            break
    return best_t, best_v
