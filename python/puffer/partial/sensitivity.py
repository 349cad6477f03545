"""Sensitivities of epsilon-TP mechanisms given what is public.

Sensitivities of epsilon-TP mechanisms (Seeman, Reimherr & Slavkovic, "Formal privacy for
partially private data", Thm 9-10, Examples 1-4, Eq. 35, Figure 4).

* :func:`delta_z` -- Delta_z = sup over the conditional family Theta_z and the admissible secret
  pairs of W_inf between the secret-conditional laws of the statistic (Thm 9), computed by the
  transport kernel of :mod:`puffer.transport` (exact on finite families, log-space for binomials).
* :func:`delta_correlated_counts` -- Figure 4: W_inf(1 + Bin(n-1, z1), Bin(n-1, z0)) (the other
  n-1 records conditionally independent at the bounds of the family).
* :func:`delta_gaussian_conditional` -- Example 1(b): |c_1| Delta with c = Sigma_VZ^{-1} Sigma_XVZ.
  The paper prints (Eq. 16) Sigma_XVZ^T Sigma_VZ^{-1} (Delta, z - mu_Z)^T; the (z - mu_Z) term cancels
  between the two secret-conditionals (same z, equal variances), so |c_1| Delta is implemented.
* :func:`delta_sdl_counts` -- Example 2 with k-anonymity / t-closeness truncations of the count.
* :func:`sigma_norm_loss`, :func:`sigma_lipschitz_loss`, :func:`sigma_y_mean` -- sigma(Delta_z) for
  L_x(y) = ||y - T(x)|| (= Delta_z), for l(||y - T(x)||) with l k-Lipschitz (<= k Delta_z), and the
  gradient sensitivity of the quadratic mean loss (Thm 10): n sup ||xbar - xbar'||_K.

Every value is a certified upper bound: W_inf from the kernel is exact on the atoms, closed forms are
rounded upward.

>>> delta_correlated_counts(100, 0.3, 0.7)
41
>>> delta_correlated_counts(10, 0.0, 0.5)
10
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V
from .. import transport as T
from ..errors import ParameterError, ParameterTypeError, UnboundedSensitivityError
from ..guarantees import round_up

__all__ = ["delta_correlated_counts", "correlated_counts_laws", "gaussian_c1", "delta_gaussian_conditional",
           "delta_sdl_counts", "delta_z", "sigma_norm_loss", "sigma_lipschitz_loss", "sigma_y_mean"]


def correlated_counts_laws(n: int, z0: float, z1: float) -> tuple[T.LogDiscreteDist, T.LogDiscreteDist]:
    """(law of S_n | X_j = 1, law of S_n | X_j = 0) = (1 + Bin(n-1, z1), Bin(n-1, z0)), in log space."""
    n = V.integer("n", n, lo=1)
    z0 = V.real("z0", z0, lo=0.0, hi=1.0, expected="a probability in [0, 1]")
    z1 = V.real("z1", z1, lo=0.0, hi=1.0, expected="a probability in [0, 1]")
    return T.binomial_law(n - 1, z1, shift=1.0), T.binomial_law(n - 1, z0)


def delta_correlated_counts(n: int, z0: float, z1: float) -> int:
    """Delta_z of a count of n correlated binary records (Figure 4, Eq. 35).

    The family bounds P(X_i = 1 | X_j = 1, z) <= z1 and P(X_i = 1 | X_j = 0, z) >= z0; the sup is
    attained at the bounds with the other records conditionally independent, so Delta_z is the
    W_inf distance between 1 + Bin(n-1, z1) and Bin(n-1, z0), computed from log-space CDF/SF levels
    (the naive float cumsum under-reports, e.g. 84 instead of 100 at n=100, z0=0, z1=0.5).
    Result in {1, ..., n}: z0 = z1 gives 1 (the DP value), z0 = 0 < z1 gives n.

    >>> [delta_correlated_counts(10, 0.1, z1) for z1 in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]
    [6, 7, 7, 8, 9, 10]
    """
    P, Q = correlated_counts_laws(n, z0, z1)
    return int(round(T.w_inf(P, Q)))


def gaussian_c1(n: int, sigma2: float = 1.0, sigma_z2: float = 1.0, kappa: float = 0.0, rho: float = 0.0) -> float:
    """c_1 = (sigma_Z^2 sigma^2/n - kappa rho) / (sigma^2 sigma_Z^2 - kappa^2) of Example 1(b).

    kappa = Cov(X_1, Z), rho = Cov(Xbar, Z). The joint covariance of (Xbar, X_1, Z),
    [[s2/n, s2/n, rho], [s2/n, s2, kappa], [rho, kappa, sZ2]], must be positive semi-definite and
    Sigma_VZ invertible; otherwise ParameterError (e.g. kappa = 0.9, rho = -0.05 at n = 10).

    >>> gaussian_c1(10, 1, 1, 0.5, -0.2)    # 4/15
    0.26666666666666666
    """
    n = V.integer("n", n, lo=1)
    s2 = V.positive("sigma2", sigma2)
    sz2 = V.positive("sigma_z2", sigma_z2)
    kappa = V.real("kappa", kappa)
    rho = V.real("rho", rho)
    cov = np.array([[s2 / n, s2 / n, rho], [s2 / n, s2, kappa], [rho, kappa, sz2]])
    det_vz = s2 * sz2 - kappa * kappa
    if det_vz <= 0:
        raise ParameterError("kappa", kappa, f"|kappa| < sqrt(sigma2 sigma_z2) = {math.sqrt(s2 * sz2)} "
                             "(Sigma_VZ must be invertible; as it degenerates Delta_z -> inf)")
    # exact PSD check through the Schur complement (conditional variance of Xbar given X_1, Z)
    cvar = s2 / n - np.array([s2 / n, rho]) @ np.linalg.solve(cov[1:, 1:], np.array([s2 / n, rho]))
    if cvar < -1e-12 * (s2 / n) or np.linalg.eigvalsh(cov).min() < -1e-12 * max(s2, sz2):
        raise ParameterError("rho", rho, f"a covariance making the joint law of (Xbar, X_1, Z) PSD "
                             f"(conditional variance {cvar:.6g} < 0 with kappa={kappa})")
    return (sz2 * s2 / n - kappa * rho) / det_vz


def delta_gaussian_conditional(delta: float, n: int, *, sigma2: float = 1.0, sigma_z2: float = 1.0,
                               kappa: float = 0.0, rho: float = 0.0, grid: Any = None) -> float:
    """Delta_z = sup_theta |c_1(theta)| Delta for the jointly normal family of Example 1(b).

    One theta given by (sigma2, sigma_z2, kappa, rho), or ``grid``: an iterable of such dicts (the sup
    is over the grid). With kappa = rho = 0 (Z independent of X) this is Delta/n (Example 1(a)).

    >>> d = delta_gaussian_conditional(1.0, 10)      # Delta/n, rounded up
    >>> d >= 0.1, round(d, 12)
    (True, 0.1)
    """
    delta = V.positive("delta", delta)
    thetas = [dict(sigma2=sigma2, sigma_z2=sigma_z2, kappa=kappa, rho=rho)] if grid is None else list(grid)
    if not thetas:
        raise ParameterError("grid", grid, "a non-empty family of parameter dicts")
    best = 0.0
    for th in thetas:
        if not isinstance(th, dict):
            raise ParameterTypeError("grid", th, "dicts with keys sigma2, sigma_z2, kappa, rho")
        extra = set(th) - {"sigma2", "sigma_z2", "kappa", "rho"}
        if extra:
            raise ParameterError("grid", sorted(extra), "only the keys sigma2, sigma_z2, kappa, rho")
        best = max(best, abs(gaussian_c1(n, **th)))
    return round_up(best * delta)


def _trunc(law: Any, lo: float, hi: float) -> T.LogDiscreteDist | None:
    """A 1-D law restricted to [lo, hi] and renormalised (None when it has no mass there)."""
    a, lp = law.atoms, law.log_probs if hasattr(law, "log_probs") else np.log(law.probs)
    keep = (a >= lo) & (a <= hi) & np.isfinite(lp)
    if not keep.any():
        return None
    return T.LogDiscreteDist(a[keep], lp[keep], normalize=True)


def delta_sdl_counts(n: int, p: Any, *, k_anonymity: int | None = None,
                     t_closeness: tuple[float, float] | None = None,
                     allowed: tuple[float, float] | None = None) -> int:
    """Delta_z for S_n = sum X_i, X_i iid Bernoulli(p) (p a float or a list: sup over them), public
    information an SDL fact truncating S_n (Example 2 / Eq. 18, 36):

    * ``k_anonymity=k``: S_n in {k, ..., n - k};
    * ``t_closeness=(t_star, t)``: |S_n/n - t_star| <= t (closed interval, exact rational comparison);
    * ``allowed=(lo, hi)``: S_n in [lo, hi] directly.

    The secret-conditional laws 1 + Bin(n-1, p) and Bin(n-1, p) are truncated to the allowed range;
    pairs whose secret becomes certain are dropped (Eq. 10). Returns 0 when z pins S_n down.

    >>> delta_sdl_counts(10, 0.5, k_anonymity=3), delta_sdl_counts(10, 0.5, t_closeness=(0.3, 0.05))
    (1, 0)
    """
    n = V.integer("n", n, lo=1)
    ps = [p] if np.ndim(p) == 0 else list(p)
    if not ps:
        raise ParameterError("p", p, "a probability or a non-empty list of them")
    lo, hi = 0, n
    given = [x is not None for x in (k_anonymity, t_closeness, allowed)]
    if sum(given) > 1:
        raise ParameterError("k_anonymity", k_anonymity, "only one of k_anonymity, t_closeness, allowed")
    if k_anonymity is not None:
        k = V.integer("k_anonymity", k_anonymity, lo=0, hi=n // 2)
        lo, hi = k, n - k
    elif t_closeness is not None:
        if not isinstance(t_closeness, tuple) or len(t_closeness) != 2:
            raise ParameterTypeError("t_closeness", t_closeness, "a (t_star, t) tuple")
        ts, t = (Fraction(str(V.real("t_star", t_closeness[0], lo=0, hi=1))),
                 Fraction(str(V.nonneg("t", t_closeness[1]))))
        ok = [s for s in range(n + 1) if abs(Fraction(s, n) - ts) <= t]
        if not ok:
            raise ParameterError("t_closeness", t_closeness, "a constraint some count S_n in {0..n} satisfies")
        lo, hi = ok[0], ok[-1]
    elif allowed is not None:
        lo = V.integer("allowed[0]", allowed[0], lo=0, hi=n)
        hi = V.integer("allowed[1]", allowed[1], lo=lo, hi=n)
    best = 0
    for pi in ps:
        pi = V.real("p", pi, lo=0.0, hi=1.0, expected="a probability in [0, 1]")
        P1 = _trunc(T.binomial_law(n - 1, pi, shift=1.0), lo, hi)
        P0 = _trunc(T.binomial_law(n - 1, pi), lo, hi)
        if P1 is None or P0 is None:
            continue  # a secret made certain by z: pair dropped (Eq. 10)
        best = max(best, int(round(T.w_inf(P1, P0))))
    return best


def delta_z(framework: Any, *, norm: Any = None, rich: bool = False) -> float:
    """Delta_z of a finite conditional family: sup over thetas and admissible pairs of W_inf.

    ``framework`` a :class:`puffer.partial.TPFramework` or a :class:`puffer.Framework` whose priors are
    the conditional laws given z. ``rich=True`` declares the family to contain near-point masses
    (Lemma 12): a value < 1 then indicates a modelling error and raises.
    """
    from ..framework import Framework

    # a TPFramework is read through its ``framework`` (not imported: puffer.partial.frameworks is the
    # layer above this one, built on these sensitivities)
    fw = framework if isinstance(framework, Framework) else getattr(framework, "framework", framework)
    if not isinstance(fw, Framework):
        raise ParameterTypeError("framework", framework, "a puffer.partial.TPFramework or puffer.Framework")
    val = float(fw.w_inf(norm).value)
    if rich and val < 1.0:
        raise ParameterError("framework", f"Delta_z = {val}", "Delta_z >= 1 for a rich family (Lemma 12)")
    return val


def sigma_norm_loss(delta_z: float) -> float:
    """sigma(Delta_z) for L_x(y) = ||y - T(x)|| with d(x, x') = ||T(x) - T(x')||: Delta_z (reverse
    triangle inequality, attained)."""
    d = V.nonneg("delta_z", delta_z, allow_inf=True)
    if math.isinf(d):
        raise UnboundedSensitivityError("Delta_z is infinite: no epsilon-TP mechanism of this form")
    return d


def sigma_lipschitz_loss(delta_z: float, k: float) -> float:
    """sigma(Delta_z) <= k Delta_z for L_x(y) = l(||y - T(x)||), l k-Lipschitz (rounded up)."""
    return round_up(sigma_norm_loss(delta_z) * V.positive("k", k))


def sigma_y_mean(n: int, mean_sensitivity: float) -> float:
    """sigma_y for L_X(y) = 1/2 sum_i ||y - x_i||_2^2: grad = n (y - xbar), so
    sigma_y = n sup{||xbar - xbar'||_K : d(x, x') <= Delta_z} = n * mean_sensitivity."""
    return round_up(V.integer("n", n, lo=1) * V.nonneg("mean_sensitivity", mean_sensitivity))

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "delta_correlated_counts": (Ref("seeman2024", "Figure 4"), Ref("seeman2024", "Eq. 35"),),
    "delta_gaussian_conditional": (Ref("seeman2024", "Example 1"),),
    "gaussian_c1": (Ref("seeman2024", "Example 1"),),
    "delta_sdl_counts": (Ref("seeman2024", "Example 2"), Ref("seeman2024", "Eq. 18"),),
    "delta_z": (Ref("seeman2024", "Lemma 12"),),
}
