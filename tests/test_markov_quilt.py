"""The Markov Quilt Mechanism (Song et al. 2017: Markov Quilt Mechanism, max-influence of a
Markov quilt, MQMExact, MQMApprox) against the authors' MATLAB reference values (run under GNU
Octave, conventions reproduced with ``_compat``), exact brute force over all paths (Fractions),
and the soundness of the default conventions."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import puffer
from puffer.mechanisms import MarkovQuilt, Wasserstein
from puffer.mechanisms.markov_quilt import mqm_sigma, quilt_influence

# run_synthetic.m: eps = 1, T = 100, M = [[1 - q, q], [1 - p, p]]; (q, p, MQMApprox, MQMExact)
SYNTHETIC = [
    (0.1, 0.1, 12.922258311686633, 1.0),
    (0.3, 0.3, 10.153710842010804, 1.0),
    (0.5, 0.5, 8.9730481418666361, 1.0),
    (0.1, 0.2, 14.075524332447946, 3.6320613121643675),
    (0.2, 0.1, 12.849120114582998, 3.3637356829270817),
    (0.2, 0.3, 12.215591020921742, 3.2927358219298068),
    (0.4, 0.6, 11.536776182399961, 3.5717917688495349),
    (0.5, 0.4, 10.23211741632295, 1.8059900803230327),
    (0.1, 0.5, 20.183208939560263, 9.8976172123217889),
    (0.3, 0.7, 15.572371965558842, 6.723596585772694),
    (0.2, 0.8, 23.979070520506987, 13.075108608668462),
    (0.1, 0.9, 49.220197386829327, 31.737788616902648),
]

# run_realData.m: (M, eps, quilt range l used as T, MQMApprox, its quilt (a, b), MQMExact)
REALDATA = [
    ([[.8, .1, .1], [.1, .8, .1], [.1, .1, .8]], 1, 64, 42.28649935331579, (19, 16), 23.573669111586767),
    ([[.8, .1, .1], [.1, .8, .1], [.1, .1, .8]], 2, 48, 17.743279832785653, (16, 13), 9.0170110212723298),
    ([[.7, .2, .1], [.3, .5, .2], [.2, .3, .5]], 1, 48, 29.601107740000195, (14, 12), 10.61146418808203),
    ([[.7, .2, .1], [.3, .5, .2], [.2, .3, .5]], 2, 40, 12.66056386529603, (11, 10), 4.1084210139023938),
    ([[.9, .1], [.1, .9]], 1, 72, 54.834912561458935, (24, 20), 33.629267573291969),
    ([[.9, .1], [.1, .9]], 2, 56, 22.480282392691588, (19, 16), 12.371703229577317),
]


def _binary(q, p):
    return np.array([[1 - q, q], [1 - p, p]])


@pytest.mark.parametrize("q,p,approx,exact", SYNTHETIC)
def test_markov_quilt_matches_matlab_synthetic(q, p, approx, exact):
    """MQMExact and MQMApprox (Song et al. 2017) reproduce run_synthetic.m to 1e-12 relative
    through the public entry point MarkovQuilt(framework, eps, method) with the MATLAB
    conventions (chain started from the first row of M^100, nodes 2..T-1, eigen-gap 1 - |l2|)."""
    M = _binary(q, p)
    fw = puffer.models.markov_chain(M, T=100, init=np.linalg.matrix_power(M, 100)[0])
    m = MarkovQuilt(fw, eps=1.0, method="exact", _compat="synthetic")
    assert m.noise.scale == pytest.approx(exact, rel=1e-12)
    assert m.noise.scale >= exact * (1 - 1e-15)          # rounded up, never below
    ma = MarkovQuilt(fw, eps=1.0, method="approx", _compat="synthetic")
    assert ma.noise.scale == pytest.approx(approx, rel=1e-12)
    assert m.guarantee == puffer.PP(1.0, 0.0)
    # the default conventions (true initial law M^100 row, every node) give the same here
    assert MarkovQuilt(fw, eps=1.0).noise.scale == pytest.approx(exact, rel=1e-12)


def test_markov_quilt_brief_anchor_values():
    """The two values named in the task: MQMExact sigma at (q, p) = (0.1, 0.2) and (0.1, 0.9)."""
    for (q, p), want in (((0.1, 0.2), 3.6320613121643675), ((0.1, 0.9), 31.737788616902648)):
        M = _binary(q, p)
        fw = puffer.models.markov_chain(M, T=100, init=np.linalg.matrix_power(M, 100)[0])
        assert MarkovQuilt(fw, eps=1, method="exact", _compat="synthetic").noise.scale == \
            pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("M,eps,l,approx,ab,exact", REALDATA)
def test_markov_quilt_matches_matlab_realdata(M, eps, l, approx, ab, exact):
    """run_realData.m (MQMExact with the worst-case upstream ratio over the initial state, the
    reversal eigen-gap (1 - l2(M M*)) / 2, the quilt range l as T), including the MQMApprox
    quilt (a, b) the MATLAB search picked."""
    k = len(M)
    s, _ = mqm_sigma(M, np.full(k, 1 / k), l, eps, _compat="realdata")
    assert s == pytest.approx(exact, rel=1e-12)
    sa, qa = mqm_sigma(M, np.full(k, 1 / k), l, eps, method="approx", _compat="realdata")
    assert sa == pytest.approx(approx, rel=1e-12)
    assert (qa.a, qa.b) == ab
    # through the mechanism: Theta = {M}, any initial law (the compat mode ignores it)
    fw = puffer.models.markov_chain(M, T=l, init=np.full(k, 1 / k))
    assert MarkovQuilt(fw, eps=eps, _compat="realdata").sigma == pytest.approx(exact, rel=1e-12)


def test_markov_quilt_relabelling_symmetry():
    """(q, p) -> (1 - p, 1 - q) relabels the states: the same sigma (MATLAB: 31.7377... both)."""
    a, _ = mqm_sigma(_binary(0.1, 0.9), [0.5, 0.5], 100, 1.0)
    b, _ = mqm_sigma(_binary(0.1, 0.9)[::-1, ::-1], [0.5, 0.5], 100, 1.0)
    assert a == pytest.approx(b, rel=1e-13)


# ------------------------------------------------------------------ brute force (Fractions)

def _paths(M, init, T):
    k = len(init)
    for xs in itertools.product(range(k), repeat=T):
        p = init[xs[0]]
        for u, v in zip(xs, xs[1:]):
            p *= M[u][v]
        yield xs, p


def _bf_influence(M, init, T, t, a, b, marginal=None):
    """max over x, x' (both possible) and x_Q of P(X_Q = x_Q | X_t = x) / P(X_Q = x_Q | X_t = x'),
    exactly, by enumerating every path (``marginal=x``: P(X_t = x) instead)."""
    k = len(init)
    if marginal is not None:
        return sum(p for xs, p in _paths(M, init, T) if xs[t] == marginal)
    Q = [t - a] if a is not None else []
    Q += [t + b] if b is not None else []
    joint: dict = {}
    marg = [Fraction(0)] * k
    for xs, p in _paths(M, init, T):
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
                if num == 0:
                    continue
                if den == 0:
                    return math.inf
                best = max(best, num / den)
    return best


CHAINS = [
    ([[Fraction(7, 10), Fraction(2, 10), Fraction(1, 10)],
      [Fraction(3, 10), Fraction(5, 10), Fraction(2, 10)],
      [Fraction(1, 5), Fraction(3, 10), Fraction(1, 2)]], [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)]),
    # non-reversible (a cycle with laziness), started in a point mass
    ([[Fraction(1, 2), Fraction(1, 2), Fraction(0)],
      [Fraction(0), Fraction(1, 2), Fraction(1, 2)],
      [Fraction(1, 2), Fraction(0), Fraction(1, 2)]], [Fraction(1), Fraction(0), Fraction(0)]),
]


@pytest.mark.parametrize("M,init", CHAINS)
def test_quilt_influence_brute_force(M, init):
    """The max-influence of every quilt of every node (Song et al. 2017, max-influence of a
    Markov quilt, computed as in MQMExact) equals the brute-force value over all k^T paths
    (exact Fractions) up to the outward rounding: never below, within 1e-12."""
    T = 6
    Mf = np.array(M, dtype=float)
    i0 = np.array(init, dtype=float)
    for t in range(T):
        for a in [None] + list(range(1, t + 1)):
            for b in [None] + list(range(1, T - t)):
                if a is None and b is None:
                    continue
                want = _bf_influence(M, init, T, t, a, b)
                if want == 0:       # no possible pair at this node (point-mass start)
                    continue
                got = quilt_influence(Mf, i0, T, t, a, b)
                if want == math.inf:
                    assert got == math.inf
                    continue
                exact = math.log(want)
                assert got >= exact - 1e-15 and got <= exact + 1e-12 * max(1.0, exact), (t, a, b, got, exact)


def _bf_sigma(M, init, T, eps, nodes):
    """max over ``nodes`` of min over all quilts of card / (eps - e), e from brute force."""
    best_t = 0.0
    for t in nodes:
        if sum(1 for x in range(len(init)) if _bf_influence(M, init, T, t, None, None, marginal=x) > 0) < 2:
            continue        # fewer than two possible states at X_t: no secret pair
        cands = [T / eps]
        for a in [None] + list(range(1, t + 1)):
            for b in [None] + list(range(1, T - t)):
                if a is None and b is None:
                    continue
                w = _bf_influence(M, init, T, t, a, b)
                if w == 0 or w == math.inf:
                    continue
                e = math.log(w)
                card = (a if a is not None else t + 1) + (b if b is not None else T - t) - 1
                if e < eps:
                    cands.append(card / (eps - e))
        best_t = max(best_t, min(cands))
    return best_t


@pytest.mark.parametrize("M,init", CHAINS)
def test_markov_quilt_sigma_brute_force(M, init):
    """MQMExact's sigma = max_t min_quilts card / (eps - e) recomputed from the brute-force
    influences of all quilts: the mechanism's sigma is never smaller and within 1e-12."""
    T, eps = 6, 1.5
    want = _bf_sigma(M, init, T, eps, range(T))
    s, q = mqm_sigma(np.array(M, dtype=float), np.array(init, dtype=float), T, eps)
    assert want * (1 - 1e-15) <= s <= want * (1 + 1e-12)


def test_markov_quilt_default_searches_every_node():
    """The MATLAB code searches only nodes 2..T-1 (1-based); puffer searches every node. On a
    chain where state 2 is possible only at X_0 (so X_0 has its own secret pair) the default
    equals brute force over all nodes, and is never below the value over MATLAB's nodes."""
    F = Fraction
    M = [[F(3, 5), F(2, 5), F(0)], [F(2, 5), F(3, 5), F(0)], [F(1, 100), F(99, 100), F(0)]]
    init = [F(1, 2), F(0), F(1, 2)]
    T, eps = 6, 1.0
    everywhere = _bf_sigma(M, init, T, eps, range(T))
    matlab_nodes = _bf_sigma(M, init, T, eps, range(1, T - 1))
    assert everywhere >= matlab_nodes
    fw = puffer.models.markov_chain(np.array(M, dtype=float), T=T, init=np.array(init, dtype=float))
    m = MarkovQuilt(fw, eps=eps)
    assert everywhere * (1 - 1e-15) <= m.sigma <= everywhere * (1 + 1e-12)
    # X_0's own pair is searched: its sigma is the brute-force one for node 0
    s0 = _bf_sigma(M, init, T, eps, [0])
    from puffer.mechanisms.markov_quilt import _exact_tables, _node_sigma
    tab = _exact_tables(np.array(M, dtype=float), np.array(init, dtype=float), T, False)
    r0 = _node_sigma(0, T, eps, tab, None, tab.ok[0])
    assert s0 * (1 - 1e-15) <= r0[0] <= s0 * (1 + 1e-12)
    assert tab.prs[r0[5]] in ((0, 2), (2, 0))


def test_markov_quilt_matlab_stationary_row_is_not_the_stationary_law():
    """MATLAB's pi = first row of M^100 (0.49999999989814925 for the slowly mixing chain;
    Song et al. 2017 MQMApprox uses pi_min): the default uses a rigorous lower bound of the true
    stationary law instead, which is larger here."""
    M = _binary(0.1, 0.9)
    assert np.linalg.matrix_power(M, 100)[0].min() == pytest.approx(0.49999999989814925, rel=1e-12)
    from puffer.mechanisms.markov_quilt import _stationary_lower
    lo = _stationary_lower(M)
    assert 0.5 * (1 - 1e-9) < lo <= 0.5
    assert lo > np.linalg.matrix_power(M, 100)[0].min()


def test_markov_quilt_approx_is_an_upper_bound_of_exact():
    """MQMApprox bounds the max-influence through pi_min and the spectral gap (valid for every
    initial law): for random (also non-reversible) chains its sigma is >= MQMExact's."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        k = int(rng.integers(2, 5))
        M = rng.dirichlet(np.ones(k) * 2, size=k)
        init = rng.dirichlet(np.ones(k))
        for T in (5, 40):
            se, _ = mqm_sigma(M, init, T, 1.0)
            sa, _ = mqm_sigma(M, init, T, 1.0, method="approx")
            assert sa >= se * (1 - 1e-15)


def test_markov_quilt_theta_max_over_priors_and_binding_prior():
    """Theta with several priors: sigma is the max of the per-prior sigmas and the guarantee
    names the binding prior, node and quilt."""
    Ms = [[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.4, 0.6]], [[0.95, 0.05], [0.1, 0.9]]]
    fw = puffer.models.markov_chain(Ms, T=60, labels=["calm", "busy", "sticky"])
    m = MarkovQuilt(fw, eps=1.0)
    per = [mqm_sigma(M, puffer.models.stationary_distribution(M), 60, 1.0)[0] for M in Ms]
    assert m.sigma == max(per)
    assert m.quilt["prior"] == "sticky"
    assert set(m.per_prior) == {"calm", "busy", "sticky"}
    notes = m.guarantee.provenance.notes
    assert "binding prior 'sticky'" in notes and f"node X{m.quilt['node']}" in notes
    assert "max-influence" in notes
    assert m.sensitivity.witness[0] == "sticky"
    assert m.quilt["influence"] < 1.0
    # the quilt's max-influence and card give back sigma
    q = m.quilt
    assert q["sigma"] == pytest.approx(q["card"] / (1.0 - q["influence"]), rel=1e-12)


def test_markov_quilt_lipschitz_and_values():
    """The sum of state values v is L-Lipschitz with L = max v - min v; Laplace scale L * sigma."""
    M = [[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.3, 0.3, 0.4]]
    fw = puffer.models.markov_chain(M, T=30, values=[0, 2, 5])
    m = MarkovQuilt(fw, eps=0.5)
    assert m.lipschitz == 5.0
    assert m.noise.scale == pytest.approx(5 * m.sigma, rel=1e-15) and m.noise.scale >= 5 * m.sigma
    m1 = MarkovQuilt(fw, eps=0.5, lipschitz=1.0)
    assert m1.noise.scale == pytest.approx(m.sigma, rel=1e-15)
    assert m.sensitivity.value == pytest.approx(0.5 * m.noise.scale, rel=1e-15)
    assert m.group is not None and m.group.sensitivity == 150.0


def test_markov_quilt_interface_and_errors():
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=20)
    m = MarkovQuilt(fw, eps=1.0)
    d = m.to_dict()
    assert d["mechanism"] == "MarkovQuilt"
    assert {"paper": "song2017", "item": "Markov Quilt Mechanism", "note": ""} in d["refs"]
    assert d["sensitivity"]["kind"] == "markov_quilt"
    out = m.release(np.zeros(4), rng=1)
    assert out.shape == (4,) and np.all(out != 0)
    assert m.target["eps"] == 1.0
    with pytest.raises(puffer.ParameterError, match="eps"):
        MarkovQuilt(fw, eps=0.0)
    with pytest.raises(puffer.ParameterError, match="method"):
        MarkovQuilt(fw, eps=1.0, method="fast")
    with pytest.raises(puffer.ParameterTypeError, match="framework"):
        MarkovQuilt(puffer.models.correlated_pair(), eps=1.0)
    with pytest.raises(puffer.ParameterError, match="_compat"):
        MarkovQuilt(fw, eps=1.0, _compat="octave")
    with pytest.raises(puffer.ParameterError, match="'a'"):
        quilt_influence([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], 5, 1, 2, None)


def test_markov_quilt_trivial_quilt_caps_sigma_and_iid_gives_one_over_eps():
    """sigma <= T / eps always (the trivial quilt); an i.i.d. chain (equal rows) gives 1 / eps."""
    fw = puffer.models.markov_chain([[0.999, 0.001], [0.001, 0.999]], T=15)
    m = MarkovQuilt(fw, eps=1.0)
    assert m.sigma == pytest.approx(15.0, rel=1e-15) and m.quilt["a"] is None and m.quilt["b"] is None
    fw = puffer.models.markov_chain([[0.3, 0.7], [0.3, 0.7]], T=50)
    assert MarkovQuilt(fw, eps=2.0).sigma == pytest.approx(0.5, rel=1e-13)


def test_markov_quilt_vs_wasserstein_table():
    """The numbers of the README / docstring comparison (eps = 1, 0/1 states, sum query):
    MQMExact wins on a fast-mixing chain, Wasserstein on a correlated one."""
    fast = puffer.models.markov_chain([[0.5, 0.5], [0.4, 0.6]], T=100)
    assert MarkovQuilt(fast, eps=1.0).noise.scale == pytest.approx(1.8059900803230327, rel=1e-12)
    assert Wasserstein(fast, eps=1.0).noise.scale == pytest.approx(2.0)
    corr = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=100)
    assert MarkovQuilt(corr, eps=1.0).noise.scale == pytest.approx(22.2983606366, rel=1e-10)
    assert Wasserstein(corr, eps=1.0).noise.scale == pytest.approx(6.0)


def test_markov_quilt_long_chain_grouping_matches_node_by_node():
    """For long chains interior nodes with the same upstream ratio are evaluated once; the result
    equals the node-by-node search (small T, where both run) and does not grow with T."""
    M = np.array([[0.9, 0.1], [0.2, 0.8]])
    from puffer.mechanisms.markov_quilt import _exact_tables, _node_sigma, _search
    for init in ([2 / 3, 1 / 3], [1.0, 0.0]):
        T = 120
        tab = _exact_tables(M, np.array(init), T, False)
        grouped = _search(list(range(T)), T, 1.0, tab)[0][0]
        one_by_one = max(r[0] for t in range(T)
                         if (r := _node_sigma(t, T, 1.0, tab, tab.R[t] if t else None, tab.ok[t])) is not None)
        assert one_by_one <= grouped <= one_by_one * (1 + 1e-8)
    s1, _ = mqm_sigma(M, [2 / 3, 1 / 3], 200, 1.0)
    s2, _ = mqm_sigma(M, [2 / 3, 1 / 3], 5000, 1.0)
    assert s2 == pytest.approx(s1, rel=1e-10)


def test_markov_quilt_approx_influence_bounds_brute_force():
    """MQMApprox's bound 2 log((1 + D_a)/(1 - D_a)) + log((1 + D_b)/(1 - D_b)), D_t = sigma_2^t /
    pi_min (Song et al. 2017, MQMApprox, with the singular-value form for non-reversible chains)
    is >= the exact max-influence of every quilt, for a non-reversible chain and a start far
    from stationary (brute force over all paths)."""
    from puffer.mechanisms.markov_quilt import _approx_ratio
    F = Fraction
    M = [[F(5, 10), F(4, 10), F(1, 10)], [F(1, 10), F(5, 10), F(4, 10)], [F(4, 10), F(1, 10), F(5, 10)]]
    init = [F(8, 10), F(1, 10), F(1, 10)]
    T = 6
    q = _approx_ratio(np.array(M, dtype=float), T, None)
    checked = 0
    for t in range(T):
        for a in [None] + list(range(1, t + 1)):
            for b in [None] + list(range(1, T - t)):
                if a is None and b is None:
                    continue
                bound = (2 * math.log(q[a - 1]) if a else 0.0) + (math.log(q[b - 1]) if b else 0.0)
                exact = math.log(_bf_influence(M, init, T, t, a, b))
                assert bound >= exact, (t, a, b, bound, exact)
                checked += math.isfinite(bound)
    assert checked > 10          # finite bounds were actually compared
