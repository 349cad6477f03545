"""Issue 43, item 1: hockey-stick divergences and (eps, delta) profile calibration of
``Custom(log_lipschitz=L)`` densities that oscillate are certified from L.

Before the fix the hockey stick of such a density was integrated by adaptive Gauss-Kronrod, which
never sampled the comb's teeth between its nodes: e^{-|x|}(1 + 0.9 cos 5x)/Z at eps = 1, shift 1
gave 0.245215 for 0.245541, and ``profile.calibrate`` returned scales whose true delta was far above
the claim (A = 0.5, w = 5, eps = 0.1, delta = 1e-6: scale 29.167, true delta 2.6e-3). These tests
failed on that code (the issue value, the four calibrations; on the grid the old quadrature was
under in 9 of 32 cases, one at 2e-321 for a positive truth, and refused 2). Now
p(x - u) lies under its tent and p(x) above its valley between nodes (cpp/renyi/lipschitz.cpp),
the per-gap integral of the difference is exact, and gaps are halved until the upper and lower sums
agree to 0.1 % (``LIPSCHITZ_HOCKEY``); every value is an upper bound whatever the shape between nodes.

Truths: the definition integrated by mpmath at 40 digits between the sign changes of the privacy
loss, one period at a time (hockey_oracle.py; stored in tests/data/snd_hockey_oscillating_truth.json,
a case missing there is integrated on the spot).
"""
import json

import hockey_oracle as O  # tests/soundness: on sys.path
import mpmath as mp
import numpy as np
import pytest

import puffer
from puffer.noise import Custom
from puffer.noise import profile as P

MPMATH_DPS = 40
TRUTH = json.loads(O.TRUTH_FILE.read_text())["truth"] if O.TRUTH_FILE.exists() else {}
RTOL, ATOL, _ = P.LIPSCHITZ_HOCKEY


def _truth(c):
    k = O.key(c)
    if k in TRUTH:
        return mp.mpf(TRUTH[k])
    return O.hockey(c["A"], c["w"], c["eps"], c["u"])


def _custom(A, w, symmetric=True, L_factor=1.0):
    lp, L = O.comb(A, w)
    return Custom(lp, log_lipschitz=L * L_factor, symmetric=symmetric, name="comb")


def test_issue_value():
    c = O.cases()[0]
    t = _truth(c)
    assert abs(t - mp.mpf("0.245540540085855625")) < 1e-15
    got = P.hockey_stick(_custom(0.9, 5.0), 1.0, 1.0)
    assert t <= got <= t * (1 + RTOL)


@pytest.mark.parametrize("c", O.cases(), ids=lambda c: f"A{c['A']:.2f}-w{c['w']:.1f}-e{c['eps']:.3g}-u{c['u']:.3g}")
def test_grid_never_below_truth(c):
    t = _truth(c)
    for sym in (True, False):      # the folded (|u|) and the signed path
        got = P.hockey_stick(_custom(c["A"], c["w"], symmetric=sym), c["eps"], c["u"])
        assert mp.mpf(got) >= t, (c, sym, got, mp.nstr(t, 20))
        # within the tolerance (relative, plus the absolute one on the mass lower bound's scale)
        assert mp.mpf(got) <= t * (1 + 2 * RTOL) + 4 * ATOL, (c, sym, got, mp.nstr(t, 20))


def _check_calibration(A, w, eps, delta, grid=(0.25, 0.5, 0.75, 1.0)):
    s = P.calibrate(_custom(A, w), eps=eps, delta=delta, sensitivity=1.0).scale
    for v in grid:   # the true delta at shifts of the ball |v| <= 1 (standardized v / s)
        t = O.hockey(A, w, eps, v / s)
        assert t <= delta, (A, w, eps, delta, s, v, mp.nstr(t, 12))
    return s


@pytest.mark.parametrize("A,w,eps,delta,old", [(0.5, 5.0, 0.1, 1e-6, 29.167), (0.5, 5.0, 0.5, 1e-6, 4.145),
                                               (0.5, 5.0, 1.0, 0.05, 2.023), (0.9, 5.0, 0.1, 1e-3, 41.30)])
def test_issue_calibrations_meet_delta(A, w, eps, delta, old):
    s = _check_calibration(A, w, eps, delta)
    assert s > old
    # not absurdly conservative: at 0.98 s the true delta at the boundary is above the target for
    # these cases (the sup over the ball and the tolerance cost under 2 %)
    assert O.hockey(A, w, eps, 1.0 / (0.98 * s)) > delta or O.hockey(A, w, eps, 0.5 / (0.98 * s)) > delta


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_random_calibrations_meet_delta(seed):
    rng = np.random.default_rng(4300 + seed)
    A, w = float(rng.uniform(0.2, 0.9)), float(rng.uniform(1.0, 12.0))
    eps, delta = float(rng.choice([0.05, 0.2, 1.0])), float(10 ** rng.uniform(-8, -1.5))
    _check_calibration(A, w, eps, delta, grid=(0.125, 0.375, 0.625, 0.875, 1.0))


def test_a_claimed_L_below_the_true_one_is_an_error_on_the_hockey_path():
    lp, L = O.comb(0.9, 5.0)
    c = Custom(lp, log_lipschitz=L, symmetric=True)
    object.__setattr__(c, "log_lipschitz", 0.5 * L)   # past the construction grid's check
    with pytest.raises(puffer.ParameterError, match="log_lipschitz"):
        P.hockey_stick(c, 0.5, 1.0)
