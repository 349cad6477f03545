"""
Renyi shift divergences of additive noise (certified upper bounds). Families: 0 Gaussian, 1 Laplace, 2 Student-type (k, nu), 3 Logistic, 4 GenGaussian (beta); all standardized.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Family', 'custom_mass', 'custom_shift_divergence', 'custom_shift_divergence_lipschitz', 'max_shift', 'shift_divergence', 'shift_divergence1']
class Family:
    """
    noise family codes (renyi/renyi.hpp)
    
    Members:
    
      gaussian
    
      laplace
    
      student
    
      logistic
    
      gen_gaussian
    """
    __members__: typing.ClassVar[dict[str, Family]]
    gaussian: typing.ClassVar[Family]
    gen_gaussian: typing.ClassVar[Family]
    laplace: typing.ClassVar[Family]
    logistic: typing.ClassVar[Family]
    student: typing.ClassVar[Family]
    @typing.overload
    def __eq__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: typing.Any) -> None:
        ...
    def __getstate__(self) -> int:
        ...
    @typing.overload
    def __gt__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __gt__(self, other: typing.Any) -> None:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __le__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __le__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __lt__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __lt__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __ne__(self, other: Family) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
def custom_mass(logpdf: collections.abc.Callable[[numpy.typing.NDArray[numpy.float64]], numpy.typing.ArrayLike], scale_hint: typing.SupportsFloat | typing.SupportsIndex = 1.0, breaks: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = []) -> tuple[float, float]:
    """
    (mass, error bound) of exp(logpdf) over the real line.
    """
def custom_shift_divergence(logpdf: collections.abc.Callable[[numpy.typing.NDArray[numpy.float64]], numpy.typing.ArrayLike], symmetric: bool, alpha: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex, scale_hint: typing.SupportsFloat | typing.SupportsIndex = 1.0, breaks: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = []) -> float:
    """
    Certified upper bound on D_alpha(p(. - u) || p) for a vectorised Python log-density (GIL held).
    """
def custom_shift_divergence_lipschitz(logpdf: collections.abc.Callable[[numpy.typing.NDArray[numpy.float64]], numpy.typing.ArrayLike], alpha: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex, L: typing.SupportsFloat | typing.SupportsIndex, scale_hint: typing.SupportsFloat | typing.SupportsIndex = 1.0, breaks: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [], rtol: typing.SupportsFloat | typing.SupportsIndex = 0.001, max_nodes: typing.SupportsInt | typing.SupportsIndex = 2097152) -> float:
    """
    Upper bound on D_alpha(p(. - u) || p) certified from |d/dx log p| <= L (GIL held: Python log-density).
    """
def max_shift(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    Largest standardized shift u whose certified D_alpha is <= eps (to relative 1e-12, from below).
    """
def shift_divergence(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], u: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], threads: typing.SupportsInt | typing.SupportsIndex = 0, force_quadrature: bool = False) -> numpy.typing.NDArray[numpy.float64]:
    """
    Certified upper bounds on D_alpha(zeta(. - u) || zeta) for flat arrays alpha (>= 1; 1 = KL, inf ok) and u >= 0.
    """
def shift_divergence1(family: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsFloat | typing.SupportsIndex, nu: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, u: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    Scalar version of shift_divergence (no array conversion).
    """
