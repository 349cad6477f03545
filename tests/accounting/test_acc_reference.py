"""Reference values of Guerra-Balboa et al. 2024 (paper-stated R1-R11 and the derived vectors
of the implementation notes), with independent oracles: exact fractions, mpmath, closed forms."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import puffer
from puffer import accounting as A
from puffer.guarantees.dp import DPGuarantee


def close_above(got, want, rel=1e-12):
    """Reported value is a certified upper bound, tight up to the rounding margin."""
    assert got >= want, (got, want)
    assert got <= want * (1 + rel) + 1e-300, (got, want)


def cells_acc(G, notion, params, scope="common", domain=None, cells=None):
    names = cells or [f"x{i}" for i in range(len(params))]
    p = A.Partition(lambda x: x, cells=names)
    acc = A.Accountant(G, domain=domain, notion=notion)
    cls = {"pure": A.PureDP, "approx": A.ApproxDP, "zcdp": A.ZCDP, "gdp": A.GDP}[notion]
    for c, prm in zip(names, params):
        prm = prm if isinstance(prm, tuple) else (prm,)
        acc.add(cls(*prm), selector=p[c], scope=scope)
    return acc


# -- R1: conversion factors --------------------------------------------------------------------
def test_R1_dist_unbounded_bounded():
    assert A.Unbounded().dist_to(A.Bounded()) == 2.0
    assert math.isinf(A.Bounded().dist_to(A.Unbounded()))
    dom = A.AllMultisets("abc", max_size=3)      # the same by enumeration (C++ BFS)
    assert A.Unbounded().dist_to(A.Bounded(), dom) == 2.0
    assert math.isinf(A.Bounded().dist_to(A.Unbounded(), dom))
    assert A.FreeLunch().dist_to(A.Bounded()) == 1.0
    g = A.PureDP(0.5, granularity=A.Unbounded()).to_granularity(A.Bounded())
    assert isinstance(g, DPGuarantee) and any(r.item == "Prop A.3" for r in g.provenance.refs)
    assert g.eps == 1.0 and g.granularity == A.Bounded()
    assert A.PureDP(0.5, granularity=A.Bounded()).to_granularity(A.Unbounded()) is A.NO_GUARANTEE
    a = A.ApproxDP(1.0, 1e-5, granularity=A.Unbounded()).to_granularity(A.Bounded())
    close_above(a.delta, 1e-5 * (math.e + 1))
    assert A.ZCDP(0.5, granularity=A.Unbounded()).to_granularity(A.Bounded()).rho == 2.0
    assert A.GDP(0.5, granularity=A.Unbounded()).to_granularity(A.Bounded()).mu == 1.0


# -- R2: Ex. II.9, bounded local partition has no guarantee, even with every eps = 0 -------------
@pytest.mark.parametrize("notion", ["pure", "approx", "zcdp", "gdp"])
def test_R2_bounded_local_partition_is_no_guarantee(notion):
    params = [(0.0, 0.0), (0.0, 0.0)] if notion == "approx" else [0.0, 0.0]
    acc = cells_acc(A.Bounded(), notion, params, scope="local")
    assert acc.total() is A.NO_GUARANTEE
    assert not acc.total()
    res = acc.result()
    assert res.edge.startswith("replace record") and "Ex. II.9" in res.reason
    # one exhaustive cell (k = 1): the release's own guarantee
    whole = A.Partition(lambda x: "all", cells=["all"])
    one = A.Accountant(A.Bounded(), domain=A.FixedSize("abc"), notion=notion)   # X given: key known
    one.add({"pure": A.PureDP, "approx": A.ApproxDP, "zcdp": A.ZCDP, "gdp": A.GDP}[notion](*(
        [0.5, 1e-6] if notion == "approx" else [0.5])), selector=whole["all"], scope="local")
    g = one.total()
    assert g != A.NO_GUARANTEE and getattr(g, g._params[0]) == pytest.approx(0.5, rel=1e-12)
    # a single cell that is not exhaustive (or X unknown): a replacement can move a record out of it
    unknown = A.Accountant(A.Bounded(), notion=notion)
    unknown.add(one.releases[0].guarantee, selector=whole["all"], scope="local")
    assert unknown.total() is A.NO_GUARANTEE
    assert cells_acc(A.Bounded(), notion, params[:1], scope="local").total() is A.NO_GUARANTEE
    # the common-domain counterpart is finite (Cor. IV.13)
    assert cells_acc(A.Bounded(), notion, params, scope="common").total() != A.NO_GUARANTEE


# -- R3: Ex. III.4, unbounded on a fixed-size class is totally disconnected ---------------------
def test_R3_disconnected_fixed_size():
    dom = A.FixedSize("abc", 2)
    assert not A.Unbounded().is_connected(dom)
    assert A.Bounded().is_connected(dom)
    assert math.isinf(A.Unbounded().distance(["a", "b"], ["a", "c"], dom))
    with pytest.warns(A.DisconnectedClassWarning, match="Ex. III.4"):
        acc = A.Accountant(A.Unbounded(), domain=dom)
    acc.add(A.PureDP(1.0))
    assert acc.total().eps == 0.0      # vacuous: no edge inside the class
    assert not A.Bounded().is_connected(A.AllMultisets())


# -- R4 (count part): Ex. IV.2, per-district counts compose to d^U --------------------------------
def test_R4_district_counts_metric():
    p = A.Partition(lambda x: x[0], cells=["d1", "d2"])
    acc = A.Accountant(A.Unbounded(), domain=A.AllMultisets())
    acc.add(A.PureDP(1.0), selector=p["d1"], scope="local")
    acc.add(A.PureDP(1.0), selector=p["d2"], scope="local")
    D = [("d1", 1), ("d2", 1)]
    D2 = [("d1", 2), ("d2", 1), ("d2", 5)]
    close_above(acc.loss_between(D, D2), 3.0)        # = d^U(D, D2)
    assert A.Unbounded().distance(D, D2) == 3.0


# -- R5 / R8: ambulances linked to <= 3 of k hospitals (Ex. IV.5, VI.8) --------------------------
AMB = {"a1": {"h1", "h2", "h3"}, "a2": {"h4", "h5", "h6"}, "a3": {"h1", "h7"}, "a4": {"h2"},
       "a5": {"h3", "h5", "h8"}}
HOSP = [f"h{i}" for i in range(1, 9)]


def hospital_filters():
    return {h: A.RecordFilter([a for a, hs in AMB.items() if h in hs]) for h in HOSP}


def test_R5_ambulances_unbounded_three_eps():
    f = hospital_filters()
    acc = A.Accountant(A.Unbounded(), notion="pure")
    for h in HOSP:
        acc.add(A.PureDP(0.5), selector=f[h], scope="local", label=f"count@{h}")
    close_above(acc.total().eps, 1.5)        # 3 eps, not k eps = 4
    assert acc.result().sequential is None   # no plain sum is offered for local-scope releases
    common = A.Accountant(A.Unbounded(), notion="pure")
    for h in HOSP:
        common.add(A.PureDP(0.5), selector=f[h])
    close_above(common.total().eps, 1.5)
    assert common.result().sequential == 4.0


def test_R8_ambulances_bounded_approx():
    f = hospital_filters()
    acc = A.Accountant(A.Bounded(), notion="approx")
    for h in HOSP:
        acc.add(A.ApproxDP(1.0, 1e-5), selector=f[h], label=f"count@{h}")
    g = acc.total()
    close_above(g.eps, 6.0)
    close_above(g.delta, 6e-5)
    assert acc.result().sequential == (8.0, pytest.approx(8e-5))
    assert "replace record" in acc.result().edge and len(acc.result().touched) == 6


# -- R6: Ex. IV.9 / IV.14 / Cor. IV.13 ----------------------------------------------------------
def test_R6_bounded_laplace_counts_common():
    eps = [0.3, 0.5, 0.2, 0.4]
    acc = cells_acc(A.Bounded(), "pure", eps)
    close_above(acc.total().eps, 0.9)         # max_{i != j} (eps_i + eps_j) = 0.5 + 0.4
    assert acc.result().sequential == pytest.approx(1.4)
    assert "Cor IV.13" in acc.result().theorem
    # per-edge detail (Ex. IV.14): same district eps_i; cross-district eps_i + eps_j; outside eps_j
    dom = A.FixedSize(["x0", "x1", "x2", "x3", "out"], 2)
    acc2 = cells_acc(A.Bounded(), "pure", eps, domain=dom, cells=["x0", "x1", "x2", "x3"])
    close_above(acc2.loss_between(["x1", "x1"], ["x1", "x3"]), 0.5 + 0.4)
    close_above(acc2.loss_between(["x1", "out"], ["out", "out"]), 0.5)
    assert acc2.loss_between(["out", "x1"], ["out", "x1"]) == 0.0
    close_above(acc2.total().eps, 0.9)


# -- R7: delta blow-up under group privacy ------------------------------------------------------
def test_R7_group_delta():
    g = A.ApproxDP(1.0, 1e-5)
    exact = {n: float(mpmath.mpf("1e-5") * (mpmath.e ** n - 1) / (mpmath.e - 1)) for n in (2, 11, 12, 13)}
    for n, want in exact.items():
        close_above(g.group_delta(n), want, rel=1e-14)
    assert round(g.group_delta(12), 6) == 0.947189
    assert round(g.group_delta(13), 6) == 2.574737
    assert round(g.group_delta(11), 6) == 0.348448
    assert g.group(12) != A.NO_GUARANTEE and g.group(13) is A.NO_GUARANTEE
    assert abs(g.group(2).delta - 3.718282e-5) < 1e-11
    assert g.group(2).eps == 2.0


# -- R9: Ex. VI.25, GDP over a record partition beats max mu * d -----------------------------------
def test_R9_gdp_partition_metric():
    acc = cells_acc(A.Unbounded(), "gdp", [1.0, 1.0, 1.0], scope="local")
    D2 = ["x0", "x1", "x2"]
    D = ["x2"]                                 # D = D2 minus {x_i, x_j}, i != j
    close_above(acc.loss_between(D, D2), math.sqrt(2.0))
    assert A.Unbounded().distance(D, D2) == 2.0


# -- R10 / R11 and the derived vectors -----------------------------------------------------------
@pytest.mark.parametrize("notion,params,U,B,seq", [
    ("pure", [1.0, 0.5, 0.25], 1.0, 1.5, 1.75),
    ("zcdp", [0.5, 0.2, 0.1], 0.5, 0.7, 0.8),
    ("gdp", [1.0, 0.5, 0.25], 1.0, math.sqrt(1.25), math.sqrt(1.3125)),
])
def test_partition_vectors(notion, params, U, B, seq):
    attr = {"pure": "eps", "zcdp": "rho", "gdp": "mu"}[notion]
    close_above(getattr(cells_acc(A.Unbounded(), notion, params).total(), attr), U)
    close_above(getattr(cells_acc(A.Bounded(), notion, params).total(), attr), B)
    acc = A.Accountant(A.Bounded(), notion=notion)
    cls = {"pure": A.PureDP, "zcdp": A.ZCDP, "gdp": A.GDP}[notion]
    for p in params:
        acc.add(cls(p))
    close_above(getattr(acc.total(), attr), seq)
    assert "sequential" in acc.result().theorem
    assert cells_acc(A.Bounded(), notion, params, scope="local").total() is A.NO_GUARANTEE


def test_R10_bounded_gdp_record_partition():
    acc = cells_acc(A.Bounded(), "gdp", [1.0, 0.5, 0.25])
    assert round(acc.total().mu, 10) == 1.1180339887
    assert "Cor A.18" in acc.result().theorem


def test_R11_approx_sequential_and_partition():
    params = [(1.0, 1e-6), (0.5, 2e-6), (0.25, 3e-6)]
    acc = cells_acc(A.Bounded(), "approx", params)
    g = acc.total()
    close_above(g.eps, 1.5)
    close_above(g.delta, 5e-6)                 # maxima from different pairs (P7)
    seq = A.Accountant(A.Unbounded(), notion="approx")
    for p in params:
        seq.add(A.ApproxDP(*p))
    close_above(seq.total().eps, 1.75)
    close_above(seq.total().delta, 6e-6)


def test_overlapping_footprints_vector():
    eps = [0.1, 0.2, 0.3, 0.4, 0.5]
    F = {"r12": {0, 1}, "r23": {1, 2}, "r4": {3}, "r5": {4}}  # footprints {1,2},{2,3},{4},{5} (1-based)
    sels = [A.RecordFilter([x for x, fp in F.items() if i in fp]) for i in range(5)]
    for G, want in ((A.Unbounded(), 0.5), (A.Bounded(), 1.0)):
        acc = A.Accountant(G)
        for e, s in zip(eps, sels):
            acc.add(A.PureDP(e), selector=s)
        close_above(acc.total().eps, want)
        assert acc.result().sequential == pytest.approx(1.5)


def test_group_factor_sanity():
    want = float(1 + mpmath.e ** 0.5 + mpmath.e)
    close_above(A.group_factor(3, 0.5), want, rel=1e-14)
    assert round(A.group_factor(3, 0.5), 9) == 5.367003099
    assert A.group_factor(4, 0.0) == 4.0 and math.isinf(A.group_factor(math.inf, 1.0))


def test_cor_IV_15_fibre_distance():
    """A bounded-certified, f-dependent release (f = D n Y) also protects size changes:
    exact fibre distance max(|fD|, |fD'|) - |fD n fD'| = 2 for D = {a}, D' = {b, b}."""
    Y = A.RecordFilter(["a", "b"])
    for dom in (A.AllMultisets("abc"), A.AllMultisets("abc", max_size=3)):
        acc = A.Accountant(A.Unbounded(), domain=dom)
        acc.add(A.PureDP(1.0, granularity=A.Bounded()), selector=Y)
        close_above(acc.loss_between(["a"], ["b", "b"]), 2.0)
        close_above(acc.total().eps, 1.0)      # on an unbounded edge the fibres are 1 apart
    # without a padding record (Y = X) the size change is not protected
    acc = A.Accountant(A.Unbounded(), domain=A.AllMultisets("ab"))
    acc.add(A.PureDP(1.0, granularity=A.Bounded()), selector=Y)
    assert acc.total() is A.NO_GUARANTEE


def test_ordered_partition_best_bound():
    """Ex. IV.7 / Prop. A.6: identifier cells are bounded-compatible: max eps_i, even local."""
    op = A.OrderPartition([{1, 2}, {3}, {4, 5}])
    for scope in ("common", "local"):
        acc = A.Accountant(A.OrderedBounded(), domain=A.Ordered("ab", 5))
        for i, e in enumerate([0.3, 0.9, 0.5]):
            acc.add(A.PureDP(e), selector=op[i], scope=scope)
        close_above(acc.total(strategy="footprint").eps, 0.9)
        close_above(acc.total(strategy="enumerate").eps, 0.9)


def test_cross_notion_reporting():
    z = A.ZCDP(0.5)
    want = 0.5 + 2 * math.sqrt(0.5 * math.log(1e5))
    close_above(z.to_approx(1e-5).eps, want, rel=1e-14)
    mu = mpmath.mpf(1)
    phi = lambda x: mpmath.ncdf(x)  # noqa: E731
    for eps in (0.5, 1.0, 3.0):
        exact = phi(-eps / mu + mu / 2) - mpmath.e ** eps * phi(-eps / mu - mu / 2)
        d = A.GDP(1.0).delta_at(eps)
        assert d >= float(exact) and d <= float(exact) * (1 + 1e-12)
    a = A.GDP(1.0).to_approx(1e-5)
    assert A.GDP(1.0).delta_at(a.eps) <= 1e-5
    assert A.GDP(1.0).delta_at(a.eps * (1 - 1e-9)) > 1e-5 * (1 - 1e-6)    # tight
    assert A.PureDP(1.0).to_zcdp().rho == 0.5


def test_serialisation_round_trip():
    for g in (A.PureDP(1.0, granularity=A.Bounded()), A.ApproxDP(0.5, 1e-6),
              A.ZCDP(0.2, granularity=A.Unbounded(), domain=A.AllMultisets("ab")),
              A.GDP(1.5, granularity=A.OrderedBounded())):
        back = puffer.guarantee_from_json(g.to_json())
        assert back == g and type(back) is type(g)
    with pytest.raises(puffer.ParameterError):
        puffer.guarantee_from_dict({"type": "PureDP", "eps": 1.0, "epsilon": 2})
    assert puffer.guarantee_from_dict(A.NO_GUARANTEE.to_dict()) == A.NO_GUARANTEE


# -- Thm VI.24 (Eq. VI.2): GDP with the record metric commuting with a partition -----------------
def test_VI24_commuting_metric_gdp():
    mu = [1.0, 0.5, 0.25]
    acc = cells_acc(A.Unbounded(), "gdp", mu, scope="local")
    full = ["x0", "x1", "x2"]
    # two cells change (one record each): sqrt(1^2 + 0.5^2) < max mu * d* = 1 * 2
    close_above(acc.loss_between(["x2"], full), math.sqrt(1.25))
    assert acc.loss_between(["x2"], full) < max(mu) * A.Unbounded().distance(["x2"], full)
    # one cell changes: equality with mu_i d*
    close_above(acc.loss_between(["x1", "x2"], full), 1.0)
    close_above(acc.loss_between(["x0", "x2"], full), 0.5)


# -- Thms V.2 / V.5: adaptively chosen releases compose to the independent bound -----------------
def test_V2_adaptive_budgets_compose_like_independent_ones():
    # the second cell's budget is chosen from the first release's noisy output; the total is the
    # closed form of Thm IV.11 / V.5 for the budgets actually used (pure, unbounded: max eps_i)
    rng = np.random.default_rng(11)
    for _ in range(5):
        out = 3.0 + rng.laplace(scale=1 / 0.5)
        eps2 = 0.25 if out > 3.0 else 0.75
        acc = cells_acc(A.Unbounded(), "pure", [0.5, eps2])
        close_above(acc.total().eps, max(0.5, eps2))
        assert "Thm" in acc.result().theorem
