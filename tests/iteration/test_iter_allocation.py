"""Shift allocations of amplification by iteration: the spec fixtures, an exact (Fraction)
greatest-convex-minorant oracle, optimality against a QP solver, and certified feasibility."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, minimize

import puffer
from puffer.errors import ParameterError
from puffer.iteration import optimal_allocation, paper_allocation, single_step_allocation, uniform_allocation
from puffer.iteration.allocation import certified_allocation, check_allocation
from puffer.noise import Laplace


def gcm_exact(s, w=None):
    """Greatest convex minorant of (tau_t, S_t) by brute force over exact Fractions: from the
    current vertex, the next vertex is the point of smallest slope (the farthest on ties)."""
    s = [Fraction(x) for x in s]
    w = [Fraction(1)] * len(s) if w is None else [Fraction(x) for x in w]
    T = len(s)
    S = [Fraction(0)]
    tau = [Fraction(0)]
    for x, y in zip(s, w):
        S.append(S[-1] + x)
        tau.append(tau[-1] + y)
    a = [None] * T
    k = 0
    while k < T:
        best, j_best = None, None
        for j in range(k + 1, T + 1):
            g = (S[j] - S[k]) / (tau[j] - tau[k])
            if best is None or g <= best:
                best, j_best = g, j
        for t in range(k, j_best):
            a[t] = best * w[t]
        k = j_best
    return a


def test_spec_fixtures():
    a = optimal_allocation([0, 0, 1, 0, 0])
    np.testing.assert_allclose(a, [0, 0, 1 / 3, 1 / 3, 1 / 3], rtol=0, atol=1e-16)
    a = optimal_allocation([1, 0.5, 0.25, 0.1])
    np.testing.assert_allclose(a, [0.4625] * 4, rtol=1e-15)


def test_special_cases_reproduce_the_papers_allocations():
    rng = np.random.default_rng(1)
    for _ in range(50):
        s = np.sort(rng.random(rng.integers(1, 30)))[::-1]          # non-increasing: Prop F.2
        np.testing.assert_allclose(optimal_allocation(s), uniform_allocation(s), rtol=1e-13)
        z = np.zeros(rng.integers(1, 30))
        z[rng.integers(0, z.size)] = rng.random() + 0.1              # one shift: Lemma F.1
        np.testing.assert_allclose(optimal_allocation(z), single_step_allocation(z), rtol=1e-14, atol=0)
        inc = np.sort(rng.random(rng.integers(1, 30)))               # non-decreasing: a = s
        np.testing.assert_allclose(optimal_allocation(inc), paper_allocation(inc), rtol=1e-13)


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_exact_gcm(weighted):
    rng = np.random.default_rng(2 + weighted)
    for _ in range(150):
        T = int(rng.integers(1, 25))
        s = rng.random(T) * (rng.random(T) < 0.6)
        w = rng.uniform(0.2, 3.0, T) if weighted else None
        ours = optimal_allocation(s, w)
        exact = gcm_exact(s.tolist(), None if w is None else w.tolist())
        np.testing.assert_allclose(ours, [float(x) for x in exact], rtol=1e-12, atol=1e-15)


def _qp(s, w):
    """min sum a_t^2 / w_t s.t. A_t <= S_t, A_T = S_T, a >= 0: scipy's SLSQP on the slacks
    z_t = S_t - A_t >= 0 (t < T, z_0 = z_T = 0, a_t = s_t + z_{t-1} - z_t >= 0); scipy's
    trust-region interior-point solver when SLSQP reports failure."""
    T = s.size
    D = np.zeros((T, T - 1))                   # a = s + D z
    for t in range(T):
        if t > 0:
            D[t, t - 1] += 1.0
        if t < T - 1:
            D[t, t] -= 1.0
    f = lambda z: np.sum((s + D @ z) ** 2 / w)                  # noqa: E731
    g = lambda z: D.T @ (2 * (s + D @ z) / w)                   # noqa: E731
    z0 = np.zeros(T - 1)
    res = minimize(f, z0, jac=g, bounds=[(0, None)] * (T - 1), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda z: s + D @ z, "jac": lambda z: D}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    if not res.success:
        res = minimize(f, z0 + 1e-3, jac=g, hess=lambda z: D.T @ np.diag(2 / w) @ D, method="trust-constr",
                       constraints=[LinearConstraint(D, -s, np.inf)], bounds=Bounds(np.zeros(T - 1), np.inf),
                       options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 3000})
    return s + D @ res.x


def test_never_worse_than_a_qp_solver_gaussian():
    """>= 100 random instances each: identical noise and time-varying sigma_t (reparametrised time)."""
    rng = np.random.default_rng(3)
    checked = 0
    for weighted in (False, True):
        for _ in range(110):
            T = int(rng.integers(2, 14))
            s = rng.random(T) * (rng.random(T) < 0.7)
            if s.sum() == 0:
                s[0] = 1.0
            w = rng.uniform(0.3, 3.0, T) if weighted else np.ones(T)
            a = optimal_allocation(s, w if weighted else None)
            q = _qp(s, w)
            ours, theirs = float(np.sum(a * a / w)), float(np.sum(q * q / w))
            assert ours <= theirs * (1 + 1e-9) + 1e-14, (s, w, ours, theirs)
            # the solver's point is (numerically) feasible and near-optimal: a strictly convex QP
            assert (np.cumsum(q) <= np.cumsum(s) + 1e-7).all() and abs(q.sum() - s.sum()) < 1e-7
            assert theirs <= ours * (1 + 1e-5) + 1e-9
            checked += 1
    assert checked >= 200


def test_never_worse_than_a_convex_solver_laplace():
    """Identical Laplace noise: R_alpha convex in the shift, so the minorant is optimal too."""
    rng = np.random.default_rng(4)
    lap = Laplace(1.0)
    for _ in range(100):
        T = int(rng.integers(2, 9))
        s = rng.random(T) * 2 * (rng.random(T) < 0.7)
        if s.sum() == 0:
            s[-1] = 1.0
        alpha = float(rng.choice([1.5, 2.0, 5.0]))
        f = lambda a: float(np.sum(lap.R(np.full(T, alpha), np.maximum(a, 0))))  # noqa: E731
        S = np.cumsum(s)
        L = np.tril(np.ones((T, T)))
        cons = [{"type": "ineq", "fun": lambda a: S - L @ a},
                {"type": "eq", "fun": lambda a: a.sum() - S[-1]}]
        res = minimize(f, s.copy(), constraints=cons, bounds=[(0, None)] * T, method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 500})
        ours = f(optimal_allocation(s))
        assert ours <= res.fun * (1 + 1e-7) + 1e-12, (s, alpha, ours, res.fun)


def test_certified_allocation_is_exactly_feasible():
    """The clamp construction a'_t = min(a_t, S_t - A'_{t-1}), a'_T = S_T - A'_{T-1} in exact
    arithmetic stays below the returned shifts b (so the R-sum is a bound for a feasible a')."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        T = int(rng.integers(1, 40))
        s = rng.random(T) * 10.0 ** rng.uniform(-5, 5, T)
        a = optimal_allocation(s) if rng.random() < 0.7 else paper_allocation(s) * (1 + 1e-15 * rng.random(T))
        b = certified_allocation(s, a)
        S, Ap = Fraction(0), Fraction(0)
        for t in range(T):
            S += Fraction(float(s[t]))
            if t < T - 1:
                at = min(Fraction(float(a[t])), S - Ap)
                assert at <= Fraction(float(b[t]))
            else:
                at = S - Ap
                assert at <= Fraction(float(b[t])), (t, float(at), b[t])
            assert at >= 0
            Ap += at
            assert Ap <= S
        assert Ap == S


def test_user_allocation_checked():
    s = np.array([1.0, 0.0, 1.0])
    check_allocation(s, [0.5, 0.5, 1.0])
    with pytest.raises(ParameterError, match="prefix sums"):
        check_allocation(s, [1.5, 0.0, 0.5])
    with pytest.raises(ParameterError, match="sum a = sum s"):
        check_allocation(s, [0.5, 0.5, 0.5])
    with pytest.raises(ParameterError, match="a_t >= 0"):
        check_allocation(s, [1.0, -0.5, 1.5])
    with pytest.raises(ParameterError, match="one shift per step"):
        check_allocation(s, [1.0, 1.0])


def test_bad_shifts():
    for bad in ([1.0, -1.0], [1.0, float("nan")], [float("inf")], []):
        with pytest.raises(ParameterError):
            optimal_allocation(bad)
    with pytest.raises(puffer.ParameterTypeError):
        optimal_allocation("abc")
    with pytest.raises(ParameterError, match="sigma2"):
        optimal_allocation([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ParameterError, match="sigma2"):
        optimal_allocation([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="non-increasing"):
        uniform_allocation([0.0, 1.0])
    with pytest.raises(ParameterError, match="exactly one"):
        single_step_allocation([1.0, 1.0])


def test_large_T_is_consistent():
    rng = np.random.default_rng(6)
    s = rng.random(200_000)
    a = optimal_allocation(s)
    assert a.shape == s.shape and (a >= 0).all()
    assert (np.diff(a) >= -1e-12 * a.max()).all()           # slopes of a convex minorant
    assert abs(a.sum() - s.sum()) <= 1e-9 * s.sum()
    assert (np.cumsum(a) <= np.cumsum(s) + 1e-9 * s.sum()).all()
    assert math.isfinite(float(a.sum()))
