"""Capacity bounded guarantees of the Laplace, Gaussian and matrix mechanisms.

Capacity bounded guarantees of the Laplace, Gaussian and matrix mechanisms (Chaudhuri,
Imola, Machanavajjhala 2019, Thms 5, 9, 10, 13, Cor 2, Table 1).

``eps_noise`` is the Laplace *noise* parameter (scale 1/eps_noise), as in the paper's Table 1;
the returned guarantee's ``eps`` is the privacy parameter. ``sens`` is a scalar sensitivity or
a per-coordinate sensitivity vector v.

Methods of the (lin, Rényi) functions:

* ``"exact"`` — the certified restricted divergence (kind ``exact``): 1-D Laplace and any-d
  Gaussian (reduced to 1-D with s = ||v||_2/sigma).
* ``"sound"`` — the least of the proven closed-form bounds (the ratio-form bound, the corrected
  Thm 13) and, for d-dim Laplace, the non-adaptive composition (Thm 4) of the exact 1-D values
  (lin on R^d is the direct sum of the 1-D lin classes); kind ``sound_upper_bound``.
* ``"paper"`` — Cor 2 as printed (kind ``paper_bound``, ``sound=False``): it under-reports for
  alpha > 2 at small shifts (Laplace alpha = 5, eps_noise*sens = 0.5: printed 0.101366, exact
  0.151937). For reproducing the paper only; calibration refuses it.

>>> from puffer import capacity as C
>>> round(C.laplace_lin_kl(1.0, 1.0).eps, 9)
0.225987156
>>> g = C.laplace_lin_renyi(0.5, 1.0, 5.0, method="exact")
>>> round(g.eps, 6), g.kind, g.sound
(0.151937, 'exact', True)
>>> C.laplace_lin_renyi(0.5, 1.0, 5.0, method="paper").sound
False
"""
from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import round_up
from ..guarantees.capacity import CapacityBounded
from ..guarantees.provenance import Provenance
from ..refs import Ref
from . import bounds as B
from . import divergences as Dv
from .restricted import standardized_renyi

__all__ = ["laplace_lin_kl", "gaussian_lin_kl", "laplace_lin_renyi", "gaussian_lin_renyi",
           "laplace_poly_renyi", "gaussian_poly_renyi", "matrix_mechanism_guarantee", "MatrixMechanism",
           "METHODS"]

METHODS = ("exact", "sound", "paper")


def _prov(mech: str, theorem: str, items: tuple[Ref, ...], sens: Any, noise: Any, notes: str = "") -> Provenance:
    sv = np.atleast_1d(np.asarray(sens, dtype=float))
    return Provenance(mechanism=mech, theorem=theorem, refs=items,
                      sensitivity=float(sv[0]) if sv.size == 1 else float(np.abs(sv).sum()),
                      noise=noise, notes=notes)


def _alpha(alpha: Any) -> float:
    a = V.real("alpha", alpha)
    if not a >= 1.0:
        raise ParameterError("alpha", alpha, "an order >= 1 (restricted Rényi is defined for alpha > 1; "
                             "alpha = 1 gives the restricted KL)")
    if math.isinf(a):
        raise ParameterError("alpha", alpha, "a finite order")
    return a


def _method(method: Any) -> str:
    if method not in METHODS:
        raise ParameterError("method", method, f"one of {METHODS}")
    return str(method)


def laplace_lin_kl(eps_noise: float, sens: Any = 1.0) -> CapacityBounded:
    """(lin, KL) parameter of Lap(0, 1/eps_noise) noise (Thm 9, exact; per coordinate summed for vectors)."""
    e = V.positive("eps_noise", eps_noise)
    v = Dv.sens_vector(sens)
    val = round_up(sum(Dv.laplace_lin_kl_value(e, float(x)) for x in v), 4)
    return CapacityBounded(f"lin(d={v.size})" if v.size > 1 else "lin", "kl", None, val, "exact", True,
                           _prov("laplace_lin_kl", "Thm 9",
                                 (Ref("chaudhuri2019", "Thm 9"), Ref("chaudhuri2019", "Lemma 1")), sens,
                                 {"laplace": {"b": 1.0 / e}}))


def gaussian_lin_kl(sigma: float, sens: Any = 1.0) -> CapacityBounded:
    """(lin, KL) parameter of N(0, sigma² I) noise: ||v||²/(2 sigma²) (Thm 10, exact)."""
    s = V.positive("sigma", sigma)
    v = Dv.sens_vector(sens)
    return CapacityBounded(f"lin(d={v.size})" if v.size > 1 else "lin", "kl", None, Dv.gaussian_kl(s, v),
                           "exact", True, _prov("gaussian_lin_kl", "Thm 10",
                                                (Ref("chaudhuri2019", "Thm 10"), Ref("chaudhuri2019", "Lemma 1")), sens,
                                                {"gaussian": {"sigma": s}}))


def _exact_1d(family: str, s: float, alpha: float, k: int = 1) -> tuple[float, dict[str, Any]]:
    r = standardized_renyi(family, s, alpha, k)
    return float(r["d_hi"]), r


def _lin_renyi(family: str, v: np.ndarray, alpha: float, method: str, sens: Any, noise: dict[str, dict[str, float]],
               mech: str) -> CapacityBounded:
    H = f"lin(d={v.size})" if v.size > 1 else "lin"
    if method == "paper":
        val = B.paper_bound(family, v, alpha)
        return CapacityBounded(H, "renyi", alpha, val, "paper_bound", False,
                               _prov(mech, "Thm 13 / Cor 2 as printed",
                                     (Ref("chaudhuri2019", "Thm 13"), Ref("chaudhuri2019", "Cor 2")), sens, noise,
                                     "NOT an upper bound for alpha > 2 at small shifts (the proof drops a "
                                     "2^-d factor on the intercept term); for reproducing the paper only"))
    if method == "exact":
        if family == "laplace" and v.size > 1:
            raise ParameterError("method", method, "'sound' for a d-dimensional Laplace mechanism (no exact "
                                 "d-dim solver; 'sound' composes the exact 1-D values and takes the least bound)")
        s = float(np.sqrt(np.dot(v, v))) if family == "gaussian" else float(v[0])
        val, r = _exact_1d(family, s, alpha)
        notes = (f"certified bracket [{r['d_lo']:.12g}, {r['d_hi']:.12g}]; optimiser "
                 f"{'converged' if r['converged'] else 'stopped early (bracket wider)'}")
        return CapacityBounded(H, "renyi", alpha, val, "exact", True,
                               _prov(mech, "Lemma 3 (ratio form), certified primal-dual solve",
                                     (Ref("chaudhuri2019", "Lemma 3"), Ref("chaudhuri2019", "Def 3")), sens, noise,
                                     notes))
    cands = [(B.sound_bound(family, v, alpha), "ratio-form bound (Lemma 3 + Jensen)"),
             (B.corrected_bound(family, v, alpha, "exact"), "Thm 13 with the 2^-d slip corrected")]
    unres = Dv.laplace_renyi(1.0, v, alpha) if family == "laplace" else Dv.gaussian_renyi(1.0, v, alpha)
    cands.append((unres, "unrestricted Rényi divergence (D^H <= D; Thm 11 / Thm 12)"))
    if family == "laplace" and v.size > 1:
        comp = round_up(sum(_exact_1d(family, float(x), alpha)[0] for x in v if x > 0), 4 + v.size)
        cands.append((comp, "Thm 4 composition of exact 1-D values"))
    val, how = min(cands)
    return CapacityBounded(H, "renyi", alpha, val, "sound_upper_bound", True,
                           _prov(mech, how, (Ref("chaudhuri2019", "Thm 13"), Ref("chaudhuri2019", "Lemma 3"),
                                             Ref("chaudhuri2019", "Thm 4")), sens, noise,
                                 "least of: " + "; ".join(f"{n} = {x:.10g}" for x, n in cands)))


def laplace_lin_renyi(eps_noise: float, sens: Any, alpha: float, method: str = "exact") -> CapacityBounded:
    """(lin, Rényi_alpha) parameter of Lap(0, 1/eps_noise) noise; alpha = 1 gives (lin, KL).

    >>> from puffer import capacity as C
    >>> round(C.laplace_lin_renyi(1.0, 1.0, 2.0).eps, 9)   # alpha = 2: log(1 + s^2/2)
    0.405465108
    """
    e = V.positive("eps_noise", eps_noise)
    a = _alpha(alpha)
    m = _method(method)
    if a == 1.0:
        return laplace_lin_kl(e, sens)
    v = Dv.sens_vector(sens) * e
    return _lin_renyi("laplace", v, a, m, sens, {"laplace": {"b": 1.0 / e}}, "laplace_lin_renyi")


def gaussian_lin_renyi(sigma: float, sens: Any, alpha: float, method: str = "exact") -> CapacityBounded:
    """(lin, Rényi_alpha) parameter of N(0, sigma² I) noise; alpha = 1 gives (lin, KL).

    >>> from puffer import capacity as C
    >>> round(C.gaussian_lin_renyi(1.0, 1.0, 2.0).eps, 9)   # alpha = 2: log 2
    0.693147181
    """
    s = V.positive("sigma", sigma)
    a = _alpha(alpha)
    m = _method(method)
    if a == 1.0:
        return gaussian_lin_kl(s, sens)
    v = Dv.sens_vector(sens) / s
    return _lin_renyi("gaussian", v, a, m, sens, {"gaussian": {"sigma": s}}, "gaussian_lin_renyi")


def _poly(family: str, k: Any, s: float, alpha: float, sens: Any, noise: dict[str, dict[str, float]], mech: str,
          max_solves: int) -> CapacityBounded:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterTypeError("k", k, "an integer degree >= 1")
    if not 1 <= int(k) <= 8:
        raise ParameterError("k", k, "a degree in 1..8")
    k = int(k)
    a = _alpha(alpha)
    if a == 1.0:
        raise ParameterError("alpha", alpha, "an order > 1 (use laplace_lin_kl / gaussian_lin_kl for KL)")
    if k == 1:
        val, r = _exact_1d(family, s, a)
        return CapacityBounded("lin", "renyi", a, val, "exact", True,
                               _prov(mech, "Lemma 3, certified",
                                     (Ref("chaudhuri2019", "Lemma 3"), Ref("chaudhuri2019", "Def 3")), sens, noise))
    budget = V.integer("max_solves", max_solves, lo=2)
    eps, info = worst_shift_poly(family, k, s, a, budget)
    kind = "exact" if info["tight"] else "sound_upper_bound"
    return CapacityBounded(f"poly_{k}", "renyi", a, eps, kind, True,
                           _prov(mech, "Lemma 3, certified; sup over shifts in [0, sens] by dual perturbation",
                                 (Ref("chaudhuri2019", "Lemma 3"), Ref("chaudhuri2019", "Def 3")), sens, noise,
                                 f"value at the full shift {info['at_full']:.12g}; sup over [0, s] bounded with "
                                 f"{info['solves']} certified solves (bound - value at full shift = "
                                 f"{eps - info['at_full']:.2e})"))


def worst_shift_poly(family: str, k: int, s: float, alpha: float, max_solves: int = 300
                     ) -> tuple[float, dict[str, Any]]:
    """Certified upper bound on sup_{0 <= u <= s} D^{poly_k}_{R,alpha}(Y + u || Y).

    D^{poly_k} is not known to be monotone in the shift for k >= 2, so the worst neighbour need not
    be the one at full sensitivity. With rho(u) = exp(D(u)/alpha*) the norm of h -> E_{Y+u} h on
    poly_k (Lemma 3, ratio form) and m(u) the moment vector of Y + u: if g represents m(u_b)
    (E_Q[g x^j] = m_j(u_b)), then g + sum_j w_j x^j with w = G^{-1}(m(u) - m(u_b)) represents m(u),
    so rho(u) <= rho(u_b) + sum_j |w_j| ||x^j||_{L^alpha(Q)} for every u in [u_a, u_b]; |m_j(u) - m_j(u_b)|
    is bounded in closed form (m_j is a polynomial with nonnegative coefficients in u >= 0). Intervals
    are refined (geometrically toward s first) until every interval bound is within 1e-8 relative of
    the largest certified point value, or the solve budget is spent (the bound stays sound, only looser).
    """
    from math import comb, exp, lgamma, log

    from .._core import capacity as core
    code = 1 if family == "laplace" else 0
    n = k + 1
    r = alpha / (alpha - 1.0)
    mu, gram = core.poly_moments(code, 0.0, k)
    G = np.asarray(gram, dtype=float).reshape(n, n)
    # entrywise |G^{-1}|, widened by the inversion's relative error (order cond(G) eps)
    Ginv = np.abs(np.linalg.inv(G)) * (1 + 64.0 * float(np.linalg.cond(G)) * np.finfo(float).eps + 1e-12)

    def log_abs_mom(m: float) -> float:
        if family == "laplace":
            return lgamma(m + 1.0)
        return 0.5 * m * log(2.0) + lgamma(0.5 * (m + 1.0)) - 0.5 * log(math.pi)
    xnorm = np.array([exp(log_abs_mom(j * alpha) / alpha) for j in range(n)]) * (1 + 1e-12)
    amu = np.abs(np.asarray(mu, dtype=float))

    def extra(ua: float, ub: float) -> float:
        dm = np.array([sum(comb(j, i) * amu[i] * (ub ** (j - i) - ua ** (j - i)) for i in range(j))
                       for j in range(n)])
        return float((Ginv @ dm) @ xnorm) * (1 + 1e-12)

    rho: dict[float, float] = {}
    warm = None

    def solve(u: float) -> float:
        nonlocal warm
        if u not in rho:
            res = standardized_renyi(family, u, alpha, k, coef_init=warm)
            warm = res["coef"]
            rho[u] = exp(res["d_hi"] / r) if u > 0 else 1.0
        return rho[u]
    if s == 0:
        return 0.0, {"at_full": 0.0, "solves": 0, "tight": True}
    pts = [s] + [s * (1.0 - 2.0 ** -j) for j in range(40, 0, -1)] + [0.0]
    for u in sorted(set(pts), reverse=True):
        solve(u)
    while True:
        us = sorted(rho)
        top = max(rho.values())
        bounds = [(rho[ub] + extra(ua, ub), ua, ub) for ua, ub in zip(us[:-1], us[1:])]
        worst = max(bounds)
        if worst[0] <= top * (1 + 1e-8) or len(rho) >= max_solves:
            break
        solve(0.5 * (worst[1] + worst[2]))
    bound = max(top, worst[0])
    at_full = r * log(rho[s])
    eps = round_up(r * log(bound), 4)
    return eps, {"at_full": at_full, "solves": len(rho), "tight": eps - at_full <= 1e-7 * (1 + at_full)}


def laplace_poly_renyi(k: int, eps_noise: float, sens: float, alpha: float, *,
                       max_solves: int = 300) -> CapacityBounded:
    """(poly_k, Rényi_alpha) parameter of Lap(0, 1/eps_noise) noise (1-D): the certified sup over
    shifts in [0, eps_noise*sens] (:func:`worst_shift_poly`); kind "exact" when it equals the value
    at the full shift to 1e-7, else "sound_upper_bound"."""
    e = V.positive("eps_noise", eps_noise)
    s = abs(V.real("sens", sens)) * e
    return _poly("laplace", k, s, alpha, sens, {"laplace": {"b": 1.0 / e}}, "laplace_poly_renyi", max_solves)


def gaussian_poly_renyi(k: int, sigma: float, sens: float, alpha: float, *,
                        max_solves: int = 300) -> CapacityBounded:
    """(poly_k, Rényi_alpha) parameter of N(0, sigma²) noise (1-D); see :func:`laplace_poly_renyi`."""
    sg = V.positive("sigma", sigma)
    s = abs(V.real("sens", sens)) / sg
    return _poly("gaussian", k, s, alpha, sens, {"gaussian": {"sigma": sg}}, "gaussian_poly_renyi", max_solves)


# ---- matrix mechanism (Thm 5) -------------------------------------------------------------------
def _strategy(strategy: Any) -> np.ndarray:
    A = V.float_array("strategy", strategy, ndim=2)
    if np.linalg.matrix_rank(A) < A.shape[1]:
        raise ParameterError("strategy", f"matrix of shape {A.shape}", "a strategy matrix of full column rank n")
    return A


def matrix_mechanism_guarantee(strategy: Any, eps_noise: float, alpha: float, method: str = "sound") -> CapacityBounded:
    """(lin, Rényi_alpha) parameter of M_A(W, x) = W A⁺(A x + ||A||_1 Lap_{s_rows}(0, 1/eps_noise)) (Thm 5).

    ``"paper"``: Thm 5 as printed, (1/(alpha-1)) log(1 + 2^{s_rows(alpha-1)} eps^alpha) (unsound for
    alpha > 2, small eps). ``"sound"``: the least of the corrected Thm 5, s_rows log 2 +
    log(1 + eps^alpha)/(alpha-1), the ratio-form bound with the worst column shift, and the
    Thm 4 composition of exact 1-D values of the worst column; all then carried through the
    post-processing theorem (Thm 1: linear maps of lin adversaries are lin). The bound does not
    depend on W or x. ``"exact"`` is not available (the noise is s_rows-dimensional Laplace).

    >>> g = matrix_mechanism_guarantee([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], 1.0, 2.0)
    >>> round(g.eps, 6), g.kind   # 2 x exact (lin, Renyi_2) at shift 1/2: 2 log(1.125)
    (0.235566, 'sound_upper_bound')
    """
    A = _strategy(strategy)
    e = V.positive("eps_noise", eps_noise)
    a = _alpha(alpha)
    if a == 1.0:
        raise ParameterError("alpha", alpha, "an order > 1")
    m = _method(method)
    if m == "exact":
        raise ParameterError("method", method, "'sound' or 'paper' (no exact solver for s_rows-dim Laplace noise)")
    norm1 = float(np.abs(A).sum(axis=0).max())
    noise = {"laplace": {"b": norm1 / e}, "s_rows": int(A.shape[0])}
    prov_items = (Ref("chaudhuri2019", "Thm 5"), Ref("chaudhuri2019", "Thm 1"),
                  Ref("chaudhuri2019", "Cor 2"))
    if m == "paper":
        val = round_up(math.log1p(math.exp(A.shape[0] * (a - 1) * math.log(2.0) + a * math.log(e))) / (a - 1), 8)
        return CapacityBounded("lin", "renyi", a, val, "paper_bound", False,
                               Provenance(mechanism="matrix_mechanism", theorem="Thm 5 as printed",
                                          refs=prov_items, sensitivity=norm1,
                                          noise=noise, notes="NOT an upper bound for alpha > 2 at small eps"))
    # worst column: v = eps * a_i / ||A||_1 (standardized by the Laplace scale ||A||_1/eps)
    cols = np.abs(A) / norm1 * e
    cands = []
    corr = max(B.corrected_bound("laplace", c, a, "exact") for c in cols.T)
    cands.append((corr, "corrected Thm 13 (worst column)"))
    ratio = max(B.sound_bound("laplace", c, a) for c in cols.T)
    cands.append((ratio, "ratio-form bound (worst column)"))
    uniq: dict[float, float] = {}
    comp = 0.0
    for c in cols.T:
        tot = 0.0
        for x in c[c > 0]:
            key = float(x)
            if key not in uniq:
                uniq[key] = standardized_renyi("laplace", key, a, 1)["d_hi"]
            tot += uniq[key]
        comp = max(comp, tot)
    cands.append((round_up(comp, 4 + A.shape[0]), "Thm 4 composition of exact 1-D values (worst column)"))
    val, how = min(cands)
    return CapacityBounded("lin", "renyi", a, val, "sound_upper_bound", True,
                           Provenance(mechanism="matrix_mechanism", theorem=how,
                                      refs=(Ref("chaudhuri2019", "Thm 5"), Ref("chaudhuri2019", "Thm 1"),
                                            Ref("chaudhuri2019", "Thm 13"), Ref("chaudhuri2019", "Thm 4")),
                                      sensitivity=norm1, noise=noise,
                                      notes="least of: " + "; ".join(f"{n} = {x:.10g}" for x, n in cands)))


class MatrixMechanism:
    """The matrix mechanism of Thm 5: release W A⁺(A x + ||A||_1 Lap_{s_rows}(0, 1/eps_noise)).

    >>> import numpy as np
    >>> M = MatrixMechanism([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], eps_noise=1.0, alpha=2.0)
    >>> M.release([3.0, 4.0], W=np.eye(2), rng=1).shape
    (2,)
    """

    def __init__(self, strategy: Any, eps_noise: float, alpha: float, method: str = "sound"):
        self.strategy = _strategy(strategy)
        self.eps_noise = V.positive("eps_noise", eps_noise)
        self.norm1 = float(np.abs(self.strategy).sum(axis=0).max())
        self.guarantee = matrix_mechanism_guarantee(self.strategy, self.eps_noise, alpha, method)
        self._pinv = np.linalg.pinv(self.strategy)

    @property
    def noise(self) -> dict[str, dict[str, float]]:
        return {"laplace": {"b": self.norm1 / self.eps_noise}}

    @property
    def sensitivity(self) -> float:
        """||A||_1, the largest column l1 norm of the strategy (the l1 sensitivity of A x)."""
        return self.norm1

    def release(self, x: Any, W: Any = None, *, rng: Any = None, out: Any = None) -> np.ndarray:
        """One release for the histogram x (length n); W defaults to the identity (answers x).
        ``rng``: None, int, SeedSequence or Generator (puffer's samplers); ``out``: a float64
        array of shape (rows of W,) to fill."""
        from ..sampling import draw
        A = self.strategy
        xx = V.float_array("x", x, ndim=1)
        if xx.size != A.shape[1]:
            raise ParameterError("x", f"array of length {xx.size}", f"a histogram of length n = {A.shape[1]}")
        Wm = np.eye(A.shape[1]) if W is None else V.float_array("W", W, ndim=2)
        if Wm.shape[1] != A.shape[1]:
            raise ParameterError("W", f"matrix of shape {Wm.shape}", f"a query matrix with n = {A.shape[1]} columns")
        z = draw("laplace", {"b": self.norm1 / self.eps_noise}, A.shape[0], rng=rng)
        res = Wm @ (self._pinv @ (A @ xx + np.asarray(z)))
        if out is None:
            return cast(np.ndarray, res)
        if not isinstance(out, np.ndarray) or out.shape != res.shape or out.dtype != np.float64:
            raise ParameterError("out", out, f"a float64 numpy array of shape {res.shape}")
        out[...] = res
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able record: strategy shape, noise, sensitivity and guarantee (with provenance)."""
        return {"mechanism": "MatrixMechanism", "strategy_shape": list(self.strategy.shape),
                "noise": self.noise, "sensitivity": self.norm1, "eps_noise": self.eps_noise,
                "guarantee": self.guarantee.to_dict()}

    def __repr__(self) -> str:
        return (f"MatrixMechanism(s_rows={self.strategy.shape[0]}, n={self.strategy.shape[1]}, "
                f"eps_noise={self.eps_noise:g}, eps={self.guarantee.eps:.6g})")
