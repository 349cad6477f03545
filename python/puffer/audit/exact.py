"""Exact privacy-loss oracles for discrete 1-D frameworks, to check how tight a guarantee is.

Privacy-loss oracles for discrete 1-D frameworks: used by the tests to check that every
calibrated mechanism keeps its promise, and by users to see how conservative a theorem is.

* :func:`laplace_privacy_loss` — exact sup_y |log p_Y(y | s_i) / p_Y(y | s_j)| for Y = X + Lap(b)
  and discrete X (derived from the convolution form of Ding 2022, eq. (3)): between consecutive
  atoms the ratio is a Möbius function of e^{2y/b}, hence monotone, so the sup is attained at an
  atom or as y -> ±inf. Log space.
* :func:`renyi_divergence` — D_alpha(law(X_i + N) || law(X_j + N)) for discrete X and any noise
  with a vectorised ``logpdf``, by a sinh-mapped trapezoid rule in log space.
* :func:`max_privacy_loss` — numeric sup of the log-ratio of the two noisy densities over a grid.
* :func:`loss_tail_probability` — numeric P(|privacy loss| > eps), the delta of Ding's Theorem 3.
* :func:`framework_loss` — the maximum of one of these over all priors and pairs of a framework.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as V
from ..dist import DiscreteDist
from ..errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["laplace_privacy_loss", "renyi_divergence", "max_privacy_loss", "loss_tail_probability",
           "framework_loss"]


def _logsumexp(a: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out: NDArray[np.float64] = np.squeeze(m, axis) + np.log(np.sum(np.exp(a - m), axis=axis))
    return out


def _check_pair(P: Any, Q: Any) -> None:
    for name, d in (("P", P), ("Q", Q)):
        if not isinstance(d, DiscreteDist):
            raise ParameterTypeError(name, d, "a DiscreteDist")
        if d.dim != 1:
            raise ParameterError(name, f"a law on R^{d.dim}", "a law on R")


def _log_mix_laplace(x: NDArray[np.float64], logp: NDArray[np.float64], y: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    return _logsumexp(logp[None, :] - np.abs(y[:, None] - x[None, :]) / b, axis=1)


def laplace_privacy_loss(P: DiscreteDist, Q: DiscreteDist, b: float) -> float:
    """Exact max |privacy loss| of X + Lap(b) between X ~ P and X ~ Q (derived from Ding 2022, eq. (3)).

    >>> from fractions import Fraction as F
    >>> P = DiscreteDist([1, 2, 3, 4], [F(1, 3), F(1, 6), F(1, 3), F(1, 6)])
    >>> Q = DiscreteDist([1, 2, 3, 4], [F(1, 4), F(1, 4), F(1, 6), F(1, 3)])
    >>> round(laplace_privacy_loss(P, Q, 1.0), 6)      # Ding 2022, App. C, Table 1 (Song et al. 2017 §3.1)
    0.294511
    """
    _check_pair(P, Q)
    b = V.positive("b", b)
    lp, lq = np.log(P.probs), np.log(Q.probs)
    y = np.union1d(P.atoms, Q.atoms)
    vals = np.abs(_log_mix_laplace(P.atoms, lp, y, b) - _log_mix_laplace(Q.atoms, lq, y, b))
    # y -> +inf: ratio -> sum p e^{x/b} / sum q e^{x/b}; y -> -inf: with e^{-x/b}
    up = abs(float(_logsumexp(lp + P.atoms / b) - _logsumexp(lq + Q.atoms / b)))
    down = abs(float(_logsumexp(lp - P.atoms / b) - _logsumexp(lq - Q.atoms / b)))
    return float(max(np.max(vals), up, down))


def _log_density(law: DiscreteDist, noise: Any, y: NDArray[np.float64]) -> NDArray[np.float64]:
    lp = np.log(law.probs)
    return _logsumexp(lp[None, :] + np.asarray(noise.logpdf(y[:, None] - law.atoms[None, :]), float), axis=1)


def _sinh_grid(P: DiscreteDist, Q: DiscreteDist, noise: Any, n: int, reach: float
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Nodes y = c + s sinh(u) on a uniform u-grid and their trapezoid weights: dense near the
    atoms, reaching ``reach`` noise scales (s = noise scale, or a tenth of the half-width)."""
    pts = np.union1d(P.atoms, Q.atoms)
    c, half = 0.5 * (pts[0] + pts[-1]), 0.5 * (pts[-1] - pts[0])
    s = max(float(getattr(noise, "scale", 1.0)), half / 10.0)
    U = math.asinh(reach * max(1.0, half / s))
    u = np.linspace(-U, U, n)
    w = s * np.cosh(u) * (u[1] - u[0])
    w[[0, -1]] *= 0.5
    return c + s * np.sinh(u), w


def renyi_divergence(P: DiscreteDist, Q: DiscreteDist, noise: Any, alpha: float, *,
                     n: int = 40001, reach: float = 1e8) -> float:
    """D_alpha(law(X + N) || law(Y + N)), X ~ P, Y ~ Q, N ~ noise (1-D, alpha in (1, inf)).

    A numeric oracle, not a certified bound: the real line is mapped by y = c + s sinh(u) (s the
    noise scale, or a tenth of the support's half-width if larger) and the log-space integrand is
    summed with the trapezoid rule on n points out to ``reach`` scales. For smooth noise
    (Gaussian, logistic, Student-t) the error is far below 1e-12 relative; kinked densities
    (Laplace) converge only like h^2 (about 1e-6 relative)."""
    _check_pair(P, Q)
    alpha = V.alpha("alpha", alpha, allow_inf=False)
    y, w = _sinh_grid(P, Q, noise, n, reach)
    g = alpha * _log_density(P, noise, y) + (1 - alpha) * _log_density(Q, noise, y) + np.log(w)
    return float(_logsumexp(g)) / (alpha - 1.0)


def max_privacy_loss(P: DiscreteDist, Q: DiscreteDist, noise: Any, *, width: float = 30.0,
                     n: int = 20001) -> float:
    """max over a grid (atoms ± width * scale) of |log p_Y(y) / q_Y(y)| (numeric, for noises
    without the exact Laplace formula)."""
    _check_pair(P, Q)
    pts = np.union1d(P.atoms, Q.atoms)
    scale = float(getattr(noise, "scale", 1.0))
    y = np.union1d(np.linspace(pts[0] - width * scale, pts[-1] + width * scale, n), pts)
    return float(np.max(np.abs(_log_density(P, noise, y) - _log_density(Q, noise, y))))


def loss_tail_probability(P: DiscreteDist, Q: DiscreteDist, noise: Any, eps: float, *,
                          n: int = 400001, reach: float = 1e8) -> float:
    """P_{Y ~ law(X + N), X ~ P}( |log p_Y(Y) / q_Y(Y)| > eps ): the probability that the privacy
    loss exceeds eps (the delta of a "delta-approximation", Ding 2022, Thm 3), by the same
    sinh-mapped trapezoid rule as :func:`renyi_divergence` (numeric oracle; the indicator makes
    it first order: absolute error about density x grid spacing, ~1e-5 with the default n)."""
    _check_pair(P, Q)
    eps = V.nonneg("eps", eps)
    y, w = _sinh_grid(P, Q, noise, n, reach)
    lp, lq = _log_density(P, noise, y), _log_density(Q, noise, y)
    return float(np.sum(np.where(np.abs(lp - lq) > eps, np.exp(lp) * w, 0.0)))


def framework_loss(framework: Any, loss: Callable[[DiscreteDist, DiscreteDist], float]) -> float:
    """max over priors and pairs (both orders) of loss(mu_i, mu_j)."""
    best = 0.0
    for _, _, P, Q in framework.pair_laws():
        best = max(best, loss(P, Q), loss(Q, P))
    return best

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "laplace_privacy_loss": (Ref("ding2022", "Lemma 1"),),
    "loss_tail_probability": (Ref("ding2022", "Thm 3"),),
}
