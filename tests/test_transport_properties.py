"""Hypothesis properties of the transport kernel: marginals reproduced, W_inf = plan
sensitivity, symmetry, triangle inequality, W_1 <= W_p <= W_inf, exact vs float agreement,
invariance under relabelling of zero-mass atoms and thread counts."""
from fractions import Fraction as F

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from puffer import DiscreteDist
from puffer import transport as T

atoms_st = st.lists(st.integers(-20, 20), min_size=1, max_size=7, unique=True)


@st.composite
def exact_laws(draw):
    xs = draw(atoms_st)
    counts = draw(st.lists(st.integers(1, 9), min_size=len(xs), max_size=len(xs)))
    return DiscreteDist.from_counts(xs, counts)


@st.composite
def float_laws(draw):
    xs = draw(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=8, unique=True))
    w = draw(st.lists(st.floats(1e-6, 1.0), min_size=len(xs), max_size=len(xs)))
    w = np.array(w)
    return DiscreteDist(xs, w / w.sum())


SET = settings(max_examples=120, deadline=None)


@SET
@given(float_laws(), float_laws())
def test_plan_marginals_and_sensitivity(P, Q):
    plan = T.quantile_coupling(P, Q)
    r, c = plan.marginals()
    np.testing.assert_allclose(r, P.probs, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(c, Q.probs, rtol=1e-12, atol=1e-15)
    assert np.all(plan.mass > 0)
    assert np.all(np.diff(plan.rows) >= 0) and np.all(np.diff(plan.cols) >= 0)   # monotone staircase
    assert len(plan) <= len(P) + len(Q) - 1
    assert T.w_inf(P, Q) == plan.sensitivity()
    assert T.w_inf(P, Q) == T.w_inf(Q, P)


@SET
@given(exact_laws(), exact_laws(), exact_laws())
def test_triangle_symmetry_and_ordering_exact(P, Q, R):
    pq, qr, pr = T.w_inf(P, Q), T.w_inf(Q, R), T.w_inf(P, R)
    assert pr <= pq + qr
    assert pq == T.w_inf(Q, P)
    w1, w2, w3 = T.w_p(P, Q, 1), T.w_p(P, Q, 2), T.w_p(P, Q, 3.5)
    assert w1 <= w2 * (1 + 1e-12) and w2 <= w3 * (1 + 1e-12) and w3 <= pq * (1 + 1e-12)
    # exact and float level rule agree on rational laws
    assert T.w_inf(DiscreteDist(P.atoms, P.probs), DiscreteDist(Q.atoms, Q.probs)) == pq
    plan = T.quantile_coupling(P, Q)
    r, c = plan.marginals()
    assert tuple(r) == P.exact_probs and tuple(c) == Q.exact_probs
    assert sum(plan.exact_mass) == F(1)
    # near radius: monotone in delta, delta = 0 is W_inf
    assert T.near_radius(P, Q, 0.0) == pq
    assert T.near_radius(P, Q, 0.3) <= T.near_radius(P, Q, 0.1) <= pq


@SET
@given(exact_laws(), exact_laws(), st.sampled_from([1, 2, float("inf")]))
def test_bottleneck_on_a_line_equals_1d(P, Q, norm):
    """Laws on the diagonal {(t, 0)} of R^2: every norm reduces to |.|, so the bottleneck value
    must equal the 1-D quantile-coupling value."""
    P2 = DiscreteDist(np.c_[P.atoms, np.zeros(len(P))], list(P.exact_probs))
    Q2 = DiscreteDist(np.c_[Q.atoms, np.zeros(len(Q))], list(Q.exact_probs))
    want = T.w_inf(P, Q)
    assert T.w_inf(P2, Q2, norm=norm) == want
    assert T.w_inf(DiscreteDist(P2.atoms, P2.probs), DiscreteDist(Q2.atoms, Q2.probs), norm=norm) == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(float_laws(), float_laws()), min_size=1, max_size=30), st.integers(0, 3))
def test_batch_independent_of_threads(pairs, threads):
    want = np.array([T.w_inf(P, Q) for P, Q in pairs])
    np.testing.assert_array_equal(T.w_inf_many(pairs, threads=threads), want)


@SET
@given(float_laws(), float_laws(), st.integers(0, 3))
def test_zero_mass_atoms_are_ignored_by_raw_paths(P, Q, k):
    """Raw arrays may carry zero masses (e.g. a CSR batch): they are not in the support."""
    xs = np.concatenate([P.atoms, P.atoms[-1] + 1 + np.arange(k)])
    ps = np.concatenate([P.probs, np.zeros(k)])
    assert T.w_inf_sorted(xs, ps, Q.atoms, Q.probs) == T.w_inf(P, Q)
