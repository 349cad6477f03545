"""
Samplers of the partially-private-data mechanisms. Use puffer.partial.
"""
from __future__ import annotations
import numpy
import typing
__all__: list[str] = ['categorical_fill', 'discrete_laplace_fill', 'knorm_fill', 'trunc_laplace_fill', 'wem_lattice_mh']
def categorical_fill(log_weights: numpy.ndarray, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def discrete_laplace_fill(t: typing.SupportsFloat | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, values: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def knorm_fill(norm_code: typing.SupportsInt | typing.SupportsIndex, d: typing.SupportsInt | typing.SupportsIndex, scale: typing.SupportsFloat | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, center: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def trunc_laplace_fill(center: typing.Any, c0: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, lo: typing.SupportsFloat | typing.SupportsIndex, hi: typing.SupportsFloat | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def wem_lattice_mh(mode: typing.SupportsInt | typing.SupportsIndex, J: typing.SupportsInt | typing.SupportsIndex, x: numpy.ndarray, total: numpy.ndarray, concentration: typing.Any, start_state: numpy.ndarray, kappa: typing.SupportsFloat | typing.SupportsIndex, max_step: numpy.ndarray, steps: typing.SupportsInt | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, accepted: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
