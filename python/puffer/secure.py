"""Secure mode: lattice noise that floating-point attacks cannot exploit, keyed by OS entropy.

Mironov (CCS 2012) showed that textbook floating-point Laplace noise leaks the input through the
pattern of representable outputs. Secure mode is :mod:`puffer.lattice` with a fresh 256-bit key
from the OS (``os.urandom``) per call:

1. Each input is snapped to the lattice g·Z, ``k = round_half_even(x / g)``, ``g = 2^j``
   (exact: dividing a double by a power of two is exact).
2. An exact integer ``Z`` of a declared law is drawn by inversion from a ChaCha20 stream (RFC
   8439) with integer comparisons only (no floating point touches a random quantity): the
   **rounded Laplace** ``Z = round(X)``, ``X ~ Laplace(beta)`` for Laplace noise, the **discrete
   Gaussian** ``P(Z = z) ∝ exp(-z^2 / (2 sigma^2))`` for Gaussian noise (:mod:`puffer.lattice.laws`).
3. The output is ``(k + Z)·g`` as float64: a deterministic function of the lattice point and
   the exact sample, i.e. post-processing, exact for ``|x| <= 2^52 g``. So the output set is the
   lattice g·Z and its distribution depends on the input only through ``k``.

**Padding rule (who pays).** Snapping moves each coordinate by at most ``g/2``, so neighbouring
inputs whose query values differ by sensitivity ``Δ`` map to lattice points differing by at
most ``Δ' = Δ + c·g`` with ``c = n`` (``norm="l1"``), ``c = ceil(sqrt(n))`` (``"l2"``) or
``c = 1`` (``"coordinate"``), ``n`` = number of values. The **noise scale is inflated** by
``Δ'/Δ`` and the lattice law's parameter rounded up (:mod:`puffer.lattice.plan`). The guarantee
the noise was calibrated for at sensitivity ``Δ`` holds unchanged **at every order**:

* Laplace(b) calibrated for Δ: the release is the rounding of continuous Laplace(b Δ'/Δ) noise
  added to the snapped values, whose shift is at most Δ'. Rounding is post-processing, so every
  divergence (Rényi of each order, KL, the pure-ε ratio) is at most the continuous mechanism's:
  the whole Rényi curve of Laplace(b) at Δ (data processing, van Erven & Harremoës 2014). (The discrete Laplace that
  secure mode drew before exceeded that curve: 1.5711 against 1.4368 at α = 1.5 for b = 0.5,
  Δ = 1, g = 1.)
* Gaussian(sigma) calibrated for L2 sensitivity Δ: CKS20 Prop. 5 gives
  ``D_α(N_Z(μ, s²) || N_Z(ν, s²)) ≤ α (μ - ν)² / (2 s²)`` for integer shifts, summed over
  coordinates, so the Rényi curve is ``α Δ'^2 / (2 g² s²) ≤ α Δ² / (2 sigma²)``: the same RDP /
  zCDP curve as the continuous Gaussian (convert to (ε, δ) through the RDP curve).

The default granularity is the largest power of two with ``c·g ≤ Δ / 1024`` (noise inflated by
at most 0.1 %), coarsened if needed so that every input within the declared ``bound`` fits the
lattice exactly (``bound/g <= 2^52``). The lattice is a function of declared quantities only
(noise, Δ, norm, n, bound): choosing it from the data's max|x| made neighbours on either side of
a power of two produce different output sets, a leak. Inputs beyond the bound are refused;
``secure_add_noise(..., return_plan=True)`` returns the plan with the inflation paid.

**What it does not guarantee.** The inversion is not constant time: a comparison that 63 bits
cannot decide (probability below 2^-60 per value) takes the exact path, which reads more of the
stream. ``secure=True`` gives no reproducibility (a fresh key per call): for reproducible
lattice noise, publish with a key (:func:`puffer.io.noise_file`, :mod:`puffer.lattice`).

:func:`discrete_laplace` and :func:`discrete_gaussian` draw the discrete Laplace
``P(z) ∝ exp(-|z|/scale)`` and the discrete Gaussian with rational parameters by the rejection
samplers of Canonne, Kamath & Steinke 2020, Alg. 1-3 (ChaCha20, OS entropy).
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from . import _core
from . import _validate as V
from ._streams import KeyedStream, _threads
from .errors import ParameterError
from .lattice import LatticePlan, add_lattice_noise, lattice_plan
from .refs import Ref

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["SecurePlan", "secure_plan", "secure_add_noise", "secure_release", "discrete_laplace", "discrete_gaussian"]

REFERENCES = {
    "secure_plan": (Ref("canonne2020", "Prop 5"),),
    "discrete_laplace": (Ref("canonne2020", "Algorithm 2"),),
    "discrete_gaussian": (Ref("canonne2020", "Algorithm 3"),),
}

#: The plan of a secure release: a :class:`puffer.lattice.LatticePlan`.
SecurePlan = LatticePlan

# The core's exact samplers take num, den < 2^62: den = 2^m with m <= 61.
_MAX_DEN_EXP = 61


def _float(x: Fraction) -> float:
    """x as a float for a message: inf beyond the double range (float() raises OverflowError)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _round_up_dyadic(x: Fraction, bits: int, what: str) -> tuple[int, int]:
    """The smallest num/2^m >= x with num < 2^bits and 0 <= m <= 61, maximising precision; an
    error naming ``what`` when x cannot be held to better than 2^-20 relative that way."""
    m = 0
    while m < _MAX_DEN_EXP and math.ceil(x * 2 ** (m + 1)) < 2**bits:
        m += 1
    num = math.ceil(x * 2**m)
    if num >= 2**bits:
        raise ParameterError(what, _float(x), f"a noise scale below 2^{bits} lattice units; "
                                               "use a coarser granularity")
    if num < 2**20:
        raise ParameterError(what, _float(x), f"a noise scale of at least 2^-{_MAX_DEN_EXP - 20} lattice "
                                               "units (noise / granularity); use a finer granularity")
    return num, 2**m


def secure_plan(noise: Any, n: int, *, sensitivity: float | None, granularity: float | None = None,
                norm: str | None = None, bound: float | None = None) -> SecurePlan:
    """The lattice, padding and law of secure mode (see the module docstring and
    :func:`puffer.lattice.lattice_plan`).

    The lattice depends only on declared quantities (noise, sensitivity, norm, n and the input
    ``bound``), never on the data: a lattice chosen from max|x| let neighbouring inputs on either
    side of a power of two produce distinguishable output sets."""
    if sensitivity is None:
        raise ParameterError("sensitivity", None, "the sensitivity the noise was calibrated for (secure mode)")
    return lattice_plan(noise, n, sensitivity=sensitivity, granularity=granularity, norm=norm, bound=bound)


# float64 lattice points: an array for array / sequence / scalar values (0-d for a scalar), the same
# pandas type (untyped: Any) for a Series or DataFrame
@overload
def secure_add_noise(values: NDArray[Any] | Sequence[float] | float, noise: Any, *, sensitivity: float | None, granularity: float | None = None,
                     bound: float | None = None, norm: str | None = None, out: np.ndarray | None = None,
                     threads: int | None = None, return_plan: Literal[False] = False) -> NDArray[np.float64]: ...
@overload
def secure_add_noise(values: NDArray[Any] | Sequence[float] | float, noise: Any, *, sensitivity: float | None, granularity: float | None = None,
                     bound: float | None = None, norm: str | None = None, out: np.ndarray | None = None,
                     threads: int | None = None, return_plan: Literal[True]) -> tuple[NDArray[np.float64], SecurePlan]: ...
@overload
def secure_add_noise(values: Any, noise: Any, *, sensitivity: float | None, granularity: float | None = None,
                     bound: float | None = None, norm: str | None = None, out: np.ndarray | None = None,
                     threads: int | None = None, return_plan: bool = False) -> Any: ...
def secure_add_noise(values: Any, noise: Any, *, sensitivity: float | None, granularity: float | None = None,
                     bound: float | None = None, norm: str | None = None, out: np.ndarray | None = None,
                     threads: int | None = None, return_plan: bool = False) -> Any:
    """``values`` snapped to g·Z plus exact discrete noise, as float64 lattice points.

    ``noise``: Laplace(b) or Gaussian(sigma) (object or ('laplace', {'b': ...}) tuple) calibrated
    for ``sensitivity`` in ``norm`` ('l1' default for Laplace, 'l2' for Gaussian, or
    'coordinate'); ``granularity`` a power of two (default: padding ≤ 0.1 % of the noise).
    ``bound``: the declared bound on |x| (public, like the sensitivity); the default lattice is
    coarsened so that every |x| <= bound is exactly on it. Inputs above the bound -- or, with no
    bound, above 2^52 granularity units -- are an error, never clipped, and the lattice never
    depends on the values themselves.
    ``out`` (float64, same shape, C-contiguous) may be ``values`` itself. With
    ``return_plan=True`` returns ``(array, SecurePlan)`` (lattice, padding, inflation paid).

    >>> import numpy as np, puffer
    >>> y = puffer.add_noise(np.array([1.0, 2.0]), ("laplace", {"b": 1.0}), secure=True,
    ...                      sensitivity=1.0, granularity=2**-10)
    >>> bool(np.all(y * 2**10 == np.round(y * 2**10)))
    True
    """
    # bool and inexact integers refused; a pandas Series / DataFrame comes back as one
    src, wrap = V.release_values("values", values)
    src = np.asarray(src, dtype=np.float64)
    if not np.isfinite(src).all():
        raise ParameterError("values", "an array with non-finite entries", "finite values")
    plan = secure_plan(noise, src.size, sensitivity=sensitivity, granularity=granularity, norm=norm,
                       bound=bound)
    res = secure_release(src, plan, bound=bound, out=out, threads=threads)
    if out is None:
        res = wrap(res)
    return (res, plan) if return_plan else res


def secure_release(values: NDArray[np.float64], plan: SecurePlan, *, bound: float | None = None,
                   out: np.ndarray | None = None, threads: int | None = None) -> NDArray[np.float64]:
    """``values`` (finite float64) snapped to the lattice of ``plan`` plus its law's noise drawn
    with a fresh OS key: what :func:`secure_add_noise` and ``Mechanism.release(secure=True)`` do
    once the plan is known. Values above ``bound`` or beyond 2^52 lattice steps are refused."""
    src = np.asarray(values, dtype=np.float64)
    if not np.isfinite(src).all():
        raise ParameterError("values", "an array with non-finite entries", "finite values")
    max_abs = float(np.abs(src).max()) if src.size else 0.0
    if bound is not None and max_abs > bound:
        raise ParameterError("values", max_abs, f"|x| <= bound = {bound!r} (the declared input bound)")
    if max_abs > 2.0 ** (52 + plan.g_exp):
        raise ParameterError("values", max_abs, f"|x| <= 2^52 * granularity = {2.0 ** (52 + plan.g_exp):.3g} "
                             "(declare bound= to get a lattice that holds larger inputs)")
    stream = KeyedStream(os.urandom(32))  # a fresh secret per call: never reproducible
    if out is None:
        res: NDArray[np.float64] = add_lattice_noise(np.ascontiguousarray(src), plan, rng=stream, threads=threads)
        return res
    res = add_lattice_noise(src, plan, rng=stream, out=out, threads=threads)
    return res


def discrete_laplace(scale: Fraction | float, size: int, *, threads: int | None = None) -> np.ndarray:
    """Exact discrete Laplace integers, ``P(z) ∝ exp(-|z|/scale)``; scale rounded up to num/2^m."""
    sc = Fraction(V.positive("scale", scale)) if not isinstance(scale, Fraction) else scale
    if sc <= 0:
        raise ParameterError("scale", scale, "a number > 0")
    num, den = (sc.numerator, sc.denominator) if sc.numerator < 2**62 and sc.denominator < 2**62 \
        else _round_up_dyadic(sc, 62, "scale")
    return _core.sampling.secure_sample(0, num, den, 1, V.integer("size", size, lo=0), _threads(threads))


def discrete_gaussian(sigma2: Fraction | float, size: int, *, threads: int | None = None) -> np.ndarray:
    """Exact discrete Gaussian integers, ``P(z) ∝ exp(-z^2/(2 sigma2))``; sigma2 rounded up to N/2^d."""
    s2 = Fraction(V.positive("sigma2", sigma2)) if not isinstance(sigma2, Fraction) else sigma2
    if s2 <= 0:
        raise ParameterError("sigma2", sigma2, "a number > 0")
    if s2.numerator < 2**49 and s2.denominator <= 2**57 and (s2.denominator & (s2.denominator - 1)) == 0:
        num, den = s2.numerator, s2.denominator
    else:
        num, den = _round_up_dyadic(s2, 41, "sigma^2 / granularity^2")
    t = math.isqrt(num // den) + 1
    return _core.sampling.secure_sample(1, num, den, t, V.integer("size", size, lo=0), _threads(threads))
