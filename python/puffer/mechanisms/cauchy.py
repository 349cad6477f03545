"""The Cauchy mechanism: generalized-Cauchy noise calibrated to a W_m sensitivity.

The Cauchy mechanism of Pierquin, Bellet, Tommasi, Boussard 2024 (Cor 4.1, Lemma D.1): iid
generalized-Cauchy noise GenCauchy(gamma, k) on each of d coordinates, calibrated to the W_m
sensitivity Delta^(m) = max W_m(mu_i, mu_j) (l2), m = d k q (alpha - 1), at the orders
alpha = 1 + 2 n / (k q), n = 1, 2, ... (so that n = k q (alpha - 1)/2 is an integer):

    eps(alpha) = d log( c_k Qbar_n( 1 + Delta^(m)^2 / (2 d gamma^2) ) ) / (q (alpha - 1)),

with c_k = sqrt(pi) Gamma(k/2) / Gamma((k-1)/2) and Qbar_n the Legendre polynomial P_n with its
negative coefficients dropped.

[!] Corrected form. The paper prints the argument 1 + (Delta / (d lambda))^2 (a d^2 in the
denominator, lambda read as the scale, no factor 2). The proof (Lemma D.1 per coordinate,
concavity of log P_n on [1, inf), Jensen, the W_m-optimal coupling) supports
1 + Delta^2 / (2 d gamma^2) with gamma the scale. The printed argument is larger at d = 1 (a
conservative eps), equal at d = 2, and smaller for every d >= 3, where it under-reports eps: at
d = 3, alpha = k = 2, gamma = 1 and a shift v = (1, 1, 1) it gives 0.8630 while the exact divergence
is 3 log 1.5 = 1.2164. ``paper_variant=True`` reproduces the printed expression (for comparison
only; it is not a guarantee).
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

from .. import _validate as V
from ..errors import ParameterError
from ..framework import Framework, Sensitivity
from ..guarantees import RPP, round_up
from ._base import Mechanism

if TYPE_CHECKING:
    from ..guarantees import PP, Provenance
    from ..noise import IID, Cauchy, GenCauchy

__all__ = ["CauchyMechanism", "cauchy_epsilon", "legendre_nonneg", "cauchy_orders"]


@lru_cache(maxsize=256)
def legendre_nonneg(n: int) -> tuple[Fraction, ...]:
    """Exact power-basis coefficients (Fractions, constant term first) of Qbar_n: the Legendre
    polynomial P_n(x) = 2^-n sum_k (-1)^k C(n,k) C(2n-2k, n) x^(n-2k) with the negative terms dropped.

    >>> [str(c) for c in legendre_nonneg(4)]
    ['3/8', '0', '0', '0', '35/8']
    """
    n = V.integer("n", n, lo=0)
    c = [Fraction(0)] * (n + 1)
    for k in range(0, n // 2 + 1, 2):          # even k: the non-negative terms
        c[n - 2 * k] = Fraction(math.comb(n, k) * math.comb(2 * n - 2 * k, n), 2 ** n)
    return tuple(c)


def _c_k(k: float) -> float:
    """c_k = sqrt(pi) Gamma(k/2) / Gamma((k-1)/2), rounded up (exactly 1 for k = 2)."""
    if k == 2.0:
        return 1.0
    v = math.exp(0.5 * math.log(math.pi) + math.lgamma(k / 2.0) - math.lgamma((k - 1.0) / 2.0))
    return round_up(v * (1.0 + 1e-14), 2)


def cauchy_orders(k: float = 2.0, q: float = 1.0, count: int = 8) -> list[float]:
    """The first ``count`` orders alpha = 1 + 2 n / (k q) at which Cor 4.1 applies.

    >>> cauchy_orders(2, 1, 3)
    [2.0, 3.0, 4.0]
    """
    return [1.0 + 2.0 * n / (k * q) for n in range(1, count + 1)]


def _n_of(alpha: float, k: float, q: float) -> int:
    x = k * q * (alpha - 1.0) / 2.0
    n = round(x)
    if n < 1 or abs(x - n) > 1e-9 * max(1.0, x):
        raise ParameterError("alpha", alpha, f"an order with k q (alpha - 1)/2 a positive integer "
                                             f"(alpha in 1 + 2n/(k q) = {cauchy_orders(k, q, 3)}...)")
    return int(n)


def cauchy_epsilon(alpha: float, w_m: float, *, gamma: float, d: int = 1, k: float = 2.0, q: float = 1.0,
                   paper_variant: bool = False) -> float:
    """Cor 4.1's epsilon at order alpha for the W_m sensitivity ``w_m`` (m = d k q (alpha - 1)),
    corrected (see the module docstring), rounded up.

    >>> round(cauchy_epsilon(2.0, math.sqrt(3.0), gamma=1.0, d=3), 4)     # = 3 log 1.5
    1.2164
    >>> round(cauchy_epsilon(2.0, math.sqrt(3.0), gamma=1.0, d=3, paper_variant=True), 4)   # unsafe
    0.863
    """
    alpha = V.alpha("alpha", alpha, allow_inf=False)
    w = V.nonneg("w_m", w_m)
    g = V.positive("gamma", gamma)
    d = V.integer("d", d, lo=1)
    k = V.real("k", k, lo=2.0, expected="a tail exponent k >= 2")
    q = V.real("q", q, lo=1.0, expected="q >= 1")
    n = _n_of(alpha, k, q)
    if paper_variant:
        x = 1.0 + (w / (d * g)) ** 2
    else:
        x = 1.0 + w * w / (2.0 * d * g * g)
    x = round_up(x, 4)   # Qbar_n is increasing on [1, inf): rounding x up is the safe side
    coeffs = legendre_nonneg(n)
    # non-negative terms: float evaluation within (n + 2) ulps per term; margin below
    val = math.fsum(float(c) * x ** j for j, c in enumerate(coeffs) if c)
    logq = math.log(_c_k(k)) + math.log(val)
    eps = d * logq / (q * (alpha - 1.0))
    return round_up(eps + 1e-13 * (abs(eps) + d * (n + 2)), 4) if not paper_variant else eps


class CauchyMechanism(Mechanism):
    """Cor 4.1: f(X) + V with V iid GenCauchy(gamma, k) per coordinate (``Cauchy`` for k = 2),
    guaranteeing (alpha, eps)-RPP at an order alpha = 1 + 2n/(k q).

    The W_m sensitivity (m = d k q (alpha - 1), l2) comes from ``framework`` -- exact W_m for
    1-D queries, and for d > 1 the upper bound W_m <= W_inf (l2) -- or from ``sensitivity``.
    Give ``gamma`` (the guarantee is computed) or ``eps`` (the smallest gamma reaching it).

    >>> import puffer
    >>> m = CauchyMechanism(puffer.models.correlated_pair(), gamma=1.0, alpha=2.0)
    >>> round(m.guarantee.eps, 6)      # log(1 + W_2^2 / 2), W_2^2 = 1 + 3 rho, rho = 0.3
    0.667829

    Parameters
    ----------
    framework : Framework, optional
        The Pufferfish framework the W_m sensitivity is computed from (or give ``sensitivity``).
    gamma : float, optional
        The noise scale (the guarantee is computed); exactly one of ``gamma`` and ``eps``.
    alpha : float
        The Rényi order, one of 1 + 2n/(k q), n = 1, 2, ... (:func:`cauchy_orders`).
    eps : float, optional
        The target eps at order ``alpha``: the smallest gamma reaching it.
    k : float
        The tail exponent k >= 2 of GenCauchy (2: the Cauchy law).
    q : float
        The Hoelder exponent q >= 1 of Thm 4.5 / Cor 4.1.
    d : int, optional
        The query's dimension (checked against the framework; default 1 with ``sensitivity``).
    sensitivity : float, optional
        A W_m sensitivity computed elsewhere, instead of ``framework``.
    """
    guarantee: RPP   # narrows Mechanism.guarantee
    #: Cauchy(gamma) for k = 2, GenCauchy(gamma, k) otherwise; IID of it for a d-dimensional query
    noise: Cauchy | GenCauchy | IID

    theorem = "Pierquin, Bellet, Tommasi, Boussard 2024, Cor 4.1 (Cauchy mechanism), corrected d-dimensional form"

    def __init__(self, framework: Framework | None = None, gamma: float | None = None, *, alpha: float,
                 eps: float | None = None, k: float = 2.0, q: float = 1.0, d: int | None = None,
                 sensitivity: float | None = None):
        from ..noise import Cauchy, GenCauchy

        self.alpha = V.alpha("alpha", alpha, allow_inf=False)
        self.k = V.real("k", k, lo=2.0, expected="a tail exponent k >= 2")
        self.q = V.real("q", q, lo=1.0, expected="q >= 1")
        n = _n_of(self.alpha, self.k, self.q)
        if framework is None and sensitivity is None:
            raise ParameterError("sensitivity", None, "a framework or a W_m sensitivity")
        if framework is not None and sensitivity is not None:
            raise ParameterError("sensitivity", sensitivity, "None when a framework is given")
        if framework is not None:
            self.framework = self._check_framework(framework)
            dim = framework.dim
            if d is not None and V.integer("d", d, lo=1) != dim:
                raise ParameterError("d", d, f"the framework's query dimension {dim}")
            self.d = dim
            m = self.d * self.k * self.q * (self.alpha - 1.0)
            if dim == 1:
                s = framework.w_p(m)
            else:
                s = framework.w_inf(norm=2.0)   # W_m <= W_inf
            self.sensitivity = s
        else:
            self.framework = None
            self.d = 1 if d is None else V.integer("d", d, lo=1)
            m = self.d * self.k * self.q * (self.alpha - 1.0)
            self.sensitivity = Sensitivity(V.nonneg("sensitivity", sensitivity), "w_p", None, 2.0,
                                           params={"p": m, "supplied": True})
        if not math.isfinite(self.sensitivity.value):
            raise ParameterError("sensitivity", self.sensitivity.value, "a finite W_m sensitivity")
        self.m = m
        self._w = round_up(self.sensitivity.value, 2)
        if (gamma is None) == (eps is None):
            raise ParameterError("gamma", gamma, "exactly one of gamma (scale) or eps (target)")
        if eps is not None:
            gamma = self._calibrate(V.positive("eps", eps))
        g = V.positive("gamma", gamma)
        base = Cauchy(g) if self.k == 2.0 else GenCauchy(g, self.k)
        self.noise = base if self.d == 1 else base.iid(self.d)
        self.gamma = g
        self.n = n
        self.guarantee = RPP(self.alpha, self.epsilon(), self._prov())
        self.group = None

    def _prov(self) -> Provenance:
        from ..guarantees import Provenance
        from ._base import noise_description

        s = self.sensitivity
        return Provenance(mechanism="CauchyMechanism", theorem=self.theorem, sensitivity=s.value,
                          witness=s.to_dict()["witness"], noise=noise_description(self.noise),
                          framework=None if self.framework is None else self.framework.digest(),
                          notes=f"W_m sensitivity, m = {self.m!r}; argument 1 + W^2/(2 d gamma^2)")

    def epsilon(self) -> float:
        """The certified eps at the mechanism's order."""
        return cauchy_epsilon(self.alpha, self._w, gamma=self.gamma, d=self.d, k=self.k, q=self.q)

    def _calibrate(self, eps: float) -> float:
        def f(g: float) -> float:
            return cauchy_epsilon(self.alpha, self._w, gamma=g, d=self.d, k=self.k, q=self.q)

        floor = self.d * math.log(_c_k(self.k)) / (self.q * (self.alpha - 1.0))
        if eps <= floor:
            raise ParameterError("eps", eps, f"eps > d log(c_k)/(q (alpha - 1)) = {floor!r} (Lemma D.1's floor for k > 2)")
        if self._w == 0:
            raise ParameterError("eps", eps, "a positive sensitivity to calibrate against (zero needs no noise)")
        lo, hi = self._w * 1e-6, self._w
        while f(hi) > eps:
            lo, hi = hi, hi * 4.0
        while f(lo) <= eps:
            hi, lo = lo, lo / 4.0
        for _ in range(200):   # bisection on log gamma; hi always meets the target
            mid = math.sqrt(lo * hi)
            if f(mid) <= eps:
                hi = mid
            else:
                lo = mid
            if hi / lo - 1.0 < 1e-12:
                break
        return hi

    def to_pp(self, delta: float) -> PP:
        """(eps, ``delta``)-PP from the RPP guarantee at the mechanism's order (Prop 2.2)."""
        return self.guarantee.to_pp(delta)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "cauchy_epsilon": (Ref("pierquin2024", "Cor 4.1"), Ref("pierquin2024", "Lemma D.1"),),
    "CauchyMechanism": (Ref("pierquin2024", "Cor 4.1"),),
}
