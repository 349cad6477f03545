"""Time-varying Markov chains (issue 33 item 1): a matrix per step (trans of shape (n, T - 1, k, k),
trans[:, t] the law of X_{t+1} given X_t) and periodic chains (period=P, trans[:, t % P]).

Oracles: exact Delta_G by enumerating every path with exact integer masses (every double is a
dyadic rational: p 2^D is an integer, D = 1126 covers the subnormals), W_inf by the exact
quantile coupling (levels cross-multiplied); the homogeneous code where the steps are equal; the
brute-force max-influence of the Markov quilt (exact Fractions); the per-pair Python paths of
Kantorovich Thm 2 and the DAGWM. Every test here fails on the code before time-varying chains
(markov_chain refused any 4-D trans: "expected an array with ndim in (2, 3)")."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import puffer
from puffer import _core
from puffer.errors import ParameterError
from puffer.models import markov_chain, periodic_stationary_distribution
from test_markov_scale import _dyadic, exact_w_inf, kernel_band, possible_w_inf

TINY = [0.5, 0.1, 0.9, 0.3, 0.25, 1e-30, 1e-140, 1e-300]


def path_laws(steps, init, values, T):
    """laws[t][a] = {sum: integer mass} of S = sum_t values[X_t] jointly with X_t = a, by
    enumerating all k^T paths; the step X_t -> X_{t+1} uses steps[t] (exact dyadic integers)."""
    k = len(init)
    Pi = [[[_dyadic(float(M[x][y])) for y in range(k)] for x in range(k)] for M in steps]
    I0 = [_dyadic(float(p)) for p in init]
    laws = [[{} for _ in range(k)] for _ in range(T)]
    for path in itertools.product(range(k), repeat=T):
        m = I0[path[0]]
        for t in range(T - 1):
            if m == 0:
                break
            m *= Pi[t][path[t]][path[t + 1]]
        if m == 0:
            continue
        s = sum(values[x] for x in path)
        for t in range(T):
            d = laws[t][path[t]]
            d[s] = d.get(s, 0) + m
    return laws


def exact_table(steps, init, values, T, band=None):
    """The exact W table (T, k(k-1)/2), -1 for an impossible secret; with ``band``, the largest
    value the certified walk may report (levels closer than the band of unknown order)."""
    laws = path_laws(steps, init, values, T)
    k = len(init)
    out = []
    for t in range(T):
        row = []
        for a in range(k):
            for b in range(a + 1, k):
                if laws[t][a] and laws[t][b]:
                    row.append(exact_w_inf(laws[t][a], laws[t][b]) if band is None else
                               possible_w_inf(laws[t][a], laws[t][b], band))
                else:
                    row.append(-1)
        out.append(row)
    return np.array(out, dtype=np.float64)


def _random_step(rng, k, tiny):
    while True:
        row_mats = []
        for _ in range(k):
            row = np.array([rng.choice(tiny) if rng.random() < 0.5 else rng.random() for _ in range(k)])
            if rng.random() < 0.15:
                row[rng.integers(k)] = 0.0
            j = int(np.argmax(row))
            row[j] = 0.0
            row[j] = 1.0 - row.sum()
            row_mats.append(row if row[j] >= 0 else np.full(k, 1.0 / k))
        return np.array(row_mats)


def _check_table(fw, steps, init, values, T, k):
    """The framework's W tables (every prior) against the exact tables; an over-report is
    allowed only where two exact levels are closer than the kernel's band (then at most the
    safe-side value), never an under-report."""
    W, _ = _core.models.markov_w_inf(fw._M, fw._pi, fw._vals, T)
    over = 0
    for j in range(W.shape[0]):
        want = exact_table(steps[j], init[j], values, T)
        if not np.array_equal(W[j], want):
            band = 2 * kernel_band(T, k, T * (max(values) - min(values)) + 1)
            upper = exact_table(steps[j], init[j], values, T, band)
            assert (want <= W[j]).all() and (W[j] <= upper).all(), (steps[j], init[j], values, W[j], want)
            over += 1
    return over


@pytest.mark.parametrize("k,T,seed", [(2, 9, 1), (3, 6, 2)])
def test_per_step_delta_g_is_exact(k, T, seed):
    """Random per-step chains (two priors, tiny and zero entries, integer values) against path
    enumeration: every position and pair of the W table equals the exact W_inf."""
    rng = np.random.default_rng(seed)
    over = n = 0
    for _ in range(6):
        steps = [[_random_step(rng, k, TINY) for _ in range(T - 1)] for _ in range(2)]
        init = [rng.dirichlet(np.ones(k)) for _ in range(2)]
        values = sorted(int(v) for v in rng.choice(np.arange(-2, 4), k, replace=False))
        fw = markov_chain(np.array(steps), T=T, init=np.array(init), values=values)
        assert fw.transitions.shape == (2, T - 1, k, k) and fw.time_varying and fw.period is None
        over += _check_table(fw, steps, init, values, T, k)
        n += 1
    # levels of rows like [1, 1e-300, 1e-30] differ by far less than any float band: the walk
    # keeps the safe-side value there (checked above), the rest is exact
    assert over <= 3


@pytest.mark.parametrize("k,T,P,seed", [(2, 10, 3, 3), (3, 7, 2, 4)])
def test_periodic_delta_g_is_exact(k, T, P, seed):
    """Periodic chains (period P, stationary start at phase 0 and given starts) against path
    enumeration of the unrolled steps trans[t % P]."""
    rng = np.random.default_rng(seed)
    over = 0
    for r in range(6):
        per = [[_random_step(rng, k, TINY[:5]) for _ in range(P)] for _ in range(2)]
        values = sorted(int(v) for v in rng.choice(np.arange(0, 4), k, replace=False))
        init = "stationary" if r % 2 == 0 else np.array([rng.dirichlet(np.ones(k)) for _ in range(2)])
        try:
            fw = markov_chain(np.array(per), T=T, period=P, init=init, values=values)
        except ParameterError:
            continue          # a product over the period with no unique stationary law
        steps = [[per[j][t % P] for t in range(T - 1)] for j in range(2)]
        over += _check_table(fw, steps, fw.initial_laws, values, T, k)
    assert over <= 1


@pytest.mark.slow
def test_long_per_step_chain_against_path_enumeration():
    """k = 2 at T = 13 (8,192 paths), k = 3 at T = 8 (6,561), two priors, Delta_G exact."""
    rng = np.random.default_rng(33)
    for k, T in ((2, 13), (3, 8)):
        steps = [[_random_step(rng, k, TINY[:5]) for _ in range(T - 1)] for _ in range(2)]
        init = [rng.dirichlet(np.ones(k)) for _ in range(2)]
        values = list(range(k))
        fw = markov_chain(np.array(steps), T=T, init=np.array(init), values=values)
        want = max(exact_table(steps[j], init[j], values, T).max() for j in range(2))
        assert fw.w_inf().value == want
        assert _check_table(fw, steps, init, values, T, k) == 0


def test_equal_steps_match_the_homogeneous_code():
    """A per-step or periodic chain whose steps are all M gives the homogeneous chain's W table
    bit for bit (and its Delta_G, witness and records), with the stationary start too."""
    rng = np.random.default_rng(5)
    for k, T in ((2, 30), (3, 12)):
        M = rng.dirichlet(np.ones(k), size=(2, k))
        M[1, 0] = [1.0 - 1e-200 * (k - 1)] + [1e-200] * (k - 1)   # extended range
        hom = markov_chain(M, T=T, values=list(range(k)))
        step = markov_chain(np.repeat(M[:, None], T - 1, axis=1), T=T, values=list(range(k)),
                            init=hom.initial_laws)
        per = markov_chain(np.repeat(M[:, None], 4, axis=1), T=T, period=4, values=list(range(k)))
        np.testing.assert_allclose(per.initial_laws, hom.initial_laws, rtol=1e-12, atol=1e-15)
        a, b = hom.w_inf(), step.w_inf()
        c = markov_chain(np.repeat(M[:, None], 4, axis=1), T=T, period=4, values=list(range(k)),
                         init=hom.initial_laws).w_inf()
        for s in (b, c):
            assert s.value == a.value and s.witness == a.witness
            assert [r.value for r in s.records] == [r.value for r in a.records]
        W0 = _core.models.markov_w_inf(hom._M, hom._pi, hom._vals, T)[0]
        W1 = _core.models.markov_w_inf(step._M, step._pi, step._vals, T)[0]
        assert np.array_equal(W0, W1)


def test_periodic_equals_its_unrolled_per_step_chain():
    """period=P and the unrolled per-step chain (trans[t % P]) are the same model: equal W
    tables, laws, Kantorovich Thm 2 and DAGWM sensitivities; the issue's example now works."""
    assert markov_chain(np.full((1, 47, 2, 2), .5), T=48).w_inf().value == 1.0
    rng = np.random.default_rng(7)
    P, T = 5, 23
    per = rng.dirichlet(np.ones(3) * 0.8, size=(2, P, 3))
    fw = markov_chain(per, T=T, period=P, values=[0, 1, 3])
    unrolled = markov_chain(per[:, [t % P for t in range(T - 1)]], T=T, init=fw.initial_laws, values=[0, 1, 3])
    W = [_core.models.markov_w_inf(f._M, f._pi, f._vals, T)[0] for f in (fw, unrolled)]
    assert np.array_equal(W[0], W[1])
    assert fw.conditional(1, "X7=1").probs.tolist() == unrolled.conditional(1, "X7=1").probs.tolist()
    # the log-space reference arithmetic agrees
    assert fw.w_inf(_reference=True).value == fw.w_inf().value
    L = puffer.noise.Laplace(1.0)
    d1 = puffer.mechanisms.DistributionAwareWasserstein(fw, L).sensitivity.value
    d2 = puffer.mechanisms.DistributionAwareWasserstein(unrolled, L).sensitivity.value
    assert d1 == d2


def test_plan_mechanisms_match_their_python_paths():
    """Kantorovich Thm 2 and the DAGWM on a periodic chain: the compiled Markov paths equal the
    per-pair Python paths (laws from the framework, plans from puffer.transport)."""
    from puffer.mechanisms.kantorovich import _plans_reference, _thm2
    from puffer.mechanisms.wasserstein import _dagwm_plan_data, _dagwm_plans_reference

    P = np.array([[[0.9, 0.1], [0.3, 0.7]], [[0.6, 0.4], [0.1, 0.9]], [[0.5, 0.5], [0.5, 0.5]]])
    fw = markov_chain(P, T=11, period=3, values=[0, 2])
    ref, comp = _plans_reference(fw, "thm2", 1.0, None, lambda e: 1 / e), _thm2(fw, 1.0, None, None)
    assert comp[0].value == ref[0].value and comp[1] == pytest.approx(ref[1], rel=1e-12)
    meta, v, logm, starts = _dagwm_plans_reference(fw)
    data = _dagwm_plan_data(fw)
    assert data.meta == meta and np.array_equal(data.starts, starts)
    np.testing.assert_allclose(data.v, v, rtol=1e-14)
    np.testing.assert_allclose(data.logm, logm, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ Markov quilt (time-varying)

def _bf_influence(steps, init, T, t, a, b):
    """max over x, x' and x_Q of P(X_Q = x_Q | X_t = x) / P(X_Q = x_Q | X_t = x') over all paths."""
    k = len(init)
    Q = ([t - a] if a is not None else []) + ([t + b] if b is not None else [])
    joint: dict = {}
    marg = [Fraction(0)] * k
    for xs in itertools.product(range(k), repeat=T):
        p = init[xs[0]]
        for s in range(T - 1):
            p *= steps[s][xs[s]][xs[s + 1]]
        key = (xs[t], tuple(xs[j] for j in Q))
        joint[key] = joint.get(key, Fraction(0)) + p
        marg[xs[t]] += p
    best = Fraction(0)
    for x in range(k):
        for y in range(k):
            if x == y or marg[x] == 0 or marg[y] == 0:
                continue
            for xq in itertools.product(range(k), repeat=len(Q)):
                num = joint.get((x, xq), Fraction(0)) / marg[x]
                den = joint.get((y, xq), Fraction(0)) / marg[y]
                if num and not den:
                    return math.inf
                if num:
                    best = max(best, num / den)
    return best


def test_quilt_influence_time_varying_brute_force():
    """MQMExact's max-influence on a periodic chain (products of the step matrices between the
    node and its quilt nodes) equals the brute-force value over all paths (exact Fractions),
    never below, within 1e-12; and sigma of the quilt search equals the brute-force sigma."""
    from puffer.mechanisms.markov_quilt import mqm_sigma, quilt_influence

    F = Fraction
    per = [[[F(7, 10), F(3, 10)], [F(1, 5), F(4, 5)]], [[F(1, 2), F(1, 2)], [F(9, 10), F(1, 10)]],
           [[F(1, 10), F(9, 10)], [F(3, 5), F(2, 5)]]]
    init = [F(1, 3), F(2, 3)]
    T, P = 6, 3
    steps = [per[s % P] for s in range(T - 1)]
    Pf, i0 = np.array(per, dtype=float), np.array(init, dtype=float)
    eps, sig_bf = 2.0, 0.0
    for t in range(T):
        cands = [T / eps]
        for a in [None] + list(range(1, t + 1)):
            for b in [None] + list(range(1, T - t)):
                if a is None and b is None:
                    continue
                want = _bf_influence(steps, init, T, t, a, b)
                got = quilt_influence(Pf, i0, T, t, a, b, period=P)
                got2 = quilt_influence(np.array(steps, dtype=float), i0, T, t, a, b)
                assert got == got2
                e = math.log(want)
                assert e - 1e-15 <= got <= e + 1e-12 * max(1.0, e), (t, a, b, got, e)
                card = (a if a is not None else t + 1) + (b if b is not None else T - t) - 1
                if e < eps:
                    cands.append(card / (eps - e))
        sig_bf = max(sig_bf, min(cands))
    s, q = mqm_sigma(Pf, i0, T, eps, period=P)
    assert sig_bf * (1 - 1e-15) <= s <= sig_bf * (1 + 1e-12)
    m = puffer.mechanisms.MarkovQuilt(markov_chain(Pf, T=T, period=P, init=i0), eps=eps)
    assert m.sigma == s
    with pytest.raises(ParameterError, match="exact"):
        puffer.mechanisms.MarkovQuilt(markov_chain(Pf, T=T, period=P, init=i0), eps=eps, method="approx")


def test_quilt_of_equal_steps_matches_the_homogeneous_quilt():
    from puffer.mechanisms.markov_quilt import mqm_sigma

    M = np.array([[0.9, 0.1], [0.2, 0.8]])
    pi = [2 / 3, 1 / 3]
    for T in (10, 200):
        a = mqm_sigma(M, pi, T, 1.0)
        assert mqm_sigma(np.repeat(M[None], T - 1, 0), pi, T, 1.0)[0] == a[0]
        assert mqm_sigma(np.repeat(M[None], 4, 0), pi, T, 1.0, period=4)[0] == a[0]


# ------------------------------------------------------------------ shapes, errors, stationary law

def test_periodic_stationary_law_is_the_phase_zero_law():
    """init="stationary" of a periodic chain is the stationary law of the product of one period
    at phase 0: the law of X_P equals the law of X_0 (exact rationals on a 2-state example)."""
    day = np.array([[[0.75, 0.25], [0.5, 0.5]], [[0.5, 0.5], [0.25, 0.75]]])
    # Q = M0 M1 = [[7/16, 9/16], [3/8, 5/8]]: pi Q = pi gives pi = (2/5, 3/5) exactly
    pi0 = periodic_stationary_distribution(day)
    assert pi0 == pytest.approx([0.4, 0.6], abs=1e-15)
    fw = markov_chain(day, T=7, period=2)
    assert fw.initial_laws[0] == pytest.approx([0.4, 0.6], abs=1e-15)
    # secret probabilities at phase 1 are pi0 M0 = (0.6, 0.4), at phase 0 again (0.4, 0.6)
    assert fw.secret_probability(0, "X3=0") == pytest.approx(0.6, abs=1e-14)
    assert fw.secret_probability(0, "X4=0") == pytest.approx(0.4, abs=1e-14)


def test_shapes_and_errors():
    M = np.array([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(ParameterError, match=r"\(n, 9, k, k\)"):
        markov_chain(np.repeat(M[None, None], 5, axis=1), T=10)
    with pytest.raises(ParameterError, match="period"):
        markov_chain(np.repeat(M[None, None], 5, axis=1), T=10, period=4)
    with pytest.raises(ParameterError, match="one period"):
        markov_chain(M, T=10, period=3)
    bad = np.repeat(M[None, None], 3, axis=1)
    bad[0, 2, 1] = [0.5, 0.6]
    with pytest.raises(ParameterError, match="prior 0, matrix 2: row 1"):
        markov_chain(bad, T=10, period=3)
    # a 3-D array is a set of homogeneous priors unless period is given
    assert markov_chain(np.stack([M, M, M]), T=5).transitions.shape == (3, 2, 2)
    fw = markov_chain(np.stack([M, M, M]), T=5, period=3)
    assert fw.transitions.shape == (1, 3, 2, 2) and fw.period == 3
    assert fw.step_matrices(4 % 4).shape == (1, 2, 2)
    # a period whose product has no unique stationary law
    flip = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ParameterError, match="product"):
        markov_chain(np.stack([flip, flip]), T=5, period=2)


def test_year_of_half_hours_cost_memory_and_cluster_task():
    """A periodic chain at T = 17,520 (period 48, a year of half-hours) goes through cost(), the
    memory check and the cluster task like a homogeneous one: the same estimates (the matrices
    add bytes only) and the cluster task's W at a few positions equals the unrolled chain's."""
    from puffer.publish.engines.w_inf import _plan, _task_table

    T = 17_520
    rng = np.random.default_rng(48)
    day = rng.dirichlet([4, 1], size=(48, 2))
    fw = markov_chain(day, T=T, period=48)
    hom = markov_chain(day[0], T=T)
    c, h = fw.cost(threads=2, method="full"), hom.cost(threads=2, method="full")
    assert c.operations == h.operations and h.peak_bytes < c.peak_bytes < h.peak_bytes + 2**20
    # the skipping's plan of the periodic chain (a representative per phase) predicts far less
    assert fw.cost(threads=2).operations < c.operations / 10
    fw._check_w_inf_memory(1, 2)
    plan = _plan(fw, 2000)
    assert sum(p[4] for p in plan) == T and plan[0][:3] == (0, 1, 0)
    a = _task_table(fw._M, fw._pi, fw._vals, T, 8_000, 8_002, 2, None)
    assert a.shape == (1, 2, 1) and (a >= 1).all()
    unrolled = day[[t % 48 for t in range(T - 1)]][None]
    b = _task_table(np.ascontiguousarray(unrolled), fw._pi, fw._vals, T, 8_000, 8_002, 2, None)
    assert np.array_equal(a, b)
