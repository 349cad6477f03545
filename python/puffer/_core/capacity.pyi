"""
Capacity bounded DP (Chaudhuri, Imola, Machanavajjhala 2019): f-divergence primitives, closed forms, certified restricted Renyi divergences. Noise codes: 0 Gaussian, 1 Laplace.
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['alpha_div_to_renyi', 'conjugate', 'f_divergence_discrete', 'gaussian_renyi', 'generator', 'gram_renyi2', 'laplace_kl', 'laplace_lin_kl', 'laplace_renyi', 'poly_moments', 'renyi_to_alpha_div', 'restricted_renyi_batch', 'restricted_renyi_poly']
def alpha_div_to_renyi(d: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex) -> float:
    ...
def conjugate(kind: typing.SupportsInt | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex = 2.0) -> float:
    """
    Fenchel conjugate f*(u).
    """
def f_divergence_discrete(kind: typing.SupportsInt | typing.SupportsIndex, p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], alpha: typing.SupportsFloat | typing.SupportsIndex = 2.0) -> float:
    ...
def gaussian_renyi(alpha: typing.SupportsFloat | typing.SupportsIndex, v: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> float:
    ...
def generator(kind: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex = 2.0) -> float:
    """
    f(t) for kind 0 KL, 1 TV, 2 alpha-divergence (even extension).
    """
def gram_renyi2(noise: typing.SupportsInt | typing.SupportsIndex, s: typing.SupportsFloat | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex) -> float:
    ...
def laplace_kl(x: typing.SupportsFloat | typing.SupportsIndex) -> float:
    ...
def laplace_lin_kl(x: typing.SupportsFloat | typing.SupportsIndex) -> float:
    ...
def laplace_renyi(alpha: typing.SupportsFloat | typing.SupportsIndex, v: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> float:
    ...
def poly_moments(noise: typing.SupportsInt | typing.SupportsIndex, s: typing.SupportsFloat | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex) -> tuple[list[float], list[float]]:
    ...
def renyi_to_alpha_div(r: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex) -> float:
    ...
def restricted_renyi_batch(noise: typing.SupportsInt | typing.SupportsIndex, s: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], alpha: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], k: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    Certified upper values d_hi over arrays of shifts/orders (warm-started along the arrays).
    """
def restricted_renyi_poly(noise: typing.SupportsInt | typing.SupportsIndex, s: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, coef_init: typing.Any = None, gap_tol: typing.SupportsFloat | typing.SupportsIndex = 1e-10) -> dict:
    """
    Certified bracket [d_lo, d_hi] of D^{poly_k}_{R,alpha}(Y + s || Y), standardized noise.
    """
