"""Partially private data (issue 14): the exact WEM sampler on a finite support and the K-norm
sampler, against the numpy/scipy way a user would write them."""
from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp

import puffer.partial as P
from puffer.partial import distributions as D

TITLE = "Partially private data (issue 14): WEM and K-norm samplers"


def _best(fn, repeat=5):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def _np_knorm(g, norm, d, s, n):
    if norm == 1:
        return g.laplace(0.0, s, (n, d))
    if norm == 2:
        x = g.standard_normal((n, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        x *= g.gamma(d, s, n)[:, None]
        return x
    u = g.uniform(-1.0, 1.0, (n, d))
    u *= g.gamma(d + 1, s, n)[:, None]
    return u


def run(ctx):
    K = 10_000
    n = 1_000_000 if ctx.quick else 10_000_000
    sup = np.arange(K, dtype=np.float64)
    m = P.WassersteinExponential(0.05, delta_z=1.0, support=sup, loss="abs")
    g = np.random.default_rng(1)
    t_p2 = _best(lambda: m.release(4321.0, size=n, rng=1, threads=2))
    t_p1 = _best(lambda: m.release(4321.0, size=n, rng=1, threads=1))

    def np_way():
        lw = -np.abs(sup - 4321.0) / m.scale
        p = np.exp(lw - logsumexp(lw))
        return sup[g.choice(K, size=n, p=p)]
    t_np = _best(np_way)
    rows = [["puffer WEM (exact inverse CDF, Philox), 2 threads", f"{n / t_p2 / 1e6:.1f}", f"{t_np / t_p2:.1f}x"],
            ["puffer WEM, 1 thread", f"{n / t_p1 / 1e6:.1f}", f"{t_np / t_p1:.1f}x"],
            ["numpy Generator.choice(K, p=softmax) + support lookup", f"{n / t_np / 1e6:.1f}", "1.0x"]]
    wem = {"title": f"WEM on a {K}-point finite support, {n:.0e} draws per call (M samples/s; target >= 1)",
           "columns": ["sampler", "M samples/s", "vs numpy"], "rows": rows,
           "notes": "Each call includes building the log-weights and the cumulative table. puffer draws are "
                    "bitwise identical for any thread count."}

    d = 100
    nk = 100_000 if ctx.quick else 1_000_000
    out = np.empty((nk, d))
    rows2 = []
    for norm in (2, 1, np.inf):
        t2 = _best(lambda norm=norm: D.knorm_sample(norm, d, 1.0, nk, rng=1, out=out, threads=2), repeat=3)
        t1 = _best(lambda norm=norm: D.knorm_sample(norm, d, 1.0, nk, rng=1, out=out, threads=1), repeat=3)
        tn = _best(lambda norm=norm: _np_knorm(g, norm, d, 1.0, nk), repeat=3)
        rows2.append([f"l{norm:g}", f"{nk / t2 / 1e3:.0f}", f"{nk / t1 / 1e3:.0f}", f"{nk / tn / 1e3:.0f}",
                      f"{tn / t2:.1f}x"])
    kn = {"title": f"K-norm noise in d = {d}, {nk:.0e} vectors (k samples/s; target >= 100)",
          "columns": ["ball", "puffer 2 threads", "puffer 1 thread", "numpy way, 1 thread", "speed-up (2 thr)"],
          "rows": rows2,
          "notes": "numpy way: l2 = Gaussian direction / norm x Generator.gamma(d); l1 = Generator.laplace; "
                   "l_inf = uniform cube x Generator.gamma(d + 1). puffer: exact polar sampler in C++ "
                   "(ziggurat normals, Marsaglia-Tsang Gamma), per-vector Philox sub-streams."}

    J, R = 67, 48
    mech = P.LatticeWEM(1.0, delta_z=2.0, base="prior")
    xc = np.tile(np.arange(1, J + 1) * 10, (R, 1))
    xd = xc // 10
    s = xc.sum(1)
    steps = 50_000
    conc = np.full((R, J), 5.0)
    t_mh = _best(lambda: mech.release(xc, xd, s, concentration=conc, steps=steps, rng=1, threads=2), repeat=3)
    mh = {"title": "Case-study lattice WEM (MCMC), J = 67, 48 chains", "columns": ["base", "M steps/s (2 threads)"],
          "rows": [["prior congenial (Dirichlet-multinomial)", f"{R * steps / t_mh / 1e6:.1f}"]]}
    return [wem, kn, mh]
