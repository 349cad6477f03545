"""Certified skipping of interior positions (issue 34; the proof: docs/long-chains.md).

Oracles: the direct computation (``method="full"``, every position computed), which the skipping
must reproduce bit for bit on every chain; exact rational laws (every double is a dyadic
rational) for the window bound of Lemma 2, checked against the exact change of every atom's
normalised mass between two interior positions of the same phase; mpmath at 50 digits for the
logarithms. The randomized chains cover quickly and slowly mixing chains, near-periodic ones,
chains with exact level ties (identical rows), transition probabilities of exactly 0, several
state values per step and periodic time-varying chains, k = 2 .. 4, T up to 2000."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from puffer import _core
from puffer.errors import ParameterError
from puffer.models import MarkovChainFramework, markov_chain


def random_chain(rng, kind, k, n, period=1):
    """(trans, init, values) of one of the kinds of chain named in the module docstring."""
    shape = (n, period, k) if period > 1 else (n, k)
    if kind == "mixing":
        M = rng.dirichlet(np.ones(k), size=shape)
    elif kind == "sparse":            # entries close to 0, some exactly 0
        M = rng.dirichlet(np.full(k, 0.3), size=shape)
        M[M < 0.05] = 0.0
        M[..., 0] += 1e-3
    elif kind == "ties":              # identical rows: the laws are shifts of each other
        M = np.repeat(rng.dirichlet(np.ones(k), size=shape[:-1] + (1,)), k, axis=-2)
    elif kind == "near-periodic":
        perm = np.roll(np.eye(k), 1, axis=1)
        M = 0.97 * perm + 0.03 * rng.dirichlet(np.ones(k), size=shape)
    elif kind == "slow":
        M = 0.97 * np.eye(k) + 0.03 * rng.dirichlet(np.ones(k), size=shape)
    else:
        raise AssertionError(kind)
    M = M / M.sum(-1, keepdims=True)
    init = rng.dirichlet(np.ones(k), size=n)
    values = np.arange(k, dtype=np.int64)
    if rng.random() < 0.3:            # repeated values and wider spans
        values = np.sort(rng.integers(0, 4, size=k)).astype(np.int64)
        values[-1] = max(values[-1], values[0] + 1)
    return M, init, values


KINDS = ["mixing", "sparse", "ties", "near-periodic", "slow"]


def check_same(M, init, values, T, threads=1, windows=()):
    """The skipping (automatic plan, and each fixed window given) equals the direct computation."""
    W_full, u_full = _core.models.markov_w_inf(M, init, values, T, threads, full=True)
    for window in (0, *windows):
        W, u = _core.models.markov_w_inf(M, init, values, T, threads, window=window)
        assert np.array_equal(W, W_full), (M.tolist(), init.tolist(), values.tolist(), T, window,
                                           np.argwhere(W != W_full)[:5].tolist())
    return W_full


@pytest.mark.parametrize("seed", range(6))
def test_skipping_equals_the_direct_computation_on_random_chains(seed):
    """50 chains per seed (300 in all): T in [8, 160], k = 2 .. 4, one or two priors, a third of
    them periodic (period 2 .. 4), each with the automatic plan and with a window of 8 steps (on
    these short chains the automatic plan often declines: its windows may cost at most 5 % of the
    direct computation). Both certify the interior of many chains (the skipping runs)."""
    rng = np.random.default_rng(1000 + seed)
    usable = fixed = 0
    for j in range(50):
        k = int(rng.integers(2, 5))
        T = int(rng.integers(8, 161))
        period = int(rng.integers(2, 5)) if j % 3 == 0 else 1
        M, init, values = random_chain(rng, KINDS[j % len(KINDS)], k, int(rng.integers(1, 3)), period)
        check_same(M, init, values, T, windows=(8,))
        usable += _core.models.markov_skip_plan(M, init, values, T)["usable"]
        fixed += _core.models.markov_skip_plan(M, init, values, T, window=8)["usable"]
    assert usable >= 5 and fixed >= 30   # the test exercises the skipping, not only its fallback


@pytest.mark.parametrize("seed", range(3))
def test_short_windows_certify_less_and_stay_exact(seed):
    """A window of 4 steps bounds the drift loosely (omega ~ 0.01 .. 20): W_inf often changes
    inside the interior, and the certificate must leave those positions to the direct
    computation (a test that the drift enters the band: with eta = 0 it copies wrong values)."""
    rng = np.random.default_rng(2000 + seed)
    varies = 0
    for j in range(60):
        k = int(rng.integers(2, 4))
        T = int(rng.integers(30, 120))
        M, init, values = random_chain(rng, KINDS[j % len(KINDS)], k, 1, 1 if j % 4 else 2)
        W_full, _ = _core.models.markov_w_inf(M, init, values, T, 1, full=True)
        W, _ = _core.models.markov_w_inf(M, init, values, T, 1, window=4)
        assert np.array_equal(W, W_full), (M.tolist(), init.tolist(), values.tolist(), T)
        plan = _core.models.markov_skip_plan(M, init, values, T, window=4)
        if plan["usable"]:
            p, lo, hi = plan["period"], plan["lo"], plan["hi"]
            varies += any(len(np.unique(W_full[0, lo + phi:hi + 1:p], axis=0)) > 1 for phi in range(p))
    assert varies >= 10


# T = 2000: the direct computation's tables, stored (it takes minutes for some of these chains);
# `python tests/test_markov_skip.py` regenerates tests/data/markov_skip_T2000.json.
LONG = [  # (kind, k, period, seed)
    ("mixing", 2, 1, 9), ("mixing", 3, 1, 10), ("sparse", 3, 1, 10), ("mixing", 4, 3, 11),
    ("sparse", 4, 3, 11), ("near-periodic", 3, 3, 10), ("ties", 3, 1, 10),
]
DATA = Path(__file__).parent / "data" / "markov_skip_T2000.json"


def long_chain(j):
    kind, k, period, seed = LONG[j]
    return random_chain(np.random.default_rng(seed), kind, k, 1, period)


def by_phase(W, period):
    """W[0] (T, pairs) pair by pair, each pair's positions phase by phase (runs of equal values)."""
    order = np.argsort(np.arange(W.shape[1]) % period, kind="stable")
    return W[0][order].T


def rle(a):
    out = []
    for x in np.asarray(a, dtype=float).ravel():
        if out and out[-1][0] == x:
            out[-1][1] += 1
        else:
            out.append([float(x), 1])
    return out


def unrle(r):
    return np.concatenate([np.full(n, v) for v, n in r])


@pytest.mark.parametrize("j", range(len(LONG)))
def test_skipping_equals_the_direct_computation_at_T_2000(j):
    M, init, values = long_chain(j)
    rec = json.loads(DATA.read_text())[j]
    assert rec["trans"] == M.tolist() and rec["init"] == init.tolist() and rec["values"] == values.tolist()
    W, _ = _core.models.markov_w_inf(M, init, values, 2000, 1)
    assert np.array_equal(by_phase(W, LONG[j][2]).ravel(), unrle(rec["W"]))
    if LONG[j][0] == "ties":      # identical rows: every law is a shift of one law, W = |v_a - v_b|
        v = values.astype(float)
        pairs = [abs(v[a] - v[b]) for a in range(len(v)) for b in range(a + 1, len(v))]
        assert (W[0] == np.array(pairs)).all()


@pytest.mark.slow
def test_stored_tables_are_the_direct_computation():
    """The first stored table against a fresh direct computation (the others take minutes)."""
    M, init, values = long_chain(0)
    W, _ = _core.models.markov_w_inf(M, init, values, 2000, 2, full=True)
    assert np.array_equal(by_phase(W, LONG[0][2]).ravel(), unrle(json.loads(DATA.read_text())[0]["W"]))


def test_skipping_with_threads_on_one_prior_and_many():
    """The two streams of one prior run side by side (fewer priors than threads), and priors run
    in parallel (more priors than threads): the same table as one thread, and as full."""
    rng = np.random.default_rng(3)
    M, init, values = random_chain(rng, "mixing", 2, 1)
    W1 = check_same(M, init, values, 300, threads=1)
    assert np.array_equal(W1, check_same(M, init, values, 300, threads=2))
    M, init, values = random_chain(rng, "mixing", 3, 5)
    check_same(M, init, values, 150, threads=2)


def test_windows_cost_at_most_a_twentieth_of_the_direct_computation():
    """A short chain with many states (k = 10, T = 96: a window costs ~k^3 (m + p)^2 span^2
    multiply-adds against ~k T^3 span^2 / 6 for all the positions) is left to the direct
    computation before any window is computed; a long one is planned."""
    rng = np.random.default_rng(5)
    M = rng.uniform(0.05, 1.0, (1, 10, 10))
    M /= M.sum(2, keepdims=True)
    init, values = np.full((1, 10), 0.1), np.arange(10, dtype=np.int64)
    assert not _core.models.markov_skip_plan(M, init, values, 96)["usable"]
    # without the budget this window is affordable: the plan declines for its cost alone
    assert np.isfinite(_core.models.markov_window_drift(M, init, values, 96, 8, 1)).all()
    check_same(M, init, values, 96)
    M2, init2, values2 = np.array([[[0.9, 0.1], [0.2, 0.8]]]), np.array([[0.5, 0.5]]), np.arange(2, dtype=np.int64)
    assert not _core.models.markov_skip_plan(M2, init2, values2, 50)["usable"]
    assert _core.models.markov_skip_plan(M2, init2, values2, 2000)["usable"]


def test_periodic_chain_has_a_representative_per_phase():
    rng = np.random.default_rng(11)
    M = rng.dirichlet(np.ones(2), size=(1, 3, 2))
    init = np.array([[0.5, 0.5]])
    values = np.array([0, 1], dtype=np.int64)
    plan = _core.models.markov_skip_plan(M, init, values, 400)
    assert plan["usable"] and plan["period"] == 3
    assert sorted(int(r) % 3 for r in plan["reps"]) == [0, 1, 2]
    assert all(plan["lo"] <= r <= plan["hi"] for r in plan["reps"])
    check_same(M, init, values, 400)
    # windows of one step: refused for a period-3 chain, accepted once its three matrices are equal
    with pytest.raises(ParameterError, match="period"):
        _core.models.markov_window_drift(M, init, values, 400, 8, 1)
    same = np.repeat(M[:, :1], 3, axis=1)
    assert np.isfinite(_core.models.markov_window_drift(same, init, values, 400, 8, 1)).all()


def test_progress_and_positions_with_skipping():
    """Every position counts once in the progress; a positions mask writes only its positions,
    with the direct computation's values."""
    M = np.array([[[0.9, 0.1], [0.2, 0.8]]])
    init = np.array([[0.5, 0.5]])
    values = np.array([0, 1], dtype=np.int64)
    T = 500
    seen = []
    W, _ = _core.models.markov_w_inf(M, init, values, T, 2, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (T, T)
    pos = np.array([3, 100, 250, 499], dtype=np.int64)
    Wp, _ = _core.models.markov_w_inf(M, init, values, T, 1, positions=pos)
    assert np.array_equal(Wp[0, pos], W[0, pos])
    rest = np.setdiff1d(np.arange(T), pos)
    assert np.isnan(Wp[0, rest]).all()


def test_method_auto_and_full_give_the_same_sensitivity():
    fw = MarkovChainFramework(np.array([[0.9, 0.1], [0.3, 0.7]]), T=300, values=[0.0, 1.5])
    a, f = fw.w_inf(), fw.w_inf(method="full")
    assert (a.value, a.witness) == (f.value, f.witness)
    with pytest.raises(ParameterError, match="method"):
        fw.w_inf(method="fast")


# ---------------------------------------------------------------- the certificate (Theorem 6)
def quantile_w_inf(xa, pa, xb, pb):
    """W_inf of two laws by the quantile coupling, exact (Fractions): atoms pair where their
    level intervals (F_{u-1}, F_u] and (G_{v-1}, G_v] overlap."""
    ta, tb = sum(pa), sum(pb)
    Fa = np.cumsum([Fraction(0)] + [p / ta for p in pa])
    Fb = np.cumsum([Fraction(0)] + [p / tb for p in pb])
    w = 0
    for u in range(len(xa)):
        for v in range(len(xb)):
            if Fa[u] < Fb[v + 1] and Fb[v] < Fa[u + 1]:
                w = max(w, abs(xa[u] - xb[v]))
    return w


def perturbed(rng, p, eta, how):
    """Masses moved by factors within exp(+-eta / 2) (normalised ratios within exp(+-eta)):
    random, or all of one side of a cut up and the other down (the largest level moves)."""
    if how == "random":
        f = np.exp(rng.uniform(-eta / 2, eta / 2, size=len(p)))
    else:
        cut = int(rng.integers(0, len(p) + 1))
        sign = 1 if how == "up" else -1
        f = np.exp(np.where(np.arange(len(p)) < cut, sign, -sign) * eta / 2)
    return [Fraction(float(x)) * Fraction(float(y)) for x, y in zip(p, f)]


def test_certificate_holds_for_every_law_within_the_drift():
    """When the upper and lower walks of the widened band agree (Theorem 6), no perturbation of
    the laws' masses within the drift changes W_inf; and a level tie that decides W_inf (9 one
    way, 6 the other) is never certified once the drift exceeds its gap."""
    rng = np.random.default_rng(5)
    agreed = 0
    for _ in range(150):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        xa = np.sort(rng.choice(20, size=n, replace=False)).astype(np.int64)
        xb = np.sort(rng.choice(20, size=m, replace=False)).astype(np.int64)
        pa, pb = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(m))
        if rng.random() < 0.5:   # a near-tie between two levels
            i, j = int(rng.integers(0, n)), int(rng.integers(0, m))
            if i < n - 1 and j < m - 1:
                gap = 10.0 ** rng.uniform(-6, -1)
                target = pb[:j + 1].sum() * (1 + gap)
                rest = pa[:i + 1].sum()
                if 0 < target < 1 and rest < 1:
                    pa[:i + 1] *= target / rest
                    pa[i + 1:] *= (1 - target) / (1 - rest)
        for eta in (1e-7, 1e-4, 1e-2):
            up, low = _core.models.markov_drift_walks(xa, pa, xb, pb, eta)
            exact = quantile_w_inf(xa.tolist(), [Fraction(float(x)) for x in pa], xb.tolist(),
                                   [Fraction(float(x)) for x in pb])
            assert low <= exact <= up
            if up != low:
                continue
            agreed += 1
            for how in ("random", "up", "down", "random", "up", "down"):
                qa, qb = perturbed(rng, pa, eta, how), perturbed(rng, pb, eta, how)
                assert quantile_w_inf(xa.tolist(), qa, xb.tolist(), qb) == up
    assert agreed >= 200
    # P = {0: a, 10: 1 - a}, Q = {1: b, 6: 1 - b}: W_inf = 9 if a < b, 6 if a > b (4 if tied)
    xa, xb = np.array([0, 10]), np.array([1, 6])
    for gap in (1e-3, 1e-6):
        pa, pb = np.array([0.4, 0.6]), np.array([0.4 * (1 + gap), 1 - 0.4 * (1 + gap)])
        assert _core.models.markov_drift_walks(xa, pa, xb, pb, gap / 10) == (9.0, 9.0)
        up, low = _core.models.markov_drift_walks(xa, pa, xb, pb, 3 * gap)
        assert up == 9.0 and low < 6.0


def test_levels_of_plain_laws_on_both_sides_of_the_plain_double_bounds():
    """The W_inf walk of two plain-double laws (levels by plain double sums where every mass is
    >= 2^-1000 and the smallest mass / total >= 2^-1000, else the extended-range sums) against
    the exact quantile coupling (Fractions): masses spread over 2^-1060 .. 2^40, tiny tail atoms
    deciding W_inf, so that both paths run and a level read wrongly changes the answer."""
    rng = np.random.default_rng(17)
    decided = 0
    for j in range(300):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        xa = np.sort(rng.choice(40, size=n, replace=False)).astype(np.int64)
        xb = np.sort(rng.choice(40, size=m, replace=False)).astype(np.int64)
        lo = [-990.0, -1010.0, -1060.0, -60.0][j % 4]          # both sides of 2^-1000
        pa = np.ldexp(rng.uniform(1, 2, n), rng.integers(int(lo), 40, n))
        pb = np.ldexp(rng.uniform(1, 2, m), rng.integers(int(lo), 40, m))
        up, low = _core.models.markov_drift_walks(xa, pa, xb, pb, 0.0)
        exact = quantile_w_inf(xa.tolist(), [Fraction(float(x)) for x in pa], xb.tolist(),
                               [Fraction(float(x)) for x in pb])
        assert low <= exact <= up, (j, xa.tolist(), pa.tolist(), xb.tolist(), pb.tolist())
        decided += up == low
    assert decided >= 250
    # W_inf decided by a level of 2^-999 (plain) and by one of 2^-1001 (extended)
    for e in (-999, -1001):
        xa, xb = np.array([0, 10]), np.array([1, 6])
        pa, pb = np.array([2.0 ** e, 1.0]), np.array([2.0 ** e * 1.5, 1.0])   # a < b: W_inf = 9
        assert _core.models.markov_drift_walks(xa, pa, xb, pb, 0.0) == (9.0, 9.0)
        pb = np.array([2.0 ** e * 0.75, 1.0])                                   # a > b: W_inf = 6
        assert _core.models.markov_drift_walks(xa, pa, xb, pb, 0.0) == (6.0, 6.0)


# ---------------------------------------------------------------- the window bound (Lemma 2)
def exact_laws(steps, init, values, T):
    """laws[t][a] = {sum: P(S = sum, X_t = a)} as exact Fractions (forward/backward recursions
    over the dyadic rationals of the doubles); steps[t]: the matrix of X_t -> X_{t+1}."""
    k = len(init)
    F = [[dict() for _ in range(k)] for _ in range(T)]
    for x in range(k):
        if init[x] > 0:
            F[0][x][values[x]] = Fraction(init[x])
    for t in range(T - 1):
        for y in range(k):
            d = F[t + 1][y]
            for x in range(k):
                p = Fraction(steps[t][x][y])
                if p:
                    for s, w in F[t][x].items():
                        d[s + values[y]] = d.get(s + values[y], 0) + w * p
    B = [[dict() for _ in range(k)] for _ in range(T)]
    for x in range(k):
        B[T - 1][x][0] = Fraction(1)
    for t in range(T - 2, -1, -1):
        for x in range(k):
            d = B[t][x]
            for y in range(k):
                p = Fraction(steps[t][x][y])
                if p:
                    for s, w in B[t + 1][y].items():
                        d[s + values[y]] = d.get(s + values[y], 0) + w * p
    laws = []
    for t in range(T):
        row = []
        for a in range(k):
            J = {}
            for s1, f in F[t][a].items():
                for s2, b in B[t][a].items():
                    J[s1 + s2] = J.get(s1 + s2, 0) + f * b
            row.append({s: w for s, w in J.items() if w})
        laws.append(row)
    return laws


def worst_log_ratio(L1, L2):
    """max over atoms of |log(L2(s) / L1(s))| of the normalised laws (inf if supports differ)."""
    if set(L1) != set(L2):
        return mpmath.inf
    t1, t2 = sum(L1.values()), sum(L2.values())
    worst = mpmath.mpf(0)
    for s in L1:
        r = (L2[s] / t2) / (L1[s] / t1)
        worst = max(worst, abs(mpmath.log(mpmath.mpf(r.numerator) / r.denominator)))
    return worst


CASES = [  # (matrices of one period, init, values, T, m)
    ([[[0.9, 0.1], [0.2, 0.8]]], [0.3, 0.7], [0, 1], 25, 8),
    ([[[0.5, 0.5], [0.3, 0.7]]], [1.0, 0.0], [0, 1], 25, 8),
    ([[[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]], [0.2, 0.3, 0.5], [0, 1, 3], 21, 6),
    ([[[0.7, 0.3], [0.4, 0.6]], [[0.2, 0.8], [0.9, 0.1]]], [0.5, 0.5], [0, 2], 26, 8),   # period 2
    ([[[0.05, 0.95], [0.9, 0.1]]], [0.5, 0.5], [0, 1], 25, 8),                           # near-periodic
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_window_bound_is_at_least_the_exact_change_of_every_atom(case):
    """Corollary 3 with D = 1: for every interior step t -> t + p and every state, the certified
    omega is >= the exact largest |log| change of a normalised mass, over every atom (tails
    included); and it is informative (a fast-mixing chain's is small)."""
    mats, init, values, T, m = CASES[case]
    mpmath.mp.dps = 50
    p = len(mats)
    steps = [mats[t % p] for t in range(T - 1)]
    M = np.array([mats])
    om = _core.models.markov_window_drift(M, np.array([init]), np.array(values, dtype=np.int64), T, m, p)
    laws = exact_laws(steps, init, values, T)
    k = len(init)
    checked = 0
    for t in range(m, T - p - m):
        for a in range(k):
            if not laws[t][a]:
                assert not laws[t + p][a]
                continue
            true = worst_log_ratio(laws[t][a], laws[t + p][a])
            assert true <= om[t % p, a], (t, a, true, om[t % p, a])
            checked += 1
    assert checked >= 2 * k
    if case == 1:   # informative: a chain that forgets fast (second eigenvalue 0.2)
        assert om.max() < 1e-3


def test_window_bound_sees_supports_that_alternate():
    """A transition of probability 0 that forces alternation: the support of a law changes from
    one position to the next (so one step has no bound: inf) but repeats every two."""
    M = np.array([[[0.3, 0.7], [1.0, 0.0]]])
    init, values, T = np.array([[0.5, 0.5]]), np.array([0, 1], dtype=np.int64), 25
    assert np.isinf(_core.models.markov_window_drift(M, init, values, T, 8, 1)).all()
    assert np.isfinite(_core.models.markov_window_drift(M, init, values, T, 8, 2)).all()
    laws = exact_laws([M[0].tolist()] * (T - 1), init[0].tolist(), values.tolist(), T)
    assert set(laws[12][1]) != set(laws[13][1])
    check_same(M, init, values, 120)


# ---------------------------------------------------------------- persistent chains (issue 41)
# Household occupancy chains stay put with probability 0.9 - 0.97: second eigenvalue lambda_2 =
# 1 - a - b of [[1 - a, a], [b, 1 - b]], stationary law (b, a) / (a + b), taken asymmetric.
PERSISTENT_LAMBDAS = (0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98)
PERSISTENT_PI0 = (0.1, 0.3, 0.6, 0.85)


def persistent_chain(lam, pi0):
    a, b = (1.0 - pi0) * (1.0 - lam), pi0 * (1.0 - lam)
    return np.array([[[1.0 - a, a], [b, 1.0 - b]]])


@pytest.mark.parametrize("lam", PERSISTENT_LAMBDAS)
def test_skipping_equals_the_direct_computation_on_persistent_chains(lam):
    """A grid of persistent chains (lambda_2 0.8 .. 0.98, stationary laws 0.1 .. 0.85) at T = 1500:
    the automatic plan and windows of 96 and 192 steps (omega ~1e-6 .. 1: representatives certify
    short stretches, and later rounds place representatives in what the first left uncovered)
    give the direct computation's table bit for bit."""
    T, values = 1500, np.array([0, 1], dtype=np.int64)
    for pi0 in PERSISTENT_PI0:
        M, init = persistent_chain(lam, pi0), np.array([[0.5, 0.5]])
        check_same(M, init, values, T, windows=(96, 192))


def test_later_rounds_of_representatives_cover_what_the_first_left():
    """With a window whose drift exceeds the representative's margins the first representative
    certifies a short stretch; the rounds that follow place representatives in the rest. Over the
    grid, several chains take more than one round, and the positions they certify are not computed
    (the counts of what the skipping did add up to T per prior); the tables equal the direct
    computation's, on one thread and two, with the progress counting every position once."""
    T, values = 1500, np.array([0, 1], dtype=np.int64)
    multi = 0
    for lam in PERSISTENT_LAMBDAS:
        for pi0 in PERSISTENT_PI0:
            M, init = persistent_chain(lam, pi0), np.array([[pi0, 1.0 - pi0]])
            W, st = _core.models.markov_w_inf_stats(M, init, values, T, 1, window=96)
            m = 96
            # ends, representatives, certified and direct positions: every position once
            assert 2 * m + st["representatives"] + st["certified"] + st["direct"] == T, st
            multi += st["rounds"] > 1
            if st["rounds"] > 1:
                assert st["certified"] > 0
    assert multi >= 3
    M = np.concatenate([persistent_chain(0.9, 0.3), persistent_chain(0.95, 0.6), persistent_chain(0.97, 0.1)])
    init = np.full((3, 2), 0.5)
    W_full, _ = _core.models.markov_w_inf(M, init, values, T, 2, full=True)
    for threads in (1, 2):
        seen = []
        W, _ = _core.models.markov_w_inf(M, init, values, T, threads, window=96,
                                         progress=lambda d, t: seen.append((d, t)))
        assert np.array_equal(W, W_full)
        assert seen[-1] == (3 * T, 3 * T)
    for th in range(3):     # one prior: its two streams side by side, its representatives in parallel
        W, _ = _core.models.markov_w_inf(M[th:th + 1], init[th:th + 1], values, T, 2, window=96)
        assert np.array_equal(W, W_full[th:th + 1])


def test_persistent_chains_are_planned_at_a_year_of_half_hours():
    """T = 17,520: every chain of the grid gets a usable plan. The doubling of the window used to
    stop when one doubling failed to halve omega (P = [[0.935, 0.065], [0.033, 0.967]]: omega 5.00
    at m = 8 and 2.58 at m = 16), so such chains fell back to the direct computation (162 CPU s)."""
    values = np.array([0, 1], dtype=np.int64)
    issue = np.array([[[0.935, 0.065], [0.033, 0.967]]])
    om = [_core.models.markov_window_drift(issue, np.array([[0.5, 0.5]]), values, 17520, m, 1).max() for m in (8, 16)]
    assert om[1] > 0.5 * om[0]          # the old stopping rule's case
    for M in [issue] + [persistent_chain(lam, pi0) for lam in PERSISTENT_LAMBDAS for pi0 in PERSISTENT_PI0]:
        plan = _core.models.markov_skip_plan(M, np.array([[0.5, 0.5]]), values, 17520, eta=1e-4)
        assert plan["usable"], M.tolist()
        assert 8 <= plan["m"] <= 1280
        lam = 1.0 - M[0, 0, 1] - M[0, 1, 0]
        if lam <= 0.95 + 1e-12:   # the drift over the farthest interior position meets the plan's target
            assert plan["period"] == 1 and plan["omega"].max() * 17520 / 2 <= 1e-4, (M.tolist(), plan)


def test_identical_rows_certify_every_interior_position_exactly():
    """Identical rows: the windows are equal exactly (Theorem 7), the levels of the two laws tie
    exactly at every position, and the representative's certified value covers the interior."""
    M = np.array([[[0.3, 0.7], [0.3, 0.7]]])
    init, values = np.array([[0.3, 0.7]]), np.array([0, 1], dtype=np.int64)
    W = check_same(M, init, values, 400, threads=2)
    assert (W == 1.0).all()
    fw = markov_chain(M[0], T=400)
    assert fw.w_inf().value == 1.0


if __name__ == "__main__":   # regenerate tests/data/markov_skip_T2000.json (the direct computation: minutes)
    recs = []
    for j in range(len(LONG)):
        M, init, values = long_chain(j)
        W, _ = _core.models.markov_w_inf(M, init, values, 2000, 0, full=True)
        recs.append({"case": list(LONG[j]), "trans": M.tolist(), "init": init.tolist(), "values": values.tolist(),
                     "W": rle(by_phase(W, LONG[j][2]))})
        print(LONG[j], np.unique(W), flush=True)
    DATA.write_text(json.dumps(recs) + "\n")
