"""Secure mode: exact lattice noise that floating-point attacks cannot exploit.

Mironov (CCS 2012) showed that textbook floating-point Laplace noise leaks the input through
the pattern of representable outputs. puffer's secure mode follows the fix used by OpenDP
(see the OpenDP notes on floating-point attacks) with exact integer samplers from Canonne,
Kamath & Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Alg. 1-3:

1. Each input is snapped to the lattice g·Z, ``k = round_half_even(x / g)``, ``g = 2^j``
   (exact: dividing a double by a power of two is exact).
2. An exact integer ``Z`` is drawn with integer arithmetic only (no floating point touches a
   random quantity) from a ChaCha20 stream (RFC 8439, implemented in the core) keyed by 256
   bits of OS entropy per call (getrandom). Laplace noise becomes the discrete Laplace
   ``P(Z = z) ∝ exp(-|z| / tau)``, Gaussian noise the discrete Gaussian
   ``P(Z = z) ∝ exp(-z^2 / (2 s^2))``, with rational ``tau``, ``s^2``.
3. The output is ``(k + Z)·g`` as float64: a deterministic function of the lattice point and
   the exact sample, i.e. post-processing. It is exact when ``|k + Z| <= 2^53``; beyond that the
   rounded float is still a multiple of ``g``. So the output set is the lattice g·Z and its
   distribution depends on the input only through ``k``.

**Padding rule (who pays).** Snapping moves each coordinate by at most ``g/2``, so neighbouring
inputs whose query values differ by sensitivity ``Δ`` map to lattice points differing by at
most ``Δ' = Δ + c·g`` with ``c = n`` (``norm="l1"``), ``c = ceil(sqrt(n))`` (``"l2"``) or
``c = 1`` (``"coordinate"``: every value is its own release / the guarantee is per
coordinate), ``n`` = number of values. The **noise scale is inflated** by ``Δ'/Δ`` and then
rounded **up** to a rational (Laplace ``tau`` to ``num/2^m`` with ``num < 2^62``; Gaussian
``s^2`` to ``N/2^d`` with ``N`` in ``[2^40, 2^41)``, a relative step ≤ 2^-40). The user pays
the factor ``Δ'/Δ`` in noise; the privacy guarantee the noise was calibrated for at
sensitivity ``Δ`` is unchanged:

* Laplace(b) calibrated for L1 sensitivity Δ: the lattice mechanism has privacy-loss ratio
  ``exp(|Σ k_i - k'_i| / tau) ≤ exp(Δ'/(g tau)) ≤ exp(Δ/b)`` -- the same ε-(Pufferfish/DP) bound.
* Gaussian(sigma) calibrated for L2 sensitivity Δ: CKS20 Prop. 5 gives
  ``D_α(N_Z(μ, s²) || N_Z(ν, s²)) ≤ α (μ - ν)² / (2 s²)`` for integer shifts, summed over
  coordinates, so the Rényi curve is ``α Δ'^2 / (2 g² s²) ≤ α Δ² / (2 sigma²)``: the same RDP /
  zCDP curve as the continuous Gaussian (convert to (ε, δ) through the RDP curve).

The default granularity is the largest power of two with ``c·g ≤ Δ / 1024`` (noise inflated by
at most 0.1 %), coarsened if needed so that every input within the declared ``bound`` fits the
lattice exactly (``bound/g <= 2^52``). The lattice is a function of declared quantities only
(noise, Δ, norm, n, bound): choosing it from the data's max|x| made neighbours on either side of
a power of two produce different output sets, a leak. Inputs beyond the bound are refused;
``secure_add_noise(..., return_plan=True)`` returns the :class:`SecurePlan` with the inflation paid.

**What it does not guarantee.** The samplers use rejection loops whose running time depends
on the random draws (not constant time: a timing side channel as in OpenDP, opendp#303);
``secure=True`` gives no reproducibility (no seeding by design). Inputs must be finite.

**Cost.** About 10 64-bit ChaCha20 words and a few 128-bit integer divisions per value,
parallelised over threads (one ChaCha20 stream per 4096-value task, nonce = task index): about
4 M values/s per core for the discrete Laplace and 2 M/s for the discrete Gaussian on the
development machine (bench/suites/sampling.py: ~170x OpenDP's vector Laplace on 2 threads),
versus ~500 M/s per core for the floating-point samplers. Plus the noise inflation Δ'/Δ above.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from . import _core
from . import _validate as V
from .errors import ParameterError
from .sampling import _check_out, _threads, noise_spec

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["SecurePlan", "secure_plan", "secure_add_noise", "discrete_laplace", "discrete_gaussian"]

_NORMS = ("l1", "l2", "coordinate")


@dataclass(frozen=True)
class SecurePlan:
    """What secure mode will do for ``n`` values: the lattice, the padding and the exact noise.

    ``inflation = padded_sensitivity / sensitivity`` is the factor by which the noise scale grows.
    ``kind`` is 0 (discrete Laplace, scale ``num/den`` lattice units) or 1 (discrete Gaussian,
    ``s^2 = num/den`` lattice units², ``t = floor(s) + 1``).
    """

    family: str
    granularity: float
    g_exp: int
    sensitivity: float
    norm: str
    n: int
    padded_sensitivity: Fraction
    inflation: float
    kind: int
    num: int
    den: int
    t: int

    @property
    def lattice_scale(self) -> float:
        """Noise scale on the lattice in input units (b' for Laplace, sigma' for Gaussian)."""
        v = Fraction(self.num, self.den)
        return float(v) * self.granularity if self.kind == 0 else math.sqrt(v) * self.granularity


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


def _granularity_exp(g: float) -> int:
    m, e = math.frexp(g)
    if m != 0.5:
        raise ParameterError("granularity", g, "a power of two, e.g. 2**-20")
    return e - 1


def secure_plan(noise: Any, n: int, *, sensitivity: float | None, granularity: float | None = None,
                norm: str | None = None, bound: float | None = None) -> SecurePlan:
    """Compute the lattice, padding and exact rational noise parameters (see module docstring).

    The lattice depends only on declared quantities (noise, sensitivity, norm, n and the input
    ``bound``), never on the data: a lattice chosen from max|x| let neighbouring inputs on either
    side of a power of two produce distinguishable output sets."""
    kind, params = noise_spec(noise)
    if kind not in ("laplace", "gaussian"):
        raise ParameterError("noise", kind, "Laplace or Gaussian noise in secure mode")
    scale = V.positive("b" if kind == "laplace" else "sigma", params.get("b" if kind == "laplace" else "sigma"))
    if sensitivity is None:
        raise ParameterError("sensitivity", None, "the sensitivity the noise was calibrated for (secure mode)")
    delta = V.positive("sensitivity", sensitivity)
    norm = ("l1" if kind == "laplace" else "l2") if norm is None else norm
    if norm not in _NORMS:
        raise ParameterError("norm", norm, f"one of {_NORMS}")
    n = V.integer("n", n, lo=0)
    c = max(n, 1) if norm == "l1" else (math.isqrt(max(n, 1) - 1) + 1 if norm == "l2" else 1)
    if granularity is None:
        # largest power of two with c g <= delta / 1024, and |x/g| < 2^62 for the inputs
        # (from the exact value: delta / 1024 underflows to 0 for subnormal delta)
        target = Fraction(delta) / (1024 * c)
        g_exp = target.numerator.bit_length() - target.denominator.bit_length()
        while Fraction(2) ** g_exp * c > Fraction(delta) / 1024:
            g_exp -= 1
        if bound is not None:  # keep |x/g| <= 2^52 for every declared input: exact float output
            b = V.positive("bound", bound)
            g_exp = max(g_exp, math.frexp(b)[1] - 52)
    else:
        g = V.positive("granularity", granularity)
        g_exp = _granularity_exp(g)
        if bound is not None:
            V.positive("bound", bound)
    if not -1000 <= g_exp <= 960:
        raise ParameterError("granularity", 2.0**g_exp if g_exp > -1075 else 0.0, "2^k with -1000 <= k <= 960")
    gq = Fraction(2) ** g_exp  # the lattice step, exact
    padded = Fraction(delta) + c * gq
    ratio = padded / Fraction(delta)
    if not math.isfinite(_float(ratio)):
        raise ParameterError("granularity", float(gq), f"a lattice step small against the sensitivity {delta!r} "
                             "(the padding c g would inflate the noise beyond the double range)")
    lat = Fraction(scale) * ratio / gq  # noise scale in lattice units, exact
    if kind == "laplace":
        num, den = _round_up_dyadic(lat, 62, "b / granularity")
        t = 1
    else:
        s2 = lat * lat
        if s2 > 2**48:
            raise ParameterError("granularity", float(gq), f"sigma/granularity <= 2^24 (got {_float(lat):.3g}); "
                                 "use a coarser granularity")
        num, den = _round_up_dyadic(s2, 41, "sigma^2 / granularity^2")
        if den > 2**57:
            raise ParameterError("granularity", float(gq), f"sigma/granularity >= 2^-8 (got {_float(lat):.3g}); "
                                 "use a finer granularity")
        t = math.isqrt(num // den) + 1
    return SecurePlan(kind, float(gq), g_exp, delta, norm, n, padded, float(ratio), 0 if kind == "laplace" else 1,
                      num, den, t)


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
    max_abs = float(np.abs(src).max()) if src.size else 0.0
    plan = secure_plan(noise, src.size, sensitivity=sensitivity, granularity=granularity, norm=norm,
                       bound=bound)
    if bound is not None and max_abs > bound:
        raise ParameterError("values", max_abs, f"|x| <= bound = {bound!r} (the declared input bound)")
    if max_abs > 2.0 ** (52 + plan.g_exp):
        raise ParameterError("values", max_abs, f"|x| <= 2^52 * granularity = {2.0 ** (52 + plan.g_exp):.3g} "
                             "(declare bound= to get a lattice that holds larger inputs)")
    thr = _threads(threads)
    if out is None:
        res = np.array(src, dtype=np.float64, order="C", copy=True)
        _core.sampling.secure_add(plan.kind, plan.num, plan.den, plan.t, plan.g_exp, res.reshape(-1),
                                  res.reshape(-1), thr)
        return (wrap(res), plan) if return_plan else wrap(res)
    else:
        res = _check_out(out, np.dtype(np.float64), src.shape)
        if res is not src:
            np.copyto(res, src)
    _core.sampling.secure_add(plan.kind, plan.num, plan.den, plan.t, plan.g_exp, res.reshape(-1),
                              res.reshape(-1), thr)
    return (res, plan) if return_plan else res


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
