"""Figures 5 and 6 of Rényi Pufferfish privacy (amplification by iteration), recomputed.

Figures 5 and 6 of Pierquin, Bellet, Tommasi, Boussard 2024 (App. F.5.4) by code.

Setting: noisy SGD, secret X_1 = a vs b, Gaussian prior with Cov(X_t) = I and
Cov(X_1, X_t) = rho_t I (rho_1 = 1), so (Prop 6.4) W_inf(X_t, X'_t) = |rho_t| ||a - b|| and the
per-step shift is s_t = eta min(2 L, C |rho_t| ||a - b||). With L = sigma = eta = C = ||a - b|| = 1
and alpha = 2 the plotted bounds are

    formula (1)  (Prop F.2, uniform allocation):  (sum_t min(2, |rho_t|))^2 / T,
    formula (2)  (§6.4, a_t = s_t):                sum_t min(2, |rho_t|)^2,

here computed by the Thm 5.2 accountant (:class:`~.pabi.PABI` with ``allocation="uniform"`` and
``"paper"``), plus the optimal allocation (never above either).

Figure 5: constant rho_t = rho for t >= 2, rho in {0 (DP), 0.1, 0.2, 0.8, 1 (group DP)}.
Figure 6: rho_t in {0 (DP), 0.1, 1/t, 1/t^2}.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import _validate as V
from .pabi import PABI

__all__ = ["correlations", "FIGURE5", "FIGURE6", "privacy_loss", "figure_series"]

FIGURE5 = ("0", "0.1", "0.2", "0.8", "1")
FIGURE6 = ("0", "0.1", "1/t", "1/t^2")


def correlations(name: str, T: int) -> np.ndarray:
    """rho_1..rho_T for a named profile: a constant ("0.1"), "1/t" or "1/t^2"; rho_1 = 1 always."""
    T = V.integer("T", T, lo=1)
    t = np.arange(1, T + 1, dtype=np.float64)
    if name == "1/t":
        rho = 1.0 / t
    elif name == "1/t^2":
        rho = 1.0 / (t * t)
    else:
        try:
            c = float(name)
        except ValueError:
            from ..errors import ParameterError
            raise ParameterError("name", name, "a constant correlation, '1/t' or '1/t^2'") from None
        rho = np.full(T, c)
    rho[0] = 1.0
    return rho


def privacy_loss(rho: np.ndarray, allocation: str = "uniform", *, alpha: float = 2.0, eta: float = 1.0,
                 sigma: float = 1.0, L: float = 1.0, C: float = 1.0, dist: float = 1.0) -> float:
    """The Thm 5.2 bound for the correlation profile ``rho`` (one value of T = len(rho))."""
    from ..noise import Gaussian

    s = eta * np.minimum(2.0 * L, C * np.abs(np.asarray(rho, dtype=np.float64)) * dist)
    return PABI(s, Gaussian(sigma), allocation).epsilon(alpha)


def figure_series(name: str, T_max: int = 1000, allocation: str = "uniform",
                  progress: Callable[[int], None] | None = None) -> np.ndarray:
    """The bound for T = 1..T_max (the curve of one profile in Figure 5 or 6)."""
    T_max = V.integer("T_max", T_max, lo=1)
    rho = correlations(name, T_max)
    out = np.empty(T_max)
    for T in range(1, T_max + 1):
        out[T - 1] = privacy_loss(rho[:T], allocation)
        if progress is not None:
            progress(T)
    return out

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "figure_series": (Ref("pierquin2024", "Figure 5"), Ref("pierquin2024", "Figure 6"),),
    "privacy_loss": (Ref("pierquin2024", "Prop F.2"),),
}
