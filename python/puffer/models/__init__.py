"""Built-in correlated-data models: Markov chains, independent users, correlated pairs, joint counts.

Built-in correlated-data models: frameworks whose conditional query laws are computed
exactly (exact rationals where the inputs are rational) or in underflow-safe floating point
by the C++ core.

* :func:`independent_users` — V users with independent Bernoulli(p_i) values, counting query;
  secrets X_i = 0, X_i = 1 and the "absent" secret X_i = ⊥ (Ding 2022; Poisson-binomial
  laws).
* :func:`correlated_pair` — Pierquin et al. 2024, Example 1: two bits with P(X_i = 1) = p and correlation rho,
  counting query.
* :func:`average_salary` — Pierquin et al. 2024, Example 2 (literal version, Pierquin et al. 2024).
* :func:`markov_chain` — k-state Markov chains of length T with a sum query (Song, Wang,
  Chaudhuri 2017): secrets X_t = a, pairs (X_t = a, X_t = b), Theta a finite set of
  (transition matrices, initial law) priors, time-homogeneous, periodic (one matrix per phase,
  e.g. per half-hour of the day) or with a matrix per step. Laws come from a forward/backward
  pass in C++.
* :func:`fit_markov` (:mod:`puffer.models.fit`) — such a framework with Theta fitted from traces
  (a credible box at a stated level, recorded in the framework); :func:`close_adversary` and
  :func:`theta_profile` (:mod:`puffer.models.theta`) — what the guarantee then rests on.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from fractions import Fraction
from typing import Any, TypeVar, cast, overload

import numpy as np

from .. import _core
from .. import _validate as V
from ..dist import DiscreteDist
from ..errors import ParameterError, ParameterTypeError
from ..framework import Cost, Framework, PairRecord, Sensitivity

__all__ = ["independent_users", "correlated_pair", "average_salary", "markov_chain",
           "MarkovChainFramework", "stationary_distribution", "periodic_stationary_distribution",
           "fit_markov", "refit", "MarkovFit", "close_adversary", "theta_profile"]

ABSENT = "⊥"


def _probability_vector(name: str, p: Any) -> np.ndarray:
    a = V.float_array(name, p, ndim=1)
    if ((a < 0) | (a > 1)).any():
        i = int(np.argmax((a < 0) | (a > 1)))
        raise ParameterError(name, f"{a[i]!r} at index {i}", "probabilities in [0, 1]")
    return a


def independent_users(p: Any, users: Sequence[int] | None = None, *, absent: bool = True,
                      priors: Sequence[Any] | None = None) -> Framework:
    """Counting query X = sum_i S_i over independent users S_i ~ Bernoulli(p_i) (Ding 2022).

    Secrets: ``"S{i}=0"``, ``"S{i}=1"`` and, with ``absent=True``, ``"S{i}=⊥"`` (user i's record is
    absent: the law of X is the unconditional Poisson-binomial). Pairs: (0, 1), (0, ⊥), (1, ⊥) for
    each user in ``users`` (default: all). ``p`` is one prior; ``priors`` (a list of p vectors)
    gives a set Theta instead. Conditionals: X | S_i = a is ``PB(p_-i) + a``; X | ⊥_i is ``PB(p)``.

    >>> fw = independent_users([0.7] * 25, users=[0])
    >>> fw.w_inf().value
    1.0
    """
    plist = [p] if priors is None else list(priors)
    if priors is not None and p is not None:
        raise ParameterError("priors", "given together with p", "either p or priors")
    vecs = [_probability_vector("p", q) for q in plist]
    V_ = vecs[0].shape[0]
    if any(v.shape[0] != V_ for v in vecs):
        raise ParameterError("priors", [v.shape[0] for v in vecs], "the same number of users in every prior")
    us = list(range(V_)) if users is None else [V.integer("users", u, lo=0, hi=V_ - 1) for u in users]
    conds: dict[Any, dict[Hashable, DiscreteDist | None]] = {}   # prior index, or "p"
    for t, pv in enumerate(vecs):
        per: dict[Hashable, DiscreteDist | None] = {}
        for i in us:
            rest = _core.models.poisson_binomial(pv, i)       # PB(p_-i) on {0..V-1}
            full = _core.models.poisson_binomial(pv, -1)      # PB(p) on {0..V}
            grid = np.arange(V_, dtype=np.float64)
            per[f"S{i}=0"] = DiscreteDist(grid, rest, normalize=True) if pv[i] < 1 else None
            per[f"S{i}=1"] = DiscreteDist(grid + 1, rest, normalize=True) if pv[i] > 0 else None
            if absent:
                per[f"S{i}={ABSENT}"] = DiscreteDist(np.arange(V_ + 1, dtype=np.float64), full, normalize=True)
        conds[t if priors is not None else "p"] = per
    pairs = []
    for i in us:
        pairs.append((f"S{i}=0", f"S{i}=1"))
        if absent:
            pairs += [(f"S{i}=0", f"S{i}={ABSENT}"), (f"S{i}=1", f"S{i}={ABSENT}")]
    sp: dict[tuple[Hashable, Hashable], float] = {}
    for th in conds:
        pv = vecs[th] if priors is not None else vecs[0]
        for i in us:
            sp[(th, f"S{i}=0")] = float(1 - pv[i])
            sp[(th, f"S{i}=1")] = float(pv[i])
            if absent:
                sp[(th, f"S{i}={ABSENT}")] = 1.0
    return Framework.from_conditionals(conds, pairs, name=f"independent users (V={V_})", secret_probs=sp,
                                       group_sensitivity=1.0,
                                       group_note="independent users: one record changes the count by 1")


def correlated_pair(p: Any = Fraction(1, 2), rho: Any = Fraction(3, 10)) -> Framework:
    """Pierquin et al. 2024, Example 1: X_1, X_2 in {0, 1}, P(X_i = 1) = p, corr(X_1, X_2) = rho, query
    X_1 + X_2; secrets X_1 = 0 / X_1 = 1. ``p`` and ``rho`` may be Fractions (exact laws).
    Infeasible (p, rho) are rejected. Group sensitivity 2 (both records form one group)."""
    exact = isinstance(p, Fraction) and isinstance(rho, Fraction)
    P_ = p if exact else V.real("p", p, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    R_ = rho if exact else V.real("rho", rho, lo=-1.0, hi=1.0)
    if exact and not (0 < P_ < 1 and -1 <= R_ <= 1):
        raise ParameterError("p, rho", (p, rho), "p in (0, 1) and rho in [-1, 1]")
    p11 = P_ * P_ + R_ * P_ * (1 - P_)
    lo = max(0, 2 * P_ - 1)
    if not (lo <= p11 <= P_):
        raise ParameterError("rho", rho, f"a feasible correlation for p={p} (P(X1=X2=1) in [{lo}, {P_}])")
    p10 = P_ * (1 - P_) * (1 - R_)
    p00 = (1 - P_) ** 2 + R_ * P_ * (1 - P_)
    data = [(0, 0), (0, 1), (1, 0), (1, 1)]
    probs = [p00, p10, p10, p11]
    fw = Framework({"X1=0": lambda x: x[0] == 0, "X1=1": lambda x: x[0] == 1},
                   [("X1=0", "X1=1")], {"theta": (data, probs)}, query=lambda x: x[0] + x[1],
                   name=f"correlated pair (p={p}, rho={rho})", group_sensitivity=2.0,
                   group_note="the two correlated records form one group: the count changes by up to 2")
    return fw


def average_salary(query: str = "average") -> Framework:
    """Pierquin et al. 2024, Example 2 (literal definitions, Pierquin et al. 2024): X_1, X_2 independent, each
    1 w.p. 1/2, 2 w.p. 499/1000, 100 w.p. 1/1000; query (X_1 + X_2)/2 (or ``query="sum"``);
    secrets X_1 = a, all pairs. Literal Delta_G = 49.5 (99 for the sum), not the paper's 98."""
    if query not in ("average", "sum"):
        raise ParameterError("query", query, "'average' or 'sum'")
    vals = [1, 2, 100]
    marg = [Fraction(1, 2), Fraction(499, 1000), Fraction(1, 1000)]
    data = [(a, b) for a in vals for b in vals]
    probs = [marg[i] * marg[j] for i in range(3) for j in range(3)]
    f = (lambda x: (x[0] + x[1]) / 2) if query == "average" else (lambda x: x[0] + x[1])
    def is_salary(a: int) -> Callable[[Any], bool]:
        return lambda x: bool(x[0] == a)

    secrets: dict[Hashable, Callable[[Any], bool]] = {f"X1={a}": is_salary(a) for a in vals}
    return Framework(secrets, "all", {"theta": (data, probs)}, query=f, name=f"average salary ({query})",
                     group_sensitivity=99.0 / (2 if query == "average" else 1),
                     group_note="one record changes from 1 to 100")


def _gth(M: np.ndarray) -> np.ndarray | None:
    """Stationary laws of row-stochastic matrices (n, k, k) by Grassmann-Taksar-Heyman state
    reduction (Grassmann, Taksar & Heyman, Operations Research 33(5), 1985): it reads only the
    off-diagonal entries and never subtracts, so every component comes out to a small relative
    error however close the chain is to deterministic (solving pi (P - I) = 0 formed 1 - P_ii,
    which rounds to 0 for P_ii = 1 - 1e-300 and gave (1, 0) for [[1, 1e-300], [1e-300, 1]] whose
    law is (1/2, 1/2)). None when a reduced state cannot reach the lower ones (a zero pivot)."""
    A = M.astype(np.float64, copy=True)
    n, k, _ = A.shape
    for m in range(k - 1, 0, -1):
        S = A[:, m, :m].sum(axis=1)
        if not (S > 0.0).all():
            return None
        A[:, :m, m] /= S[:, None]
        A[:, :m, :m] += A[:, :m, m, None] * A[:, m, None, :m]
    x = np.zeros((n, k))
    x[:, 0] = 1.0
    for j in range(1, k):
        x[:, j] = np.einsum("ni,ni->n", x[:, :j], A[:, :j, j])
    if not np.isfinite(x).all():
        return None
    return cast(np.ndarray, x / x.sum(axis=1, keepdims=True))


def stationary_distribution(trans: Any) -> np.ndarray:
    """Stationary law(s) of transition matrices of shape (k, k) or (n, k, k): the solution of
    pi P = pi, sum pi = 1 (unique for irreducible chains; an error otherwise)."""
    M = V.float_array("trans", trans, ndim=(2, 3))
    single = M.ndim == 2
    M = M[None] if single else M
    n, k, k2 = M.shape
    if k != k2:
        raise ParameterError("trans", f"shape {M.shape}", "square transition matrices (k, k)")
    if (M < 0).any() or (M > 1).any() or (np.abs(M.sum(axis=2) - 1) > 1e-9).any():
        raise ParameterError("trans", "a matrix with entries outside [0, 1] or rows not summing to 1",
                             "row-stochastic matrices")
    pi = _gth(M)
    if pi is None:   # a state that cannot reach the lower ones (transient states): a linear solve
        A = np.transpose(M, (0, 2, 1)) - np.eye(k)[None]
        A[:, -1, :] = 1.0
        b = np.zeros((n, k))
        b[:, -1] = 1.0
        try:
            pi = np.linalg.solve(A, b[..., None])[..., 0]
        except np.linalg.LinAlgError as exc:
            raise ParameterError("trans", "a reducible chain", "irreducible transition matrices "
                                 "(or pass init= explicitly)") from exc
        if (pi < -1e-12).any() or not np.isfinite(pi).all():
            raise ParameterError("trans", "a chain without a unique stationary law", "irreducible matrices")
        pi = np.clip(pi, 0.0, None)
        pi /= pi.sum(axis=1, keepdims=True)
    return cast(np.ndarray, pi[0] if single else pi)


def periodic_stationary_distribution(trans: Any) -> np.ndarray:
    """The law at phase 0 of periodic chains: for one period of matrices M_0 .. M_{P-1} (shape
    (P, k, k), or (n, P, k, k) for n priors; the step X_t -> X_{t+1} uses M_{t mod P}), the
    stationary law pi_0 of the product Q = M_0 M_1 ... M_{P-1}, i.e. the law of X_0 that the
    chain returns to after every full period (pi_0 Q = pi_0; then X_s has law pi_0 M_0 ... M_{s-1}
    at every t = s mod P). Unique when Q is irreducible; an error otherwise.

    >>> day = [[[0.9, 0.1], [0.5, 0.5]], [[0.5, 0.5], [0.1, 0.9]]]   # two phases
    >>> pi0 = periodic_stationary_distribution(day)
    >>> import numpy as np; bool(np.allclose(pi0 @ day[0] @ day[1], pi0))
    True
    """
    M = V.float_array("trans", trans, ndim=(3, 4))
    single = M.ndim == 3
    M = M[None] if single else M
    if M.shape[-1] != M.shape[-2]:
        raise ParameterError("trans", f"shape {M.shape}", "square transition matrices: shape (P, k, k) or (n, P, k, k)")
    Q = M[:, 0].copy()
    for s in range(1, M.shape[1]):
        Q = Q @ M[:, s]
    # the product of row-stochastic matrices is row-stochastic up to rounding
    Q = np.clip(Q, 0.0, 1.0)
    Q /= Q.sum(axis=-1, keepdims=True)
    try:
        pi = stationary_distribution(Q)
    except ParameterError as exc:
        raise ParameterError("trans", "a period whose product M_0 M_1 ... M_{P-1} has no unique stationary law",
                             "matrices whose product over a period is irreducible (or pass init= explicitly)") from exc
    return cast(np.ndarray, pi[0] if single else pi)


def _transition_layout(trans: Any, T: int, period: Any) -> tuple[np.ndarray, int | None]:
    """The matrices as the framework holds them -- (n, k, k) for a time-homogeneous chain,
    (n, P, k, k) for a periodic one (``period=P``) or (n, T - 1, k, k) for a matrix per step --
    and the period (None unless periodic). A 3-D array is always (n, k, k) (n homogeneous
    priors, as it always was) unless ``period`` is given, where (P, k, k) is one periodic prior."""
    M = V.float_array("trans", trans, ndim=(2, 3, 4))
    if M.shape[-1] != M.shape[-2]:
        raise ParameterError("trans", f"shape {M.shape}", "square transition matrices: (k, k) or (n, k, k) "
                             "(time-homogeneous), (n, T - 1, k, k) (a matrix per step) or (n, P, k, k) with "
                             "period=P")
    if period is None:
        if M.ndim == 4 and M.shape[1] != T - 1:
            raise ParameterError("trans", f"shape {M.shape}", f"a matrix per step: shape (n, T - 1, k, k) = "
                                 f"(n, {T - 1}, k, k) for T = {T} (step t maps X_t to X_(t+1)); for one period of "
                                 "matrices repeated over the chain, pass period=P with shape (n, P, k, k)")
        return (M[None] if M.ndim == 2 else M), None
    P = V.integer("period", period, lo=1, hi=100_000)
    if M.ndim == 2:
        raise ParameterError("trans", f"shape {M.shape}", f"one period of matrices for period={P}: shape "
                             f"({P}, k, k) (one prior) or (n, {P}, k, k)")
    M = M[None] if M.ndim == 3 else M
    if M.shape[1] != P:
        raise ParameterError("trans", f"shape {tuple(M.shape)}", f"one period of {P} matrices per prior: shape "
                             f"({P}, k, k) or (n, {P}, k, k) for period={P}")
    return M, P


_MAX_STATES = 64   # the core's limit (cpp/models/markov.cpp)
# the largest row-sum tolerance normalize= accepts: for rounding of estimated matrices, not for
# turning a wrong matrix into another one
_MAX_NORMALIZE = 0.01
# Throughputs of the Markov kernel per CPU second, fitted (non-negative least squares on the
# relative error) to the CPU seconds of bench/markov_cost.py (bench/markov_cost_calibration.json,
# bench/RESULTS.md "Markov cost calibration"; every case within 16 %): multiply-adds of the
# convolutions and passes, atoms walked by the certified W_inf level walk (level set-up included),
# and a fixed cost per conditional law.
_MARKOV_OPS_PER_SECOND = 2.63e9
_MARKOV_W_ATOMS_PER_SECOND = 7.8e7
_MARKOV_LAWS_PER_SECOND = 1.08e5


def _resident_bytes(allocated: float) -> float:
    """Peak resident memory of a Markov kernel call that allocates ``allocated`` bytes at most
    (``markov_peak_bytes``): glibc's per-thread arenas keep freed blocks, measured at 1.26-1.36x
    the allocated bytes when the exact images are built (bench/RESULTS.md, "A year of
    half-hours"), plus the pool threads' stacks and arenas."""
    return 1.4 * allocated + 4.0 * 2**20


def _available_bytes() -> int:
    try:
        import os
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _check_memory(what: str, nbytes: float, ways: Any = None) -> None:
    """Refuse, before allocating, a request that cannot fit in the available memory; ``ways``
    (a string, or a function of the available bytes returning one) says what would work."""
    avail = _available_bytes()
    if nbytes > avail:
        hint = ways(avail) if callable(ways) else ways
        raise ParameterError(what, f"an estimated {nbytes / 2**30:.3g} GiB",
                             f"a request that fits the available memory ({avail / 2**30:.3g} GiB)"
                             + (f": {hint}" if hint else ""))


def _theta_only(fw: Any, what: str) -> None:
    """Refuse a computation over Theta's chains on a :meth:`MarkovChainFramework.box_framework`
    (it would cover the corners only, not the box its name promises)."""
    if getattr(fw, "_over", "theta") == "box":
        raise ParameterError("framework", fw.name, f"a framework whose Theta is its finite set of chains: {what} "
                             "reads the chains themselves, which cover the corners of the box only; calibrate "
                             "with a W_inf-based mechanism (Wasserstein, GeneralWasserstein), which uses the "
                             "certified box bound, or on the fitted framework itself")


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB"


_Item = TypeVar("_Item")


class _Lazy(Sequence[_Item]):
    """A sequence whose items are made on demand by ``_item(i)`` (0 <= i < len): indexing with
    negative indices and slices as a list's."""

    @abstractmethod
    def _item(self, i: int) -> _Item: ...

    @overload
    def __getitem__(self, i: int) -> _Item: ...
    @overload
    def __getitem__(self, i: slice) -> list[_Item]: ...
    def __getitem__(self, i: int | slice) -> _Item | list[_Item]:
        if isinstance(i, slice):
            return [self._item(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._item(i)


class _MarkovSecrets(_Lazy[str]):
    """The secrets X_t = a, t < T, a < k, generated on demand (never T k Python strings);
    ``names`` are the state names used in the labels (default "0" .. "k-1")."""

    def __init__(self, T: int, k: int, names: Sequence[str] | None = None):
        self._T, self._k = T, k
        self._names = [str(a) for a in range(k)] if names is None else list(names)
        self._index = {n: a for a, n in enumerate(self._names)}

    def __len__(self) -> int:
        return self._T * self._k

    def _item(self, i: int) -> str:
        return f"X{i // self._k}={self._names[i % self._k]}"

    def __contains__(self, s: object) -> bool:
        if not isinstance(s, str) or not s.startswith("X") or "=" not in s:
            return False
        t, _, a = s[1:].partition("=")
        return t.isdigit() and int(t) < self._T and a in self._index and s == f"X{int(t)}={a}"


class _MarkovPairs(_Lazy[tuple[str, str]]):
    """The pairs (X_t = a, X_t = b), a < b, generated on demand (never O(T k^2) Python tuples)."""

    def __init__(self, T: int, k: int, names: Sequence[str] | None = None):
        self._T = T
        self._names = [str(a) for a in range(k)] if names is None else list(names)
        self._ab = [(a, b) for a in range(k) for b in range(a + 1, k)]

    def __len__(self) -> int:
        return self._T * len(self._ab)

    def _item(self, i: int) -> tuple[str, str]:
        t, j = divmod(i, len(self._ab))
        a, b = self._ab[j]
        return (f"X{t}={self._names[a]}", f"X{t}={self._names[b]}")


_GRID_SPAN = 1_000_000       # the core's limit on the integer value span (cpp/models/markov.cpp)
_GRID_SUM = 50_000_000       # ... and on T * span


def _float_up(x: Fraction) -> float:
    """The smallest float >= the rational x (exact rounding upward)."""
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _dtype_tolerance(x: Any) -> float:
    """Row-sum tolerance for a probability array given in ``x``'s dtype: 1e-9 for float64 (and
    Python numbers), 16 k u of the dtype for narrower floats (float32: ~1e-6 for small k)."""
    dt = getattr(x, "dtype", None)
    if dt is not None and np.issubdtype(dt, np.floating) and np.finfo(dt).eps > np.finfo(np.float64).eps:
        k = max(int(np.shape(x)[-1]), 1)
        return max(1e-9, 16.0 * k * float(np.finfo(dt).eps))
    return 1e-9


def _prior_name(labels: Sequence[Hashable] | None, j: int, n: int) -> str:
    if labels is not None and len(labels) == n:
        return f"prior {labels[j]!r} (index {j})"
    return f"prior {j}"


def _check_stochastic(M4: np.ndarray, tol: float, labels: Sequence[Hashable] | None,
                      normalized: bool = False) -> None:
    """Name the prior (and matrix of a time-varying chain), row and entry that are not a
    probability law; ``M4`` of shape (n, k, k) or (n, S, k, k)."""
    n, k = M4.shape[0], M4.shape[-1]
    S = M4.shape[1] if M4.ndim == 4 else 1
    M = M4.reshape(n * S, k, k)

    def who(j: int) -> str:
        return _prior_name(labels, j // S, n) + (f", matrix {j % S}" if M4.ndim == 4 else "")

    bad = np.argwhere(M < 0)
    if bad.size:
        j, r, c = (int(v) for v in bad[0])
        raise ParameterError("trans", f"{who(j)}: entry [{r}, {c}] = {float(M[j, r, c]):.10g}",
                             "transition probabilities >= 0")
    bad = np.argwhere(M > 1)
    if bad.size:
        j, r, c = (int(v) for v in bad[0])
        raise ParameterError("trans", f"{who(j)}: entry [{r}, {c}] = {float(M[j, r, c]):.10g}",
                             "transition probabilities <= 1")
    sums = M.sum(axis=2)
    off = np.abs(sums - 1) > tol
    if off.any():
        j, r = (int(v) for v in np.argwhere(off)[0])
        what = f"the stated normalize={tol:.3g}" if normalized else "this dtype"
        raise ParameterError("trans", f"{who(j)}: row {r} = {M[j, r].tolist()} sums to "
                             f"{float(sums[j, r]):.10g}",
                             f"rows summing to 1 (tolerance {tol:.3g} for {what})" + (
                                 "" if normalized else "; for matrices estimated from data and rounded, "
                                 "normalize=TOL divides every row within TOL of 1 by its sum (recorded in "
                                 "the framework's normalization)"))


def _state_grid(values: Any, k: int, T: int) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """(real values, integer grid n_x, step g, offset v0, error e) with |v_x - (v0 + g n_x)| <= e
    (e from exact rational arithmetic on the float inputs).

    Integer values are their own grid (g = 1, v0 = 0, e = 0). Two states: n = (0, 1) or (1, 0),
    g = |v1 - v0| (S = T v_min + g N, N = the count of the larger state). More states: a common
    step g with v_x = v_min + g n_x, found from the ratios (v_x - v_min) / (smallest gap) as
    fractions with the smallest denominators within 1e-9 relative, then checked."""
    if values is None:
        n = np.arange(k, dtype=np.int64)
        return n.astype(np.float64), n, 1.0, 0.0, 0.0
    raw = np.asarray(values)
    if raw.dtype.kind == "b":
        raise ParameterTypeError("values", values, f"{k} real state values")
    v = V.float_array("values", values, ndim=1)
    if v.shape != (k,):
        raise ParameterError("values", values, f"{k} state values (one per state), got shape {v.shape}")
    if np.issubdtype(raw.dtype, np.integer) or (np.all(v == np.round(v)) and np.abs(v).max() < 2.0 ** 52):
        n = np.round(v).astype(np.int64) if not np.issubdtype(raw.dtype, np.integer) else raw.astype(np.int64)
        return v, n, 1.0, 0.0, 0.0
    vmin, vmax = float(v.min()), float(v.max())
    if vmin == vmax:
        return v, np.zeros(k, dtype=np.int64), 1.0, vmin, 0.0
    gaps = np.diff(np.unique(v))
    ref = float(gaps.min())
    fr: list[Fraction] = []
    for x in v:
        r = (float(x) - vmin) / ref
        for den in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 25, 50, 100, 1000, 10_000, 100_000, 1_000_000):
            f = Fraction(r).limit_denominator(den)
            if abs(float(f) - r) <= 1e-9 * max(1.0, abs(r)):
                break
        else:
            raise ParameterError("values", values, "state values on a common grid v_min + g n (n integers): "
                                 f"value {float(x)!r} is not a rational multiple of the smallest gap {ref!r}")
        fr.append(f)
    q = 1
    for f in fr:
        q = q * f.denominator // math.gcd(q, f.denominator)
    n = np.array([int(f * q) for f in fr], dtype=np.int64)
    span = int(n.max())
    if span > _GRID_SPAN or T * span > _GRID_SUM:
        raise ParameterError("values", values, f"a common grid step with at most {_GRID_SPAN} steps across the "
                             f"values and T * steps <= {_GRID_SUM} (this grid needs {span} steps of "
                             f"{ref / q!r}; round the values to fewer significant digits)")
    g = ref / q
    err = max(abs(Fraction(float(x)) - (Fraction(vmin) + Fraction(g) * int(m))) for x, m in zip(v, n))
    e = float(err)
    e = math.nextafter(e, math.inf) if e > 0 else 0.0
    if e > 1e-6 * max(abs(vmin), abs(vmax)):
        raise ParameterError("values", values, f"values within 1e-6 (relative) of a grid v_min + g n, "
                             f"g = {g!r} (worst error {e!r})")
    return v, n, g, vmin, e


class MarkovChainFramework(Framework):
    """Secrets X_t = a of a k-state Markov chain of length T, sum query S = sum_t values[X_t],
    priors Theta = {(P_theta, init_theta)}; pairs (X_t = a, X_t = b) for every t and a < b.
    P_theta is one matrix, one per phase of a period, or one per step (:func:`markov_chain`).

    Conditional laws are computed in C++ (forward/backward + convolution, underflow-safe) for all
    priors at once; :meth:`w_inf` runs the whole Delta_G computation in the core on all threads.
    """

    def __init__(self, trans: Any, T: int, *, init: Any = "stationary", values: Any = None,
                 labels: Sequence[Hashable] | None = None, threads: int = 0,
                 states: Sequence[Hashable] | None = None, normalize: float | None = None,
                 period: int | None = None):
        raw = trans
        ntol = None if normalize is None else V.real(
            "normalize", normalize, lo=0.0, hi=_MAX_NORMALIZE, lo_open=True,
            expected=f"None or a row-sum tolerance in (0, {_MAX_NORMALIZE}] (rows within it of 1 are divided by "
                     "their sum)")
        T = V.integer("T", T, lo=1, hi=100_000)
        M, per = _transition_layout(trans, T, period)
        n, k = M.shape[0], M.shape[-1]
        if k > _MAX_STATES:
            raise ParameterError("trans", f"{k} states", f"at most {_MAX_STATES} states (the core's limit)")
        if k < 2:
            raise ParameterError("trans", f"{k} state", "a chain with at least 2 states (a secret pair needs two)")
        if labels is not None and isinstance(labels, (str, bytes)):
            raise ParameterTypeError("labels", labels, f"a sequence of {n} prior labels")
        lab = None if labels is None else list(labels)
        tol = _dtype_tolerance(raw)
        row_err = float(np.max(np.abs(M.sum(axis=-1) - 1.0)))
        # (+ 1e-12: the float row sum's own rounding, so that 0.999 passes normalize=1e-3)
        _check_stochastic(M, tol if ntol is None else max(tol, ntol + 1e-12), lab, normalized=ntol is not None)
        if tol > 1e-9 or ntol is not None:
            # a narrower float type: rows off by its rounding are renormalised in float64 (the
            # law the user meant); float64 input is used as given unless normalize= says otherwise
            M = M / M.sum(axis=-1, keepdims=True)
        if isinstance(init, str):
            if init != "stationary":
                raise ParameterError("init", init, "'stationary' (each prior's stationary law"
                                     + ("" if M.ndim == 3 else ", periodic: at phase 0") + ") or an array "
                                     f"of initial laws of shape ({k},) or ({n}, {k})")
            pi = stationary_distribution(M) if M.ndim == 3 else periodic_stationary_distribution(M)
        else:
            pi = V.float_array("init", init, ndim=(1, 2))
            if pi.shape[-1] != k or (pi.ndim == 2 and pi.shape[0] != n):
                raise ParameterError("init", f"shape {pi.shape}", f"initial laws over the {k} states: "
                                     f"shape ({k},) (one law for every prior) or ({n}, {k}) (one per prior)")
            pi = np.broadcast_to(pi, (n, k)).copy() if pi.ndim == 1 else pi
            itol = _dtype_tolerance(init) if ntol is None else max(_dtype_tolerance(init), ntol + 1e-12)
            neg = np.argwhere(pi < 0)
            if neg.size:
                j, x = (int(v) for v in neg[0])
                raise ParameterError("init", f"{_prior_name(lab, j, n)}: P(X_0 = state {x}) = {float(pi[j, x]):.10g}",
                                     "probabilities >= 0")
            sums = pi.sum(axis=1)
            off = np.abs(sums - 1) > itol
            if off.any():
                j = int(np.argmax(off))
                raise ParameterError("init", f"{_prior_name(lab, j, n)}: the initial law {pi[j].tolist()} sums to "
                                     f"{float(sums[j]):.10g}",
                                     f"an initial law summing to 1 (tolerance {itol:.3g})" + (
                                         "; normalize=TOL divides laws within TOL of 1 by their sum"
                                         if ntol is None else ""))
            row_err = max(row_err, float(np.max(np.abs(sums - 1.0))))
            if itol > 1e-9:
                pi = pi / pi.sum(axis=1, keepdims=True)
        real, grid, step, offset, gerr = _state_grid(values, k, T)
        if states is None:
            names = [str(a) for a in range(k)]
        else:
            if isinstance(states, (str, bytes)):
                raise ParameterTypeError("states", states, f"a sequence of {k} state names")
            names = [str(a) for a in states]
            if len(names) != k:
                raise ParameterError("states", list(states), f"{k} state names (one per state)")
            if len(set(names)) != k:
                dup = next(a for a in names if names.count(a) > 1)
                raise ParameterError("states", dup, "distinct state names (this one repeats)")
            if any(a == "" for a in names):
                raise ParameterError("states", list(states), "non-empty state names")
        self._normalization: dict[str, float] | None = (None if ntol is None else
                                                        {"tolerance": ntol, "max_row_error": row_err})
        self._M: np.ndarray = np.ascontiguousarray(M)     # (n, k, k), or (n, S, k, k) time-varying
        self._period: int | None = per                     # P of a periodic chain, else None
        self._pi: np.ndarray = np.ascontiguousarray(pi)
        self._vals = grid.astype(np.int64)
        self._real: np.ndarray = real
        self._step, self._offset, self._grid_err = step, offset, gerr
        self._names = names
        self._T = T
        self._k: int = k
        self._threads = V.threads(threads)
        thetas: list[Hashable] = list(range(n)) if lab is None else list(lab)
        if len(thetas) != n:
            raise ParameterError("labels", labels, f"{n} prior labels")
        if len(set(thetas)) != n:
            dup_label = next(t for t in thetas if thetas.count(t) > 1)
            raise ParameterError("labels", dup_label, "distinct prior labels (this one repeats)")
        span = _float_up(Fraction(float(real.max())) - Fraction(float(real.min()))) \
            if step != 1.0 or offset != 0.0 else float(self._vals.max() - self._vals.min())
        self._setup(_MarkovSecrets(T, k, names), _MarkovPairs(T, k, names), thetas, {}, {}, 1,
                    f"Markov chain (k={k}, T={T}, |Theta|={n}" + (
                        "" if M.ndim == 3 else f", period {per}" if per is not None else ", a matrix per step") + (
                        "" if ntol is None else f", rows renormalised within {ntol:g}") + ")",
                    _float_up(T * Fraction(span)),
                    "the whole chain is one correlated group: the sum changes by up to T * (max - min value)",
                    lazy=True)
        self._computed = False
        self._fit: Any = None
        self._over = "theta"           # what w_inf() covers by default ("box": box_framework())
        self._box: Any = None          # the cached BoxBound

    def query_range(self) -> tuple[float, float]:
        """[T min v, T max v] (the sum of T state values; rounded outward): see
        :meth:`Framework.query_range <puffer.framework.Framework.query_range>`."""
        lo, hi = Fraction(float(self._real.min())) * self._T, Fraction(float(self._real.max())) * self._T
        return -_float_up(-lo) + 0.0, _float_up(hi) + 0.0   # + 0.0: no -0.0

    def query_lattice(self) -> tuple[float, float] | None:
        """For integer state values: (gcd of their differences, T min v); else None (see
        :meth:`Framework.query_lattice <puffer.framework.Framework.query_lattice>`)."""
        from ..framework import _integer_lattice

        lat = _integer_lattice(self._real)
        if lat is None or not abs(lat[1] * self._T) < 2.0 ** 52:
            return None
        return lat[0], lat[1] * self._T

    def _set_fit(self, rec: Any) -> None:
        """Attach the record of :func:`puffer.models.fit_markov` (once, at construction)."""
        self._fit = rec
        self._name = self._name[:-1] + f", fitted: {rec.method} at level {rec.level:g})"

    def box_bound(self, *, max_boxes: int = 1024, seconds: float = 30.0) -> Any:
        """The :class:`~puffer.models.box.BoxBound` of a fitted framework: Delta_G certified over
        every chain of the credible box, beside the corner maximum (computed once, then cached;
        ``max_boxes`` and ``seconds`` bound the branch and bound, see
        :func:`puffer.models.box.box_w_inf`)."""
        from .box import box_w_inf

        if self._box is None or (max_boxes, seconds) != self._box[0]:
            self._box = ((max_boxes, seconds), box_w_inf(self, max_boxes=max_boxes, seconds=seconds))
        return self._box[1]

    def _box_sensitivity(self) -> Sensitivity:
        # the bound computed last (a box framework's own, with the budget it was made with)
        b = self._box[1] if self._box is not None else self.box_bound()
        params = {**b.to_dict(), "corner_witness": None if b.corner_witness is None else
                  [str(b.corner_witness[0]), list(b.corner_witness[1])]}
        return Sensitivity(b.bound, "w_inf", None, None, (), params)

    def box_framework(self, *, max_boxes: int = 1024, seconds: float = 30.0) -> MarkovChainFramework:
        """The same fitted framework with Theta = every chain of the credible box: its
        :meth:`w_inf` is the certified box bound (:meth:`box_bound`), so a W_inf-based mechanism
        calibrated on it (``Wasserstein``, ``GeneralWasserstein``) covers every adversary whose
        belief lies in the box; its name and digest say so, and the sensitivity's ``params``
        record the bound, the corner maximum and their ratio. The conditional laws (law-based
        mechanisms) exist for Theta's chains only and are refused."""
        import copy

        from .theta import _fit_of

        _fit_of(self)
        b = self.box_bound(max_boxes=max_boxes, seconds=seconds)
        other = copy.copy(self)
        other._over = "box"
        other._box = self._box
        other._name = self._name[:-1] + f"; Theta = the whole credible box: Delta_G <= {b.bound:g}, corners {b.corner_max:g})"
        return other

    @property
    def fit(self) -> Any:
        """None, or the :class:`~puffer.models.fit.MarkovFit` of a framework built by
        :func:`~puffer.models.fit_markov` (how Theta was obtained: method, level, counts, data
        digest, warnings, the credible box)."""
        return self._fit

    # read-only views of the model (used by puffer.mechanisms.MarkovQuilt)
    @property
    def transitions(self) -> np.ndarray:
        """The transition matrices (float64, rows summing to 1), as given: shape (|Theta|, k, k)
        for a time-homogeneous chain, (|Theta|, P, k, k) for a periodic one (:attr:`period`) and
        (|Theta|, T - 1, k, k) for one with a matrix per step; ``transitions[:, s]`` is the law
        of X_{t+1} given X_t for every step t with t mod P = s (t = s for a matrix per step)."""
        return cast(np.ndarray, self._M.copy())

    @property
    def period(self) -> int | None:
        """P for a periodic chain (``period=P``), else None (time-homogeneous, or a matrix per
        step: see :attr:`time_varying`)."""
        return self._period

    @property
    def time_varying(self) -> bool:
        """True when the transition matrices depend on the step (periodic or per step)."""
        return self._M.ndim == 4

    def step_matrices(self, t: int) -> np.ndarray:
        """The matrices of the step X_t -> X_{t+1} (0 <= t < T - 1) of every prior, shape
        (|Theta|, k, k)."""
        t = V.integer("t", t, lo=0, hi=max(self._T - 2, 0))
        M = self._M if self._M.ndim == 3 else self._M[:, t % self._M.shape[1]]
        return cast(np.ndarray, M.copy())

    @property
    def _core_period(self) -> int:
        """Matrices per prior as the core reads them (1 for a time-homogeneous chain)."""
        return 1 if self._M.ndim == 3 else int(self._M.shape[1])

    @property
    def initial_laws(self) -> np.ndarray:
        """The initial laws P(X_0 = .), shape (|Theta|, k)."""
        return cast(np.ndarray, self._pi.copy())

    @property
    def normalization(self) -> dict[str, float] | None:
        """None, or what ``normalize=`` did: ``{"tolerance": the stated row-sum tolerance,
        "max_row_error": the largest |row sum - 1| of the matrices (and initial laws) given}``; the
        framework's laws are those of the rows divided by their sums."""
        return None if self._normalization is None else dict(self._normalization)

    @property
    def state_values(self) -> np.ndarray:
        """The state values v (in the units given; the query is S = sum_t v[X_t])."""
        return cast(np.ndarray, self._real.copy())

    @property
    def state_names(self) -> list[str]:
        """The state names used in the secret labels ``"X{t}={name}"``."""
        return list(self._names)

    @property
    def grid_error(self) -> float:
        """max_x |v_x - (v_min + g n_x)| of the integer grid handed to the core (0 for integer
        values and for values exactly on the grid), an upper bound."""
        return self._grid_err

    @property
    def priors(self) -> list[Hashable]:
        """The prior labels, in the order of :attr:`transitions`."""
        return list(self._thetas)

    @property
    def length(self) -> int:
        """T, the number of steps."""
        return self._T

    def _label(self, t: int, a: int) -> str:
        return f"X{t}={self._names[a]}"

    def _to_units(self, w: float) -> float:
        """A grid distance (in steps of the integer grid) in the units of the values, rounded up,
        plus 2 T e: the real sum differs from the grid sum by at most T e on every path, so W_inf
        moves by at most 2 T e."""
        if (self._step == 1.0 and self._offset == 0.0) or w < 0 or not math.isfinite(w):
            return w
        return _float_up(Fraction(w) * Fraction(self._step) + 2 * self._T * Fraction(self._grid_err))

    def __repr__(self) -> str:
        # one line, and nothing computed (the base counts skipped pairs, which builds every law)
        return (f"MarkovChainFramework({self.name!r}: {len(self._secrets)} secrets, {len(self._pairs)} pairs, "
                f"values={[float(x) for x in self._real]})")

    @property
    def _identity_grid(self) -> bool:
        """True when the core's integer sums are the query's values (integer state values), so
        kernels that work on grid sums (the Markov Kantorovich / DAGWM paths) need no units."""
        return self._step == 1.0 and self._offset == 0.0

    def _check_exact_laws(self, R: int) -> None:
        """Laws in value units (atoms T v_min + g s) must be exact: refused when the values are off
        their grid (grid_error > 0) or an atom would be rounded, since the law-based mechanisms
        (Kantorovich, GAWM, DAGWM, w_p, near_radius) have no margin for either (w_inf has one)."""
        if self._identity_grid:
            return
        use = "integer state values (e.g. tenths of a kWh as 1, 2, 3), or a w_inf-based mechanism " \
              "(Wasserstein, GeneralWasserstein, MarkovQuilt), which adds the margin"
        if self._grid_err > 0:
            raise ParameterError("values", list(self._real), "values exactly on a grid v_min + g n for the "
                                 f"conditional laws (these are off it by up to {self._grid_err!r}); use " + use)
        g, o = Fraction(self._step), Fraction(self._offset) * self._T
        den = max(g.denominator, o.denominator)   # both powers of two
        if abs(g.numerator) * (den // g.denominator) * max(R - 1, 1) + abs(o.numerator) * (den // o.denominator) >= 2**53:
            raise ParameterError("values", list(self._real), "values whose sums T v_min + g s are exact doubles "
                                 "for the conditional laws; use " + use)

    def _laws_block(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _core.models.markov_sum_laws(self._M[lo:hi], self._pi[lo:hi], self._vals, self._T, self._threads)

    def _ensure_laws(self) -> None:
        if self._computed:
            return
        if self._over == "box":
            raise ParameterError("framework", self.name, "a framework whose conditional laws cover its Theta: the "
                                 "box framework's laws exist for the corners only, so only W_inf-based mechanisms "
                                 "(Wasserstein, GeneralWasserstein: they use the certified box bound) apply")
        import math

        from .._transport_laws import LogDiscreteDist

        k, T = self._k, self._T
        span = int(self._vals.max() - self._vals.min())
        # CSR laws: atoms + masses (16 B) per support point; a sum of T values from k integers
        # takes at most min(T span + 1, C(T + k - 1, k - 1)) distinct values
        support = min(T * span + 1, math.comb(T + k - 1, k - 1))
        self._check_exact_laws(T * span + 1)
        # + one backward store per worker (cpp/models/markov.hpp)
        stores = _resident_bytes(_core.models.markov_peak_bytes(k, T, span, len(self._thetas), self._threads,
                                                                period=self._core_period))
        _check_memory("framework", 16.0 * len(self._thetas) * T * k * support + stores,
                      lambda avail: self._alternatives(avail, "the conditional laws of every prior and position "
                                                       "are stored for conditional(), pair_laws() and the "
                                                       "law-based mechanisms (Kantorovich Thm 1, GAWM, w_p)"))
        A, P, O, S, L = self._laws_block(0, len(self._thetas))
        for th_i, th in enumerate(self._thetas):
            for t in range(T):
                for a in range(k):
                    j = (th_i * T + t) * k + a
                    self._sprob[(th, self._label(t, a))] = float(S[j])
                    if O[j + 1] > O[j]:
                        # laws spanning more than the double range come as log masses: a float
                        # law would lose tail atoms or the order of tail levels (and W_inf)
                        law_type = LogDiscreteDist if L[j] else DiscreteDist
                        atoms = A[O[j]:O[j + 1]]
                        if not self._identity_grid:
                            atoms = T * self._offset + self._step * atoms   # exact (_check_exact_laws)
                        self._laws[(th, self._label(t, a))] = law_type(atoms, P[O[j]:O[j + 1]], normalize=True)
        self._computed = True

    def conditional(self, theta: Hashable, secret: Hashable) -> DiscreteDist | None:
        self._ensure_laws()
        return super().conditional(theta, secret)

    def pair_laws(self) -> Iterator[tuple[Hashable, tuple[Hashable, Hashable], Any, Any]]:
        self._ensure_laws()
        return super().pair_laws()

    @property
    def skipped(self) -> list[tuple[Hashable, tuple[Hashable, Hashable], str]]:
        self._ensure_laws()
        return super().skipped

    def _w_inf_bytes(self, threads: int | None = None, block: int | None = None, reference: bool = False) -> float:
        """Peak bytes of :meth:`w_inf` on ``threads`` threads, ``block`` priors per call into the
        core: the W table of every prior and the kernel's peak as it schedules the work."""
        thr = self._threads if threads is None else threads
        n, k, T = len(self._thetas), self._k, self._T
        span = int(self._vals.max() - self._vals.min())
        at_once = n if block is None else min(n, block)
        return 8.0 * n * T * (k * (k - 1) // 2) + \
            _resident_bytes(_core.models.markov_peak_bytes(k, T, span, at_once, thr, reference,
                                                           period=self._core_period))

    def _alternatives(self, avail: float, why: str) -> str:
        """What works when a law-storing computation does not fit: w_inf only when it fits."""
        w = self._w_inf_bytes()
        if w <= avail:
            first = (f"{why}; the W_inf-based mechanisms (Wasserstein, GeneralWasserstein) store no law and "
                     f"fit (w_inf: an estimated {_gib(w)})")
        else:
            first = (f"{why}; w_inf() would not fit either (an estimated {_gib(w)}): fewer priors per call "
                     "or a shorter chain")
        return (first + "; or puffer.mechanisms.MarkovQuilt(fw, eps=...), which stores no law; fw.cost() "
                "estimates w_inf before computing")

    @staticmethod
    def _threads_used(threads: int) -> int:
        import os

        return threads or (os.cpu_count() or 1)

    #: priors whose skipping plan :meth:`cost` computes (evenly spaced; the others are taken alike)
    _COST_PLANS = 8

    def _auto_operations(self, th: int) -> tuple[float, int] | None:
        """Multiply-adds of ``w_inf(method="auto")`` for prior ``th`` by its skipping plan (the
        plan that w_inf computes: cpp/models/markov_skip.hpp), and the positions whose laws it
        computes; None where the plan declines (the direct computation then runs). The parts, as
        docs/long-chains.md lists them: the windows tried (a doubling: about twice the last), the
        two streams without checkpoints (k^2 T (T span + 1)), the laws of the m positions at each
        end and of one representative per phase (k convolutions of a forward and a backward row
        each). Positions the certificate leaves to later rounds or to the direct computation are
        not predicted (persistent chains at T = 17,520: none or a few percent)."""
        k, T = self._k, self._T
        span = int(self._vals.max() - self._vals.min())
        plan = _core.models.markov_skip_plan(self._M[th:th + 1], self._pi[th:th + 1], self._vals, T)
        if not plan["usable"]:
            return None
        m, p = int(plan["m"]), int(plan["period"])
        t = np.arange(T, dtype=np.float64)
        laws = k * ((t + 1) * span + 1) * ((T - 1 - t) * span + 1)
        mid = (m + T - 1 - m) // 2
        L1, L2 = m * span + 1.0, (m + p) * span + 1.0
        windows = 2.0 * p * (2.0 * k ** 3 * L1 * L2 + k ** 3 * L2 * (m + p))
        streams = float(k * k) * T * (T * span + 1)
        ops = windows + streams + float(laws[:m].sum() + laws[T - m:].sum()) + p * float(laws[mid])
        return ops, 2 * m + p

    def cost(self, *, threads: int | None = None, method: str = "auto") -> Cost:
        """Estimated cost of :meth:`w_inf` with ``method`` before computing it: multiply-adds,
        the peak memory (an upper bound of what the core allocates as it schedules the priors:
        checkpoints, per-worker buffers, exact images, cpp/models/markov.hpp, plus the W table)
        and seconds on an unloaded machine (per-thread throughputs calibrated in
        bench/RESULTS.md, "Markov cost calibration"; a machine shared with other jobs takes
        longer).

        ``method="full"``: every position, k T^3 span^2 / 6 multiply-adds of convolutions per
        prior plus the passes. ``method="auto"`` (the default, as for :meth:`w_inf`): the
        operations of the certified skipping where its plan is usable (the windows, two streams,
        the positions near both ends and the representatives: :meth:`_auto_operations`; the plans
        of up to eight evenly spaced priors are computed, milliseconds each, and the other
        priors are taken alike), the direct computation where it declines.

        >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=2000)
        >>> c = fw.cost(threads=2, method="full")
        >>> f"{c.operations:.3g}", 10e6 < c.peak_bytes < 48e6
        ('2.71e+09', True)
        >>> fw.cost(threads=2).operations < c.operations / 10    # the skipping computes ~90 positions
        True
        """
        thr = self._threads if threads is None else V.threads(threads)
        if method not in ("auto", "full"):
            raise ParameterError("method", method, "'auto' (certified skipping of interior positions) or 'full'")
        k, T, n = self._k, self._T, len(self._thetas)
        span = int(self._vals.max() - self._vals.min())
        R = T * span + 1
        per_prior = _core.models.markov_prior_operations(k, T, span)
        w_per_position = float(k * (k - 1) // 2 * 2 * R)
        full_prior = (per_prior, T)
        prior_ops = [full_prior]
        if method == "auto":
            sample = sorted({round(j * (n - 1) / max(1, self._COST_PLANS - 1)) for j in range(min(n, self._COST_PLANS))})
            prior_ops = [self._auto_operations(th) or full_prior for th in sample]
        ops = n * float(np.mean([o for o, _ in prior_ops]))
        positions = n * float(np.mean([q for _, q in prior_ops]))
        workers = self._threads_used(thr)   # priors, or the positions of fewer priors, in parallel
        peak = _resident_bytes(_core.models.markov_peak_bytes(k, T, span, n, thr, period=self._core_period)) \
            + 8.0 * n * T * (k * (k - 1) // 2)
        seconds = (ops / _MARKOV_OPS_PER_SECOND + positions * w_per_position / _MARKOV_W_ATOMS_PER_SECOND
                   + positions * k / _MARKOV_LAWS_PER_SECOND) / workers
        return Cost(ops + positions * w_per_position, peak, seconds)

    def _w_table(self, lo: int, hi: int, threads: int, report: Any = None, reference: bool = False,
                 full: bool = False) -> np.ndarray:
        """W_inf of every pair of the priors [lo, hi): shape (hi - lo, T, k(k-1)/2), -1 where a
        secret is impossible (the core's table; deterministic, whatever the threads). ``full``:
        every position computed (no certified skipping; the same table)."""
        W, _ = _core.models.markov_w_inf(self._M[lo:hi], self._pi[lo:hi], self._vals, self._T, threads, 1e-9,
                                         reference, report, full=full)
        return W

    def _check_w_inf_memory(self, block: int, threads: int, reference: bool = False) -> None:
        n = len(self._thetas)

        def ways(avail: float) -> str:
            # the most workers (= priors at once) that fit, else a shorter chain
            fit = max((m for m in range(1, min(n, self._threads_used(threads)) + 1)
                       if self._w_inf_bytes(m, m, reference) <= avail), default=0)
            first = (f"fewer priors at once: threads={fit} or block={fit}" if fit >= 1 else
                     f"a shorter chain (one worker alone needs an estimated {_gib(self._w_inf_bytes(1, 1, reference))})")
            return (first + "; or a cluster (puffer.dask.w_inf / puffer.spark.w_inf); or "
                    "puffer.mechanisms.MarkovQuilt(fw, eps=...), which computes no W_inf and stores no law; "
                    "fw.cost() gives these estimates before computing")
        _check_memory("framework", self._w_inf_bytes(threads, block, reference), ways)

    def _sensitivity_from_table(self, W: np.ndarray) -> Sensitivity:
        """Delta_G, its witness (the first maximum in (prior, position, pair) order) and the
        per-pair records (small tables only) from the full W table."""
        k = self._k
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
        if not (W >= 0).any():
            raise ParameterError("framework", self.name, "at least one pair of possible secrets")
        th, t, pr = (int(x) for x in np.unravel_index(int(np.argmax(W)), W.shape))
        a, b = pairs[pr]
        wit = (self._thetas[th], (self._label(t, a), self._label(t, b)))
        recs: tuple[PairRecord, ...] = ()
        if W.size <= 20_000:
            recs = tuple(PairRecord(self._thetas[i], (self._label(tt, pairs[p][0]), self._label(tt, pairs[p][1])),
                                    self._to_units(float(W[i, tt, p])))
                         for i, tt, p in zip(*(ix.tolist() for ix in np.nonzero(W >= 0))))
        return Sensitivity(self._to_units(float(W[th, t, pr])), "w_inf", wit, None, recs)

    def w_inf(self, norm: float | None = None, *, threads: int | None = None, block: int = 1024,
              progress: Any = None, method: str = "auto", over: str | None = None,
              _reference: bool = False) -> Sensitivity:
        """Delta_G over all priors, positions and state pairs, computed entirely in the core:
        each position's conditional laws are built and fed straight to a 1-D W_inf walk over their
        cumulative levels, priors in parallel, no law stored. Levels closer than their rounding
        bound are compared exactly (modulo three random 50-bit primes: equal levels tie, and a
        false "equal" has probability < 1e-19 per comparison); different levels that close keep
        an unknown order and the walk takes the larger distance, so W_inf is never
        under-reported and is exact unless two exact levels differ by less than ~T eps.

        The arithmetic is exact in range (cpp/models/markov.hpp): every reachable sum keeps a
        positive mass with relative error ~T eps however small (no underflow), so W_inf never
        loses a tail atom. Memory grows like T^1.5 (checkpointed passes; :meth:`cost` gives the
        peak, e.g. ~0.6 GB for T = 17,520, k = 2 on 2 threads). ``progress``: None (a bar on
        a terminal once the job has run a second; into a pipe or a log file a plain line every
        5 s), True, False or a callable ``f(done, total)`` (units: priors x positions). Ctrl-C stops the computation
        within ~0.1 s (KeyboardInterrupt). Memory is estimated first and a request that cannot
        fit is refused with the estimate in GiB.

        ``method``: ``"auto"`` (default) computes the positions near both ends of the chain and
        one representative position per phase in the middle, and gives every interior position
        the representative's W_inf where a certificate proves it is the value the direct
        computation would give there (the page "Long chains" of the documentation: a window
        bound on how much a law can change per step, in extended-range arithmetic with rounding
        bounds, and a walk with a widened band; every other position is computed). ``"full"``
        computes every position; the two return the same Sensitivity, bit for bit. A year of
        half-hours (T = 17,520, k = 2) takes seconds instead of minutes on a chain that forgets
        its start.

        >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=400)
        >>> fw.w_inf().value == fw.w_inf(method="full").value
        True

        On a cluster, :func:`puffer.dask.w_inf` / :func:`puffer.spark.w_inf` split the priors
        between the workers and return the same Sensitivity.

        ``over``: ``"theta"`` (the default) -- the finite Theta above; ``"box"`` (a framework
        from :func:`~puffer.models.fit_markov` only) -- a certified upper bound of Delta_G over
        every chain of the fit's credible box (:mod:`puffer.models.box`), with the corner
        maximum (Delta_G over Theta, a lower bound of the box's supremum) and how loose it may
        be in ``params`` (``bound``, ``corner_max``, ``ratio``, ``over``); see
        :meth:`box_framework` to calibrate with it. None: the framework's own (``"box"`` for a
        :meth:`box_framework`).
        """
        from .._progress import resolve

        which = self._over if over is None else over
        if which not in ("theta", "box"):
            raise ParameterError("over", over, "'theta' (the finite Theta) or 'box' (every chain of a fitted "
                                 "framework's credible box)")
        if which == "box":
            if norm is not None:
                raise ParameterError("norm", norm, "None for a 1-D query (norms apply to R^d, d > 1)")
            return self._box_sensitivity()

        if norm is not None:
            # the sum of a chain is 1-D: every norm is |x - y|, and accepting one would hide a
            # mistake (the same refusal as Framework.w_inf)
            raise ParameterError("norm", norm, "None for a 1-D query (norms apply to R^d, d > 1)")
        thr = self._threads if threads is None else V.threads(threads)
        n, T = len(self._thetas), self._T
        block = V.integer("block", block, lo=1)
        if method not in ("auto", "full"):
            raise ParameterError("method", method, "'auto' (certified skipping of interior positions) or 'full'")
        self._check_w_inf_memory(block, thr, _reference)
        cb = resolve(progress, label=f"Markov Delta_G (T={T})")
        done_before = [0]

        def report(done: int, total: int) -> None:
            assert cb is not None
            cb(done_before[0] + done, n * T)

        blocks = []
        for lo in range(0, n, block):
            hi = min(lo + block, n)
            blocks.append(self._w_table(lo, hi, thr, None if cb is None else report, _reference, method == "full"))
            done_before[0] += (hi - lo) * T
        sens = self._sensitivity_from_table(np.concatenate(blocks, axis=0))
        if self._fit is not None:   # a fitted Theta: the guarantee says what it covers
            import dataclasses

            sens = dataclasses.replace(sens, params={**sens.params, "over": "theta", "covers": (
                "the chains of Theta (the fit's estimate and the credible box's extreme matrices); every chain of "
                "the box: w_inf(over='box')")})
        return sens

    def digest(self) -> str:
        import hashlib
        h = hashlib.sha256()
        for arr in (self._M, self._pi, self._vals, self._real, np.array([self._T])):
            h.update(np.ascontiguousarray(arr).tobytes())
        if self._M.ndim == 4:   # (homogeneous chains keep the digest they always had)
            h.update(repr(("time-varying", self._M.shape, self._period)).encode())
        h.update("\x00".join(self._names).encode())
        if self._over == "box":      # Theta = the whole credible box (a different framework)
            h.update(repr(("box", self._box[1].bound if self._box else None)).encode())
        return "sha256:" + h.hexdigest()[:32]


def markov_chain(trans: Any, T: int, *, init: Any = "stationary", values: Any = None,
                 labels: Sequence[Hashable] | None = None, threads: int = 0,
                 states: Sequence[Hashable] | None = None, normalize: float | None = None,
                 period: int | None = None) -> MarkovChainFramework:
    """A :class:`MarkovChainFramework`: ``trans`` of shape (k, k) (one prior) or (n, k, k) (a set
    Theta; ``labels`` names the priors), ``init`` ``"stationary"`` or initial laws (shape (k,) for
    every prior or (n, k)), ``values`` the real state values (default 0..k-1; e.g. kWh levels),
    ``states`` the state names used in the secret labels (default "0".."k-1"); sum query
    S = sum_t values[X_t] over T steps X_0 .. X_{T-1}.

    Time-varying chains (Song, Wang, Chaudhuri 2017 and Pierquin et al. 2024 allow any transition
    structure): ``trans`` of shape (n, T - 1, k, k) gives a matrix per step, ``trans[:, t]`` the
    law of X_{t+1} given X_t; with ``period=P``, ``trans`` of shape (n, P, k, k) (or (P, k, k) for
    one prior) is one period repeated over the chain: the step X_t -> X_{t+1} uses
    ``trans[:, t % P]``, so X_0 is at phase 0 (e.g. P = 48 half-hours of a day and a release
    starting at midnight; for a release starting at phase s pass ``np.roll(trans, -s, axis=1)``).
    A 3-D array without ``period`` is always a set of time-homogeneous priors (n, k, k), as
    before; a matrix-per-step chain of one prior is ``trans[None]``. ``init="stationary"`` is the
    stationary law of each prior for a homogeneous chain and, for a time-varying one, the
    periodic stationary law at phase 0 (:func:`periodic_stationary_distribution`: the
    stationary law of the product of one period's matrices M_0 M_1 ... M_{P-1}; for a matrix per
    step, of the T - 1 matrices in order). :attr:`MarkovChainFramework.transitions` holds the
    matrices as given.

    float32 (or narrower) matrices are accepted with a row-sum tolerance of 16 k u of their
    dtype and renormalised in float64. Matrices estimated from data and rounded (rows summing to
    0.999) are refused unless ``normalize=TOL`` (at most 0.01) states a tolerance: every row (and
    initial law) within TOL of 1 is divided by its sum, the rest are refused, and the framework
    records it (:attr:`MarkovChainFramework.normalization`, and its name). Non-integer values are mapped to an integer grid
    v_x = v_min + g n_x for the core (two states: any reals; more: a common step g found by
    exact rational arithmetic); sensitivities are returned in the units of the values, scaled by
    g and widened by the grid's rounding (2 T max|v - v_grid|), so they stay upper bounds. The
    conditional laws (``conditional``, ``pair_laws``) are those of the grid values v_grid: exact
    when the values lie on the grid (two states, or e.g. 0.25 / 1.0 / 1.75), within T e of the
    true sums otherwise (e = the grid error, recorded in ``grid_error``; 0.1 / 0.2 / 0.3 give
    e ~ 1e-17). Only :meth:`MarkovChainFramework.w_inf` adds the margin.

    >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5, values=[0.25, 1.75], states=["off", "on"])
    >>> fw.w_inf().value, fw.pairs[0]
    (7.5, ('X0=off', 'X0=on'))

    >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)   # the peers' published tests §1.2: Delta_G = 5
    >>> fw.w_inf().value
    5.0
    >>> est = markov_chain([[0.899, 0.1], [0.2, 0.8]], T=5, normalize=1e-3)   # a rounded estimate
    >>> est.normalization["tolerance"], round(est.normalization["max_row_error"], 12), float(est.transitions[0, 0, 0])
    (0.001, 0.001, 0.8998998998998999)

    >>> import numpy as np
    >>> markov_chain(np.full((1, 47, 2, 2), .5), T=48).w_inf().value       # a matrix per step
    1.0
    >>> day = np.array([[[0.95, 0.05], [0.3, 0.7]]] * 24 + [[[0.6, 0.4], [0.1, 0.9]]] * 24)  # night, day
    >>> fw = markov_chain(day, T=96, period=48)
    >>> fw.transitions.shape, fw.period
    ((1, 48, 2, 2), 48)
    """
    return MarkovChainFramework(trans, T, init=init, values=values, labels=labels, threads=threads, states=states,
                                normalize=normalize, period=period)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402
from .fit import MarkovFit, fit_markov, refit  # noqa: E402
from .theta import close_adversary, theta_profile  # noqa: E402

REFERENCES = {
    "correlated_pair": (Ref("pierquin2024", "Example 1"),),
    "average_salary": (Ref("pierquin2024", "Example 2"),),
    # the certified skipping of interior positions of MarkovChainFramework.w_inf(method="auto")
    "MarkovChainFramework": (Ref("puffer", "Long chains, Thm 6"), Ref("puffer", "Long chains, Thm 7")),
}
