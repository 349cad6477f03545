"""Oscillating densities with an honest log-Lipschitz constant, and their Renyi shift divergences
in mpmath at 40 digits (issue 29, item 1).

Three shapes on a Laplace envelope of scale s (A < 1):

* comb: e^{-|x|/s} (1 + A cos(w x + phi)) / Z, Z = 2 s (1 + A cos(phi) / (1 + (w s)^2));
* sine: e^{-|x|/s} (1 + A sin(w x)) / (2 s) (not symmetric);
* expcos: exp(-|x|/s + A cos(w x)) / Z, Z = 2 s (I_0(A) + 2 sum_n I_n(A) / (1 + (n w s)^2)).

|d/dx log p| <= 1/s + A w / sqrt(1 - A^2) for the first two (the sup of A w sin t / (1 + A cos t))
and 1/s + A w for the third: these are the declared L. D_alpha(p(. - v) || p) =
log(int p(x - v)^alpha p(x)^(1 - alpha) dx) / (alpha - 1) is integrated from its definition with
Gauss-Legendre on pieces an eighth of a period long between the kinks 0 and v; beyond them the
integrand is e^{-|x|/s} times a periodic function, so each tail is one period's integral summed
as a geometric series (exact).

``PYTHONPATH=tests python tests/soundness/oscillating_oracle.py`` regenerates
tests/data/snd_oscillating_truth.json (a few CPU-minutes).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

DPS = 40
TRUTH_FILE = Path(__file__).resolve().parent.parent / "data" / "snd_oscillating_truth.json"
SEED = 2929


def shape(kind: str, s: float, A: float, w: float, phi: float = 0.0):
    """(numpy log-density, mpmath log-density, honest L, symmetric) of one shape."""
    if kind == "comb":
        lz = float(mp.log(2 * s * (1 + A * mp.cos(phi) / (1 + (w * s) ** 2))))

        def lp(x):
            x = np.asarray(x, dtype=np.float64)
            return -np.abs(x) / s + np.log1p(A * np.cos(w * x + phi)) - lz

        lz_mp = mp.log(2 * s * (1 + A * mp.cos(phi) / (1 + (w * s) ** 2)))

        def mlp(x):
            return -abs(x) / s + mp.log1p(A * mp.cos(w * x + phi)) - lz_mp
        return lp, mlp, 1 / s + A * w / math.sqrt(1 - A * A), phi == 0.0
    if kind == "sine":
        lz = math.log(2 * s)

        def lp(x):
            x = np.asarray(x, dtype=np.float64)
            return -np.abs(x) / s + np.log1p(A * np.sin(w * x)) - lz

        def mlp(x):
            return -abs(x) / s + mp.log1p(A * mp.sin(w * x)) - mp.log(2 * s)
        return lp, mlp, 1 / s + A * w / math.sqrt(1 - A * A), False
    Z = 2 * s * (mp.besseli(0, A) + 2 * mp.nsum(lambda n: mp.besseli(n, A) / (1 + (n * w * s) ** 2), [1, mp.inf]))
    lz = float(mp.log(Z))

    def lp(x):
        x = np.asarray(x, dtype=np.float64)
        return -np.abs(x) / s + A * np.cos(w * x) - lz

    lz_mp = mp.log(Z)

    def mlp(x):
        return -abs(x) / s + A * mp.cos(w * x) - lz_mp
    return lp, mlp, 1 / s + A * w, True


def divergence(mlp, s: float, w: float, alpha: float, v: float) -> mp.mpf:
    mp.mp.dps = DPS
    a, V = mp.mpf(alpha), mp.mpf(v)
    P = 2 * mp.pi / w
    lo, hi = min(mp.mpf(0), V), max(mp.mpf(0), V)

    def f(x):
        return mp.exp(a * mlp(x - V) + (1 - a) * mlp(x))

    def quad(p0, p1):   # Gauss-Legendre on eighths of a period
        n = max(1, int(mp.ceil(8 * (p1 - p0) / P)))
        return mp.fsum(mp.quad(f, [p0 + (p1 - p0) * i / n, p0 + (p1 - p0) * (i + 1) / n], method="gauss-legendre")
                       for i in range(n))
    # beyond [lo, hi] both |x| and |x - v| are linear, so f(x +- P) = e^{-P/s} f(x) there: each
    # tail is one period's integral over (1 - e^{-P/s}) (a geometric series)
    geo = 1 / (1 - mp.exp(-P / s))
    J = (quad(lo, hi) if hi > lo else 0) + (quad(hi, hi + P) + quad(lo - P, lo)) * geo
    return mp.log(J) / (a - 1)


def cases() -> list[dict]:
    """The issue's comb (alpha = 100, v = 0.05) and a randomized grid of the three shapes."""
    out = [dict(kind="comb", s=1.0, A=0.9, w=20.0, phi=0.0, alpha=100.0, v=0.05),
           dict(kind="expcos", s=1.0, A=1.0, w=8.0, phi=0.0, alpha=100.0, v=0.05),
           dict(kind="sine", s=1.0, A=0.9, w=20.0, phi=0.0, alpha=100.0, v=0.05)]
    rng = np.random.default_rng(SEED)
    for i in range(9):
        kind = ("comb", "sine", "expcos")[i % 3]
        out.append(dict(kind=kind, s=float(rng.uniform(0.5, 2.0)), A=float(rng.uniform(0.3, 0.95)),
                        w=float(rng.uniform(2.0, 25.0)),
                        phi=float(rng.uniform(0, math.pi)) if kind == "comb" and i > 2 else 0.0,
                        alpha=float(rng.choice([1.01, 2.0, 10.0, 100.0])),
                        v=float(10 ** rng.uniform(-2, 0)) * (1 if kind != "sine" else float(rng.choice([-1, 1])))))
    return out


def key(c: dict) -> str:
    return json.dumps(c, sort_keys=True)


def main() -> None:
    out = {}
    for c in cases():
        _, mlp, _, _ = shape(c["kind"], c["s"], c["A"], c["w"], c["phi"])
        d = divergence(mlp, c["s"], c["w"], c["alpha"], c["v"])
        out[key(c)] = mp.nstr(d, 35)
        print(c, mp.nstr(d, 15), file=sys.stderr, flush=True)
    TRUTH_FILE.write_text(json.dumps({"dps": DPS, "seed": SEED, "truth": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
