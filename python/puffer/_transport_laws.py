"""Discrete laws with masses kept in log space, and binomial-type builders (Seeman et al. 2024,
Ding 2022).

W_inf is decided by the *supports* and the tails of the laws: an atom of mass 1e-400 still
forces transport (Seeman et al. 2024, "W_inf is tail-driven"). A float64 mass cannot hold 1e-400
(it underflows to 0 and the atom would vanish), and cumulative sums of float masses near 1
cannot order two upper-tail levels 1 - 1e-20 and 1 - 1e-25 (the naive method reports 84 where
the truth is 100). :class:`LogDiscreteDist` keeps log-masses, so nothing underflows, and its
W_inf compares log CDFs from the left in the lower half and log survival functions from the
right in the upper half (the "whichever tail representation is < 1/2" rule of Seeman et al. 2024).

Underflow rule: :meth:`LogDiscreteDist.to_dist` converts to a float :class:`DiscreteDist` only
when every mass is at least the smallest normal double 2^-1022 (~2.2e-308); below that a float
mass either vanishes or loses relative precision (subnormal), which could under-report W_inf,
so the conversion raises :class:`NumericalError` instead. Pass the log law to
:func:`puffer.transport.w_inf` directly in that case.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from scipy import special, stats

from . import _validate as V
from .dist import DiscreteDist
from .errors import NumericalError, ParameterError

__all__ = ["LogDiscreteDist", "binomial_law", "poisson_binomial_law"]

_SMALLEST_NORMAL = 2.0 ** -1022
_LOG_HALF = math.log(0.5)


class LogDiscreteDist:
    """A finitely supported law on R with masses stored as natural logarithms.

    Parameters
    ----------
    atoms : array_like, shape (n,)
        Support points (finite); sorted and merged (log-sum-exp of equal atoms).
    log_probs : array_like, shape (n,)
        Log-masses; ``-inf`` marks a structural zero (the atom is dropped). They must
        log-sum-exp to 0 within ``tol`` unless ``normalize=True``.

    Examples
    --------
    >>> from puffer.transport import binomial_law, w_inf
    >>> P, Q = binomial_law(99, 0.5, shift=1), binomial_law(99, 0.0)
    >>> w_inf(P, Q)        # the far upper tail of P (masses 2^-99) still counts
    100.0
    """

    __slots__ = ("_atoms", "_logp")

    def __init__(self, atoms: Any, log_probs: Any, *, normalize: bool = False, tol: float = 1e-9):
        a = V.float_array("atoms", atoms, ndim=1)
        try:
            lp = np.asarray(log_probs, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ParameterError("log_probs", log_probs, "an array of log-masses") from exc
        if lp.ndim != 1 or lp.shape[0] != a.shape[0]:
            raise ParameterError("log_probs", f"array of shape {lp.shape}", f"one log-mass per atom ({a.shape[0]})")
        if np.isnan(lp).any() or (lp == np.inf).any():
            raise ParameterError("log_probs", "NaN or +inf", "log-masses in [-inf, 0]")
        uniq, inv = np.unique(a, return_inverse=True)
        merged = np.full(uniq.shape[0], -np.inf)
        with np.errstate(invalid="ignore"):
            np.logaddexp.at(merged, inv.reshape(-1), lp)
        keep = merged > -np.inf
        if not keep.any():
            raise ParameterError("log_probs", "all -inf", "at least one atom of positive mass")
        uniq, merged = uniq[keep], merged[keep]
        total = float(special.logsumexp(merged))
        if normalize:
            merged = merged - total
        elif abs(total) > tol:
            raise ParameterError("log_probs", f"log of the total = {total!r}",
                                 f"masses summing to 1 within tol={tol} (or normalize=True)")
        uniq = np.ascontiguousarray(uniq)
        merged = np.ascontiguousarray(merged)
        uniq.flags.writeable = False
        merged.flags.writeable = False
        self._atoms, self._logp = uniq, merged

    @property
    def atoms(self) -> np.ndarray:
        return self._atoms

    @property
    def log_probs(self) -> np.ndarray:
        return self._logp

    @property
    def probs(self) -> np.ndarray:
        """exp(log_probs); tail masses below ~5e-324 underflow to 0 here (use log_probs)."""
        return cast(np.ndarray, np.exp(self._logp))

    @property
    def dim(self) -> int:
        return 1

    @property
    def is_exact(self) -> bool:
        return False

    def __len__(self) -> int:
        return int(self._atoms.shape[0])

    def log_cdf(self) -> np.ndarray:
        """log F(atom_i) = log sum_{k<=i} p_k, by cumulative log-sum-exp."""
        return np.logaddexp.accumulate(self._logp)

    def log_sf(self) -> np.ndarray:
        """log S(atom_i) = log sum_{k>i} p_k (``-inf`` for the top atom), summed from the right."""
        rev = np.logaddexp.accumulate(self._logp[::-1])[::-1]
        return np.append(rev[1:], -np.inf)

    def level_keys(self) -> np.ndarray:
        """Monotone keys of the end levels: log F where F <= 1/2, else -log S (Seeman et al. 2024)."""
        lf = self.log_cdf()
        ls = self.log_sf()
        with np.errstate(over="ignore"):
            return np.where(lf <= _LOG_HALF, lf, -ls)

    def cdf(self, x: Any) -> Any:
        xs = np.asarray(x, dtype=np.float64)
        idx = np.searchsorted(self._atoms, xs, side="right")
        c = np.concatenate(([0.0], np.exp(self.log_cdf())))
        out = c[idx]
        return float(out) if out.ndim == 0 else out

    def mean(self) -> float:
        return float(np.dot(np.exp(self._logp), self._atoms))

    def shift(self, v: float) -> LogDiscreteDist:
        v = V.real("v", v)
        return LogDiscreteDist(self._atoms + v, self._logp, normalize=True)

    def to_dist(self) -> DiscreteDist:
        """The float :class:`DiscreteDist` with masses exp(log_probs).

        Raises :class:`NumericalError` if a mass is below 2^-1022 (it would vanish or lose
        relative precision, and W_inf could then be under-reported; see the module docstring).
        """
        if float(self._logp.min()) < math.log(_SMALLEST_NORMAL):
            k = int(np.argmin(self._logp))
            raise NumericalError(
                f"atom {self._atoms[k]!r} has mass exp({self._logp[k]:.6g}) below 2^-1022: a float64 "
                "DiscreteDist cannot represent it faithfully; use the LogDiscreteDist directly")
        return DiscreteDist(self._atoms, np.exp(self._logp), normalize=True)

    def __repr__(self) -> str:
        return (f"LogDiscreteDist(n={len(self)}, support=[{self._atoms[0]}, {self._atoms[-1]}], "
                f"min log-mass={float(self._logp.min()):.6g})")


def binomial_law(n: int, p: float, *, shift: float = 0.0) -> LogDiscreteDist:
    """Law of ``shift + Binomial(n, p)`` with log-masses (scipy's log pmf, computed without
    forming the tiny masses; Seeman et al. 2024). Structural zeros (p = 0 or 1) are exact.

    >>> binomial_law(3, 0.5).probs
    array([0.125, 0.375, 0.375, 0.125])
    """
    n = V.integer("n", n, lo=0)
    p = V.real("p", p, lo=0.0, hi=1.0, expected="a probability in [0, 1]")
    shift = V.real("shift", shift)
    k = np.arange(n + 1, dtype=np.float64)
    if p == 0.0 or p == 1.0 or n == 0:
        lp = np.full(n + 1, -np.inf)
        lp[0 if p == 0.0 else n] = 0.0
    else:
        lp = stats.binom.logpmf(k, n, p)
    return LogDiscreteDist(k + shift, lp, normalize=True)


def poisson_binomial_law(ps: Sequence[float], *, shift: float = 0.0) -> LogDiscreteDist:
    """Law of ``shift + sum_k Bernoulli(ps[k])`` (independent), by the O(V^2) convolution of
    Ding 2022 carried out in log space (log-sum-exp), so no tail mass underflows.

    >>> poisson_binomial_law([0.5, 0.5]).probs
    array([0.25, 0.5 , 0.25])
    """
    arr = V.float_array("ps", ps, ndim=1, allow_empty=True)
    if ((arr < 0) | (arr > 1)).any():
        raise ParameterError("ps", ps, "probabilities in [0, 1]")
    shift = V.real("shift", shift)
    lp = np.array([0.0])
    with np.errstate(divide="ignore"):
        for pk in arr:
            l1, l0 = math.log(pk) if pk > 0 else -math.inf, math.log1p(-pk) if pk < 1 else -math.inf
            a = np.append(lp + l0, -np.inf)
            b = np.insert(lp + l1, 0, -np.inf)
            lp = np.logaddexp(a, b)
    k = np.arange(lp.shape[0], dtype=np.float64)
    return LogDiscreteDist(k + shift, lp, normalize=True)
