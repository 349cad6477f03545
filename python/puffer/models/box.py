"""Delta_G certified over the whole credible box of a fitted Markov framework.

A framework fitted by :func:`puffer.models.fit_markov` has a finite Theta (the estimate and the
box's extreme matrices) inside a credible box B that holds the true matrices at the stated
level. ``fw.w_inf(over="box")`` bounds Delta_G over *every* chain of B (each group's matrices
anywhere in its box, rows on the simplex, with the fit's initial law: the chain's own
stationary law or the given one), not only over Theta:

* the corner maximum -- Delta_G over Theta -- is a lower bound of the supremum over B;
* the certified bound is an upper bound, by branch and bound over sub-boxes C of B. For a
  sub-box and a chain theta_c in it, every chain theta' of C has path laws given X_t = a within
  a factor e^(+-delta) of theta_c's, delta = the sum over the steps of the spread of
  log theta'(x, y) / theta_c(x, y) over C plus that of the initial law (Song, Wang & Chaudhuri
  2017, Thm A.3, applied to the laws conditioned on a secret: the ratio of the conditional laws
  is the path ratio divided by its mean, so its log lies within +-(max - min) of the path's).
  Each cumulative level F(s) = P(S <= s | X_t = a) and each tail P(S > s | X_t = a) then moves by
  at most that factor, so a level comparison of theta_c's W_inf walk that holds with a log
  margin above 2 delta holds for every chain of C: the least z at which every comparison holds
  with that margin bounds W_inf over C (the supports do not change inside B: its entries are
  > 0). For a time-homogeneous 2-state box delta is taken path by path (the log-ratio of a path
  is a combination of the loops 0 -> 0, 1 -> 1 and the cycle 0 -> 1 -> 0, see
  :func:`_two_state_delta`), about half the step-wise sum. The sub-box with the largest bound (best first) is split in two along the entry whose
  spread weighs most in delta (k = 2 with at most 8 free entries, e.g. time-homogeneous chains
  or periods up to 4: with more, halving one entry barely moves delta), until every sub-box is
  certified at the corner maximum or the budget of sub-boxes or seconds is spent; the bound is
  the largest over the sub-boxes left.

How tight. delta grows with T times the width of a sub-box (each step adds its spread), while
the level comparisons that decide W_inf near the worst chain hold with log margins of ~0.1 (in
the bulk of the laws, measured): sub-boxes must be ~T / 0.05 times narrower than the box. On a
time-homogeneous 2-state fit (bench/RESULTS.md, "Fitted Theta") the corner maximum is certified
for T <= 12, the bound is 1.1-1.3 times it for T = 24-48, and it reaches group DP's
T (max v - min v) for T in the hundreds and for periodic boxes (too many free entries to
split): :class:`BoxBound` reports both numbers and their ratio, and the bound is the one to
release with where the guarantee must cover B (:meth:`MarkovChainFramework.box_framework`).
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as V
from ..guarantees import round_up
from ..refs import Ref

if TYPE_CHECKING:
    from . import MarkovChainFramework

__all__ = ["BoxBound", "box_w_inf"]


@dataclass(frozen=True)
class BoxBound:
    """Delta_G over the fit's credible box: ``bound`` (certified: no chain of the box has a
    larger Delta_G), ``corner_max`` (Delta_G over Theta, attained in the box: a lower bound of
    the supremum), ``ratio`` = bound / corner_max (how loose at most), ``certified_at_corner``
    (the bound equals the corner maximum: the supremum is known exactly), ``boxes`` (sub-boxes
    evaluated), ``open_boxes`` (sub-boxes left uncertified at the corner maximum when the budget
    ran out), ``delta`` (the largest e-factor exponent of a sub-box left), ``level`` (the box's
    level) and ``seconds``; values in the units of the state values."""

    bound: float
    corner_max: float
    boxes: int
    open_boxes: int
    delta: float
    level: float
    seconds: float
    group: float
    corner_witness: Any = None

    @property
    def ratio(self) -> float:
        return self.bound / self.corner_max if self.corner_max > 0 else (1.0 if self.bound == 0 else math.inf)

    @property
    def certified_at_corner(self) -> bool:
        return self.bound == self.corner_max

    def summary(self) -> str:
        head = (f"Delta_G over the whole credible box (level {self.level:g}): <= {self.bound:g} (certified, "
                f"{self.boxes} sub-boxes, {self.seconds:.2f} s); over Theta's corners {self.corner_max:g}")
        if self.certified_at_corner:
            return head + " -- the box's supremum is the corner maximum"
        return head + (f" -- the bound is at most {self.ratio:.3g}x the supremum ({self.open_boxes} sub-boxes "
                       f"left at the budget, log-level margin 2 x {self.delta:.3g}; group DP: {self.group:g})")

    def to_dict(self) -> dict[str, Any]:
        return {"over": "box", "bound": self.bound, "corner_max": self.corner_max, "ratio": self.ratio,
                "boxes": self.boxes, "open_boxes": self.open_boxes, "delta": self.delta, "level": self.level}


def _entry_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The range of each entry over the rows of the box on the simplex: [lo, hi] intersected
    with [1 - sum of the others' hi, 1 - sum of the others' lo]."""
    slo = lo.sum(axis=-1, keepdims=True)
    shi = hi.sum(axis=-1, keepdims=True)
    return np.maximum(lo, 1.0 - (shi - hi)), np.minimum(hi, 1.0 - (slo - lo))


def _center(lo: np.ndarray, hi: np.ndarray, est: np.ndarray | None) -> np.ndarray:
    """A chain of the sub-box: for k = 2 the middle of each row's free entry; otherwise the
    estimate (it lies in the whole box, the only box split for k > 2)."""
    k = lo.shape[-1]
    if k == 2:
        o = 0.5 * (lo[..., [0, 1], [1, 0]] + hi[..., [0, 1], [1, 0]])       # P(0 -> 1), P(1 -> 0)
        c = np.empty(lo.shape)
        c[..., 0, 1], c[..., 0, 0] = o[..., 0], 1.0 - o[..., 0]
        c[..., 1, 0], c[..., 1, 1] = o[..., 1], 1.0 - o[..., 1]
        return c
    assert est is not None
    return np.array(est, dtype=np.float64)


def _step_spreads(lo: np.ndarray, hi: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per phase: max over entries of log(hi / c) - min over entries of log(lo / c) (a path
    takes one entry per step)."""
    P = lo.shape[0]
    with np.errstate(divide="ignore"):
        up = (np.log(hi) - np.log(c)).reshape(P, -1).max(axis=1)
        dn = (np.log(lo) - np.log(c)).reshape(P, -1).min(axis=1)
    return np.asarray(up - dn, dtype=np.float64)


def _products(M: np.ndarray) -> np.ndarray:
    Q = M[0].copy()
    for p in range(1, M.shape[0]):
        Q = Q @ M[p]
    return np.asarray(Q, dtype=np.float64)


def _init_spread(lo: np.ndarray, hi: np.ndarray, pi_c: np.ndarray, stationary: bool) -> float:
    """Spread of log pi'(x) / pi_c(x) over the sub-box's chains (0 for a given initial law):
    pi' = pi' Q' for the product Q' of one period's matrices, so pi'(x) lies in [min_u Q'(u, x),
    max_u Q'(u, x)], and Q' lies entrywise between the products of the lower and of the upper
    bounds (non-negative matrices). For k = 2 time-homogeneous chains pi'(1) = p / (p + q) is
    monotone in p = P(0 -> 1) and q = P(1 -> 0): its range is attained at two corners."""
    if not stationary:
        return 0.0
    k = lo.shape[-1]
    if k == 2 and lo.shape[0] == 1:
        p = (lo[0, 0, 1], hi[0, 0, 1])
        q = (lo[0, 1, 0], hi[0, 1, 0])
        one = (p[0] / (p[0] + q[1]), p[1] / (p[1] + q[0]))
        plo = np.array([1.0 - one[1], one[0]])
        phi = np.array([1.0 - one[0], one[1]])
        plo, phi = plo * (1 - 1e-12), np.minimum(phi * (1 + 1e-12), 1.0)
    else:
        Qlo, Qhi = _products(lo), np.minimum(_products(hi), 1.0)
        plo, phi = Qlo.min(axis=0), Qhi.max(axis=0)
    with np.errstate(divide="ignore"):
        return float((np.log(phi) - np.log(pi_c)).max() - (np.log(plo) - np.log(pi_c)).min())


# the most free entries (2 per phase for k = 2) a box is split along
_MAX_SPLIT_DIMS = 8


def _two_state_delta(lo: np.ndarray, hi: np.ndarray, c: np.ndarray, T: int, stationary: bool) -> float:
    """delta of a time-homogeneous 2-state sub-box, path by path: with r_xy = log theta'(x, y) /
    theta_c(x, y), a path's log-ratio is L = n00 r00 + n11 r11 + m (r01 + r10) + e r_extra
    (n01, n10 differ by e <= 1, m the smaller), so over the paths of T - 1 steps L lies within
    (T - 1) [min, max](r00, r11, (r01 + r10) / 2) widened by the extra switch (at most 2 R on
    each side, R = max |r_xy|). Each difference of two of r00 (decreasing in p' = theta'(0, 1)),
    r11 (decreasing in q' = theta'(1, 0)) and (r01 + r10) / 2 (increasing in both) is monotone in
    p' and in q', so the largest spread over the sub-box is at one of its four corners. The
    stationary law adds the spread of log pi'(1) / pi'(0) = log p' / q' (monotone too)."""
    pc, qc = float(c[0, 1]), float(c[1, 0])
    worst, R, init = 0.0, 0.0, 0.0
    for p in (float(lo[0, 1]), float(hi[0, 1])):
        for q in (float(lo[1, 0]), float(hi[1, 0])):
            r00, r01 = math.log((1.0 - p) / (1.0 - pc)), math.log(p / pc)
            r10, r11 = math.log(q / qc), math.log((1.0 - q) / (1.0 - qc))
            f = (r00, r11, 0.5 * (r01 + r10))
            worst = max(worst, max(f) - min(f))
            R = max(R, abs(r00), abs(r01), abs(r10), abs(r11))
            init = max(init, abs(math.log(p / q) - math.log(pc / qc)))
    return max(T - 1, 0) * worst + 4.0 * R + (init if stationary else 0.0)


@dataclass
class _Box:
    lo: np.ndarray     # (P, k, k) entry ranges on the simplex
    hi: np.ndarray
    z: float = math.inf
    delta: float = math.inf
    weights: Any = None


def _evaluate(fw: MarkovChainFramework, box: _Box, est: np.ndarray, stationary: bool, init: Any,
              below: float) -> None:
    """The certified bound (grid steps) of W_inf over the chains of ``box``, at most ``below``
    when that is already known not to hold (then ``below``)."""
    from . import markov_chain, periodic_stationary_distribution, stationary_distribution
    from .theta import _MARGIN, _dense_laws, _rows, _w_inf_rows

    T, k, P = fw.length, len(fw.state_names), box.lo.shape[0]
    if (box.lo <= 0).any():
        box.z, box.delta = math.inf, math.inf
        return
    c = _center(box.lo, box.hi, est)
    if stationary:
        pi = stationary_distribution(c[0]) if fw.period is None else periodic_stationary_distribution(c)
    else:
        pi = np.asarray(init, dtype=np.float64)
    sp = _step_spreads(box.lo, box.hi, c)
    steps = np.bincount(np.arange(T - 1) % P, minlength=P).astype(np.float64) if T > 1 else np.zeros(P)
    d = float(sp @ steps) + _init_spread(box.lo, box.hi, pi, stationary)
    if k == 2 and fw.period is None:          # path by path (never larger than the step-wise sum)
        d = min(d, _two_state_delta(box.lo[0], box.hi[0], c[0], T, stationary))
    d = round_up(d * (1 + 1e-12) + 1e-12)
    box.delta = d
    box.weights = steps[:, None] * (np.log(box.hi) - np.log(box.lo)).reshape(P, -1)
    M = c[None] if fw.period is not None else c
    # the chain's matrices as the framework holds them (a 4-D array needs period=P)
    cf = markov_chain(M if fw.period is None else M, T, init=pi if not stationary else "stationary",
                      values=fw.state_values, period=fw.period)
    L = _dense_laws(fw, cf.transitions, cf.initial_laws)[0]
    margin = 2.0 * d + _MARGIN
    worst = 0.0
    for a in range(k):
        for b in range(a + 1, k):
            ra = np.arange(T) * k + a
            rb = np.arange(T) * k + b
            w = _w_inf_rows(_rows(L, ra), _rows(L, rb), below, margin)
            worst = max(worst, w)
            if worst >= below:
                box.z = below
                return
    box.z = worst


def box_w_inf(fw: MarkovChainFramework, *, max_boxes: int = 1024, seconds: float = 30.0) -> BoxBound:
    """Delta_G over every chain of the fitted framework's credible box (see the module
    docstring): a certified upper bound beside the corner maximum. ``max_boxes`` sub-boxes at
    most (per group) and ``seconds`` of splitting at most (the sub-box with the largest bound
    is split first); where they run out, the bound is the largest over the sub-boxes left
    (still certified, possibly loose: ``ratio`` says how loose).
    """
    from . import _check_memory
    from .theta import _fit_of

    fit = _fit_of(fw)
    nb = V.integer("max_boxes", max_boxes, lo=1)
    secs = V.positive("seconds", seconds)
    k, T = len(fw.state_names), fw.length
    cells = float(T * k) * float(T * int(fw._vals.max() - fw._vals.min()) + 1)
    # a sub-box's levels are dense (T k rows over the T span + 1 sums): ~8 arrays of that size
    _check_memory("fw", 8.0 * 8.0 * cells, "a shorter chain for the box bound (its sub-boxes' levels are dense "
                  "tables of T k x (T span + 1) doubles); fw.w_inf() over Theta stores no law")
    t0 = time.perf_counter()
    W = fw._w_table(0, len(fw.priors), fw._threads)
    corner = fw._sensitivity_from_table(W)               # Theta: every prior lies in the box
    target = float(W.max())                              # the corner maximum in grid steps
    group = float(fw.group_sensitivity) if fw.group_sensitivity is not None else math.inf
    span = int(fw._vals.max() - fw._vals.min())
    full = float(fw.length * span)                       # W_inf never exceeds the sum's range (grid steps)
    stationary = isinstance(fit.init, str)
    G = fit.estimate.shape[0]
    worst, boxes, left, dmax = 0.0, 0, 0, 0.0
    for g in range(G):
        lo, hi = _entry_ranges(fit.lower[g], fit.upper[g])
        est = fit.estimate[g]
        heap: list[tuple[float, int, _Box]] = []

        def push(b: _Box, heap: list[tuple[float, int, _Box]], est: np.ndarray) -> None:
            nonlocal boxes
            _evaluate(fw, b, est, stationary, fit.init, math.inf)
            boxes += 1
            heapq.heappush(heap, (-b.z, boxes, b))

        push(_Box(lo, hi), heap, est)
        spent = 1
        # best first: the sub-box with the largest bound is split next, so the bound (the largest
        # over the sub-boxes left) falls as fast as the budget allows
        while heap:
            b = heap[0][2]
            if b.z <= target or not math.isfinite(b.delta):
                break
            # (k = 2 with few free entries: splitting one of many entries barely moves delta)
            if not (len(fw.state_names) == 2 and 2 * b.lo.shape[0] <= _MAX_SPLIT_DIMS and spent + 2 <= nb
                    and time.perf_counter() - t0 < secs):
                break
            heapq.heappop(heap)
            # split the free entry (k = 2: P(x -> 1 - x) of one phase) that weighs most in delta
            w = b.weights.reshape(b.lo.shape[0], 2, 2)
            p, x = (int(v) for v in np.unravel_index(int(np.argmax(w[:, [0, 1], [1, 0]])), (b.lo.shape[0], 2)))
            y = 1 - x
            mid = 0.5 * (b.lo[p, x, y] + b.hi[p, x, y])
            for a_, b_ in ((b.lo[p, x, y], mid), (mid, b.hi[p, x, y])):
                nlo, nhi = b.lo.copy(), b.hi.copy()
                nlo[p, x, y], nhi[p, x, y] = a_, b_
                nlo[p, x, x], nhi[p, x, x] = 1.0 - b_, 1.0 - a_
                push(_Box(nlo, nhi), heap, est)
                spent += 1
        for _, _, b in heap:
            worst = max(worst, b.z)
            if b.z > target:
                left += 1
                dmax = max(dmax, b.delta)
    bound_grid = min(worst, full)
    bound = fw._to_units(bound_grid)
    return BoxBound(float(bound), float(corner.value), boxes, left, dmax, fit.level, time.perf_counter() - t0,
                    group, corner.witness)


# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "box_w_inf": (Ref("song2017", "Thm A.3"), Ref("song2017", "Wasserstein mechanism (Thm 3.2)")),
}
