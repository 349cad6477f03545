"""Issue 9 item 2: Custom densities declare their structure; undeclared structure is refused.

Truth values are 30-digit mpmath integrals of the definition D_a = log int p(x-u)^a p(x)^(1-a) / (a-1),
split at every feature of the density (independent of puffer's quadrature)."""
import math

import mpmath as mp
import numpy as np
import pytest

from puffer.errors import PufferError
from puffer.noise import Custom

W = 1e-3  # spike width


def spike_logpdf(x):
    # 0.7 Cauchy(0, 1) + 0.3 N(0, W^2): a heavy tail with a narrow spike
    x = np.asarray(x, dtype=np.float64)
    a = math.log(0.7) - np.log(math.pi * (1 + x * x))
    b = math.log(0.3) - 0.5 * (x / W) ** 2 - math.log(W * math.sqrt(2 * math.pi))
    return np.logaddexp(a, b)


def spike_mp(x):
    return 0.7 / (mp.pi * (1 + x * x)) + 0.3 * mp.exp(-(x / W) ** 2 / 2) / (W * mp.sqrt(2 * mp.pi))


def edge_logpdf(x):
    # a plateau on [-1, 1] with logistic edges of width W (steep edges), normalised below
    x = np.asarray(x, dtype=np.float64)
    return -np.logaddexp(0.0, (np.abs(x) - 1.0) / W) - math.log(2.0)


def edge_mp(x):
    return 1 / (1 + mp.exp((abs(x) - 1) / W)) / 2


def bimodal_logpdf(x):
    x = np.asarray(x, dtype=np.float64)
    s = 0.01
    c = -math.log(s * math.sqrt(2 * math.pi)) + math.log(0.5)
    return np.logaddexp(c - 0.5 * ((x - 3) / s) ** 2, c - 0.5 * ((x + 3) / s) ** 2)


def bimodal_mp(x):
    s = mp.mpf("0.01")
    return sum(mp.exp(-((x - m) / s) ** 2 / 2) for m in (3, -3)) / (2 * s * mp.sqrt(2 * mp.pi))


def truth(pdf, alpha, u, feats):
    mp.mp.dps = 30
    pts = sorted({mp.mpf(f) for f in feats} | {mp.mpf(f) + u for f in feats})
    fine = set(pts)
    for p in pts:
        for k in range(-4, 10):
            fine |= {p + W * 2**k, p - W * 2**k}
    fine = sorted(fine)

    def f(x):
        q = pdf(x)
        return pdf(x - u) ** alpha * q ** (1 - alpha) if q > 0 else mp.mpf(0)

    I = mp.quad(f, [-mp.inf] + fine + [mp.inf])
    return float(mp.log(I) / (alpha - 1))


# (logpdf, mp pdf, declared structure, features for the oracle, alpha, shift, symmetric)
CASES = {
    "spike": (spike_logpdf, spike_mp, dict(spikes=[(0.0, W)]), [0.0], 2.0, 1.0),
    "edges": (edge_logpdf, edge_mp, dict(breakpoints=[-1.0, 1.0], spikes=[(-1.0, W), (1.0, W)]), [-1.0, 1.0],
              2.0, 0.003),
    "bimodal": (bimodal_logpdf, bimodal_mp, dict(spikes=[(-3.0, 0.01), (3.0, 0.01)], modes=[-3.0, 3.0]),
                [-3.0, 3.0], 2.0, 0.01),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("symmetric", [False, True])
def test_declared_structure_gives_certified_values(name, symmetric):
    lp, pdf, decl, feats, alpha, u = CASES[name]
    c = Custom(lp, symmetric=symmetric, **decl)
    got = c.renyi_shift(alpha, u)
    ref = truth(pdf, alpha, u, feats)
    assert got >= ref, (got, ref)            # never an under-report
    assert got <= ref * (1 + 1e-6) + 1e-12   # and tight


@pytest.mark.parametrize("name", sorted(CASES))
def test_undeclared_structure_is_refused(name):
    # before: the spike mixture returned 0.300 where the truth is 5.44 -- silently
    lp, pdf, decl, feats, alpha, u = CASES[name]
    ref = truth(pdf, alpha, u, feats)
    try:
        c = Custom(lp)
        got = c.renyi_shift(alpha, u)
    except PufferError as e:
        assert any(w in str(e) for w in ("spikes=", "modes=", "breakpoints=")), str(e)
        return
    # accepted only if right (the probe grid happened to resolve it): still never below the truth
    assert got >= ref and got <= ref * (1 + 1e-6) + 1e-12, (got, ref)


def test_spike_case_from_the_issue_is_refused_or_right():
    c = None
    try:
        c = Custom(spike_logpdf)
        v = c.renyi_shift(2.0, 1.0)
    except PufferError:
        v = None
    if v is not None:
        assert v >= 5.44


def test_declarations_validated():
    g = lambda x: -0.5 * np.asarray(x) ** 2 - 0.5 * math.log(2 * math.pi)  # noqa: E731
    with pytest.raises(PufferError, match="spikes"):
        Custom(g, spikes=[(0.0, -1.0)])
    with pytest.raises(PufferError, match="spikes"):
        Custom(g, spikes=[1.0, 2.0, 3.0])
    with pytest.raises(PufferError, match="support"):
        Custom(g, support=(1.0, -1.0))
    with pytest.raises(PufferError, match="support"):
        Custom(g, support=(-1.0, 1.0))  # the Gaussian does not vanish outside [-1, 1]
    with pytest.raises(PufferError, match="modes"):
        Custom(g, modes=[math.nan])
    # a density with a declared compact support
    tri = lambda x: np.where(np.abs(x) < 1, np.log(np.maximum(1 - np.abs(x), 1e-300)), -np.inf)  # noqa: E731
    c = Custom(tri, support=(-1.0, 1.0), breakpoints=[0.0], symmetric=True)
    assert c.renyi_shift(2.0, 0.5) > 0
