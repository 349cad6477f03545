"""Lemma 1 on the box of support values (docs/series.md): the local losses evaluated only at the
support values equal the maximum of the ratio over the whole integer range and bound it at real
outputs. Independent source: the smoothed laws summed term by term (exp of each distance) over
the integer box and at random real points."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from puffer.series import quilt as Q


def _g(law: np.ndarray, pts: list[np.ndarray], y: np.ndarray, beta: float) -> float:
    """sum_a law(a) prod_j exp(-|y_j - a_j| / beta), term by term."""
    tot = 0.0
    for idx in zip(*np.nonzero(law)):
        a = np.array([pts[j][i] for j, i in enumerate(idx)], dtype=float)
        tot += law[idx] * float(np.exp(-np.abs(y - a).sum() / beta))
    return tot


def _brute(p: np.ndarray, q: np.ndarray, pts: list[np.ndarray], beta: float, rng) -> tuple[float, float]:
    """(max over the integer box of the value range, max at random real points) of log g_p / g_q."""
    rngs = [np.arange(int(v.min()), int(v.max()) + 1) for v in pts]
    box = max(np.log(_g(p, pts, np.array(y, float), beta) / _g(q, pts, np.array(y, float), beta))
              for y in itertools.product(*rngs))
    real = max(np.log(_g(p, pts, y, beta) / _g(q, pts, y, beta))
               for y in (np.array([rng.uniform(v.min() - 2, v.max() + 2) for v in pts]) for _ in range(200)))
    return box, real


@pytest.mark.parametrize("seed", range(4))
def test_one_window_support_points_equal_the_integer_range(seed):
    rng = np.random.default_rng(seed)
    S = 30
    supp = np.sort(rng.choice(S, size=5, replace=False))
    p = np.zeros((1, S))
    q = np.zeros((1, S))
    p[0, supp[:4]] = rng.dirichlet(np.ones(4))
    q[0, supp[1:]] = rng.dirichlet(np.ones(4))
    beta = float(rng.uniform(0.5, 4.0))
    got = float(Q._local_loss(p, q, beta)[0])
    box, real = _brute(p[0], q[0], [np.arange(S)], beta, rng)
    assert box <= got <= box + 1e-6
    assert real <= got


@pytest.mark.parametrize("seed", range(3))
def test_joint_laws_on_value_sets_equal_the_integer_box(seed):
    rng = np.random.default_rng(10 + seed)
    vals = (np.array([0, 1, 7]), np.array([0, 1, 2, 7, 8, 14]), np.array([0, 3, 5]))
    shape = tuple(v.size for v in vals)
    J = np.zeros((1, 2, *shape))
    for s in range(2):
        m = (rng.random(shape) < 0.5) * rng.random(shape)
        m.flat[0] += 0.1
        J[0, s] = m / m.sum()
    beta = float(rng.uniform(0.7, 3.0))
    got = float(Q._local_lossN(J, vals, beta)[0])
    box, real = _brute(J[0, 0], J[0, 1], list(vals), beta, rng)
    assert box <= got <= box + 1e-6
    assert real <= got


def test_sums_hold_every_partial_sum():
    # grid values 0, 1, 7: parts of one position take 3 values, of two positions 6
    assert Q._sums((0, 1, 7), 1).tolist() == [0, 1, 7]
    assert Q._sums((0, 1, 7), 2).tolist() == [0, 1, 2, 7, 8, 14]
    assert Q._sums((0, 1, 7), 3).size == 10


@pytest.mark.parametrize("seed", range(3))
def test_two_windows_support_points_equal_the_integer_box(seed):
    # g_s(y1, y2) = sum_z W_z (A_z * lap)(y1) (B_z * lap)(y2): the joint law sum_z W_z A_z(a1) B_z(a2)
    rng = np.random.default_rng(20 + seed)
    k, S = 2, 12
    W = rng.dirichlet(np.ones(k), size=(1, 2))
    A = np.zeros((1, 2, k, S))
    B = np.zeros((1, 2, k, S))
    for s in range(2):
        for z in range(k):
            ia = rng.choice([0, 1, 5, 9], size=2, replace=False)
            ib = rng.choice([0, 3, 4, 11], size=2, replace=False)
            A[0, s, z, ia] = rng.dirichlet(np.ones(2))
            B[0, s, z, ib] = rng.dirichlet(np.ones(2))
    beta = float(rng.uniform(0.7, 3.0))
    got = float(Q._local_loss2(W, A, B, beta)[0])
    J = [np.einsum("z,zi,zj->ij", W[0, s], A[0, s], B[0, s]) for s in range(2)]
    box, real = _brute(J[0], J[1], [np.arange(S), np.arange(S)], beta, rng)
    assert box <= got <= box + 1e-6
    assert real <= got
