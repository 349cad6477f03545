"""Accountant API: bad input gives clear puffer errors; Pufferfish guarantees are refused
without a DP-type certificate; parallel RPP composition (Pierquin et al. 2024, Prop E.1);
explain(); the CLI; the C++ kernel on edge cases."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import puffer
from puffer import accounting as A
from puffer import models
from puffer.errors import ParameterError, ParameterTypeError


def test_entry_points():
    for name in ("PureDP", "ApproxDP", "ZCDP", "GDP", "Unbounded", "Bounded", "RecordFilter", "Accountant",
                 "NO_GUARANTEE"):
        assert hasattr(A, name)
    assert A.PureDP(1.0).group(2).eps == 2.0
    assert A.ApproxDP(1.0, 0.0).group(3).delta == 0.0
    assert A.ZCDP(0.1).group(3).rho == pytest.approx(0.9) and A.GDP(0.5).group(4).mu == 2.0
    assert puffer.guarantees.PureDP is A.PureDP


@pytest.mark.parametrize("bad,exc", [
    (lambda: A.PureDP(-0.1), ParameterError),
    (lambda: A.PureDP(float("nan")), ParameterError),
    (lambda: A.PureDP("1"), ParameterTypeError),
    (lambda: A.ApproxDP(1.0, 1.0), ParameterError),
    (lambda: A.ApproxDP(1.0, -1e-9), ParameterError),
    (lambda: A.ZCDP(-1.0), ParameterError),
    (lambda: A.GDP(math.inf), ParameterError),
    (lambda: A.PureDP(1.0).group(-1), ParameterError),
    (lambda: A.PureDP(1.0).group(1.5), ParameterTypeError),
    (lambda: A.PureDP(1.0, granularity="Sideways"), ParameterError),
    (lambda: A.Accountant(A.Bounded(), notion="renyi"), ParameterError),
    (lambda: A.Accountant("bounded"), ParameterTypeError),
    (lambda: A.Accountant(A.Bounded()).add(A.PureDP(1.0), scope="global"), ParameterError),
    (lambda: A.Accountant(A.Bounded()).add(A.ZCDP(1.0)), ParameterError),          # mixing notions
    (lambda: A.Accountant(A.Bounded(), notion="zcdp").add(A.PureDP(1.0)), ParameterError),
    (lambda: A.Accountant(A.Bounded()).add(A.PureDP(1.0), selector=A.Partition(str)), ParameterTypeError),
    (lambda: A.Accountant(A.Bounded()).add(A.PureDP(1.0), selector=A.OrderPartition([{1}])[0]), ParameterError),
    (lambda: A.Accountant(A.Bounded()).add(A.PureDP(1.0), selector=lambda D: D), ParameterTypeError),
    (lambda: A.Accountant(A.Bounded()).total(), ParameterError),
    (lambda: A.RecordFilter([]), ParameterError),
    (lambda: A.RecordFilter("abc"), ParameterTypeError),
    (lambda: A.OrderPartition([{1, 2}, {2}]), ParameterError),
    (lambda: A.Graph(edges=[("a", "a")]), ParameterError),
    (lambda: A.Graph(neighbors=lambda v: {"a": ["b"], "b": []}[v], domain=A.Finite(["a", "b"], kind="opaque")),
     ParameterError),
    (lambda: A.Graph(), ParameterError),
    (lambda: A.Unbounded().distance(["a"], ["z"], A.AllMultisets("ab")), ParameterError),
])
def test_bad_input(bad, exc):
    with pytest.raises(exc) as info:
        bad()
    assert "parameter" in str(info.value) or "expected" in str(info.value)


def test_mixing_notions_message_names_conversion():
    with pytest.raises(ParameterError, match=r"to_zcdp"):
        A.Accountant(A.Bounded(), notion="zcdp").add(A.PureDP(1.0))
    acc = A.Accountant(A.Bounded(), notion="zcdp").add(A.PureDP(1.0).to_zcdp())
    assert acc.total().rho == pytest.approx(0.5)
    acc = A.Accountant(A.Bounded(), notion="approx").add(A.PureDP(1.0)).add(A.ApproxDP(1.0, 1e-6))
    assert acc.total().eps == pytest.approx(2.0) and acc.total().delta == pytest.approx(1e-6)


def test_vacuous_delta_is_no_guarantee():
    acc = A.Accountant(A.Unbounded(), notion="approx")
    for _ in range(3):
        acc.add(A.ApproxDP(0.1, 0.4))
    assert acc.total() is A.NO_GUARANTEE and "vacuous" in acc.result().reason


def test_release_without_guarantee_poisons_total():
    acc = A.Accountant(A.Unbounded()).add(A.PureDP(0.1)).add(A.NO_GUARANTEE)
    assert acc.total() is A.NO_GUARANTEE and "Thm VII.2" in acc.result().reason


@pytest.mark.parametrize("g", [puffer.PP(1.0), puffer.PP(1.0, 1e-6), puffer.RPP(2.0, 0.5),
                               puffer.ApproxRPP(2.0, 0.5, 1e-6)])
def test_pufferfish_refused_with_reason(g):
    with pytest.raises(A.NotComposableError, match="no known sequential composition"):
        A.Accountant(A.Unbounded()).add(g)


def test_pufferfish_with_certificate_is_composed():
    c = A.Certified(puffer.RPP(2.0, 0.5), dp=A.PureDP(0.7),
                    reason="records independent under every prior: the Pufferfish instance is unbounded DP")
    acc = A.Accountant(A.Unbounded()).add(c).add(A.PureDP(0.3))
    assert acc.total().eps == pytest.approx(1.0)
    with pytest.raises(ParameterError):
        A.Certified(puffer.RPP(2.0, 0.5), dp=A.PureDP(0.7), reason=" ")

    class Mech:
        guarantee = puffer.RPP(2.0, 0.5)
        dp_guarantee = A.PureDP(0.2)
    assert A.Accountant(A.Unbounded()).add(Mech()).total().eps == pytest.approx(0.2)

    class Bare:
        guarantee = puffer.RPP(2.0, 0.5)
    with pytest.raises(A.NotComposableError):
        A.Accountant(A.Unbounded()).add(Bare())


def _relabel(fw, tag):
    return puffer.Framework.from_conditionals(
        {th: {(tag, s): fw.conditional(th, s) for s in fw.secrets} for th in fw.thetas},
        [((tag, a), (tag, b)) for a, b in fw.pairs])


def test_compose_parallel_prop_E1():
    fa = _relabel(models.correlated_pair(0.5, 0.3), "a")
    fb = _relabel(models.correlated_pair(0.4, 0.2), "b")
    out = puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), fb)], independent=True)
    assert out == puffer.RPP(2.0, 0.7)
    assert any(r.item == "Prop E.1" for r in out.provenance.refs)
    pure = puffer.compose_parallel([(puffer.PP(0.3), fa), (puffer.PP(0.9), fb)], independent=True)
    assert pure == puffer.PP(0.9) and isinstance(pure, puffer.PP)   # stays PP (issue 22)
    c1 = puffer.RPPCurve((2.0, 4.0), (0.1, 0.4))
    c2 = puffer.RPPCurve((2.0, 8.0), (0.3, 0.9))
    cc = puffer.compose_parallel([(c1, fa), (c2, fb)], independent=True)
    assert cc.alphas == (2.0,) and cc.eps == (0.3,)
    # preconditions
    with pytest.raises(ParameterError, match="independent"):
        puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), fb)])
    with pytest.raises(ParameterError, match="secrets about part"):
        puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), _relabel(
            models.correlated_pair(0.4, 0.2), "a"))], independent=True)
    with pytest.raises(ParameterError, match="same object"):
        puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), fa)], independent=True)
    with pytest.raises(ParameterError, match="common order"):
        puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(3.0, 0.7), fb)], independent=True)
    with pytest.raises(ParameterError, match="delta = 0"):
        puffer.compose_parallel([(puffer.PP(0.3, 1e-6), fa), (puffer.PP(0.9), fb)], independent=True)
    with pytest.raises(ParameterTypeError):
        puffer.compose_parallel([(A.PureDP(0.3), fa)], independent=True)
    with pytest.raises(ParameterTypeError):
        puffer.compose_parallel([(puffer.RPP(2.0, 0.3), "framework")], independent=True)


def test_explain_ambulances():
    hosp = {"h1": ["a1", "a3"], "h2": ["a1", "a4"], "h3": ["a1", "a5"], "h4": ["a2"], "h5": ["a2", "a5"]}
    acc = A.Accountant(A.Bounded(), notion="approx")
    for h, amb in hosp.items():
        acc.add(A.ApproxDP(1.0, 1e-5), selector=A.RecordFilter(amb), label=f"count@{h}")
    text = acc.explain()
    assert "Thm VI.7" in text and "replace record" in text and "sequential composition would give: (5, 5e-05)" in text
    assert "eps=5" in text.replace("5.0000", "5").replace("eps=5.", "eps=5")


def test_loss_between_multirecord_change_is_smaller_than_group():
    acc = A.Accountant(A.Unbounded(), notion="pure")
    p = A.Partition(lambda x: x, cells=["a", "b"])
    acc.add(A.PureDP(1.0), selector=p["a"]).add(A.PureDP(0.25), selector=p["b"])
    assert acc.loss_between([], ["b", "b", "b"]) == pytest.approx(0.75)
    assert acc.total().group(3).eps > 0.75 * 3


def test_graph_granularity_enumeration():
    g = A.Graph(edges=[("u", "v"), ("v", "w"), ("w", "x")])
    acc = A.Accountant(g, notion="pure")
    acc.add(A.PureDP(0.5))
    acc.add(A.PureDP(0.2), selector=A.Opaque(lambda D: D in ("u", "v"), sensitivity=1.0))
    assert acc.total().eps == pytest.approx(0.7)      # the edge v ~ w changes the opaque output
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        A.Accountant(A.Graph(edges=[("u", "v"), ("w", "x")]))
    assert any(issubclass(x.category, A.DisconnectedClassWarning) for x in w)


def test_metric_form():
    m = A.ApproxDP(1.0, 1e-5, granularity=A.Unbounded()).to_metric()
    eps, delta = m.bound(["a"], ["b", "c"])
    assert eps == 3.0 and delta == pytest.approx(1e-5 * (1 + math.e + math.e ** 2))
    assert math.isinf(A.PureDP(0.0, granularity=A.Bounded()).to_metric().bound(["a"], ["a", "b"]))  # 0 * inf


def test_kernel_edge_cases():
    from puffer._core import accounting as K
    ip, ix = np.array([0, 2, 3]), np.array([0, 1, 1])
    v, s, t, _, _ = K.footprint_max_pair(ip, ix, np.array([0, 0], dtype=np.uint8), np.array([1.0, 2.0]),
                                         np.array([1.0, 5.0]))
    assert (v, s, t) == (6.0, 0, 1) or (v, s, t) == (6.0, 1, 0)      # t1[0] + t2[1]
    with pytest.raises(ParameterError):
        K.footprint_max_pair(ip, np.array([1, 0, 1]), np.zeros(2, dtype=np.uint8), np.ones(2), np.ones(2))
    with pytest.raises(ParameterError):
        K.footprint_max_single(ip, ix, np.array([1.0, float("nan")]))
    with pytest.raises(ParameterError):
        K.footprint_max_single(ip, np.array([0, 5, 1]), np.ones(2))
    assert K.ext_mul(0.0, math.inf) == math.inf and K.ext_mul(0.0, 3.0) == 0.0
    d = K.bfs_multi(np.array([0, 1, 2, 2]), np.array([1, 0]), np.array([0]), -1)
    assert d.tolist() == [0, 1, -1]


def test_kernel_pair_search_matches_naive():
    """The pruned pair search returns the exact maximum (random footprints, naive O(|F|^2 k))."""
    from puffer._core import accounting as K
    rng = np.random.default_rng(5)
    for _ in range(30):
        k, nf = int(rng.integers(1, 30)), int(rng.integers(1, 25))
        fps = [sorted(set(rng.integers(0, k, size=int(rng.integers(0, 6))).tolist())) for _ in range(nf)]
        ok = rng.integers(0, 2, size=nf).astype(np.uint8)
        t1, t2 = rng.random(k), rng.random(k) * 2
        ip = np.cumsum([0] + [len(f) for f in fps])
        ix = np.array([i for f in fps for i in f], dtype=np.int64)
        best = -1.0
        for a in range(nf):
            for b in range(nf):
                if a == b and not ok[a]:
                    continue
                S, T = set(fps[a]), set(fps[b])
                best = max(best, sum(t1[i] for i in S ^ T) + sum(t2[i] for i in S & T))
        v = K.footprint_max_pair(ip, ix, ok, t1, t2)[0]
        if best < 0:
            assert v == 0.0
        else:
            assert v == pytest.approx(best, rel=1e-12)


def test_cli_account(tmp_path, capsys):
    from puffer.cli import main
    assert main(["account", "examples/ambulances.toml"]) == 0
    out = capsys.readouterr().out
    assert "ApproxDP(eps=6.0" in out and "worst edge" in out
    assert main(["account", "examples/ambulances.toml", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"]["type"] == "ApproxDP" and doc["total"]["delta"] == pytest.approx(6e-5)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"granularity": "Bounded", "release": [{"guarantee": {"type": "RPP", "alpha": 2.0,
                                                                                   "eps": 1.0}}]}))
    assert main(["account", str(bad)]) == 3
    assert "no known sequential composition" in capsys.readouterr().err
    bad.write_text(json.dumps({"granularity": "Bounded", "releases": []}))
    assert main(["account", str(bad)]) == 3
    local = tmp_path / "local.json"
    local.write_text(json.dumps({"granularity": "Bounded", "release": [
        {"guarantee": {"type": "PureDP", "eps": 0.0}, "select": ["a"], "scope": "local"},
        {"guarantee": {"type": "PureDP", "eps": 0.0}, "select": ["b"], "scope": "local"}]}))
    assert main(["account", str(local)]) == 0
    assert "NO_GUARANTEE" in capsys.readouterr().out
