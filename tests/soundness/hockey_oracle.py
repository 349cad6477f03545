"""Hockey-stick divergences of oscillating densities in mpmath at 40 digits (issue 43, item 1).

The comb e^{-|x|} (1 + A cos(w x)) / Z, Z = 2 (1 + A / (1 + w^2)), A < 1, whose honest log-Lipschitz
constant is L = 1 + A w / sqrt(1 - A^2) (the sup of |d/dx log(1 + A cos wx)| is A w / sqrt(1 - A^2)).

H_{e^eps}(p(. - u) || p) = int (p(x - u) - e^eps p(x))_+ dx is integrated from its definition: on
each of the pieces (-inf, 0], [0, u], [u, inf) (u > 0; the comb is symmetric, H(-u) = H(u)) the
sign changes of log p(x - u) - log p(x) - eps are found on a grid of 256 points per period and
refined by bisection in mpmath, and the positive part is integrated between them (Gauss-Legendre
on eighths of a period). Beyond [0, u] the integrand is e^{-|x|} times a periodic function, so
each tail is one period's integral summed as a geometric series (exact).

``PYTHONPATH=tests/soundness python tests/soundness/hockey_oracle.py`` regenerates
tests/data/snd_hockey_oscillating_truth.json (about a CPU-minute).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

DPS = 40
TRUTH_FILE = Path(__file__).resolve().parent.parent / "data" / "snd_hockey_oscillating_truth.json"
SEED = 4343


def comb(A: float, w: float):
    """(numpy log-density, honest L) of the comb."""
    lz = math.log(2.0 * (1.0 + A / (1.0 + w * w)))

    def lp(x):
        x = np.asarray(x, dtype=np.float64)
        return -np.abs(x) + np.log1p(A * np.cos(w * x)) - lz
    return lp, 1.0 + A * w / math.sqrt(1.0 - A * A)


def hockey(A: float, w: float, eps: float, u: float) -> mp.mpf:
    """H_{e^eps}(p(. - u) || p) of the comb at 40 digits."""
    mp.mp.dps = DPS
    a, W, E, U = mp.mpf(A), mp.mpf(w), mp.mpf(eps), abs(mp.mpf(u))
    if U == 0:
        return mp.mpf(0)
    Z = 2 * (1 + a / (1 + W * W))
    P = 2 * mp.pi / W

    def p(x):
        return mp.exp(-abs(x)) * (1 + a * mp.cos(W * x)) / Z

    def d(x):   # log p(x - u) - log p(x) - eps
        return (-abs(x - U) + abs(x)) + mp.log1p(a * mp.cos(W * (x - U))) - mp.log1p(a * mp.cos(W * x)) - E

    def g(x):
        return p(x - U) - mp.exp(E) * p(x)

    def piece(p0, p1):
        n = max(2, int(mp.ceil(256 * (p1 - p0) / P)))
        xs = [p0 + (p1 - p0) * i / n for i in range(n + 1)]
        ds = [d(x) for x in xs]
        cuts = [p0]
        for i in range(n):
            if (ds[i] > 0) != (ds[i + 1] > 0):
                lo, hi = xs[i], xs[i + 1]
                for _ in range(150):   # bisection to 40 digits
                    mid = (lo + hi) / 2
                    if (d(mid) > 0) == (ds[i] > 0):
                        lo = mid
                    else:
                        hi = mid
                cuts.append((lo + hi) / 2)
        cuts.append(p1)
        tot = mp.mpf(0)
        for c0, c1 in zip(cuts[:-1], cuts[1:]):
            if c1 <= c0 or d((c0 + c1) / 2) <= 0:
                continue
            k = max(1, int(mp.ceil(8 * (c1 - c0) / P)))
            tot += mp.fsum(mp.quad(g, [c0 + (c1 - c0) * i / k, c0 + (c1 - c0) * (i + 1) / k], method="gauss-legendre")
                           for i in range(k))
        return tot
    geo = 1 / (1 - mp.exp(-P))
    return piece(mp.mpf(0), U) + (piece(U, U + P) + piece(-P, mp.mpf(0))) * geo


def cases() -> list[dict]:
    """The issue's hockey value (A = 0.9, w = 5, eps = 1, u = 1) and a randomized grid."""
    out = [dict(A=0.9, w=5.0, eps=1.0, u=1.0)]
    rng = np.random.default_rng(SEED)
    for _ in range(31):
        A, w = float(rng.uniform(0.2, 0.95)), float(rng.uniform(1.0, 20.0))
        u = float(10 ** rng.uniform(-2, 0.7) * rng.choice([-1.0, 1.0]))
        # eps a fraction of the largest privacy loss L |u| (beyond it H = 0)
        eps = float(rng.uniform(0.02, 0.9) * comb(A, w)[1] * abs(u))
        out.append(dict(A=A, w=w, eps=eps, u=u))
    return out


def key(c: dict) -> str:
    return json.dumps(c, sort_keys=True)


def main() -> None:
    out = {}
    for c in cases():
        h = hockey(c["A"], c["w"], c["eps"], c["u"])
        out[key(c)] = mp.nstr(h, 35)
        print(c, mp.nstr(h, 15), file=sys.stderr, flush=True)
    TRUTH_FILE.write_text(json.dumps({"dps": DPS, "seed": SEED, "truth": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
