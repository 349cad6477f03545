"""RDP curves in the common-domain setting: per order alpha, the edge maximum of the changed
releases' eps_i(alpha) (edge form of Guerra-Balboa et al. 2024 Thm IV.11 with adaptive RDP
composition, Mironov 2017 Prop 1). Checked against closed forms and the enumeration strategy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import puffer
from puffer import accounting as A

ALPHAS = (1.5, 2.0, 4.0, 8.0)


def gauss_rdp(s):
    """Gaussian mechanism with sensitivity 1, noise s: eps(alpha) = alpha / (2 s^2)."""
    return A.RDP(ALPHAS, tuple(a / (2 * s * s) for a in ALPHAS))


def test_partition_bounded_common_is_pairwise_max():
    sig = [1.0, 2.0, 3.0]
    p = A.Partition(lambda x: x, cells=["a", "b", "c"])
    acc = A.Accountant(A.Bounded(), notion="rdp")
    for c, s in zip("abc", sig):
        acc.add(gauss_rdp(s), selector=p[c])
    g = acc.total()
    assert g.alphas == ALPHAS
    for a, e in zip(g.alphas, g.eps):
        want = a / 2 * (1 / sig[0] ** 2 + 1 / sig[1] ** 2)          # the two largest
        assert want <= e <= want * (1 + 1e-12)
    assert "Mironov 2017, Prop 1" in acc.result().theorem
    eps = g.to_approx(1e-5).eps
    assert eps == pytest.approx(min(e + math.log(1e5) / (a - 1) for a, e in zip(g.alphas, g.eps)), rel=1e-12)


def test_sequential_and_parallel_unbounded():
    acc = A.Accountant(A.Unbounded(), notion="rdp")
    acc.add(gauss_rdp(1.0)).add(gauss_rdp(2.0))
    for a, e in zip(ALPHAS, acc.total().eps):
        assert e == pytest.approx(a / 2 * 1.25, rel=1e-12) and e >= a / 2 * 1.25
    par = A.Accountant(A.Unbounded(), notion="rdp")
    par.add(gauss_rdp(1.0), selector=A.RecordFilter(["a"])).add(gauss_rdp(2.0), selector=A.RecordFilter(["b"]))
    for a, e in zip(ALPHAS, par.total().eps):
        assert e == pytest.approx(a / 2, rel=1e-12)


def test_no_group_form_and_local_partition():
    with pytest.warns(A.DisconnectedClassWarning):
        acc = A.Accountant(A.Bounded(), domain=A.AllMultisets(), notion="rdp")
    acc.add(A.RDP(ALPHAS, (0.1,) * 4, granularity=A.Unbounded()))   # n = 2 on a replace edge
    assert acc.total() is A.NO_GUARANTEE
    p = A.Partition(lambda x: x, cells=["a", "b"])
    loc = A.Accountant(A.Bounded(), notion="rdp")
    loc.add(gauss_rdp(1.0), selector=p["a"], scope="local").add(gauss_rdp(1.0), selector=p["b"], scope="local")
    assert loc.total() is A.NO_GUARANTEE
    with pytest.raises(puffer.ParameterError):
        A.RDP(ALPHAS, (0.1,) * 4).group(2)
    with pytest.raises(puffer.ParameterError):
        A.RDP((2.0, 1.5), (0.1, 0.1))
    with pytest.raises(puffer.ParameterError):
        A.Accountant(A.Bounded(), notion="rdp").add(A.RDP((2.0,), (0.1,))).add(A.RDP((3.0,), (0.1,))).total()


def test_footprint_equals_enumeration_random():
    rng = np.random.default_rng(3)
    X = ("a", "b", "c", "d")
    for _ in range(20):
        for G, dom in ((A.Unbounded(), A.AllMultisets(X, max_size=3)), (A.Bounded(), A.FixedSize(X, 2))):
            acc = A.Accountant(G, domain=dom, notion="rdp")
            for _ in range(int(rng.integers(1, 5))):
                vals = [x for x in X if rng.random() < 0.5] or ["a"]
                eps = tuple(float(v) for v in np.sort(rng.random(len(ALPHAS))))
                acc.add(A.RDP(ALPHAS, eps), selector=A.RecordFilter(vals))
            e1, e2 = acc.total(strategy="enumerate"), acc.total(strategy="footprint")
            assert e1.alphas == e2.alphas
            for x, y in zip(e1.eps, e2.eps):
                assert x == pytest.approx(y, rel=1e-12)


def test_rdp_serialises():
    g = A.RDP(ALPHAS, (0.1, 0.2, 0.3, math.inf), granularity=A.Bounded())
    assert puffer.guarantee_from_json(g.to_json()) == g
