"""A year of half-hourly readings (issue 24): exact W_inf at T = 17,520 for a 2-state chain
against an independent computation, and the checkpointed memory bound.

Independent computation: log-space numpy passes (a different algorithm and representation
from the core's extended-range mantissa/exponent passes), at positions 0, 3 and 9 (the convolutions there are short; the passes run the whole year), with an
explicit error budget: every log-mass is within 1e-6 of the truth (T steps of log-add-exp, each
off by a few ulps of |log mass| <= 4e4), and the W_inf walk counts a level comparison as decided
only when the two log-levels differ by more than 1e-5; the walk is run as an upper bound
(undecided = possibly coupled) and as a lower bound (undecided = tied), and both must agree with
the core. The extreme atoms are checked against mpmath closed forms (50 digits).
"""
from __future__ import annotations

import math
import os

import mpmath
import numpy as np
import pytest

from puffer import _core
from puffer.models import markov_chain

T = 17_520
M = np.array([[0.9, 0.1], [0.2, 0.8]])
PI = np.array([2 / 3, 1 / 3])
LM = np.log(M)
NEG = -np.inf


def _forward(i):
    """log P(sum_{t <= i} X_t = s, X_i = a), shape (2, i + 2)."""
    F = np.full((2, i + 2), NEG)
    F[0, 0], F[1, 1] = math.log(PI[0]), math.log(PI[1])
    for t in range(i):
        n = t + 2
        G = np.full((2, i + 2), NEG)
        G[0, :n] = np.logaddexp(F[0, :n] + LM[0, 0], F[1, :n] + LM[1, 0])
        G[1, 1:n + 1] = np.logaddexp(F[0, :n] + LM[0, 1], F[1, :n] + LM[1, 1])
        F = G
    return F


def _backward(positions):
    """log P(sum_{t > i} X_t = s | X_i = a) for each i in positions, shape (2, T - i)."""
    B = np.zeros((2, 1))                 # position T - 1: empty sum
    out = {}
    for i in range(T - 1, -1, -1):
        if i in positions:
            out[i] = B.copy()
        if i == 0:
            break
        n = B.shape[1]
        a = np.full((2, n + 1), NEG)
        b = np.full((2, n + 1), NEG)
        a[:, :n] = B[0][None, :] + LM[:, 0][:, None]    # next state 0 adds 0
        b[:, 1:] = B[1][None, :] + LM[:, 1][:, None]    # next state 1 adds 1
        B = np.logaddexp(a, b)
    return out


def _law(Fa, Ba):
    """log P(S = s, X_i = a) by a log-space convolution of the prefix and suffix laws."""
    n = Fa.size + Ba.size - 1
    out = np.full(n, NEG)
    for s1 in np.nonzero(Fa > NEG)[0]:
        out[s1:s1 + Ba.size] = np.logaddexp(out[s1:s1 + Ba.size], Fa[s1] + Ba)
    return out


def _w_inf(lp, lq, tol=1e-5):
    """(lower, upper) bounds of W_inf of two laws on 0..n-1 given as log masses (quantile
    coupling, Pierquin et al. 2024), comparisons within tol (log) undecided."""
    x = np.nonzero(lp > NEG)[0]
    y = np.nonzero(lq > NEG)[0]
    def levels(l, idx):
        v = l[idx] - np.logaddexp.reduce(l[idx])
        F = np.logaddexp.accumulate(v)
        S = np.concatenate([np.logaddexp.accumulate(v[::-1])[::-1][1:], [NEG]])
        return F, S
    F, SF = levels(lp, x)
    G, SG = levels(lq, y)
    half = math.log(0.5)

    def cmp(u, v, lower):
        if F[u] <= half or G[v] <= half:
            d = F[u] - G[v]
        elif SF[u] == NEG or SG[v] == NEG:
            if SF[u] == SG[v]:
                return 0
            return 1 if SF[u] == NEG else -1
        else:
            d = SG[v] - SF[u]
        if abs(d) <= tol:
            return 0 if lower else 2
        return 1 if d > 0 else -1

    def walk(lower):
        lo = hi = 0
        w = 0
        for u in range(x.size):
            while hi + 1 < y.size and cmp(u, hi, lower) in (1, 2):
                hi += 1
            if u > 0:
                while lo + 1 < y.size and cmp(u - 1, lo, lower) in (1, 0):
                    lo += 1
            if lo <= hi:
                w = max(w, abs(int(x[u]) - int(y[lo])), abs(int(x[u]) - int(y[hi])))
        return w
    return walk(True), walk(False)


@pytest.mark.slow
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="a year of passes under AddressSanitizer takes minutes; the checkpoint logic is "
                           "covered there by the GoogleTests (test_markov_checkpoints.cpp)")
def test_year_of_half_hours_equals_an_independent_log_space_computation():
    positions = (0, 3, 9)
    mask = np.array(positions, dtype=np.int64)
    W, _ = _core.models.markov_w_inf(M[None], PI[None], np.array([0, 1], dtype=np.int64), T, 2, 1e-9, False,
                                     None, mask)
    Bs = _backward(set(positions))
    for i in positions:
        F = _forward(i)
        la = _law(F[0], Bs[i][0])
        lb = _law(F[1], Bs[i][1])
        if i == 0:
            # extreme atoms against mpmath: P(S = 0, X_0 = 0) = pi_0 p00^(T-1),
            # P(S = T, X_0 = 1) = pi_1 p11^(T-1)
            mp = mpmath.mp
            mp.dps = 50
            ref0 = mpmath.log(mpmath.mpf(2) / 3) + (T - 1) * mpmath.log(mpmath.mpf("0.9"))
            refT = mpmath.log(mpmath.mpf(1) / 3) + (T - 1) * mpmath.log(mpmath.mpf("0.8"))
            assert abs(la[0] - float(ref0)) < 1e-6 and abs(lb[-1] - float(refT)) < 1e-6
        lo, hi = _w_inf(la, lb)
        assert lo == hi, f"position {i}: the independent computation cannot decide ({lo} vs {hi})"
        assert W[0, i, 0] == lo, f"position {i}: core {W[0, i, 0]} vs independent {lo}"


def test_memory_estimate_of_a_year_is_small_and_bounds_the_schedule():
    fw = markov_chain(M, T=T, threads=2)
    c = fw.cost(threads=2)
    assert 0.3e9 < c.peak_bytes < 0.7e9        # 3.7 GB + 14.7 GB before the checkpoints
    ten = markov_chain(np.stack([M] * 10), T=T, threads=2).cost(threads=2)
    assert ten.peak_bytes < 2.2 * c.peak_bytes  # priors stream through 2 workers
