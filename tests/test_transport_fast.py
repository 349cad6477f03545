"""The fast 1-D W_inf path (cpp/transport/w_inf_fast.cpp: level keys by interleaved prefix
chains, ranks by a windowed advance, level 1/2 checked on the blocks that hold it) against two
references: the careful staircase walk (the plan's sensitivity, coupling_1d.cpp) and an
independent exact staircase over Fractions of the float masses. Cases target the structure of
the fast path: laws ending exactly at the 64-atom block edges, level 1/2 at or next to a block
edge, several blocks holding level 1/2 (tiny masses around the median), unequal sizes, exact
ties, and the CSR batch on the same laws."""
from fractions import Fraction as F

import numpy as np
import pytest

from puffer import DiscreteDist
from puffer import transport as T

SIZES = (1, 2, 3, 31, 63, 64, 65, 100, 127, 128, 129, 191, 192, 193, 257)


def exact_w_inf(x, p, y, q):
    """W_inf of the laws with masses Fraction(p_i) / sum, by the exact staircase (levels compared
    exactly; an oracle independent of the float level rule, equal to it away from near ties)."""
    P = [F(v) for v in p]
    Q = [F(v) for v in q]
    tp, tq = sum(P), sum(Q)
    i = j = 0
    fi, gj = P[0] / tp, Q[0] / tq
    w = 0.0
    while i < len(x) and j < len(y):
        w = max(w, abs(x[i] - y[j]))
        ai, aj = fi <= gj, gj <= fi
        if ai:
            i += 1
            if i < len(x):
                fi += P[i] / tp
        if aj:
            j += 1
            if j < len(y):
                gj += Q[j] / tq
    return w


def walk(x, p, y, q):
    return T.quantile_coupling(DiscreteDist(x, p), DiscreteDist(y, q)).sensitivity()


def law(rng, n, shift=0.0):
    x = np.sort(rng.normal(size=n)) + shift
    p = rng.random(n) + 0.05
    return x, p / p.sum()


def test_block_edges_and_unequal_sizes_match_walk_and_exact():
    rng = np.random.default_rng(20)
    for n in SIZES:
        for m in (n, 1, 64, 65, 130):
            x, p = law(rng, n)
            y, q = law(rng, m, 0.2)
            fast = T.w_inf_sorted(x, p, y, q)
            assert fast == walk(x, p, y, q) == exact_w_inf(x, p, y, q), (n, m)
            assert T.w_inf_sorted(y, q, x, p) == fast


@pytest.mark.parametrize("ulps", [0, 1, -1, 3, -3, 40, -40, 5000, -5000, 200_000, -200_000])
def test_level_half_at_a_block_edge(ulps):
    # 128 equal masses: F_63 = 1/2 exactly, at the edge of blocks 0 and 1. Moving one mass by
    # a few ulps puts level 1/2 just inside either block (within the band: careful walk); 2e5
    # ulps (3.5e-13) keeps both blocks "mixed" but every key clear of the band (fast keys).
    n = 128
    x = np.arange(n, dtype=float)
    p = np.full(n, 1.0 / n)
    p[63] = p[63] + ulps * np.spacing(p[63])
    rng = np.random.default_rng(abs(ulps) + 1)
    for q in (np.full(n, 1.0 / n), rng.random(n) + 0.1):
        q = q / q.sum()
        for y in (x + 0.5, x[::-1] * -1 + n, np.sort(rng.normal(size=n)) * 30):
            fast = T.w_inf_sorted(x, p, y, q)
            assert fast == walk(x, p, y, q)
            assert fast == T.w_inf_sorted(y, q, x, p)


@pytest.mark.parametrize("tiny", [1e-300, 1e-30, 1e-18])
def test_several_blocks_hold_level_half(tiny):
    # atoms 300..699 carry a tiny mass, so blocks 4..10 all start within 1e-12 of level 1/2:
    # several "mixed" blocks, F and S keys interleaved around 1/2 in each of them.
    n = 1000
    x = np.linspace(-5, 5, n)
    p = np.empty(n)
    p[:300] = 0.5 / 300
    p[300:700] = tiny
    p[700:] = 0.5 / 300
    p /= p.sum()
    rng = np.random.default_rng(7)
    y, q = law(rng, 777, 0.1)
    for args in ((x, p, y, q), (y, q, x, p), (x, p, x + 1.0, p), (x, p, x, p[::-1])):
        assert T.w_inf_sorted(*args) == walk(*args)


def test_level_half_between_two_blocks_both_near_it():
    # block 4 (atoms 256..319) ends 4e-13 below level 1/2, atom 320 (first of block 5) jumps
    # 8e-13 over it: both blocks lie within the 1e-12 margin of 1/2, one holding only F keys and
    # one only S keys, yet every key is > 2e-13 (~4000 ulps) from 1/2 and from its neighbours,
    # so the fast keys are used (no fallback) and must equal the walk.
    n = 640
    x = np.arange(n, dtype=float)
    p = np.empty(n)
    p[256:320] = 1e-15
    p[321:384] = 1e-15
    p[320] = 8e-13
    p[:256] = (0.5 - 4e-13 - 64e-15) / 256
    p[384:] = (1.0 - p[:384].sum()) / (n - 384)
    rng = np.random.default_rng(9)
    for y, q in (law(rng, 640, 0.5), law(rng, 100, -0.5), (x + 3.0, p)):
        assert T.w_inf_sorted(x, p, y, q) == walk(x, p, y, q)
        assert T.w_inf_sorted(y, q, x, p) == walk(y, q, x, p)


def test_exact_ties_everywhere_and_batch_agrees():
    rng = np.random.default_rng(3)
    xs, ps, ys, qs, want = [], [], [], [], []
    for n in SIZES:
        x, p = law(rng, n)
        cases = [(x, p, x + 1.25, p), (x, p) + law(rng, n + 7, 0.3)]
        for a, b, c, d in cases:
            w = T.w_inf_sorted(a, b, c, d)
            assert w == walk(a, b, c, d)
            xs.append(a), ps.append(b), ys.append(c), qs.append(d), want.append(w)
    assert want[0] == 1.25
    op = np.concatenate(([0], np.cumsum([len(v) for v in xs])))
    oq = np.concatenate(([0], np.cumsum([len(v) for v in ys])))
    X, P, Y, Q = (np.concatenate(v) for v in (xs, ps, ys, qs))
    for threads in (1, 2, 0):
        np.testing.assert_array_equal(T.w_inf_batch(X, P, op, Y, Q, oq, threads=threads), want)


def test_unsorted_atoms_rejected_after_fast_keys():
    # the fast path checks sortedness inside its rank loop; a swap deep inside a law must
    # still be reported (and not returned as a W_inf)
    rng = np.random.default_rng(5)
    for n in (3, 64, 65, 300):
        x, p = law(rng, n)
        y, q = law(rng, n, 0.1)
        for arr in ("x", "y"):
            xx, yy = x.copy(), y.copy()
            t = xx if arr == "x" else yy
            t[n // 2], t[n // 2 - 1] = t[n // 2 - 1] - 1.0, t[n // 2]
            with pytest.raises(ValueError, match="sorted"):
                T.w_inf_sorted(xx, p, yy, q)


def test_random_adversarial_laws_fast_equals_walk():
    """600 random pairs mixing the fast path's hard cases: decimal masses (near ties between
    differently rounded sums), copies perturbed by a few ulps (keys inside the band), tiny and
    subnormal atoms (equal consecutive keys), shifted copies (exact ties), sizes across block
    edges. The fast path must return exactly the walk's value whatever it decides."""
    rng = np.random.default_rng(2024)

    def masses(n):
        kind = rng.integers(4)
        if kind == 0:
            p = rng.random(n) + 0.01
        elif kind == 1:
            p = np.round(rng.random(n) + 0.01, 2)
        elif kind == 2:
            p = rng.integers(1, 4, size=n).astype(float)
        else:
            p = rng.random(n) + 0.01
            p[rng.random(n) < 0.2] = rng.choice([1e-300, 5e-324, 1e-17, 1e-13])
        return p / p.sum()

    for _ in range(600):
        n = int(rng.choice([1, 2, 5, 30, 63, 64, 65, 100, 129, 200]))
        x = np.sort(np.round(rng.normal(size=n) * 10, int(rng.integers(0, 3))))
        p = masses(n)
        r = rng.integers(3)
        if r == 0:
            y, q = x + rng.integers(0, 3), p.copy()
            k = rng.integers(n)
            q[k] = q[k] + rng.integers(-3, 4) * np.spacing(q[k])
        elif r == 1:
            m = int(rng.choice([1, 3, 64, 65, 120]))
            y, q = np.sort(np.round(rng.normal(size=m) * 10, 1)), masses(m)
        else:
            y, q = x[::-1] * -1, p[::-1].copy()
        assert T.w_inf_sorted(x, p, y, q) == walk(x, p, y, q)


def test_any_total_mode_rejects_totals_whose_reciprocal_overflows():
    # sum_tol < 0 accepts any positive total and renormalises by 1/T; below ~2^-1024 that
    # reciprocal is infinite and every level would be NaN/inf: a clear error instead
    x, y, q = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5]), np.array([0.5, 0.5])
    assert T.w_inf_sorted(x, np.array([1e-300, 2e-300, 1e-300]), y, q, sum_tol=-1) == 0.5
    with pytest.raises(ValueError, match="reciprocal"):
        T.w_inf_sorted(x, np.array([1e-311, 2e-311, 1e-311]), y, q, sum_tol=-1)
    with pytest.raises(ValueError, match="reciprocal"):
        T.w_inf_batch(x, np.array([1e-311, 2e-311, 1e-311]), [0, 3], y, q, [0, 2], sum_tol=-1)
