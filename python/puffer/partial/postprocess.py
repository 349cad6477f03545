"""Post-processing that makes the case study's noisy counts consistent with the public totals.

Public-consistency post-processing of the case-study baseline (Seeman, Reimherr & Slavkovic,
§4.1 "noise + two-stage post-processing"; Lemma 5: using z keeps epsilon-TP).

* :func:`project_consistent` -- the exact l2 projection of noisy (cases, deaths) onto
  {sum_j c_j = s, c_j >= d_j >= 0}: for a multiplier lambda, county j's point is the projection of
  (a_j - lambda/2, b_j) onto the cone {c >= d >= 0}; sum_j c_j(lambda) is continuous, piecewise linear
  and non-increasing, so lambda is found exactly between two breakpoints (no iteration tolerance).
* :func:`controlled_round` -- the exact l1 controlled rounding to integers with the same constraints
  (the printed objective ||y - Y~||_1 is corrected to ||floor(Y~) + y - Y~||_1 and the order constraint
  to floor(c) + y_c >= floor(d) + y_d): a greedy choice of the R = s - sum floor(c_j) counties rounded
  up, optimal because the cost separates by county once the number rounded up is fixed.
* :func:`contraction_effects` -- the Figure 3 counters (operational definitions: a negative noisy
  count mapped to 0; noisy deaths above noisy cases mapped to c = d).

>>> c, d = project_consistent([3.0, -1.0], [4.0, 0.5], 2)
>>> [round(float(v), 6) for v in c], [round(float(v), 6) for v in d]
([2.0, 0.0], [2.0, 0.0])
>>> controlled_round([1.5, 0.5], [0.2, 0.4], 2)
(array([2, 0]), array([0, 0]))
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import NumericalError, ParameterError

__all__ = ["cone_project", "project_consistent", "controlled_round", "contraction_effects", "two_stage"]


def cone_project(u: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean projection of (u, v) onto K = {(c, d): c >= d >= 0}, elementwise."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    c = np.where(u >= v, np.maximum(u, 0.0), np.maximum((u + v) / 2.0, 0.0))
    d = np.where(u >= v, np.where(v >= 0, v, 0.0), np.maximum((u + v) / 2.0, 0.0))
    # region u >= v: (u, v) if v >= 0 (then u >= 0 too); (u, 0) if u >= 0 > v; (0, 0) if u < 0
    c = np.where((u >= v) & (u < 0), 0.0, c)
    d = np.where((u >= v) & (u < 0), 0.0, d)
    return c, d


def _sum_c(lam: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_j c_j(lambda) for each lambda (vectorised over a vector of lambdas)."""
    u = a[None, :] - lam[:, None] / 2.0
    c, _ = cone_project(u, np.broadcast_to(b[None, :], u.shape))
    return cast(np.ndarray, c.sum(axis=1))


def _project_one(a: np.ndarray, b: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    # c_j as a function of u_j = a_j - lambda/2 has kinks at u = |b_j| and u = -b_j (b_j >= 0) or u = 0.
    kinks_u = np.concatenate([np.abs(b), np.where(b >= 0, -b, 0.0)])
    a2 = np.concatenate([a, a])
    bps = np.unique(2.0 * (a2 - kinks_u))          # lambda breakpoints, ascending
    f = _sum_c(bps, a, b)                           # non-increasing in lambda
    if s <= 0.0:
        lam = bps[-1]  # every c_j = 0 from the last breakpoint on
    elif f[0] <= s:
        # left of the first breakpoint every county is in a linear piece of slope -1/2 (c = u) or
        # -1/4 (c = (u+v)/2); extrapolate from the first breakpoint with the exact slope there.
        lo = bps[0] - 1.0
        f_lo = _sum_c(np.array([lo]), a, b)[0]
        slope = f_lo - f[0]  # per unit of lambda decrease (> 0)
        if slope <= 0:
            raise NumericalError("projection: flat sum of cases left of all breakpoints")
        lam = bps[0] - (s - f[0]) / slope
    else:
        k = int(np.searchsorted(-f, -s, side="left"))  # first index with f[k] <= s
        k = min(max(k, 1), bps.size - 1)
        l0, l1, f0, f1 = bps[k - 1], bps[k], f[k - 1], f[k]
        lam = l1 if f0 == f1 else l0 + (f0 - s) * (l1 - l0) / (f0 - f1)
    c, d = cone_project(a - lam / 2.0, b)
    return c, d


def project_consistent(cases: Any, deaths: Any, total: Any) -> tuple[np.ndarray, np.ndarray]:
    """argmin sum_j (c_j - cases_j)^2 + (d_j - deaths_j)^2 s.t. sum_j c_j = total, c_j >= d_j >= 0.

    ``cases``, ``deaths`` of shape (J,) or (T, J) (one projection per row, ``total`` of shape (T,)).
    Returns float arrays (c, d) of the same shape. Exact up to floating rounding (a piecewise-linear
    root between breakpoints; no iterative tolerance).
    """
    a = V.float_array("cases", cases, ndim=(1, 2))
    b = V.float_array("deaths", deaths, ndim=(1, 2))
    if a.shape != b.shape:
        raise ParameterError("deaths", f"array of shape {b.shape}", f"the shape of cases {a.shape}")
    s = V.float_array("total", total, ndim=(0, 1))
    if a.ndim == 1:
        if s.ndim != 0:
            raise ParameterError("total", total, "a scalar total for 1-D cases")
        if s < 0:
            raise ParameterError("total", total, "a public total >= 0 (no point satisfies c >= d >= 0 otherwise)")
        return _project_one(a, b, float(s))
    s = np.broadcast_to(s, (a.shape[0],))
    if (s < 0).any():
        raise ParameterError("total", total, "public totals >= 0")
    out = [_project_one(a[t], b[t], float(s[t])) for t in range(a.shape[0])]
    return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])


def _snap(x: np.ndarray) -> np.ndarray:
    r = np.round(x)
    return np.where(np.abs(x - r) <= 1e-9 * np.maximum(1.0, np.abs(x)), r, x)


def _round_one(c: np.ndarray, d: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    c, d = _snap(c), _snap(d)
    fc_floor, fd_floor = np.floor(c), np.floor(d)
    fc, fd = c - fc_floor, d - fd_floor
    R_f = s - fc_floor.sum()
    R = int(round(R_f))
    if abs(R_f - R) > 1e-6 * max(1.0, abs(s)) or R < 0 or R > c.size:
        raise ParameterError("cases", f"fractional parts summing to {R_f}", f"a consistent point (sum of cases = "
                             f"{s}; project with project_consistent first)")
    tight = fc_floor == fd_floor
    gain_d = np.minimum(0.0, 1.0 - 2.0 * fd)
    cost0 = np.where(tight, 0.0, gain_d)
    cost1 = (1.0 - 2.0 * fc) + gain_d
    order = np.argsort(cost1 - cost0, kind="stable")
    yc = np.zeros(c.size, dtype=np.int64)
    yc[order[:R]] = 1
    yd = (fd > 0.5).astype(np.int64)
    yd[tight & (yc == 0)] = 0
    return fc_floor.astype(np.int64) + yc, fd_floor.astype(np.int64) + yd


def controlled_round(cases: Any, deaths: Any, total: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer (c*, d*) = floor(Y~) + y, y in {0,1}^{2J}, minimising ||floor(Y~) + y - Y~||_1 subject to
    sum_j c*_j = total and c*_j >= d*_j >= 0 (exact greedy; ties broken by county index).

    Input: a consistent point (e.g. from :func:`project_consistent`), shape (J,) or (T, J).
    Fractional parts within 1e-9 of an integer are snapped first.
    """
    c = V.float_array("cases", cases, ndim=(1, 2))
    d = V.float_array("deaths", deaths, ndim=(1, 2))
    if c.shape != d.shape:
        raise ParameterError("deaths", f"array of shape {d.shape}", f"the shape of cases {c.shape}")
    if (d < -1e-9).any() or (c < d - 1e-9).any():
        raise ParameterError("cases", "a point with d < 0 or c < d", "cases >= deaths >= 0 (project first)")
    c, d = np.maximum(c, 0.0), np.clip(d, 0.0, None)
    d = np.minimum(d, c)
    s = np.asarray(total)
    if not np.issubdtype(s.dtype, np.integer) and not np.all(s == np.round(s)):
        raise ParameterError("total", total, "an integer public total")
    if c.ndim == 1:
        return _round_one(c, d, int(s))
    s = np.broadcast_to(s, (c.shape[0],))
    out = [_round_one(c[t], d[t], int(s[t])) for t in range(c.shape[0])]
    return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])


def two_stage(cases: Any, deaths: Any, total: Any) -> tuple[np.ndarray, np.ndarray]:
    """The baseline's post-processing: :func:`project_consistent` then :func:`controlled_round`."""
    c, d = project_consistent(cases, deaths, total)
    return controlled_round(c, d, total)


def contraction_effects(noisy_cases: Any, noisy_deaths: Any, cases: Any, deaths: Any) -> dict[str, np.ndarray]:
    """Figure 3 indicators per cell (boolean arrays of the input shape):

    * ``contracted_case_zeros``: noisy cases < 0 and post-processed cases = 0;
    * ``contracted_death_zeros``: noisy deaths < 0 and post-processed deaths = 0;
    * ``contracted_rates``: noisy deaths > noisy cases and post-processed cases = deaths
      (survival rate 1 - d/c contracted to 0).

    Average over replicates / months for the frequencies.
    """
    nc, nd, c, d = (np.asarray(x, dtype=np.float64) for x in (noisy_cases, noisy_deaths, cases, deaths))
    if not (nc.shape == nd.shape == c.shape == d.shape):
        raise ParameterError("cases", f"shapes {nc.shape}, {nd.shape}, {c.shape}, {d.shape}",
                             "four arrays of one shape")
    return {"contracted_case_zeros": (nc < 0) & (c == 0), "contracted_death_zeros": (nd < 0) & (d == 0),
            "contracted_rates": (nd > nc) & (c == d)}

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "contraction_effects": (Ref("seeman2024", "Figure 3"),),
    "project_consistent": (Ref("seeman2024", "Lemma 5"),),
    "controlled_round": (Ref("seeman2024", "Lemma 5"),),
}
