"""Framework calibration: Delta_G of a 2-state Markov chain, T = 100, |Theta| = 1000, all pairs,
puffer (C++ laws + batch W_inf on all cores) against the straightforward numpy implementation
in bench/markov_numpy.py, which must agree."""
import os
import sys
import time

import numpy as np

import puffer

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import markov_numpy  # noqa: E402

TITLE = "Frameworks: Markov-chain Delta_G (issue 6)"


def _thetas(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.55, 0.95, n)   # P(stay in state 0)
    h = rng.uniform(0.55, 0.95, n)   # P(stay in state 1)
    return np.stack([np.stack([a, 1 - a], 1), np.stack([1 - h, h], 1)], 1)


def run(ctx):
    T, n = (100, 1000) if not ctx.quick else (50, 100)
    trans = _thetas(n)
    fw = puffer.models.markov_chain(trans, T)
    t0 = time.perf_counter()
    ours = fw.w_inf().value
    t_ours = time.perf_counter() - t0
    t_ours = min(t_ours, ctx.time(lambda: puffer.models.markov_chain(trans, T).w_inf(), repeat=3, number=1))
    n_np = n if not ctx.quick else 20
    sub = trans[:n_np] if ctx.quick else trans
    t0 = time.perf_counter()
    ref = markov_numpy.delta_g(sub, T)
    t_np = time.perf_counter() - t0
    if ctx.quick:
        ours_sub = puffer.models.markov_chain(sub, T).w_inf().value
        assert ours_sub == ref, (ours_sub, ref)
    else:
        assert ours == ref, (ours, ref)
    rows = [
        [f"puffer markov_chain(...).w_inf(), T={T}, |Theta|={n}, {os.cpu_count()} threads", f"{t_ours:.3f}", f"{ours:g}", ""],
        [f"numpy straightforward (bench/markov_numpy.py), |Theta|={n_np}", f"{t_np:.3f}", f"{ref:g}",
         f"{(t_np * n / n_np) / t_ours:.0f}x"],
    ]
    return [{"title": "Delta_G over all priors and secret pairs (values must agree)",
             "columns": ["implementation", "seconds", "Delta_G", "puffer speed-up"], "rows": rows,
             "notes": "Targets (issue 6): >= 50x the numpy implementation and <= 2 s on 2 cores."}]
