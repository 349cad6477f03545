"""Independent mpmath references for the Renyi shift divergences (tests/test_renyi.py).

D_alpha(p(. - u) || p) = log( int p(x - u)^alpha p(x)^(1 - alpha) dx ) / (alpha - 1) is
integrated at 50 significant digits directly from its definition (not from the folded,
cancellation-free form the C++ kernel uses), with mpmath's tanh-sinh on pieces split at the
kinks (0 and u), at the peak of the log-integrand and at peak +- w 2^k, where w is the
distance at which the log-integrand has dropped by 1, until it has dropped by 140 (e^-140
< 1e-60 relative); then the two infinite tails. Cauchy uses the exact Legendre form
(1/(alpha-1)) log P_{alpha-1}(1 + u^2/2) (Verdu 2023; Pierquin et al. 2024) as a second oracle.

Run ``python tests/renyi_mpmath_refs.py`` to regenerate tests/data/renyi_mpmath_refs.json
(about two minutes); the test suite loads the file and recomputes a few entries live.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

DPS = 50
ALPHAS = [1.01, 1.5, 2.0, 10.0, 100.0, 1e4]
SHIFTS = [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3]
SCALES = [1.0, 0.5, 3.0]  # cycled over the shifts so that every scale is covered

# name -> (standardized log-density h (mp), logZ (mp), kinks)
FAMILIES = {
    "student_t3": dict(kind="t", k=4.0, nu=3.0),
    "gen_cauchy3": dict(kind="t", k=3.0, nu=1.0),
    "cauchy": dict(kind="t", k=2.0, nu=1.0),
    "logistic": dict(kind="logistic"),
    "gen_gauss1.5": dict(kind="gg", beta=1.5),
    "gen_gauss3": dict(kind="gg", beta=3.0),
}


def std_u(v: float, scale: float) -> float:
    """The standardized shift exactly as the facade computes it (float division)."""
    return abs(v) / scale


def _h_float(spec, x):
    if spec["kind"] == "t":
        return -0.5 * spec["k"] * np.log1p(x * x / spec["nu"])
    if spec["kind"] == "logistic":
        a = np.abs(x) / 2
        return -2.0 * (a + np.log1p(np.exp(-2 * a)) - math.log(2))
    return -np.abs(x) ** spec["beta"]


def _h_mp(spec, x):
    if spec["kind"] == "t":
        return -mp.mpf(spec["k"]) / 2 * mp.log(1 + x * x / spec["nu"])
    if spec["kind"] == "logistic":
        return -2 * mp.log(mp.cosh(x / 2))
    return -mp.power(abs(x), spec["beta"])


def _logZ_mp(spec):
    if spec["kind"] == "t":
        k, nu = mp.mpf(spec["k"]), mp.mpf(spec["nu"])
        return mp.loggamma(k / 2) - mp.loggamma((k - 1) / 2) - mp.log(nu * mp.pi) / 2
    if spec["kind"] == "logistic":
        return -mp.log(4)
    b = mp.mpf(spec["beta"])
    return -mp.log(2) - mp.loggamma(1 + 1 / b)


def divergence(spec, alpha: float, u: float, rel_err: float = 1e-30) -> mp.mpf:
    """D_alpha at 50 digits from the definition (see module docstring); mpmath's error estimate
    must be below ``rel_err`` relative (heavy tails may need a looser one)."""
    mp.mp.dps = DPS
    a = mp.mpf(alpha)
    U = mp.mpf(u)
    logZ = _logZ_mp(spec)

    def ell_f(x):
        return alpha * _h_float(spec, x - u) + (1 - alpha) * _h_float(spec, x)

    # locate the peak of the log-integrand in floating point
    xs = np.concatenate([-np.geomspace(1e-8, 1e9, 4000), [0.0], np.geomspace(1e-8, 1e9, 4000),
                         np.linspace(-2 * u - 10, 2 * u + 10, 4001), [u]])
    with np.errstate(all="ignore"):
        vals = ell_f(xs)
    vals[~np.isfinite(vals)] = -np.inf
    j = int(np.argmax(vals))
    xp, lp = float(xs[j]), float(vals[j])

    def drop_at(direction):
        step = max(abs(xp), 1.0) * 1e-12
        while True:
            with np.errstate(all="ignore"):
                v = ell_f(np.array([xp + direction * step]))[0]
            if not (v > lp - 1.0) or step > 1e12:
                return step
            step *= 2

    def ell_mp(x):
        return a * _h_mp(spec, x - U) + (1 - a) * _h_mp(spec, x)

    # Refine the peak in mpmath (in float the log-integrand can be ~1e21 with rounding noise
    # ~1e5, which hides a peak of relative width 1e-11): Newton on the derivative, kept only
    # if it increases the log-integrand.
    X = mp.mpf(xp)
    try:
        X2 = mp.findroot(lambda x: mp.diff(ell_mp, x), X, tol=mp.mpf(10) ** -40, maxsteps=200)
        if mp.im(X2) == 0 and ell_mp(mp.re(X2)) > ell_mp(X):
            X = mp.re(X2)
    except (ValueError, ZeroDivisionError):
        pass
    M = ell_mp(X)
    pts = {mp.mpf(0), U, X}
    for direction in (-1, 1):
        w = mp.mpf(drop_at(direction))
        try:
            curv = -mp.diff(ell_mp, X, 2)
            if curv > 0:
                w = min(w, 1 / mp.sqrt(curv))
        except (ValueError, ZeroDivisionError):
            pass
        s = w
        for _ in range(600):
            x = X + direction * s
            pts.add(x)
            if not (ell_mp(x) > M - 140) or abs(x) > mp.mpf(10) ** 200:
                break
            s *= 2
    pts = sorted(pts)

    def f(x):
        return mp.exp(ell_mp(x) - M)

    I, err = mp.quad(f, [-mp.inf] + pts + [mp.inf], error=True, maxdegree=10)
    if not err < mp.mpf(rel_err) * I:
        raise RuntimeError(f"mpmath quad error {err} for {spec} alpha={alpha} u={u}")
    logI = mp.log(I) + M + logZ
    return logI / (a - 1)


def cauchy_legendre(alpha: float, u: float) -> mp.mpf:
    mp.mp.dps = DPS
    a = mp.mpf(alpha)
    z = 1 + mp.mpf(u) ** 2 / 2
    return mp.log(mp.legenp(a - 1, 0, z, type=3)) / (a - 1)


def grid():
    """(alpha, v, scale) triples of the acceptance grid."""
    out = []
    for a in ALPHAS:
        for i, v in enumerate(SHIFTS):
            out.append((a, v, SCALES[i % len(SCALES)]))
    return out


def main(path: Path) -> None:
    refs = {}
    for name, spec in FAMILIES.items():
        rows = []
        for a, v, s in grid():
            u = std_u(v, s)
            d = divergence(spec, a, u)
            if name == "cauchy":
                d2 = cauchy_legendre(a, u)
                if abs(d - d2) > mp.mpf(10) ** -30 * max(abs(d2), 1):
                    raise RuntimeError(f"cauchy quadrature {d} vs Legendre {d2} at alpha={a}, u={u}")
            rows.append([a, v, s, mp.nstr(d, 40)])
            print(name, a, v, s, mp.nstr(d, 20), file=sys.stderr, flush=True)
        refs[name] = rows
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"dps": DPS, "families": refs}, indent=1))


if __name__ == "__main__":
    main(Path(__file__).resolve().parent / "data" / "renyi_mpmath_refs.json")
