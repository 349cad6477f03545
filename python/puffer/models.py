"""Built-in correlated-data models: frameworks whose conditional query laws are computed
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
  (transition matrix, initial law) priors. Laws come from a forward/backward pass in C++.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from . import _core
from . import _validate as V
from .dist import DiscreteDist
from .errors import ParameterError
from .framework import Cost, Framework, PairRecord, Sensitivity

__all__ = ["independent_users", "correlated_pair", "average_salary", "markov_chain",
           "MarkovChainFramework", "stationary_distribution"]

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
    gives a set Theta instead. Conditionals: X | S_i = a is PB(p_-i) + a; X | ⊥_i is PB(p).

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
    conds: dict = {}
    for t, pv in enumerate(vecs):
        per = {}
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
    sp: dict = {}
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
    secrets = {f"X1={a}": (lambda x, a=a: x[0] == a) for a in vals}
    return Framework(secrets, "all", {"theta": (data, probs)}, query=f, name=f"average salary ({query})",
                     group_sensitivity=99.0 / (2 if query == "average" else 1),
                     group_note="one record changes from 1 to 100")


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
    return pi[0] if single else pi


_MAX_STATES = 64   # the core's limit (cpp/models/markov.cpp)
# Throughputs of the Markov kernel per thread (bench/RESULTS.md, "Markov Delta_G at scale"):
# multiply-adds of the convolutions and passes, and atoms walked by the W_inf level comparison.
_MARKOV_OPS_PER_SECOND = 5e9
_MARKOV_W_ATOMS_PER_SECOND = 3e8


def _available_bytes() -> int:
    try:
        import os
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _check_memory(what: str, nbytes: float) -> None:
    """Refuse, before allocating, a request that cannot fit in the available memory."""
    avail = _available_bytes()
    if nbytes > avail:
        raise ParameterError(what, f"an estimated {nbytes / 2**30:.3g} GiB",
                             f"a request that fits the available memory ({avail / 2**30:.3g} GiB): "
                             "use fewer priors per call, a shorter chain or w_inf(), which stores no law")


class _MarkovSecrets(Sequence):
    """The secrets X_t = a, t < T, a < k, generated on demand (never T k Python strings)."""

    def __init__(self, T: int, k: int):
        self._T, self._k = T, k

    def __len__(self) -> int:
        return self._T * self._k

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return f"X{i // self._k}={i % self._k}"

    def __contains__(self, s: object) -> bool:
        if not isinstance(s, str) or not s.startswith("X") or "=" not in s:
            return False
        t, _, a = s[1:].partition("=")
        return t.isdigit() and a.isdigit() and int(t) < self._T and int(a) < self._k and \
            s == f"X{int(t)}={int(a)}"


class _MarkovPairs(Sequence):
    """The pairs (X_t = a, X_t = b), a < b, generated on demand (never O(T k^2) Python tuples)."""

    def __init__(self, T: int, k: int):
        self._T = T
        self._ab = [(a, b) for a in range(k) for b in range(a + 1, k)]

    def __len__(self) -> int:
        return self._T * len(self._ab)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        t, j = divmod(i, len(self._ab))
        a, b = self._ab[j]
        return (f"X{t}={a}", f"X{t}={b}")


class MarkovChainFramework(Framework):
    """Secrets X_t = a of a k-state Markov chain of length T, sum query S = sum_t values[X_t],
    priors Theta = {(P_theta, init_theta)}; pairs (X_t = a, X_t = b) for every t and a < b.

    Conditional laws are computed in C++ (forward/backward + convolution, underflow-safe) for all
    priors at once; :meth:`w_inf` runs the whole Delta_G computation in the core on all threads.
    """

    def __init__(self, trans: Any, T: int, *, init: Any = "stationary", values: Any = None,
                 labels: Sequence[Hashable] | None = None, threads: int = 0):
        M = V.float_array("trans", trans, ndim=(2, 3))
        M = M[None] if M.ndim == 2 else M
        if M.shape[1] != M.shape[2]:
            raise ParameterError("trans", f"shape {M.shape}", "square transition matrices (k, k)")
        n, k, _ = M.shape
        if k > _MAX_STATES:
            raise ParameterError("trans", f"{k} states", f"at most {_MAX_STATES} states (the core's limit)")
        if (M < 0).any() or (np.abs(M.sum(axis=2) - 1) > 1e-9).any():
            raise ParameterError("trans", "a matrix with negative entries or rows not summing to 1",
                                 "row-stochastic matrices")
        T = V.integer("T", T, lo=1, hi=100_000)
        if isinstance(init, str):
            if init != "stationary":
                raise ParameterError("init", init, "'stationary' or an array of initial laws")
            pi = stationary_distribution(M)
        else:
            pi = V.float_array("init", init, ndim=(1, 2))
            if pi.shape[-1] != k:
                raise ParameterError("init", f"shape {pi.shape}", f"initial laws over the {k} states: "
                                     f"shape ({k},) or ({n}, {k})")
            pi = np.broadcast_to(pi, (n, k)).copy() if pi.ndim == 1 else pi
            if pi.shape != (n, k) or (pi < 0).any() or (np.abs(pi.sum(axis=1) - 1) > 1e-9).any():
                raise ParameterError("init", f"shape {pi.shape}", f"laws of shape ({k},) or ({n}, {k})")
        vals = np.arange(k, dtype=np.int64) if values is None else np.asarray(values)
        if vals.shape != (k,) or not np.issubdtype(vals.dtype, np.integer):
            raise ParameterError("values", values, f"{k} integer state values")
        self._M = np.ascontiguousarray(M)
        self._pi = np.ascontiguousarray(pi)
        self._vals = vals.astype(np.int64)
        self._T = T
        self._k = k
        self._threads = V.threads(threads)
        thetas = list(range(n)) if labels is None else list(labels)
        if len(thetas) != n:
            raise ParameterError("labels", labels, f"{n} prior labels")
        if len(set(thetas)) != n:
            dup = next(t for t in thetas if thetas.count(t) > 1)
            raise ParameterError("labels", dup, "distinct prior labels (this one repeats)")
        if k < 2:
            raise ParameterError("trans", f"{k} state", "a chain with at least 2 states (a secret pair needs two)")
        span = int(self._vals.max() - self._vals.min())
        self._setup(_MarkovSecrets(T, k), _MarkovPairs(T, k), thetas, {}, {}, 1,
                    f"Markov chain (k={k}, T={T}, |Theta|={n})", float(T * span),
                    "the whole chain is one correlated group: the sum changes by up to T * (max - min value)",
                    lazy=True)
        self._computed = False

    def _laws_block(self, lo: int, hi: int):
        return _core.models.markov_sum_laws(self._M[lo:hi], self._pi[lo:hi], self._vals, self._T, self._threads)

    def _ensure_laws(self) -> None:
        if self._computed:
            return
        import math

        from ._transport_laws import LogDiscreteDist

        k, T = self._k, self._T
        span = int(self._vals.max() - self._vals.min())
        # CSR laws: atoms + masses (16 B) per support point; a sum of T values from k integers
        # takes at most min(T span + 1, C(T + k - 1, k - 1)) distinct values
        support = min(T * span + 1, math.comb(T + k - 1, k - 1))
        # + one backward store per worker (cpp/models/markov.hpp)
        stores = min(self._threads_used(self._threads), len(self._thetas)) * \
            _core.models.markov_workspace_bytes(k, T, span)
        _check_memory("framework", 16.0 * len(self._thetas) * T * k * support + stores)
        A, P, O, S, L = self._laws_block(0, len(self._thetas))
        for th_i, th in enumerate(self._thetas):
            for t in range(T):
                for a in range(k):
                    j = (th_i * T + t) * k + a
                    self._sprob[(th, f"X{t}={a}")] = float(S[j])
                    if O[j + 1] > O[j]:
                        # laws spanning more than the double range come as log masses: a float
                        # law would lose tail atoms or the order of tail levels (and W_inf)
                        law_type = LogDiscreteDist if L[j] else DiscreteDist
                        self._laws[(th, f"X{t}={a}")] = law_type(A[O[j]:O[j + 1]], P[O[j]:O[j + 1]], normalize=True)
        self._computed = True

    def conditional(self, theta: Hashable, secret: Hashable) -> DiscreteDist | None:
        self._ensure_laws()
        return super().conditional(theta, secret)

    def pair_laws(self):
        self._ensure_laws()
        return super().pair_laws()

    @property
    def skipped(self) -> list[tuple]:
        self._ensure_laws()
        return super().skipped

    @staticmethod
    def _threads_used(threads: int) -> int:
        import os

        return threads or (os.cpu_count() or 1)

    def cost(self, *, threads: int | None = None) -> Cost:
        """Estimated cost of :meth:`w_inf` before computing it: multiply-adds of the passes and
        of the k T^3 span^2 / 6 convolutions per prior, the peak memory (every worker's backward
        store, cpp/models/markov.hpp, plus the W table) and rough seconds on this machine
        (throughputs measured in bench/RESULTS.md, "Markov Delta_G at scale").

        >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=2000)
        >>> c = fw.cost(threads=2)
        >>> f"{c.operations:.3g}", c.peak_bytes > 48e6
        ('2.71e+09', True)
        """
        thr = self._threads if threads is None else V.threads(threads)
        k, T, n = self._k, self._T, len(self._thetas)
        span = int(self._vals.max() - self._vals.min())
        R = T * span + 1
        per_prior = _core.models.markov_prior_operations(k, T, span)
        w_ops = float(T * k * (k - 1) // 2 * 2 * R)
        workers = self._threads_used(thr)   # priors, or the positions of fewer priors, in parallel
        peak = min(workers, n) * _core.models.markov_workspace_bytes(k, T, span) + 8.0 * n * T * (k * (k - 1) // 2)
        seconds = n * (per_prior / _MARKOV_OPS_PER_SECOND + w_ops / _MARKOV_W_ATOMS_PER_SECOND) / workers
        return Cost(n * (per_prior + w_ops), peak, seconds)

    def w_inf(self, norm: float | None = None, *, threads: int | None = None, block: int = 1024,
              progress: Any = None, _reference: bool = False) -> Sensitivity:
        """Delta_G over all priors, positions and state pairs, computed entirely in the core:
        each position's conditional laws are built and fed straight to the transport kernel's
        1-D W_inf (level rule of puffer.transport), priors in parallel, no law stored.

        The arithmetic is exact in range (cpp/models/markov.hpp): every reachable sum keeps a
        positive mass with relative error ~T eps however small (no underflow), so W_inf never
        loses a tail atom. ``progress``: None (a bar on stderr when stderr is a terminal and
        :meth:`cost` estimates more than a second), True, False or a callable ``f(done,
        total)`` (units: priors x positions). Ctrl-C stops the computation within ~0.1 s
        (KeyboardInterrupt). Memory is estimated first and a request that cannot fit is refused
        with the estimate in GiB.
        """
        from ._progress import resolve

        thr = self._threads if threads is None else V.threads(threads)
        k, T = self._k, self._T
        n = len(self._thetas)
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
        span = int(self._vals.max() - self._vals.min())
        per_worker = _core.models.markov_workspace_bytes(k, T, span, _reference)
        # one backward store per worker (cpp/models/markov.hpp) + the W table
        _check_memory("framework", 8.0 * n * T * len(pairs) + min(self._threads_used(thr), n, block) * per_worker)
        cb = resolve(progress, seconds=self.cost(threads=thr).seconds, label=f"Markov Delta_G (T={T})")
        done_before = [0]

        def report(done: int, total: int) -> None:
            assert cb is not None
            cb(done_before[0] + done, n * T)

        blocks = []
        for lo in range(0, n, block):
            hi = min(lo + block, n)
            W, _ = _core.models.markov_w_inf(self._M[lo:hi], self._pi[lo:hi], self._vals, T, thr, 1e-9,
                                             _reference, None if cb is None else report)
            done_before[0] += (hi - lo) * T
            blocks.append(W)
        W = np.concatenate(blocks, axis=0)            # (n_theta, T, n_pairs); -1: impossible secret
        if not (W >= 0).any():
            raise ParameterError("framework", self.name, "at least one pair of possible secrets")
        th, t, pr = np.unravel_index(int(np.argmax(W)), W.shape)
        a, b = pairs[pr]
        wit = (self._thetas[th], (f"X{t}={a}", f"X{t}={b}"))
        recs = ()
        if W.size <= 20_000:
            recs = tuple(PairRecord(self._thetas[i], (f"X{tt}={pairs[p][0]}", f"X{tt}={pairs[p][1]}"), float(W[i, tt, p]))
                         for i, tt, p in zip(*np.nonzero(W >= 0)))
        return Sensitivity(float(W[th, t, pr]), "w_inf", wit, None, recs)

    def digest(self) -> str:
        import hashlib
        h = hashlib.sha256()
        for arr in (self._M, self._pi, self._vals, np.array([self._T])):
            h.update(np.ascontiguousarray(arr).tobytes())
        return "sha256:" + h.hexdigest()[:32]


def markov_chain(trans: Any, T: int, *, init: Any = "stationary", values: Any = None,
                 labels: Sequence[Hashable] | None = None, threads: int = 0) -> MarkovChainFramework:
    """A :class:`MarkovChainFramework`: ``trans`` of shape (k, k) (one prior) or (n, k, k) (a set
    Theta), ``init`` ``"stationary"`` or initial laws, ``values`` integer state values (default
    0..k-1), sum query over T steps.

    >>> fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)   # the peers' published tests §1.2: Delta_G = 5
    >>> fw.w_inf().value
    5.0
    """
    return MarkovChainFramework(trans, T, init=init, values=values, labels=labels, threads=threads)
