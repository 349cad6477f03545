"""Issue 9 acceptance: a randomized soundness test of the Renyi kernel against mpmath.

Fixed seed, bounded time (about 30-60 s on one core): every noise family at extreme parameters
(tail exponents near 1 and huge, orders from 1 + 1e-3 to 1e4, shifts from 1e-6 to 1e4 scales),
compared with D_alpha computed from its definition at 30 digits (tests/renyi_mpmath_refs.py
for the quadrature families; the exact closed forms in mpmath for Gaussian and Laplace).
Zero under-reports allowed: puffer's value must be >= the reference, and within 1e-6 relative
of it (a certified bound that is also tight). (The Markov-chain part of this acceptance item is
in the Markov tests.)
"""
import importlib.util
import math
import time
from pathlib import Path

import mpmath as mp
import numpy as np

from puffer.noise import Cauchy, Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT

_spec = importlib.util.spec_from_file_location("renyi_mpmath_refs", Path(__file__).parents[1] / "renyi_mpmath_refs.py")
refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(refs)
refs.DPS = 30

N_CASES = 42
SEED = 20260923


def _logu(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _cases():
    rng = np.random.default_rng(SEED)
    fams = ["gaussian", "laplace", "cauchy", "gen_cauchy", "student_t", "gen_gauss", "logistic"]
    out = []
    for i in range(N_CASES):
        fam = fams[i % len(fams)]
        alpha = 1.0 + _logu(rng, 1e-3, 1e4 - 1)
        u = _logu(rng, 1e-6, 1e4)
        scale = _logu(rng, 1e-3, 1e3)
        if fam == "gen_cauchy":
            shape = 1.0 + _logu(rng, 1e-2, 1e6)
        elif fam == "student_t":
            shape = _logu(rng, 0.05, 1e8)
        elif fam == "gen_gauss":
            shape = float(rng.uniform(1.0, 20.0))
        else:
            shape = None
        out.append((fam, shape, alpha, u, scale))
    return out


def _puffer(fam, shape, scale):
    return {"gaussian": lambda: Gaussian(scale), "laplace": lambda: Laplace(scale), "cauchy": lambda: Cauchy(scale),
            "gen_cauchy": lambda: GenCauchy(scale, shape), "student_t": lambda: StudentT(shape, scale),
            "gen_gauss": lambda: GenGaussian(shape, scale), "logistic": lambda: Logistic(scale)}[fam]()


def _reference(fam, shape, alpha, u):
    mp.mp.dps = 30
    a, U = mp.mpf(alpha), mp.mpf(u)
    if fam == "gaussian":
        return a * U * U / 2
    if fam == "laplace":  # Cor 3.1 (exact closed form)
        return mp.log(a / (2 * a - 1) * mp.exp((a - 1) * U) + (a - 1) / (2 * a - 1) * mp.exp(-a * U)) / (a - 1)
    spec = {"cauchy": dict(kind="t", k=2.0, nu=1.0), "gen_cauchy": dict(kind="t", k=shape, nu=1.0),
            "student_t": dict(kind="t", k=shape + 1.0, nu=shape), "gen_gauss": dict(kind="gg", beta=shape),
            "logistic": dict(kind="logistic")}[fam]
    return refs.divergence(spec, alpha, u)


def test_random_extreme_parameters_never_under_report():
    t0 = time.perf_counter()
    bad, checked, lines = [], 0, []
    for fam, shape, alpha, u, scale in _cases():
        noise = _puffer(fam, shape, scale)
        v = u * scale
        ustd = refs.std_u(v, scale)  # the standardized shift exactly as the facade computes it
        got = noise.renyi_shift(alpha, v)
        ref = _reference(fam, shape, alpha, ustd)
        checked += 1
        rel = float((mp.mpf(got) - ref) / ref) if ref > 0 else float(got)
        lines.append(f"{fam} shape={shape} alpha={alpha:.6g} u={ustd:.3g}: rel {rel:.2e}")
        if not (mp.mpf(got) >= ref) or rel > 1e-6:
            bad.append(lines[-1])
    assert checked == N_CASES
    assert not bad, "\n".join(bad)
    assert time.perf_counter() - t0 < 240
