"""Renyi -> (eps, delta) conversions (puffer.guarantees.conversions): Canonne, Kamath & Steinke
2020, Prop 12 and the optimal single-order conversion of Asoodeh et al. 2021 against mpmath; RPP
and RPPCurve.to_pp at most the best cited conversion and the pure eps, never below the exact
(eps, delta) of the Gaussian (whose Renyi curve the conversions must not beat)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import puffer
from puffer import RPP, RPPCurve
from puffer._core import profile as P
from puffer.guarantees.conversions import cite, single

REFS = json.loads((Path(__file__).resolve().parent.parent / "data" / "profile_mpmath_refs.json").read_text())


def _cks(a, e, d):
    a, e, d = mp.mpf(a), mp.mpf(e), mp.mpf(d)
    return max(mp.mpf(0), e + mp.log1p(-1 / a) - (mp.log(d) + mp.log(a)) / (a - 1))


def test_cks_is_rounded_up_and_below_prop_2_2():
    mp.mp.dps = 40
    rng = np.random.default_rng(12)
    for _ in range(2000):
        a, e, d = 1.0 + 10 ** rng.uniform(-3, 3), rng.uniform(0, 5), 10 ** rng.uniform(-12, -0.1)
        got = P.rdp_to_dp_cks(a, e, d)
        assert got >= _cks(a, e, d)
        assert got <= _cks(a, e, d) + mp.mpf("1e-13") * (1 + abs(_cks(a, e, d)))
        assert got <= RPP(a, e).to_pp(d, method="prop2.2").eps


def test_optimal_conversion_never_below_the_exact_optimum():
    """The certified value (a Lagrange dual bound) is >= the primal optimum over two-point pairs
    (mpmath, 40 digits) and within 1e-6 of it; never above CKS."""
    for key, ref in REFS["conversion"].items():
        a, r, d = (float(x) for x in key.split("|"))
        got = P.rdp_to_dp_optimal(a, r, d)
        assert mp.mpf(ref) <= got <= mp.mpf(ref) + mp.mpf("1e-6") * (1 + abs(mp.mpf(ref))), key
        assert got <= P.rdp_to_dp_cks(a, r, d)


def _random_curve(rng):
    """A random convex non-decreasing eps(alpha) on a random grid of orders (optionally with
    alpha = inf), the kind of curve a composition of mechanisms gives."""
    n = int(rng.integers(3, 30))
    alphas = np.unique(np.round(1.0 + 10 ** rng.uniform(-1.5, 3, n), 6))
    c0, c1, c2 = rng.uniform(0, 0.5), 10 ** rng.uniform(-3, 0), 10 ** rng.uniform(-6, -2)
    eps = c0 + c1 * alphas + c2 * alphas ** 2
    if rng.random() < 0.4:
        top = float(eps[-1] + rng.uniform(0.0, 3.0))    # a finite pure eps at alpha = inf
        return RPPCurve(tuple(alphas) + (math.inf,), tuple(eps) + (top,)), top
    return RPPCurve(tuple(alphas), tuple(eps)), math.inf


def test_to_pp_at_most_the_best_cited_conversion_on_random_curves():
    """Acceptance: on random curves, to_pp(delta) <= min over the orders of the CKS conversion and of
    Prop 2.2 (both exact at 40 digits, a relative 1e-12 for the directed rounding) and <= the pure eps."""
    mp.mp.dps = 40
    rng = np.random.default_rng(32)
    for _ in range(60):
        c, pure = _random_curve(rng)
        d = float(10 ** rng.uniform(-12, -1))
        got = c.to_pp(d).eps
        finite = [(a, e) for a, e in zip(c.alphas, c.eps) if math.isfinite(a)]
        best = min(min(_cks(a, e, d), mp.mpf(e) + mp.log(1 / mp.mpf(d)) / (mp.mpf(a) - 1)) for a, e in finite)
        assert got <= best * (1 + mp.mpf("1e-12")), (c, d)
        assert got <= pure
        assert got == c.to_pp(d).eps                                  # deterministic


def test_to_pp_is_never_below_the_exact_gaussian_profile():
    """A Gaussian curve alpha c (Delta/sigma = s): every conversion is an upper bound on the exact eps
    of (eps, delta) for that noise (the hockey-stick root, Balle & Wang 2018, 40 digits)."""
    mp.mp.dps = 40
    for s, d in [(1.0, 1e-5), (0.05, 1e-9), (3.0, 1e-3), (0.5, 1e-12)]:
        c = RPPCurve.from_function(lambda a, s=s: a * s * s / 2)
        got = c.to_pp(d).eps

        def delta(e, s=s):
            return mp.ncdf(s / 2 - e / s) - mp.exp(e) * mp.ncdf(-s / 2 - e / s) - d
        exact = mp.findroot(delta, puffer.noise.profile.eps_at(puffer.noise.Gaussian(1.0), d, s))
        assert exact <= got <= c.to_pp(d, method="cks").eps


def test_pure_eps_from_the_function():
    # a curve built from a function with R(inf) finite reaches pure eps even without inf on its grid
    c = RPPCurve.from_function(lambda a: 1.0 if math.isinf(a) else 1.0 - 1.0 / a, [2.0, 4.0])
    assert c.to_pp(1e-9).eps <= 1.0


def test_methods_and_citations():
    g = RPP(2.0, 0.5)
    vals = {m: g.to_pp(1e-5, method=m) for m in ("prop2.2", "cks", "optimal", "best")}
    assert vals["best"].eps == vals["optimal"].eps < vals["cks"].eps < vals["prop2.2"].eps
    assert vals["cks"].provenance.refs[-1] == puffer.refs.Ref("canonne2020", "Prop 12")
    assert single(math.inf, 0.7, 1e-5) == (0.7, "pure")
    assert [cite(m).paper for m in ("prop2.2", "cks", "optimal")] == ["pierquin2024", "canonne2020", "asoodeh2021"]
    with pytest.raises(puffer.ParameterError, match="'method'"):
        g.to_pp(1e-5, method="tightest")
    with pytest.raises(puffer.ParameterError, match="'delta'"):
        P.rdp_to_dp_optimal(2.0, 0.5, 0.0)
    with pytest.raises(puffer.ParameterError, match="'alpha'"):
        P.rdp_to_dp_cks(1.0, 0.5, 1e-5)
