"""Every plan against the exact loss of the whole series (series_oracle.py: all paths of a small
chain, the integer box of window sums): the claimed total is never below the exact loss, the scale
never above the MQM's, and within 1.5x of the exact optimum common scale; a plan that pays one
window's single-release scale for a series that needs more fails the oracle."""
from __future__ import annotations

import numpy as np
import pytest
from series_oracle import SeriesOracle

from puffer.models import markov_chain
from puffer.series import plan

P = np.array([[0.9, 0.1], [0.2, 0.8]])


def _priors(fw):
    return [(fw.transitions[j], fw.initial_laws[j]) for j in range(len(fw.priors))]


def _check(fw, windows, eps, oracle=None, ratio=1.25):
    """The plan against the oracle: claimed total >= exact loss (the soundness check), scale <=
    the MQM's, and scale / exact optimum common scale in [1 - 1e-6, ratio] (the acceptance bound
    is 1.5, the goal 1.25; the bisections stop at 1e-7 and 1e-6 relative)."""
    p = plan(fw, windows, eps=eps)
    o = oracle or SeriesOracle(_priors(fw), fw.length, p.windows, fw.state_values)
    exact = o.loss(p.scales)
    assert exact <= p.guarantee.eps * (1 + 1e-9), (windows, p, exact)
    assert exact <= p.eps_certified * (1 + 1e-9) + 1e-12
    assert p.scales[0] <= p.candidates["mqm"]
    opt = o.optimum(eps)
    assert 1 - 1e-5 <= p.scales[0] / opt <= ratio, (windows, p.scales[0], opt)
    # the plan keeps a slack of 1e-4 eps for lattice releases (Lemma 3)
    assert exact <= eps * (1 - 0.99e-4)
    return p, o


@pytest.mark.parametrize("windows", [12, 6, 4, [(0, 3), (5, 9)], [(2, 7)], [(0, 1), (1, 2), (11, 12)]])
def test_issue_chain(windows):
    # P = [[.9, .1], [.2, .8]], stationary start, T = 12, eps = 1: exact optimum 5.1434 for one,
    # two or three windows covering the horizon
    fw = markov_chain(P, T=12)
    p, o = _check(fw, windows, 1.0)
    if windows in (12, 6, 4):
        assert o.optimum(1.0) == pytest.approx(5.1434, abs=1e-3)


def _random_case(rng):
    T = int(rng.integers(5, 10))
    a, b = rng.uniform(0.03, 0.5, 2)
    M = np.array([[1 - a, a], [b, 1 - b]])
    init = "stationary" if rng.random() < 0.5 else np.array([q := rng.uniform(0.05, 0.95), 1 - q])
    L = int(rng.integers(1, T + 1))
    # windows of random lengths with random gaps
    ws, pos = [], int(rng.integers(0, 2))
    while pos < T:
        n = int(rng.integers(1, max(2, L) + 1))
        if pos + n > T:
            break
        ws.append((pos, pos + n))
        pos += n + int(rng.integers(0, 3))
    if not ws:
        ws = [(0, T)]
    eps = float(rng.choice([0.5, 1.0, 2.0]))
    return markov_chain(M, T=T, init=init), ws, eps


@pytest.mark.parametrize("seed", range(16))
def test_random_grid_sound(seed):
    rng = np.random.default_rng(1000 + seed)
    fw, ws, eps = _random_case(rng)
    _check(fw, ws, eps)


def test_several_priors_and_values():
    # Theta of two chains (one non-stationary start); state values 0.5 and 2 (sums on a grid of 1.5)
    fw = markov_chain([P, [[0.7, 0.3], [0.4, 0.6]]], T=8, init=[[0.5, 0.5], [0.9, 0.1]], values=[0.5, 2.0])
    _check(fw, 4, 1.0)


def test_three_states():
    M = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
    fw = markov_chain(M, T=6)
    _check(fw, 3, 1.0)


def test_periodic_chain():
    day = np.array([[[0.9, 0.1], [0.3, 0.7]], [[0.6, 0.4], [0.1, 0.9]]])
    fw = markov_chain(day, T=10, period=2)
    _check(fw, 5, 1.0)


def test_matrix_per_step_chain():
    rng = np.random.default_rng(5)
    a = rng.uniform(0.05, 0.4, (8, 2))
    steps = np.stack([[[1 - x, x], [y, 1 - y]] for x, y in a])
    fw = markov_chain(steps[None], T=9, init=[0.3, 0.7])
    _check(fw, [(0, 3), (3, 5), (6, 9)], 1.0)


def test_one_window_scale_fails_the_oracle():
    # a plan that pays one window's single-release scale (the window planned alone, as a chain of
    # its own 4 positions) for the series of three windows: the oracle finds the series' loss
    # above the claimed eps
    alone = plan(markov_chain(P, T=4), 4, eps=1.0)
    fw = markov_chain(P, T=12)
    o = SeriesOracle(_priors(fw), 12, [(0, 4), (4, 8), (8, 12)])
    assert o.loss(alone.scales[0]) > 1.0 + 0.05
    # and the real plan passes
    _check(fw, 4, 1.0, o)


def test_theorem_functions_directly():
    # puffer.series.quilt's three entry points agree with the plan and with the oracle
    from puffer.series import quilt

    fw = markov_chain(P, T=10)
    ws = ((0, 5), (5, 10))
    q = quilt.quilt_candidate(fw, ws, 1.0)
    m = quilt.mqm_candidate(fw, ws, 1.0)
    assert q.eps <= 1.0 and m.eps == 1.0
    e = quilt.series_epsilon(fw, ws, q.scale)
    assert e <= 1.0
    o = SeriesOracle(_priors(fw), 10, ws)
    for b in (q.scale, 2 * q.scale, m.scale):
        assert o.loss(b) <= quilt.series_epsilon(fw, ws, b) * (1 + 1e-9)


@pytest.mark.parametrize("T, init", [(20, "stationary"), (16, [0.9, 0.1])])
def test_one_long_window_against_the_core_laws(T, init):
    # one window over a chain too long for path enumeration: the exact loss from the conditional
    # laws of the sum given X_t = s that the C++ core computes (an independent code path), maxed
    # over the integer box (box lemma, here by brute force over the support's range)
    fw = markov_chain(P, T=T, init=init)
    p = plan(fw, T, eps=1.0)
    b = p.scales[0]
    worst = 0.0
    for t in range(T):
        laws = [fw.conditional(0, f"X{t}={s}") for s in "01"]
        if any(law is None for law in laws):
            continue
        lo = min(law.atoms.min() for law in laws)
        hi = max(law.atoms.max() for law in laws)
        y = np.arange(lo, hi + 1)
        g = [np.log(np.exp(-np.abs(y[:, None] - law.atoms[None, :]) / b) @ law.probs) for law in laws]
        worst = max(worst, float((g[0] - g[1]).max()), float((g[1] - g[0]).max()))
    assert worst <= p.guarantee.eps * (1 + 1e-9)
    # the plan is the exact optimum here up to the bisection (no quilt: the exact loss)
    assert worst >= 0.999 * p.guarantee.eps


@pytest.mark.parametrize("seed", range(6))
def test_every_quilt_path_is_sound(seed):
    # a small quilt cap forces quilts with nodes near t (one-window, boundary-state and joint-law
    # local losses, and the horizon's ends): the bound must stay above the exact loss at every scale
    from puffer.series import quilt

    rng = np.random.default_rng(7000 + seed)
    fw, ws, _ = _random_case(rng)
    T = fw.length
    o = SeriesOracle(_priors(fw), T, ws, fw.state_values)
    for cap in (1, 2, 3):
        if cap > T - 1:
            continue
        for b in (0.7, 2.0, 5.0):
            bound = quilt.series_epsilon(fw, ws, b, cap=cap)
            assert o.loss(b) <= bound * (1 + 1e-9) + 1e-12, (ws, cap, b, bound, o.loss(b))


def test_more_noise_is_post_processing():
    # Lemma 3 (a): Lap(b') = Lap(b) + V, V ~ w delta_0 + (1 - w) Lap(b'), w = (b / b')^2, checked
    # pointwise by quadrature (mpmath, 30 digits); so the exact loss decreases in the scale
    import mpmath

    mpmath.mp.dps = 30
    b, b2 = mpmath.mpf(2), mpmath.mpf(3.5)
    w = (b / b2) ** 2

    def lap(x, s):
        return mpmath.exp(-abs(x) / s) / (2 * s)

    for y in (0, 0.3, -1.7, 5.0):
        conv = mpmath.quad(lambda v: lap(y - v, b) * lap(v, b2), [-mpmath.inf, min(0, y), max(0, y), mpmath.inf])
        assert abs(w * lap(y, b) + (1 - w) * conv - lap(y, b2)) < mpmath.mpf(10) ** -25
    fw = markov_chain(P, T=8)
    o = SeriesOracle(_priors(fw), 8, [(0, 4), (4, 8)])
    losses = [o.loss(s) for s in (1.0, 2.0, 3.0, 5.0, 8.0)]
    assert all(x > y for x, y in zip(losses, losses[1:]))


def _core_loss(fw, b):
    """The exact loss of one window over the whole chain from the core's conditional laws."""
    worst = 0.0
    for t in range(fw.length):
        laws = [fw.conditional(0, f"X{t}={s}") for s in "01"]
        lo = min(law.atoms.min() for law in laws)
        hi = max(law.atoms.max() for law in laws)
        y = np.arange(lo, hi + 1)
        g = [np.log(np.exp(-np.abs(y[:, None] - law.atoms[None, :]) / b) @ law.probs) for law in laws]
        worst = max(worst, float((g[0] - g[1]).max()), float((g[1] - g[0]).max()))
    return worst


def test_long_horizon_path_with_quilts():
    # T = 66 > 64: the coarse-then-pruned quilt search on worker processes, a cap of 12 (no
    # quilt-free option: every position needs quilt nodes); one window, so the core's laws give
    # the exact loss and the exact optimum (5.9129 by bisection)
    from puffer.series import quilt

    fw = markov_chain(P, T=66)
    c = quilt.quilt_candidate(fw, ((0, 66),), 1.0, cap=12)
    assert _core_loss(fw, c.scale) <= c.eps * (1 + 1e-9) <= 1.0
    assert _core_loss(fw, 5.9129 * 1.00001) <= 1.0 < _core_loss(fw, 5.9129 * 0.99999)
    assert c.scale / 5.9129 <= 1.25


@pytest.mark.parametrize("M, init, T, ws", [
    ([[1, 0], [0.3, 0.7]], [0.5, 0.5], 8, [(0, 3), (3, 8)]),          # an absorbing state
    ([[0, 1], [1, 0]], [0.5, 0.5], 7, [(0, 3), (4, 7)]),              # a deterministic flip
    ([[0.6, 0.4], [0, 1]], [0.9, 0.1], 8, 4),                         # secrets impossible early
    ([[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]], [1, 0, 0], 6, [(0, 2), (2, 6)])])
def test_chains_with_zeros(M, init, T, ws):
    # exact zeros in the matrices and the initial law (supports, impossible secrets, quilt values
    # of probability 0): the plan and every quilt path stay above the exact loss
    from puffer.series import quilt

    fw = markov_chain(M, T=T, init=init)
    p, o = _check(fw, ws, 1.0)
    for cap in (1, 2):
        for b in (1.0, 3.0):
            assert o.loss(b) <= quilt.series_epsilon(fw, ws, b, cap=cap) * (1 + 1e-9) + 1e-12
