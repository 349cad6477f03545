"""
Privacy profiles (hockey-stick divergences) of additive noise and Renyi -> (eps, delta) conversions (certified upper bounds). Family codes as in puffer._core.renyi.Family.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['custom_hockey_stick', 'custom_hockey_stick_lipschitz', 'hockey_stick', 'hockey_stick1', 'max_shift_hockey', 'rdp_to_dp_cks', 'rdp_to_dp_optimal', 'rdp_to_dp_optimal_batch']
def custom_hockey_stick(logpdf: collections.abc.Callable[[numpy.typing.NDArray[numpy.float64]], numpy.typing.ArrayLike], eps: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex, scale_hint: typing.SupportsFloat | typing.SupportsIndex = 1.0, breaks: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = []) -> float:
    """
    Certified upper bound on H_{e^eps}(p(. - u) || p) for a vectorised Python log-density (not renormalized; GIL held).
    """
def custom_hockey_stick_lipschitz(logpdf: collections.abc.Callable[[numpy.typing.NDArray[numpy.float64]], numpy.typing.ArrayLike], eps: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex, L: typing.SupportsFloat | typing.SupportsIndex, scale_hint: typing.SupportsFloat | typing.SupportsIndex = 1.0, breaks: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [], rtol: typing.SupportsFloat | typing.SupportsIndex = 0.001, atol: typing.SupportsFloat | typing.SupportsIndex = 0.0, max_nodes: typing.SupportsInt | typing.SupportsIndex = 1048576) -> tuple[float, float, int]:
    """
    (upper bound on H_{e^eps}(p(. - u) || p) certified from |d/dx log p| <= L, the matching lower sum over the window, nodes used) for a vectorised Python log-density (not renormalized; GIL held).
    """
def hockey_stick(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], u: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.float64]:
    """
    Certified upper bounds on H_{e^eps}(zeta(. - u) || zeta) for flat arrays eps (>= 0) and u >= 0.
    """
def hockey_stick1(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    Scalar version of hockey_stick.
    """
def max_shift_hockey(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, delta: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    Largest standardized shift u with certified hockey_stick(eps; u) <= delta (from below, relative 1e-12).
    """
def rdp_to_dp_cks(alpha: typing.SupportsFloat | typing.SupportsIndex, rho: typing.SupportsFloat | typing.SupportsIndex, delta: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    eps of (alpha, rho)-Renyi -> (eps, delta) by Canonne, Kamath & Steinke 2020, Prop 12 (rounded up, >= 0).
    """
def rdp_to_dp_optimal(alpha: typing.SupportsFloat | typing.SupportsIndex, rho: typing.SupportsFloat | typing.SupportsIndex, delta: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    eps of the optimal single-order (alpha, rho)-Renyi -> (eps, delta) conversion, certified by a dual bound (never above rdp_to_dp_cks).
    """
def rdp_to_dp_optimal_batch(alpha: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], rho: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], delta: typing.SupportsFloat | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    rdp_to_dp_optimal over flat arrays of orders and bounds.
    """
