from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['taut_string']
def taut_string(shifts: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], sigma2: typing.Any = None) -> numpy.typing.NDArray[numpy.float64]:
    """
    Greatest convex minorant allocation a_t of cumulative shifts (weights sigma2 or unit).
    """
