"""The compiled Theorem 2 (Ding 2022) and DAGWM log-moment (Pierquin et al. 2024, Thm 4.5) kernels
against the numpy reference paths kept in puffer.mechanisms (generic, exact, log-space and
Markov frameworks, linear and log-space priors), and against closed forms / mpmath.

Documented band: a compiled Theorem 2 root is never above the reference's (theta never below)
and at most REL_BAND below it relatively (the kernel adds a bound on the rounding of h, and its
pruning slack 2^-40); a compiled log-moment is never below the reference's and at most
LOG_BAND above it (relative, on the log scale). Witnesses (prior, pair, binding row/column) are equal.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import puffer
from puffer import _core
from puffer.framework import Framework
from puffer.mechanisms import DistributionAwareWasserstein, Kantorovich
from puffer.mechanisms import kantorovich as K
from puffer.mechanisms import wasserstein as W
from puffer.noise import Cauchy, Gaussian, Laplace

REL_BAND = 1e-9
LOG_BAND = 1e-9
INV = lambda v: 1.0 / v  # noqa: E731


def _markov(rng, k, T, n, *, floor=0.2, tiny=None, values=None):
    M = rng.random((n, k, k)) + floor
    if tiny is not None:                      # log-space priors: rare transitions
        M[:, :, 0] = tiny
    M /= M.sum(axis=2, keepdims=True)
    return puffer.models.markov_chain(M, T, values=values)


def _generic(rng, n_theta, n_secrets, n_atoms, *, exact=False):
    from fractions import Fraction

    cond = {}
    for th in range(n_theta):
        laws = {}
        for s in range(n_secrets):
            x = np.sort(rng.choice(np.arange(-3 * n_atoms, 3 * n_atoms), size=n_atoms, replace=False)) * 0.5
            if exact:
                c = rng.integers(1, 9, size=n_atoms)
                laws[s] = puffer.DiscreteDist(x, [Fraction(int(v), int(c.sum())) for v in c])
            else:
                p = rng.random(n_atoms) ** 3
                laws[s] = puffer.DiscreteDist(x, p / p.sum())
        cond[th] = laws
    return Framework.from_conditionals(cond, "all")


def _check_thm2(fw, eps):
    ref = K._plans_reference(fw, "thm2", eps, None, INV)
    new = K._thm2(fw, eps, None, INV)
    sr, sn = ref[0], new[0]
    assert (sn.value, sn.witness, sn.records) == (sr.value, sr.witness, sr.records)
    assert new[1] >= ref[1]                                   # theta never below
    assert new[1] <= ref[1] * (1 + REL_BAND)
    assert new[2] == ref[2]                                   # (prior, pair, (row|col, atom))
    return ref, new


@pytest.mark.parametrize("seed", range(6))
def test_thm2_generic_float_laws_match_reference(seed):
    rng = np.random.default_rng(seed)
    fw = _generic(rng, 3, 3, int(rng.integers(2, 40)))
    for eps in (0.05, 1.0, 7.0):
        _check_thm2(fw, eps)


def test_thm2_generic_exact_laws_match_reference():
    rng = np.random.default_rng(11)
    for fw in (_generic(rng, 2, 3, 12, exact=True), puffer.models.correlated_pair()):
        for eps in (0.3, 2.0):
            _check_thm2(fw, eps)


@pytest.mark.parametrize("k,T,n", [(2, 12, 5), (3, 9, 4), (4, 7, 3), (2, 30, 6)])
def test_thm2_markov_linear_priors_match_reference(k, T, n):
    rng = np.random.default_rng(100 * k + T)
    fw = _markov(rng, k, T, n)
    for eps in (0.1, 1.0):
        _check_thm2(fw, eps)


@pytest.mark.parametrize("k,T,values", [(2, 80, None), (3, 40, [0, 2, 5])])
def test_thm2_markov_log_space_priors_match_reference(k, T, values):
    rng = np.random.default_rng(7 + k)
    fw = _markov(rng, k, T, 3, tiny=1e-40, values=values)
    flags = _core.kantorovich.markov_thm2(fw._M, fw._pi, fw._vals, T, 1.0)[4]
    assert flags.all()   # every prior has laws beyond the double range (extended / log masses)
    _check_thm2(fw, 1.0)


def test_thm2_markov_with_impossible_secrets_matches_reference():
    # state 2 is never entered from 0 and the chain starts in 0: X_t = 2 impossible at t = 0
    P = np.array([[0.7, 0.3, 0.0], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    fw = puffer.models.markov_chain(P, 6, init=[1.0, 0.0, 0.0])
    _check_thm2(fw, 0.5)


def test_thm2_mechanism_uses_the_kernel_and_keeps_its_report():
    rng = np.random.default_rng(5)
    fw = _markov(rng, 3, 10, 4)
    m = Kantorovich(fw, eps=1.0, method="thm2")
    ref = K._plans_reference(fw, "thm2", 1.0, None, INV)
    assert m.binding == ref[2]
    assert m.theta >= ref[1] and m.noise.scale == m.theta
    assert m.theta <= puffer.mechanisms._base.scale_up(ref[1]) * (1 + REL_BAND)
    # a metric forces plans through Python; the roots still come from the kernel
    m2 = Kantorovich(fw, eps=1.0, method="thm2", metric=lambda z: np.abs(z) ** 1.5,
                     eta_inv=lambda e: 1.0 / e)
    ref2 = K._plans_reference(fw, "thm2", 1.0, lambda z: np.abs(z) ** 1.5, INV)
    assert m2.binding == ref2[2] and ref2[1] <= m2.theta


# ------------------------------------------------------------------ the kernel on single plans
def _plan_call(d, m, r, c, eps):
    off = np.array([0, len(d)], dtype=np.int64)
    eta, kind, key = _core.kantorovich.thm2_plans(np.asarray(d, float), np.asarray(m, float), np.asarray(r, float),
                                                   np.asarray(c, float), off, eps)
    return float(eta[0]), int(kind[0]), float(key[0])


def test_thm2_kernel_random_plans_against_numpy_reference():
    rng = np.random.default_rng(42)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        r = np.sort(rng.integers(0, max(1, n // 3) + 1, size=n)).astype(float)
        c = np.sort(rng.integers(0, max(1, n // 2) + 1, size=n)).astype(float)
        d = np.abs(r - c) * rng.choice([0.0, 1.0, 1.0, 1.0], size=n)
        m = rng.random(n) ** 4
        if rng.random() < 0.3:
            m[rng.integers(0, n)] = 0.0              # a log-space plan's zero-mass entry
        m /= max(m.sum(), 1e-300)
        eps = float(rng.choice([0.01, 0.5, 3.0]))
        e_py, where = K.thm2_eta(d, m, r, c, eps)
        e_c, kind, key = _plan_call(d, m, r, c, eps)
        if where is None:
            assert kind == 0 and math.isinf(e_c)
            continue
        assert e_c <= e_py and e_c >= e_py * (1 - REL_BAND)
        assert (K._KIND[kind], key) == where


def test_thm2_kernel_closed_forms():
    # one row, all its mass at distance 2: eta = eps / 2 exactly
    e, kind, key = _plan_call([2.0, 2.0], [0.25, 0.75], [1.0, 1.0], [3.0, 3.0], 1.0)
    assert 0.5 * (1 - 1e-12) <= e <= 0.5 and (kind, key) == (1, 1.0)
    # a two-point row 0: 0.3 e^(1 eta) + 0.7 e^(4 eta) = e^eps, root by mpmath (50 digits); its
    # columns 1 and 4 also receive mass 5 at d = 0 (rows 1 and 4), so their roots are larger
    mpmath.mp.dps = 50
    root = mpmath.findroot(lambda x: 0.3 * mpmath.e ** x + 0.7 * mpmath.e ** (4 * x) - mpmath.e ** 0.8, 0.2)
    col4 = mpmath.log((mpmath.e ** 0.8 * 5.7 - 5) / 0.7) / 4
    assert root < col4
    e, kind, key = _plan_call([1.0, 4.0, 0.0, 0.0], [0.3, 0.7, 5.0, 5.0], [0.0, 0.0, 1.0, 4.0], [1.0, 4.0, 1.0, 4.0],
                              0.8)
    assert float(root) * (1 - 1e-12) <= e <= float(root) and (kind, key) == (1, 0.0)  # feasible: at or below
    # ties between equal rows and columns: the first row wins (reference order)
    e, kind, key = _plan_call([1.0, 1.0], [0.5, 0.5], [0.0, 1.0], [1.0, 2.0], 1.0)
    assert (kind, key) == (1, 0.0)


def test_thm2_kernel_rejects_bad_input():
    with pytest.raises(puffer.errors.ParameterError, match="eps"):
        _plan_call([1.0], [1.0], [0.0], [1.0], 0.0)
    with pytest.raises(puffer.errors.ParameterError, match="mass"):
        _plan_call([1.0], [-1.0], [0.0], [1.0], 1.0)
    with pytest.raises(puffer.errors.ParameterError, match="offsets"):
        _core.kantorovich.thm2_plans(np.ones(2), np.ones(2), np.ones(2), np.ones(2), np.array([0, 3]), 1.0)


# ------------------------------------------------------------------ DAGWM
def _check_dagwm(fw, noise, alphas=(1.5, 2.0, 9.0, 100.0)):
    meta, v, logm, starts = W._dagwm_plans_reference(fw)
    data = W._dagwm_plan_data(fw)
    assert data.meta == meta and np.array_equal(data.v, v) and np.array_equal(data.starts, starts)
    # the Markov kernel's log-masses: np.log vs libm log, an ulp of |log m| at most
    assert np.all(np.abs(data.logm - logm) <= 4 * np.spacing(np.maximum(np.abs(logm), 1.0)))
    m = DistributionAwareWasserstein(fw, noise)
    for a in alphas:
        ref = W._dagwm_log_moment_reference(v, logm, starts, noise, a)
        best, k = W._largest(ref)
        got, wit = m.log_moment(a)
        exp_ref = puffer.guarantees.round_up(best + 1e-14 * abs(best), 8)
        assert got >= exp_ref and got <= exp_ref + LOG_BAND * max(1.0, abs(exp_ref))
        assert wit == meta[k]
        assert m.epsilon(a) >= puffer.guarantees.round_up(max(exp_ref, 0.0) / (a - 1.0))


@pytest.mark.parametrize("noise", [Gaussian(1.3), Laplace(2.0), Cauchy(1.5)])
def test_dagwm_markov_linear_matches_reference(noise):
    rng = np.random.default_rng(3)
    _check_dagwm(_markov(rng, 2, 24, 4), noise)


def test_dagwm_markov_log_space_and_k3_match_reference():
    rng = np.random.default_rng(4)
    _check_dagwm(_markov(rng, 2, 80, 2, tiny=1e-4), Gaussian(3.0))
    _check_dagwm(_markov(rng, 3, 8, 3, values=[0, 1, 4]), Laplace(1.0))


def test_dagwm_generic_laws_match_reference():
    rng = np.random.default_rng(8)
    _check_dagwm(_generic(rng, 3, 3, 20), Gaussian(0.7))
    _check_dagwm(_generic(rng, 2, 2, 15, exact=True), Gaussian(5.0))


def test_dagwm_log_moment_closed_form_gaussian():
    # one pair: P = {0: 1/2, 1: 1/2}, Q = {0: 1/2, 2: 1/2}: plan (0->0, 1/2), (1->2, 1/2);
    # Gaussian shift divergence D_a(N(v, s^2) || N(0, s^2)) = a v^2 / (2 s^2)
    fw = Framework.from_conditionals({"t": {"a": puffer.DiscreteDist([0, 1], [0.5, 0.5]),
                                            "b": puffer.DiscreteDist([0, 2], [0.5, 0.5])}}, "all")
    s, a = 1.1, 3.0
    m = DistributionAwareWasserstein(fw, Gaussian(s))
    mpmath.mp.dps = 40
    exact = mpmath.log(0.5 + 0.5 * mpmath.e ** ((a - 1) * a * 1 / (2 * mpmath.mpf(s) ** 2)))
    got, _ = m.log_moment(a)
    assert float(exact) <= got <= float(exact) * (1 + 1e-12)


def test_dagwm_merge_kernel_upper_bounds_the_merged_mass():
    logm = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    lm, idx, off = _core.kantorovich.dagwm_merge(logm, np.array([1, 0, 1, 1]), np.array([0, 2, 4]))
    assert off.tolist() == [0, 2, 3] and idx.tolist() == [0, 1, 1]
    mpmath.mp.dps = 30
    assert lm[0] == logm[1] and lm[1] == logm[0]
    assert float(mpmath.log(mpmath.mpf(0.3) + mpmath.mpf(0.4))) <= lm[2] <= math.log(0.7) + 1e-13


def test_thm2_laws_path_equals_plans_path_bitwise():
    # float laws go to the core as laws (couplings built there); the same couplings built by
    # puffer.transport and passed as plans give the same doubles
    rng = np.random.default_rng(21)
    fw = _generic(rng, 3, 4, 30)
    laws = list(fw.pair_laws())
    via_laws = K._thm2(fw, 0.7, None, None)
    plans = list(K._pair_plans(fw, None))
    off = np.r_[0, np.cumsum([p[5].size for p in plans])].astype(np.int64)
    eta, kind, key = _core.kantorovich.thm2_plans(*(np.concatenate([p[j] for p in plans]) for j in (5, 4, 2, 3)),
                                                   off, 0.7)
    t = 1.0 / eta
    best = int(np.argmax(t >= t.max() * (1 - K.WITNESS_BAND)))
    assert via_laws[1] == float(t.max())
    assert len(laws) == len(plans) and via_laws[2][2] == (K._KIND[int(kind[best])], float(key[best]))


def test_markov_witness_uses_the_state_names():
    """The C++ Markov paths report pairs with the framework's own secret labels (state names)."""
    fw = puffer.models.markov_chain([[0.8, 0.2], [0.3, 0.7]], T=6, states=["off", "on"])
    m = Kantorovich(fw, eps=1.0, method="thm2")
    _, pair = m.sensitivity.witness
    assert all(s in fw.secrets for s in pair) and all(s.endswith(("=off", "=on")) for s in pair)
    d = puffer.mechanisms.DistributionAwareWasserstein(fw, puffer.noise.Gaussian(1.0))
    assert all(s in fw.secrets for s in d.sensitivity.witness[1])


def test_markov_thm2_is_interruptible():
    """Ctrl-C (interrupt_main from another thread once the kernel runs) stops the Markov Theorem 2
    kernel: KeyboardInterrupt after little CPU time (the whole job needs ~6 CPU-s), no thread
    left behind, the next call works."""
    import threading

    from timing import Interrupter

    P = np.tile([[0.9, 0.1], [0.2, 0.8]], (400, 1, 1))
    big = puffer.models.markov_chain(P, T=1200)
    n_threads = threading.active_count()
    ctrl_c = Interrupter()
    with pytest.raises(KeyboardInterrupt):
        _core.kantorovich.markov_thm2(big._M, big._pi, big._vals, 1200, 1.0, 2, progress=ctrl_c.progress)
    assert ctrl_c.cpu_after() < 1.5
    assert threading.active_count() == n_threads
    small = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)
    assert Kantorovich(small, eps=1.0, method="thm2").noise.b > 0
