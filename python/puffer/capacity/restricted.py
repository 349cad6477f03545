"""Restricted divergences: how far two noise laws are apart for a bounded class of adversaries.

Restricted divergences D^H (Chaudhuri, Imola, Machanavajjhala 2019, eq. 2, eq. 3, Lemmas 1
and 3) between two laws of the same location-scale noise family.

* :func:`restricted_kl` — Lemma 1 (the Cramér form sup_a aᵀE_P x - log E_Q e^{aᵀx}) in closed
  form: Thm 9 (Laplace, lin), Thm 10 (Gaussian, lin, also unequal variances); poly_k for
  equal-variance Gaussians equals the KL (the log-likelihood ratio is linear).
* :func:`restricted_renyi` — H = lin or poly_k by the certified solver of the compiled core:
  a primal BFGS solve of the min-norm form (any feasible adversary is a lower bound) and a
  Hölder-dual certificate (a representer g with E_Q[g x^j] = E_P[x^j] gives the upper bound
  ||g||_{L^alpha(Q)}); the reported ``value`` is the certified upper end. alpha = 2 also has
  the Gram closed form log(mᵀG⁻¹m) (``method="gram"``). d-dimensional Gaussians with lin
  reduce to one dimension (the optimal slope is parallel to the shift).

P and Q are :class:`Laplace` or :class:`Gaussian` laws with the same scale; only the
standardized shift s = (loc_P - loc_Q)/scale matters (both classes are invariant under affine
reparametrisation of the output).

>>> from puffer import capacity as C
>>> r = C.restricted_renyi(C.Laplace(0.5, 1.0), C.Laplace(0.0, 1.0), C.Lin(), 5.0)
>>> round(r.value, 6), r.lower <= r.value <= r.unrestricted
(0.151937, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import NumericalError, ParameterError, ParameterTypeError
from ..guarantees import round_up
from . import divergences as Dv
from .classes import All, Lin, Poly, function_class

__all__ = ["Laplace", "Gaussian", "RestrictedDivergence", "restricted_kl", "restricted_renyi",
           "standardized_renyi"]



def _noise_code(family: str) -> int:
    """The C++ code of a noise name (the enum ``_core.capacity.Noise`` is the source)."""
    from .._core import capacity as core
    return int(core.Noise.__members__[family])


@dataclass(frozen=True)
class Laplace:
    """Laplace law with location ``loc`` (scalar or vector, i.i.d. coordinates) and scale b."""

    loc: Any = 0.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "loc", np.atleast_1d(V.float_array("loc", self.loc, ndim=(0, 1))).copy())
        object.__setattr__(self, "scale", V.positive("scale", self.scale))

    family = "laplace"


@dataclass(frozen=True)
class Gaussian:
    """Gaussian law N(loc, sigma² I) (loc scalar or vector)."""

    loc: Any = 0.0
    sigma: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "loc", np.atleast_1d(V.float_array("loc", self.loc, ndim=(0, 1))).copy())
        object.__setattr__(self, "sigma", V.positive("sigma", self.sigma))

    family = "gaussian"

    @property
    def scale(self) -> float:
        return self.sigma


@dataclass(frozen=True)
class RestrictedDivergence:
    """A certified restricted divergence.

    value: the certified upper end (report this); lower: a certified lower end (a feasible
    adversary); h_coef: the optimal adversary h*(z) = sum_j h_coef[j] z^j in the standardized
    output z = (x - loc_Q)/scale (normalised to E_P h* = 1; for d-dim Gaussians z is the
    projection on the shift direction); unrestricted: the closed-form D without restriction;
    sandwich: 0 <= lower <= value <= unrestricted checked; quad_err: the largest relative
    quadrature error bound used; converged / iterations: the optimiser's status.
    """

    value: float
    lower: float
    H: str
    divergence: str
    alpha: float | None
    unrestricted: float
    h_coef: tuple[float, ...] = ()
    quad_err: float = 0.0
    converged: bool = True
    iterations: int = 0
    method: str = "closed_form"
    sandwich: bool = field(default=True)

    def __repr__(self) -> str:
        a = "" if self.alpha is None else f", alpha={self.alpha:g}"
        return (f"RestrictedDivergence({self.H}, {self.divergence}{a}: value={self.value:.10g}, "
                f"lower={self.lower:.10g}, method={self.method!r})")


def _pair(P: Any, Q: Any) -> tuple[str, np.ndarray]:
    """(family, standardized shift vector loc_P - loc_Q over scale)."""
    for name, X in (("P", P), ("Q", Q)):
        if not isinstance(X, (Laplace, Gaussian)):
            raise ParameterTypeError(name, X, "a puffer.capacity.Laplace or puffer.capacity.Gaussian law")
    if type(P) is not type(Q):
        raise ParameterError("Q", Q, f"a law of the same family as P ({P.family})")
    if P.scale != Q.scale:
        raise ParameterError("Q", Q, f"the same scale as P ({P.scale}); restricted Rényi is computed "
                             "for shifted copies of one noise law")
    if P.loc.shape != Q.loc.shape:
        raise ParameterError("Q", Q, f"a location of the same dimension as P ({P.loc.size})")
    return P.family, (P.loc - Q.loc) / P.scale


def standardized_renyi(family: str, s: float, alpha: float, k: int = 1, *, coef_init: Any = None,
                       gap_tol: float = 1e-10) -> dict[str, Any]:
    """The core solver: certified D^{poly_k}_{R,alpha}(Y + s || Y) for standardized Y (dict)."""
    if family not in ("laplace", "gaussian"):
        raise ParameterError("family", family, "'laplace' or 'gaussian'")
    from .._core import capacity as core
    return core.restricted_renyi_poly(_noise_code(family), float(s), float(alpha), int(k),
                                      None if coef_init is None else list(coef_init), gap_tol)


def _unrestricted(family: str, v: np.ndarray, alpha: float) -> float:
    if family == "laplace":
        return Dv.laplace_renyi(1.0, v, alpha)
    return Dv.gaussian_renyi(1.0, v, alpha)


def restricted_renyi(P: Any, Q: Any, H: Any, alpha: float, method: str = "exact") -> RestrictedDivergence:
    """D^H_{R,alpha}(P, Q) for H = Lin(), Poly(k) or All(); alpha > 1 (alpha = 1: use restricted_kl).

    method: "exact" (certified solver) or "gram" (alpha = 2 closed form log(mᵀG⁻¹m), 1-D).
    """
    Hc = function_class(H)
    a = V.real("alpha", alpha)
    if not a > 1.0:
        raise ParameterError("alpha", alpha, "an order > 1 (alpha = 1 is the KL: use restricted_kl)")
    if math.isinf(a):
        raise ParameterError("alpha", alpha, "a finite order (the alpha = inf limit is not computed)")
    if method not in ("exact", "gram"):
        raise ParameterError("method", method, "'exact' or 'gram'")
    family, v = _pair(P, Q)
    unres = _unrestricted(family, v, a)
    if isinstance(Hc, All):
        return RestrictedDivergence(unres, unres, "all", "renyi", a, unres, method="closed_form")
    k = Hc.degree
    assert k is not None
    if v.size > 1:
        if family == "gaussian" and k == 1:
            s = float(np.linalg.norm(v))  # optimal slope is parallel to v (Chaudhuri et al. §5 / Thm 12 reduction)
        else:
            raise ParameterError("P", P, "a 1-D law for this class (d-dim exact values exist only for Gaussian "
                                 "noise with Lin(); for Laplace use the sound bounds of laplace_lin_renyi)")
    else:
        s = float(abs(v[0]))
    if method == "gram":
        if a != 2.0:
            raise ParameterError("method", method, "'exact' (the Gram closed form needs alpha = 2)")
        from .._core import capacity as core
        val = core.gram_renyi2(_noise_code(family), s, int(k))
        _, gram = core.poly_moments(_noise_code(family), 0.0, int(k))
        G = np.asarray(gram).reshape(int(k) + 1, int(k) + 1)
        # m^T G^{-1} m by Cholesky: relative error <~ cond(G) eps (times a small constant); D = log of it
        margin = 64.0 * float(np.linalg.cond(G)) * np.finfo(float).eps + 1e-15
        hi = min(round_up(val + margin, 4), unres)
        return RestrictedDivergence(hi, max(0.0, val - margin), str(Hc), "renyi", a, unres, method="gram")
    r = standardized_renyi(family, s, a, int(k))
    lo, hi = float(r["d_lo"]), float(r["d_hi"])
    sandwich = 0.0 <= lo <= hi <= unres
    if not sandwich:
        raise NumericalError(f"restricted Rényi sandwich 0 <= {lo} <= {hi} <= {unres} violated "
                             f"({family}, s={s}, alpha={a}, k={k})")
    coef = tuple(float(c) for c in r["coef"])
    if v.size == 1 and v[0] < 0:  # reflected: h(z) -> h(-z)
        coef = tuple(c * (-1) ** j for j, c in enumerate(coef))
    return RestrictedDivergence(hi, lo, str(Hc), "renyi", a, unres, coef, float(r["quad_err"]),
                                bool(r["converged"]), int(r["iterations"]), method="exact", sandwich=sandwich)


def restricted_kl(P: Any, Q: Any, H: Any) -> RestrictedDivergence:
    """KL^H(P, Q) (Lemma 1): Lin() for Laplace (Thm 9) and Gaussian (Thm 10), All(), and Poly(k)
    for Gaussians of equal variance (= the KL, since log(p/q) is linear).

    >>> from puffer import capacity as C
    >>> round(C.restricted_kl(C.Laplace(0.0, 1.0), C.Laplace(1.0, 1.0), C.Lin()).value, 12)
    0.225987155913
    """
    Hc = function_class(H)
    for name, X in (("P", P), ("Q", Q)):
        if not isinstance(X, (Laplace, Gaussian)):
            raise ParameterTypeError(name, X, "a puffer.capacity.Laplace or puffer.capacity.Gaussian law")
    if type(P) is not type(Q):
        raise ParameterError("Q", Q, f"a law of the same family as P ({P.family})")
    if P.loc.shape != Q.loc.shape:
        raise ParameterError("Q", Q, f"a location of the same dimension as P ({P.loc.size})")
    if isinstance(P, Gaussian):
        diff = (P.loc - Q.loc) / Q.sigma
        # Thm 10: KL^lin(N(m1, s1^2), N(m2, s2^2)) = (m1 - m2)^2/(2 s2^2); the full KL adds the variance term
        lin = round_up(0.5 * float(np.dot(diff, diff)), 8)
        rho = P.sigma / Q.sigma
        full = round_up(lin + P.loc.size * 0.5 * (rho * rho - 1.0 - 2.0 * math.log(rho)), 8)
        if isinstance(Hc, All):
            return RestrictedDivergence(full, full, "all", "kl", None, full)
        if isinstance(Hc, Lin) or (isinstance(Hc, Poly) and P.sigma == Q.sigma):
            return RestrictedDivergence(lin, lin, str(Hc), "kl", None, full,
                                        (0.0, float(diff[0])) if diff.size == 1 else ())
        raise ParameterError("H", str(Hc), "Lin() or All() for Gaussians of unequal variance")
    if P.scale != Q.scale:
        raise ParameterError("Q", Q, f"the same scale as P ({P.scale})")
    v = np.abs(P.loc - Q.loc) / P.scale
    full = round_up(sum(Dv.laplace_kl(1.0, float(x)) for x in v), 8)
    if isinstance(Hc, All):
        return RestrictedDivergence(full, full, "all", "kl", None, full)
    if isinstance(Hc, Lin) and (Hc.d is None or Hc.d == v.size):
        # lin on R^d is the direct sum of 1-D lin classes and the coordinates are independent:
        # the Cramér transform separates, KL^lin = sum_i of Thm 9
        val = round_up(sum(Dv.laplace_lin_kl_value(1.0, float(x)) for x in v), 8)
        return RestrictedDivergence(val, val, str(Hc), "kl", None, full)
    raise ParameterError("H", str(Hc), "Lin() or All() for Laplace noise (KL^{poly_k} of Laplace noise has "
                         "no closed form; the KL of Thm 8 bounds it)")

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "restricted_kl": (Ref("chaudhuri2019", "Lemma 1"), Ref("chaudhuri2019", "Thm 9"), Ref("chaudhuri2019", "Thm 10"),),
    "restricted_renyi": (Ref("chaudhuri2019", "Lemma 3"),),
}
