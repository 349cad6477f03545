"""Witness statistics for the empirical auditor: functions of an output that separate two secrets.

Witness statistics T(y) for the empirical auditor: large T means "y looks like it came from
the first secret". Any function fixed before the evaluation samples are seen gives valid bounds
(data processing); a good one gives tight bounds.

* :class:`ModelStatistic` — the log-likelihood ratio log p(y | s_i) - log p(y | s_j) of the
  *declared* model: the framework's conditional law of the query convolved with the
  mechanism's noise (its ``logpdf``). The optimal test (Neyman-Pearson) when the declaration is
  right; when the release is broken it is merely suboptimal, never invalid.
* :class:`HistogramStatistic` — black box: the log ratio of smoothed counts on quantile bins of
  the first half of the samples (1-D outputs; R^d outputs are first projected on the
  difference of the coordinate-wise medians).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["ModelStatistic", "HistogramStatistic", "model_statistic_available"]

_BLOCK = 1 << 15


def _logsumexp_rows(a: NDArray[np.float64]) -> NDArray[np.float64]:
    m = np.max(a, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out: NDArray[np.float64] = m[:, 0] + np.log(np.sum(np.exp(a - m), axis=1))
        return out


def model_statistic_available(noise: Any) -> bool:
    """Whether ``noise`` has a log-density, which the model likelihood-ratio statistic needs."""
    return noise is not None and callable(getattr(noise, "logpdf", None))


class ModelStatistic:
    """T(y) = log sum_x mu_i(x) zeta(y - x) - log sum_x mu_j(x) zeta(y - x)."""

    name = "model likelihood ratio"

    def __init__(self, P: Any, Q: Any, noise: Any):
        self._laws = []
        for law in (P, Q):
            atoms = np.asarray(law.atoms, dtype=np.float64)
            self._laws.append((atoms if atoms.ndim > 1 else atoms[:, None], np.log(np.asarray(law.probs, float))))
        self._noise = noise
        self._dim = self._laws[0][0].shape[1]

    def _logmix(self, y: NDArray[np.float64], k: int) -> NDArray[np.float64]:
        atoms, lw = self._laws[k]
        out = np.empty(y.shape[0])
        for s in range(0, y.shape[0], _BLOCK):
            yy = y[s:s + _BLOCK]
            diff = yy[:, None, :] - atoms[None, :, :]            # (b, m, d)
            if self._dim == 1:
                lp = np.asarray(self._noise.logpdf(diff[..., 0].ravel()), float).reshape(diff.shape[:2])
            elif getattr(self._noise, "d", None) == self._dim:      # a product law (IID)
                lp = np.asarray(self._noise.logpdf(diff.reshape(-1, self._dim)), float).reshape(diff.shape[:2])
            else:                    # a 1-D law added to each coordinate independently
                lp = np.asarray(self._noise.logpdf(diff.ravel()), float).reshape(diff.shape).sum(axis=2)
            out[s:s + _BLOCK] = _logsumexp_rows(lp + lw[None, :])
        return out

    def __call__(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        y = np.asarray(y, dtype=np.float64)
        y = y[:, None] if y.ndim == 1 else y
        with np.errstate(invalid="ignore"):
            t = self._logmix(y, 0) - self._logmix(y, 1)
        # -inf - -inf (far outside both supports of a bounded noise): no evidence either way
        t = np.where(np.isnan(t), 0.0, t)
        # Rounded to 1e-8: where the true ratio is flat (Laplace beyond the atoms) the last bits
        # of T are rounding noise that depends on the float grid of y, and y = x + noise sits on
        # a coarser grid for larger |x|; events cut inside that noise would measure the
        # floating-point artifact of additive noise (Mironov 2012; see puffer.secure), not the
        # mechanism's law.
        return np.round(t, 8)


class HistogramStatistic:
    """Log ratio of smoothed bin counts, bins at quantiles of the pooled training sample."""

    name = "histogram likelihood ratio"

    def __init__(self, yp: NDArray[np.float64], yq: NDArray[np.float64], bins: int = 64):
        yp = np.asarray(yp, dtype=np.float64)
        yq = np.asarray(yq, dtype=np.float64)
        self._u = None
        if yp.ndim > 1:
            u = np.median(yp, axis=0) - np.median(yq, axis=0)
            nrm = float(np.linalg.norm(u))
            self._u = u / nrm if nrm > 0 else np.eye(yp.shape[1])[0]
            yp, yq = yp @ self._u, yq @ self._u
        pooled = np.concatenate([yp, yq])
        edges = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
        self._edges = edges
        cp = np.bincount(np.searchsorted(edges, yp, side="right"), minlength=edges.size + 1)
        cq = np.bincount(np.searchsorted(edges, yq, side="right"), minlength=edges.size + 1)
        self._t = np.log((cp + 0.5) / (yp.size + 0.5)) - np.log((cq + 0.5) / (yq.size + 0.5))

    def __call__(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        y = np.asarray(y, dtype=np.float64)
        if self._u is not None:
            y = y @ self._u
        t: NDArray[np.float64] = self._t[np.searchsorted(self._edges, y, side="right")]
        return t
