from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['markov_drift_walks', 'markov_peak_bytes', 'markov_prior_operations', 'markov_skip_plan', 'markov_sum_laws', 'markov_w_inf', 'markov_w_inf_stats', 'markov_window_drift', 'markov_workspace_bytes', 'poisson_binomial']
def markov_drift_walks(atoms_a: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], mass_a: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], atoms_b: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], mass_b: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], eta: typing.SupportsFloat | typing.SupportsIndex, T: typing.SupportsInt | typing.SupportsIndex = 1, k: typing.SupportsInt | typing.SupportsIndex = 2) -> tuple[float, float]:
    """
    Tests of the skipping certificate (docs/long-chains.md, Theorem 6): the upper and lower W_inf walks of
    two plain laws whose levels may each move by a factor exp(+-eta) (levels with the rounding bound of a
    chain of length T with k states). Equal: every such perturbation has this W_inf.
    """
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
def markov_skip_plan(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, prior: typing.SupportsInt | typing.SupportsIndex = 0, eta: typing.SupportsFloat | typing.SupportsIndex = 0.0001, window: typing.SupportsInt | typing.SupportsIndex = 0) -> dict[str, typing.Any]:
    """
    The skipping plan of one prior (docs/long-chains.md; eta: the drift target, by default that of
    markov_w_inf): usable, window m, period p, omega (p * k: the
    certified log-oscillation per step of each phase and state), reps (one position per phase), lo / hi
    (the interior).
    """
def markov_sum_laws(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, reference: bool = False, progress: typing.Any = None) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    CSR conditional laws of sum_t values[X_t] given X_i = a, for every prior, position and state;
    for laws flagged in the last output (one flag per law) the masses are natural logs (unnormalised).
    reference=True: the log-space reference arithmetic. progress: None or callable(done, total).
    """
def markov_w_inf(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, reference: bool = False, progress: typing.Any = None, positions: typing.Any = None, full: bool = False, window: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.bool]]:
    """
    W_inf between the laws given X_i = a and X_i = b, shape (n_theta, T, k(k-1)/2); -1 where a secret is
    impossible; per prior, whether some law needed the extended range. reference=True: log-space
    reference arithmetic. progress: None or callable(done, total) (units: priors x positions).
    Interruptible (Ctrl-C raises KeyboardInterrupt within ~0.1 s). positions: None (all) or the positions
    to compute (the others are NaN). full=True: the direct computation at every position; False (default):
    interior positions whose value a representative certifies are not computed (docs/long-chains.md;
    the same values). window: the skipping's window m (0: chosen per prior; tests).
    """
def markov_w_inf_stats(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, full: bool = False, window: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float64], dict[str, int]]:
    """
    markov_w_inf (every position) with what the skipping did (docs/long-chains.md): the W_inf table and a
    dict: planned (priors with a usable plan), rounds (the most rounds of representatives of one prior),
    representatives, certified (interior positions given a representative's value), direct (positions
    computed directly). Tests and benchmarks.
    """
def markov_window_drift(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, m: typing.SupportsInt | typing.SupportsIndex, period: typing.SupportsInt | typing.SupportsIndex = 1, prior: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.ndarray:
    """
    The certified window oscillation omega[phase, state] of Lemma 2 of docs/long-chains.md: for
    interior positions t, t + period of that phase, |log L_{t+period}(s) / L_t(s)| <= omega for every atom s.
    """
def markov_workspace_bytes(k: typing.SupportsInt | typing.SupportsIndex, T: typing.SupportsInt | typing.SupportsIndex, span: typing.SupportsInt | typing.SupportsIndex, reference: bool = False, period: typing.SupportsInt | typing.SupportsIndex = 1) -> float:
    """
    Bytes one worker of the Markov kernel allocates (backward store + buffers); period: matrices per prior.
    """
def poisson_binomial(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], skip: typing.SupportsInt | typing.SupportsIndex = -1) -> numpy.typing.NDArray[numpy.float64]:
    """
    pmf of a sum of independent Bernoulli(p_k) (leaving out user `skip`), underflow-safe.
    """
