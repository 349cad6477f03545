"""Foundation: cost of the value types and conversions users call in loops."""
from fractions import Fraction

import numpy as np

import puffer

TITLE = "Foundation: value types and RPP->PP conversion"


def run(ctx):
    rng = np.random.default_rng(0)
    n = 10_000 if not ctx.quick else 1000
    atoms = rng.integers(0, n // 10, n).astype(float)
    probs = rng.random(n)
    probs /= probs.sum()
    curve = puffer.RPPCurve.from_function(lambda a: a * 0.125)
    rows = [
        [f"DiscreteDist(n={n}, float, with merging)", f"{ctx.time(lambda: puffer.DiscreteDist(atoms, probs, normalize=True)) * 1e6:.1f}"],
        ["DiscreteDist(n=100, exact Fractions)", f"{ctx.time(lambda: puffer.DiscreteDist(range(100), [Fraction(1, 100)] * 100)) * 1e6:.1f}"],
        ["RPP(2, 0.5).to_pp(1e-5)", f"{ctx.time(lambda: puffer.RPP(2.0, 0.5).to_pp(1e-5)) * 1e6:.1f}"],
        ["RPPCurve(156 orders, from function).to_pp(1e-5)", f"{ctx.time(lambda: curve.to_pp(1e-5)) * 1e6:.1f}"],
    ]
    return [{"title": "Python-level costs", "columns": ["operation", "median µs"], "rows": rows}]
