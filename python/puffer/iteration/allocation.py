"""Shift allocations for privacy amplification by iteration.

Shift allocations for privacy amplification by iteration (Pierquin, Bellet, Tommasi, Boussard
2024, Thm 5.2; Feldman, Mironov, Talwar, Thakurta 2018).

Thm 5.2 bounds D_alpha(W_T || W'_T) by sum_t R_alpha(zeta_t, a_t) for any allocation a_t >= 0 whose
prefix sums A_t = a_1 + ... + a_t stay below the cumulative shifts S_t = s_1 + ... + s_t and meet
them at the end (A_T = S_T). The allocations offered:

* :func:`optimal_allocation` -- the greatest convex minorant of (t, S_t) ("taut string", O(T),
  computed in C++). Its increments are majorised by those of every feasible allocation, so it
  minimises sum_t phi(a_t) for *every* convex phi at once: it is optimal for any identical noise
  with R_alpha(zeta, .) convex (Gaussian, Laplace), at every alpha. For Gaussian noise of
  varying sigma_t the same construction in the reparametrised time tau_t = sigma_1^2 + ... +
  sigma_t^2 minimises sum_t a_t^2 / sigma_t^2 (``sigma2=``). Not printed in the paper; it
  reproduces the paper's allocations as special cases.
* :func:`paper_allocation` -- a_t = s_t (the paper's §6.4 bound, "formula (2)").
* :func:`uniform_allocation` -- a_t = S_T / T (Prop F.2; feasible only for non-increasing s_t,
  "formula (1)").
* :func:`single_step_allocation` -- a_t = s_i / (T - i + 1) for t >= i when only step i shifts
  (Lemma F.1 = Feldman et al. 2018, Thm 23).

:func:`certified_allocation` turns any floating-point allocation into shifts whose R-sum is a
certified bound (rounding of prefix sums absorbed on the last step).
"""
from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _validate as V
from .._core import iteration as _K
from ..errors import ParameterError

__all__ = ["optimal_allocation", "paper_allocation", "uniform_allocation", "single_step_allocation",
           "certified_allocation", "check_allocation"]

_U = np.finfo(np.float64).eps / 2.0   # unit roundoff


def _shifts(shifts: Any) -> np.ndarray:
    s = V.float_array("shifts", shifts, ndim=1)
    if (s < 0).any():
        i = int(np.argmax(s < 0))
        raise ParameterError("shifts", f"shifts[{i}] = {s[i]!r}", "shifts s_t >= 0 (W_inf bounds)")
    return np.ascontiguousarray(s)


def optimal_allocation(shifts: Any, sigma2: Any = None) -> np.ndarray:
    """The optimal shift allocation a_t (greatest convex minorant of the cumulative shifts).

    ``shifts``: s_1..s_T >= 0. ``sigma2``: None (identical noise) or the per-step Gaussian
    variances sigma_t^2 (a scalar or one per step) for the reparametrised time tau_t.

    >>> optimal_allocation([0, 0, 1, 0, 0]).round(12).tolist()
    [0.0, 0.0, 0.333333333333, 0.333333333333, 0.333333333333]
    >>> optimal_allocation([1, 0.5, 0.25, 0.1]).tolist()
    [0.4625, 0.4625, 0.4625, 0.4625]
    """
    s = _shifts(shifts)
    if sigma2 is None:
        return _K.taut_string(s, None)
    w = V.float_array("sigma2", sigma2, ndim=(0, 1))
    if w.ndim == 0:
        w = np.full(s.shape, float(w))
    if w.shape != s.shape:
        raise ParameterError("sigma2", f"array of shape {w.shape}", f"a scalar or one variance per step ({s.size})")
    if not (w > 0).all():
        raise ParameterError("sigma2", float(w[np.argmax(~(w > 0))]), "variances sigma_t^2 > 0")
    return _K.taut_string(s, np.ascontiguousarray(w))


def paper_allocation(shifts: Any) -> np.ndarray:
    """a_t = s_t: each step absorbs its own shift (Pierquin et al. 2024, §6.4, "formula (2)").

    >>> paper_allocation([1.0, 0.5]).tolist()
    [1.0, 0.5]
    """
    return cast(np.ndarray, _shifts(shifts).copy())


def uniform_allocation(shifts: Any) -> np.ndarray:
    """a_t = (s_1 + ... + s_T) / T (Pierquin et al. 2024, Prop F.2, "formula (1)"); feasible
    only when the shifts are non-increasing (otherwise a ParameterError names the first rise).

    >>> uniform_allocation([1, 0.5, 0.25, 0.1]).tolist()
    [0.4625, 0.4625, 0.4625, 0.4625]
    """
    s = _shifts(shifts)
    rise = np.diff(s) > 0
    if rise.any():
        t = int(np.argmax(rise)) + 1
        raise ParameterError("shifts", f"s[{t}] = {s[t]!r} > s[{t - 1}] = {s[t - 1]!r}",
                             "non-increasing shifts for the uniform allocation of Prop F.2 "
                             "(use allocation='optimal')")
    return np.full(s.shape, math.fsum(s.tolist()) / s.size)


def single_step_allocation(shifts: Any) -> np.ndarray:
    """Lemma F.1 / Feldman et al. 2018 Thm 23: only step i (1-based) shifts; a_t = s_i / (T - i + 1)
    for t >= i. Raises if more than one step has a non-zero shift.

    >>> single_step_allocation([0, 3.0, 0, 0]).tolist()
    [0.0, 1.0, 1.0, 1.0]
    """
    s = _shifts(shifts)
    nz = np.flatnonzero(s)
    if nz.size > 1:
        raise ParameterError("shifts", f"{nz.size} non-zero shifts", "exactly one non-zero shift (Lemma F.1)")
    a = np.zeros_like(s)
    if nz.size:
        i = int(nz[0])
        a[i:] = s[i] / (s.size - i)
    return a


def check_allocation(shifts: np.ndarray, alloc: Any, *, rtol: float = 1e-9) -> np.ndarray:
    """Validate a user allocation against Thm 5.2's conditions: a_t >= 0, A_t <= S_t for all t
    and A_T = S_T, each up to ``rtol * S_T`` (floating-point slack, absorbed by
    :func:`certified_allocation`)."""
    a = V.float_array("allocation", alloc, ndim=1)
    if a.shape != shifts.shape:
        raise ParameterError("allocation", f"array of shape {a.shape}", f"one shift per step ({shifts.size})")
    if (a < 0).any():
        i = int(np.argmax(a < 0))
        raise ParameterError("allocation", f"a[{i}] = {a[i]!r}", "allocations a_t >= 0")
    S = np.cumsum(shifts)
    A = np.cumsum(a)
    tol = rtol * max(S[-1], 0.0) + 64 * _U * (S + A)
    over = A - S > tol
    if over.any():
        t = int(np.argmax(over))
        raise ParameterError("allocation", f"A_{t + 1} = {A[t]!r} > S_{t + 1} = {S[t]!r}",
                             "prefix sums of the allocation <= those of the shifts (z_t >= 0, Thm 5.2)")
    if abs(A[-1] - S[-1]) > tol[-1]:
        raise ParameterError("allocation", f"sum a = {A[-1]!r}",
                             f"sum a = sum s = {S[-1]!r} (z_T = 0, a bound on the actual divergence)")
    return a


def certified_allocation(shifts: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """Shifts b_t >= a'_t for an exactly feasible allocation a' (A'_t <= S_t, A'_T = S_T in real
    arithmetic), so sum_t R_alpha(zeta_t, b_t) is a certified Thm 5.2 bound (R is
    non-decreasing in the shift).

    Construction: a'_t = min(a_t, S_t - A'_{t-1}) for t < T and a'_T = S_T - A'_{T-1}. Then
    a'_t <= a_t for t < T and, with E = max_t (A_t - S_t)^+ (exact sums),
    a'_T <= S_T - A_{T-1} + E. Float prefix sums of non-negative terms are within
    1.01 t u (sum) of the exact ones (u = unit roundoff, t u < 0.01), which bounds the exact
    quantities from the computed ones; b_T is that bound rounded up.
    """
    s, a = shifts, np.array(alloc, dtype=np.float64)
    T = s.size
    if T * _U > 1e-3:
        raise ParameterError("shifts", f"{T} steps", "fewer than 2^40 steps")
    S = np.cumsum(s)
    A = np.cumsum(a)
    t = np.arange(1, T + 1, dtype=np.float64)
    slack = 2.02 * t * _U * (S + A)   # |A^ - A| + |S^ - S| (x2 for the evaluation of this line)
    E = float(np.max(np.maximum(A - S + slack, 0.0)))
    A_prev = float(A[-2]) if T > 1 else 0.0
    last = (float(S[-1]) - A_prev) + 2.02 * T * _U * (float(S[-1]) + A_prev) + E
    b = a
    b[-1] = max(math.nextafter(math.nextafter(last, math.inf), math.inf), 0.0)
    return b

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "uniform_allocation": (Ref("pierquin2024", "Prop F.2"),),
    "paper_allocation": (Ref("pierquin2024", "Thm 5.2"),),
    "optimal_allocation": (Ref("pierquin2024", "Thm 5.2"),),
    "single_step_allocation": (Ref("pierquin2024", "Lemma F.1"), Ref("feldman2018", "Thm 23"),),
}
