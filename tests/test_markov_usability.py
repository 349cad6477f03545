"""markov_chain usability: real state values (kWh levels) mapped to the core's integer grid with
a sound sensitivity in the original units, state names in the secret labels, float32 input,
errors that name the prior, the row and what is wrong with init."""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import puffer
from puffer.models import markov_chain


def _winf_brute(M, init, T, values):
    """max over t and state pairs of W_inf between the exact laws of S = sum values[X_t] given
    X_t = a and X_t = b (Fractions over all paths; quantile functions compared on the merged
    CDF levels)."""
    k = len(init)
    best = Fraction(0)
    laws: dict = {}
    for xs in itertools.product(range(k), repeat=T):
        p = init[xs[0]]
        for u, v in zip(xs, xs[1:]):
            p *= M[u][v]
        if p == 0:
            continue
        s = sum(values[x] for x in xs)
        for t in range(T):
            d = laws.setdefault((t, xs[t]), {})
            d[s] = d.get(s, Fraction(0)) + p
    for t in range(T):
        for a in range(k):
            for b in range(a + 1, k):
                if (t, a) not in laws or (t, b) not in laws:
                    continue
                P, Q = laws[(t, a)], laws[(t, b)]
                zp, zq = sum(P.values()), sum(Q.values())
                cp = list(itertools.accumulate(P[x] / zp for x in sorted(P)))
                cq = list(itertools.accumulate(Q[x] / zq for x in sorted(Q)))
                xp, xq = sorted(P), sorted(Q)
                levels = sorted(set(cp) | set(cq))
                prev = Fraction(0)
                for lv in levels:
                    mid = (prev + lv) / 2
                    qa = xp[next(i for i, c in enumerate(cp) if c >= mid)]
                    qb = xq[next(i for i, c in enumerate(cq) if c >= mid)]
                    best = max(best, abs(qa - qb))
                    prev = lv
    return best


def test_two_states_any_real_values_affine_map():
    """k = 2: S = T v0 + (v1 - v0) N1, so W_inf scales by |v1 - v0| exactly (brute force with
    the real values as Fractions)."""
    M = [[Fraction(9, 10), Fraction(1, 10)], [Fraction(2, 10), Fraction(8, 10)]]
    init = [Fraction(2, 3), Fraction(1, 3)]
    vals = [0.37, 2.11]      # kWh levels
    fw = markov_chain(np.array(M, dtype=float), T=5, init=np.array(init, dtype=float), values=vals)
    got = fw.w_inf().value
    want = _winf_brute(M, init, 5, [Fraction(v) for v in vals])
    assert got >= float(want) and got == pytest.approx(float(want), rel=1e-14)
    assert fw.group_sensitivity >= 5 * (2.11 - 0.37)
    # the conditional laws would be in kWh, but 2.11 - 0.37 is not a double: laws on rounded atoms
    # have no margin, so law-based mechanisms get a clear error (w_inf above carries the margin)
    with pytest.raises(puffer.ParameterError, match="exactly on a grid"):
        fw.conditional(0, "X0=0")
    # on an exact binary grid (0.5, 2.75: step 2.25) the laws are in value units, exactly
    fw2 = markov_chain(np.array(M, dtype=float), T=5, init=np.array(init, dtype=float), values=[0.5, 2.75])
    law = fw2.conditional(0, "X0=0")
    assert float(np.min(law.atoms)) == 5 * 0.5 and float(np.max(law.atoms)) == 0.5 + 4 * 2.75


def test_three_states_on_a_decimal_grid():
    """k = 3 with values 0.5, 1.25, 2.0 (grid step 0.75, n = 0, 1, 2): W_inf = 0.75 x the
    grid's, equal to brute force on the real values."""
    F = Fraction
    M = [[F(5, 10), F(3, 10), F(2, 10)], [F(2, 10), F(6, 10), F(2, 10)], [F(3, 10), F(3, 10), F(4, 10)]]
    init = [F(1, 3)] * 3
    vals = [0.5, 1.25, 2.0]
    fw = markov_chain(np.array(M, dtype=float), T=4, init=np.array(init, dtype=float), values=vals)
    got = fw.w_inf().value
    want = _winf_brute(M, init, 4, [F(v) for v in vals])
    assert got >= float(want) and got == pytest.approx(float(want), rel=1e-13)
    grid = markov_chain(np.array(M, dtype=float), T=4, init=np.array(init, dtype=float), values=[0, 1, 2])
    assert got == pytest.approx(0.75 * grid.w_inf().value, rel=1e-14)


def test_grid_with_rounding_margin():
    """Values that are a grid only up to float rounding (0.1, 0.2, 0.3): the sensitivity is
    g W_inf(grid) plus 2 T max|v - v_grid| (here tiny), never below the brute-force value."""
    F = Fraction
    M = [[F(1, 2), F(1, 4), F(1, 4)], [F(1, 4), F(1, 2), F(1, 4)], [F(1, 4), F(1, 4), F(1, 2)]]
    init = [F(1, 3)] * 3
    vals = [0.1, 0.2, 0.3]
    fw = markov_chain(np.array(M, dtype=float), T=4, init=np.array(init, dtype=float), values=vals)
    got = fw.w_inf().value
    want = _winf_brute(M, init, 4, [F(v) for v in vals])     # the float values, exactly
    assert got >= float(want)
    assert got == pytest.approx(float(want), rel=1e-12)
    # 2.5 + 1e-11 is on the grid 0.5 n only to ~1e-11: accepted, and with the margin 2 T e the
    # result stays above the exact value (values such as pi also work, but their grid has ~1e6
    # steps: over a minute even at T = 4)
    vals = [0.0, 1.0, 2.5 + 1e-11]
    fw = markov_chain(np.array(M, dtype=float), T=4, init=np.array(init, dtype=float), values=vals)
    got = fw.w_inf().value
    want = _winf_brute(M, init, 4, [F(v) for v in vals])
    assert float(want) <= got <= float(want) + 1e-8
    assert 0 < fw.grid_error < 1e-10
    assert markov_chain(np.full((3, 3), 1 / 3), T=4, values=[0.25, 1.0, 1.75]).grid_error == 0.0


def test_values_without_usable_grid_are_refused():
    M = np.full((3, 3), 1 / 3)
    # pi is 312689/99532 to 3e-11: a grid of 312689 steps, too many for T = 1000
    with pytest.raises(puffer.ParameterError, match="values") as e:
        markov_chain(M, T=1000, values=[0.0, 1.0, np.pi])
    assert "grid" in str(e.value) and "312689" in str(e.value)
    with pytest.raises(puffer.ParameterError, match="values"):
        markov_chain(M, T=10, values=[0.0, 1.0])                 # wrong count
    with pytest.raises(puffer.ParameterError, match="values"):
        markov_chain(M, T=10, values=[0.0, 1.0, float("nan")])
    with pytest.raises(puffer.ParameterTypeError, match="values"):
        markov_chain(M, T=10, values=[True, False, True])
    # a grid too fine for the core: 1e-7 steps over a span of 1
    with pytest.raises(puffer.ParameterError, match="steps"):
        markov_chain(M, T=10, values=[0.0, 1e-7 * 3, 1.0])


def test_state_names_in_secrets_pairs_and_witness():
    M = [[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]]
    fw = markov_chain(M, T=6, states=["off", "on", "heating"], values=[0, 1, 3], labels=["winter"])
    assert fw.secrets[:3] == ["X0=off", "X0=on", "X0=heating"]
    assert "X5=heating" in fw.secrets and "X6=off" not in fw.secrets and "X0=2" not in fw.secrets
    assert fw.pairs[0] == ("X0=off", "X0=on")
    s = fw.w_inf()
    th, (a, b) = s.witness
    assert th == "winter" and a.split("=")[1] in ("off", "on", "heating")
    law = fw.conditional("winter", "X2=heating")
    assert law is not None
    assert fw.state_names == ["off", "on", "heating"]
    m = puffer.mechanisms.MarkovQuilt(fw, eps=1.0)
    assert m.sensitivity.witness[1][0].split("=")[1] in ("off", "on", "heating")
    with pytest.raises(puffer.ParameterError, match="states"):
        markov_chain(M, T=6, states=["off", "on"])
    with pytest.raises(puffer.ParameterError, match="states"):
        markov_chain(M, T=6, states=["off", "on", "off"])
    with pytest.raises(puffer.ParameterTypeError, match="states"):
        markov_chain(M, T=6, states="abc")


def test_float32_matrices_accepted_with_dtype_tolerance():
    """float32 rows sum to 1 only to ~1e-7: accepted (tolerance 16 k u of float32) and
    renormalised; the same off-by-1e-7 rows in float64 are refused (tolerance 1e-9)."""
    M = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]], dtype=np.float32)
    assert np.any(np.abs(M.astype(np.float64).sum(axis=1) - 1) > 1e-9)
    fw = markov_chain(M, T=8)
    ref = markov_chain(M.astype(np.float64) / M.astype(np.float64).sum(axis=1, keepdims=True), T=8)
    assert fw.w_inf().value == ref.w_inf().value
    np.testing.assert_allclose(fw.transitions[0].sum(axis=1), 1.0, rtol=0, atol=1e-15)
    with pytest.raises(puffer.ParameterError, match="row"):
        markov_chain(M.astype(np.float64) + np.array([[1e-6, 0, 0], [0, 0, 0], [0, 0, 0]]), T=8)
    bad = M.copy()
    bad[1, 1] += np.float32(1e-3)
    with pytest.raises(puffer.ParameterError, match="row 1"):
        markov_chain(bad, T=8)


def test_errors_name_the_prior_and_the_row():
    Ms = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.3, 0.6]]])
    with pytest.raises(puffer.ParameterError) as e:
        markov_chain(Ms, T=5, labels=["summer", "winter"])
    msg = str(e.value)
    assert "'winter'" in msg and "row 1" in msg and "0.9" in msg and "trans" in msg
    Ms2 = Ms.copy()
    Ms2[1, 1] = [1.2, -0.2]
    with pytest.raises(puffer.ParameterError) as e:
        markov_chain(Ms2, T=5, labels=["summer", "winter"])
    assert "'winter'" in str(e.value) and "[1, 1]" in str(e.value) and ">= 0" in str(e.value)
    with pytest.raises(puffer.ParameterError, match="prior 1"):
        markov_chain(Ms2, T=5)


def test_init_errors_say_what_is_wrong():
    M = [[0.9, 0.1], [0.2, 0.8]]
    with pytest.raises(puffer.ParameterError, match="'stationary'") as e:
        markov_chain(M, T=5, init="uniform")
    assert "uniform" in str(e.value)
    with pytest.raises(puffer.ParameterError, match="shape") as e:
        markov_chain(M, T=5, init=[0.2, 0.3, 0.5])
    assert "(2,)" in str(e.value)
    with pytest.raises(puffer.ParameterError, match="sums to") as e:
        markov_chain(M, T=5, init=[0.5, 0.4])
    assert "0.9" in str(e.value)
    with pytest.raises(puffer.ParameterError, match="P\\(X_0 = state 1\\)"):
        markov_chain(M, T=5, init=[1.1, -0.1])
    with pytest.raises(puffer.ParameterError, match="'summer'"):
        markov_chain([M, M], T=5, init=[[0.5, 0.5], [0.6, 0.3]], labels=["winter", "summer"])
    with pytest.raises(puffer.ParameterError, match="shape"):
        markov_chain([M, M], T=5, init=[[0.5, 0.5], [0.6, 0.4], [0.5, 0.5]])
    # float32 initial laws get the float32 tolerance
    fw = markov_chain(M, T=5, init=np.array([0.7, 0.3], dtype=np.float32))
    assert fw.initial_laws[0].sum() == pytest.approx(1.0, abs=1e-15)
