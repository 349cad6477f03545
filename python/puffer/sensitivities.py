"""Closed-form sensitivity bounds for priors where W_inf needs no transport computation.

Closed-form sensitivity bounds of Pierquin, Bellet, Tommasi, Boussard 2024 (§6, App. F) for
priors where W_inf needs no transport computation.

* :func:`weakly_dependent` -- Prop 6.1: Theta_lambda priors, Delta_G <= 2 lambda + Delta.
* :func:`gaussian_attribute` -- Prop 6.2: Gaussian records, release column r protecting column p,
  Delta_G = |Sigma_pr / Sigma_pp| diam(K).
* :func:`gaussian_linear` -- Prop F.1: release M X_i protecting N X_i = a,
  Delta_G = max_{a,b in K} ||M Sigma N^T (N Sigma N^T)^{-1} (a - b)||_2.
* :func:`langevin` -- Prop 6.3: Langevin-diffusion prior with C-strongly convex potential,
  Delta_G <= L diam_2(K) sum_i exp(-C t_i) in l2 ([!] the paper prints exp(-2 C t_i) and l1, which the
  synchronous-coupling proof does not support; ``paper_variant=True`` gives the printed form).
* :func:`bounded_support` -- Example 3: X_i in (0, r_i), f = sum X_i, Delta_G <= sum r_i
  (W_inf between laws supported in an interval is at most its length).

Each returns a :class:`puffer.Sensitivity` (``kind`` names the bound, ``params`` holds the
theorem and inputs) whose ``value`` is rounded up; use it with a noise family's
``calibrate(..., sensitivity=s.value)`` or ``rpp_curve(s.value)``.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from . import _validate as V
from .errors import ParameterError
from .framework import Sensitivity
from .guarantees import round_up

__all__ = ["weakly_dependent", "gaussian_attribute", "gaussian_linear", "langevin", "bounded_support"]

_PAPER = "Pierquin, Bellet, Tommasi, Boussard 2024"


def _sens(value: float, kind: str, theorem: str, norm: float | None, **params: Any) -> Sensitivity:
    return Sensitivity(value, kind, None, norm, (), {"theorem": f"{_PAPER}, {theorem}", **params})


def _cov(name: str, cov: Any) -> np.ndarray:
    S = V.float_array(name, cov, ndim=2)
    if S.shape[0] != S.shape[1]:
        raise ParameterError(name, f"array of shape {S.shape}", "a square covariance matrix")
    if not np.allclose(S, S.T, rtol=1e-12, atol=1e-300):
        raise ParameterError(name, "a non-symmetric matrix", "a symmetric covariance matrix")
    return S


def weakly_dependent(dp_sensitivity: float, lam_dep: float) -> Sensitivity:
    """Prop 6.1: for priors in Theta_lambda (W_inf between each conditional law and its
    independent counterpart <= lambda), Delta_G <= 2 lambda + Delta.

    [!] Implicitly for pairs about the same individual (X_i = a vs X_i = b); for pairs about
    different individuals the independent-prior distance can be 2 Delta.

    >>> round(weakly_dependent(1.0, 0.25).value, 12)
    1.5
    """
    d = V.nonneg("dp_sensitivity", dp_sensitivity)
    lam = V.nonneg("lam_dep", lam_dep)
    return _sens(round_up(2.0 * lam + d), "w_inf_bound", "Prop 6.1 (weakly dependent data)", None,
                 dp_sensitivity=d, lam_dep=lam)


def gaussian_attribute(cov: Any, protected: int, released: int, K: Any) -> Sensitivity:
    """Prop 6.2: records iid N(mu, Sigma); release column ``released`` of every record while
    protecting column ``protected`` (secrets X_i^p = a, a in K). Delta_G = |Sigma_rp / Sigma_pp| diam(K)
    (an equality: same-covariance Gaussian conditionals are translates).

    ``K``: the protected values, an interval (lo, hi) or any finite set of reals.

    >>> round(gaussian_attribute([[2.0, 1.0], [1.0, 3.0]], 0, 1, (0.0, 4.0)).value, 12)
    2.0
    """
    S = _cov("cov", cov)
    m = S.shape[0]
    p = V.integer("protected", protected, lo=0, hi=m - 1)
    r = V.integer("released", released, lo=0, hi=m - 1)
    if p == r:
        raise ParameterError("released", released, "a column other than the protected one")
    if not S[p, p] > 0:
        raise ParameterError("cov", f"Sigma[{p},{p}] = {S[p, p]}", "a positive variance of the protected column")
    k = V.float_array("K", K, ndim=1)
    diam = float(k.max() - k.min())
    val = round_up(abs(S[r, p] / S[p, p]) * diam, 3)
    return _sens(val, "w_inf", "Prop 6.2 (attribute privacy, Gaussian records)", None,
                 protected=p, released=r, diam_K=diam)


def gaussian_linear(cov: Any, M: Any, N: Any, K: Any) -> Sensitivity:
    """Prop F.1: records iid N(mu, Sigma) on R^m; release f(x) = (M x_1, ..., M x_n) while
    protecting N X_i = a, a in K:
    Delta_G = max_{a,b in K} ||M Sigma N^T (N Sigma N^T)^{-1} (a - b)||_2.

    ``K``: a finite set of points, shape (k, l2) (or (k,) when l2 = 1). For a convex K give its
    extreme points (the maximum of a convex function over K - K is at a pair of them).

    >>> round(gaussian_linear([[2.0, 1.0], [1.0, 3.0]], [[0.0, 1.0]], [[1.0, 0.0]], [[0.0], [4.0]]).value, 12)
    2.0
    """
    S = _cov("cov", cov)
    m = S.shape[0]
    Mm = V.float_array("M", M, ndim=2)
    Nm = V.float_array("N", N, ndim=2)
    if Mm.shape[1] != m or Nm.shape[1] != m:
        raise ParameterError("M", f"shapes {Mm.shape}, {Nm.shape}", f"matrices with {m} columns (the record dimension)")
    P = V.float_array("K", K, ndim=(1, 2))
    if P.ndim == 1:
        P = P[:, None]
    if P.shape[1] != Nm.shape[0]:
        raise ParameterError("K", f"points of dimension {P.shape[1]}", f"points in R^{Nm.shape[0]} (rows of N)")
    cross = Mm @ S @ Nm.T
    inner = Nm @ S @ Nm.T
    try:
        A = np.linalg.solve(inner.T, cross.T).T    # cross @ inner^{-1}
    except np.linalg.LinAlgError as exc:
        raise ParameterError("N", "N Sigma N^T singular", "N of full row rank under Sigma") from exc
    best = 0.0
    for i, j in itertools.combinations(range(P.shape[0]), 2):
        best = max(best, float(np.linalg.norm(A @ (P[i] - P[j]))))
    # linear solve + norm: relative error a few hundred ulps at most for well-conditioned inner
    cond = float(np.linalg.cond(inner))
    val = round_up(best * (1.0 + 64 * cond * np.finfo(float).eps), 2)
    return _sens(val, "w_inf", "Prop F.1 (general linear Gaussian attribute privacy)", 2.0, condition=cond)


def langevin(L: float, diam_K: float, C_convex: float, times: Any, *, paper_variant: bool = False) -> Sensitivity:
    """Prop 6.3: V C-strongly convex, dX_t = -grad V(X_t) dt + sqrt(2) dB_t, the prior the law of
    (X_{t_1}, ..., X_{t_n}); secrets X_0 = a, a in K; f L-Lipschitz (|f(x) - f(y)| <= L sum_i
    ||x_i - y_i||_2). Synchronous coupling gives ||X_t - Y_t||_2 <= exp(-C t) ||a - b||_2, so

        Delta_G <= L diam_2(K) sum_i exp(-C t_i)     (l2; default).

    ``paper_variant=True``: the printed L Diam(K) sum_i exp(-2 C t_i) with the l1 norm -- [!] not
    supported by the paper's proof (it is smaller than the exact W_inf for an Ornstein-Uhlenbeck
    process); kept only to reproduce the paper.

    >>> round(langevin(1.0, 2.0, 1.0, [1.0]).value, 12)   # 2 exp(-1)
    0.735758882343
    """
    L = V.nonneg("L", L)
    D = V.nonneg("diam_K", diam_K)
    C = V.positive("C_convex", C_convex)
    t = V.float_array("times", times, ndim=1)
    if (t < 0).any():
        raise ParameterError("times", float(t[np.argmax(t < 0)]), "observation times t_i >= 0")
    rate = 2.0 * C if paper_variant else C
    s = math.fsum(np.exp(-rate * t).tolist())
    val = round_up(L * D * s, 8)   # exp is faithful to 1 ulp; n terms fsum'd; two products
    return _sens(val, "w_inf_bound", "Prop 6.3 (Langevin diffusion prior)" +
                 (" as printed (exp(-2 C t), l1) -- not supported by its proof" if paper_variant else
                  ", corrected to exp(-C t) in l2"),
                 1.0 if paper_variant else 2.0, paper_variant=bool(paper_variant))


def bounded_support(radii: Any) -> Sensitivity:
    """Example 3: X_i in (0, r_i), f = X_1 + ... + X_n, any prior: every conditional law of f is
    supported in (0, sum r_i), so Delta_G <= sum_i r_i (compare Delta_GROUP = n max r_i).

    >>> round(bounded_support([1.0, 2.0]).value, 12)
    3.0
    """
    r = V.float_array("radii", radii, ndim=1)
    if not (r > 0).all():
        raise ParameterError("radii", float(r[np.argmax(~(r > 0))]), "ranges r_i > 0")
    return _sens(round_up(math.fsum(r.tolist())), "w_inf_bound", "Example 3 (user-dependent ranges)", None,
                 radii=r.tolist())

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from .refs import Ref  # noqa: E402

REFERENCES = {
    "weakly_dependent": (Ref("pierquin2024", "Prop 6.1"),),
    "gaussian_attribute": (Ref("pierquin2024", "Prop 6.2"),),
    "gaussian_linear": (Ref("pierquin2024", "Prop F.1"),),
    "langevin": (Ref("pierquin2024", "Prop 6.3"),),
    "bounded_support": (Ref("pierquin2024", "Example 3"),),
}
