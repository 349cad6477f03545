"""Delta_G over the whole credible box of a fitted Markov framework (issue 40 item 1):
``fw.w_inf(over="box")`` is a certified upper bound of the supremum over every chain of the
box, beside the corner maximum (Delta_G over Theta, a lower bound).

Soundness is tested against independent evaluations: Delta_G of 10^4 chains drawn uniformly
inside the box (and of random corners of it: every phase and row at a random extreme), each
computed exactly by the core's W_inf walk on its own framework, never exceeds the bound; nor
does any corner of Theta."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import puffer
from puffer.errors import ParameterError
from puffer.models import fit_markov, markov_chain
from puffer.models.box import box_w_inf
from puffer.models.fit import FitWarning
from puffer.models.theta import sample_beliefs
from test_markov_fit import DAY, simulate


def _fitted(units, length, T, period, seed, level=0.9, k3=False):
    rng = np.random.default_rng(seed)
    if k3:
        M = np.array([[[0.8, 0.15, 0.05], [0.2, 0.6, 0.2], [0.05, 0.25, 0.7]]])
        x = simulate(M, units, length, rng, k=3)
    else:
        x = simulate(DAY if period else DAY[:1], units, length, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return fit_markov(x, T=T, period=period, method="dirichlet", level=level)


def _inside(fw, n, rng):
    """n chains uniformly inside the k = 2 box (each row's free entry uniform in its range)."""
    f = fw.fit
    lo, hi = f.lower[0], f.upper[0]
    P = lo.shape[0]
    out = np.empty((n, P, 2, 2))
    for x in range(2):
        a = np.maximum(lo[:, x, 1 - x], 1 - hi[:, x, x])
        b = np.minimum(hi[:, x, 1 - x], 1 - lo[:, x, x])
        o = a + (b - a) * rng.random((n, P))
        if x == 0:
            o[: n // 10] = np.where(rng.random((n // 10, P)) < 0.5, a, b)        # random corners too
        out[:, :, x, 1 - x], out[:, :, x, x] = o, 1 - o
    return out


@pytest.mark.slow
@pytest.mark.parametrize("period,T", [(3, 6), (None, 5)])
def test_box_bound_is_never_below_chains_drawn_in_the_box(period, T):
    fw = _fitted(60, 20, T, period, seed=11)
    b = fw.box_bound()
    rng = np.random.default_rng(5)
    B = _inside(fw, 10_000, rng)
    M = B if period else B[:, 0]
    sampled = markov_chain(M, T, period=period).w_inf().value
    assert sampled <= b.bound
    assert b.corner_max <= b.bound and b.corner_max == fw.w_inf().value
    # every corner of Theta, one by one
    for i in range(len(fw.priors)):
        one = markov_chain(fw.transitions[i], T, period=period) if period else markov_chain(fw.transitions[i], T)
        assert one.w_inf().value <= b.bound
    assert b.bound <= fw.group_sensitivity


def test_box_bound_three_states_and_the_report():
    fw = _fitted(200, 30, 4, None, seed=3, k3=True)
    b = fw.box_bound()
    beliefs = sample_beliefs(fw, 300, 300, seed=1)
    assert markov_chain(beliefs, 4).w_inf().value <= b.bound
    s = fw.w_inf(over="box")
    assert s.value == b.bound and s.params["over"] == "box" and s.params["corner_max"] == b.corner_max
    assert s.params["ratio"] == pytest.approx(b.bound / b.corner_max)
    assert "whole credible box" in b.summary() and str(b.corner_max).rstrip("0").rstrip(".") in b.summary()
    assert fw.w_inf().params["over"] == "theta"           # the default stays Theta, and says so
    assert box_w_inf(fw, max_boxes=1).bound >= b.bound        # fewer sub-boxes: never tighter


@pytest.mark.parametrize("units,length,T", [(4000, 12, 3), (500, 50, 12)])
def test_a_narrow_box_on_a_short_chain_is_certified_at_the_corner(units, length, T):
    """Many records and a short chain: the branch and bound certifies the corner maximum
    itself (the box's supremum is then known exactly)."""
    fw = _fitted(units, length, T, None, seed=4)
    b = fw.box_bound()
    assert b.certified_at_corner and b.ratio == 1.0 and b.open_boxes == 0


def test_box_framework_releases_with_the_bound_and_refuses_law_based_mechanisms():
    fw = _fitted(60, 20, 6, 3, seed=12)
    bf = fw.box_framework()
    m = puffer.mechanisms.Wasserstein(bf, eps=1.0)
    assert m.sensitivity.value == fw.box_bound().bound and m.sensitivity.params["over"] == "box"
    assert "whole credible box" in bf.name and bf.digest() != fw.digest()
    assert m.noise.scale >= fw.box_bound().bound
    one = fw.box_framework(max_boxes=1)                       # its own budget: the bound its name states
    b1 = puffer.mechanisms.Wasserstein(one, eps=1.0).sensitivity.value
    assert b1 == one.box_bound(max_boxes=1).bound >= fw.box_bound().bound and f"Delta_G <= {b1:g}" in one.name
    for make in (lambda: puffer.mechanisms.MarkovQuilt(bf, eps=1.0), lambda: bf.conditional(bf.priors[0], "X0=0")):
        with pytest.raises(ParameterError, match="framework"):
            make()
    from puffer.publish.engines.w_inf import _check_fw  # the cluster paths read the chains themselves
    with pytest.raises(ParameterError, match="framework"):
        _check_fw(bf)
    with pytest.raises(ParameterError, match="over"):
        fw.w_inf(over="corners")
    plain = markov_chain(DAY, T=6, period=3)
    with pytest.raises(ParameterError, match="fit_markov"):
        plain.w_inf(over="box")


def test_the_path_ratio_bound_holds_on_every_path():
    """delta of a 2-state sub-box (path by path, and step by step) against the exact spread of
    log P'(path | X_t = a) / P_c(path | X_t = a) over every path of T = 7 (enumerated), for
    chains drawn in random sub-boxes, stationary initial laws."""
    import itertools

    from puffer.models import stationary_distribution
    from puffer.models.box import _init_spread, _step_spreads, _two_state_delta

    rng = np.random.default_rng(77)
    T = 7
    paths = np.array(list(itertools.product((0, 1), repeat=T)))

    def logp(M, pi):
        return np.log(pi[paths[:, 0]]) + np.log(M[paths[:, :-1], paths[:, 1:]]).sum(axis=1)

    for _ in range(200):
        plo, qlo = rng.uniform(0.02, 0.6, 2)
        phi, qhi = plo + rng.uniform(0, 0.3), qlo + rng.uniform(0, 0.3)
        lo = np.array([[1 - phi, plo], [qlo, 1 - qhi]])
        hi = np.array([[1 - plo, phi], [qhi, 1 - qlo]])
        pc, qc = (plo + phi) / 2, (qlo + qhi) / 2
        c = np.array([[1 - pc, pc], [qc, 1 - qc]])
        d_path = _two_state_delta(lo, hi, c, T, True)
        d_step = float(_step_spreads(lo[None], hi[None], c[None]).sum() * (T - 1)) + \
            _init_spread(lo[None], hi[None], stationary_distribution(c), True)
        for _ in range(5):
            p, q = rng.uniform(plo, phi), rng.uniform(qlo, qhi)
            if rng.random() < 0.3:
                p, q = rng.choice([plo, phi]), rng.choice([qlo, qhi])
            M = np.array([[1 - p, p], [q, 1 - q]])
            r = logp(M, stationary_distribution(M)) - logp(c, stationary_distribution(c))
            for t in range(T):
                for a in (0, 1):
                    sel = r[paths[:, t] == a]
                    spread = sel.max() - sel.min()
                    assert spread <= d_path + 1e-9 and spread <= d_step + 1e-9
