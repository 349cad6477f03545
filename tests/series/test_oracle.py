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


def _check(fw, windows, eps, oracle=None):
    p = plan(fw, windows, eps=eps)
    o = oracle or SeriesOracle(_priors(fw), fw.length, p.windows, fw.state_values)
    exact = o.loss(p.scales)
    assert exact <= p.guarantee.eps * (1 + 1e-9), (windows, p, exact)
    assert exact <= p.eps_certified * (1 + 1e-9) + 1e-12
    assert p.scales[0] <= p.candidates["mqm"]
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


@pytest.mark.parametrize("seed", range(12))
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
