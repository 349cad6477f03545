from __future__ import annotations
import typing
__all__: list[str] = ['parallel_sum_of_squares']
def parallel_sum_of_squares(n: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> float:
    ...
