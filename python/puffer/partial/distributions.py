"""Noise laws of the partially-private-data mechanisms: densities, normalisers and samplers.

Noise laws of the partially-private-data mechanisms (Seeman, Reimherr & Slavkovic, "Formal
privacy for partially private data"): pmf/pdf including normalisers, and seedable samplers.

* :func:`discrete_laplace_pmf` / :func:`discrete_laplace_sample`: P(k) = (1 - a)/(1 + a) a^|k|,
  a = exp(-rate) on Z (the case-study noise "DiscreteLaplace(eps/Delta)", read as rate eps/Delta).
* :func:`truncated_laplace_logpdf` / :func:`truncated_laplace_sample`: the exponential mechanism with
  |.| loss on an interval (Example 1, Eq. 13).
* :func:`knorm_logpdf` / :func:`knorm_sample`: density exp(-||v||_K / s) / (s^d d! vol(K)) (Thm 10;
  Hardt & Talwar 2010), K the l1, l2 or l_inf unit ball.
* :func:`dirichlet_multinomial_logpmf` / :func:`dirichlet_multinomial_sample`: the prior base measure
  of WEM variant (c) in §4.2, with the corrected normaliser (the printed formula swaps
  Gamma(y_j) / Gamma(a_j + 1) and uses A = alpha s_t; here A = sum_j a_j).

Samplers accept ``rng=`` (None, int, SeedSequence, Generator or a :class:`puffer.sampling.Stream`)
and draw from the Philox streams of the C++ core, except the Dirichlet-multinomial, which uses
numpy's Philox bit generator keyed from the same stream (reproducible by ``rng=`` as well).

>>> round(float(discrete_laplace_pmf(0, 0.5)), 6), round(float(discrete_laplace_pmf(1, 0.5)), 6)
(0.244919, 0.148551)
>>> round(float(np.exp(dirichlet_multinomial_logpmf([3, 1], [2.0, 2.0]))), 6)   # 8/35
0.228571
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from scipy.special import gammaln

from .. import _validate as V
from ..errors import ParameterError
from . import _streams

__all__ = ["discrete_laplace_pmf", "discrete_laplace_logpmf", "discrete_laplace_cdf", "discrete_laplace_sample",
           "truncated_laplace_logpdf", "truncated_laplace_cdf", "truncated_laplace_sample",
           "knorm_logpdf", "knorm_sample", "knorm_log_normalizer", "norm_code",
           "dirichlet_multinomial_logpmf", "dirichlet_multinomial_sample"]


# ----------------------------------------------------------------------------- discrete Laplace
def discrete_laplace_logpmf(k: Any, rate: float) -> np.ndarray:
    """log P(K = k) for P(k) = (1 - a)/(1 + a) a^|k|, a = exp(-rate)."""
    rate = V.positive("rate", rate)
    k = np.asarray(k)
    if not np.issubdtype(k.dtype, np.integer):
        kf = np.asarray(k, dtype=np.float64)
        if not np.all(kf == np.round(kf)):
            raise ParameterError("k", k, "integers")
        k = kf
    # log((1 - a)/(1 + a)) = log(-expm1(-rate)) - log1p(exp(-rate))
    return cast(np.ndarray, math.log(-math.expm1(-rate)) - math.log1p(math.exp(-rate)) - rate * np.abs(k).astype(np.float64))


def discrete_laplace_pmf(k: Any, rate: float) -> np.ndarray:
    """P(K = k) of the discrete Laplace with rate ``rate`` (scale 1/rate)."""
    return cast(np.ndarray, np.exp(discrete_laplace_logpmf(k, rate)))


def discrete_laplace_cdf(k: Any, rate: float) -> np.ndarray:
    """P(K <= k): a^{-k}/(1 + a) for k < 0 ... closed form a^{|k|}/(1+a) tails."""
    rate = V.positive("rate", rate)
    k = np.floor(np.asarray(k, dtype=np.float64))
    a = math.exp(-rate)
    lower = np.exp(-rate * np.abs(k)) / (1.0 + a)               # k < 0: P(K <= k) = a^{-k}/(1+a)
    upper = 1.0 - np.exp(-rate * (np.abs(k) + 1.0)) / (1.0 + a)  # k >= 0: 1 - a^{k+1}/(1+a)
    return cast(np.ndarray, np.where(k < 0, lower, upper))


def discrete_laplace_sample(rate: float, size: Any = None, *, values: Any = None, rng: Any = None,
                            threads: int | None = None) -> np.ndarray:
    """int64 draws of the discrete Laplace with rate ``rate`` (added to integer ``values`` if given).

    Difference of two geometric variables floor(E1/rate) - floor(E2/rate) (E exponential): the
    exact law up to the double rounding of the exponentials.

    >>> discrete_laplace_sample(0.5, 4, rng=1).dtype
    dtype('int64')
    """
    rate = V.positive("rate", rate)
    if values is not None:
        vals = np.asarray(values)
        if not np.issubdtype(vals.dtype, np.integer):
            raise ParameterError("values", values, "an integer array (the discrete Laplace is added on Z)")
        vals = np.ascontiguousarray(vals, dtype=np.int64)
        if size is not None and tuple(np.atleast_1d(size)) != vals.shape:
            raise ParameterError("size", size, f"None or the shape of values {vals.shape}")
        shape = vals.shape
    else:
        if size is None:
            raise ParameterError("size", None, "a size (or values=)")
        shape = (V.integer("size", size, lo=0),) if np.ndim(size) == 0 else tuple(
            V.integer("size", s, lo=0) for s in size)
        vals = None
    out = np.empty(shape, dtype=np.int64)
    k0, k1, w, start = _streams.take(rng, out.size)
    _streams._C.discrete_laplace_fill(1.0 / rate, k0, k1, w, start, out, vals, _streams.threads(threads))
    return out


# ----------------------------------------------------------------------------- truncated Laplace
def _tl_args(b: float, lo: float, hi: float) -> tuple[float, float, float]:
    b = V.positive("b", b)
    lo, hi = V.real("lo", lo), V.real("hi", hi)
    if not lo < hi:
        raise ParameterError("hi", hi, f"a bound > lo = {lo}")
    return b, lo, hi


def _tl_log_norm(c: np.ndarray, b: float, lo: float, hi: float) -> np.ndarray:
    """log of int_lo^hi exp(-|y - c|/b) dy, stable for c far outside [lo, hi]."""
    A, E = (lo - c) / b, (hi - c) / b
    out = np.empty_like(c)
    left = E <= 0          # interval left of the centre: b (e^E - e^A)
    right = A >= 0         # interval right of the centre: b (e^{-A} - e^{-E})
    mid = ~(left | right)
    out[left] = E[left] + np.log(-np.expm1(A[left] - E[left]))
    out[right] = -A[right] + np.log(-np.expm1(A[right] - E[right]))
    out[mid] = np.log(-np.expm1(A[mid]) - np.expm1(-E[mid]))
    return out + math.log(b)


def truncated_laplace_logpdf(y: Any, center: Any, b: float, lo: float, hi: float) -> np.ndarray:
    """log density of Laplace(center, b) truncated to [lo, hi] (-inf outside), normaliser included."""
    b, lo, hi = _tl_args(b, lo, hi)
    y = np.asarray(y, dtype=np.float64)
    c = np.broadcast_to(np.asarray(center, dtype=np.float64), np.broadcast(y, np.asarray(center)).shape)
    y = np.broadcast_to(y, c.shape)
    val = -np.abs(y - c) / b - _tl_log_norm(np.array(c, dtype=np.float64).reshape(-1), b, lo, hi).reshape(c.shape)
    return np.where((y >= lo) & (y <= hi), val, -np.inf)


def truncated_laplace_cdf(y: Any, center: float, b: float, lo: float, hi: float) -> np.ndarray:
    """CDF of Laplace(center, b) truncated to [lo, hi] (for tests and inference)."""
    b, lo, hi = _tl_args(b, lo, hi)
    c = V.real("center", center)
    y = np.clip(np.asarray(y, dtype=np.float64), lo, hi)
    A, E, Y = (lo - c) / b, (hi - c) / b, (y - c) / b
    if A >= 0:    # interval right of the centre: (1 - e^{-(Y-A)}) / (1 - e^{-(E-A)})
        return cast(np.ndarray, np.expm1(-(Y - A)) / math.expm1(-(E - A)))
    if E <= 0:    # left of the centre: (e^{Y-E} - e^{A-E}) / (1 - e^{A-E})
        return cast(np.ndarray, (np.exp(Y - E) - math.exp(A - E)) / -math.expm1(A - E))

    def F(t: Any) -> np.ndarray:
        return cast(np.ndarray, np.where(t < 0, 0.5 * np.exp(t), 1.0 - 0.5 * np.exp(-t)))

    return cast(np.ndarray, (F(Y) - F(np.float64(A))) / (F(np.float64(E)) - F(np.float64(A))))


def truncated_laplace_sample(center: Any, b: float, lo: float, hi: float, size: Any = None, *,
                             rng: Any = None, threads: int | None = None) -> np.ndarray:
    """Draws of Laplace(center, b) truncated to [lo, hi] (exact inverse CDF, tail-stable).

    ``center`` a scalar (then ``size`` draws) or an array (one draw per entry).

    >>> y = truncated_laplace_sample(0.0, 1.0, -0.5, 0.5, 1000, rng=3)
    >>> bool((abs(y) <= 0.5).all())
    True
    """
    b, lo, hi = _tl_args(b, lo, hi)
    th = _streams.threads(threads)
    if np.ndim(center) == 0:
        c0 = V.real("center", center)
        n = V.integer("size", 1 if size is None else size, lo=0)
        out = np.empty(n, dtype=np.float64)
        k0, k1, w, start = _streams.take(rng, n)
        _streams._C.trunc_laplace_fill(None, c0, b, lo, hi, k0, k1, w, start, out, th)
        return out if size is not None else out[0]
    c = np.ascontiguousarray(V.float_array("center", center, allow_empty=True))
    if size is not None:
        raise ParameterError("size", size, "None when center is an array (one draw per centre)")
    out = np.empty(c.shape, dtype=np.float64)
    k0, k1, w, start = _streams.take(rng, out.size)
    _streams._C.trunc_laplace_fill(c.reshape(-1), 0.0, b, lo, hi, k0, k1, w, start, out.reshape(-1), th)
    return out


# ----------------------------------------------------------------------------- K-norm
def norm_code(norm: Any) -> int:
    """1, 2 or inf -> the core's code (1, 2, 0)."""
    if norm in (1, "l1"):
        return 1
    if norm in (2, "l2"):
        return 2
    if norm in (math.inf, np.inf, "inf", "linf"):
        return 0
    raise ParameterError("norm", norm, "1, 2 or inf (the l1, l2, l_inf unit balls)")


def _norm(v: np.ndarray, code: int) -> np.ndarray:
    norms: dict[int, Callable[[], np.ndarray]] = {
        1: lambda: np.abs(v).sum(-1), 2: lambda: np.sqrt((v * v).sum(-1)), 0: lambda: np.abs(v).max(-1)}
    return norms[code]()


def knorm_log_normalizer(norm: Any, dim: int, scale: float) -> float:
    """log of int exp(-||v||_K / s) dv = log(s^d d! vol(K))."""
    code = norm_code(norm)
    d = V.integer("dim", dim, lo=1)
    s = V.positive("scale", scale)
    if code == 1:
        lvol = d * math.log(2.0) - math.lgamma(d + 1)
    elif code == 2:
        lvol = 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d + 1)
    else:
        lvol = d * math.log(2.0)
    return d * math.log(s) + math.lgamma(d + 1) + lvol


def knorm_logpdf(v: Any, norm: Any, scale: float) -> np.ndarray:
    """log density of the K-norm law at v (last axis = coordinates), normaliser included."""
    v = V.float_array("v", v, ndim=(1, 2))
    code = norm_code(norm)
    return -_norm(v, code) / V.positive("scale", scale) - knorm_log_normalizer(norm, v.shape[-1], scale)


def knorm_sample(norm: Any, dim: int, scale: float, size: int | None = None, *, center: Any = None,
                 rng: Any = None, threads: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Draws with density proportional to exp(-||v - center||_K / scale) on R^dim.

    Returns shape (size, dim) (or (dim,) when size is None). ``center`` of shape (dim,) or
    (size, dim) is added. Exact polar sampler (see ``cpp/sampling/knorm.cpp``).

    >>> knorm_sample(2, 3, 1.0, 5, rng=0).shape
    (5, 3)
    """
    code = norm_code(norm)
    d = V.integer("dim", dim, lo=1)
    s = V.positive("scale", scale)
    n = 1 if size is None else V.integer("size", size, lo=0)
    c = None
    if center is not None:
        c = V.float_array("center", center, ndim=(1, 2))
        if c.shape[-1] != d:
            raise ParameterError("center", f"array of shape {c.shape}", f"last dimension {d} (= dim)")
        c = np.ascontiguousarray(np.broadcast_to(c, (n, d)), dtype=np.float64)
    if out is None:
        out = np.empty((n, d), dtype=np.float64)
    elif not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != (n, d):
        raise ParameterError("out", out if not isinstance(out, np.ndarray) else f"array {out.shape} {out.dtype}",
                             f"a float64 array of shape {(n, d)}")
    k0, k1, w, start = _streams.take(rng, n)
    _streams._C.knorm_fill(code, d, s, k0, k1, w, start, n, out, c, _streams.threads(threads))
    return out if size is not None else out[0]


# ----------------------------------------------------------------------------- Dirichlet-multinomial
def _dm_args(a: Any) -> np.ndarray:
    a = V.float_array("concentration", a, ndim=1)
    if (a <= 0).any():
        raise ParameterError("concentration", a, "Dirichlet concentrations > 0 (use a pseudo-count for empty cells)")
    return cast(np.ndarray, a)


def dirichlet_multinomial_logpmf(y: Any, concentration: Any, n: int | None = None) -> np.ndarray:
    """log phi(y; n, a) = log Gamma(A) + log Gamma(n+1) - log Gamma(n+A)
    + sum_j [log Gamma(y_j + a_j) - log Gamma(a_j) - log Gamma(y_j + 1)], A = sum_j a_j.

    ``y`` of shape (..., J) with non-negative integer entries; ``n`` defaults to y.sum(-1)
    (a y not summing to n has probability 0)."""
    a = _dm_args(concentration)
    y = np.asarray(y, dtype=np.float64)
    if y.shape[-1:] != a.shape:
        raise ParameterError("y", f"array of shape {y.shape}", f"last dimension {a.shape[0]} (= len(concentration))")
    if (y < 0).any() or not np.all(y == np.round(y)):
        raise ParameterError("y", y, "non-negative integer counts")
    tot = y.sum(-1)
    nn = tot if n is None else np.float64(V.integer("n", n, lo=0))
    A = a.sum()
    val = (gammaln(A) + gammaln(nn + 1) - gammaln(nn + A)
           + (gammaln(y + a) - gammaln(a) - gammaln(y + 1)).sum(-1))
    return np.where(tot == nn, val, -np.inf)


def dirichlet_multinomial_sample(n: int, concentration: Any, size: int | None = None, *,
                                 rng: Any = None) -> np.ndarray:
    """Draws of DirMult(n, a): p ~ Dirichlet(a), y ~ Multinomial(n, p); int64, shape (size, J).

    Uses numpy's Philox bit generator keyed from the ``rng=`` stream (reproducible by ``rng=``).
    """
    a = _dm_args(concentration)
    n = V.integer("n", n, lo=0)
    m = 1 if size is None else V.integer("size", size, lo=0)
    k0, k1, w, start = _streams.take(rng, m)
    g = np.random.Generator(np.random.Philox(key=(k0 | (k1 << 32), w), counter=[start, 0, 0, 0]))
    p = g.dirichlet(a, size=m)
    out = np.stack([g.multinomial(n, pi) for pi in p]) if m else np.empty((0, a.size), dtype=np.int64)
    out = out.astype(np.int64)
    return out if size is not None else out[0]

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "knorm_sample": (Ref("seeman2024", "Thm 10"),),
    "discrete_laplace_pmf": (Ref("seeman2024", "Lemma 5"),),
}
