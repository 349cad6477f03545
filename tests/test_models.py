"""Model kernels against independent computations: brute-force enumeration of every path of
the Markov chain (exact fractions), scipy's binomial pmf, and forced log-space paths."""
import itertools
from fractions import Fraction
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

import puffer
import puffer._core as core
from puffer import models


def brute_markov(M, pi, T, values):
    """P(S = s | X_i = a) by enumerating all k^T paths with exact fractions."""
    k = len(pi)
    joint = {}
    for path in itertools.product(range(k), repeat=T):
        pr = F(pi[path[0]])
        for a, b in zip(path, path[1:]):
            pr *= F(M[a][b])
        s = sum(values[x] for x in path)
        for i, a in enumerate(path):
            joint[(i, a, s)] = joint.get((i, a, s), F(0)) + pr
    out = {}
    for (i, a, s), p in joint.items():
        out.setdefault((i, a), {})[s] = p
    return {key: {s: p / sum(d.values()) for s, p in d.items()} for key, d in out.items()}


@pytest.mark.parametrize("M, pi, T, values", [
    ([[F(9, 10), F(1, 10)], [F(1, 5), F(4, 5)]], [F(2, 3), F(1, 3)], 5, [0, 1]),
    ([[F(1, 2), F(1, 4), F(1, 4)], [F(1, 3), F(1, 3), F(1, 3)], [0, F(1, 2), F(1, 2)]], [F(1, 3), F(1, 3), F(1, 3)], 4, [0, 1, 3]),
    ([[0, 1], [1, 0]], [F(1, 2), F(1, 2)], 4, [-1, 2]),  # periodic chain, negative value
])
def test_markov_laws_match_enumeration(M, pi, T, values):
    A, P, O, S, L = core.models.markov_sum_laws(np.array([M], float), np.array([pi], float),
                                               np.array(values), T)
    ref = brute_markov(M, pi, T, values)
    k = len(pi)
    for i in range(T):
        for a in range(k):
            j = i * k + a
            got = dict(zip(A[O[j]:O[j + 1]].tolist(), P[O[j]:O[j + 1]].tolist()))
            want = ref.get((i, a), {})
            assert set(got) == {float(s) for s, p in want.items() if p > 0}
            for s, p in want.items():
                if p > 0:
                    assert got[float(s)] == pytest.approx(float(p), rel=1e-13, abs=0)
    assert not L.any()


def test_markov_log_space_path_keeps_tiny_atoms():
    # min transition 1e-200: linear space would lose P(S = 3 | X_1 = 0)-type masses of 1e-400.
    # Laws spanning more than 2^1000 are handed out as log masses (one flag per law); the others
    # as plain normalised masses, every reachable one positive.
    M = np.array([[[1 - 1e-200, 1e-200], [1e-200, 1 - 1e-200]]])
    A, P, O, S, L = core.models.markov_sum_laws(M, np.array([[0.5, 0.5]]), np.array([0, 1]), 4)
    assert L.tolist() == [False, False, True, True, True, True, False, False]
    j = 0 * 2 + 0  # position 0, state 0: masses ~ 1, 1e-200, 1e-200, 1e-200 (within 2^1000)
    assert A[O[j]:O[j + 1]].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert P[O[j] + 3] == pytest.approx(1e-200, rel=1e-12)
    j = 1 * 2 + 0  # position 1, state 0: S = 3 only by 1, 0, 1, 1: 0.5 * 1e-200 * 1e-200
    assert A[O[j]:O[j + 1]].tolist() == [0.0, 1.0, 2.0, 3.0]
    # log masses (shifted by the max): every reachable atom is finite
    assert np.isfinite(P[O[j]:O[j + 1]]).all()
    assert P[O[j]] == 0.0 and P[O[j] + 3] == pytest.approx(2 * np.log(1e-200), rel=1e-12)


def test_markov_validation():
    with pytest.raises(puffer.ParameterError, match="transition"):
        core.models.markov_sum_laws(np.array([[[0.5, 0.4], [0.5, 0.5]]]), np.array([[0.5, 0.5]]), np.array([0, 1]), 3)
    with pytest.raises(puffer.ParameterError, match="init"):
        core.models.markov_sum_laws(np.array([[[0.5, 0.5], [0.5, 0.5]]]), np.array([[0.7, 0.5]]), np.array([0, 1]), 3)
    with pytest.raises(puffer.ParameterError, match="'T'"):
        core.models.markov_sum_laws(np.array([[[0.5, 0.5], [0.5, 0.5]]]), np.array([[0.5, 0.5]]), np.array([0, 1]), 0)
    with pytest.raises(puffer.ParameterError, match="trans"):
        models.markov_chain([[0.5, 0.6], [0.5, 0.5]], T=3)
    with pytest.raises(puffer.ParameterError, match="'init'"):
        models.markov_chain([[0.5, 0.5], [0.5, 0.5]], T=3, init="uniform")
    with pytest.raises(puffer.ParameterError, match="values"):
        models.markov_chain([[0.5, 0.5], [0.5, 0.5]], T=3, values=[0.5, 1.0, 2.0])   # 3 values, 2 states
    with pytest.raises(puffer.ParameterError, match="'T'"):
        models.markov_chain([[0.5, 0.5], [0.5, 0.5]], T=-1)


def test_stationary_distribution():
    pi = models.stationary_distribution([[0.9, 0.1], [0.2, 0.8]])
    np.testing.assert_allclose(pi, [2 / 3, 1 / 3], rtol=1e-14)
    with pytest.raises(puffer.ParameterError):
        models.stationary_distribution([[1.0, 0.0], [0.0, 1.0]])


def test_poisson_binomial_against_scipy_and_brute_force():
    np.testing.assert_allclose(core.models.poisson_binomial(np.full(24, 0.7)),
                               stats.binom.pmf(np.arange(25), 24, 0.7), rtol=1e-12, atol=0)
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.5])
    brute = np.zeros(10)
    for bits in itertools.product((0, 1), repeat=9):
        pr = np.prod([pk if b else 1 - pk for pk, b in zip(p[1:], bits)])
        brute[sum(bits)] += pr
    np.testing.assert_allclose(core.models.poisson_binomial(p, 0), brute, rtol=1e-13)
    # deterministic users shift the support; p in {0, 1} allowed
    np.testing.assert_allclose(core.models.poisson_binomial(np.array([1.0, 0.0, 0.5])), [0, 0.5, 0.5, 0])


def test_poisson_binomial_extreme_tails_never_underflow_to_zero():
    x = core.models.poisson_binomial(np.full(3000, 0.7))
    assert (x > 0).all()          # 0.3^3000 = 1e-1569 still has an atom
    assert x.sum() == pytest.approx(1.0, rel=1e-12)
    assert int(np.argmax(x)) == 2100
    with pytest.raises(puffer.ParameterError, match="'p'"):
        core.models.poisson_binomial(np.array([0.5, 1.5]))


def test_correlated_pair_laws_spec000_example1():
    fw = models.correlated_pair(F(1, 2), F(3, 10))
    mu0, mu1 = fw.conditional("theta", "X1=0"), fw.conditional("theta", "X1=1")
    # Pierquin et al. 2024: mu_0 Bernoulli with P(1) = p(1 - rho) = 7/20; mu_1 on {1, 2} with P(2) = p + rho(1 - p) = 13/20
    assert mu0.exact_probs == (F(13, 20), F(7, 20)) and mu0.atoms.tolist() == [0.0, 1.0]
    assert mu1.exact_probs == (F(7, 20), F(13, 20)) and mu1.atoms.tolist() == [1.0, 2.0]
    with pytest.raises(puffer.ParameterError, match="rho"):
        models.correlated_pair(F(1, 4), F(-1, 2))  # infeasible: rho >= -p/(1-p) = -1/3


def test_independent_users_laws():
    fw = models.independent_users([0.7] * 25, users=[0])
    np.testing.assert_allclose(fw.conditional("p", "S0=0").probs, stats.binom.pmf(np.arange(25), 24, 0.7), rtol=1e-12)
    assert fw.conditional("p", "S0=1").atoms[0] == 1.0
    np.testing.assert_allclose(fw.conditional("p", "S0=⊥").probs, stats.binom.pmf(np.arange(26), 25, 0.7), rtol=1e-12)
    assert len(fw.pairs) == 3
    with pytest.raises(puffer.ParameterError, match="'p'"):
        models.independent_users([0.5, 1.2])
    with pytest.raises(puffer.ParameterError, match="users"):
        models.independent_users([0.5, 0.2], users=[5])


@pytest.mark.parametrize("seed", range(6))
def test_fused_markov_w_inf_matches_law_by_law_path(seed):
    # The fused C++ path (laws fed straight to the transport kernel) against DiscreteDist laws +
    # puffer.transport.w_inf_many, on random 3-state chains with gapped values and zero transitions.
    rng = np.random.default_rng(seed)
    M = rng.dirichlet(np.ones(3), size=(4, 3))
    M[0, 0, 2] = 0.0
    M[0, 0] /= M[0, 0].sum()
    T = int(rng.integers(2, 12))
    fw = models.markov_chain(M, T, values=[0, 2, 5], init=rng.dirichlet(np.ones(3), size=4))
    fused = fw.w_inf()
    generic = puffer.Framework.w_inf(fw)
    assert fused.value == generic.value
    assert {(r.theta, r.pair): r.value for r in fused.records} == {(r.theta, r.pair): r.value for r in generic.records}


def test_markov_pairs_and_secrets_are_lazy_and_sizes_checked_first():
    """Issue 9 item 9: markov_chain(20 x 20, T = 20000) built 3.8 M pair tuples (27 s, 2.1 GiB)
    before anything ran; k = 64..1000 built them all before the core rejected k; a request that
    cannot fit was attempted (T = 30000 tried ~29 GB)."""
    from puffer import ParameterError
    from puffer.models import markov_chain
    from timing import cpu_seconds

    rng = np.random.default_rng(1)
    M = rng.dirichlet(np.ones(20), size=20)
    t0 = cpu_seconds()   # CPU time (27 s before the fix), which a loaded machine does not inflate
    fw = markov_chain(M, T=20000)
    assert cpu_seconds() - t0 < 5.0
    assert len(fw.pairs) == 20000 * 190 and fw.pairs[-1] == ("X19999=18", "X19999=19")
    assert "X19999=19" in fw.secrets and "X20000=0" not in fw.secrets and len(fw.secrets) == 400000
    assert fw.pairs[:2] == [("X0=0", "X0=1"), ("X0=0", "X0=2")]
    with pytest.raises(ParameterError, match="at most 64 states"):
        markov_chain(np.full((65, 65), 1 / 65), T=3)
    big = markov_chain(M, T=30000)
    with pytest.raises(ParameterError, match="GiB"):
        big.conditional(0, "X0=0")        # all laws: far beyond this machine, refused before allocating


def _exact_stationary(P):
    """Exact stationary law of the chain whose off-diagonal entries are the given doubles (the
    diagonal is 1 minus the rest, exactly): Gaussian elimination on pi Q = 0, sum pi = 1 in
    Fractions."""
    k = len(P)
    off = [[Fraction(float(P[i][j])) if i != j else Fraction(0) for j in range(k)] for i in range(k)]
    # rows: balance of state j (inflow - outflow = 0) for j < k - 1, then sum pi = 1
    A = [[off[i][j] if i != j else -sum(off[j]) for i in range(k)] for j in range(k - 1)] + [[Fraction(1)] * k]
    b = [Fraction(0)] * (k - 1) + [Fraction(1)]
    for c in range(k):
        r = next(r for r in range(c, k) if A[r][c] != 0)
        A[c], A[r], b[c], b[r] = A[r], A[c], b[r], b[c]
        for r in range(k):
            if r != c and A[r][c] != 0:
                f = A[r][c] / A[c][c]
                A[r] = [a - f * x for a, x in zip(A[r], A[c])]
                b[r] -= f * b[c]
    return [b[i] / A[i][i] for i in range(k)]


def test_stationary_distribution_near_deterministic_against_exact_fractions():
    # Entries down to 1e-300 off the diagonal: the law is exact to a few ulps in every component
    # (Grassmann-Taksar-Heyman reads only off-diagonal entries). Solving pi (P - I) = 0 formed
    # 1 - P_ii = 0 and returned (1, 0) for the first chain (its Delta_G then came out 3, not 4).
    rng = np.random.default_rng(7)
    chains = [np.array([[1.0, 1e-300], [1e-300, 1.0]]), np.array([[1.0, 1e-17], [3e-17, 1.0]])]
    for _ in range(30):
        k = int(rng.integers(2, 5))
        P = 10.0 ** rng.uniform(-300, -0.5, size=(k, k)) * rng.uniform(0.5, 1, size=(k, k))
        np.fill_diagonal(P, 0.0)
        P /= np.maximum(1.0, P.sum(axis=1, keepdims=True) * 1.01)
        np.fill_diagonal(P, 1.0 - P.sum(axis=1))
        chains.append(P)
    for P in chains:
        got = models.stationary_distribution(P)
        exact = _exact_stationary(P)
        for g, e in zip(got, exact):
            assert abs(Fraction(float(g)) - e) <= e * Fraction(1, 10**12), (P, got, [float(x) for x in exact])
    fw = models.markov_chain(chains[0], T=4)
    assert fw.initial_laws.tolist() == [[0.5, 0.5]] and fw.w_inf().value == 4.0
