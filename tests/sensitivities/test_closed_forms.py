"""Closed-form sensitivities of Pierquin, Bellet, Tommasi, Boussard 2024 (Prop 6.1, 6.2, 6.3, F.1,
Example 3) against independent computations.

The oracles take a different route from the implementation: conditional means of a Gaussian come
from minimising the quadratic form of the *precision* matrix under the constraint (a KKT system),
not from the covariance regression formula the module uses; the Ornstein-Uhlenbeck mean comes
from integrating the ODE numerically; Example 3 is checked with exact W_inf of random laws. Each
test asserts soundness (puffer's value >= the truth) and tightness (at most a few ulps above,
since these bounds are equalities for the chosen instances).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from puffer import ParameterError
from puffer.dist import DiscreteDist
from puffer.sensitivities import bounded_support, gaussian_attribute, gaussian_linear, langevin, weakly_dependent
from puffer.transport import w_inf

RNG = np.random.default_rng(20241124)


def _random_cov(m: int) -> np.ndarray:
    A = RNG.normal(size=(m, m))
    return A @ A.T + 0.1 * np.eye(m)


def _cond_mean_kkt(S: np.ndarray, N: np.ndarray, a: np.ndarray) -> np.ndarray:
    """argmin_x x^T S^{-1} x subject to N x = a: the conditional mean of N(0, S) given N X = a."""
    m, l2 = S.shape[0], N.shape[0]
    K = np.zeros((m + l2, m + l2))
    K[:m, :m] = np.linalg.inv(S)
    K[:m, m:] = N.T
    K[m:, :m] = N
    rhs = np.concatenate([np.zeros(m), a])
    return np.linalg.solve(K, rhs)[:m]


@pytest.mark.parametrize("trial", range(40))
def test_prop_6_2_against_precision_route(trial):
    m = int(RNG.integers(2, 6))
    S = _random_cov(m)
    p, r = RNG.choice(m, size=2, replace=False)
    K = np.sort(RNG.normal(size=int(RNG.integers(2, 5))) * 3)
    e_p = np.zeros((1, m))
    e_p[0, p] = 1.0
    # conditional laws of the released column are translates: W_inf = max |mean(a) - mean(b)|
    means = [_cond_mean_kkt(S, e_p, np.array([a]))[r] for a in K]
    truth = max(abs(x - y) for x, y in itertools.combinations(means, 2))
    got = gaussian_attribute(S, int(p), int(r), K).value
    assert got >= truth * (1 - 1e-10)   # the oracle itself carries ~1e-12 relative error
    assert got <= truth * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("trial", range(40))
def test_prop_f_1_against_kkt_route(trial):
    m = int(RNG.integers(2, 7))
    l1, l2 = int(RNG.integers(1, m + 1)), int(RNG.integers(1, m))
    S = _random_cov(m)
    M = RNG.normal(size=(l1, m))
    N = RNG.normal(size=(l2, m))
    K = RNG.normal(size=(int(RNG.integers(2, 5)), l2)) * 2
    shifts = [M @ _cond_mean_kkt(S, N, k) for k in K]
    truth = max(float(np.linalg.norm(x - y)) for x, y in itertools.combinations(shifts, 2))
    got = gaussian_linear(S, M, N, K).value
    assert got >= truth * (1 - 1e-9)
    assert got <= truth * (1 + 1e-6)


def test_prop_f_1_reduces_to_prop_6_2():
    S = _random_cov(4)
    M = np.zeros((1, 4))
    M[0, 3] = 1.0
    N = np.zeros((1, 4))
    N[0, 1] = 1.0
    lin = gaussian_linear(S, M, N, [[-1.0], [2.5]]).value
    att = gaussian_attribute(S, 1, 3, (-1.0, 2.5)).value
    assert lin == pytest.approx(att, rel=1e-12)


@pytest.mark.parametrize("C,times", [(1.0, [1.0]), (0.3, [0.0, 0.5, 2.0]), (2.0, [0.1, 0.1, 7.0, 30.0])])
def test_prop_6_3_exact_on_ornstein_uhlenbeck(C, times):
    """V(x) = C |x|^2 / 2 (OU): X_t | X_0 = a has mean a exp(-C t) and a covariance that does not
    depend on a, so for f = L * sum_i <u, x_i> the laws are translates and W_inf = L |a - b| sum_i
    exp(-C t_i) exactly: the corrected bound is tight, the printed exp(-2 C t) one is below it."""
    L, a, b = 1.7, -0.4, 1.1
    sol = solve_ivp(lambda t, y: -C * y, (0.0, max(times)), [1.0], t_eval=sorted(set(times)),
                    rtol=1e-12, atol=1e-14)
    decay = dict(zip(sol.t, sol.y[0]))
    truth = L * abs(a - b) * sum(decay[t] for t in times)
    got = langevin(L, abs(a - b), C, times).value
    assert got >= truth * (1 - 1e-9)
    assert got <= truth * (1 + 1e-9)
    printed = langevin(L, abs(a - b), C, times, paper_variant=True).value
    if max(times) > 0:
        assert printed < truth   # the printed form under-reports: why it is not the default


def test_prop_6_1_and_example_3():
    # 2 lambda + Delta, rounded up by at most a few ulps
    assert 1.5 <= weakly_dependent(1.0, 0.25).value <= 1.5 * (1 + 1e-15)
    assert 2.0 <= weakly_dependent(2.0, 0.0).value <= 2.0 * (1 + 1e-15)
    r = np.array([0.5, 1.0, 2.0])
    bound = bounded_support(r).value
    assert bound >= 3.5
    # any two laws of the sum supported in (0, sum r) are within W_inf <= sum r
    for _ in range(50):
        n = int(RNG.integers(1, 6))
        P = DiscreteDist(RNG.uniform(0, 3.5, n), RNG.dirichlet(np.ones(n)))
        Q = DiscreteDist(RNG.uniform(0, 3.5, n), RNG.dirichlet(np.ones(n)))
        assert w_inf(P, Q) <= bound


def test_bad_inputs():
    with pytest.raises(ParameterError, match="released"):
        gaussian_attribute(np.eye(2), 0, 0, (0, 1))
    with pytest.raises(ParameterError, match="cov"):
        gaussian_attribute([[1.0, 2.0], [0.0, 1.0]], 0, 1, (0, 1))
    with pytest.raises(ParameterError, match="singular"):
        gaussian_linear(np.eye(2), [[1.0, 0.0]], [[1.0, 0.0], [2.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ParameterError, match="times"):
        langevin(1.0, 1.0, 1.0, [-1.0])
    with pytest.raises(ParameterError, match="radii"):
        bounded_support([1.0, 0.0])
