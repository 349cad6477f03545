"""Markov Delta_G at realistic sizes (issue 11): the extended-range kernel against exact dyadic
arithmetic and the log-space reference path, on chains whose probabilities underflow doubles;
Ctrl-C, progress, the memory refusal and the cost estimate.

The exact oracle: every double is a dyadic rational, so P(S = s | X_i = a) * 2^(D T) is an
integer (D = 1126 covers every double down to the smallest subnormal); the forward/backward
recursions and the convolution run in Python integers, and W_inf is the exact quantile coupling
with levels compared by cross-multiplication (no rounding anywhere)."""
from __future__ import annotations

import math
import threading
from fractions import Fraction

import numpy as np
import pytest

import puffer
from puffer import _core
from timing import Interrupter

TINY = [0.5, 0.1, 0.9, 0.3, 1e-30, 1e-140, 1e-200, 1e-299, 1.37e-299, 1e-250, 1e-300, 1e-310, 5e-324]
D = 1126


def _dyadic(p: float) -> int:
    """p * 2^D as an exact integer (p a double in [0, 1])."""
    n, d = float(p).as_integer_ratio()
    assert (1 << D) % d == 0
    return n * ((1 << D) // d)


def exact_laws(M, pi, vals, T: int, i: int) -> list[dict[int, int]]:
    """Integer masses (a common positive scale) of S given X_i = a, for every state a."""
    k = len(pi)
    P = [[_dyadic(M[x][y]) for y in range(k)] for x in range(k)]
    v = [int(x) for x in vals]
    F = [{v[x]: _dyadic(pi[x])} if pi[x] > 0 else {} for x in range(k)]
    for _ in range(i):
        G: list[dict[int, int]] = [{} for _ in range(k)]
        for x in range(k):
            for s, m in F[x].items():
                for y in range(k):
                    if P[x][y]:
                        G[y][s + v[y]] = G[y].get(s + v[y], 0) + m * P[x][y]
        F = G
    B = [{0: 1} for _ in range(k)]
    for _ in range(T - 1 - i):
        G = [{} for _ in range(k)]
        for x in range(k):
            for y in range(k):
                if P[x][y]:
                    for s, m in B[y].items():
                        G[x][s + v[y]] = G[x].get(s + v[y], 0) + m * P[x][y]
        B = G
    out = []
    for a in range(k):
        L: dict[int, int] = {}
        for s1, m1 in F[a].items():
            for s2, m2 in B[a].items():
                L[s1 + s2] = L.get(s1 + s2, 0) + m1 * m2
        out.append({s: m for s, m in L.items() if m > 0})
    return out


def exact_w_inf(P: dict[int, int], Q: dict[int, int], band: Fraction = Fraction(0)) -> int:
    """W_inf of two integer-mass laws by the exact monotone coupling. band = 0: levels compared
    exactly (cross-multiplied). band > 0: two levels are tied when they differ by at most
    band * the larger, in the tail where they are small (F below 1/2, else S) -- the float
    kernel's level rule (puffer.transport), under which intended levels closer than the band
    are indistinguishable from rounding."""
    tp, tq = sum(P.values()), sum(Q.values())
    xp, xq = sorted(P), sorted(Q)
    i = j = 0
    cp, cq = P[xp[0]], Q[xq[0]]
    w = 0
    while True:
        w = max(w, abs(xp[i] - xq[j]))
        if i == len(xp) - 1 and j == len(xq) - 1:
            return w
        fp, fq = Fraction(cp, tp), Fraction(cq, tq)
        if band and min(fp, fq) <= Fraction(1, 2):
            tie = abs(fp - fq) <= band * max(fp, fq)
        elif band:
            tie = abs(fp - fq) <= band * max(1 - fp, 1 - fq)
        else:
            tie = fp == fq
        if tie:
            i += 1
            j += 1
            cp += P[xp[i]]
            cq += Q[xq[j]]
        elif fp < fq:
            i += 1
            cp += P[xp[i]]
        else:
            j += 1
            cq += Q[xq[j]]


# Relative tie band of the float level rule for these laws (<= 64 atoms): rtol + 2 E with
# E = (n + 4) 2^-53, plus the ~T eps relative rounding of the masses themselves.
BAND = Fraction(1, 10**12)


def kernel_band(T: int, k: int, R: int) -> Fraction:
    """The Markov W_inf walk's closeness band for two levels (cpp/models/markov.cpp): each level's
    error bound (4 T (k + 2) + 4 R + 64) 2^-53, twice, plus 4 ulps for the comparison."""
    return Fraction(2 * (4 * T * (k + 2) + 4 * R + 64) + 4, 2**53)


def possible_w_inf(P: dict[int, int], Q: dict[int, int], band: Fraction) -> int:
    """The largest distance between atoms whose level intervals may overlap when every two
    levels closer than band (relatively, in the tail where they are small) but not exactly equal
    count as of unknown order: the most the certified walk may report (exact levels here)."""
    tp, tq = sum(P.values()), sum(Q.values())
    xp, xq = sorted(P), sorted(Q)
    F = [Fraction(0)]
    for x in xp:
        F.append(F[-1] + Fraction(P[x], tp))
    G = [Fraction(0)]
    for y in xq:
        G.append(G[-1] + Fraction(Q[y], tq))

    def lt_possible(a: Fraction, b: Fraction) -> bool:   # a < b, or different and too close to tell
        if a == b:
            return False
        small = min(a, b) <= Fraction(1, 2)
        close = abs(a - b) <= band * (max(a, b) if small else max(1 - a, 1 - b))
        return a < b or close

    return max(abs(x - y) for i, x in enumerate(xp) for j, y in enumerate(xq)
               if lt_possible(F[i], G[j + 1]) and lt_possible(G[j], F[i + 1]))


def exact_row(M, pi, vals, T, i, band: Fraction = Fraction(0)) -> list[float]:
    """Exact W_inf for every pair a < b at position i (-1: an impossible secret)."""
    laws = exact_laws(M, pi, vals, T, i)
    k = len(pi)
    return [float(exact_w_inf(laws[a], laws[b], band)) if laws[a] and laws[b] else -1.0
            for a in range(k) for b in range(a + 1, k)]


def _random_chain(rng, k: int):
    M = rng.random((k, k))
    mask = rng.random((k, k)) < 0.5
    M[mask] = rng.choice(TINY, int(mask.sum()))
    if rng.random() < 0.2:
        M[rng.random((k, k)) < 0.2] = 0.0
    M[:, 0] += 1e-3
    M /= M.sum(1, keepdims=True)
    c = rng.random(k)
    c[rng.random(k) < 0.4] = rng.choice(TINY)
    return M, c / c.sum()


def test_oracle_on_the_issue_example():
    """The exact oracle itself: the issue's chain has Delta_G = 8 (exact enumeration in
    tests/test_markov_exact.py), and the uniform 2-state chain gives the known value 5 at T = 5."""
    M, pi = [[1e-140, 1.0], [1.37e-299, 1.0]], [0.5, 0.5]
    assert max(max(exact_row(M, pi, [2, 0], 12, i)) for i in range(12)) == 8
    M2 = [[0.9, 0.1], [0.2, 0.8]]
    pi2 = puffer.models.stationary_distribution(np.array(M2))
    assert max(max(exact_row(M2, pi2, [0, 1], 5, i)) for i in range(5)) == 5


# slow: exact-rational oracle in Python (the sanitizer run keeps the seven seed loops below)
@pytest.mark.slow
def test_fast_path_equals_exact_and_reference_on_random_underflowing_chains():
    """>= 200 random chains (k = 2..4, T <= 24, transition and initial probabilities down to the
    smallest subnormal, zeros): the extended-range W table never under-reports exact arithmetic
    at the witness position and at a random one (every position when T <= 6), and equals it
    except where two exact levels differ by less than the kernel's closeness band (there the
    certified walk takes the safe side and may report up to possible_w_inf, never more). It
    equals the log-space reference wherever the reference is right."""
    n_chains, n_ext, n_exact, n_ref_wrong, n_over = _random_loop(20261125, 210)
    assert n_chains >= 200 and n_ext >= 50 and n_exact >= 300
    assert n_ref_wrong < 0.1 * n_chains
    assert n_over < 0.05 * n_exact


# seed 1 also runs under ASan; the others (exact-rational oracle in Python) in the plain suite only
@pytest.mark.parametrize("seed", [1] + [pytest.param(s, marks=pytest.mark.slow) for s in range(2, 8)])
def test_no_under_report_on_the_seeds_that_found_near_ties(seed):
    """Issue 9: with seeds 1-7 the same loop found positions where the float level rule
    under-reported exact arithmetic (5 for 10, 1 for 4, 3 for 6). The certified walk never
    under-reports there (checked by _random_loop's assertions)."""
    n_chains, _, n_exact, _, n_over = _random_loop(seed, 40)
    assert n_chains == 40 and n_exact >= 60
    assert n_over < 0.1 * n_exact


def _random_loop(seed: int, count: int) -> tuple[int, int, int, int, int]:
    """count random extreme chains checked against exact arithmetic (see the test above); returns
    (chains, chains using the extended range, positions checked, reference disagreements,
    over-reports)."""
    rng = np.random.default_rng(seed)
    n_chains = n_ext = n_exact = n_ref_wrong = n_over = 0
    for _ in range(count):
        k = int(rng.choice([2, 2, 2, 3, 4]))
        T = int(rng.integers(2, 25 if k == 2 else 12))
        n = int(rng.integers(1, 3))
        chains = [_random_chain(rng, k) for _ in range(n)]
        trans = np.array([c[0] for c in chains])
        init = np.array([c[1] for c in chains])
        vals = rng.integers(-2, 4, k).astype(np.int64)
        W, used = _core.models.markov_w_inf(trans, init, vals, T, 2, 1e-6)
        Wr, _ = _core.models.markov_w_inf(trans, init, vals, T, 2, 1e-6, True)
        n_ext += bool(used.any())
        th_w, i_w, _ = np.unravel_index(int(np.argmax(W)), W.shape)
        check = {(int(th_w), int(i_w))}
        for th in range(n):
            check |= {(th, int(i)) for i in (range(T) if T <= 6 else [int(rng.integers(0, T))])}
        for th, i in np.argwhere((W != Wr).any(axis=2)):
            check.add((int(th), int(i)))
            n_ref_wrong += 1
        R = T * int(vals.max() - vals.min()) + 1
        for th, i in sorted(check):
            n_over += _check_position(trans[th], init[th], vals, T, int(i), W[th, i].tolist(), kernel_band(T, k, R))
            n_exact += 1
        n_chains += 1
    return n_chains, n_ext, n_exact, n_ref_wrong, n_over


def _check_position(M, pi, vals, T: int, i: int, got: list[float], band: Fraction) -> int:
    """Asserts exact <= got <= possible_w_inf(2 band) for every pair at position i; returns the
    number of over-reports (0 or 1)."""
    laws = exact_laws(M, pi, vals, T, i)
    k = len(pi)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    want = [float(exact_w_inf(laws[a], laws[b])) if laws[a] and laws[b] else -1.0 for a, b in pairs]
    if got == want:
        return 0
    upper = [float(possible_w_inf(laws[a], laws[b], 2 * band)) if laws[a] and laws[b] else -1.0
             for a, b in pairs]
    where = f"chain {np.asarray(M).tolist()}, init {np.asarray(pi).tolist()}, values {list(vals)}, T {T}, position {i}"
    assert all(g >= w for g, w in zip(got, want)), f"under-report vs exact arithmetic: {got} vs {want}; {where}"
    assert all(g <= u for g, u in zip(got, upper)), f"over-report beyond the closeness band: {got} vs {want} " \
                                                    f"(at most {upper}); {where}"
    return 1


@pytest.mark.parametrize(("T", "a", "b"), [(3000, 1e-300, 0.3), (3000, 1e-140, 0.5), (2000, 0.3, 0.2),
                                           (1500, 1e-300, 1e-300), (1000, 1e-200, 1e-30)])
def test_long_chains_equal_the_log_space_reference(T, a, b):
    """k = 2 chains of length 1000..3000 with transitions down to 1e-300 (masses far below the
    double range: the laws span thousands of binary orders): the extended-range kernel equals
    the log-space reference at the ends and in the middle of the chain."""
    M = np.array([[[1 - a, a], [b, 1 - b]]])
    pi = np.array([[0.5, 0.5]])
    v = np.array([0, 1], dtype=np.int64)
    pos = np.array([0, 1, T // 3, T // 2, T - 2, T - 1])
    W, used = _core.models.markov_w_inf(M, pi, v, T, 2, positions=pos)
    Wr, _ = _core.models.markov_w_inf(M, pi, v, T, 2, reference=True, positions=pos)
    assert W[0, pos, 0].tolist() == Wr[0, pos, 0].tolist()
    assert np.isnan(np.delete(W[0, :, 0], pos)).all()   # positions left out are not computed
    assert W[0, pos, 0].max() >= 3


def test_framework_laws_match_the_kernel():
    """The stored-laws path (LogDiscreteDist for laws beyond the double range) gives the same
    Delta_G as the streaming kernel, and the exact value."""
    M, pi = [[1 - 1e-300, 1e-300], [0.3, 0.7]], [0.5, 0.5]
    fw = puffer.models.markov_chain(M, T=30, init=pi, values=[0, 1])
    want = max(max(exact_row(M, pi, [0, 1], 30, i)) for i in (0, 1, 14, 15, 28, 29))
    assert fw.w_inf().value == puffer.Framework.w_inf(fw).value
    assert fw.w_inf().value >= want


def test_progress_callback_and_interrupt():
    """progress=callable sees increasing counts ending at the total; Ctrl-C (interrupt_main from
    another thread once the kernel runs) raises KeyboardInterrupt after little CPU time (a quarter
    of what the whole job needs at most; it takes ~0.2 CPU-s), leaves no thread behind, and the
    next call works and gives the known value."""
    seen: list[tuple[int, int]] = []
    fw = puffer.models.markov_chain(np.tile([[0.9, 0.1], [0.2, 0.8]], (30, 1, 1)), T=400)
    fw.w_inf(progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (30 * 400, 30 * 400)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    with pytest.raises(puffer.ParameterError):
        fw.w_inf(progress="yes")

    big = puffer.models.markov_chain(np.tile([[0.9, 0.1], [0.2, 0.8]], (400, 1, 1)), T=1500)
    assert big.cost(threads=2).seconds > 3.0      # long enough to be interrupted: > 6 CPU-s on 2 threads
    n_threads = threading.active_count()
    ctrl_c = Interrupter()
    with pytest.raises(KeyboardInterrupt):
        big.w_inf(progress=ctrl_c.progress, threads=2)
    assert ctrl_c.cpu_after() < 1.5
    assert threading.active_count() == n_threads
    assert puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5).w_inf(threads=2).value == 5.0

    def stop(done: int, total: int) -> None:
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):   # a failing callback cancels the kernel
        big.w_inf(progress=stop, threads=2)
    assert threading.active_count() == n_threads
    assert puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5).w_inf(threads=2).value == 5.0


def _peak_closed_form(k, T, span, n, threads, period=1):
    """cpp/models/markov.hpp: per prior in flight, the backward checkpoints (every C-th slice,
    C = ceil(sqrt(T / 2)), plus two pass buffers), the exact images' checkpoints (forward and
    backward, 3 primes) and the prior's period matrices (split: 16 bytes an entry, residues: 24);
    per worker, one segment of C backward slices, the exact images' segment and
    (84 k + 96)(R + 80) bytes of buffers; or, where larger, the skipping's buffers (below)."""
    C = math.ceil(math.sqrt(T / 2))
    R = T * span + 1
    lf = lambda t: (t + 1) * span + 1     # noqa: E731
    lb = lambda t: (T - 1 - t) * span + 1  # noqa: E731
    ck = 12 * k * (sum(lb(t) for t in range(C, T, C)) + (2 * lb(C) if C < T else 0))
    mod = 24 * k * (sum(lf(t) for t in range(0, T, C)) + sum(lb(t) for t in range(C, T, C))) + 16 * k * R + 16 * R \
        + 40 * period * k * k
    worker = 12 * k * sum(lb(t) for t in range(min(C, T))) + (84 * k + 96) * (R + 80)
    modseg = 24 * k * sum(lf(t) + lb(t) for t in range(min(C, T))) + 16 * R + 24 * k * R
    if n < threads and T > 1:
        direct = ck + mod + min(threads, T) * (worker + modseg)
    else:
        direct = min(threads, n) * (ck + mod + worker + modseg)
    # the certified skipping (run first, its buffers freed before the direct positions), per prior
    # in flight: the streams (scratch (60 k + 96)(R + 80), the end slices of the largest window
    # m = floor(T / sqrt(2 C)), 12 k (m + 1)(m span + 2) bytes; twice when fewer priors than
    # threads), the representatives' slices (12 k R each, at most T / (2 C + 1) + 64), the window
    # polynomials 4 * 48 k^2 ((m + p) span + 1), and the exact images (their residues only: the
    # split matrices, 16 bytes an entry, belong to the direct computation)
    m = int(T / math.sqrt(2 * C))
    p = T // (2 * C + 1) + 64
    stream = (60 * k + 96) * (R + 80) + 12 * k * (m + 1) * (m * span + 2)
    streams = (2 if n < threads else 1) * stream + 12 * k * R * p
    windows = 4 * 48 * k * k * ((m + p) * span + 1)
    skip = min(threads, n) * (streams + windows + mod - 16 * period * k * k + modseg)
    return max(direct, skip)


def test_memory_refusal_names_the_estimate(monkeypatch):
    """A request that cannot fit is refused before anything is allocated, with the estimate in
    GiB (the checkpointed passes and exact images, _peak_closed_form, plus the W table)."""
    from puffer import models

    monkeypatch.setattr(models, "_available_bytes", lambda: 1 << 26)
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=20000)
    T, k = 20000, 2
    want = (1.4 * _peak_closed_form(k, T, 1, 1, 1) + 4 * 2**20 + 8 * T) / 2**30
    with pytest.raises(puffer.ParameterError, match=rf"estimated {want:.3g} GiB"):
        fw.w_inf(threads=1)


def test_cost_matches_the_closed_forms():
    """operations = k sum_i (i span + span + 1)((T - 1 - i) span + 1) + 2 T k^2 R per prior plus the
    W walk; peak bytes = _peak_closed_form + the W table."""
    k, T, span, n = 3, 50, 2, 4
    vals = [0, 1, 2]
    trans = np.tile(np.full((k, k), 1 / k), (n, 1, 1))
    fw = puffer.models.markov_chain(trans, T=T, values=vals)
    c = fw.cost(threads=2)
    R = T * span + 1
    conv = sum(((i + 1) * span + 1) * ((T - 1 - i) * span + 1) for i in range(T))
    per_prior = k * conv + 2 * T * k * k * R
    w = T * 3 * 2 * R
    assert c.operations == pytest.approx(n * (per_prior + w), rel=1e-12)
    # allocated bytes x 1.4 + 4 MiB: the allocator's arenas (models._resident_bytes)
    assert c.peak_bytes == pytest.approx(1.4 * _peak_closed_form(k, T, span, n, 2) + 4 * 2**20 + 8 * n * T * 3,
                                         rel=1e-12)
    one = puffer.models.markov_chain(trans[:1], T=T, values=vals).cost(threads=2)
    assert one.peak_bytes == pytest.approx(1.4 * _peak_closed_form(k, T, span, 1, 2) + 4 * 2**20 + 8 * T * 3,
                                           rel=1e-12)
    assert c.seconds > 0
    assert "ops" in repr(c) and "\n" not in repr(c)
    with pytest.raises(AttributeError):
        c.seconds = 1.0  # type: ignore[misc]


def test_near_tied_tail_levels_are_not_under_reported():
    """Issue 9: a position whose W_inf the float level rule under-reported (1 where exact
    arithmetic gives 2): its tail levels differ in the ~70th digit, below any float rounding.
    Such levels are now of unknown order unless certified equal, and the walk takes the safe
    side."""
    M = [[1.0, 5e-324, 0.0], [0.001996007984031936, 1e-323, 0.998003992015968], [1.0, 0.0, 1e-247]]
    pi = [1.6027328291091392e-250, 1.6027328291091392e-250, 1.0]
    vals, T = [-2, -1, 0], 4
    W, _ = _core.models.markov_w_inf(np.array([M]), np.array([pi]), np.array(vals, dtype=np.int64), T, 2, 1e-6)
    assert exact_row(M, pi, vals, T, 3) == [2.0, 4.0, 3.0]
    got = W[0, 3].tolist()
    assert got[1:] == [4.0, 3.0] and got[0] >= 2.0
    _check_position(M, pi, vals, T, 3, got, kernel_band(T, 3, T * 2 + 1))
