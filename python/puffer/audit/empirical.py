"""Empirical privacy auditor: a lower confidence bound on a mechanism's privacy loss, from samples.

Empirical privacy auditor: a lower confidence bound on the privacy loss of a mechanism *as
released*, end to end, from samples (in the spirit of DP-Sniper, Bichsel et al. 2021, and
Google's stochastic tester / dp_auditorium, for Pufferfish frameworks).

For each audited prior theta and secret pair (s_i, s_j) the data X is drawn from the two
conditional laws of the query (the framework holds them), the mechanism's ``release`` is run on
it, and a witness statistic T (see :mod:`puffer.audit.statistic`) scores each output. Samples
are split in two halves: the first chooses the event or partition, the second bounds it, so the
confidence statement is exact (no selection bias).

* eps-PP and (eps, delta)-PP claims: events E_t = {T >= t}; the threshold maximising the
  first half's bound is kept; on the second half Clopper-Pearson bounds give
  eps >= log((P(E) - delta) / Q(E)).
* (alpha, eps)-RPP claims: the output is partitioned into K cells by quantiles of T (K chosen
  on the first half); the second half's cell counts give a lower confidence bound on
  D_alpha(P || Q) by data processing, minimised over the simultaneous Clopper-Pearson box of
  the cell probabilities (:func:`puffer.audit._stats.renyi_partition_bound`).

Both directions of every pair are audited; the per-test level is (1 - confidence) / (number of
tests) (Bonferroni), so ``report.lower`` is a lower bound on the true eps with probability at
least ``confidence`` for the whole report, and a correct mechanism is flagged ``violated`` with
probability at most ``1 - confidence``.
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ._stats import pp_event_bound, renyi_partition_bound, renyi_plugin
from .report import AuditReport, PairAudit
from .statistic import HistogramStatistic, ModelStatistic, model_statistic_available

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..guarantees import PP, RPP

__all__ = ["empirical", "claim_of"]

_K_CHOICES = (2, 4, 8, 16, 32, 64, 128)
_N_THRESHOLDS = 400


# ---------------------------------------------------------------------------- the claim
def claim_of(mechanism: Any, claimed: Any = None, alpha: float | None = None
             ) -> tuple[str, float, float | None, float, PP | RPP]:
    """(kind, eps, alpha, delta, claim object) audited for ``mechanism``.

    * PP(eps, delta) -> an (eps, delta)-PP claim; ApproxRPP -> its ``to_pp()`` (Prop 4.1 / C.1);
    * RPP(alpha, eps) -> an RPP claim at alpha (alpha = inf: eps-PP);
    * RPPCurve -> the RPP claim at ``alpha`` (default: the mechanism's target alpha; a mechanism
      calibrated to an (eps, delta)-PP target without alpha: that PP, through ``to_pp(delta)``;
      else alpha = 2).

    ``claimed``: a number replaces the eps of that claim (same kind, alpha, delta); a PP or RPP
    object is audited as given."""
    from ..guarantees import PP, RPP, ApproxRPP, RPPCurve

    g = getattr(mechanism, "guarantee", None)
    if isinstance(claimed, (PP, RPP)):
        g = claimed
    if alpha is not None:
        alpha = V.alpha("alpha", alpha)
    if isinstance(g, ApproxRPP):
        g = g.to_pp()
    if isinstance(g, RPPCurve):
        t = getattr(mechanism, "target", None) or {}
        if alpha is None and t.get("alpha") is None and t.get("delta") is not None:
            g = g.to_pp(float(t["delta"]))        # calibrated to (eps, delta)-PP: audit that
        else:
            g = g.at(float(alpha or t.get("alpha") or 2.0))
    elif alpha is not None and not (isinstance(g, RPP) and g.alpha == alpha):
        raise ParameterError("alpha", alpha, f"None: the audited claim {g!r} has no free order")
    if isinstance(g, RPP) and math.isinf(g.alpha):
        g = PP(g.eps, 0.0, g.provenance)
    if isinstance(g, PP):
        kind, eps, a, d = "pp", g.eps, None, g.delta
    elif isinstance(g, RPP):
        kind, eps, a, d = "rpp", g.eps, g.alpha, 0.0
    else:
        raise ParameterTypeError("mechanism", mechanism, "a mechanism whose guarantee is PP, RPP, RPPCurve "
                                 "or ApproxRPP (or pass claimed=PP(...) / RPP(...))")
    if claimed is not None and not isinstance(claimed, (PP, RPP)):
        eps = V.nonneg("claimed", claimed)
    return kind, float(eps), a, float(d), g


# ---------------------------------------------------------------------------- pairs
def _resolve_pairs(fw: Any, mechanism: Any, pairs: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """[(theta, (s_i, s_j))] with both secrets possible under theta."""
    def possible(th: Hashable, pr: tuple[Any, ...]) -> bool:
        return fw.conditional(th, pr[0]) is not None and fw.conditional(th, pr[1]) is not None

    if isinstance(pairs, str):
        if pairs == "all":
            out = [(th, pr) for th in fw.thetas for pr in fw.pairs if possible(th, pr)]
        elif pairs == "worst":
            sens = getattr(mechanism, "sensitivity", None)
            wit = getattr(sens, "witness", None) if getattr(mechanism, "framework", None) is fw else None
            if wit is None:
                wit = fw.w_inf(norm=None if fw.dim == 1 else 2).witness
            out = [(wit[0], tuple(wit[1]))]
        else:
            raise ParameterError("pairs", pairs, "'worst', 'all' or a list of (theta, (s_i, s_j)) / (s_i, s_j)")
    else:
        try:
            items = list(pairs)
        except TypeError:
            raise ParameterTypeError("pairs", pairs, "'worst', 'all' or a list of pairs") from None
        out = []
        for it in items:
            if isinstance(it, (tuple, list)) and len(it) == 2 and isinstance(it[1], (tuple, list)):
                th, pr = it[0], tuple(it[1])
                if th not in fw.thetas:
                    raise ParameterError("pairs", it, f"a prior of the framework ({len(fw.thetas)} priors)")
                for s in pr:
                    fw.conditional(th, s)       # raises on an unknown secret
                if len(pr) != 2 or not possible(th, pr):
                    raise ParameterError("pairs", it, "a pair of two secrets possible under that prior")
                out.append((th, pr))
            elif isinstance(it, (tuple, list)) and len(it) == 2:
                pr = tuple(it)
                got = [(th, pr) for th in fw.thetas if possible(th, pr)]
                if not got:
                    raise ParameterError("pairs", it, "a pair of secrets both possible under some prior")
                out += got
            else:
                raise ParameterError("pairs", it, "(theta, (s_i, s_j)) or (s_i, s_j)")
    if not out:
        raise ParameterError("pairs", pairs, "at least one (prior, pair) with both secrets possible")
    return out


# ---------------------------------------------------------------------------- sampling
def _draw_data(law: Any, n: int, stream: Any) -> NDArray[np.float64]:
    from .. import sampling

    atoms = np.asarray(law.atoms, dtype=np.float64)
    cum = np.cumsum(np.asarray(law.probs, dtype=np.float64))
    u = sampling.draw("uniform", None, n, rng=stream) * cum[-1]
    idx = np.minimum(np.searchsorted(cum, u, side="right"), atoms.shape[0] - 1)
    out: NDArray[np.float64] = atoms[idx]
    return out


def _release(mechanism: Any, x: NDArray[np.float64], stream: Any) -> NDArray[np.float64]:
    from ..mechanisms._base import Mechanism

    if isinstance(mechanism, Mechanism) and mechanism.noise is None:  # an audit, not a publication
        y = np.asarray(mechanism.release(x, rng=stream, allow_unnoised=True), dtype=np.float64)
    else:
        y = np.asarray(mechanism.release(x, rng=stream), dtype=np.float64)
    if y.shape[0] != x.shape[0]:
        raise ParameterError("mechanism.release", f"output of shape {y.shape}", f"one output per input ({x.shape[0]})")
    return y


# ---------------------------------------------------------------------------- one direction
def _pp_direction(t1p: NDArray[np.float64], t1q: NDArray[np.float64], t2p: NDArray[np.float64],
                  t2q: NDArray[np.float64], delta: float, a: float) -> tuple[float, float, float, str]:
    """Events {T >= t}: threshold from half 1, bound on half 2."""
    s1p, s1q = np.sort(t1p), np.sort(t1q)
    pooled = np.concatenate([t1p, t1q])
    cand = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _N_THRESHOLDS + 1)[1:-1]))
    if cand.size == 0:
        cand = np.array([np.inf])
    kp = s1p.size - np.searchsorted(s1p, cand, side="left")
    kq = s1q.size - np.searchsorted(s1q, cand, side="left")
    lo1, est1, _ = pp_event_bound(kp, kq, s1p.size, s1q.size, delta, a)
    key = lo1 if np.any(lo1 > 0) else np.where(np.isfinite(est1), est1, 0.0)
    t = float(cand[int(np.argmax(key))])
    k2p, k2q = int(np.count_nonzero(t2p >= t)), int(np.count_nonzero(t2q >= t))
    lo, est, se = pp_event_bound(k2p, k2q, t2p.size, t2q.size, delta, a)
    wit = f"event T >= {t:.6g}: P = {k2p}/{t2p.size}, Q = {k2q}/{t2q.size}"
    return float(lo), float(est), float(se), wit


def _cells(edges: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.bincount(np.searchsorted(edges, t, side="right"), minlength=edges.size + 1).astype(np.float64)


def _cells_sorted(edges: NDArray[np.float64], s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cell counts of an already sorted sample (cells (-inf, e_0), [e_0, e_1), ...)."""
    out: NDArray[np.float64] = np.diff(np.r_[0, np.searchsorted(s, edges, side="left"), s.size]).astype(np.float64)
    return out


def _rpp_direction(t1p: NDArray[np.float64], t1q: NDArray[np.float64], t2p: NDArray[np.float64],
                   t2q: NDArray[np.float64], alpha: float, a: float) -> tuple[float, float, float, str]:
    """Partition by quantiles of T: K from half 1 (relaxed bound), dual bound on half 2."""
    from ._stats import clopper_pearson

    pooled = np.sort(np.concatenate([t1p, t1q]))
    s1p, s1q = np.sort(t1p), np.sort(t1q)
    best = None
    for K in _K_CHOICES:
        idx = (np.arange(1, K) * (pooled.size / K)).astype(np.int64)
        edges = np.unique(pooled[idx])
        cp, cq = _cells_sorted(edges, s1p), _cells_sorted(edges, s1q)
        per = a / (4.0 * cp.size)
        pa, _ = clopper_pearson(cp, t1p.size, per)
        _, qd = clopper_pearson(cq, t1q.size, per)
        with np.errstate(divide="ignore", over="ignore"):
            S = float(np.sum(np.where(pa > 0, pa * (pa / qd) ** (alpha - 1.0), 0.0)))
        score = math.log(max(S, 1e-300)) / (alpha - 1.0)
        if best is None or score > best[0]:
            best = (score, edges)
    assert best is not None                   # _K_CHOICES is not empty
    edges = best[1]
    cp, cq = _cells(edges, t2p), _cells(edges, t2q)
    lo = renyi_partition_bound(cp, cq, alpha, a)
    est, se = renyi_plugin(cp, cq, alpha)
    wit = f"partition of T into {edges.size + 1} cells at {np.array2string(edges, precision=4, threshold=8)}"
    return float(lo), float(est), float(se), wit


# ---------------------------------------------------------------------------- progress
class _Progress:
    """A bar redrawn in place on a terminal; into a pipe or a file, plain lines (one every
    ``PLAIN_EVERY`` seconds and the last), never carriage-return redraws."""

    def __init__(self, total: int, label: str, enabled: bool | None):
        from .._progress import _isatty

        self.total, self.label = total, label
        self.tty = _isatty(sys.stderr)
        self.on = self.tty if enabled is None else bool(enabled)
        self.k = 0
        self.last = time.monotonic()

    def step(self, what: str = "") -> None:
        from .._progress import PLAIN_EVERY

        self.k += 1
        if not self.on:
            return
        if self.tty:
            w = 24
            f = int(w * self.k / max(self.total, 1))
            sys.stderr.write(f"\r  audit {self.label} [{'#' * f}{'.' * (w - f)}] {self.k}/{self.total} {what[:40]:<40}")
            if self.k >= self.total:
                sys.stderr.write("\n")
        elif self.k >= self.total or time.monotonic() - self.last >= PLAIN_EVERY:
            self.last = time.monotonic()
            sys.stderr.write(f"  audit {self.label}: {self.k}/{self.total} {what[:40]}\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------- entry point
def empirical(mechanism: Any, framework: Any = None, *, pairs: Any = "worst", n: int = 200_000,
              confidence: float = 0.99, rng: Any = None, claimed: Any = None, alpha: float | None = None,
              statistic: str = "auto", progress: bool | None = None) -> AuditReport:
    """Audit a mechanism from samples of its ``release`` on data drawn from the framework.

    Parameters
    ----------
    mechanism : Mechanism
        A calibrated mechanism (``guarantee``, ``release``, ``framework``, ``noise``).
    framework : Framework, optional
        The framework whose conditional laws the data are drawn from (default: the
        mechanism's own; another one audits the claim under other priors).
    pairs : str or list
        ``"worst"`` (the sensitivity's witness prior and pair), ``"all"``, or a list of
        ``(theta, (s_i, s_j))`` or ``(s_i, s_j)`` (every prior where both are possible).
    n : int
        Outputs per secret and per (prior, pair), half to choose the witness, half to bound it.
    confidence : float
        The report's lower bound holds simultaneously with this probability.
    rng : None, int, SeedSequence, numpy Generator or puffer.sampling.Stream
        The randomness of the data and the outputs (numpy's convention).
    claimed : None, float, PP or RPP
        None (the mechanism's guarantee, see :func:`claim_of`), a number (the eps of a
        different claim of the same kind: how the auditor's power is tested) or a PP / RPP.
    alpha : float, optional
        The Rényi order audited for an RPP curve (default: see :func:`claim_of`).
    statistic : str
        ``"auto"`` (the declared model's likelihood ratio when the noise has a ``logpdf``,
        else ``"histogram"``), ``"model"`` or ``"histogram"`` (black box).
    progress : bool, optional
        Show a progress bar on stderr (default: when stderr is a terminal).

    Returns
    -------
    AuditReport
        With ``.lower``, ``.claimed``, ``.violated``, ``.ratio``, ``.witness``.

    Examples
    --------
    >>> import puffer
    >>> m = puffer.mechanisms.Wasserstein(puffer.models.correlated_pair(), eps=1.0)
    >>> r = puffer.audit.empirical(m, n=20_000, rng=1)
    >>> r.violated, r.claimed, 0.0 < r.lower < 1.0
    (False, 1.0, True)
    """
    kind, eps, a_ord, delta, claim = claim_of(mechanism, claimed, alpha)
    n = V.integer("n", n, lo=200, hi=1 << 30)
    confidence = V.real("confidence", confidence, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                        expected="a confidence level in (0, 1)")
    if statistic not in ("auto", "model", "histogram"):
        raise ParameterError("statistic", statistic, "'auto', 'model' or 'histogram'")
    from ..framework import Framework
    from ..sampling import as_stream

    fw = getattr(mechanism, "framework", None) if framework is None else framework
    if not isinstance(fw, Framework):
        raise ParameterTypeError("framework", fw, "a puffer.Framework (the mechanism has none)")
    if not callable(getattr(mechanism, "release", None)):
        raise ParameterTypeError("mechanism", mechanism, "a mechanism with release(values, rng=)")
    noise = getattr(mechanism, "noise", None)
    use_model = statistic == "model" or (statistic == "auto" and model_statistic_available(noise))
    if use_model and not model_statistic_available(noise):
        raise ParameterError("statistic", statistic, f"'histogram': the noise {noise!r} has no logpdf")
    todo = _resolve_pairs(fw, mechanism, pairs)
    level = (1.0 - confidence) / (2 * len(todo))
    stream = as_stream(rng)
    children = stream.spawn(4 * len(todo))
    h1 = n // 2
    t0 = time.perf_counter()
    bar = _Progress(len(todo), type(mechanism).__name__, progress)
    results: list[PairAudit] = []
    for k, (th, (si, sj)) in enumerate(todo):
        P, Q = fw.conditional(th, si), fw.conditional(th, sj)
        yp = _release(mechanism, _draw_data(P, n, children[4 * k]), children[4 * k + 1])
        yq = _release(mechanism, _draw_data(Q, n, children[4 * k + 2]), children[4 * k + 3])
        if use_model:
            T: Callable[[NDArray[np.float64]], NDArray[np.float64]] = ModelStatistic(P, Q, noise)
        else:
            T = HistogramStatistic(yp[:h1], yq[:h1])
        tp, tq = T(yp), T(yq)
        for (ps, qs, lab) in ((tp, tq, (si, sj)), (-tq, -tp, (sj, si))):
            args = (ps[:h1], qs[:h1], ps[h1:], qs[h1:])
            if kind == "pp":
                lo, est, se, wit = _pp_direction(*args, delta, level)
            else:
                lo, est, se, wit = _rpp_direction(*args, cast(float, a_ord), level)  # an RPP claim has its order
            results.append(PairAudit(th, lab, lo, est, se, wit))
        bar.step(f"{th!r} {si!r} vs {sj!r}")
    seconds = time.perf_counter() - t0
    w = max(results, key=lambda r: (r.lower, r.estimate))
    return AuditReport(mechanism=type(mechanism).__name__, kind=kind, claimed=eps, alpha=a_ord, delta=delta,
                       lower=w.lower, estimate=w.estimate, se=w.se, confidence=confidence, n=n,
                       statistic=(ModelStatistic.name if use_model else HistogramStatistic.name),
                       witness=w, pairs=tuple(results), samples=2 * n * len(todo), seconds=seconds, claim=claim)


def audit_many(mechanisms: Sequence[tuple[str, Any]], **kw: Any) -> list[tuple[str, AuditReport]]:
    """(label, report) for each (label, mechanism), with the same keyword arguments."""
    return [(lab, empirical(m, **kw)) for lab, m in mechanisms]
