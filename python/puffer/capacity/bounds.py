"""Closed-form (lin, Rényi) bounds for additive noise with independent symmetric coordinates.

Closed-form (lin, Rényi) bounds for additive noise with i.i.d. symmetric coordinates
(Chaudhuri, Imola, Machanavajjhala 2019, Thm 13, Cor 2, Table 1), standardized: ``v`` is the
sensitivity vector divided by the noise scale (Laplace: eps_noise * sens; Gaussian: sens/sigma).

* :func:`paper_bound` — Thm 13 / Cor 2 as printed:
  (1/(alpha-1)) log(1 + 2^{d(alpha-1)} K' ||v||_alpha^alpha), K' = 1 (Laplace) or
  (pi/2)^{(alpha-1)/2} (Gaussian). **Not an upper bound** for alpha > 2 at small shifts: the
  proof lower-bounds E_Q|aᵀx + b|^{alpha*} on one orthant (probability 2^-d) but drops the 2^-d
  on the b^{alpha*} term. Laplace alpha = 5, s = 0.5: exact 0.151937 > printed 0.101366.
* :func:`corrected_bound` — the proof with the slip repaired (the 2^-d kept on b^{alpha*}):
  d log 2 + (1/(alpha-1)) log(1 + ||v||_alpha^alpha / K^{alpha-1}), K = E|Y|^{alpha*}
  (``K="exact"``) or Cor 2's lower bound on it (``K="cor2"``: 1 for Laplace, sqrt(2/pi)
  for Gaussian), valid for every alpha > 1.
* :func:`sound_bound` — a bound proved from the ratio form of Lemma 3 (Jensen on the
  intercept, conditional symmetry on each slope): (alpha/(alpha-1)) log(1 + sum_i |v_i| /
  ||Y_i||_{alpha*}) for Laplace, and (alpha/(alpha-1)) log(1 + ||v||_2 / m_{alpha*}) for
  Gaussian (aᵀY ~ N(0, ||a||²)), m_r = ||N(0,1)||_{L^r}.

All values are rounded up.

>>> round(paper_bound("laplace", [0.5], 5.0), 6), round(sound_bound("laplace", [1.0], 2.0), 6)
(0.101366, 1.0696)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import gammaln

from ..errors import ParameterError
from ..guarantees import round_up

__all__ = ["paper_bound", "corrected_bound", "sound_bound", "best_sound_bound", "abs_moment"]


def _args(family: str, v: Any, alpha: float) -> tuple[np.ndarray, float]:
    if family not in ("laplace", "gaussian"):
        raise ParameterError("family", family, "'laplace' or 'gaussian'")
    a = float(alpha)
    if not (a > 1.0) or math.isinf(a):
        raise ParameterError("alpha", alpha, "a finite order > 1")
    vv = np.abs(np.atleast_1d(np.asarray(v, dtype=float)))
    if vv.ndim != 1 or not np.all(np.isfinite(vv)):
        raise ParameterError("v", v, "a finite standardized shift vector")
    return vv, a


def abs_moment(family: str, r: float) -> float:
    """E|Y|^r for standardized Y: Gamma(r+1) (Laplace), 2^{r/2}Gamma((r+1)/2)/sqrt(pi) (Gaussian)."""
    if family == "laplace":
        return math.exp(gammaln(r + 1.0))
    return math.exp(0.5 * r * math.log(2.0) + gammaln(0.5 * (r + 1.0)) - 0.5 * math.log(math.pi))


def _log_norm_alpha_pow(v: np.ndarray, a: float) -> float:
    """log ||v||_alpha^alpha (= -inf for v = 0)."""
    nz = v[v > 0]
    if nz.size == 0:
        return -math.inf
    lv = a * np.log(nz)
    m = float(lv.max())
    return m + math.log(float(np.exp(lv - m).sum()))


def _log1p_exp(x: float) -> float:
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def paper_bound(family: str, v: Any, alpha: float) -> float:
    """Thm 13 / Cor 2 as printed (unsound for alpha > 2 at small shifts; see the module doc)."""
    vv, a = _args(family, v, alpha)
    d = vv.size
    lk = d * (a - 1.0) * math.log(2.0)
    if family == "gaussian":
        lk += 0.5 * (a - 1.0) * math.log(math.pi / 2.0)
    return round_up(_log1p_exp(lk + _log_norm_alpha_pow(vv, a)) / (a - 1.0), 8)


def corrected_bound(family: str, v: Any, alpha: float, K: str = "exact") -> float:
    """Thm 13 with the proof slip repaired: d log 2 + log(1 + ||v||_alpha^alpha / K^{alpha-1})/(alpha-1)."""
    vv, a = _args(family, v, alpha)
    r = a / (a - 1.0)
    if K == "exact":
        logK = math.log(abs_moment(family, r))
    elif K == "cor2":
        logK = 0.0 if family == "laplace" else 0.5 * math.log(2.0 / math.pi)  # min_{1<=g<=2} E|Z|^g
    else:
        raise ParameterError("K", K, "'exact' or 'cor2'")
    val = vv.size * math.log(2.0) + _log1p_exp(_log_norm_alpha_pow(vv, a) - (a - 1.0) * logK) / (a - 1.0)
    return round_up(val * (1 + 1e-14), 8)


def sound_bound(family: str, v: Any, alpha: float) -> float:
    """(alpha/(alpha-1)) log(1 + shift/||Y||_{alpha*}), shift = ||v||_1 (Laplace) or ||v||_2 (Gaussian)."""
    vv, a = _args(family, v, alpha)
    r = a / (a - 1.0)
    norm_r = abs_moment(family, r) ** (1.0 / r)
    shift = float(vv.sum()) if family == "laplace" else float(np.sqrt(np.dot(vv, vv)))
    return round_up(r * math.log1p(shift / norm_r) * (1 + 1e-14), 8)


def best_sound_bound(family: str, v: Any, alpha: float) -> tuple[float, str]:
    """min(sound_bound, corrected_bound(K="exact")) and which one attained it."""
    b1 = sound_bound(family, v, alpha)
    b2 = corrected_bound(family, v, alpha, "exact")
    return (b1, "ratio-form bound") if b1 <= b2 else (b2, "corrected Thm 13")

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "paper_bound": (Ref("chaudhuri2019", "Thm 13"), Ref("chaudhuri2019", "Cor 2"),),
    "corrected_bound": (Ref("chaudhuri2019", "Thm 13"),),
    "sound_bound": (Ref("chaudhuri2019", "Lemma 3"),),
}
