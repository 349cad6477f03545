"""DP-type guarantees for a granularity notion: pure, approximate, zero-concentrated and Gaussian DP.

DP-type guarantees for a granularity notion (Guerra-Balboa et al. 2024): pure eps-DP
(Def. III.2), (eps, delta)-DP (Def. VI.1), rho-zCDP (Def. VI.10) and mu-GDP (Def. VI.18), each
for a granularity G (a neighbour relation) on a database class DD.

``granularity=None`` / ``domain=None`` mean "the accountant's target" (filled in when the
guarantee is composed). ``group(n)`` is the guarantee between databases at G-distance n
(Thms III.3, VI.3, VI.12, VI.20): eps n; (eps n, delta [n]_eps) with
[n]_eps = (e^{eps n} - 1)/(e^eps - 1); rho n^2; mu n. ``to_metric()`` gives the same as a
metric-privacy object whose ``bound(D, D2)`` evaluates it at d^G(D, D2).

Cross-notion reporting (standard results, applied to a final object only):
``ZCDP.to_approx(delta)`` eps = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016, Prop 1.3);
``GDP.delta_at(eps)`` delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) and
``GDP.to_approx(delta)`` its inverse (Dong et al. 2022, Cor 2.13); ``PureDP.to_zcdp()``
rho = eps^2/2 (Bun & Steinke 2016, Prop 1.4). Every reported parameter is rounded up.

>>> PureDP(1.0).group(3)
PureDP(eps=3.0)
>>> round(ApproxDP(1.0, 1e-5).group(2).delta, 15)   # delta (e + 1)
3.7182818285e-05
>>> ZCDP(0.5).group(2), GDP(0.5).group(3)
(ZCDP(rho=2.0), GDP(mu=1.5))
>>> ApproxDP(1.0, 1e-5).group(13)                   # delta [13]_1 > 1: vacuous
NO_GUARANTEE
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .. import _validate as V
from ..errors import NumericalError, ParameterError, ParameterTypeError
from ..refs import Ref
from ._base import Guarantee, _mul_up, register_guarantee, round_up
from .provenance import Provenance, as_provenance

if TYPE_CHECKING:
    from ..accounting.metric import MetricForm

__all__ = ["DPGuarantee", "PureDP", "ApproxDP", "ZCDP", "GDP", "RDP", "NoGuarantee", "NO_GUARANTEE",
           "group_factor"]



def group_factor(n: float, eps: float) -> float:
    """[n]_eps = (e^{eps n} - 1)/(e^eps - 1) = sum_{j<n} e^{j eps} (Sec. VI-A), via expm1 in the
    C++ core, rounded up; [n]_0 = n, [inf]_eps = inf.

    >>> round(group_factor(3, 0.5), 9)
    5.367003099
    """
    n = V.real("n", n, lo=0.0, allow_inf=True, expected="a distance >= 0 (inf allowed)")
    eps = V.nonneg("eps", eps)
    from .._core import accounting as _acc
    return float(_acc.group_factor(n, eps))


def _n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ParameterTypeError("n", n, "a group size: an integer >= 0") if not isinstance(n, numbers.Integral) \
            else ParameterError("n", n, "a group size: an integer >= 0")
    return int(n)


def _granularity(g: Any) -> Any:
    if g is None:
        return None
    from ..accounting.granularity import Granularity, granularity_from_dict
    if isinstance(g, (dict, str)):
        return granularity_from_dict(g)
    if not isinstance(g, Granularity):
        raise ParameterTypeError("granularity", g,
                                 "None or a puffer.accounting granularity (Unbounded(), Bounded(), ...)")
    return g


def _domain(d: Any) -> Any:
    if d is None:
        return None
    from ..accounting.databases import DatabaseClass, domain_from_dict
    if isinstance(d, dict):
        return domain_from_dict(d)
    if not isinstance(d, DatabaseClass):
        raise ParameterTypeError("domain", d, "None or a puffer.accounting database class")
    return d


class DPGuarantee(Guarantee):
    """Shared behaviour of the four DP-type guarantees."""

    notion: ClassVar[str] = ""
    _params: ClassVar[tuple[str, ...]] = ()
    if TYPE_CHECKING:  # fields of the concrete dataclasses, declared for type checkers
        granularity: Any
        domain: Any
        provenance: Provenance | None

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        def group(self, n: int) -> Any: ...

    def _common(self) -> None:
        object.__setattr__(self, "granularity", _granularity(self.granularity))
        object.__setattr__(self, "domain", _domain(self.domain))
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    @classmethod
    def _decode_field(cls, name: str, v: Any) -> Any:
        if name == "granularity":
            return _granularity(v)
        if name == "domain":
            return _domain(v)
        return super()._decode_field(name, v)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["granularity"] = None if self.granularity is None else self.granularity.to_dict()
        d["domain"] = None if self.domain is None else self.domain.to_dict()
        return d

    def with_target(self, granularity: Any, domain: Any) -> DPGuarantee:
        """A copy holding for ``granularity`` on ``domain``."""
        return type(self)(*[getattr(self, p) for p in self._params], granularity=granularity, domain=domain,
                          provenance=self.provenance)

    def _cite(self, ref: Ref, note: str = "") -> Provenance:
        p = self.provenance or Provenance(mechanism=type(self).__name__)
        return p.cite(ref, notes=note)

    def to_granularity(self, target: Any, domain: Any = None) -> DPGuarantee | NoGuarantee:
        """The guarantee for another granularity on the same class (Sec. III-A, Prop. A.3):
        k = dist_DD(self.granularity, target); pure k eps, approx (k eps, delta [k]_eps),
        zCDP k^2 rho, GDP k mu; NO_GUARANTEE if k = inf.

        >>> from puffer.accounting import Unbounded, Bounded
        >>> PureDP(0.5, granularity=Unbounded()).to_granularity(Bounded())
        PureDP(eps=1.0, granularity=Bounded(), domain=AllMultisets(X=None, max_size=None))
        """
        if self.granularity is None:
            raise ParameterError("granularity", None, "a guarantee that names its granularity")
        target = _granularity(target)
        if target is None:
            raise ParameterError("target", None, "a granularity")
        dom = _domain(domain) if domain is not None else self.domain
        if dom is None and self.granularity.applies_to in ("multiset", None) \
                and target.applies_to in ("multiset", None):
            from ..accounting.databases import AllMultisets
            dom = AllMultisets()  # the class on which dist_DD is taken (D_X)
        k = self.granularity.dist_to(target, dom)
        if math.isinf(k):
            return NO_GUARANTEE
        g = self.group(int(k)) if k == int(k) else None
        if g is None:
            raise NumericalError(f"non-integer granularity distance {k}")
        if isinstance(g, NoGuarantee):
            return g
        out: DPGuarantee = type(g)(*[getattr(g, p) for p in self._params], granularity=target,
                       domain=dom if dom is not None else target.default_domain(),
                       provenance=g._cite(Ref("guerrabalboa2024", "Prop A.3"), f"converted with dist = {k:g}"))
        return out

    def to_metric(self) -> MetricForm:
        """The equivalent metric form (Thms III.3 / VI.3 / VI.12 / VI.20)."""
        from ..accounting.metric import MetricForm
        return MetricForm(self)

    def __repr__(self) -> str:
        parts = [f"{p}={getattr(self, p)!r}" for p in self._params]
        if self.granularity is not None:
            parts.append(f"granularity={self.granularity!r}")
        if self.domain is not None:
            parts.append(f"domain={self.domain!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@register_guarantee
@dataclass(frozen=True, repr=False)
class PureDP(DPGuarantee):
    """G eps-DP (Def. III.2): P[M(D) in S] <= e^eps P[M(D') in S] for all G-neighbours."""

    notion: ClassVar[str] = "pure"
    _params: ClassVar[tuple[str, ...]] = ("eps",)
    eps: float
    granularity: Any = None
    domain: Any = None
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps))
        self._common()

    def group(self, n: int) -> PureDP:
        """eps n: the guarantee between databases at G-distance n (Thm III.3)."""
        n = _n(n)
        return PureDP(_mul_up(self.eps, n), self.granularity, self.domain, \
            self._cite(Ref("guerrabalboa2024", "Thm III.3")))

    def to_approx(self) -> ApproxDP:
        return ApproxDP(self.eps, 0.0, self.granularity, self.domain, self.provenance)

    def to_zcdp(self) -> ZCDP:
        """eps-DP => (eps^2/2)-zCDP (Bun & Steinke 2016, Prop 1.4), same granularity."""
        p = (self.provenance or Provenance(mechanism="PureDP")).cite(Ref("bun2016", "Prop 1.4"))
        from fractions import Fraction
        rho = self.eps * self.eps / 2.0
        while Fraction(rho) < Fraction(self.eps) ** 2 / 2:
            rho = math.nextafter(rho, math.inf)
        return ZCDP(rho, self.granularity, self.domain, p)


@register_guarantee
@dataclass(frozen=True, repr=False)
class ApproxDP(DPGuarantee):
    """G (eps, delta)-DP (Def. VI.1), delta in [0, 1)."""

    notion: ClassVar[str] = "approx"
    _params: ClassVar[tuple[str, ...]] = ("eps", "delta")
    eps: float
    delta: float
    granularity: Any = None
    domain: Any = None
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps))
        object.__setattr__(self, "delta", V.delta("delta", self.delta))
        self._common()

    def group_delta(self, n: int) -> float:
        """delta [n]_eps, rounded up (may exceed 1: then the group guarantee is vacuous)."""
        n = _n(n)
        if self.delta == 0.0:
            return 0.0
        return round_up(self.delta * group_factor(n, self.eps), 1)

    def group(self, n: int) -> ApproxDP | NoGuarantee:
        """(eps n, delta [n]_eps) (Thm VI.3); NO_GUARANTEE when delta [n]_eps >= 1."""
        d = self.group_delta(n)
        if d >= 1.0:
            return NO_GUARANTEE
        return ApproxDP(_mul_up(self.eps, _n(n)), d, self.granularity, self.domain, \
            self._cite(Ref("guerrabalboa2024", "Thm VI.3")))

    def to_approx(self) -> ApproxDP:
        return self


@register_guarantee
@dataclass(frozen=True, repr=False)
class ZCDP(DPGuarantee):
    """G rho-zCDP (Def. VI.10): D_alpha(M(D) || M(D')) <= rho alpha for G-neighbours, all alpha > 1."""

    notion: ClassVar[str] = "zcdp"
    _params: ClassVar[tuple[str, ...]] = ("rho",)
    rho: float
    granularity: Any = None
    domain: Any = None
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", V.nonneg("rho", self.rho))
        self._common()

    def group(self, n: int) -> ZCDP:
        """rho n^2 (Thm VI.12)."""
        n = _n(n)
        return ZCDP(_mul_up(self.rho, n * n), self.granularity, self.domain, \
            self._cite(Ref("guerrabalboa2024", "Thm VI.12")))

    def to_approx(self, delta: float) -> ApproxDP:
        """(rho + 2 sqrt(rho log(1/delta)), delta)-DP (Bun & Steinke 2016, Prop 1.3), rounded up.

        >>> round(ZCDP(0.5).to_approx(1e-5).eps, 6)
        5.298526
        """
        delta = V.delta_open("delta", delta)
        eps = round_up(self.rho + 2.0 * math.sqrt(self.rho * -math.log(delta)), 8)
        p = (self.provenance or Provenance(mechanism="ZCDP")).cite(Ref("bun2016", "Prop 1.3"))
        return ApproxDP(eps, delta, self.granularity, self.domain, p)


def _gdp_delta(mu: float, eps: float) -> float:
    """delta(eps) for mu-GDP, rounded up (Dong et al. 2022, Cor 2.13)."""
    from scipy.special import log_ndtr, ndtr
    if mu == 0.0:
        return 0.0
    a = float(ndtr(-eps / mu + mu / 2.0))
    b = math.exp(eps + float(log_ndtr(-eps / mu - mu / 2.0)))
    # ndtr/log_ndtr are accurate to a few ulps; the difference loses at most that relative to a + b.
    return min(1.0, max(0.0, a - b) + 64.0 * 2.0 ** -52 * (a + b) + 1e-300)


@register_guarantee
@dataclass(frozen=True, repr=False)
class GDP(DPGuarantee):
    """G mu-GDP (Def. VI.18): T(M(D), M(D')) >= G_mu for G-neighbours."""

    notion: ClassVar[str] = "gdp"
    _params: ClassVar[tuple[str, ...]] = ("mu",)
    mu: float
    granularity: Any = None
    domain: Any = None
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", V.nonneg("mu", self.mu))
        self._common()

    def group(self, n: int) -> GDP:
        """mu n (Thm VI.20)."""
        n = _n(n)
        return GDP(_mul_up(self.mu, n), self.granularity, self.domain, \
            self._cite(Ref("guerrabalboa2024", "Thm VI.20")))

    def delta_at(self, eps: float) -> float:
        """The delta of the (eps, delta(eps))-DP guarantee mu-GDP implies, rounded up.

        >>> round(GDP(1.0).delta_at(1.0), 6)
        0.126937
        """
        return _gdp_delta(self.mu, V.nonneg("eps", eps))

    def to_approx(self, delta: float) -> ApproxDP:
        """The least eps (bisection, returned from the safe side) with delta(eps) <= delta."""
        delta = V.delta_open("delta", delta)
        if self.mu == 0.0:
            return ApproxDP(0.0, delta, self.granularity, self.domain, self.provenance)
        lo, hi = 0.0, max(1.0, self.mu)
        while _gdp_delta(self.mu, hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                raise NumericalError(f"no eps <= 1e6 reaches delta = {delta} for mu = {self.mu}")
        if _gdp_delta(self.mu, lo) <= delta:
            hi = lo
        for _ in range(200):
            if hi - lo <= 1e-12 * max(1.0, hi):
                break
            mid = 0.5 * (lo + hi)
            if _gdp_delta(self.mu, mid) > delta:
                lo = mid
            else:
                hi = mid
        p = (self.provenance or Provenance(mechanism="GDP")).cite(Ref("dong2022", "Cor 2.13"))
        return ApproxDP(hi, delta, self.granularity, self.domain, p)


@register_guarantee
@dataclass(frozen=True, repr=False)
class RDP(DPGuarantee):
    """G Renyi DP curve: D_alpha(M(D) || M(D')) <= eps(alpha) for G-neighbours, at each listed
    order (Mironov 2017, Def 4; for a granularity G as in Guerra-Balboa et al. 2024). RDP has no
    linear group privacy, so ``group(n)`` exists for n <= 1 only. ``eps`` may be inf at an order.

    >>> RDP((2.0, 4.0), (0.1, 0.3)).to_approx(1e-5).eps > 0.3
    True
    """

    notion: ClassVar[str] = "rdp"
    _params: ClassVar[tuple[str, ...]] = ("alphas", "eps")
    alphas: tuple[float, ...]
    eps: tuple[float, ...]
    granularity: Any = None
    domain: Any = None
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        try:
            a, e = tuple(self.alphas), tuple(self.eps)
        except TypeError:
            raise ParameterTypeError("alphas", self.alphas, "sequences of orders and eps values") from None
        if not a or len(a) != len(e):
            raise ParameterError("eps", e, f"one eps per order ({len(a)} orders, at least one)")
        a = tuple(V.alpha(f"alphas[{i}]", x, allow_inf=False) for i, x in enumerate(a))
        e = tuple(V.nonneg(f"eps[{i}]", x, allow_inf=True) for i, x in enumerate(e))
        if any(y <= x for x, y in zip(a, a[1:])):
            raise ParameterError("alphas", a, "strictly increasing orders")
        object.__setattr__(self, "alphas", a)
        object.__setattr__(self, "eps", e)
        self._common()

    def at(self, alpha: float) -> float:
        if alpha not in self.alphas:
            raise ParameterError("alpha", alpha, f"one of the curve's orders {list(self.alphas)}")
        return self.eps[self.alphas.index(alpha)]

    def group(self, n: int) -> RDP:
        """n = 0: zero; n = 1: itself. Larger n has no linear form (not offered)."""
        n = _n(n)
        if n == 0:
            return RDP(self.alphas, tuple(0.0 for _ in self.alphas), self.granularity, self.domain, self.provenance)
        if n == 1:
            return self
        raise ParameterError("n", n, "0 or 1: Renyi DP does not scale linearly with the distance (no group form)")

    def to_approx(self, delta: float) -> ApproxDP:
        """min over orders of eps(alpha) + log(1/delta)/(alpha - 1) (Mironov 2017, Prop 3), rounded up."""
        delta = V.delta_open("delta", delta)
        best = min(round_up(e + -math.log(delta) / (a - 1.0), 6) for a, e in zip(self.alphas, self.eps))
        if math.isinf(best):
            raise ParameterError("self", self, "a curve finite at some order")
        p = (self.provenance or Provenance(mechanism="RDP")).cite(Ref("mironov2017", "Prop 3"))
        return ApproxDP(best, delta, self.granularity, self.domain, p)


@register_guarantee
@dataclass(frozen=True, repr=False)
class NoGuarantee(Guarantee):
    """No finite guarantee exists (e.g. bounded DP over a record partition in the local
    setting, Ex. II.9). Falsy; all instances compare equal; ``reason`` says why."""

    reason: str = field(default="", compare=False)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NO_GUARANTEE"


NO_GUARANTEE = NoGuarantee()
