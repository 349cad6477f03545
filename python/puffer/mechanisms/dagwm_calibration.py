"""Calibration of the Distribution-Aware General Wasserstein Mechanism to a target.

Calibration of the Distribution-Aware General Wasserstein Mechanism (Pierquin, Bellet,
Tommasi, Boussard 2024, Thm 4.5): the smallest noise scale whose certified
eps(alpha) = log(Delta_G^{zeta,q,alpha}) / (q (alpha - 1)) meets a target.

For the built-in families the shift divergence is non-decreasing in |v| / scale, so eps(alpha)
is non-increasing in the scale and bisection on log(scale) finds the threshold; the returned
mechanism is re-evaluated at the final scale and only returned when its certified eps meets the
target (for other families the search may be loose but the result is still verified).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import _validate as V
from ..errors import NumericalError, ParameterError, PufferError
from ..guarantees import RPPCurve

if TYPE_CHECKING:
    from ..framework import Framework
    from ..noise import NoiseFamily
    from .wasserstein import DistributionAwareWasserstein


#: the orders the (eps, delta) search converts from (to_pp refines between them)
_SEARCH_ORDERS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0, 128.0)


def calibrate_dagwm(cls: type[DistributionAwareWasserstein], framework: Framework, noise: NoiseFamily, *,
                    eps: float, alpha: float | None = None, delta: float | None = None, q: float = 1.0,
                    rtol: float = 1e-9) -> DistributionAwareWasserstein:
    """A ``cls`` (DistributionAwareWasserstein) instance with the smallest verified scale of
    ``noise``'s family such that its eps(alpha) <= eps, or (``delta`` instead of ``alpha``) such that
    its Renyi curve converts to (eps, delta)-PP: the search converts by Canonne, Kamath & Steinke 2020,
    Prop 12 (fast), the returned object is verified with the least cited conversion and carries
    ``PP(eps, delta)``."""
    eps = V.positive("eps", eps)
    if (alpha is None) == (delta is None):
        raise ParameterError("delta", delta, "exactly one of alpha (an RPP target) and delta (a PP target)")
    if alpha is not None:
        alpha = V.alpha("alpha", alpha, allow_inf=False)
    else:
        delta = V.delta_open("delta", delta)
        rtol = max(rtol, 1e-7)     # each step converts a Renyi curve: fewer, coarser steps
    if not hasattr(noise, "_with_scale"):
        raise ParameterError("noise", noise, "a 1-D puffer noise family (its scale is calibrated)")

    def mech(scale: float, curve: bool = True) -> DistributionAwareWasserstein:
        return cls(framework, noise._with_scale(scale), q=q, _curve=curve)

    def ok(scale: float) -> bool:
        m = mech(scale, curve=False)
        if alpha is not None:
            return m.epsilon(alpha) <= eps
        assert delta is not None
        # a few orders, refined continuously by to_pp (any order gives a valid bound)
        c = RPPCurve.from_function(m.epsilon, _SEARCH_ORDERS)
        return c.to_pp(delta, method="cks").eps <= eps

    # start from the GWM scale at Delta_G: the distribution-aware eps(alpha) is never above
    # R_alpha(zeta, Delta_G), so that scale meets the target (the search goes down from it)
    s0 = noise.scale
    try:
        dg = mech(s0, curve=False).sensitivity.value
        if dg > 0:
            g = noise.calibrate(alpha=alpha, eps=eps, sensitivity=dg) if alpha is not None else \
                noise.calibrate_pp(eps=eps, delta=delta, sensitivity=dg)   # type: ignore[arg-type]
            s0 = g.scale
    except PufferError:
        pass
    lo, hi = s0, s0
    for _ in range(400):
        if ok(hi):
            break
        lo, hi = hi, hi * 4.0
    else:
        raise NumericalError(f"no scale of {noise!r} reaches eps={eps} at alpha={alpha}")
    if hi == s0:
        for _ in range(400):
            lo = hi / 4.0
            if not ok(lo):
                break
            hi = lo
        else:  # zero sensitivity: any scale works
            return mech(hi)
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    m = mech(hi)
    if alpha is not None:
        if not m.epsilon(alpha) <= eps:  # re-check the returned object itself
            raise NumericalError("DAGWM calibration did not verify")
        m.target = {"alpha": alpha, "eps": eps}
        return m
    assert delta is not None
    pp = m.rpp_curve.to_pp(delta)
    if not pp.eps <= eps:
        raise NumericalError("DAGWM calibration did not verify")
    from ..guarantees import PP
    from ..refs import Ref

    m.refs = type(m).refs + (pp.provenance.refs[-1] if pp.provenance and pp.provenance.refs else
                             Ref("canonne2020", "Prop 12"),)
    m.guarantee = PP(eps, delta, m._provenance(f"(eps, delta) from the Renyi curve ({pp.provenance.notes if pp.provenance else ''})"))
    m.target = {"eps": eps, "delta": delta}
    return m

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "calibrate_dagwm": (Ref("pierquin2024", "Thm 4.5"), Ref("canonne2020", "Prop 12")),
}
