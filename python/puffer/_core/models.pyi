from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['markov_peak_bytes', 'markov_prior_operations', 'markov_sum_laws', 'markov_w_inf', 'markov_workspace_bytes', 'poisson_binomial']
def markov_peak_bytes(k: typing.SupportsInt | typing.SupportsIndex, T: typing.SupportsInt | typing.SupportsIndex, span: typing.SupportsInt | typing.SupportsIndex, n_theta: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, reference: bool = False, period: typing.SupportsInt | typing.SupportsIndex = 1) -> float:
    """
    Upper bound of the bytes the Markov kernel allocates for n_theta priors on `threads` threads
    (0: all), as it schedules them (checkpoints, per-worker buffers, exact images; the output excluded);
    period: transition matrices per prior (1: time-homogeneous).
    """
def markov_prior_operations(k: typing.SupportsInt | typing.SupportsIndex, T: typing.SupportsInt | typing.SupportsIndex, span: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    Multiply-adds of the Markov kernel for one prior (convolutions + passes).
    """
def markov_sum_laws(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, reference: bool = False, progress: typing.Any = None) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    CSR conditional laws of sum_t values[X_t] given X_i = a, for every prior, position and state;
    for laws flagged in the last output (one flag per law) the masses are natural logs (unnormalised).
    reference=True: the log-space reference arithmetic. progress: None or callable(done, total).
    """
def markov_w_inf(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, reference: bool = False, progress: typing.Any = None, positions: typing.Any = None) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    W_inf between the laws given X_i = a and X_i = b, shape (n_theta, T, k(k-1)/2); -1 where a secret is
    impossible; per prior, whether some law needed the extended range. reference=True: log-space
    reference arithmetic. progress: None or callable(done, total) (units: priors x positions).
    Interruptible (Ctrl-C raises KeyboardInterrupt within ~0.1 s). positions: None (all) or the positions
    to compute (the others are NaN).
    """
def markov_workspace_bytes(k: typing.SupportsInt | typing.SupportsIndex, T: typing.SupportsInt | typing.SupportsIndex, span: typing.SupportsInt | typing.SupportsIndex, reference: bool = False, period: typing.SupportsInt | typing.SupportsIndex = 1) -> float:
    """
    Bytes one worker of the Markov kernel allocates (backward store + buffers); period: matrices per prior.
    """
def poisson_binomial(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], skip: typing.SupportsInt | typing.SupportsIndex = -1) -> numpy.typing.NDArray[numpy.float64]:
    """
    pmf of a sum of independent Bernoulli(p_k) (leaving out user `skip`), underflow-safe.
    """
