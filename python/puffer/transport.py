"""Transport between conditional query laws: quantile couplings, W_inf, W_p and nearness radii.

Transport between conditional query laws: quantile couplings, W_inf, W_p, the (z, delta)-
nearness radius, bottleneck W_inf in R^d, and batches (C++ core, ``puffer._core.transport``).

Theorems and rules implemented
------------------------------
* Pierquin et al. 2024 / Ding 2022: in 1-D the monotone (quantile, north-west corner) coupling is
  optimal for every W_p and for W_inf, so ``w_inf`` / ``w_p`` read them off that plan
  (two-pointer on sorted supports, O(n + m), at most n + m - 1 entries; Ding 2022).
* Pierquin et al. 2024 / Seeman et al. 2024: in R^d, W_inf is the bottleneck transport
  value: binary search over the sorted candidate distances with a max-flow feasibility test
  (Strassen / Hall), exact, optionally returning the witnessing coupling.
* Pierquin et al. 2024: ``near_radius`` by the exact interval greedy + binary search (the
  quantile coupling is not optimal there, Pierquin et al. 2024).
* Ding 2022: float masses follow the *level rule* below; exact masses (``Fraction``
  laws) are compared as integers over a common denominator (128-bit in C++ when the
  denominators are <= 2^62, Python integers otherwise).
* Seeman et al. 2024: binomial-type laws live in log space (:class:`LogDiscreteDist`); their W_inf
  compares log CDFs from the left and log survival functions from the right.

The level rule (float masses)
-----------------------------
Each law is normalised by its own total T (a compensated sum). The end level of atom i is
computed from the left, F_i = (p_0 + ... + p_i) / T, and from the right,
S_i = (p_{i+1} + ...) / T, in one canonical way shared by every code path (blocks of 64 atoms:
plain sums inside a block, compensated sums of the block totals across blocks), so that the
relative error of every computed level is at most E = 132 * 2**-53 whatever n is (for the
first/last k < 128 atoms of a law, (k + 4) * 2**-53). Two end levels, one per law, are
compared in the representation where they are small (F if the smaller F is <= 1/2, S
otherwise) and are **tied** iff

    |a - b| <= max(a, b) * (rtol + E_a + E_b),

E_a, E_b being those rigorous error bounds and ``rtol`` (default ``8 * 2**-53``) covering the
rounding of the input masses themselves. Consequences: (1) levels equal in the intended law
are tied, so rounding leftovers never pair far-apart atoms (Ding 2022: W_inf = 1, not 99);
(2) levels that differ by more than the band (about 3e-14 relative, in their own tail, so a
1e-300 atom counts) are ordered exactly, and every atom of positive mass (even subnormal) is
in the plan, so W_inf is never under-reported for them; (3) only two *distinct* intended
levels closer than the band are indistinguishable from rounding; exact mode decides those. The
plan records how many ties were not bitwise equalities (``TransportPlan.near_ties``). The fast
W_inf path (ranks over level keys) returns exactly the value of the plan walk; it hands any
near tie to the walk.

Reported distances are the correctly rounded |x - y| (and the ℓ1 / ℓ2 / ℓ∞ norms of the
difference in R^d, accurate to a few ulps); callers that turn them into noise scales round up.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from fractions import Fraction
from functools import reduce
from typing import Any, Literal, cast, overload

import numpy as np

from . import _validate as V
from ._core import transport as _tr
from ._transport_continuous import WInfResult, is_continuous_law, w_inf_continuous
from ._transport_laws import LogDiscreteDist, binomial_law, poisson_binomial_law
from .dist import SUM_TOL, DiscreteDist
from .errors import ParameterError, ParameterTypeError
from .guarantees._base import round_up

__all__ = [
    "TransportPlan", "quantile_coupling", "w_inf", "w_p", "near_radius", "w_inf_many", "w_inf_batch",
    "w_inf_sorted", "w_inf_continuous", "WInfResult", "LogDiscreteDist", "binomial_law",
    "poisson_binomial_law", "DEFAULT_RTOL",
]

DEFAULT_RTOL: float = float(_tr.DEFAULT_RTOL)
_INT62 = 1 << 62
_U = 2.0 ** -53


# ---------------------------------------------------------------------------------- helpers
def _law(name: str, d: Any) -> Any:
    if isinstance(d, (DiscreteDist, LogDiscreteDist)):
        return d
    raise ParameterTypeError(name, d, "a puffer.DiscreteDist (or LogDiscreteDist / a law with ppf)")


def _norm_code(norm: Any, dim: int) -> int:
    """1, 2, inf -> C++ code 1, 2, 0. In 1-D every norm is |x - y|; None is allowed there."""
    if norm is None:
        if dim == 1:
            return 2
        raise ParameterError("norm", None, f"1, 2 or inf for laws on R^{dim}")
    if isinstance(norm, str) and norm.lower() in ("inf", "infinity", "linf"):
        return 0
    if isinstance(norm, (bool, np.bool_)) or not isinstance(norm, numbers.Real):
        raise ParameterError("norm", norm, "1, 2 or inf")
    if norm == 1:
        return 1
    if norm == 2:
        return 2
    if math.isinf(float(norm)) and float(norm) > 0:
        return 0
    raise ParameterError("norm", norm, "1, 2 or inf")


def _sum_tol(sum_tol: Any) -> float:
    """A total-mass tolerance in [0, 1), or < 0 for the documented any-positive-total mode (NaN,
    inf or >= 1 would disable the check silently)."""
    return V.real("sum_tol", sum_tol, hi=1.0, hi_open=True,
                  expected="a tolerance in [0, 1) (or < 0: any positive total)")


def _rtol(rtol: Any) -> float:
    return V.real("rtol", rtol, lo=0.0, hi=1e-3, hi_open=True, expected="a relative tolerance in [0, 1e-3)")


def _exact_masses(d: DiscreteDist) -> tuple[list[int], int]:
    """Integer numerators and a common denominator (a float law uses its doubles' exact values,
    normalised exactly)."""
    if d.numerators is not None and d.denominator is not None:
        return list(d.numerators), d.denominator
    fr = [Fraction(float(p)) for p in d.probs]
    tot = sum(fr, Fraction(0))
    fr = [f / tot for f in fr]
    den = reduce(lambda a, b: a * b // math.gcd(a, b), (f.denominator for f in fr), 1)
    return [f.numerator * (den // f.denominator) for f in fr], den


def _use_exact(P: Any, Q: Any, exact: Any) -> bool:
    if exact is None:
        return isinstance(P, DiscreteDist) and isinstance(Q, DiscreteDist) and P.is_exact and Q.is_exact
    if not isinstance(exact, (bool, np.bool_)):
        raise ParameterTypeError("exact", exact, "True, False or None")
    if exact and (isinstance(P, LogDiscreteDist) or isinstance(Q, LogDiscreteDist)):
        raise ParameterError("exact", True, "laws with rational masses (a LogDiscreteDist has none)")
    return bool(exact)


def _same_dim(P: Any, Q: Any) -> int:
    if P.dim != Q.dim:
        raise ParameterError("Q", f"a law on R^{Q.dim}", f"a law on the same space as P (R^{P.dim})")
    return cast(int, P.dim)


def _as_log(d: Any) -> LogDiscreteDist:
    if isinstance(d, LogDiscreteDist):
        return d
    with np.errstate(divide="ignore"):
        return LogDiscreteDist(d.atoms, np.log(d.probs), normalize=True)


def _key_tol(n: int, m: int) -> float:
    return (n + m + 16) * _U


# ---------------------------------------------------------------------------------- plan
class TransportPlan:
    """A coupling of P and Q in coordinate (COO) form: ``mass[k]`` moves from ``source[k]``
    (an atom of P, index ``rows[k]``) to ``target[k]`` (an atom of Q, index ``cols[k]``).

    Attributes are read-only numpy arrays. ``exact_mass`` holds the masses as Fractions for
    plans computed in exact mode (else None). ``near_ties`` counts level ties of the float
    level rule that were not bitwise equalities (0 for exact plans).
    """

    __slots__ = ("P", "Q", "rows", "cols", "mass", "exact_mass", "near_ties", "norm", "_kind")

    def __init__(self, P: Any, Q: Any, rows: np.ndarray, cols: np.ndarray, mass: np.ndarray,
                 exact_mass: tuple[Fraction, ...] | None = None, near_ties: int = 0,
                 norm: Any = None, kind: str = "quantile"):
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        cols = np.ascontiguousarray(cols, dtype=np.int64)
        mass = np.ascontiguousarray(mass, dtype=np.float64)
        for a in (rows, cols, mass):
            a.flags.writeable = False
        self.P, self.Q, self.rows, self.cols, self.mass = P, Q, rows, cols, mass
        self.exact_mass = exact_mass
        self.near_ties = int(near_ties)
        self.norm = norm
        self._kind = kind

    @property
    def source(self) -> np.ndarray:
        """Atoms of P of the entries (shape (k,) or (k, d))."""
        return cast(np.ndarray, self.P.atoms[self.rows])

    @property
    def target(self) -> np.ndarray:
        """Atoms of Q of the entries."""
        return cast(np.ndarray, self.Q.atoms[self.cols])

    @property
    def is_exact(self) -> bool:
        return self.exact_mass is not None

    def _fractions(self) -> tuple[Fraction, ...]:
        """The exact masses (only called on exact plans)."""
        if self.exact_mass is None:
            raise ParameterError("plan", "a float plan", "an exact plan")
        return self.exact_mass

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def _distances(self, metric: Any = None) -> np.ndarray:
        diff = np.asarray(self.source - self.target, dtype=np.float64)
        if callable(metric):
            return np.array([float(metric(z)) for z in diff], dtype=np.float64)
        if diff.ndim == 1:
            if metric not in (None, 1, 2) and not (isinstance(metric, float) and math.isinf(metric)) \
                    and metric != "inf":
                _norm_code(metric, 1)
            return np.abs(diff)
        code = _norm_code(metric if metric is not None else self.norm, diff.shape[1])
        ordv = {1: 1, 2: 2, 0: np.inf}[code]
        return cast(np.ndarray, np.linalg.norm(diff, ord=ordv, axis=1))

    def sensitivity(self, metric: Any = None) -> float:
        """max d(x - y) over entries of positive mass (Ding 2022, the plan sensitivity).
        ``metric``: None (|.| in 1-D, the plan's norm in R^d), 1, 2, inf, or a callable d(z)."""
        if len(self) == 0:
            return 0.0
        return float(np.max(self._distances(metric)))

    def cost(self, p: float = 1.0) -> float:
        """sum mass * |x - y|^p (p >= 1; W_p^p for the optimal 1-D plan)."""
        p = V.real("p", p, lo=1.0, expected="an exponent p >= 1")
        d = self._distances()
        if self.is_exact and self.P.dim == 1 and float(p).is_integer() and p <= _EXACT_POW_MAX:
            return float(sum(m * Fraction(float(z)) ** int(p) for m, z in zip(self._fractions(), d)))
        with np.errstate(over="ignore", under="ignore"):   # d^p may be inf / 0: use w_p for roots
            return float(np.dot(self.mass, d ** p))

    def marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """(row sums over P.atoms, column sums over Q.atoms); object arrays of Fractions when exact."""
        n, m = len(self.P), len(self.Q)
        if self.is_exact:
            r = np.array([Fraction(0)] * n, dtype=object)
            c = np.array([Fraction(0)] * m, dtype=object)
            for i, j, w in zip(self.rows.tolist(), self.cols.tolist(), self._fractions()):
                r[i] += w
                c[j] += w
            return r, c
        return (np.bincount(self.rows, weights=self.mass, minlength=n),
                np.bincount(self.cols, weights=self.mass, minlength=m))

    def _grids(self, grid: Any) -> tuple[np.ndarray, np.ndarray]:
        if self.P.dim != 1:
            raise ParameterError("plan", f"a plan on R^{self.P.dim}", "a 1-D plan for cmf/pmf tables")
        if grid is None:
            g = np.union1d(self.P.atoms, self.Q.atoms)
            return g, g
        if isinstance(grid, tuple) and len(grid) == 2:
            return (V.float_array("grid[0]", grid[0], ndim=1), V.float_array("grid[1]", grid[1], ndim=1))
        g = V.float_array("grid", grid, ndim=1)
        return g, g

    def _cdf(self, law: Any, grid: np.ndarray, exact: bool) -> list[Any]:
        idx = np.searchsorted(law.atoms, grid, side="right")
        if exact:
            acc, cum = Fraction(0), [Fraction(0)]
            for f in law.exact_probs:
                acc += f
                cum.append(acc)
            return [cum[k] for k in idx]
        fcum = np.concatenate(([0.0], np.cumsum(law.probs) / np.sum(law.probs)))
        return [float(x) for x in fcum[idx]]

    def cmf(self, grid: Any = None) -> np.ndarray:
        """Joint CMF table min{F_P(x_k), F_Q(x'_l)} (Ding 2022, Tables 2 and 5). ``grid``: one
        1-D grid for rows and columns, a (rows, cols) pair, or None (union of the supports).
        Fractions (object array) when the plan is exact."""
        gr, gc = self._grids(grid)
        ex = self.is_exact
        fr, fc = self._cdf(self.P, gr, ex), self._cdf(self.Q, gc, ex)
        out = np.empty((len(gr), len(gc)), dtype=object if ex else np.float64)
        for k, a in enumerate(fr):
            for l, b in enumerate(fc):
                out[k, l] = a if a < b else b
        return out

    def pmf(self, grid: Any = None) -> np.ndarray:
        """Dense plan on the grid (Ding 2022, Tables 3 and 6): the entries' masses placed at
        (row of source, column of target); grid points outside the supports get 0 rows/cols."""
        gr, gc = self._grids(grid)
        ex = self.is_exact
        out = np.zeros((len(gr), len(gc)), dtype=object if ex else np.float64)
        if ex:
            out[:] = Fraction(0)
        ri = np.searchsorted(gr, self.source)
        ci = np.searchsorted(gc, self.target)
        for k in range(len(self)):
            if ri[k] >= len(gr) or gr[ri[k]] != self.source[k] or ci[k] >= len(gc) or gc[ci[k]] != self.target[k]:
                raise ParameterError("grid", "a grid missing a support point", "a grid containing both supports")
            out[ri[k], ci[k]] += self._fractions()[k] if ex else self.mass[k]
        return out

    def dense(self) -> np.ndarray:
        """The (len(P), len(Q)) matrix of masses."""
        out = np.zeros((len(self.P), len(self.Q)))
        np.add.at(out, (self.rows, self.cols), self.mass)
        return out

    def transpose(self) -> TransportPlan:
        return TransportPlan(self.Q, self.P, self.cols, self.rows, self.mass, self.exact_mass,
                             self.near_ties, self.norm, self._kind)

    def __repr__(self) -> str:
        mode = "exact" if self.is_exact else "float"
        s = self.sensitivity() if len(self) else 0.0
        head = f"TransportPlan({self._kind}, {len(self)} entries, {mode}, sensitivity={s:.6g}"
        if self.near_ties:
            head += f", near_ties={self.near_ties}"
        if len(self) <= 8 and self.P.dim == 1:
            ms = [str(f) for f in self._fractions()] if self.is_exact else [f"{m:.6g}" for m in self.mass]
            body = ", ".join(f"({a:g}->{b:g}: {w})" for a, b, w in zip(self.source, self.target, ms))
            return head + f", [{body}])"
        return head + ")"


# ---------------------------------------------------------------------------------- 1-D plans
def _split128(hi: np.ndarray, lo: np.ndarray) -> list[int]:
    return [(int(h) << 64) | int(l) for h, l in zip(hi.tolist(), lo.tolist())]


def _exact_walk_py(a: list[int], dp: int, b: list[int], dq: int) -> tuple[list[int], list[int], list[int]]:
    """Exact staircase with Python integers (denominators beyond 2^62); masses over dp*dq."""
    rows, cols, ms = [], [], []
    i = j = 0
    n, m = len(a), len(b)
    while i < n and a[i] == 0:
        i += 1
    while j < m and b[j] == 0:
        j += 1
    Fi, Gj, prev = a[i] * dq, b[j] * dp, 0
    while i < n and j < m:
        end = min(Fi, Gj)
        rows.append(i)
        cols.append(j)
        ms.append(end - prev)
        prev = end
        ai, aj = Fi <= Gj, Gj <= Fi
        if ai:
            i += 1
            while i < n and a[i] == 0:
                i += 1
            if i < n:
                Fi += a[i] * dq
        if aj:
            j += 1
            while j < m and b[j] == 0:
                j += 1
            if j < m:
                Gj += b[j] * dp
    return rows, cols, ms


def _coupling_exact(P: DiscreteDist, Q: DiscreteDist) -> TransportPlan:
    a, dp = _exact_masses(P)
    b, dq = _exact_masses(Q)
    rows: np.ndarray | list[int]
    cols: np.ndarray | list[int]
    if dp <= _INT62 and dq <= _INT62:
        rows, cols, mass, hi, lo, _ = _tr.coupling_1d_exact(P.atoms, np.array(a, dtype=np.int64), dp,
                                                           Q.atoms, np.array(b, dtype=np.int64), dq)
        nums = _split128(hi, lo)
    else:
        rows, cols, nums = _exact_walk_py(a, dp, b, dq)
    den = dp * dq
    exact = tuple(Fraction(k, den) for k in nums)
    return TransportPlan(P, Q, np.asarray(rows), np.asarray(cols), np.array([float(f) for f in exact]),
                         exact_mass=exact)


def _coupling_log(P: LogDiscreteDist, Q: LogDiscreteDist) -> TransportPlan:
    """Staircase over log-space level keys (Seeman et al. 2024); masses from the key levels."""
    kp, kq = P.level_keys(), Q.level_keys()
    tol = _key_tol(len(P), len(Q))
    n, m = len(P), len(Q)

    def level(k: float) -> tuple[float, float]:  # (F, S) of a key
        if k <= math.log(0.5):
            f = math.exp(k)
            return f, 1.0 - f
        s = math.exp(-k)
        return 1.0 - s, s

    rows, cols, mass = [], [], []
    i = j = 0
    start = (0.0, 1.0)
    while i < n and j < m:
        a, b = kp[i], kq[j]
        tie = a == b or (math.isfinite(a) and math.isfinite(b)
                         and abs(a - b) <= tol * max(1.0, abs(a), abs(b)))
        end = level(min(a, b))
        w = end[0] - start[0] if end[0] <= 0.5 else start[1] - end[1]
        rows.append(i)
        cols.append(j)
        mass.append(max(w, 0.0))
        start = end
        if tie or a < b:
            i += 1
        if tie or b < a:
            j += 1
    for i2 in range(i, n):
        rows.append(i2)
        cols.append(m - 1)
        mass.append(0.0)
    for j2 in range(j, m):
        rows.append(n - 1)
        cols.append(j2)
        mass.append(0.0)
    return TransportPlan(P, Q, np.array(rows), np.array(cols), np.array(mass), kind="quantile/log")


def quantile_coupling(P: Any, Q: Any, *, exact: bool | None = None, rtol: float = DEFAULT_RTOL) -> TransportPlan:
    """The monotone (quantile, north-west corner) coupling of two laws on R (Ding 2022).

    Parameters
    ----------
    P, Q : DiscreteDist (1-D) or LogDiscreteDist
        The two laws on R to couple.
    exact : bool or None
        Exact rational arithmetic; default: when both laws are exact. ``exact=True`` on float
        laws uses the exact values of their doubles (no tie band).
    rtol : float
        Input-rounding allowance of the float level rule (module docstring).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> P = DiscreteDist([1, 2, 3, 4], [F(1, 3), F(1, 6), F(1, 3), F(1, 6)])
    >>> Q = DiscreteDist([1, 2, 3, 4], [F(1, 4), F(1, 4), F(1, 6), F(1, 3)])
    >>> plan = quantile_coupling(P, Q)
    >>> plan.sensitivity(), plan.exact_mass[:2]
    (1.0, (Fraction(1, 4), Fraction(1, 12)))
    """
    P, Q = _law("P", P), _law("Q", Q)
    if _same_dim(P, Q) != 1:
        raise ParameterError("P", f"a law on R^{P.dim}", "laws on R (the quantile coupling is 1-D only)")
    if isinstance(P, LogDiscreteDist) or isinstance(Q, LogDiscreteDist):
        _use_exact(P, Q, exact)
        return _coupling_log(_as_log(P), _as_log(Q))
    if _use_exact(P, Q, exact):
        return _coupling_exact(P, Q)
    rows, cols, mass, _, _, nt = _tr.coupling_1d(P.atoms, P.probs, Q.atoms, Q.probs, _rtol(rtol), SUM_TOL)
    return TransportPlan(P, Q, rows, cols, mass, near_ties=nt)


# ---------------------------------------------------------------------------------- W_inf
@overload
def w_inf(P: Any, Q: Any, *, norm: Any = None, exact: bool | None = None, return_plan: Literal[False] = False,
          rtol: float = DEFAULT_RTOL) -> float: ...
@overload
def w_inf(P: Any, Q: Any, *, norm: Any = None, exact: bool | None = None, return_plan: Literal[True],
          rtol: float = DEFAULT_RTOL) -> tuple[float, TransportPlan]: ...
@overload
def w_inf(P: Any, Q: Any, *, norm: Any = None, exact: bool | None = None, return_plan: bool = False,
          rtol: float = DEFAULT_RTOL) -> float | tuple[float, TransportPlan]: ...
def w_inf(P: Any, Q: Any, *, norm: Any = None, exact: bool | None = None, return_plan: bool = False,
          rtol: float = DEFAULT_RTOL) -> float | tuple[float, TransportPlan]:
    """W_inf(P, Q) = min over couplings of the largest distance moved (Pierquin et al. 2024).

    * 1-D :class:`DiscreteDist` / :class:`LogDiscreteDist`: from the quantile coupling, O(n + m).
    * d-D :class:`DiscreteDist`: bottleneck transport (binary search over candidate distances,
      max-flow feasibility), ``norm`` = 1, 2 or inf required.
    * continuous 1-D laws with ``ppf`` (scipy frozen distributions, ...): the certified value
      of :func:`w_inf_continuous` (``inf`` when unbounded or not certifiable; call
      :func:`w_inf_continuous` for the reason).

    Returns a float, or ``(value, TransportPlan)`` with ``return_plan=True`` (discrete laws).

    Examples
    --------
    >>> P = DiscreteDist([0, 1, 100], [0.1, 0.2, 0.7])
    >>> Q = DiscreteDist([0, 100], [0.3, 0.7])
    >>> w_inf(P, Q)             # not 99: rounding leftovers never pair 1 with 100
    1.0
    """
    if is_continuous_law(P) or is_continuous_law(Q):
        if not (is_continuous_law(P) and is_continuous_law(Q)):
            raise ParameterTypeError("Q" if is_continuous_law(P) else "P", Q if is_continuous_law(P) else P,
                                     "two continuous laws (objects with ppf), or two discrete laws")
        if return_plan:
            raise ParameterError("return_plan", True, "False for continuous laws (no discrete plan)")
        if norm is not None:
            _norm_code(norm, 1)
        return w_inf_continuous(P, Q).value
    P, Q = _law("P", P), _law("Q", Q)
    dim = _same_dim(P, Q)
    code = _norm_code(norm, dim)
    if not isinstance(return_plan, (bool, np.bool_)):
        raise ParameterTypeError("return_plan", return_plan, "True or False")
    if dim > 1:
        return _w_inf_nd(P, Q, code, norm, bool(_use_exact(P, Q, exact)), bool(return_plan), _rtol(rtol))
    if isinstance(P, LogDiscreteDist) or isinstance(Q, LogDiscreteDist):
        _use_exact(P, Q, exact)
        lp, lq = _as_log(P), _as_log(Q)
        if return_plan:
            plan = _coupling_log(lp, lq)
            return plan.sensitivity(), plan
        return float(_tr.w_inf_keys(lp.atoms, lp.level_keys(), lq.atoms, lq.level_keys(),
                                    _key_tol(len(lp), len(lq))))
    if return_plan:
        plan = quantile_coupling(P, Q, exact=exact, rtol=rtol)
        return plan.sensitivity(), plan
    if _use_exact(P, Q, exact):
        a, dp = _exact_masses(P)
        b, dq = _exact_masses(Q)
        rows: np.ndarray | list[int]
        cols: np.ndarray | list[int]
        if dp <= _INT62 and dq <= _INT62:  # only the support of the exact plan is needed
            rows, cols = _tr.coupling_1d_exact(P.atoms, np.array(a, dtype=np.int64), dp,
                                               Q.atoms, np.array(b, dtype=np.int64), dq)[:2]
        else:
            rows, cols, _ = _exact_walk_py(a, dp, b, dq)
        return float(np.max(np.abs(P.atoms[np.asarray(rows)] - Q.atoms[np.asarray(cols)])))
    return float(_tr.w_inf_1d(P.atoms, P.probs, Q.atoms, Q.probs, _rtol(rtol), SUM_TOL))


def _bottleneck_py(X: np.ndarray, a: list[int], Y: np.ndarray, b: list[int], code: int
                   ) -> tuple[float, list[tuple[int, int, int]]]:
    """Exact bottleneck with Python-integer capacities (denominators beyond 2^62)."""
    ordv = {1: 1, 2: 2, 0: np.inf}[code]
    D = np.linalg.norm(X[:, None, :] - Y[None, :, :], ord=ordv, axis=2)
    n, m = len(a), len(b)
    lower = max(D.min(axis=1).max(), D.min(axis=0).max())
    cand = np.unique(D[D >= lower])
    total = sum(a)

    def flow(z: float) -> tuple[int, dict[tuple[int, int], int]]:
        cap: dict[tuple[int, int], int] = {}
        adj: dict[int, list[int]] = {v: [] for v in range(n + m + 2)}
        s, t = n + m, n + m + 1

        def add(u: int, v: int, c: int) -> None:
            cap[(u, v)] = cap.get((u, v), 0) + c
            cap.setdefault((v, u), 0)
            adj[u].append(v)
            adj[v].append(u)
        for i in range(n):
            add(s, i, a[i])
        for j in range(m):
            add(n + j, t, b[j])
        for i in range(n):
            for j in range(m):
                if D[i, j] <= z:
                    add(i, n + j, total)
        f = 0
        while True:  # Edmonds-Karp
            par: dict[int, int | None] = {s: None}
            qu = [s]
            for u in qu:
                for v in adj[u]:
                    if v not in par and cap[(u, v)] > 0:
                        par[v] = u
                        qu.append(v)
            if t not in par:
                return f, cap
            path: list[tuple[int, int]] = []
            w = t
            while True:
                pu = par[w]
                if pu is None:
                    break
                path.append((pu, w))
                w = pu
            aug = min(cap[e] for e in path)
            for u, v in path:
                cap[(u, v)] -= aug
                cap[(v, u)] += aug
            f += aug
    lo, hi = 0, len(cand) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if flow(cand[mid])[0] >= total:
            hi = mid
        else:
            lo = mid + 1
    _, cap = flow(cand[lo])
    entries = [(i, j, cap[(n + j, i)]) for i in range(n) for j in range(m)
               if D[i, j] <= cand[lo] and cap.get((n + j, i), 0) > 0]
    return float(cand[lo]), entries


def _w_inf_nd(P: DiscreteDist, Q: DiscreteDist, code: int, norm: Any, exact: bool, want_plan: bool,
              rtol: float) -> float | tuple[float, TransportPlan]:
    if exact:
        a, dp = _exact_masses(P)
        b, dq = _exact_masses(Q)
        if dp <= _INT62 and dq <= _INT62:
            value, (rows, cols, mass, hi, lo, _) = _tr.w_inf_nd_exact(
                P.atoms, np.array(a, dtype=np.int64), dp, Q.atoms, np.array(b, dtype=np.int64), dq, code, want_plan)
            exact_m = tuple(Fraction(k, dp * dq) for k in _split128(hi, lo))
        else:
            # common unit 1/(dp*dq), as in the C++ path
            value, ent = _bottleneck_py(P.atoms, [k * dq for k in a], Q.atoms, [k * dp for k in b], code)
            rows = np.array([e[0] for e in ent], dtype=np.int64)
            cols = np.array([e[1] for e in ent], dtype=np.int64)
            exact_m = tuple(Fraction(e[2], dp * dq) for e in ent)
        if not want_plan:
            return float(value)
        plan = TransportPlan(P, Q, rows, cols, np.array([float(f) for f in exact_m]), exact_mass=exact_m,
                             norm=norm, kind="bottleneck")
        return float(value), plan
    value, (rows, cols, mass, _, _, _) = _tr.w_inf_nd(P.atoms, P.probs, Q.atoms, Q.probs, code, want_plan,
                                                      rtol, SUM_TOL)
    if not want_plan:
        return float(value)
    return float(value), TransportPlan(P, Q, rows, cols, mass, norm=norm, kind="bottleneck")


# ---------------------------------------------------------------------------------- W_p
def w_p(P: Any, Q: Any, p: float, *, exact: bool | None = None, rtol: float = DEFAULT_RTOL) -> float:
    """W_p(P, Q) = (sum mass * |x - y|^p)^(1/p) over the quantile coupling (optimal in 1-D,
    Pierquin et al. 2024). ``p`` in [1, inf]; p = inf gives W_inf. Laws on R only.

    >>> w_p(DiscreteDist([0, 1], [0.5, 0.5]), DiscreteDist([1, 2], [0.5, 0.5]), 2)
    1.0
    """
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real):
        raise ParameterTypeError("p", p, "an exponent p >= 1")
    p = V.real("p", p, lo=1.0, allow_inf=True, expected="an exponent p in [1, inf]")
    if math.isinf(p):
        return w_inf(P, Q, exact=exact, rtol=rtol)
    P, Q = _law("P", P), _law("Q", Q)
    if _same_dim(P, Q) != 1:
        raise ParameterError("P", f"a law on R^{P.dim}", "laws on R (W_p in R^d needs a general OT solver)")
    plan = quantile_coupling(P, Q, exact=exact, rtol=rtol)
    return _w_p_scaled(plan, p)


def _root_up(C: Fraction, k: int) -> float:
    """The smallest double r with r^k >= C (exact rational check): W_p rounded up, never down."""
    if C <= 0:
        return 0.0
    # a start within ~1e-12 relative (logs of big integers do not overflow), then bisect the
    # bit patterns of [lo, hi] with the exact test
    guess = math.exp((math.log(C.numerator) - math.log(C.denominator)) / k)
    lo, hi = guess * (1 - 1e-9), guess * (1 + 1e-9)
    while Fraction(hi) ** k < C:
        hi *= 2.0
    while lo > 0 and Fraction(lo) ** k >= C:
        lo /= 2.0
    ilo = int(np.float64(lo).view(np.int64))
    ihi = int(np.float64(hi).view(np.int64))
    while ihi - ilo > 1:            # invariant: lo^k < C <= hi^k (positive doubles order like ints)
        mid = (ilo + ihi) // 2
        if Fraction(float(np.int64(mid).view(np.float64))) ** k >= C:
            ihi = mid
        else:
            ilo = mid
    return float(np.int64(ihi).view(np.float64))


# integer exponents up to this are summed in rationals in exact mode (cost bounded: the
# numerators of (d/D)^p have at most 64 * 53 bits); larger ones in floats
_EXACT_POW_MAX = 64


def _w_p_scaled(plan: TransportPlan, p: float) -> float:
    """W_p = D (sum mass (d/D)^p)^(1/p), D = the largest distance moved with positive mass
    (issue: d^p under/overflowed for large p, e.g. W_1000 = 0 for a shift of 0.1).

    Every scaled term is in [0, 1], so nothing overflows or underflows to a wrong answer, and
    the p-th root divides the sum's relative error by p. The float result is then moved up by
    that error bound (n terms, pow, product), so it is an upper bound of the plan's W_p: a
    sensitivity on the safe side."""
    if len(plan) == 0:
        return 0.0
    d = plan._distances()
    D = float(np.max(d))
    if D == 0.0 or not math.isfinite(D):
        return D
    if plan.is_exact and float(p).is_integer() and p <= _EXACT_POW_MAX:
        k = int(p)
        C = sum((m * Fraction(float(z)) ** k for m, z in zip(plan._fractions(), d)), Fraction(0))
        return _root_up(C, k)
    else:
        mass = np.asarray([float(m) for m in plan._fractions()] if plan.is_exact else plan.mass, dtype=np.float64)
        with np.errstate(under="ignore"):
            S = float(np.dot(mass, (d / D) ** p))
        n_err = len(d) + 2
    if S >= 1.0:
        return D
    eps = float(np.finfo(float).eps)
    return round_up(D * S ** (1.0 / p) * (1.0 + n_err * eps / p), 4)


# ---------------------------------------------------------------------------------- near radius
def _near_mass_py(x: np.ndarray, a: list[int], y: np.ndarray, b: list[int], z: float) -> int:
    cap = list(b)
    total, lo = 0, 0
    for i in range(len(a)):
        need = a[i]
        while lo < len(y) and (y[lo] < x[i] - z or cap[lo] <= 0):
            lo += 1
        k = lo
        while need > 0 and k < len(y) and y[k] <= x[i] + z:
            if cap[k] > 0:
                t = min(need, cap[k])
                cap[k] -= t
                need -= t
                total += t
            if cap[k] <= 0:
                k += 1
    return total


def near_radius(P: Any, Q: Any, delta: float, *, exact: bool | None = None, rtol: float = DEFAULT_RTOL) -> float:
    """The (z, delta)-nearness radius z*_delta (Pierquin et al. 2024): the smallest z
    such that some coupling puts mass >= 1 - delta on pairs at distance <= z. Computed by the
    exact interval greedy (max-flow on an interval bipartite graph) and a binary search over
    {0} U {|x_i - y_j|}. delta = 0 gives W_inf. Laws on R.

    Float masses: the greedy takes exact minima (no rounding leftovers); the matched mass counts
    as >= 1 - delta iff it is >= (1 - delta)(1 - rtol (n + m)), an absolute slack of about
    (n + m) 1e-15 (unmatched mass below that is indistinguishable from rounding; use exact mode
    when delta itself is that small). delta = 0 is W_inf under the level rule, where a stranded
    atom counts however small its mass.

    >>> P = DiscreteDist([0, 10], [0.5, 0.5]); Q = DiscreteDist([10, 20], [0.5, 0.5])
    >>> near_radius(P, Q, 0.5), w_inf(P, Q)     # the quantile coupling is not optimal here
    (0.0, 10.0)
    """
    P, Q = _law("P", P), _law("Q", Q)
    delta = V.delta("delta", delta)
    if _same_dim(P, Q) != 1:
        raise ParameterError("P", f"a law on R^{P.dim}", "laws on R")
    if delta == 0.0:
        return w_inf(P, Q, exact=exact, rtol=rtol)
    if isinstance(P, LogDiscreteDist) or isinstance(Q, LogDiscreteDist):
        P = P.to_dist() if isinstance(P, LogDiscreteDist) else P
        Q = Q.to_dist() if isinstance(Q, LogDiscreteDist) else Q
    if _use_exact(P, Q, exact):
        a, dp = _exact_masses(P)
        b, dq = _exact_masses(Q)
        need_fr = (1 - Fraction(delta)) * dp * dq
        need = need_fr.numerator // need_fr.denominator + (need_fr.denominator != 1)
        if dp <= _INT62 and dq <= _INT62:
            return float(_tr.near_radius_1d_exact(P.atoms, np.array(a, dtype=np.int64), dp, Q.atoms,
                                                  np.array(b, dtype=np.int64), dq, int(need)))
        aa = [k * dq for k in a]
        bb = [k * dp for k in b]
        cand = np.unique(np.concatenate(([0.0], np.abs(P.atoms[:, None] - Q.atoms[None, :]).ravel())))
        lo, hi = 0, len(cand) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if _near_mass_py(P.atoms, aa, Q.atoms, bb, cand[mid]) >= need:
                hi = mid
            else:
                lo = mid + 1
        return float(cand[lo])
    return float(_tr.near_radius_1d(P.atoms, P.probs, Q.atoms, Q.probs, delta, _rtol(rtol), SUM_TOL))


# ---------------------------------------------------------------------------------- batches
def w_inf_sorted(atoms_p: Any, probs_p: Any, atoms_q: Any, probs_q: Any, *, rtol: float = DEFAULT_RTOL,
                 sum_tol: float = SUM_TOL) -> float:
    """W_inf of two 1-D laws given as presorted arrays: the fast path. No Python-side copy or
    validation for float64 C-contiguous inputs; the C++ core validates in O(n) (sorted, finite
    atoms; finite masses >= 0; totals within ``sum_tol`` of 1; zero-mass atoms are skipped).

    >>> w_inf_sorted([0., 1.], [0.5, 0.5], [1., 2.], [0.5, 0.5])
    1.0
    """
    rt, st = _rtol(rtol), _sum_tol(sum_tol)
    try:
        return float(_tr.w_inf_1d(atoms_p, probs_p, atoms_q, probs_q, rt, st))
    except TypeError:  # pybind11 could not convert an argument: say which, not its signature
        for name, arr in (("atoms_p", atoms_p), ("probs_p", probs_p), ("atoms_q", atoms_q), ("probs_q", probs_q)):
            V.float_array(name, arr, ndim=1, finite=False)
        raise ParameterTypeError("atoms_p", atoms_p, "1-D arrays of real numbers") from None


def w_inf_batch(atoms_p: Any, probs_p: Any, offsets_p: Any, atoms_q: Any, probs_q: Any, offsets_q: Any, *,
                threads: int = 0, rtol: float = DEFAULT_RTOL, sum_tol: float = SUM_TOL,
                out: np.ndarray | None = None) -> np.ndarray:
    """W_inf for K pairs of 1-D laws in CSR form, on all cores with the GIL released.

    Law k of P is ``atoms_p[offsets_p[k]:offsets_p[k+1]]`` (sorted ascending) with masses
    ``probs_p[...]`` (float64, >= 0, summing to 1 within ``sum_tol``); likewise Q. ``offsets``
    are int64 of length K + 1, starting at 0, strictly increasing. Returns float64 of length K
    (written into ``out`` if given). Each pair follows the level rule (module docstring).

    >>> w_inf_batch([0., 1, 0], [.5, .5, 1], [0, 2, 3], [1., 2, 5], [.5, .5, 1], [0, 2, 3])
    array([1., 5.])
    """
    threads = V.threads(threads)
    offs = []
    for name, o in (("offsets_p", offsets_p), ("offsets_q", offsets_q)):
        arr = np.asarray(o)
        if arr.dtype.kind not in "iu":
            raise ParameterTypeError(name, f"array of dtype {arr.dtype}", "an integer array of offsets")
        offs.append(arr.astype(np.int64, copy=False))
    res = _tr.w_inf_1d_batch(atoms_p, probs_p, offs[0], atoms_q, probs_q, offs[1], threads, _rtol(rtol),
                             _sum_tol(sum_tol))
    if out is not None:
        if not isinstance(out, np.ndarray) or out.shape != res.shape or out.dtype != np.float64:
            raise ParameterError("out", out, f"a float64 array of shape {res.shape}")
        out[...] = res
        return out
    return res


def w_inf_many(pairs: Iterable[tuple[Any, Any]], *, threads: int = 0, rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """W_inf for a sequence of (P, Q) pairs of 1-D :class:`DiscreteDist` (float masses), packed
    into CSR form and run by :func:`w_inf_batch`. Exact or log-space laws are handled one by
    one with :func:`w_inf`.

    >>> P = DiscreteDist([0, 1], [0.5, 0.5])
    >>> w_inf_many([(P, P), (P, P.shift(3))])
    array([0., 3.])
    """
    pairs = list(pairs)
    out = np.empty(len(pairs))
    fast = []
    for k, pq in enumerate(pairs):
        if not (isinstance(pq, tuple) and len(pq) == 2):
            raise ParameterTypeError("pairs", pq, "a sequence of (P, Q) tuples")
        P, Q = pq
        if type(P) is DiscreteDist and type(Q) is DiscreteDist and P._atoms.ndim == 1 and Q._atoms.ndim == 1 \
                and not (P.is_exact and Q.is_exact):
            fast.append(k)
            continue
        P, Q = _law(f"pairs[{k}][0]", P), _law(f"pairs[{k}][1]", Q)
        if _same_dim(P, Q) != 1:
            raise ParameterError(f"pairs[{k}]", f"laws on R^{P.dim}", "laws on R")
        out[k] = w_inf(P, Q, rtol=rtol)
    if fast:
        Ps = [pairs[k][0] for k in fast]
        Qs = [pairs[k][1] for k in fast]
        op = np.zeros(len(fast) + 1, dtype=np.int64)
        oq = np.zeros(len(fast) + 1, dtype=np.int64)
        np.cumsum([len(d._atoms) for d in Ps], out=op[1:])
        np.cumsum([len(d._atoms) for d in Qs], out=oq[1:])
        res = w_inf_batch(np.concatenate([d._atoms for d in Ps]), np.concatenate([d._probs for d in Ps]), op,
                          np.concatenate([d._atoms for d in Qs]), np.concatenate([d._probs for d in Qs]), oq,
                          threads=threads, rtol=rtol)
        out[np.array(fast)] = res
    return out

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from .refs import Ref  # noqa: E402

REFERENCES = {
    "quantile_coupling": (Ref("ding2022", "Table 2"), Ref("ding2022", "Table 3"), Ref("ding2022", "Table 5"), Ref("ding2022", "Table 6"),),
    "near_radius": (Ref("pierquin2024", "Def 4.2"),),
}
