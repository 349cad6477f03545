"""The Kantorovich mechanisms: noise calibrated on the optimal transport plan of each secret pair.

The Kantorovich mechanisms of Ding 2022 (Ding 2022, "Kantorovich Mechanism for Pufferfish
Privacy"). All use the quantile ("north-west corner") coupling pi* of each pair of conditional
laws (1-D queries only, Ding 2022), per prior and pair; the noise parameter is the max.

* Lemma 1 / Theorem 1 (``method="thm1"``): noise density ∝ exp(-eta(theta) d(z)) with d a metric
  and eta non-increasing; theta = eta^{-1}(eps / sup_{supp pi*} d(x - x')). Laplace (default):
  theta = b = Delta / eps, with Delta = W_inf (Lemma 1 equals Song et al.'s Wasserstein mechanism).
* Theorem 2 (``method="thm2"``): the relaxed condition (16a)/(16b) [FIX: sums over one index, row
  constraint against p(x|s_i)], solved per row and column of pi* for the root eta_k; theta =
  eta^{-1}(min eta_k). Never above Theorem 1.
* Theorem 3 (:class:`KantorovichGaussian`): Gaussian noise, delta-approximation of (eps, S)-PP
  with theta = c Delta / eps; ``variant="b"`` (any eps) uses the exact constant k/2 = 0.418660...
  [FIX: the paper prints the anti-conservative 0.41, available as ``paper_constant=True``];
  ``variant="a"`` (eps <= 1, delta <= 0.4058) and ``variant="tail"`` (the proof's condition solved
  numerically, Ding 2022).
* ``method="support_diameter"``: the DP-style baseline of eq. (9), for comparison.

Roots are bracketed so that the returned theta is on the safe (larger) side and rounded upward.

Theorem 2 runs in the core (``puffer._core.kantorovich``): for Markov-chain frameworks the laws,
plans and roots are all computed there, priors in parallel, no law stored; for other frameworks
the plans are built here and all roots solved in one call. The compiled root adds a bound on the
rounding of h to h, so it is a feasible eta at most the numpy reference's (:func:`thm2_eta`);
the two agree within 1e-9 relative (tested).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .. import _validate as V
from ..dist import DiscreteDist
from ..errors import ParameterError, UnboundedSensitivityError
from ..framework import Framework, Sensitivity
from ..guarantees import PP, round_up
from ..refs import Ref
from ._base import Mechanism, scale_up

if TYPE_CHECKING:
    from collections.abc import Iterator

    # families.Laplace in annotations: puffer.capacity.restricted has a Laplace too
    from ..noise import families

    #: the row / column of a plan that binds Theorem 2, ("row" | "col", x); None when none does
    _Where = tuple[str, float] | None
    #: (prior, pair, sup of d over the plan)
    _Rec = tuple[Any, Any, float]
    #: (sensitivity, theta, binding (prior, pair, where))
    _Result = tuple[Sensitivity, float, tuple[Any, Any, _Where]]
    _Metric = Callable[[np.ndarray], Any]

__all__ = ["Kantorovich", "KantorovichGaussian", "thm2_eta", "gaussian_constant", "GAUSSIAN_K"]

# Witnesses (binding row/column, binding pair) are the first within this relative band of the
# extreme, in the reference's order (the compiled kernel's kWitnessBand).
WITNESS_BAND: float = float(_core.kantorovich.WITNESS_BAND)

# k = (2/e)^(1/3) (2/pi)^(1/6) (Ding 2022 (b)); the paper rounds k/2 to 0.41.
GAUSSIAN_K = (2.0 / math.e) ** (1.0 / 3.0) * (2.0 / math.pi) ** (1.0 / 6.0)


@np.errstate(divide="ignore", invalid="ignore")     # zero plan masses (log-space laws): log 0 = -inf
def thm2_eta(dist: np.ndarray, mass: np.ndarray, rows: np.ndarray, cols: np.ndarray,
             eps: float) -> tuple[float, _Where]:
    """Theorem 2 for one plan: min over constrained rows and columns of the root eta_k of
    sum_k m_k exp(eta d_k) = e^eps M_k (Ding 2022), as a feasible (lower) value, and which
    row/column binds (("row" | "col", x): the first, rows by x then columns by x, whose root is
    within a relative WITNESS_BAND of the minimum). (inf, None) when nothing is constrained.
    This is the numpy reference of the compiled kernel used by :class:`Kantorovich`.

    All groups are solved at once by a vectorised bisection on the log-sum-exp form
    h_k(eta) = log sum m exp(eta d) - eps - log M_k (increasing in eta; h_k(eps / max d) <= 0)."""
    keys, kinds, d_all, m_all, gid = [], [], [], [], []
    n_groups = 0
    for kind, key in (("row", rows), ("col", cols)):
        order = np.argsort(key, kind="stable")
        ks = key[order]
        starts = np.r_[0, np.flatnonzero(np.diff(ks)) + 1]
        g = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, ks.size])) + n_groups
        keys += ks[starts].tolist()
        kinds += [kind] * starts.size
        d_all.append(dist[order]); m_all.append(mass[order]); gid.append(g)
        n_groups += starts.size
    d = np.concatenate(d_all); m = np.concatenate(m_all); g = np.concatenate(gid)
    dmax = np.zeros(n_groups); np.maximum.at(dmax, g, d)
    live = dmax > 0                                   # groups with all mass at d = 0: unconstrained
    if not live.any():
        return math.inf, None
    M = np.bincount(g, weights=m, minlength=n_groups)
    m0 = np.bincount(g, weights=np.where(d == 0, m, 0.0), minlength=n_groups)
    dpos = np.where(d > 0, d, np.inf); dmin = np.full(n_groups, np.inf); np.minimum.at(dmin, g, dpos)
    logm = np.log(m)
    target = eps + np.log(M)

    def h(eta: np.ndarray) -> np.ndarray:
        t = logm + eta[g] * d
        mx = np.full(n_groups, -np.inf); np.maximum.at(mx, g, t)
        s = np.bincount(g, weights=np.exp(t - mx[g]), minlength=n_groups)
        return mx + np.log(s) - target

    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(live, eps / np.where(live, dmax, 1.0), 0.0)
        hi = np.where(live, np.log((math.exp(eps) * M - m0) / np.maximum(M - m0, 1e-300))
                      / np.where(live, dmin, 1.0) * (1 + 1e-9) + 1e-300, 1.0)
    # The analytic upper end can fall below lo (subnormal plan masses of log-space laws: M and
    # m0 near 1e-310 make the log negative); a bracket [lo, hi] with hi < lo let the bisection
    # move lo below 0 -- a negative eta, so the pair was dropped and theta under-reported.
    hi = np.where(hi >= lo, hi, lo)
    for _ in range(64):                               # rounding guards on the analytic brackets
        bad = live & (h(hi) < 0)
        if not bad.any():
            break
        hi = np.where(bad, hi * 2.0, hi)
    for _ in range(64):
        bad = live & (h(lo) > 0)
        if not bad.any():
            break
        lo = np.where(bad, lo * (1 - 1e-12), lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not ((mid > lo) & (mid < hi) & live).any():
            break
        ok = h(mid) <= 0.0
        lo = np.where(live & ok, mid, lo)             # keep lo feasible: h(lo) <= 0
        hi = np.where(live & ~ok, mid, hi)
    eta = np.where(live, lo, np.inf)
    emin = float(eta.min())
    # the witness: the first row/column within WITNESS_BAND of the minimum (near-equal roots,
    # equal up to rounding, are common: the witness must not depend on that noise)
    k = int(np.argmax(eta <= emin * (1 + WITNESS_BAND)))
    return emin, (kinds[k], float(keys[k]))


_KIND = {1: "row", 2: "col"}


def _pair_plans(framework: Framework, metric: _Metric | None
                ) -> Iterator[tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(theta, pair, source, target, mass, d) for every prior and pair, with pi* the quantile
    coupling (Ding 2022) and d the metric of x - x' (|x - x'| by default)."""
    from .. import transport

    for th, pair, P, Q in framework.pair_laws():
        plan = transport.quantile_coupling(P, Q)
        src, tgt = np.asarray(plan.source, float), np.asarray(plan.target, float)
        mass = np.asarray(plan.mass, float)
        dd = np.abs(src - tgt) if metric is None else np.asarray(metric(src - tgt), float)
        if not np.isfinite(dd).all() or (dd < 0).any():
            raise ParameterError("metric", "a value that is negative or not finite", "a metric d(z) >= 0")
        yield th, pair, src, tgt, mass, dd


def _result(framework: Framework, recs: list[_Rec], thetas: Any, where: Callable[[int], _Where],
            metric: _Metric | None) -> _Result:
    """The Sensitivity (largest sup d over the plans), theta (the largest over pairs) and the
    binding (prior, pair, row/column: ``where(j)`` for the witness pair j) from per-pair results."""
    from ..framework import PairRecord

    if not recs:
        raise ParameterError("framework", framework.name, "at least one pair of possible secrets")
    t = np.asarray(thetas, dtype=np.float64)
    best_theta = max(float(np.max(t)), 0.0)
    # the first pair within WITNESS_BAND of the largest theta (near-ties are rounding noise)
    best = int(np.argmax(t >= best_theta * (1 - WITNESS_BAND)))
    vals = [r[2] for r in recs]
    k = int(np.argmax(vals))
    sens = Sensitivity(vals[k], "plan" if metric is None else "plan_metric", (recs[k][0], recs[k][1]), None,
                       tuple(PairRecord(a, b, c) for a, b, c in recs))
    return sens, best_theta, (recs[best][0], recs[best][1], where(best))


def _plans_reference(framework: Framework, method: str, eps: float, metric: _Metric | None,
                     inv: Callable[[float], float]) -> _Result:
    """The per-pair Python path (Theorem 1 with a metric, Theorem 2 by :func:`thm2_eta`): the
    reference the compiled Theorem 2 is tested against. Returns (sensitivity, theta, binding)."""
    recs: list[_Rec] = []
    thetas: list[float] = []
    wheres: list[_Where] = []
    for th, pair, src, tgt, mass, dd in _pair_plans(framework, metric):
        dmax = float(np.max(dd))
        if method == "thm1":
            t = 0.0 if dmax == 0 else inv(eps / dmax)
            where: _Where = None
        else:
            eta, where = thm2_eta(dd, mass, src, tgt, eps)
            t = 0.0 if math.isinf(eta) else inv(eta)
        recs.append((th, pair, dmax))
        thetas.append(t)
        wheres.append(where)
    return _result(framework, recs, thetas, wheres.__getitem__, metric)


def _thm2(framework: Framework, eps: float, metric: _Metric | None, inv: Callable[[float], float] | None) -> _Result:
    """Theorem 2 in the core (``inv``: eta^{-1}, None for Laplace's 1 / eta): Markov frameworks (default metric) entirely in C++ (laws, plans and
    roots, no law stored); other frameworks with the plans built here and all roots in one call.
    Each eta is a feasible root: at most the reference's, by at most a documented band."""
    from ..models import MarkovChainFramework

    if isinstance(framework, MarkovChainFramework) and metric is None and framework._identity_grid:
        return _thm2_markov(framework, eps, inv)   # real-valued states: the laws path (value units)
    if metric is None:
        laws = list(framework.pair_laws())
        if laws and all(isinstance(L, DiscreteDist) and L.atoms.ndim == 1 for _, _, P, Q in laws for L in (P, Q)) \
                and not any(P.is_exact and Q.is_exact for _, _, P, Q in laws):
            return _thm2_laws(framework, laws, eps, inv)
    recs: list[_Rec] = []
    arrays: list[tuple[np.ndarray, ...]] = []
    for th, pair, src, tgt, mass, dd in _pair_plans(framework, metric):
        recs.append((th, pair, float(np.max(dd))))
        arrays.append((dd, mass, src, tgt))
    if not recs:
        raise ParameterError("framework", framework.name, "at least one pair of possible secrets")
    off = np.r_[0, np.cumsum([a[0].size for a in arrays])].astype(np.int64)
    ds, ms, rows, cols = (np.concatenate([a[j] for a in arrays]) for j in range(4))
    eta, kind, key = _core.kantorovich.thm2_plans(ds, ms, rows, cols, off, eps)
    return _finish(framework, recs, eta, kind, key, metric, inv)


def _thm2_laws(framework: Framework, laws: list[tuple[Any, Any, DiscreteDist, DiscreteDist]], eps: float,
               inv: Callable[[float], float] | None) -> _Result:
    """Float laws (the coupling is then the float level rule's): laws to the core, plans and roots
    computed there for all pairs at once."""
    def csr(side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ds = [r[side] for r in laws]
        off = np.r_[0, np.cumsum([len(L.atoms) for L in ds])].astype(np.int64)
        return np.concatenate([L.atoms for L in ds]), np.concatenate([L.probs for L in ds]), off

    eta, kind, key, dmax = _core.kantorovich.thm2_laws(*csr(2), *csr(3), eps)
    recs = [(th, pair, d) for (th, pair, _, _), d in zip(laws, dmax.tolist())]
    return _finish(framework, recs, eta, kind, key, None, inv)


def _finish(framework: Framework, recs: list[_Rec], eta: np.ndarray, kind: np.ndarray, key: np.ndarray,
            metric: _Metric | None, inv: Callable[[float], float] | None) -> _Result:
    if inv is None:                                   # Laplace: theta = 1 / eta (1 / inf = 0)
        thetas: Any = 1.0 / eta
    else:
        thetas = [0.0 if math.isinf(e) else inv(e) for e in eta.tolist()]

    def where(j: int) -> _Where:
        return None if kind[j] == 0 else (_KIND[int(kind[j])], float(key[j]))
    return _result(framework, recs, thetas, where, metric)


def _thm2_markov(framework: Any, eps: float, inv: Callable[[float], float] | None) -> _Result:
    from ..models import _check_memory, _theta_only

    _theta_only(framework, "the Kantorovich mechanism")

    k, T = framework._k, framework._T
    ab = [(a, b) for a in range(k) for b in range(a + 1, k)]
    _check_memory("framework", 25.0 * len(framework._thetas) * T * len(ab),
                  lambda avail: framework._alternatives(avail, "Kantorovich Thm 2 stores a plan summary per prior, "
                                                        "position and pair"))
    from .._progress import resolve

    cb = resolve(None, seconds=framework.cost().seconds, label=f"Kantorovich Thm 2 (T={T})")
    eta, kind, key, dmax, _ = _core.kantorovich.markov_thm2(framework._M, framework._pi, framework._vals, T, eps,
                                                            framework._threads, progress=cb)
    th_i, t_i, p_i = np.nonzero(kind >= 0)            # C order = the order of pair_laws()
    thetas = framework._thetas
    lab = framework._label   # the framework's secret labels (state names)
    recs = [(thetas[i], (lab(t, ab[p][0]), lab(t, ab[p][1])), d)
            for i, t, p, d in zip(th_i.tolist(), t_i.tolist(), p_i.tolist(), dmax[th_i, t_i, p_i].tolist())]
    return _finish(framework, recs, eta[th_i, t_i, p_i], kind[th_i, t_i, p_i], key[th_i, t_i, p_i], None, inv)


def gaussian_constant(eps: float, delta: float, variant: str = "b", paper_constant: bool = False) -> float:
    """The constant c of Theorem 3 (theta = c Delta / eps), rounded upward (Ding 2022)."""
    if variant == "a":
        if eps > 1:
            raise ParameterError("eps", eps, "eps <= 1 for Theorem 3(a) (use variant='b' or 'tail')")
        c = math.sqrt(2.0 * math.log(1.25 / delta))
        if c < 1.5:
            raise ParameterError("delta", delta, "delta <= 1.25 exp(-9/8) = 0.4058 for Theorem 3(a)")
        return round_up(c)
    if variant == "b":
        half_k = 0.41 if paper_constant else GAUSSIAN_K / 2.0
        a = half_k * delta ** (-1.0 / 3.0)
        # the theorem needs c strictly greater than the root: a relative margin of 1e-12
        return round_up((a + math.sqrt(a * a + eps / 2.0)) * (1.0 + 1e-12))
    if variant == "tail":
        rhs = math.log(math.sqrt(2.0 / math.pi) / delta)
        def g(t: float) -> float:   # increasing on t > 0
            return math.log(t) + 0.5 * t * t - rhs

        lo, hi = 1e-300, 1.0
        while g(hi) <= 0:
            hi *= 2.0
        for _ in range(300):  # keep the upper end: a larger t* means a larger c (more noise)
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if g(mid) > 0:
                hi = mid
            else:
                lo = mid
        t = hi
        return round_up((t + math.sqrt(t * t + 2.0 * eps)) / 2.0 * (1.0 + 1e-12))
    raise ParameterError("variant", variant, "'a', 'b' or 'tail'")


class _ExponentialNoise:
    """Noise ∝ exp(-eta(theta) d(z)) for a user metric d: described, not sampled."""

    def __init__(self, theta: float, metric: _Metric):
        self.scale = theta
        self.metric = metric

    def __repr__(self) -> str:
        return f"ExponentialMechanismNoise(theta={self.scale!r}, metric={getattr(self.metric, '__name__', self.metric)!r})"


class Kantorovich(Mechanism):
    """Kantorovich mechanism (Ding 2022, Lemma 1, Theorems 1 and 2, eq. (9) baseline).

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework, with a 1-D query (the quantile coupling is optimal in 1-D).
    eps : float
        The target eps > 0 of (eps, S)-Pufferfish privacy.
    method : str
        ``"best"`` (default: Theorems 1 and 2 both computed, the smaller noise parameter kept;
        ``alternatives`` holds both), ``"thm1"`` (Lemma 1 / Theorem 1, the plan sensitivity),
        ``"thm2"`` (Theorem 2, relaxed) or ``"support_diameter"`` (eq. (9), the DP-style baseline).
    metric : callable, optional
        A metric on differences d(z) (vectorised) for the general exponential mechanism; with
        ``eta_inv`` (default: d = abs(z), i.e. Laplace noise).
    eta_inv : callable, optional
        The inverse of eta(theta) for that exponential mechanism (default: eta = 1/theta).

    Examples
    --------
    >>> import puffer
    >>> m = puffer.mechanisms.Kantorovich(puffer.models.correlated_pair(), eps=1.0, method="thm2")
    >>> m.noise.scale <= 2.0
    True
    >>> b = puffer.mechanisms.Kantorovich(puffer.models.correlated_pair(), eps=1.0)   # the better theorem
    >>> b.method, b.noise.scale == min(b.alternatives.values())
    ('thm2', True)
    """
    guarantee: PP   # narrows Mechanism.guarantee
    #: Laplace(theta) for the default metric, the exponential mechanism's noise for a user metric;
    #: None: identical conditionals, no noise needed
    noise: families.Laplace | _ExponentialNoise | None
    #: (prior, pair, binding row/column) of the pair that sets theta (plan methods), else None
    binding: tuple[Any, Any, _Where] | None
    #: with method="best", the noise parameter of each theorem computed ({"thm1": theta, "thm2": theta})
    alternatives: dict[str, float]

    def __init__(self, framework: Framework, eps: float, *, method: str = "best",
                 metric: Callable[[np.ndarray], np.ndarray] | None = None,
                 eta_inv: Callable[[float], float] | None = None):
        from ..noise import Laplace

        self.framework = self._check_framework(framework)
        if framework.dim != 1:
            raise ParameterError("framework", f"query on R^{framework.dim}",
                                 "a 1-D query (the quantile coupling is optimal only in 1-D, Ding 2022)")
        self.eps = V.positive("eps", eps)
        if method not in ("best", "thm1", "thm2", "support_diameter"):
            raise ParameterError("method", method, "'best', 'thm1', 'thm2' or 'support_diameter'")
        if (metric is None) != (eta_inv is None):
            raise ParameterError("eta_inv", eta_inv, "metric and eta_inv given together (or neither, for Laplace)")
        inv = (lambda v: 1.0 / v) if eta_inv is None else eta_inv
        self.alternatives = {}
        if method == "best":
            # Theorem 2 relaxes Theorem 1's condition (never more noise, Ding 2022); Theorem 1 is kept
            # on a tie (its witness is the plain W_inf pair)
            t1 = Kantorovich(framework, eps, method="thm1", metric=metric, eta_inv=eta_inv)
            t2 = Kantorovich(framework, eps, method="thm2", metric=metric, eta_inv=eta_inv)
            th1, th2 = float(t1.theta), float(t2.theta)
            self.alternatives = {"thm1": th1, "thm2": th2}
            win = t2 if th2 < th1 else t1
            self.__dict__.update({k: v for k, v in win.__dict__.items() if k != "alternatives"})
            return
        self.method = method
        self.theorem = {"thm1": "Ding 2022, Lemma 1 / Theorem 1", "thm2": "Ding 2022, Theorem 2 (relaxed)",
                        "support_diameter": "Ding 2022, eq. (9) (DP-style baseline)"}[method]
        self.refs = {"thm1": (Ref("ding2022", "Lemma 1"), Ref("ding2022", "Thm 1")),
                     "thm2": (Ref("ding2022", "Thm 2"),),
                     "support_diameter": (Ref("ding2022", "eq. (9)"),)}[method]
        self.binding = None
        if method == "support_diameter":
            self.sensitivity = framework.support_diameter()
            theta = 0.0 if self.sensitivity.value == 0 else inv(self.eps / self.sensitivity.value)
        elif method == "thm1" and metric is None:
            self.sensitivity = framework.w_inf()   # = sup over supp pi* of |x - x'| (Ding 2022)
            theta = 0.0 if self.sensitivity.value == 0 else inv(self.eps / self.sensitivity.value)
        else:
            if method == "thm2":
                self.sensitivity, theta, self.binding = _thm2(framework, self.eps, metric, eta_inv)
            else:
                self.sensitivity, theta, self.binding = _plans_reference(framework, method, self.eps, metric, inv)
        if not math.isfinite(theta):
            raise UnboundedSensitivityError(f"the noise parameter is infinite (witness {self.sensitivity.witness})")
        theta = scale_up(theta)
        self.theta: float = theta
        if theta == 0:
            self.noise = None
        elif metric is None:
            self.noise = Laplace(theta)
        else:
            self.noise = _ExponentialNoise(theta, metric)
        self.variance = 2.0 * theta * theta if metric is None else None
        note = "" if theta > 0 else "identical conditionals: no noise needed"
        if self.binding is not None and self.binding[2] is not None:
            note = f"binding {self.binding[2][0]} x={self.binding[2][1]!r} at theta={self.binding[0]!r}, pair {self.binding[1]}"
        self.guarantee = PP(self.eps, 0.0, self._provenance(note))
        self.group = self._group(theta, lambda g: scale_up(inv(self.eps / g))) if theta > 0 else None

    def lattice_sensitivity(self) -> float:
        """Lemma 1 / Thm 1 and eq. (9) with Laplace noise: eps = Delta / theta with Delta = W_inf
        or the support diameter, which snapping moves by at most g (see the base class).

        Theorem 2 (Laplace, the default metric): snapping moves every shift d_k of the coupling by
        at most c g, and by Jensen (t -> t^(1/lambda) concave) sum_k m_k exp(d_k / (lambda b)) <=
        M (e^eps)^(1/lambda) wherever b meets condition (16), so b' = lambda b meets it for the
        snapped shifts when c g / b' + eps / lambda <= eps, i.e. b' >= b + c g / eps: the padding
        of the base class with Delta = eps b (rounded down, so the padded scale is never less)."""
        if self.method == "thm2":
            from ..noise import Laplace

            if not isinstance(self.noise, Laplace):
                raise ParameterError("secure", True, "Laplace noise for a lattice release of Ding 2022 Theorem 2 "
                                     f"(the padding argument is for eta = 1 / b; got {type(self.noise).__name__})")
            return math.nextafter(self.eps * float(self.noise.scale), 0.0)
        return float(self.sensitivity.value)


class KantorovichGaussian(Mechanism):
    """Theorem 3 of Ding 2022: Gaussian noise N(0, theta^2), theta = c Delta / eps, a
    delta-approximation of (eps, S)-Pufferfish privacy ("|privacy loss| <= eps with probability
    >= 1 - delta over the noise"; tag ``pufferfish-delta-approx (Ding 2022, Thm 3)``).

    ``variant="exact"`` (the default) calibrates the same Gaussian noise on the same plan sensitivity
    to (eps, delta)-PP (delta on events) from its privacy profile, the analytic Gaussian mechanism of
    Balle & Wang 2018, Thm 8, carried to PP by the W_inf coupling (Song et al. 2017): the least
    sigma any (eps, delta) calibration of Gaussian noise to this sensitivity allows (what
    ``GeneralWasserstein(fw, Gaussian, eps=, delta=)`` gives). Theorem 3's own calibrations are
    ``variant="a"``, ``"b"`` and ``"tail"`` (the stronger delta-approximation notion).

    >>> import puffer
    >>> m = puffer.mechanisms.KantorovichGaussian(puffer.models.correlated_pair(), eps=1.0, delta=1e-5, variant="a")
    >>> round(m.noise.scale, 5)     # 4.844805 * 2 / 1
    9.68961
    >>> round(puffer.mechanisms.KantorovichGaussian(puffer.models.correlated_pair(), eps=1.0, delta=1e-5).noise.scale, 4)
    7.4613

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework, with a 1-D query.
    eps : float
        The target eps > 0 (at most 1 for ``variant="a"``).
    delta : float
        The delta in (0, 1): of (eps, delta)-PP for ``"exact"``; for Theorem 3's variants, the
        probability with which the privacy loss may exceed eps.
    variant : str
        ``"exact"`` (default: the analytic Gaussian calibration above) or the constant c of
        Theorem 3: ``"a"`` (sqrt(2 log(1.25/delta)), eps <= 1), ``"b"`` (the (k/2) delta^(-1/3)
        root, with the corrected k/2) or ``"tail"`` (the exact Gaussian tail root).
    paper_constant : bool
        Use the printed constant 0.41 for k/2 in variant ``"b"`` (for comparison; the
        corrected 0.41866 is the default).
    """
    guarantee: PP   # narrows Mechanism.guarantee
    #: Gaussian(c Delta / eps, rounded upward); None at sensitivity 0 (no noise needed)
    noise: families.Gaussian | None

    theorem = "Ding 2022, Theorem 3 (Gaussian, delta-approximation)"
    refs: tuple[Ref, ...] = (Ref("ding2022", "Thm 3", "constant k/2 = 0.41866, not the printed 0.41"),)

    def __init__(self, framework: Framework, eps: float, delta: float, *, variant: str = "exact",
                 paper_constant: bool = False):
        from ..noise import Gaussian

        self.framework = self._check_framework(framework)
        if framework.dim != 1:
            raise ParameterError("framework", f"query on R^{framework.dim}", "a 1-D query")
        self.eps = V.positive("eps", eps)
        self.delta = V.delta_open("delta", delta)
        self.sensitivity = framework.w_inf()
        if not math.isfinite(self.sensitivity.value):
            raise UnboundedSensitivityError(f"plan sensitivity is infinite (witness {self.sensitivity.witness})")
        if variant == "exact":
            from ..noise.profile import REFS, calibrate

            if paper_constant:
                raise ParameterError("paper_constant", True, "False with variant='exact' (no Theorem 3 constant)")
            self.theorem = ("Balle & Wang 2018, Thm 8 (analytic Gaussian) on the plan sensitivity of Ding 2022, "
                            "Thm 3, by the W_inf coupling of Song et al. 2017")
            self.refs = REFS + (Ref("ding2022", "Thm 3", "its setting; sigma from the exact Gaussian profile"),)
            dg = round_up(self.sensitivity.value, 2)

            def exact(g: float) -> float:
                return float(calibrate(Gaussian(1.0), eps=self.eps, delta=self.delta, sensitivity=g).sigma)

            theta = exact(dg) if dg > 0 else 0.0
            self.c = theta * self.eps / dg if dg > 0 else 0.0
            self.noise = Gaussian(theta) if theta > 0 else None
            self.variance = theta * theta
            self.guarantee = PP(self.eps, self.delta, self._provenance(
                "(eps, delta)-PP (delta on events) from the Gaussian privacy profile at the plan sensitivity"))
            self.group = self._group(theta, exact) if theta > 0 else None
            return
        self.c = gaussian_constant(self.eps, self.delta, variant, paper_constant)
        theta = scale_up(self.c * self.sensitivity.value / self.eps)
        self.noise = Gaussian(theta) if theta > 0 else None
        self.variance = theta * theta
        self.guarantee = PP(self.eps, self.delta, self._provenance(
            f"pufferfish-delta-approx (Ding 2022, Thm 3), variant {variant}"
            + (", paper constant 0.41" if paper_constant else "")))
        self.group = self._group(theta, lambda g: scale_up(self.c * g / self.eps)) if theta > 0 else None
