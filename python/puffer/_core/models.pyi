from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['markov_sum_laws', 'markov_w_inf', 'poisson_binomial']
def markov_sum_laws(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    CSR conditional laws of sum_t values[X_t] given X_i = a, for every prior, position and state;
    for priors flagged in the last output the masses are natural logs (unnormalised).
    """
def markov_w_inf(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    W_inf between the laws given X_i = a and X_i = b, shape (n_theta, T, k(k-1)/2); -1 where a secret is impossible.
    """
def poisson_binomial(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], skip: typing.SupportsInt | typing.SupportsIndex = -1) -> numpy.typing.NDArray[numpy.float64]:
    """
    pmf of a sum of independent Bernoulli(p_k) (leaving out user `skip`), underflow-safe.
    """
