"""High-precision references for the privacy-profile and conversion tests (tests/profile/).

Run ``python tests/profile_mpmath_refs.py`` to regenerate ``tests/data/profile_mpmath_refs.json``
(about a minute). Independent of puffer: mpmath only.

* ``gaussian``: for each (eps, delta) of the grid, the standardized shift s* = Delta / sigma at which
  the analytic Gaussian profile Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle & Wang 2018,
  Thm 8) equals delta, at 50 digits: the exact optimum sigma* = Delta / s*.
* ``shift``: for Laplace, Student-t (nu = 3) and the hyperbolic secant density (the declared Custom
  of the tests), the largest standardized shift u* whose hockey-stick divergence
  int (p(x - u) - e^eps p(x))_+ dx equals delta, by mpmath quadrature over the exact event
  {p(x - u) > e^eps p(x)} (its ends found by bisection), 30 digits.
* ``conversion``: the optimal single-order Renyi -> (eps, delta) conversion (Asoodeh et al. 2021):
  eps* = log sup over two-point likelihood ratios T in {t2 < 1 < t1} with E T = 1 and
  E T^alpha <= e^{(alpha-1) rho} of t1 - delta / P(T = t1), by a scan and golden section at 40 digits
  (a lower bound on the exact value up to the search's resolution: the certified value must not be below it).
"""
from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

OUT = Path(__file__).resolve().parent / "data" / "profile_mpmath_refs.json"

EPS = ["0.01", "0.03", "0.1", "0.3", "1", "3", "10"]
DELTA = ["1e-12", "1e-9", "1e-6", "1e-3"]
SHIFT_CASES = [("0.1", "1e-6"), ("1", "1e-5"), ("5", "1e-9")]
CONVERSION_CASES = [("2", "0.5", "1e-5"), ("10", "0.3", "1e-6"), ("1.5", "2", "0.1"), ("32", "0.05", "1e-9"),
                    ("4", "1", "1e-3")]


def gaussian_delta(eps: mp.mpf, s: mp.mpf) -> mp.mpf:
    return mp.ncdf(s / 2 - eps / s) - mp.exp(eps) * mp.ncdf(-s / 2 - eps / s)


def gaussian_shift(eps: str, delta: str) -> str:
    mp.mp.dps = 50
    e, d = mp.mpf(eps), mp.mpf(delta)
    lo, hi = mp.mpf("1e-6"), mp.mpf(1)
    while gaussian_delta(e, hi) < d:
        hi *= 2
    for _ in range(400):   # bisection on the increasing delta(s)
        mid = (lo + hi) / 2
        if gaussian_delta(e, mid) < d:
            lo = mid
        else:
            hi = mid
    return mp.nstr((lo + hi) / 2, 45)


LOGPDF = {
    "laplace": lambda x: -abs(x) - mp.log(2),
    "student_t3": lambda x: (mp.loggamma(2) - mp.loggamma(mp.mpf(3) / 2) - mp.log(3 * mp.pi) / 2
                             - 2 * mp.log(1 + x * x / 3)),
    "sech": lambda x: -mp.log(2) - mp.log(mp.cosh(mp.pi * x / 2)),
}


def _bisect(pred, lo: mp.mpf, hi: mp.mpf, n: int = 200) -> mp.mpf:
    """The boundary in [lo, hi] where pred turns from False to True."""
    for _ in range(n):
        mid = (lo + hi) / 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def hockey(name: str, eps: mp.mpf, u: mp.mpf) -> mp.mpf:
    h = LOGPDF[name]
    c = u / 2
    L = lambda y: h(y - c) - h(y + c)   # noqa: E731  (the privacy loss, y centred between the laws)
    if name == "student_t3":
        ym = mp.sqrt(3 + c * c)         # L peaks there (Student-type: L rises then falls)
        if L(ym) <= eps:
            return mp.mpf(0)
        y1 = _bisect(lambda y: L(y) > eps, mp.mpf(0), ym)
        if eps == 0:            # L > 0 on all of y > 0
            pts = [y1, ym, mp.inf]
        else:
            hi = 2 * ym
            while L(hi) > eps:
                hi *= 2
            pts = [y1, ym, _bisect(lambda y: L(y) <= eps, ym, hi)]
    else:
        sup = u if name in ("laplace", "sech") else mp.inf   # both are log-Lipschitz: L < u (sech: pi/2 u)
        if name == "sech":
            sup = mp.pi / 2 * u
        if sup <= eps:
            return mp.mpf(0)
        hi = mp.mpf(1)
        while L(hi) <= eps:
            hi *= 2
        y1 = _bisect(lambda y: L(y) > eps, mp.mpf(0), hi)
        pts = [y1] + ([c] if name == "laplace" and c > y1 else []) + [mp.inf]
    f = lambda y: mp.exp(h(y - c)) - mp.exp(eps) * mp.exp(h(y + c))   # noqa: E731
    return mp.quad(f, pts)


def family_shift(name: str, eps: str, delta: str) -> str:
    mp.mp.dps = 30
    e, d = mp.mpf(eps), mp.mpf(delta)
    lo, hi = mp.mpf("1e-3"), mp.mpf(1)
    while hockey(name, e, hi) < d:
        lo, hi = hi, hi * 2
    for _ in range(70):   # to ~1e-21 relative: far below the 1e-9 the tests resolve
        mid = (lo + hi) / 2
        if hockey(name, e, mid) < d:
            lo = mid
        else:
            hi = mid
    return mp.nstr((lo + hi) / 2, 25)


def optimal_conversion(alpha: str, rho: str, delta: str) -> str:
    mp.mp.dps = 40
    a, r, d = mp.mpf(alpha), mp.mpf(rho), mp.mpf(delta)
    K = mp.exp((a - 1) * r)

    def t1_of(t2: mp.mpf) -> mp.mpf:
        def F(t1: mp.mpf) -> mp.mpf:
            q = (1 - t2) / (t1 - t2)
            return q * t1 ** a + (1 - q) * t2 ** a
        lo, hi = mp.mpf(1), mp.mpf(2)
        while F(hi) <= K:
            hi *= 2
        for _ in range(160):
            mid = (lo + hi) / 2
            if F(mid) <= K:
                lo = mid
            else:
                hi = mid
        return lo

    def gamma(v: mp.mpf) -> mp.mpf:   # v = log(1 - t2)
        t2 = 1 - mp.exp(v)
        if t2 < 0 or 1 - t2 <= d:
            return mp.mpf(0)
        t1 = t1_of(t2)
        return t1 * (1 - d / (1 - t2)) + d * t2 / (1 - t2)

    vs = [mp.log(d) + mp.mpf(k) / 8 for k in range(1, 8 * int(-mp.log(d)) + 1)]
    best = max(vs, key=gamma)
    lo, hi = best - mp.mpf(1) / 8, min(best + mp.mpf(1) / 8, mp.mpf(0))
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(120):
        c1, c2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if gamma(c1) >= gamma(c2):
            hi = c2
        else:
            lo = c1
    top = max(gamma((lo + hi) / 2), gamma(mp.mpf(0) - mp.mpf("1e-30")), t1_of(mp.mpf(0)) * (1 - d))
    return mp.nstr(mp.log(top), 30)


def main() -> None:
    out = {"gaussian": {f"{e}|{d}": gaussian_shift(e, d) for e in EPS for d in DELTA},
           "shift": {name: {f"{e}|{d}": family_shift(name, e, d) for e, d in SHIFT_CASES} for name in LOGPDF},
           "conversion": {f"{a}|{r}|{d}": optimal_conversion(a, r, d) for a, r, d in CONVERSION_CASES}}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
