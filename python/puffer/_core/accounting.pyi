from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['bfs_multi', 'ext_mul', 'footprint_max_pair', 'footprint_max_single', 'group_factor']
def bfs_multi(indptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], indices: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], sources: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], cap: typing.SupportsInt | typing.SupportsIndex = -1) -> numpy.typing.NDArray[numpy.int64]:
    """
    Multi-source BFS distances on a CSR graph; -1 where not reached (within cap steps).
    """
def ext_mul(a: typing.SupportsFloat | typing.SupportsIndex, n: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    a * n with 0 * inf = inf.
    """
def footprint_max_pair(indptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], indices: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], self_ok: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8], t1: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], t2: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> tuple[float, int, int, int, int]:
    """
    max over footprint pairs (S, T) of sum_{S xor T} t1 + sum_{S and T} t2: (value, s, t, terms, evaluated).
    """
def footprint_max_single(indptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], indices: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], t1: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> tuple[float, int, int, int, int]:
    """
    max over footprints S of sum_{i in S} t1_i: (value, s, -1, terms, evaluated).
    """
def group_factor(n: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    [n]_eps = expm1(eps n)/expm1(eps), rounded up; [n]_0 = n, [inf]_eps = inf.
    """
