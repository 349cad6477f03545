"""The two integer noise laws of lattice releases, declared exactly (lattice units).

* **Rounded Laplace** (``family="laplace"``): ``Z = round(X)`` with ``X ~ Laplace(beta)``, i.e.
  ``P(|Z| >= n) = s^(2n-1)`` for ``n >= 1`` (sign uniform), ``s = exp(-1/(2 beta))``. Rounding to
  the nearest integer commutes with integer shifts, so the law of ``m + Z`` is the rounding of
  ``m + X``: by the data-processing inequality every divergence between two shifted copies
  (Rényi of every order, KL, hockey stick, the pure-eps ratio) is at most the continuous
  Laplace's at the same shift (the data-processing inequality of Rényi divergences, van Erven
  & Harremoës 2014; post-processing of RDP, Mironov 2017). A lattice release with
  ``beta >= b' / g`` therefore keeps the whole guarantee curve of continuous Laplace(b') noise.
  (The discrete Laplace ``P(z) ∝ exp(-|z|/tau)`` does not: at the same ratio its Rényi
  divergences are larger, e.g. 1.5711 against 1.4368 at alpha = 1.5, shift 2, tau = 1.)
* **Discrete Gaussian** (``family="gaussian"``): ``P(Z = z) ∝ w^(z^2)``, ``w = exp(-1/(2 sigma^2))``;
  for integer shifts ``m`` its Rényi divergence of every order is at most ``alpha m^2 / (2 sigma^2)``
  (Canonne, Kamath & Steinke 2020, Prop 5), the continuous Gaussian's curve.

The parameter ``s`` (or ``w``) is the 64-bit binary fraction ``S / 2^64``, the smallest one at
least ``exp(-1/(2 beta))`` (``exp(-1/(2 sigma^2))``) for the scale asked: a larger parameter is
a larger scale, so rounding ``S`` up is the safe side, and every threshold ``P(|Z| >= n)`` is a
dyadic number the sampler compares with exactly (``cpp/sampling/lattice.hpp``).

>>> from puffer.lattice import LatticeLaw
>>> law = LatticeLaw.for_scale("laplace", 2.0)
>>> law.scale >= 2.0 and law.scale - 2.0 < 1e-15
True
>>> law.tail(1) == 1 - law.pmf(0)        # exact rationals
True
"""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..refs import Ref

__all__ = ["LatticeLaw", "FAMILIES", "MAX_BETA", "MAX_SIGMA"]

REFERENCES = {
    "LatticeLaw": (Ref("canonne2020", "Prop 5"),),
}

#: family name -> (code of the core's law, the law's name)
FAMILIES = {"laplace": (0, "rounded Laplace"), "gaussian": (1, "discrete Gaussian")}
#: the largest scales (lattice units) the core's tables are built for (cpp/sampling/lattice.hpp)
MAX_BETA = 2.0**32
MAX_SIGMA = 2.0**16
_TWO64 = 1 << 64
_EPS = 2.0 ** -52


def _ctx() -> decimal.Context:
    # exp and ln of a Decimal are correctly rounded (round-half-even) at the context precision
    return decimal.Context(prec=80, rounding=decimal.ROUND_HALF_EVEN, Emin=-999999, Emax=999999)


def _param_for(x: Fraction) -> int:
    """The smallest integer S (give or take one: never smaller) with S / 2^64 >= exp(-x)."""
    c = _ctx()
    v = c.exp(c.minus(c.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))))
    # v is within 10^-79 relative of exp(-x) (irrational for x != 0), so 2^64 v is within 10^-59 of
    # 2^64 exp(-x); with the margin 10^-50, floor(2^64 v + margin) + 1 > 2^64 exp(-x)
    t = c.add(c.multiply(v, decimal.Decimal(_TWO64)), decimal.Decimal("1e-50"))
    S = int(t.to_integral_value(rounding=decimal.ROUND_FLOOR, context=c)) + 1
    return max(S, 1)


def _neg_log_param(S: int) -> decimal.Decimal:
    """-log(S / 2^64) as a Decimal (correctly rounded at 80 digits)."""
    c = _ctx()
    return c.minus(c.ln(c.divide(decimal.Decimal(S), decimal.Decimal(_TWO64))))


@dataclass(frozen=True)
class LatticeLaw:
    """An integer noise law (see the module docstring): ``family`` and its parameter ``S``
    (``s`` or ``w`` = ``S / 2^64``). Build one with :meth:`for_scale`."""

    family: str
    S: int

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise ParameterError("family", self.family, f"one of {sorted(FAMILIES)}")
        if isinstance(self.S, bool) or not isinstance(self.S, int):
            raise ParameterTypeError("S", self.S, "an integer in [1, 2^64)")
        if not 1 <= self.S < _TWO64:
            raise ParameterError("S", self.S, "an integer in [1, 2^64): the parameter S / 2^64 in (0, 1)")
        limit = MAX_BETA if self.family == "laplace" else MAX_SIGMA
        if self.scale > limit:
            raise ParameterError("scale", self.scale, f"a {self.family} scale of at most 2^{int(math.log2(limit))} "
                                 "lattice units (use a coarser granularity)")

    @classmethod
    def for_scale(cls, family: str, scale: Any) -> LatticeLaw:
        """The law of ``family`` with the smallest parameter whose scale (``beta`` for Laplace,
        ``sigma`` for the Gaussian, lattice units) is at least ``scale``."""
        if not isinstance(family, str) or family not in FAMILIES:
            raise ParameterError("family", family, f"one of {sorted(FAMILIES)}")
        sc = Fraction(scale) if isinstance(scale, Fraction) else Fraction(V.positive("scale", scale))
        if sc <= 0:
            raise ParameterError("scale", float(sc), "a number > 0")
        limit = MAX_BETA if family == "laplace" else MAX_SIGMA
        if sc > Fraction(limit):
            big = float(sc) if sc < Fraction(10) ** 300 else math.inf
            raise ParameterError("scale", big, f"a {family} scale of at most 2^{int(math.log2(limit))} lattice "
                                 "units (noise / granularity); use a coarser granularity")
        x = 1 / (2 * sc) if family == "laplace" else 1 / (2 * sc * sc)
        S = _param_for(x)
        if S >= _TWO64:
            raise ParameterError("scale", float(sc), "a scale whose parameter exp(-1/(2 scale)) is below 1 - 2^-64 "
                                 "(use a coarser granularity)")
        return cls(family, S)

    @property
    def code(self) -> int:
        """The core's family code (0 rounded Laplace, 1 discrete Gaussian)."""
        return FAMILIES[self.family][0]

    @property
    def name(self) -> str:
        return FAMILIES[self.family][1]

    @property
    def param(self) -> Fraction:
        """``s`` (Laplace) or ``w`` (Gaussian) = S / 2^64, exactly."""
        return Fraction(self.S, _TWO64)

    @property
    def scale(self) -> float:
        """``beta`` (Laplace) or ``sigma`` (Gaussian) in lattice units: -1/(2 log s), or
        sqrt(-1/(2 log w)) (nearest double)."""
        c = _ctx()
        v = c.divide(decimal.Decimal(1), c.multiply(decimal.Decimal(2), _neg_log_param(self.S)))
        return float(v) if self.family == "laplace" else float(c.sqrt(v))

    def tail(self, n: int) -> Fraction:
        """``P(|Z| >= n)``, exactly (Laplace: ``s^(2n-1)``; the Gaussian's is irrational: not
        offered, see :meth:`pmf`)."""
        n = V.integer("n", n, lo=0)
        if self.family != "laplace":
            raise ParameterError("family", self.family, "the rounded Laplace (the discrete Gaussian's tails are "
                                 "irrational; use pmf)")
        return Fraction(1) if n == 0 else self.param ** (2 * n - 1)

    def pmf(self, z: int) -> Any:
        """``P(Z = z)``: a Fraction for the rounded Laplace (``1 - s`` at 0, ``s^(2|z|-1) (1 - s^2) / 2``
        elsewhere); a float for the discrete Gaussian (``w^(z^2) / sum_y w^(y^2)``)."""
        z = V.integer("z", z)
        s = self.param
        if self.family == "laplace":
            return 1 - s if z == 0 else s ** (2 * abs(z) - 1) * (1 - s * s) / 2
        lw = -float(_neg_log_param(self.S))
        theta = 1.0 + 2.0 * math.fsum(math.exp(lw * y * y) for y in range(1, int(self.scale * 40) + 40))
        return math.exp(lw * z * z) / theta

    def renyi_bound(self, alpha: float, shift: float) -> float:
        """A certified upper bound of ``D_alpha(Z + shift || Z)`` for an integer ``shift``: the
        continuous Laplace(beta)'s (data processing) or ``alpha shift^2 / (2 sigma^2)`` (CKS20
        Prop 5), rounded upward. ``alpha`` > 1 (inf allowed for the Laplace)."""
        from ..guarantees import round_up

        a = V.alpha("alpha", alpha)
        m = abs(V.integer("shift", shift))
        if self.family == "laplace":
            from ..noise import Laplace

            return float(Laplace(self._scale_down()).renyi_shift(a, float(m)))
        if math.isinf(a):
            return 0.0 if m == 0 else math.inf
        sig = self._scale_down()
        return round_up(a * m * m / (2.0 * sig * sig), 4)

    def hockey_stick(self, eps: float, shift: int) -> float:
        """A certified upper bound on the hockey-stick divergence H_{e^eps}(Z + shift || Z) =
        sum_z (P(z - m) - e^eps P(z))_+ for an integer ``shift`` m, the exact (eps, delta) of the law
        at that shift. The rounded Laplace: the continuous Laplace(beta)'s (data processing). The
        discrete Gaussian: the pmf sums w^(z^2) over |z - m|, |z| <= K (w^(K^2) < e^-760) with every
        term's rounding bounded, the tails beyond by the geometric series w^((K+1)^2) / (1 - w^(2K+3))
        (the ratio of consecutive terms is w^(2y+1)), over a lower bound on the normaliser. Its
        hockey stick can be larger than the continuous Gaussian's at the same ratio shift / sigma
        (sigma = 1, m = 2, at the eps 13.5348 where the continuous delta is 1e-9: 2.27e-9), so the
        continuous profile is no (eps, delta) for a lattice release (issue 43).

        >>> law = LatticeLaw.for_scale("gaussian", 1.0)
        >>> 2.26e-9 < law.hockey_stick(13.53477221916637, 2) < 2.28e-9
        True
        """
        e = V.nonneg("eps", eps, allow_inf=True)
        m = abs(V.integer("shift", shift))
        if m == 0 or math.isinf(e):
            return 0.0
        if self.family == "laplace":
            from ..noise import Laplace
            from ..noise.profile import hockey_stick

            return float(hockey_stick(Laplace(self._scale_down()), e, float(m)))
        import numpy as np

        lw = -float(_neg_log_param(self.S))   # log w < 0, within 2 eps relative
        K = int(math.isqrt(int(760.0 / -lw) + 1)) + 2
        z = np.arange(-K, K + m + 1, dtype=np.float64)
        a = (z - m) * (z - m) * lw            # log of w^((z - m)^2)
        b = z * z * lw + e                    # log of e^eps w^(z^2)
        pos = a > b
        ea = np.exp(a[pos])
        terms = ea * -np.expm1(b[pos] - a[pos])
        # each exponent is off by at most 4 eps (|a| + |b| + 1): the term by that much of e^a
        err = float(np.sum(16.0 * _EPS * (1.0 + np.abs(a[pos]) + np.abs(b[pos])) * ea))
        y = np.arange(1, K + 1, dtype=np.float64)
        n_lo = (1.0 + 2.0 * float(np.sum(np.exp(y * y * lw)))) * (1.0 - 1e-11)
        tail = 2.0 * math.exp((K + 1) ** 2 * lw) / -math.expm1((2 * K + 3) * lw) * (1.0 + 1e-11)
        h = (float(np.sum(terms)) * (1.0 + 1e-11) + err + tail) / n_lo
        return min(1.0, h * (1.0 + 8.0 * _EPS))

    def eps_at(self, delta: float, shift: int) -> float:
        """The least eps (bisection, from above: never below) with :meth:`hockey_stick` <= ``delta``.

        >>> round(LatticeLaw.for_scale("gaussian", 1.0).eps_at(1e-9, 2), 4)   # continuous: 13.5348
        13.8218
        """
        d = V.delta_open("delta", delta)
        m = abs(V.integer("shift", shift))
        if self.hockey_stick(0.0, m) <= d:
            return 0.0
        lo, hi = 0.0, 1.0
        while self.hockey_stick(hi, m) > d:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                raise ParameterError("delta", d, f"a delta reachable by {self.name} noise at shift {m} with eps <= 1e6")
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi or hi - lo <= 1e-12 * hi:
                break
            if self.hockey_stick(mid, m) > d:
                lo = mid
            else:
                hi = mid
        return hi

    def _scale_down(self) -> float:
        """The scale rounded down to a double (a bound computed from it is on the safe side)."""
        v = self.scale
        return math.nextafter(v, 0.0)

    def describe(self) -> dict[str, Any]:
        """JSON-able: family, the law's name, S (hex) and the scale in lattice units."""
        return {"family": self.family, "law": self.name, "S": f"{self.S:#018x}", "scale": self.scale}

    def __repr__(self) -> str:
        return f"LatticeLaw({self.family!r}, S={self.S:#018x}, scale={self.scale!r})"
