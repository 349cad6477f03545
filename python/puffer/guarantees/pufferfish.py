"""Pufferfish guarantees (PP, RPP, approximate RPP, RPP curves) and the conversions between them.

Pufferfish guarantees (Pierquin et al. 2024, Defs 2.1, 2.2 and 4.1) and the conversions
between them.

All objects are frozen, hashable, comparable with ``==`` and JSON-serialisable through
``to_dict`` / ``from_dict`` (strict: see :mod:`puffer.guarantees._base`). Each carries a :class:`Provenance` saying which mechanism and
theorem produced it, the sensitivity and where it was attained, the noise, and a digest of
the framework. Provenance does not take part in ``==``.

Conversions (all rounded upward, so a reported epsilon is never below the true bound):

* ``RPP.to_pp(delta)``: the least of the cited conversions of :mod:`.conversions` (Prop 2.2,
  (alpha, eps)-RPP => (eps + log(1/delta)/(alpha-1), delta)-PP; Canonne, Kamath & Steinke 2020,
  Prop 12; the optimal single-order conversion of Asoodeh et al. 2021); ``method=`` picks one.
* ``RPPCurve.to_pp(delta)``: the same minimised over the listed orders and, when the curve
  was built from a function (``RPPCurve.from_function``), refined continuously between grid
  points (any alpha > 1 gives a valid bound, so the optimiser's accuracy never affects
  soundness, only tightness); alpha = inf is pure eps, so the result is never above it.
* ``ApproxRPP.to_pp(delta)``: Prop 4.1, (alpha, eps, d)-approximate RPP =>
  (eps + log(1/d)/(alpha-1), 2d)-PP. ``delta`` is the PP delta wanted, >= 2 * self.delta; the
  approximate-RPP delta used is delta/2 (an (alpha, eps, d)-approximate RPP mechanism is also
  (alpha, eps, d')-approximate RPP for every d' >= d, events with P >= 1 - d having P >= 1 - d').

``PP`` places delta on point probabilities as in the proofs of Pierquin et al. (their printed
set-based definition and the proofs differ for delta > 0); for delta = 0 the two coincide.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as V
from .._golden import golden_min
from ..errors import ParameterError
from ..refs import Ref
from ._base import Guarantee, register_guarantee, round_up
from .provenance import Provenance, as_provenance

__all__ = ["PP", "RPP", "RPPCurve", "ApproxRPP", "default_orders"]



def default_orders() -> np.ndarray:
    """The 156 Renyi orders of Google's dp_accounting: 1 + x/10 for x = 1..99, the integers
    11..63, and 128, 256, 512, 1024."""
    grid = [1.0 + x / 10.0 for x in range(1, 100)] + [float(k) for k in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
    return np.array(grid, dtype=np.float64)


def _log_term(alpha: float, delta: float) -> float:
    """log(1/delta)/(alpha - 1), the Prop 2.2 penalty; 0 for alpha = inf."""
    if math.isinf(alpha):
        return 0.0
    return -math.log(delta) / (alpha - 1.0)


def _cited(p: Provenance | None, *refs: Ref, notes: str = "") -> Provenance:
    return (p or Provenance()).cite(*refs, notes=notes)


@register_guarantee
@dataclass(frozen=True, repr=False)
class PP(Guarantee):
    """(eps, delta)-Pufferfish privacy (Pierquin et al. 2024, Def 2.1). delta = 0 is pure eps-PP.

    >>> PP(1.0, 1e-6)
    PP(eps=1.0, delta=1e-06)
    """

    eps: float
    delta: float = 0.0
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps, allow_inf=True))
        object.__setattr__(self, "delta", V.delta("delta", self.delta))
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    def implies(self, other: PP) -> bool:
        """True if this guarantee is at least as strong as ``other``."""
        return self.eps <= other.eps and self.delta <= other.delta




@register_guarantee
@dataclass(frozen=True, repr=False)
class RPP(Guarantee):
    """(alpha, eps)-Renyi Pufferfish privacy (Pierquin et al. 2024, Def 2.2); alpha = inf is eps-PP.

    >>> round(RPP(2.0, 0.5).to_pp(1e-5, method="prop2.2").eps, 9)  # 0.5 + log(1e5)/(2 - 1), rounded up
    12.012925465
    >>> round(RPP(2.0, 0.5).to_pp(1e-5).eps, 3)  # the least cited conversion (here the optimal one)
    9.694
    """

    alpha: float
    eps: float
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", V.alpha("alpha", self.alpha))
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps, allow_inf=True))
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    def to_pp(self, delta: float, *, method: str = "best") -> PP:
        """(eps', delta)-PP by the conversion ``method`` (see :mod:`puffer.guarantees.conversions`):
        ``"best"`` (default: the least of the others), ``"optimal"`` (Asoodeh et al. 2021, certified),
        ``"cks"`` (Canonne, Kamath & Steinke 2020, Prop 12) or ``"prop2.2"`` (Prop 2.2:
        eps + log(1/delta)/(alpha - 1)); delta in (0, 1). For alpha = inf, delta = 0 is allowed and the
        result is eps-PP."""
        from .conversions import check_method, cite, single

        method = check_method(method)
        if math.isinf(self.alpha):
            delta = V.delta("delta", delta)
            return PP(self.eps, delta, self.provenance)
        delta = V.delta_open("delta", delta)
        eps, used = single(self.alpha, self.eps, delta, method)
        return PP(eps, delta, _cited(self.provenance, cite(used)))




@register_guarantee
@dataclass(frozen=True, repr=False)
class ApproxRPP(Guarantee):
    """(alpha, eps, delta)-approximate RPP (Pierquin et al. 2024, Def 4.1)."""

    alpha: float
    eps: float
    delta: float
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", V.alpha("alpha", self.alpha))
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps, allow_inf=True))
        object.__setattr__(self, "delta", V.delta("delta", self.delta))
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    def to_pp(self, delta: float | None = None) -> PP:
        """Prop 4.1 (the 2-delta rule): => (eps + log(2/delta)/(alpha - 1), delta)-PP, where
        ``delta`` (default ``2 * self.delta``) is the PP delta wanted and must be >= 2 * self.delta.
        For alpha = inf (Prop C.1) the result is (eps, self.delta)-PP."""
        if math.isinf(self.alpha):
            if delta is None:
                delta = self.delta
            delta = V.delta("delta", delta)
            if delta < self.delta:
                raise ParameterError("delta", delta, f"a PP delta >= {self.delta} (Prop C.1)")
            return PP(self.eps, delta, _cited(self.provenance, Ref("pierquin2024", "Prop C.1")))
        if delta is None:
            delta = 2.0 * self.delta
        delta = V.delta_open("delta", delta)
        if delta < 2.0 * self.delta:
            raise ParameterError("delta", delta,
                                 f"a PP delta >= 2 * self.delta = {2.0 * self.delta} (Prop 4.1)")
        # log(1/(delta/2)) computed as log(2) - log(delta): both terms rounded, covered by round_up.
        eps = self.eps + (math.log(2.0) - math.log(delta)) / (self.alpha - 1.0)
        return PP(round_up(eps, 6), delta, _cited(self.provenance, Ref("pierquin2024", "Prop 4.1")))




@register_guarantee
@dataclass(frozen=True, eq=False, repr=False)
class RPPCurve(Guarantee):
    """(alpha, eps(alpha))-RPP at every listed order (a Rényi curve, as RDP accountants keep).

    ``alphas`` strictly increasing, each > 1 (inf allowed as the last); ``eps`` >= 0, same length
    (inf allowed: no guarantee at that order). Build from a certified function with
    :meth:`from_function` to let ``to_pp`` refine between grid points.

    >>> c = RPPCurve.from_function(lambda a: a * 0.5, [2.0, 4.0, 8.0])  # Gaussian, Delta/sigma = 1
    >>> c.to_pp(1e-5, method="prop2.2").eps  # optimum c + 2 sqrt(c log(1/delta)) = 5.2985256..., c = 0.5
    5.298525...
    >>> round(c.to_pp(1e-5).eps, 3)  # the least cited conversion (the exact Gaussian profile: 4.377)
    4.728
    """

    alphas: tuple[float, ...]
    eps: tuple[float, ...]
    provenance: Provenance | None = field(default=None, repr=False)
    fn: Callable[[float], float] | None = field(default=None, repr=False, metadata={"json": False})

    def __post_init__(self) -> None:
        a = V.float_array("alphas", self.alphas, ndim=1, finite=False)
        e = V.float_array("eps", self.eps, ndim=1, finite=False)
        if a.shape != e.shape:
            raise ParameterError("eps", f"length {e.shape[0]}", f"one eps per order ({a.shape[0]} orders)")
        for i, x in enumerate(a):
            V.alpha(f"alphas[{i}]", x)
        if (e < 0).any():
            raise ParameterError("eps", f"{e[np.argmax(e < 0)]!r}", "eps >= 0 at every order")
        if a.size > 1 and not (np.diff(a) > 0).all():
            raise ParameterError("alphas", self.alphas, "strictly increasing orders")
        if self.fn is not None and not callable(self.fn):
            raise ParameterError("fn", self.fn, "a callable alpha -> eps or None")
        object.__setattr__(self, "alphas", tuple(float(x) for x in a))
        object.__setattr__(self, "eps", tuple(float(x) for x in e))
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    @classmethod
    def from_function(cls, fn: Callable[[float], float], alphas: Sequence[float] | None = None,
                      provenance: Provenance | None = None) -> RPPCurve:
        """Curve from a function alpha -> eps that is a valid RPP bound at *every* alpha > 1
        (e.g. a GWM epsilon(alpha)); evaluated on ``alphas`` (default: :func:`default_orders`)."""
        grid = default_orders() if alphas is None else alphas
        vals = [float(fn(float(x))) for x in grid]
        return cls(tuple(grid), tuple(vals), provenance, fn)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RPPCurve):
            return NotImplemented
        return self.alphas == other.alphas and self.eps == other.eps

    def __hash__(self) -> int:
        return hash((self.alphas, self.eps))

    def __len__(self) -> int:
        return len(self.alphas)

    def __repr__(self) -> str:
        if len(self.alphas) <= 4:
            return f"RPPCurve(alphas={self.alphas!r}, eps={self.eps!r})"
        return (f"RPPCurve({len(self.alphas)} orders, alpha {self.alphas[0]:g}..{self.alphas[-1]:g}, "
                f"eps {min(self.eps):.4g}..{max(self.eps):.4g})")

    def at(self, alpha: float) -> RPP:
        """The RPP guarantee at a listed order (or any order if built from a function)."""
        alpha = V.alpha("alpha", alpha)
        if alpha in self.alphas:
            return RPP(alpha, self.eps[self.alphas.index(alpha)], self.provenance)
        if self.fn is not None:
            return RPP(alpha, float(self.fn(alpha)), self.provenance)
        raise ParameterError("alpha", alpha, f"one of the curve's {len(self.alphas)} orders")

    def _objective(self, alpha: float, delta: float, conv: Callable[[float, float, float], float],
                   eps: float | None = None) -> float:
        if eps is None:
            if self.fn is None:
                raise ParameterError("alpha", alpha, "one of the curve's orders (no function to evaluate)")
            e = float(self.fn(alpha))
        else:
            e = eps
        if math.isnan(e) or e < 0:
            raise ParameterError("fn", f"eps({alpha}) = {e}", "a certified eps >= 0")
        if math.isinf(alpha):
            return e
        return conv(alpha, e, delta)

    def _refine(self, delta: float, best_a: float, conv: Callable[[float, float, float], float]
                ) -> tuple[float, float]:
        """Golden-section search in t = log(alpha - 1) around the best grid order; where that order
        is the first or last finite one, the bracket is first extended beyond the grid (steps
        doubling in t) while the objective still decreases, down to alpha - 1 = 1e-300 and up to
        alpha = 1e300 (the Gaussian's optimum 1 + sqrt(log(1/delta) / c) can lie far outside the
        grid, e.g. alpha* ~ 4800 or just above 1). Every order tried is evaluated by the
        certified function, so any order returned gives a certified eps; a failure to evaluate
        (a quadrature refusing an extreme order) ends the extension there."""
        from ..errors import PufferError

        def f(t: float) -> float:
            try:
                return self._objective(1.0 + math.exp(t), delta, conv)
            except (PufferError, OverflowError):
                return math.inf

        finite = [a for a in self.alphas if math.isfinite(a)]
        if not finite:
            return 0.0, math.inf
        ts = [math.log(a - 1.0) for a in finite]
        kk = finite.index(best_a) if best_a in finite else len(finite) - 1
        lo, hi = ts[max(kk - 1, 0)], ts[min(kk + 1, len(ts) - 1)]
        t_lim = (math.log(1e-300), math.log(1e300))
        for side in (-1, 1):
            if (side == 1 and kk < len(ts) - 1) or (side == -1 and kk > 0):
                continue
            t0, v0, step = ts[kk], f(ts[kk]), 1.0
            prev = t0
            while True:
                t1 = min(max(t0 + side * step, t_lim[0]), t_lim[1])
                v1 = f(t1)
                if not v1 < v0 or t1 in t_lim:
                    break
                prev, t0, v0, step = t0, t1, v1, step * 2.0
            if side == 1:
                lo, hi = min(lo, prev), t1
            else:
                lo, hi = t1, max(hi, prev)
        if not hi > lo:
            return ts[kk], f(ts[kk])
        return golden_min(f, lo, hi, iters=200, tol=1e-12 * max(1.0, abs(lo), abs(hi)))

    def to_pp(self, delta: float, *, method: str = "best") -> PP:
        """The smallest eps' over orders and conversions (``method``, see
        :mod:`puffer.guarantees.conversions`: ``"best"`` by default, or ``"optimal"``, ``"cks"``,
        ``"prop2.2"`` alone), the order optimised continuously when the curve has its function, also
        beyond the grid's ends; alpha = inf (listed, or finite by the function) is pure eps and
        needs no conversion, so the result is never above the pure eps of the curve."""
        from ..errors import PufferError
        from .conversions import check_method, cite, fast, single

        method = check_method(method)
        delta = V.delta_open("delta", delta)
        conv = fast(method)
        vals = [self._objective(a, delta, conv, e) for a, e in zip(self.alphas, self.eps)]
        k = int(np.argmin(vals))
        best_a, best = self.alphas[k], vals[k]
        if self.fn is not None and math.isfinite(best):
            t, v = self._refine(delta, best_a, conv)
            if v < best:
                best, best_a = v, 1.0 + math.exp(t)
        used = "pure" if math.isinf(best_a) else ("prop2.2" if method == "prop2.2" else "cks")
        if self.fn is not None and math.inf not in self.alphas:
            try:
                e_inf = float(self.fn(math.inf))
            except (PufferError, OverflowError):
                e_inf = math.inf
            if e_inf < best:
                best, best_a, used = e_inf, math.inf, "pure"
        if method in ("best", "optimal") and math.isfinite(best_a):
            # the optimal single-order conversion around the CKS optimum (never above it)
            def opt(a: float, e: float | None = None) -> tuple[float, str]:
                try:
                    ee = float(self.fn(a)) if e is None and self.fn is not None else float(e)  # type: ignore[arg-type]
                except (PufferError, OverflowError):
                    return math.inf, "cks"
                return single(a, ee, delta, "optimal")

            if self.fn is not None:
                # a short search around the CKS optimum (the two optima are close; ~2 ms per order)
                t0 = math.log(best_a - 1.0)
                t, v = golden_min(lambda tt: opt(1.0 + math.exp(tt))[0], t0 - 0.5, t0 + 0.5, iters=12, tol=1e-4)
                cands = [(1.0 + math.exp(t), None), (best_a, None)]
            else:
                order = np.argsort(vals)[:4]
                cands = [(self.alphas[i], self.eps[i]) for i in order if math.isfinite(self.alphas[i])]
            for a, e in cands:
                v, u = opt(a, e)
                if v < best:
                    best, best_a, used = v, a, u
        return PP(best, delta, _cited(self.provenance, cite(used), notes=f"RPP->PP at alpha={best_a!r} ({used})"))

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "PP": (Ref("pierquin2024", "Def 2.1"),),
    "RPP": (Ref("pierquin2024", "Def 2.2"),),
    "ApproxRPP": (Ref("pierquin2024", "Def 4.1"),),
}
