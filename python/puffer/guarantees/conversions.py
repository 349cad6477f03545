"""From a Rényi bound to (eps, delta): the conversions ``RPP.to_pp`` and ``RPPCurve.to_pp`` use.

A pair of laws with D_alpha(P || Q) <= e (alpha > 1) satisfies P(S) <= e^eps' Q(S) + delta for every
event S with

* ``"prop2.2"`` — Pierquin et al. 2024, Prop 2.2 (Mironov 2017, Prop 3): eps' = e + log(1/delta)/(alpha - 1);
* ``"cks"`` — Canonne, Kamath & Steinke 2020, Prop 12: eps' = e + log1p(-1/alpha) - (log delta +
  log alpha)/(alpha - 1), below Prop 2.2 at every order (the difference log1p(-1/alpha) -
  log(alpha)/(alpha - 1) is negative);
* ``"optimal"`` — the optimal conversion of a single order (Asoodeh et al. 2021: the joint range of
  the Rényi divergence and the hockey-stick divergence, attained by pairs on two points), never
  above ``"cks"``; certified by a Lagrange dual bound in the core (``cpp/renyi/conversion.hpp``): a
  value is returned only once E[(T - e^eps')_+] <= delta is proved for every likelihood ratio T
  with the given moment, with its rounding error added;
* ``"best"`` (the default) — the least of the above.

alpha = inf is pure eps-PP and needs no conversion. For a curve the least value over the listed
orders is taken, refined continuously between them when the curve has its function (any order
gives a valid bound, so the optimiser only affects tightness). Every value is rounded upward.

>>> from puffer.guarantees.conversions import single
>>> single(2.0, 0.5, 1e-5, "prop2.2")[0] > single(2.0, 0.5, 1e-5, "cks")[0] >= single(2.0, 0.5, 1e-5, "optimal")[0]
True
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ParameterError
from ..refs import Ref
from ._base import round_up

__all__ = ["METHODS", "single", "cite"]

#: the conversion methods ``to_pp(delta, method=...)`` accepts
METHODS = ("best", "prop2.2", "cks", "optimal")

def check_method(method: object) -> str:
    """A validated conversion ``method=`` (one of ``METHODS``)."""
    if method not in METHODS:
        raise ParameterError("method", method, f"one of {', '.join(METHODS)}")
    return str(method)


def cite(used: str) -> Ref:
    """The reference of a conversion by the name :func:`single` returns.

    >>> str(cite("cks"))
    'Canonne et al. 2020, Prop 12'
    """
    return {
        "prop2.2": Ref("pierquin2024", "Prop 2.2"),
        "cks": Ref("canonne2020", "Prop 12"),
        "optimal": Ref("asoodeh2021", "optimal RDP to (eps, delta) conversion",
                       "single order, certified by a Lagrange dual bound"),
        "pure": Ref("pierquin2024", "Def 2.2", "(inf, eps)-RPP is eps-PP"),
    }[used]


def _prop22(alpha: float, e: float, delta: float) -> float:
    return round_up(e + -math.log(delta) / (alpha - 1.0))


def single(alpha: float, e: float, delta: float, method: str = "best") -> tuple[float, str]:
    """(eps', name of the conversion that gave it) for (alpha, e)-RPP at ``delta`` in (0, 1)."""
    from .._core import profile as _P

    if math.isinf(alpha):
        return e, "pure"
    if math.isinf(e):
        return math.inf, method if method != "best" else "cks"
    if method == "prop2.2":
        return _prop22(alpha, e, delta), "prop2.2"
    cks = float(_P.rdp_to_dp_cks(alpha, e, delta))
    if method == "cks":
        return cks, "cks"
    opt = float(_P.rdp_to_dp_optimal(alpha, e, delta))
    if method == "optimal":
        return opt, ("optimal" if opt < cks else "cks")
    best = min((opt, "optimal"), (cks, "cks"), (_prop22(alpha, e, delta), "prop2.2"))
    return best


def fast(method: str) -> Callable[[float, float, float], float]:
    """The conversion used to search the order (``"prop2.2"`` for that method, CKS otherwise: the
    optimal one is polished afterwards around the CKS optimum, at ~1 ms per order)."""
    from .._core import profile as _P

    if method == "prop2.2":
        return _prop22
    return lambda a, e, d: math.inf if math.isinf(e) else float(_P.rdp_to_dp_cks(a, e, d))
