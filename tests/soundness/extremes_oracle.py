"""mpmath truths for the Renyi shift divergences at extreme standardized shifts (issue 29, items 2-4).

D_alpha(p(. - u) || p) for u from 1e-300 to 1e300, at 32 significant digits (to 1e-22 relative):

* Gaussian alpha u^2 / 2 and Laplace (Pierquin et al. 2024, Cor 3.1) in closed form, the
  latter at enough digits to survive its cancellation at tiny u;
* u <= 1: the folded form J - 1 = int_0^inf 4 e^m sinh(alpha d) sinh((alpha - 1) d) dy, with m
  and d written without cancellation (Student: d = (k/4) log1p(4 y c / (nu + (y - c)^2));
  logistic: d = log1p(2 sinh(y/2) sinh(c/2) / cosh((y - c)/2)); generalized Gaussian through
  (1 + x)^b -+ (1 - x)^b = (1 - x^2)^(b/2) {2 cosh, 2 sinh}(b atanh x)) -- for tiny u the
  definition's J - 1 ~ alpha (alpha - 1) u^2 / 2 would need 600 digits;
* u > 1: the definition J = int exp(alpha h(t) + (1 - alpha) h(t + u)) dt in t = x - u (the
  peak sits at t = O(1), far below the resolution of x ~ u), with the large part of
  (1 - alpha) h(t + u) taken out exactly (logistic: (alpha - 1) u; generalized Gaussian:
  (alpha - 1) u^b, the rest as u^b expm1(b log1p(t/u))).

Both forms are checked against each other where they overlap (``python extremes_oracle.py``
asserts it), and Cauchy at alpha = 2 against the exact log(1 + u^2/2). Pieces are split at the
peak of the log-integrand and at peak +- w 2^k until it has dropped by 64 (relative e^-64).

Run ``PYTHONPATH=tests python tests/soundness/extremes_oracle.py`` to regenerate
tests/data/snd_extremes_truth.json (about ten CPU-minutes).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

DPS = 32
TRUTH_FILE = Path(__file__).resolve().parent.parent / "data" / "snd_extremes_truth.json"
SEED = 29


# --- families: (kind, shape) --------------------------------------------------------------------
def log_z(kind: str, sh: dict) -> mp.mpf:
    if kind == "t":
        k, nu = mp.mpf(sh["k"]), mp.mpf(sh["nu"])
        return mp.loggamma(k / 2) - mp.loggamma((k - 1) / 2) - mp.log(nu * mp.pi) / 2
    if kind == "logistic":
        return -mp.log(4)
    b = mp.mpf(sh["beta"])
    return -mp.log(2) - mp.loggamma(1 + 1 / b)


def _lsinh(x: mp.mpf) -> mp.mpf:
    """log sinh(x), x > 0, without exponentials of huge arguments (mpmath would compute log 2 to
    as many digits as x has)."""
    if x > 1e4:
        return x - mp.log(2)
    return mp.log(mp.sinh(x))


def _exp_rel(v: mp.mpf) -> mp.mpf:
    """exp(v) for v <= 0, 0 below e^-10000 (far below every tolerance)."""
    return mp.exp(v) if v > -1e4 else mp.mpf(0)


def _md_folded(kind: str, sh: dict, y: mp.mpf, c: mp.mpf) -> tuple[mp.mpf, mp.mpf]:
    """m(y), d(y) of the folded form, free of cancellation."""
    if kind == "t":
        k, nu = mp.mpf(sh["k"]), mp.mpf(sh["nu"])
        m = -k / 4 * (mp.log1p((y - c) ** 2 / nu) + mp.log1p((y + c) ** 2 / nu))
        d = k / 4 * mp.log1p(4 * y * c / (nu + (y - c) ** 2))
        return m, d
    if kind == "logistic":
        m = -(mp.log(mp.cosh((y + c) / 2)) + mp.log(mp.cosh((y - c) / 2)))
        d = mp.log1p(2 * mp.sinh(y / 2) * mp.sinh(c / 2) / mp.cosh((y - c) / 2))
        return m, d
    b = mp.mpf(sh["beta"])
    big, small = (y, c) if y >= c else (c, y)
    x = small / big
    base = big ** b * (1 - x * x) ** (b / 2)
    return -base * mp.cosh(b * mp.atanh(x)), base * mp.sinh(b * mp.atanh(x))


def _h(kind: str, sh: dict, x: mp.mpf) -> mp.mpf:
    if kind == "t":
        return -mp.mpf(sh["k"]) / 2 * mp.log1p(x * x / sh["nu"])
    if kind == "logistic":
        return -2 * mp.log(mp.cosh(x / 2))
    return -mp.power(abs(x), sh["beta"])


def _integrate(ell, guess: float, scale: float, lo, kinks: list, hi=mp.inf) -> mp.mpf:
    """log of int_lo^hi exp(ell), split at the peak and geometrically around it, to 1e-22."""
    # peak: scan, then golden section in mpmath
    xs = [guess] + [guess + s * scale * 2.0 ** j for j in range(-30, 31, 2) for s in (-1, 1)] + list(kinks)
    xs = [mp.mpf(x) for x in xs if (lo == -mp.inf or x > lo) and (hi == mp.inf or x < hi)]
    vals = [ell(x) for x in xs]
    j = max(range(len(xs)), key=lambda i: vals[i])
    X, M = xs[j], vals[j]
    srt = sorted(xs)
    i = srt.index(X)
    a = srt[i - 1] if i > 0 else (lo if lo != -mp.inf else X - scale)
    b = srt[i + 1] if i + 1 < len(srt) else (hi if hi != mp.inf else X + scale)
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(200):
        if b - a <= mp.mpf(10) ** -30 * max(abs(a), abs(b), 1):
            break
        c1, c2 = b - g * (b - a), a + g * (b - a)
        if ell(c1) >= ell(c2):
            b = c2
        else:
            a = c1
    Xg = (a + b) / 2
    if ell(Xg) > M:
        X, M = Xg, ell(Xg)

    def width(direction):
        w = mp.mpf(max(abs(X), 1)) * mp.mpf(2) ** -100
        while w < mp.mpf(10) ** 300:
            x = X + direction * w
            if (lo != -mp.inf and x <= lo) or (hi != mp.inf and x >= hi) or ell(x) < M - 1:
                return w
            w *= 2
        return w

    pts = {X} | {mp.mpf(k) for k in kinks if (lo == -mp.inf or k > lo) and (hi == mp.inf or k < hi)}
    for direction in (-1, 1):
        s = width(direction)
        for _ in range(3000):
            x = X + direction * s
            if (lo != -mp.inf and x <= lo) or (hi != mp.inf and x >= hi):
                break
            pts.add(x)
            if not ell(x) > M - 64:
                break
            s *= 2
    pts = sorted(pts)
    pieces = [lo] + pts + [hi]
    total = mp.mpf(0)
    err = mp.mpf(0)
    for p, q in zip(pieces[:-1], pieces[1:]):
        if not q > p:
            continue
        if q == mp.inf or p == -mp.inf:
            # an infinite tail: its first stretch as it is, the rest in s = log(distance), where
            # a power-law tail (Student k = 1.05) decays exponentially
            a, sgn = (p, 1) if q == mp.inf else (q, -1)
            r0 = max(abs(a - X), mp.mpf(1))
            v, e = mp.quad(lambda x: _exp_rel(ell(x) - M), sorted([a, a + sgn * r0]), error=True, maxdegree=10)
            v2, e2 = mp.quad(lambda t: _exp_rel(ell(a + sgn * mp.exp(t)) - M + t) if t < 1e4 else mp.mpf(0),
                             [mp.log(r0), mp.inf], error=True, maxdegree=10)
            v, e = v + v2, e + e2
        else:
            v, e = mp.quad(lambda x: _exp_rel(ell(x) - M), [p, q], error=True, maxdegree=10)
        total += v
        err += e
    if not err <= mp.mpf(10) ** -22 * total:
        raise RuntimeError(f"oracle quadrature error {err} vs {total}")
    return M + mp.log(total)


def divergence(fam: str, sh: dict, alpha: float, u: float) -> mp.mpf:
    """D_alpha at 50 digits for the standardized family at shift u (alpha > 1)."""
    mp.mp.dps = DPS
    a, U = mp.mpf(alpha), mp.mpf(u)
    b1 = a - 1
    if fam == "gaussian":
        return a * U * U / 2
    if fam == "laplace":
        with mp.workdps(DPS + 2 * max(0, int(-math.log10(u))) + 20):
            J = a / (2 * a - 1) * mp.exp(b1 * U) + b1 / (2 * a - 1) * mp.exp(-a * U)
            return +(mp.log(J) / b1)
    kind = _kind(fam)
    lz = log_z(kind, sh)
    if u <= 1.0:
        c = U / 2

        def ell(y):
            m, d = _md_folded(kind, sh, y, c)
            if not d > 0:
                return -mp.inf
            return lz + m + mp.log(4) + _lsinh(a * d) + _lsinh(b1 * d)
        logJm1 = _integrate(ell, 1.0, 1.0, mp.mpf(0), [c] if kind == "gg" else [])
        return mp.log1p(mp.exp(logJm1)) / b1
    # u > 1: the definition in t = x - u, with the large part of (1 - alpha) h(t + u) taken out
    if kind == "t":
        const = lz

        def ell(t):
            return a * _h(kind, sh, t) + (1 - a) * _h(kind, sh, t + U)
    elif kind == "logistic":
        const = lz + b1 * (U - 2 * mp.log(2))

        def ell(t):
            s = t + U
            dev = t if s >= 0 else -t - 2 * U  # |t + u| - u, exactly
            return a * _h(kind, sh, t) + b1 * (dev + 2 * mp.log1p(mp.exp(-abs(s))))
    else:
        bb = mp.mpf(sh["beta"])
        ub = U ** bb
        const = lz + b1 * ub

        def ell(t):
            r = t / U
            if r > -1:
                var = ub * mp.expm1(bb * mp.log1p(r))
            else:
                var = ub * (mp.power(-1 - r, bb) - 1)
            return a * _h(kind, sh, t) + b1 * var
    kinks = [0.0, -u] if kind == "gg" else []
    logJ = const + _integrate(ell, 0.0, 1.0, -mp.inf, kinks)
    return logJ / b1


# --- the grid -------------------------------------------------------------------------------------
ALPHAS = [1.0 + 1e-9, 1.01, 2.0, 100.0, 1e4]
FAMILIES = [
    ("gaussian", {}), ("laplace", {}), ("cauchy", {"k": 2.0, "nu": 1.0}),
    ("gen_cauchy", {"k": 1.05, "nu": 1.0}), ("gen_cauchy", {"k": 6.0, "nu": 1.0}),
    ("student", {"k": 1.5, "nu": 0.5}), ("student", {"k": 4.0, "nu": 3.0}),
    ("student", {"k": 1e6 + 1, "nu": 1e6}),
    ("gg", {"beta": 1.0001}), ("gg", {"beta": 1.5}), ("gg", {"beta": 3.0}),
    ("logistic", {}),
]
# fixed shifts (the ends of the range and the cases) plus random ones, per family
FIXED_U = [1e-300, 1e-160, 1e300]
N_RANDOM = 4


def cases() -> list[tuple[str, dict, float, float]]:
    rng = np.random.default_rng(SEED)
    out = []
    for fam, sh in FAMILIES:
        for u in FIXED_U:
            for alpha in (ALPHAS[0], ALPHAS[2]):
                out.append((fam, sh, alpha, u))
        for _ in range(N_RANDOM):
            u = float(10.0 ** rng.uniform(-300, 300))
            alpha = ALPHAS[int(rng.integers(len(ALPHAS)))]
            out.append((fam, sh, alpha, u))
    return out


def key(fam: str, sh: dict, alpha: float, u: float) -> str:
    return f"{fam}|{json.dumps(sh, sort_keys=True)}|{alpha!r}|{u!r}"


def _kind(fam: str) -> str:
    return {"cauchy": "t", "gen_cauchy": "t", "student": "t"}.get(fam, fam)


def _self_check() -> None:
    """The folded and the t forms agree where both apply; Cauchy alpha = 2 is log(1 + u^2/2)."""
    for fam, sh in (FAMILIES[4], FAMILIES[6], FAMILIES[9], FAMILIES[11]):
        for alpha in (1.01, 3.0):
            u = 1.0
            kind = _kind(fam)
            d1 = divergence(fam, sh, alpha, u)
            # the t form at the same u (bypassing the switch)
            d2 = _t_form(fam, sh, alpha, u)
            if abs(d1 - d2) > mp.mpf(10) ** -20 * abs(d1):
                raise RuntimeError(f"{fam} {sh} alpha={alpha}: folded {d1} vs t form {d2} ({kind})")
    for u in (1e-40, 0.5, 3.0, 1e20, 1e300):
        d = divergence("cauchy", {"k": 2.0, "nu": 1.0}, 2.0, u)
        exact = mp.log1p(mp.mpf(u) ** 2 / 2)
        if abs(d - exact) > mp.mpf(10) ** -20 * exact:
            raise RuntimeError(f"cauchy alpha=2 u={u}: {d} vs exact {exact}")


def _t_form(fam: str, sh: dict, alpha: float, u: float) -> mp.mpf:
    """The definition in t = x - u, without taking anything out (for moderate u)."""
    kind = _kind(fam)
    mp.mp.dps = DPS
    a, U = mp.mpf(alpha), mp.mpf(u)
    lz = log_z(kind, sh)

    def ell(t):
        return a * _h(kind, sh, t) + (1 - a) * _h(kind, sh, t + U)
    kinks = [0.0, -u] if kind == "gg" else []
    return (lz + _integrate(ell, 0.0, 1.0, -mp.inf, kinks)) / (a - 1)


def main() -> None:
    _self_check()
    out = {}
    for fam, sh, alpha, u in cases():
        d = divergence(fam, sh, alpha, u)
        out[key(fam, sh, alpha, u)] = mp.nstr(d, 40)
        print(fam, sh, alpha, u, mp.nstr(d, 15), file=sys.stderr, flush=True)
    TRUTH_FILE.write_text(json.dumps({"dps": DPS, "seed": SEED, "truth": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
