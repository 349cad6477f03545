"""Transport kernel: Ding 2022, Tables 1-6 exactly, the float trap (Ding 2022), the Adult
plan, V-user plans, and W_inf / W_p / near_radius / bottleneck against an independent oracle:
scipy's HiGHS linear programs on hundreds of random small cases (1-D and 2-D, l1 / l2 / linf).
Every bad input is checked with its exact exception type."""
import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.optimize import linprog

from puffer import DiscreteDist, ParameterError, ParameterTypeError
from puffer import transport as T


# ------------------------------------------------------------------ LP oracles (scipy HiGHS)
def _dist_matrix(X, Y, norm):
    X = np.asarray(X, float).reshape(len(X), -1)
    Y = np.asarray(Y, float).reshape(len(Y), -1)
    ordv = {1: 1, 2: 2, math.inf: np.inf}[norm]
    return np.linalg.norm(X[:, None, :] - Y[None, :, :], ord=ordv, axis=2)


def _marginal_constraints(n, m, mask):
    idx = np.argwhere(mask)
    A = np.zeros((n + m, len(idx)))
    for k, (i, j) in enumerate(idx):
        A[i, k] = 1.0
        A[n + j, k] = 1.0
    return A, idx


def lp_max_mass(p, q, D, z):
    """max pi{D <= z} over couplings of p and q (LP)."""
    n, m = D.shape
    A, idx = _marginal_constraints(n, m, np.ones_like(D, dtype=bool))
    c = np.array([-1.0 if D[i, j] <= z else 0.0 for i, j in idx])
    r = linprog(c, A_eq=A, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert r.status == 0
    return -r.fun


def lp_w_inf(p, q, D):
    """Smallest candidate z with a coupling supported on {D <= z}: LP feasibility + bisection."""
    cand = np.unique(D)
    lo, hi = 0, len(cand) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if lp_max_mass(p, q, D, cand[mid]) >= 1 - 1e-9:
            hi = mid
        else:
            lo = mid + 1
    return cand[lo]


def lp_w_p(p, q, D, pw):
    n, m = D.shape
    A, idx = _marginal_constraints(n, m, np.ones_like(D, dtype=bool))
    c = np.array([D[i, j] ** pw for i, j in idx])
    r = linprog(c, A_eq=A, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert r.status == 0
    return r.fun ** (1 / pw)


def lp_near_radius(p, q, D, delta):
    cand = np.unique(np.concatenate([[0.0], D.ravel()]))
    lo, hi = 0, len(cand) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if lp_max_mass(p, q, D, cand[mid]) >= 1 - delta - 1e-9:
            hi = mid
        else:
            lo = mid + 1
    return cand[lo]


def shift_criterion_w_inf(P, Q):
    """Independent exact oracle (Ding 2022 / Seeman et al. 2024): the smallest r in {0} U {|a-b|}
    with F(t) <= G(t + r) and G(t) <= F(t + r) at every atom t (exact Fractions)."""
    def cdf(d, t):
        return sum((f for a, f in zip(d.atoms, d.exact_probs) if a <= t), F(0))
    cands = sorted({0.0} | {abs(a - b) for a in P.atoms for b in Q.atoms})
    for r in cands:
        if all(cdf(P, t) <= cdf(Q, t + r) for t in P.atoms) and all(cdf(Q, t) <= cdf(P, t + r) for t in Q.atoms):
            return r
    raise AssertionError("no candidate works")


def random_law(rng, dim=1, max_atoms=5, span=8):
    n = int(rng.integers(1, max_atoms + 1))
    atoms = rng.integers(0, span + 1, size=(n, dim) if dim > 1 else n)
    counts = rng.integers(1, 7, size=n)
    return DiscreteDist.from_counts(atoms, counts.tolist())


def float_copy(d):
    return DiscreteDist(d.atoms, d.probs)


# ------------------------------------------------------------------ Ding 2022, Tables 1-6
EX1_P = [F(1, 3), F(1, 6), F(1, 3), F(1, 6)]
EX1_Q = [F(1, 4), F(1, 4), F(1, 6), F(1, 3)]


def test_example1_tables_2_and_3_exact():
    P, Q = DiscreteDist([1, 2, 3, 4], EX1_P), DiscreteDist([1, 2, 3, 4], EX1_Q)
    plan = T.quantile_coupling(P, Q)
    assert plan.is_exact
    table2 = [[F(1, 4), F(1, 3), F(1, 3), F(1, 3)],
              [F(1, 4), F(1, 2), F(1, 2), F(1, 2)],
              [F(1, 4), F(1, 2), F(2, 3), F(5, 6)],
              [F(1, 4), F(1, 2), F(2, 3), F(1)]]
    table3 = [[F(1, 4), F(1, 12), 0, 0],
              [0, F(1, 6), 0, 0],
              [0, 0, F(1, 6), F(1, 6)],
              [0, 0, 0, F(1, 6)]]
    assert plan.cmf([1, 2, 3, 4]).tolist() == table2
    assert plan.pmf([1, 2, 3, 4]).tolist() == table3
    # inclusion-exclusion of the CMF gives the same plan (Ding 2022)
    c = np.pad(plan.cmf([1, 2, 3, 4]), ((1, 0), (1, 0)), constant_values=F(0))
    incl = c[1:, 1:] - c[:-1, 1:] - c[1:, :-1] + c[:-1, :-1]
    assert incl.tolist() == table3
    assert plan.sensitivity() == 1.0 and T.w_inf(P, Q) == 1.0
    assert plan.cost(1) == 0.25 and T.w_p(P, Q, 1) == 0.25          # W_1 = 1/4
    assert P.support_diameter() == 3.0


def test_example2_tables_5_and_6_exact_on_common_grid():
    grid = [1, 2, 3, 4, 5]
    P = DiscreteDist(grid, ["1/5", "9/40", "1/2", "3/40", "0"])
    Q = DiscreteDist(grid, ["0", "3/40", "1/2", "9/40", "1/5"])
    plan = T.quantile_coupling(P, Q)
    f = lambda s: F(s)  # noqa: E731
    table5 = [[0, f("0.075"), f("0.2"), f("0.2"), f("0.2")],
              [0, f("0.075"), f("0.425"), f("0.425"), f("0.425")],
              [0, f("0.075"), f("0.575"), f("0.8"), f("0.925")],
              [0, f("0.075"), f("0.575"), f("0.8"), 1],
              [0, f("0.075"), f("0.575"), f("0.8"), 1]]
    table6 = [[0, f("0.075"), f("0.125"), 0, 0],
              [0, 0, f("0.225"), 0, 0],
              [0, 0, f("0.15"), f("0.225"), f("0.125")],
              [0, 0, 0, 0, f("0.075")],
              [0, 0, 0, 0, 0]]
    assert plan.cmf(grid).tolist() == table5
    assert plan.pmf(grid).tolist() == table6
    assert T.w_inf(P, Q) == 2.0
    assert T.w_p(P, Q, 1) == pytest.approx(1.1, abs=1e-15)       # W_1 = 1.1
    # the float version gives the same support and masses to rounding
    pf = T.quantile_coupling(float_copy(P), float_copy(Q))
    np.testing.assert_allclose(pf.pmf(grid).astype(float), np.array(table6, dtype=float), atol=1e-15)
    assert pf.sensitivity() == 2.0


def test_float_trap_spec001_4_8():
    xs = [0, 1, 100]
    P = DiscreteDist(xs, [0.1, 0.2, 0.7])
    Q = DiscreteDist(xs, [0.3, 0.0, 0.7])
    plan = T.quantile_coupling(P, Q)
    assert list(zip(plan.source.tolist(), plan.target.tolist())) == [(0, 0), (1, 0), (100, 100)]
    np.testing.assert_allclose(plan.mass, [0.1, 0.2, 0.7], rtol=1e-15)
    assert plan.sensitivity() == 1.0 and T.w_inf(P, Q) == 1.0
    assert T.w_inf_sorted(np.array([0., 1, 100]), np.array([.1, .2, .7]), np.array([0., 1, 100]),
                          np.array([.3, 0., .7])) == 1.0
    assert plan.near_ties == 1
    # exact decimal masses agree; exact=True on the doubles themselves sees the leftover
    Pe = DiscreteDist(xs, ["1/10", "1/5", "7/10"])
    Qe = DiscreteDist(xs, ["3/10", "0", "7/10"])
    assert T.w_inf(Pe, Qe) == 1.0
    assert T.w_inf(P, Q, exact=True) == 99.0
    # with no band at all the float path would also report 99: the band is what saves it
    assert T.w_inf(P, Q, rtol=0.0) == 1.0  # the rounding-error term alone covers this case


def test_tiny_atoms_count_in_both_tails():
    P = DiscreteDist([0, 100], [1.0, 1e-300], tol=1e-9)
    Q = DiscreteDist([0], [1.0])
    assert T.w_inf(P, Q) == 100.0
    assert T.w_inf(Q, P) == 100.0
    P2 = DiscreteDist([-50, 0], [1e-300, 1.0])
    assert T.w_inf(P2, Q) == 50.0
    P3 = DiscreteDist([0, 7], [1.0, 5e-324])                  # subnormal mass
    assert T.w_inf(P3, Q) == 7.0
    # a tiny atom in the middle of the level range still gets a partner
    P4 = DiscreteDist([0, 50, 100], [0.5, 1e-300, 0.5])
    Q4 = DiscreteDist([0, 100], [0.5, 0.5])
    assert T.w_inf(P4, Q4) == 50.0
    assert T.quantile_coupling(P4, Q4).sensitivity() == 50.0


def test_near_radius_delta_zero_keeps_tiny_atoms():
    P = DiscreteDist([0, 100], [1.0, 1e-300])
    Q = DiscreteDist([0], [1.0])
    assert T.near_radius(P, Q, 0.0) == 100.0 == T.w_inf(P, Q)
    assert T.near_radius(P, Q, 1e-6) == 0.0


def test_identical_and_shifted_laws():
    P = DiscreteDist([0, 1, 5], [0.2, 0.3, 0.5])
    assert T.w_inf(P, P) == 0.0
    assert T.w_inf(P, P.shift(2.5)) == 2.5
    assert T.w_p(P, P.shift(2.5), 3) == pytest.approx(2.5, rel=1e-15)
    assert T.near_radius(P, P.shift(2.5), 0.0) == 2.5


# ------------------------------------------------------------------ Adult plan (Ding 2022)
WHITE = [4682, 6207, 977, 8904, 514, 915, 1207, 403, 553, 335, 1537, 134, 762, 369]
API = [289, 208, 21, 226, 41, 29, 38, 9, 11, 9, 88, 5, 13, 28]
ADULT_PLAN = {(1, 1): F(4682, 27499), (2, 1): F(3194981, 27911485), (2, 2): F(3105124, 27911485),
              (3, 2): F(977, 27499), (4, 2): F(231859, 3987355), (4, 3): F(3, 145), (4, 4): F(226, 1015),
              (4, 5): F(622294, 27911485), (5, 5): F(101033, 5582297), (5, 6): F(3309, 5582297),
              (6, 6): F(780926, 27911485), (6, 7): F(147799, 27911485), (7, 7): F(897163, 27911485),
              (7, 8): F(9, 1015), (7, 9): F(11493, 3987355), (8, 9): F(222038, 27911485),
              (8, 10): F(187007, 27911485), (9, 10): F(60484, 27911485), (9, 11): F(500811, 27911485),
              (10, 11): F(335, 27499), (11, 11): F(1537, 27499), (12, 11): F(19021, 27911485),
              (12, 12): F(116989, 27911485), (13, 12): F(20506, 27911485), (13, 13): F(13, 1015),
              (13, 14): F(56491, 3987355), (14, 14): F(369, 27499)}


def test_adult_plan_exact_and_float():
    xs = list(range(1, 15))
    P, Q = DiscreteDist.from_counts(xs, WHITE), DiscreteDist.from_counts(xs, API)
    plan = T.quantile_coupling(P, Q)
    got = {(int(a), int(b)): m for a, b, m in zip(plan.source, plan.target, plan.exact_mass)}
    assert got == ADULT_PLAN and len(plan) == 27
    assert plan.sensitivity() == 2.0
    assert T.w_p(P, Q, 1) == pytest.approx(0.416972, abs=5e-7)
    fplan = T.quantile_coupling(float_copy(P), float_copy(Q))
    assert {(int(a), int(b)) for a, b in zip(fplan.source, fplan.target)} == set(ADULT_PLAN)
    assert T.w_inf(float_copy(P), float_copy(Q)) == 2.0
    r, c = plan.marginals()
    assert tuple(r) == P.exact_probs and tuple(c) == Q.exact_probs


# ------------------------------------------------------------------ V-user plans (Ding 2022)
def test_vuser_binomial_plans():
    b24 = T.binomial_law(24, 0.7).to_dist()
    one = T.binomial_law(24, 0.7, shift=1).to_dist()
    bot = T.binomial_law(25, 0.7).to_dist()
    p01 = T.quantile_coupling(b24, one)
    assert len(p01) == 25 and p01.sensitivity() == 1.0
    assert np.all(p01.target - p01.source == 1)
    np.testing.assert_allclose(p01.mass, b24.probs, rtol=1e-12)
    p0b = T.quantile_coupling(b24, bot)
    assert len(p0b) == 50 and p0b.sensitivity() == 1.0
    assert set((p0b.target - p0b.source).tolist()) == {0.0, 1.0}
    assert p0b.mass[0] == pytest.approx(0.3 ** 25, rel=1e-9)    # pi(0, 0) = 8.47289e-14
    assert T.w_p(b24, bot, 1) == pytest.approx(0.7, rel=1e-12)
    assert T.w_p(one, bot, 1) == pytest.approx(0.3, rel=1e-12)


# ------------------------------------------------------------------ LP comparisons
def test_w_inf_and_w_p_1d_vs_lp_random():
    rng = np.random.default_rng(1)
    for _ in range(150):
        P, Q = random_law(rng), random_law(rng)
        D = _dist_matrix(P.atoms, Q.atoms, 1)
        want = lp_w_inf(P.probs, Q.probs, D)
        assert shift_criterion_w_inf(P, Q) == want
        assert T.w_inf(P, Q) == want                               # exact mode
        assert T.w_inf(float_copy(P), float_copy(Q)) == want       # float level rule
        assert T.w_inf_sorted(P.atoms, P.probs, Q.atoms, Q.probs) == want
        for pw in (1, 2):
            assert T.w_p(P, Q, pw) == pytest.approx(lp_w_p(P.probs, Q.probs, D, pw), rel=1e-7, abs=1e-9)
        plan = T.quantile_coupling(float_copy(P), float_copy(Q))
        assert plan.sensitivity() == want and len(plan) <= len(P) + len(Q) - 1


@pytest.mark.parametrize("norm", [1, 2, math.inf])
def test_bottleneck_2d_vs_lp_random(norm):
    rng = np.random.default_rng({1: 2, 2: 3, math.inf: 4}[norm])
    for _ in range(40):
        P, Q = random_law(rng, dim=2, max_atoms=4, span=4), random_law(rng, dim=2, max_atoms=4, span=4)
        D = _dist_matrix(P.atoms, Q.atoms, norm)
        want = lp_w_inf(P.probs, Q.probs, D)
        assert T.w_inf(P, Q, norm=norm) == pytest.approx(want, rel=1e-15)
        value, plan = T.w_inf(float_copy(P), float_copy(Q), norm=norm, return_plan=True)
        assert value == pytest.approx(want, rel=1e-15)
        r, c = plan.marginals()
        np.testing.assert_allclose(r, P.probs, atol=1e-12)
        np.testing.assert_allclose(c, Q.probs, atol=1e-12)
        assert plan.sensitivity() <= value * (1 + 1e-15)
        ve, pe = T.w_inf(P, Q, norm=norm, return_plan=True)
        r, c = pe.marginals()
        assert tuple(r) == P.exact_probs and tuple(c) == Q.exact_probs


def test_near_radius_vs_lp_random():
    rng = np.random.default_rng(5)
    for k in range(120):
        P, Q = random_law(rng, max_atoms=5), random_law(rng, max_atoms=5)
        D = _dist_matrix(P.atoms, Q.atoms, 1)
        delta = [0.0, 0.05, 0.1, 0.25, 0.5][k % 5]
        want = lp_near_radius(P.probs, Q.probs, D, delta)
        assert T.near_radius(P, Q, delta) == want
        assert T.near_radius(float_copy(P), float_copy(Q), delta) == want


def test_near_radius_spec000_counterexample():
    P = DiscreteDist([0, 10], [F(1, 2), F(1, 2)])
    Q = DiscreteDist([10, 20], [F(1, 2), F(1, 2)])
    assert T.near_radius(P, Q, 0.5) == 0.0      # match 10 <-> 10
    assert T.w_inf(P, Q) == 10.0                 # the quantile coupling moves everything by 10
    assert T.near_radius(float_copy(P), float_copy(Q), 0.5) == 0.0
    assert T.near_radius(P, Q, 0.0) == T.w_inf(P, Q)


def test_exact_paths_with_huge_denominators_use_python_integers():
    big = 2 ** 70 + 1
    P = DiscreteDist([0, 1, 3], [F(1, big), F(2, 3), 1 - F(1, big) - F(2, 3)])
    Q = DiscreteDist([0, 2, 3], [F(1, 3), F(1, 3), F(1, 3)])
    assert P.denominator > 2 ** 62
    plan = T.quantile_coupling(P, Q)
    assert sum(plan.exact_mass) == 1
    # the 1/2^70 atom at 1 must reach 3 (an LP with 1e-9 tolerances cannot see it; the exact
    # shift criterion can)
    assert plan.sensitivity() == shift_criterion_w_inf(P, Q) == T.w_inf(P, Q) == 2.0
    P2 = DiscreteDist([[0, 0], [1, 1]], [F(1, big), 1 - F(1, big)])
    Q2 = DiscreteDist([[0, 0], [5, 5]], [F(1, 2), F(1, 2)])
    # (1,1) sends 1/2 to (5,5) at l1 distance 8, the rest to (0,0); the 1/2^70 atom stays put
    assert T.w_inf(P2, Q2, norm=1) == 8.0 == lp_w_inf(P2.probs, Q2.probs, _dist_matrix(P2.atoms, Q2.atoms, 1))
    v, plan = T.w_inf(P2, Q2, norm=1, return_plan=True)
    r, c = plan.marginals()
    assert tuple(r) == P2.exact_probs and tuple(c) == Q2.exact_probs
    # within z = 1 everything but 1/2^70 (stuck at atom 1) can be matched
    assert T.near_radius(P, Q, 0.0) == 2.0
    assert T.near_radius(P, Q, 1e-30) == 2.0     # 1e-30 < 1/2^70 ~ 8.5e-22
    assert T.near_radius(P, Q, 1e-20) == 1.0


# ------------------------------------------------------------------ batches
def test_w_inf_many_and_batch_match_single_calls():
    rng = np.random.default_rng(6)
    pairs = [(float_copy(random_law(rng)), float_copy(random_law(rng))) for _ in range(300)]
    want = np.array([T.w_inf(P, Q) for P, Q in pairs])
    np.testing.assert_array_equal(T.w_inf_many(pairs), want)
    np.testing.assert_array_equal(T.w_inf_many(pairs, threads=1), want)
    ex = [(random_law(rng), random_law(rng)) for _ in range(5)]
    np.testing.assert_array_equal(T.w_inf_many(ex), [T.w_inf(P, Q) for P, Q in ex])
    out = np.empty(2)
    r = T.w_inf_batch([0., 1, 0], [.5, .5, 1], [0, 2, 3], [1., 2, 5], [.5, .5, 1], [0, 2, 3], out=out)
    assert r is out and out.tolist() == [1.0, 5.0]


# ------------------------------------------------------------------ plan object
def test_plan_object_api():
    P = DiscreteDist([0, 1], [0.5, 0.5])
    Q = DiscreteDist([0, 3], [0.25, 0.75])
    plan = T.quantile_coupling(P, Q)
    assert plan.rows.tolist() == [0, 0, 1] and plan.cols.tolist() == [0, 1, 1]
    assert plan.source.tolist() == [0, 0, 1] and plan.target.tolist() == [0, 3, 3]
    with pytest.raises(ValueError):
        plan.mass[0] = 1.0
    assert plan.sensitivity() == 3.0
    assert plan.sensitivity(lambda z: z * z) == 9.0
    assert plan.transpose().sensitivity() == 3.0
    np.testing.assert_allclose(plan.dense(), [[0.25, 0.25], [0, 0.5]])
    assert "TransportPlan(quantile, 3 entries, float" in repr(plan)
    v, p2 = T.w_inf(P, Q, return_plan=True)
    assert v == 3.0 and len(p2) == 3


# ------------------------------------------------------------------ bad input
def test_bad_inputs_raise_puffer_errors():
    P = DiscreteDist([0, 1], [0.5, 0.5])
    P2 = DiscreteDist([[0, 1]], [1.0])
    with pytest.raises(ParameterTypeError):
        T.w_inf([0, 1], P)
    with pytest.raises(ParameterError, match="same space"):
        T.w_inf(P, P2)
    with pytest.raises(ParameterError, match="norm"):
        T.w_inf(P2, P2)                                  # d-D needs a norm
    with pytest.raises(ParameterError, match="norm"):
        T.w_inf(P, P, norm=3)
    with pytest.raises(ParameterError):
        T.w_p(P, P, -1)
    with pytest.raises(ParameterError):
        T.w_p(P, P, 0.5)
    with pytest.raises(ParameterTypeError):
        T.w_p(P, P, "2")
    with pytest.raises(ParameterError, match="delta"):
        T.near_radius(P, P, 1.0)
    with pytest.raises(ParameterError, match="delta"):
        T.near_radius(P, P, -0.1)
    with pytest.raises(ParameterError, match="delta"):
        T.near_radius(P, P, math.nan)
    with pytest.raises(ParameterError, match="rtol"):
        T.w_inf(P, P, rtol=-1.0)
    with pytest.raises(ParameterTypeError):
        T.w_inf(P, P, exact="yes")
    with pytest.raises(ParameterError, match="1-D"):
        T.quantile_coupling(P2, P2)
    with pytest.raises(ParameterError):
        T.w_p(P2, P2, 2)


def test_bad_raw_arrays_in_fast_paths():
    a, p = np.array([0.0, 1.0]), np.array([0.5, 0.5])
    with pytest.raises(ParameterError, match="empty"):
        T.w_inf_sorted(np.array([]), np.array([]), a, p)
    with pytest.raises(ParameterError, match="NaN"):
        T.w_inf_sorted(np.array([0.0, np.nan, 2.0]), np.array([.2, .3, .5]), a, p)
    with pytest.raises(ParameterError, match="finite"):
        T.w_inf_sorted(np.array([0.0, np.inf]), p, a, p)
    with pytest.raises(ParameterError, match="sorted"):
        T.w_inf_sorted(np.array([1.0, 0.0]), p, a, p)
    with pytest.raises(ParameterError, match="masses >= 0"):
        T.w_inf_sorted(a, np.array([1.5, -0.5]), a, p)
    with pytest.raises(ParameterError, match="masses >= 0"):
        T.w_inf_sorted(a, np.array([np.nan, 1.0]), a, p)
    with pytest.raises(ParameterError, match="summing to 1"):
        T.w_inf_sorted(a, np.array([0.5, 0.6]), a, p)
    with pytest.raises(ParameterError, match="positive sum"):
        T.w_inf_sorted(a, np.array([0.0, 0.0]), a, p, sum_tol=-1)
    with pytest.raises(ParameterError, match="one mass per atom"):
        T.w_inf_sorted(a, np.array([1.0]), a, p)
    with pytest.raises(ParameterError, match="offsets"):
        T.w_inf_batch(a, p, [0, 3], a, p, [0, 2])
    with pytest.raises(ParameterError, match="offsets"):
        T.w_inf_batch(a, p, [0, 2], a, p, [0, 1, 2])
    with pytest.raises(ParameterError, match="offsets"):
        T.w_inf_batch(a, p, [1, 2], a, p, [0, 2])
    with pytest.raises(ParameterError, match=r"law 1"):
        T.w_inf_batch(np.array([0., 1, 0]), np.array([.5, .5, 2.0]), [0, 2, 3], a[[0, 1, 0]],
                      np.array([.5, .5, 1.0]), [0, 2, 3])
    with pytest.raises(ParameterError, match="threads"):
        T.w_inf_batch(a, p, [0, 2], a, p, [0, 2], threads=-1)
    with pytest.raises(ParameterTypeError, match="offsets_p"):
        T.w_inf_batch(a, p, [0.0, 2.0], a, p, [0, 2])
    with pytest.raises(ParameterError, match="1-D"):
        T.w_inf_sorted(a.reshape(1, 2), p, a, p)
    assert T.w_inf_sorted([0, 1], [0.5, 0.5], a[::-1][::-1], p) == 0.0      # ints and views are converted
    with pytest.raises(ParameterTypeError):
        T.w_inf_many([P for P in [DiscreteDist([0], [1.0])]])


# ------------------------------------------------------------------ fast path == careful walk
def test_fast_path_matches_careful_walk_on_adversarial_inputs():
    """w_inf_sorted (ranks over level keys) must return exactly the plan's sensitivity (the
    careful staircase walk) on inputs that exercise its fallbacks: exact ties, near ties from
    decimal masses, collapsed tiny atoms, subnormal and zero masses, large random laws."""
    rng = np.random.default_rng(11)

    def check(x, p, y, q):
        fast = T.w_inf_sorted(x, p, y, q)
        P, Q = DiscreteDist(x, p), DiscreteDist(y, q)
        assert fast == T.quantile_coupling(P, Q).sensitivity() == T.w_inf(P, Q)
        return fast

    for n in (1, 2, 63, 64, 65, 300, 5000):
        x = np.sort(rng.normal(size=n))
        y = np.sort(rng.normal(size=n) + 0.3)
        p = rng.random(n); p /= p.sum()
        q = rng.random(n); q /= q.sum()
        check(x, p, y, q)
        check(x, p, x + 2.5, p)                        # exact ties everywhere: shift
        assert check(x, p, x + 2.5, p) == pytest.approx(2.5, abs=1e-12)
    # decimal masses: many near ties between differently rounded sums
    for n in (10, 200, 3000):
        x = np.arange(n, dtype=float)
        p = np.full(n, 0.1 / (n / 10))
        q = np.tile([0.3, 0.0, 0.7], n // 3 + 1)[:n]
        q = q / q.sum()
        check(x, p, x, q)
        check(x, np.round(p * 1e6) / 1e6 / np.sum(np.round(p * 1e6) / 1e6), x[::-1] * -1 + n, p[::-1])
    # tiny and subnormal atoms in the middle and the tails
    for tiny in (1e-300, 5e-324, 1e-17):
        n = 400
        x = np.arange(n, dtype=float)
        p = rng.random(n); p /= p.sum()
        p[[0, 150, 151, 399]] = 0.0
        p /= p.sum()
        p[[0, 150, 151, 399]] = tiny                   # total off by < 1e-16: within tolerance
        q = rng.random(n); q /= q.sum()
        check(x, p, x + 0.5, q)
        check(x, q, x, p)
    # zero masses (skipped atoms)
    x = np.arange(500, dtype=float)
    p = rng.random(500); p[rng.random(500) < 0.3] = 0.0; p /= p.sum()
    q = rng.random(500); q /= q.sum()
    check(x, p, x, q)


def test_bottleneck_float_rule_trap_and_stranded_tiny_atom():
    # the 2-D analogue of the float trap: decimal leftovers do not pair 1 with 100
    P = DiscreteDist([[0, 0], [1, 0], [100, 0]], [0.1, 0.2, 0.7])
    Q = DiscreteDist([[0, 0], [100, 0]], [0.3, 0.7])
    for norm in (1, 2, math.inf):
        assert T.w_inf(P, Q, norm=norm) == 1.0
    # a stranded 1e-300 atom counts: it can only reach (0, 0), which is full, so mass must
    # cross to (10, 0). Exact answer 10 (a -> b'); the float path may only over-report.
    P = DiscreteDist([[0, 0], [10, 0], [0, 1]], [0.5, 0.5 - 1e-300, 1e-300])
    Q = DiscreteDist([[0, 0], [10, 0]], [0.5, 0.5])
    assert T.w_inf(P, Q, norm=2, exact=True) == 10.0
    assert T.w_inf(P, Q, norm=2) >= 10.0
    # a genuinely stranded tiny atom with consistent totals (exact masses) in R^2
    big = 2 ** 80
    P = DiscreteDist([[0, 0], [0, 3]], [1 - F(1, big), F(1, big)])
    Q = DiscreteDist([[0, 0]], [F(1)])
    assert T.w_inf(P, Q, norm=1) == 3.0
    assert T.w_inf(DiscreteDist([[0, 0], [0, 3]], [1.0, 1e-300]), DiscreteDist([[0, 0]], [1.0]), norm=1) == 3.0
