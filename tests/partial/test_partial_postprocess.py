"""Public-consistency post-processing against independent solvers: the exact l2 projection vs an
exact active-set-enumeration QP (120 cases, 1e-9) and a generic QP (scipy SLSQP, 150 cases, J <= 8)
plus the KKT conditions; the greedy controlled rounding
vs brute-force enumeration on 400 small tables."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import puffer.partial as P
from puffer.errors import ParameterError


def qp_projection(a, b, s):
    J = a.size
    x0 = np.concatenate([np.full(J, max(s, 0) / J), np.zeros(J)])
    cons = [{"type": "eq", "fun": lambda z: z[:J].sum() - s,
             "jac": lambda z: np.concatenate([np.ones(J), np.zeros(J)])},
            {"type": "ineq", "fun": lambda z: z[:J] - z[J:],
             "jac": lambda z: np.hstack([np.eye(J), -np.eye(J)])},
            {"type": "ineq", "fun": lambda z: z[J:], "jac": lambda z: np.hstack([np.zeros((J, J)), np.eye(J)])}]
    t = np.concatenate([a, b])
    r = minimize(lambda z: ((z - t) ** 2).sum(), x0, jac=lambda z: 2 * (z - t), constraints=cons, method="SLSQP",
                 options={"ftol": 1e-15, "maxiter": 1000})
    return r.x[:J], r.x[J:], float(r.fun)


def enum_qp(a, b, s):
    """Generic exact QP for small J: every active set of the inequalities (per county: none, c = d,
    d = 0, c = d = 0), each an affine projection; the best feasible point is the optimum."""
    J = a.size
    t = np.concatenate([a, b])
    best, arg = np.inf, None
    for act in itertools.product(range(4), repeat=J):
        rows = [np.concatenate([np.ones(J), np.zeros(J)])]
        rhs = [s]
        for j, k in enumerate(act):
            if k in (1, 3):
                r = np.zeros(2 * J)
                r[j], r[J + j] = 1, -1
                rows.append(r)
                rhs.append(0.0)
            if k in (2, 3):
                r = np.zeros(2 * J)
                r[J + j] = 1
                rows.append(r)
                rhs.append(0.0)
        A, bb = np.array(rows), np.array(rhs)
        z = t - A.T @ np.linalg.lstsq(A @ A.T, A @ t - bb, rcond=None)[0]
        c, d = z[:J], z[J:]
        if (d >= -1e-12).all() and (c >= d - 1e-12).all() and abs(c.sum() - s) < 1e-9:
            o = float(((z - t) ** 2).sum())
            if o < best:
                best, arg = o, z
    return arg[:J], arg[J:], best


def test_projection_vs_exact_enumeration_qp():
    g = np.random.default_rng(321)
    for case in range(120):
        J = int(g.integers(1, 5))
        a, b = g.normal(2, 5, J), g.normal(0, 5, J)
        s = float(g.uniform(0, 15)) if case % 10 else 0.0
        c, d = P.project_consistent(a, b, s)
        qc, qd, _ = enum_qp(a, b, s)
        assert np.allclose(c, qc, atol=1e-9) and np.allclose(d, qd, atol=1e-9)


def test_projection_vs_generic_qp():
    g = np.random.default_rng(123)
    for case in range(150):
        J = int(g.integers(1, 9))
        scale = 10 ** g.uniform(-1, 3)
        a = g.normal(0, scale, J) + g.uniform(0, scale)
        b = g.normal(0, scale, J)
        s = float(g.uniform(0, 3 * scale)) if case % 10 else 0.0
        c, d = P.project_consistent(a, b, s)
        obj = float(((c - a) ** 2).sum() + ((d - b) ** 2).sum())
        tol = 1e-9 * max(1.0, scale)
        # feasibility
        assert abs(c.sum() - s) <= tol * J and (d >= -tol).all() and (c >= d - tol).all()
        qc, qd, qobj = qp_projection(a, b, s)
        # optimality: the same point (strict convexity); SLSQP itself violates the constraints by
        # ~1e-6 relative, so its objective can dip below the true optimum by that much
        assert obj <= qobj * (1 + 1e-7) + 1e-9
        assert np.allclose(c, qc, atol=1e-5 * max(1.0, scale)) and np.allclose(d, qd, atol=1e-5 * max(1.0, scale))
        # KKT: for one lambda, each county is the cone projection of (a - lambda/2, b)
        j = int(np.argmax(c))
        if c[j] > d[j] + tol:
            lam = 2 * (a[j] - c[j])
            cc, dd = P.postprocess.cone_project(a - lam / 2, b)
            assert np.allclose(cc, c, atol=1e-8 * max(1, scale)) and np.allclose(dd, d, atol=1e-8 * max(1, scale))


def test_projection_rowwise_and_errors():
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    c, d = P.project_consistent(a, np.zeros_like(a), [3, 2])
    assert np.allclose(c.sum(1), [3, 2])
    with pytest.raises(ParameterError, match="total"):
        P.project_consistent([1.0, 2.0], [0.0, 0.0], -1)
    with pytest.raises(ParameterError, match="deaths"):
        P.project_consistent([1.0, 2.0], [0.0], 1)


def brute_round(c, d, s):
    fc, fd = np.floor(c), np.floor(d)
    J = c.size
    best = np.inf
    for y in itertools.product((0, 1), repeat=2 * J):
        yc, yd = np.array(y[:J]), np.array(y[J:])
        C, D = fc + yc, fd + yd
        if C.sum() != s or (C < D).any() or (D < 0).any():
            continue
        best = min(best, np.abs(C - c).sum() + np.abs(D - d).sum())
    return best


def test_controlled_round_vs_brute_force():
    g = np.random.default_rng(7)
    for _ in range(400):
        J = int(g.integers(1, 5))
        a = g.normal(3, 4, J)
        b = g.normal(1, 3, J)
        s = int(g.integers(0, 15))
        c, d = P.project_consistent(a, b, s)
        if g.random() < 0.2:  # exact ties and integer parts
            c, d = np.round(c * 2) / 2, np.minimum(np.round(d * 2) / 2, np.round(c * 2) / 2)
            c, d = P.project_consistent(c, d, s)
        C, D = P.controlled_round(c, d, s)
        assert C.dtype.kind == "i" and C.sum() == s and (C >= D).all() and (D >= 0).all()
        obj = np.abs(C - c).sum() + np.abs(D - d).sum()
        assert obj <= brute_round(c, d, s) + 1e-9


def test_contraction_effects_and_two_stage():
    nc = np.array([-5, 10, 3])
    nd = np.array([-1, 2, 7])
    C, D = P.two_stage(nc.astype(float), nd.astype(float), 12)
    eff = P.contraction_effects(nc, nd, C, D)
    assert eff["contracted_case_zeros"].tolist() == [True, False, False]
    assert eff["contracted_death_zeros"].tolist() == [True, False, False]
    assert eff["contracted_rates"][2] == (C[2] == D[2])
    with pytest.raises(ParameterError):
        P.controlled_round([1.2, 0.3], [0.0, 0.0], 5)  # inconsistent with the total
