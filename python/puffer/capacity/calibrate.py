"""Noise calibration for a target capacity bounded privacy parameter.

Noise calibration for a target capacity bounded parameter (Chaudhuri, Imola,
Machanavajjhala 2019, Thms 9, 10 and the (lin, Rényi) values of :mod:`.mechanisms`).

* (lin, KL), Laplace: the inverse of Thm 9 in closed form via the lower Lambert W branch,
  then checked forward and moved toward more noise until the guarantee is <= the target.
* (lin, KL), Gaussian: sigma = sens / sqrt(2 kappa) (Thm 10), rounded up.
* (lin, Rényi_alpha): bisection on the standardized shift s, valid because D^lin is
  nondecreasing in s (for fixed adversary h = x + t the ratio (s + t)/||Y + t||_{alpha*}
  grows with s); the returned noise always satisfies value(noise) <= target.

Calibrating with ``method="paper"`` raises unless ``allow_unsound=True`` (the printed bound
under-reports for alpha > 2 at small shifts).

>>> from puffer import capacity as C
>>> e, g = C.calibrate_laplace_lin_kl(0.225987155913, 1.0)
>>> abs(e - 1.0) < 1e-9, g.eps <= 0.225987155913
(True, True)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import NumericalError, ParameterError
from ..guarantees.capacity import CapacityBounded
from . import divergences as Dv
from .mechanisms import METHODS, gaussian_lin_kl, gaussian_lin_renyi, laplace_lin_kl, laplace_lin_renyi

__all__ = ["calibrate_laplace_lin_kl", "calibrate_gaussian_lin_kl", "calibrate_laplace_lin_renyi",
           "calibrate_gaussian_lin_renyi", "laplace_lin_kl_inverse"]


def laplace_lin_kl_inverse(kappa: float) -> float:
    """x = eps*sens with KL^lin(x) = kappa (Thm 9 inverted): C = kappa + 2 - log 2,
    w = -W_{-1}(-e^{-C}), x = sqrt((w - 1)^2 - 1)."""
    from scipy.special import lambertw
    k = V.positive("kappa", kappa)
    C = k + 2.0 - math.log(2.0)
    w = -float(np.real(lambertw(-math.exp(-C), -1)))
    return math.sqrt(max((w - 1.0) ** 2 - 1.0, 0.0))


def _check_target(name: str, x: Any) -> float:
    t = V.positive(name, x)
    if math.isinf(t):
        raise ParameterError(name, x, "a finite target")
    return t


def _shrink(x: float, ok: Callable[[float], bool]) -> float:
    """Largest tried x' <= x with ok(x'): step down by relative 1e-12, 1e-11, ... until ok."""
    step = 1e-12
    y = x
    for _ in range(200):
        if ok(y):
            return y
        y = x * (1.0 - step)
        step *= 2.0
    raise NumericalError("calibration could not find a noise level meeting the target")


def calibrate_laplace_lin_kl(kappa: float, sens: float = 1.0) -> tuple[float, CapacityBounded]:
    """(eps_noise, guarantee) with the guarantee's eps <= kappa (Thm 9 inverted)."""
    k = _check_target("kappa", kappa)
    d = abs(V.real("sens", sens))
    if d == 0:
        raise ParameterError("sens", sens, "a non-zero sensitivity")
    x = laplace_lin_kl_inverse(k)
    x = _shrink(x, lambda y: Dv.laplace_lin_kl_value(y, 1.0) <= k)
    e = x / d
    e = _shrink(e, lambda y: laplace_lin_kl(y, d).eps <= k)
    return e, laplace_lin_kl(e, d)


def calibrate_gaussian_lin_kl(kappa: float, sens: Any = 1.0) -> tuple[float, CapacityBounded]:
    """(sigma, guarantee): sigma = ||sens||_2 / sqrt(2 kappa) rounded toward more noise (Thm 10)."""
    k = _check_target("kappa", kappa)
    v = Dv.sens_vector(sens)
    nrm = float(np.linalg.norm(v))
    if nrm == 0:
        raise ParameterError("sens", sens, "a non-zero sensitivity")
    sigma = nrm / math.sqrt(2.0 * k)
    for _ in range(100):
        g = gaussian_lin_kl(sigma, v)
        if g.eps <= k:
            return sigma, g
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-15)
    raise NumericalError("calibration could not meet the target")


def _bisect_shift(value: Callable[[float], float], target: float) -> float:
    """Largest s (to relative 1e-10, from below) with value(s) <= target; value nondecreasing."""
    lo, hi = 0.0, 1.0
    while value(hi) <= target:
        lo, hi = hi, hi * 2.0
        if hi > 1e8:
            raise NumericalError("calibration: the target is not reached for any noise level")
    for _ in range(200):
        if hi - lo <= 1e-10 * hi:
            break
        mid = 0.5 * (lo + hi)
        if value(mid) <= target:
            lo = mid
        else:
            hi = mid
    if lo == 0.0:
        raise NumericalError("calibration: no positive shift meets the target")
    return lo


def _renyi_method(method: Any, allow_unsound: bool) -> str:
    if method not in METHODS:
        raise ParameterError("method", method, f"one of {METHODS}")
    if method == "paper" and not allow_unsound:
        raise ParameterError("method", method, "'exact' or 'sound' (the paper's Cor 2 bound is not an upper "
                             "bound for alpha > 2 at small shifts; pass allow_unsound=True to use it anyway)")
    return str(method)


def calibrate_laplace_lin_renyi(eps: float, sens: float, alpha: float, method: str = "exact", *,
                                allow_unsound: bool = False) -> tuple[float, CapacityBounded]:
    """(eps_noise, guarantee): the largest Laplace noise parameter (least noise) whose
    (lin, Rényi_alpha) value is <= eps, by bisection on s = eps_noise * sens."""
    t = _check_target("eps", eps)
    m = _renyi_method(method, allow_unsound)
    d = abs(V.real("sens", sens))
    if d == 0:
        raise ParameterError("sens", sens, "a non-zero sensitivity")
    s = _bisect_shift(lambda x: laplace_lin_renyi(x, 1.0, alpha, m).eps, t)
    e = _shrink(s / d, lambda y: laplace_lin_renyi(y, d, alpha, m).eps <= t)
    return e, laplace_lin_renyi(e, d, alpha, m)


def calibrate_gaussian_lin_renyi(eps: float, sens: Any, alpha: float, method: str = "exact", *,
                                 allow_unsound: bool = False) -> tuple[float, CapacityBounded]:
    """(sigma, guarantee): the least sigma whose (lin, Rényi_alpha) value is <= eps."""
    t = _check_target("eps", eps)
    m = _renyi_method(method, allow_unsound)
    v = Dv.sens_vector(sens)
    nrm = float(np.linalg.norm(v))
    if nrm == 0:
        raise ParameterError("sens", sens, "a non-zero sensitivity")
    if v.size > 1 and m != "exact":
        s = _bisect_shift(lambda x: gaussian_lin_renyi(1.0, v / nrm * x, alpha, m).eps, t)
    else:
        s = _bisect_shift(lambda x: gaussian_lin_renyi(1.0, x, alpha, m).eps, t)
    sigma = nrm / s
    for _ in range(200):
        g = gaussian_lin_renyi(sigma, v, alpha, m)
        if g.eps <= t:
            return sigma, g
        sigma *= 1 + 1e-12
    raise NumericalError("calibration could not meet the target")

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "calibrate_laplace_lin_kl": (Ref("chaudhuri2019", "Thm 9"),),
    "laplace_lin_kl_inverse": (Ref("chaudhuri2019", "Thm 9"),),
    "calibrate_gaussian_lin_kl": (Ref("chaudhuri2019", "Thm 10"),),
}
