"""Noisy projected SGD: Prop 6.4 shifts against an independent Gaussian-conditioning computation,
the accountant against the paper's formulas, and the trainer (reproducibility, accuracy)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from puffer.errors import ParameterError
from puffer.iteration import PABI, NoisySGD, gaussian_prior_shifts, lemma_f1, noisy_sgd_account, sgd_shifts
from puffer.iteration.allocation import optimal_allocation
from puffer.noise import Gaussian


def _random_cov(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T + 0.1 * np.eye(n)


def _conditional_mean_shift(S, m, i, t, diff):
    """E[X_t | X_i = a] - E[X_t | X_i = b] through the precision matrix of (X_t, X_i): with
    P = [[P_tt, P_ti], [P_it, P_ii]] = Cov(X_t, X_i)^{-1}, E[X_t | X_i = x] = mu_t - P_tt^{-1} P_ti (x - mu_i)."""
    idx = np.r_[np.arange(t * m, (t + 1) * m), np.arange(i * m, (i + 1) * m)]
    P = np.linalg.inv(S[np.ix_(idx, idx)])
    return -np.linalg.solve(P[:m, :m], P[:m, m:] @ diff)


def test_gaussian_prior_shifts_against_conditioning():
    rng = np.random.default_rng(0)
    for _ in range(30):
        T, m = int(rng.integers(2, 6)), int(rng.integers(1, 4))
        S = _random_cov(rng, T * m)
        i = int(rng.integers(0, T))
        a, b = rng.normal(size=m), rng.normal(size=m)
        got = gaussian_prior_shifts(S, i, a, b)
        for t in range(T):
            want = np.linalg.norm(a - b) if t == i else np.linalg.norm(_conditional_mean_shift(S, m, i, t, a - b))
            assert got[t] == pytest.approx(want, rel=1e-9)
    R = np.array([[1.0, 0.3, -0.6], [0.3, 2.0, 0.1], [-0.6, 0.1, 1.5]])
    np.testing.assert_allclose(gaussian_prior_shifts(R, 2, 2.0), [0.8, 2 * 0.1 / 1.5, 2.0], rtol=1e-15)


def test_prop_6_4_paper_allocation_formula():
    """Prop 6.4: D <= alpha eta^2 / (2 sigma^2) [min(2L, C ||a-b||)^2 + sum_{t != i} min(2L, C ||M_t (a-b)||)^2]."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        T, m = 6, 2
        S = _random_cov(rng, T * m)
        i = int(rng.integers(0, T))
        a, b = rng.normal(size=m), rng.normal(size=m)
        eta, sig, L, C, alpha = 0.3, 0.8, 1.2, 0.9, 3.0
        w = gaussian_prior_shifts(S, i, a, b)
        got = PABI(sgd_shifts(w, eta=eta, L=L, C=C), Gaussian(sig), "paper").epsilon(alpha)
        terms = [min(2 * L, C * np.linalg.norm(a - b)) ** 2] + [
            min(2 * L, C * np.linalg.norm(_conditional_mean_shift(S, m, i, t, a - b))) ** 2 for t in range(T) if t != i]
        want = alpha * eta ** 2 / (2 * sig ** 2) * sum(terms)
        assert want <= got <= want * (1 + 1e-9)
        opt = PABI(sgd_shifts(w, eta=eta, L=L, C=C), Gaussian(sig), "optimal").epsilon(alpha)
        assert opt <= got * (1 + 1e-12)


def _naive_account(order, R, eta, L, C, sigma, diameter, alpha):
    """max over secret records of alpha sum a_t^2 / (2 sigma^2), a = minorant of the shifts."""
    best = 0.0
    for i in range(R.shape[0]):
        w = np.abs(R[order, i] / R[i, i]) * diameter
        s = eta * np.minimum(2 * L, C * w)
        s[order == i] = 2 * eta * L
        a = optimal_allocation(s)
        best = max(best, alpha * float(np.sum(a * a)) / (2 * sigma ** 2))
    return best


def test_accountant_formula_independent_and_correlated():
    n, eta, nu = 12, 0.5, 1.5
    sgd = NoisySGD("logistic", eta=eta, noise_multiplier=nu, epochs=1, shuffle=False, clip=1.0, radius=4.0)
    c = sgd.loss.constants()
    order = np.arange(n)
    # independent: the last record's shift 2 eta L meets no later step: eps = 2 alpha L^2 / nu^2
    acc = sgd.account(n, order, dim=3)
    for alpha in (2.0, 5.0):
        assert acc.epsilon(alpha) == pytest.approx(lemma_f1(alpha, c["L"], nu, n, n), rel=1e-12)
    assert acc.worst_record == n - 1
    # AR(1)-type correlation R_ti = 0.6^|t-i|
    R = 0.6 ** np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    acc = sgd.account(n, order, dim=3, correlation=R)
    want = _naive_account(order, R, eta, c["L"], c["C"], nu * eta, 2.0, 2.0)
    assert want <= acc.epsilon(2.0) <= want * (1 + 1e-9)
    assert acc.epsilon(2.0) > lemma_f1(2.0, c["L"], nu, n, n)        # correlation costs privacy
    assert "soundness caveat" in acc.curve.provenance.notes


def test_trainer_reproducible_bit_for_bit():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 4))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(float)
    sgd = NoisySGD("logistic", eta=0.4, noise_multiplier=3.0, epochs=3, radius=5.0)
    r1 = sgd.fit(X, y, rng=123)
    r2 = sgd.fit(X, y, rng=123)
    assert r1.w.tobytes() == r2.w.tobytes()
    assert r1.guarantee == r2.guarantee
    r3 = sgd.fit(X, y, rng=124)
    assert r3.w.tobytes() != r1.w.tobytes()
    g = np.random.default_rng(7)
    r4 = sgd.fit(X, y, rng=np.random.default_rng(7))
    r5 = sgd.fit(X, y, rng=np.random.default_rng(7))
    assert r4.w.tobytes() == r5.w.tobytes()
    assert g is not None


def test_trainer_learns_with_little_noise():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    wstar = np.array([2.0, -1.0, 0.5, 0.0, 1.0])
    y = (X @ wstar > 0).astype(float)
    r = NoisySGD("logistic", eta=0.5, sigma=1e-3, epochs=5, radius=20.0).fit(X, y, rng=0)
    acc = np.mean((r.predict(X) > 0) == (y > 0))
    assert acc > 0.93
    # linear regression recovers the direction
    yl = X @ wstar * 0.1 + 0.01 * rng.normal(size=400)
    rl = NoisySGD("linear", eta=0.1, sigma=1e-4, epochs=20, radius=5.0, clip=3.0, label_bound=2.0).fit(X, yl, rng=0)
    cos = rl.w @ wstar / (np.linalg.norm(rl.w) * np.linalg.norm(wstar))
    assert cos > 0.95


def test_trainer_errors():
    with pytest.raises(ParameterError, match="2/beta"):
        NoisySGD("logistic", eta=8.0, sigma=1.0)             # beta = 1/4: eta < 8 required
    with pytest.raises(ParameterError, match="exactly one"):
        NoisySGD("logistic", eta=0.1)
    with pytest.raises(ParameterError, match="exactly one"):
        NoisySGD("logistic", eta=0.1, sigma=1.0, noise_multiplier=1.0)
    with pytest.raises(ParameterError, match="loss"):
        NoisySGD("hinge", eta=0.1, sigma=1.0)
    sgd = NoisySGD("logistic", eta=0.1, sigma=1.0)
    with pytest.raises(ParameterError, match="binary"):
        sgd.fit(np.ones((3, 2)), np.array([0.0, 1.0, 2.0]), rng=0)
    with pytest.raises(ParameterError, match="one label per record"):
        sgd.fit(np.ones((3, 2)), np.array([0.0, 1.0]), rng=0)
    with pytest.raises(ParameterError, match="2/beta"):
        noisy_sgd_account(np.arange(3), eta=3.0, L=1.0, C=1.0, beta=1.0, sigma=1.0, diameter=2.0)
    assert math.isfinite(lemma_f1(2.0, 1.0, 1.0, 3, 3))
