"""f-divergences and the closed-form divergences of the Laplace and Gaussian mechanisms.

f-divergence primitives and the closed-form divergences of the Laplace and Gaussian
mechanisms (Chaudhuri, Imola, Machanavajjhala 2019, §2.2, Thms 8, 9, 10, 11, 12).

Generators and conjugates (even extension |t|^alpha for the alpha-divergence, as in the
paper's Lemmas 2–4; the proof of Lemma 3 misprints the conjugate as C_alpha|u| - 1/(alpha^2 -
alpha), the correct one is C_alpha|u|^{alpha*} + 1/(alpha^2 - alpha)):

>>> from puffer.capacity import conjugate
>>> conjugate("kl", 1.0)
1.0
>>> round(conjugate("alpha", 1.0, alpha=2.0), 12)   # C_2 |u|^2 + 1/2 with C_2 = 1/2
1.0

Closed forms take the noise parameter and the sensitivity (scalar or vector) and return
upper-rounded values (a few ulps, or a cancellation margin where the formula cancels).
"""
from __future__ import annotations

import math
import sys
from types import ModuleType
from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError
from ..guarantees import round_up

__all__ = ["generator", "conjugate", "f_divergence", "alpha_div_to_renyi", "renyi_to_alpha_div",
           "laplace_kl", "laplace_lin_kl_value", "gaussian_kl", "laplace_renyi", "laplace_renyi_lower_bound",
           "gaussian_renyi", "sens_vector"]

def _core() -> ModuleType:   # puffer._core.capacity (its functions return floats / float64 arrays)
    from .._core import capacity
    return capacity


def _kind(kind: Any) -> int:
    """The C++ code of a divergence name (the enum ``_core.capacity.Divergence`` is the source)."""
    kinds = _core().Divergence.__members__
    if not isinstance(kind, str) or kind not in kinds:
        raise ParameterError("kind", kind, f"one of {sorted(kinds)}")
    return int(kinds[kind])


def _order(alpha: Any) -> float:
    a = V.real("alpha", alpha)
    if not (a > 1.0) or math.isinf(a):
        raise ParameterError("alpha", alpha, "a finite order > 1")
    return a


def generator(kind: str, t: float, alpha: float = 2.0) -> float:
    """f(t) of the divergence ``kind`` ∈ {"kl", "tv", "alpha"}."""
    return cast(float, _core().generator(_kind(kind), V.real("t", t), _order(alpha) if kind == "alpha" else 2.0))


def conjugate(kind: str, u: float, alpha: float = 2.0) -> float:
    """Fenchel conjugate f*(u): e^{u-1} (KL); u on |u| <= 1/2, else inf (TV);
    C_alpha |u|^{alpha*} + 1/(alpha^2 - alpha) (alpha-divergence, even extension)."""
    return cast(float, _core().conjugate(_kind(kind), V.real("u", u), _order(alpha) if kind == "alpha" else 2.0))


def f_divergence(p: Any, q: Any, kind: str = "kl", alpha: float = 2.0) -> float:
    """D_f(P, Q) = sum_i q_i f(p_i/q_i) for probability vectors (Chaudhuri et al. 2019, Def 2).

    >>> round(f_divergence([0.5, 0.5], [0.25, 0.75], "tv"), 12)
    0.25
    """
    P = V.float_array("p", p, ndim=1)
    Q = V.float_array("q", q, ndim=1)
    if P.shape != Q.shape:
        raise ParameterError("q", Q.shape, f"the shape of p {P.shape}")
    for name, x in (("p", P), ("q", Q)):
        if abs(float(x.sum()) - 1.0) > 1e-9:
            raise ParameterError(name, float(x.sum()), "a probability vector summing to 1")
    return round_up(_core().f_divergence_discrete(_kind(kind), P, Q, _order(alpha) if kind == "alpha" else 2.0), 8)


def alpha_div_to_renyi(d: float, alpha: float) -> float:
    """D_{R,alpha} = log(1 + alpha(alpha-1) D_alpha)/(alpha - 1) (Chaudhuri et al. 2019, eq. 3)."""
    return cast(float, _core().alpha_div_to_renyi(V.real("d", d), _order(alpha)))


def renyi_to_alpha_div(r: float, alpha: float) -> float:
    """Inverse of :func:`alpha_div_to_renyi`."""
    return cast(float, _core().renyi_to_alpha_div(V.real("r", r), _order(alpha)))


def sens_vector(sens: Any) -> np.ndarray:
    """Sensitivity as a 1-D float array (a scalar gives length 1); finite, not all zero is allowed."""
    v = np.atleast_1d(V.float_array("sens", sens, ndim=(0, 1)))
    return cast(np.ndarray, np.abs(v))


def laplace_kl(eps_noise: float, sens: float = 1.0) -> float:
    """Thm 8: KL(Lap(0, 1/eps), Lap(sens, 1/eps)) = x - 1 + e^{-x}, x = eps*sens."""
    x = V.positive("eps_noise", eps_noise) * abs(V.real("sens", sens))
    return round_up(_core().laplace_kl(x), 8)


def laplace_lin_kl_value(eps_noise: float, sens: float = 1.0) -> float:
    """Thm 9: KL^lin = sqrt(1+x^2) - 1 + log(2/(1+sqrt(1+x^2))), x = eps*sens (cancellation-free)."""
    x = V.positive("eps_noise", eps_noise) * abs(V.real("sens", sens))
    return round_up(_core().laplace_lin_kl(x), 8)


def gaussian_kl(sigma: float, sens: Any = 1.0) -> float:
    """Thm 12 at alpha -> 1 and Thm 10: ||v||_2^2/(2 sigma^2)."""
    v = sens_vector(sens) / V.positive("sigma", sigma)
    return round_up(0.5 * float(np.dot(v, v)), 4 + 2 * v.size)


def laplace_renyi(eps_noise: float, sens: Any, alpha: float) -> float:
    """Thm 11: (1/(alpha-1)) sum_i log F(eps v_i), F(x) = [alpha e^{(alpha-1)x} + (alpha-1)e^{-alpha x}]/(2alpha-1).

    >>> round(laplace_renyi(1.0, 1.0, 2.0), 6)
    0.619124
    """
    a = _order(alpha)
    v = sens_vector(sens) * V.positive("eps_noise", eps_noise)
    val = _core().laplace_renyi(a, v)
    # the numerator of F - 1 cancels to first order: absolute error <= ~8 eps (alpha + 1) x per coordinate
    margin = 16 * np.finfo(float).eps * (a + 1.0) * float(np.sum(np.maximum(v, 1.0) * (1 + a * v))) / (a - 1.0)
    return round_up(val * (1 + 1e-14) + margin, 4)


def laplace_renyi_lower_bound(eps_noise: float, sens: Any, alpha: float) -> float:
    """Cor 1, corrected: the Rényi divergence of Thm 11 is at least eps ||v||_1 - d log 2 / (alpha - 1).

    [!] Corrected form. The corollary prints the bound eps ||v||_1, which the exact divergence
    falls below (eps = 1, v = 1, alpha = 2: exact 0.619 < 1). Its proof bounds each coordinate's
    F(x) >= e^{(alpha-1)|x|} / 2 and drops the factor 1/2, i.e. a log 2 / (alpha - 1) per
    coordinate. A lower bound: rounded downward.

    >>> round(laplace_renyi_lower_bound(1.0, 1.0, 2.0), 6)     # 1 - log 2
    0.306853
    >>> laplace_renyi_lower_bound(1.0, 1.0, 2.0) <= laplace_renyi(1.0, 1.0, 2.0)
    True
    """
    a = _order(alpha)
    v = np.abs(sens_vector(sens)) * V.positive("eps_noise", eps_noise)
    total, penalty = math.fsum(v.tolist()), v.size * math.log(2.0) / (a - 1.0)
    # the sum and the quotient carry a few ulps of rounding each: step down past them
    return float(total - penalty - 8 * sys.float_info.epsilon * (total + penalty))


def gaussian_renyi(sigma: float, sens: Any, alpha: float) -> float:
    """Thm 12: alpha ||v||_2^2/(2 sigma^2)."""
    a = _order(alpha)
    v = sens_vector(sens) / V.positive("sigma", sigma)
    return round_up(0.5 * a * float(np.dot(v, v)), 6 + 2 * v.size)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "f_divergence": (Ref("chaudhuri2019", "Def 2"),),
    "laplace_kl": (Ref("chaudhuri2019", "Thm 8"),),
    "laplace_renyi": (Ref("chaudhuri2019", "Thm 11"),),
    "laplace_renyi_lower_bound": (Ref("chaudhuri2019", "Cor 1", "corrected: minus d log 2 / (alpha - 1)"),),
    "gaussian_kl": (Ref("chaudhuri2019", "Thm 12"),),
    "gaussian_renyi": (Ref("chaudhuri2019", "Thm 12"),),
}
