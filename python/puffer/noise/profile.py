"""Privacy profiles of additive noise and the exact (eps, delta) calibration.

Noise N added to a query whose conditional laws are within Delta_G of each other in W_inf (in N's
natural norm) gives (eps, delta)-PP with

    delta_N(eps; Delta_G) = sup over ||u|| <= Delta_G of H_{e^eps}(N + u || N),

H the hockey-stick divergence, H_g(P || Q) = sup over events S of P(S) - g Q(S). Proof: couple the
two conditional laws within Delta_G (the W_inf coupling) and apply the noise's (eps, delta)
guarantee at each coupled pair of query values — the argument of Song, Wang & Chaudhuri 2017
(Thm 3.2, there for Laplace noise and pure eps). The ball is symmetric, so both directions of every
secret pair are covered. As H at a shift is the exact (eps, delta) of the noise there, this is the
least scale any (eps, delta) calibration of the family to Delta_G allows. The delta is the usual one
on events (for a discrete output it bounds point probabilities too).

Values are certified upper bounds from the core (``puffer._core.profile``, ``cpp/renyi/hockey.hpp``):
the Gaussian in closed form (Balle & Wang 2018, Thm 8; in d dimensions the l2 ball reduces to one
dimension by rotation invariance), Laplace in closed form, the other families and declared
:class:`~puffer.noise.Custom` densities by log-space Gauss-Kronrod with its error bound added.
``Custom(log_lipschitz=L)`` densities (not ``log_concave``) are certified from L alone, whatever
their shape between nodes (an oscillating comb fooled Gauss-Kronrod: 0.245215 for 0.245541, and
calibrations 2,600x above their delta): between two nodes p(x - u) lies under its tent
min(P_0 e^{L t}, P_1 e^{L (h - t)}) and p(x) above its valley max(Q_0 e^{-L t}, Q_1 e^{-L (h - t)}),
the integral of (tent - e^eps valley)_+ over the gap is exact, and gaps are halved until this upper
sum and the mirrored lower sum agree to ``LIPSCHITZ_HOCKEY`` (0.1 % plus 1e-12; calibration uses
1e-4 delta): the upper sum is returned, a bound on the window; beyond it (p(x - u) e^-40 below its
largest value) the tails' mass of p(x - u) is added by Gauss-Kronrod — an estimate, as for the
Rényi certificate: L bounds how fast p can change, not where its mass is, so structure far away
must be declared as breakpoints.

The sup over the shift ball is certified from the family's declared structure, as for R_alpha:

* log-concave noise (Gaussian, Laplace, GenGaussian, Logistic, ``Custom(log_concave=True)``): H is
  non-decreasing in |u| on each side (a monotone likelihood ratio orders the shifted pairs in
  Blackwell's sense, and H is an f-divergence; Dong, Roth & Su 2022, Sec. 2), so the sup is at the
  boundary;
* the Student-type families (StudentT, GenCauchy, Cauchy): non-decreasing is checked on the grid
  |u| j/8, j = 1..8, as their R_alpha is, and the sup refused if the check fails;
* ``Custom(log_lipschitz=L)``: p(x - v) <= e^{L h} p(x - w) for |v - w| <= h, so
  H(eps; v) <= e^{L h} H(eps - L h; w): the ball is covered by an adaptively refined grid;
* otherwise the profile is refused (:func:`supports` is False) and calibration uses the Rényi curve.

Calibration (:func:`calibrate`) finds the largest standardized shift whose delta meets the target
(brackets that err toward more noise), divides, rounds the scale up and returns it only once the
certified sup over the ball at that scale is <= delta.

>>> from puffer.noise import Gaussian, Laplace
>>> g = calibrate(Gaussian(1.0), eps=1.0, delta=1e-5, sensitivity=7.0)   # the analytic Gaussian mechanism
>>> round(g.sigma, 2), delta_at(g, 1.0, 7.0) <= 1e-5
(26.11, True)
>>> round(calibrate(Laplace(1.0), eps=1.0, delta=1e-5, sensitivity=1.0).b, 6)   # Delta / (eps - 2 log(1 - delta))
0.99998
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as V
from ..errors import NumericalError, ParameterError, ParameterTypeError
from ..refs import Ref
from ._base import _ABOVE

if TYPE_CHECKING:
    from ._base import NoiseFamily
    from .product import IID

__all__ = ["supports", "hockey_stick", "delta_at", "eps_at", "calibrate", "calibrate_eps_delta", "REFS"]

_EPS = float(np.finfo(np.float64).eps)

#: the results behind a profile-calibrated (eps, delta)-PP guarantee
REFS = (Ref("song2017", "Thm 3.2", "the W_inf coupling argument applied to the noise's (eps, delta) profile"),
        Ref("balle2018", "Thm 8", "the Gaussian privacy profile; other families by certified quadrature"))


def _kind(noise: Any) -> str:
    """How the sup over the shift ball is certified: "monotone", "grid", "lipschitz" or "" (none)."""
    from .custom import Custom
    from .families import Cauchy, Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT

    if isinstance(noise, Custom):
        if not noise._declared:
            return ""
        if noise.log_concave:
            return "monotone"
        return "lipschitz" if noise.log_lipschitz is not None else ""
    if isinstance(noise, (Gaussian, Laplace, GenGaussian, Logistic)):
        return "monotone"
    if isinstance(noise, (StudentT, GenCauchy, Cauchy)):
        return "grid"
    return ""


def supports(noise: Any) -> bool:
    """True when the privacy profile of ``noise`` (a family, or an :class:`~puffer.noise.IID` of
    Gaussian noise or of dimension 1) can be certified here."""
    from .product import IID

    if isinstance(noise, IID):
        return type(noise.base).__name__ == "Gaussian" or (noise.d == 1 and supports(noise.base))
    return bool(_kind(noise))


def _refuse(noise: Any) -> None:
    raise ParameterError("noise", repr(noise), "a noise whose privacy profile can be certified: a built-in family, "
                         "Custom with log_concave=True or log_lipschitz=L (and its structure declared), or "
                         "Gaussian.iid(d) (other product noise: use the Renyi route, calibrate_pp)")


_MASS: dict[Any, float] = {}


def _mass_lower(noise: Any) -> float:
    """A lower bound on the mass of a Custom density (user densities are normalised within 1e-6 only:
    H of the normalised density is H of the given one divided by its mass)."""
    from .._core import renyi as _K

    key = (noise._logpdf, noise._breaks)
    if key not in _MASS:
        if len(_MASS) > 64:
            _MASS.clear()
        mass, err = _K.custom_mass(noise._safe, 1.0, list(noise._breaks))
        _MASS[key] = float(mass) - float(err) - 4 * _EPS * float(mass)
    return _MASS[key]


#: relative tolerance and absolute tolerance (delta units) of the hockey-stick values certified from
#: ``log_lipschitz`` alone, and the most nodes spent on one (the upper sum is returned as it stands
#: when they do not reach the tolerance: a looser bound, never a lower one)
LIPSCHITZ_HOCKEY = (1e-3, 1e-12, 2 ** 20)


def _h_std(noise: Any, eps: float, u: np.ndarray, atol: float | None = None) -> np.ndarray:
    """Certified H_{e^eps}(Z + u || Z) of the standardized noise Z at the (signed) shifts u (``atol``:
    the absolute tolerance of values certified from log_lipschitz, default ``LIPSCHITZ_HOCKEY[1]``)."""
    from .._core import profile as _P
    from .custom import Custom

    if isinstance(noise, Custom):
        if not noise._declared:
            noise._shift_div(np.ones(1), np.ones(1))   # raises: the structure must be declared
        m = _mass_lower(noise)
        out = np.empty(u.shape)
        lip = _kind(noise) == "lipschitz"
        rtol, atol0, nodes = LIPSCHITZ_HOCKEY
        for i, uu in enumerate(u.ravel().tolist()):
            uu = abs(uu) if noise.symmetric else uu
            if lip:
                # an oscillating density fooled Gauss-Kronrod (0.245215 for 0.245541): the tent
                # certificate from L (cpp/renyi/lipschitz.cpp) bounds every gap between nodes
                v = float(_P.custom_hockey_stick_lipschitz(noise._safe, eps, uu, float(noise.log_lipschitz or 0.0), 1.0,
                                                           list(noise._breaks), rtol,
                                                           atol0 if atol is None else atol, nodes)[0])
            else:
                v = float(_P.custom_hockey_stick(noise._safe, eps, uu, 1.0, list(noise._breaks)))
            out.flat[i] = min(1.0, v / m * (1.0 + 4 * _EPS)) if m > 0 else 1.0
        return out
    k, nu, beta = noise._shape()
    uu = np.ascontiguousarray(np.abs(u).ravel(), dtype=np.float64)
    ee = np.full(uu.shape, float(eps))
    return np.asarray(_P.hockey_stick(noise._code, k, nu, beta, ee, uu), dtype=np.float64).reshape(u.shape)


def _std(noise: Any, v: Any) -> np.ndarray:
    with np.errstate(over="ignore"):   # beyond the float range: u = inf, H = 1 (an upper bound)
        out: np.ndarray = np.asarray(v, dtype=np.float64) / float(noise.scale)
    return out


def hockey_stick(noise: NoiseFamily, eps: Any, v: Any) -> Any:
    """H_{e^eps}(N + v || N) for noise ``N`` at shifts ``v`` (certified upper bound; eps >= 0).

    >>> from puffer.noise import Laplace
    >>> import math; abs(hockey_stick(Laplace(1.0), 0.5, 1.0) + math.expm1(-0.25)) < 1e-15
    True
    """
    e = V.nonneg("eps", eps)
    x = V.float_array("v", v, finite=True, allow_empty=True)
    if not _kind(noise):
        _refuse(noise)
    out = _h_std(noise, e, _std(noise, x))
    return float(out) if np.ndim(v) == 0 else out


def _sup_grid(noise: Any, eps: float, u: float) -> float:
    g = _h_std(noise, eps, u * np.arange(1, 9) / 8.0)
    if (np.diff(g) < -1e-12 * np.abs(g[1:]) - 1e-300).any():
        raise NumericalError(f"{noise!r}: H_e^eps(N + v || N) is not non-decreasing on a grid of [0, {u * noise.scale}] "
                             f"at eps={eps}; the sup over the shift ball cannot be reduced to its boundary")
    return float(g[-1])


def _sup_lipschitz(noise: Any, eps: float, u: float, rtol: float = 1e-3, max_eval: int = 96,
                   atol: float | None = None) -> float:
    """sup over |v| <= u of H(eps; v) for an L-log-Lipschitz density: on [w - h, w + h],
    H(eps; v) <= e^{L h} H(eps - L h; w) (p(x - v) <= e^{L h} p(x - w)); the interval of largest bound
    is halved until every bound is within rtol of the largest value seen (or max_eval)."""
    L = float(noise.log_lipschitz)

    def h(e: float, w: float) -> float:
        return float(_h_std(noise, e, np.array([w]), atol)[0])

    def bound(a: float, b: float) -> float:
        w, hw = 0.5 * (a + b), 0.5 * (b - a)
        e2 = eps - L * hw * (1.0 + 1e-12)
        return 1.0 if e2 < 0 else min(1.0, math.exp(L * hw) * (1.0 + 8 * _EPS) * h(e2, w))

    best = 0.0
    for sign in ((1.0,) if noise.symmetric else (1.0, -1.0)):
        top = h(eps, sign * u)
        cells = [(sign * u * j / 8.0, sign * u * (j + 1) / 8.0) for j in range(8)]
        cells = [(min(a, b), max(a, b)) for a, b in cells]
        bs = [bound(a, b) for a, b in cells]
        n = 8
        while n < max_eval:
            j = int(np.argmax(bs))
            if bs[j] <= top * (1.0 + rtol):
                break
            a, b = cells.pop(j)
            bs.pop(j)
            m = 0.5 * (a + b)
            for c in ((a, m), (m, b)):
                cells.append(c)
                bs.append(bound(*c))
            n += 2
        best = max(best, top, max(bs))
    return best


def _sup_std(noise: Any, eps: float, u: float, atol: float | None = None) -> float:
    """The certified sup over the standardized ball |v| <= u of H(eps; v)."""
    if u == 0.0:
        return 0.0
    kind = _kind(noise)
    if kind == "monotone":
        vals = _h_std(noise, eps, np.array([u] if getattr(noise, "_symmetric", True) else [u, -u]))
        return float(np.max(vals))
    if kind == "grid":
        return _sup_grid(noise, eps, u)
    if kind == "lipschitz":
        return _sup_lipschitz(noise, eps, u, atol=atol)
    _refuse(noise)
    return 1.0


def delta_at(noise: NoiseFamily | IID, eps: float, sensitivity: float) -> float:
    """delta_N(eps; Delta) = sup over ||u|| <= Delta of H_{e^eps}(N + u || N), certified: the delta of
    (eps, delta)-PP that ``noise`` gives a query of sensitivity Delta (W_inf, the noise's natural norm).

    >>> from puffer.noise import Gaussian
    >>> round(delta_at(Gaussian(1.0), 1.0, 1.0), 6)   # Phi(-1/2) - e Phi(-3/2) (Balle & Wang 2018)
    0.126937
    """
    return _delta_at(noise, V.nonneg("eps", eps), V.nonneg("sensitivity", sensitivity))


def _delta_at(noise: Any, e: float, dg: float, atol: float | None = None) -> float:
    """:func:`delta_at` on validated arguments (``atol``: as for :func:`_h_std`)."""
    from .product import IID

    if isinstance(noise, IID):
        if not supports(noise):
            _refuse(noise)
        noise = noise.base          # Gaussian: rotation invariant, the l2 ball is the 1-D segment
    elif not _kind(noise):
        _refuse(noise)
    with np.errstate(over="ignore"):
        u = dg / noise.scale
    return _sup_std(noise, e, float(u), atol)


def eps_at(noise: NoiseFamily | IID, delta: float, sensitivity: float) -> float:
    """The least eps (bisection, verified) with :func:`delta_at` <= delta.

    >>> from puffer.noise import Laplace
    >>> round(eps_at(Laplace(1.0), 1e-5, 1.0), 6)   # 1 + 2 log(1 - 1e-5)
    0.99998
    """
    d = V.delta_open("delta", delta)
    dg = V.nonneg("sensitivity", sensitivity)
    if dg == 0:
        return 0.0
    base = noise.base if hasattr(noise, "base") else noise
    with np.errstate(over="ignore"):
        u = dg / base.scale
    if delta_at(noise, 0.0, dg) <= d:
        return 0.0

    def boundary(e: float) -> float:
        return float(np.max(_h_std(base, e, np.array([u] if getattr(base, "_symmetric", True) else [u, -u]))))

    lo, hi = 0.0, 1.0
    while boundary(hi) > d:
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            raise NumericalError(f"{noise!r}: no eps below 1e6 reaches delta={d} at sensitivity {dg}")
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi or hi - lo <= 1e-13 * hi:
            break
        if boundary(mid) > d:
            lo = mid
        else:
            hi = mid
    step = 1e-12
    for _ in range(60):
        if delta_at(noise, hi, dg) <= d:
            return hi
        hi = hi * (1.0 + step) + 1e-300
        step *= 4.0
    raise NumericalError(f"{noise!r}: the eps for delta={d} did not verify")


def calibrate(noise: NoiseFamily | IID, *, eps: float, delta: float, sensitivity: float) -> Any:
    """The same family (shape parameters kept) with the smallest certified scale whose
    :func:`delta_at` ``(eps, sensitivity)`` is <= delta: (eps, delta)-PP for a query of sensitivity
    ``sensitivity`` (W_inf, in the noise's natural norm)."""
    from .._core import profile as _P
    from ._base import _generic_max_shift
    from .custom import Custom
    from .product import IID

    e = V.nonneg("eps", eps)
    d = V.delta_open("delta", delta)
    dg = V.positive("sensitivity", sensitivity)
    if isinstance(noise, IID):
        if not supports(noise):
            _refuse(noise)
        return IID(calibrate(noise.base, eps=e, delta=d, sensitivity=dg), noise.d)
    kind = _kind(noise)
    if not kind:
        _refuse(noise)
    atol: float | None = None
    unit: Any = noise._with_scale(1.0)
    if isinstance(noise, Custom):
        # the Lipschitz sup is looser than the boundary value: aim a little below the target
        slack = 1e-3 if kind == "lipschitz" else 0.0
        atol = 1e-4 * d
        sym = noise.symmetric or kind == "lipschitz"
        u = _generic_max_shift(lambda uu: float(np.max(_h_std(unit, e, np.array([uu] if sym else [uu, -uu]),
                                                               atol))), d * (1.0 - slack))
    else:
        k, nu, beta = unit._shape()
        u = float(_P.max_shift_hockey(unit._code, k, nu, beta, e, d))
    if not u > 0:
        raise ParameterError("delta", d, f"a target reachable by {type(noise).__name__} noise at eps={e} "
                             "(no scale gives this delta)")
    if math.isinf(u):
        raise ParameterError("eps", e, f"a finite target: {type(noise).__name__} noise meets (eps={e}, delta={d}) "
                             "at every scale")
    s = _scale_up(dg / u)
    step = 64 * _EPS
    for _ in range(80):
        fam = noise._with_scale(s)
        if _delta_at(fam, e, dg, atol) <= d:
            return fam
        s = _scale_up(s * (1.0 + step))
        step = min(step * 4.0, 1e-2)
    raise NumericalError(f"calibration of {noise!r} to (eps={e}, delta={d}) did not verify after rounding")


def _scale_up(x: float) -> float:
    for _ in range(4):
        x = math.nextafter(x, math.inf)
    return x


def calibrate_eps_delta(noise: Any, *, eps: float, delta: float, sensitivity: float) -> tuple[Any, str]:
    """(calibrated noise, route) for an (eps, delta)-PP target: the privacy profile (``"profile"``)
    when :func:`supports` it, else the Rényi curve converted to (eps, delta) (``"rpp"``)."""
    from ._base import NoiseFamily
    from .product import IID

    if not isinstance(noise, (NoiseFamily, IID)):
        raise ParameterTypeError("noise", noise, "a puffer.noise family or IID")
    if supports(noise):
        return calibrate(noise, eps=eps, delta=delta, sensitivity=sensitivity), "profile"
    if isinstance(noise, IID):
        if noise.d == 1 or type(noise.base).__name__ == "Laplace":
            # Lemma B.1: the l1 ball of iid Laplace reduces to one dimension for Renyi divergences
            return IID(noise.base.calibrate_pp(eps=eps, delta=delta, sensitivity=sensitivity), noise.d), "rpp"
        raise ParameterError("delta", delta, "None for this product noise (calibrate at a fixed alpha instead)")
    return noise.calibrate_pp(eps=eps, delta=delta, sensitivity=sensitivity), "rpp"


# the methods NoiseFamily.hockey_stick / privacy_profile / calibrate(delta=) and IID's forward here
# (see puffer.noise._base._ABOVE: this module imports the families, they do not import it)
_ABOVE.update(hockey_stick=hockey_stick, delta_at=delta_at, calibrate_eps_delta=calibrate_eps_delta)
