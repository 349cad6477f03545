from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['WITNESS_BAND', 'dagwm_log_moments', 'dagwm_merge', 'markov_dagwm_plans', 'markov_thm2', 'thm2_laws', 'thm2_plans']
def dagwm_log_moments(logm: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], s: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], idx: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], a2m1: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.float64]:
    """
    Upper bounds on log sum_j exp(logm[j] + a2m1 * s[idx[j]]) per plan (CSR offsets): the DAGWM
    exponential-moment cost of Pierquin et al. 2024, Thm 4.5.
    """
def dagwm_merge(logm: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], idx: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]:
    """
    Per plan, entries with equal displacement index merged into one upper-bounding log-mass:
    (logm, idx, offsets) of the merged plans.
    """
def markov_dagwm_plans(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, progress: typing.Any = None) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64], numpy.ndarray, numpy.typing.NDArray[numpy.bool]]:
    """
    Interruptible (Ctrl-C); progress: None or callable(done, total). DAGWM plan data of every existing (prior, position, pair) of the Markov sum query: displacements
    v = (x - x')(1 + 2^-51), log-masses log max(m, 2^-1022), CSR offsets, the (n_theta, T, k(k-1)/2)
    mask of pairs whose secrets are possible, and the per-prior log-space flags.
    """
def markov_thm2(trans: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], init: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], values: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], T: typing.SupportsInt | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 1e-09, progress: typing.Any = None) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.typing.NDArray[numpy.bool]]:
    """
    Theorem 2 of Ding 2022 for every prior, position and state pair a < b of the Markov sum query:
    (eta, kind, key, dmax), each of shape (n_theta, T, k(k-1)/2) (kind -1: a secret is impossible),
    and the per-prior log-space flags. Interruptible (Ctrl-C); progress: None or callable(done, total).
    """
def thm2_laws(atoms_p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], probs_p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets_p: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], atoms_q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], probs_q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets_q: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], eps: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int8], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
    """
    Theorem 2 of Ding 2022 on the quantile couplings of K pairs of float laws (CSR): (eta, kind, key,
    dmax) per pair, dmax = sup |x - x'| over the plan.
    """
def thm2_plans(d: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], mass: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], row: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], col: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], eps: typing.SupportsFloat | typing.SupportsIndex, mass_rtol: typing.SupportsFloat | typing.SupportsIndex = 0.0, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int8], numpy.typing.NDArray[numpy.float64]]:
    """
    Theorem 2 of Ding 2022 on K plans in CSR form: (eta, kind, key) per plan; eta is a feasible
    (lower) root, kind 0 = unconstrained (eta = inf), 1 = row, 2 = column; key = binding atom.
    """
WITNESS_BAND: float = 1e-09
