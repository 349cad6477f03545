from __future__ import annotations
import typing
__all__: list[str] = ['hold_pool_mutex_for_tests', 'max_threads', 'parallel_sum_of_squares', 'pool_workers']
def hold_pool_mutex_for_tests(ms: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Test hook: a background thread holds the pool mutex for ms milliseconds; returns once it holds it (fork tests).
    """
def max_threads() -> int:
    """
    The largest threads= any kernel accepts.
    """
def parallel_sum_of_squares(n: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> float:
    """
    Exercises the pool end to end (tests): sum of i^2 for i < n, one task per 1024.
    """
def pool_workers() -> int:
    """
    Worker threads of the largest pool started so far.
    """
