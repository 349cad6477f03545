"""puffer.series.plan / SeriesPlan: the API (validation, immutability, JSON round trip, the window
mechanisms). The bound's values are checked against the exact oracle in test_oracle.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

import puffer
from puffer.errors import ParameterError, ParameterTypeError
from puffer.models import markov_chain
from puffer.series import SeriesPlan, SeriesWindow, plan

P = [[0.9, 0.1], [0.2, 0.8]]


@pytest.fixture(scope="module")
def fw():
    return markov_chain(P, T=8)


@pytest.fixture(scope="module")
def p3(fw):
    return plan(fw, 4, eps=1.0)


def test_windows_int_and_list(fw):
    a = plan(fw, 4, eps=1.0)
    b = plan(fw, [(0, 4), (4, 8)], eps=1.0)
    assert a.windows == b.windows == ((0, 4), (4, 8))
    assert a == b and a.digest() == b.digest()


@pytest.mark.parametrize("windows, name", [
    ([(0, 4), (3, 8)], "windows[1]"), ([(4, 8), (0, 4)], "windows[1]"), ([(0, 9)], "windows[0]"),
    ([(-1, 3)], "windows[0]"), ([(3, 3)], "windows[0]"), ([], "windows"), (5, "windows"), (0, "windows"),
    (9, "windows")])
def test_bad_windows_refused(fw, windows, name):
    with pytest.raises(ParameterError) as e:
        plan(fw, windows, eps=1.0)
    assert e.value.param == name


@pytest.mark.parametrize("windows", ["0:4", [(0, 4.0)], [(0, 4, 8)], [(True, 4)], 4.0])
def test_bad_window_types_refused(fw, windows):
    with pytest.raises(ParameterTypeError):
        plan(fw, windows, eps=1.0)


def test_bad_arguments(fw):
    with pytest.raises(ParameterError, match="delta"):
        plan(fw, 4, eps=1.0, delta=1e-6)
    with pytest.raises(ParameterError, match="theorem"):
        plan(fw, 4, eps=1.0, theorem="gdp")
    with pytest.raises(ParameterError, match="eps"):
        plan(fw, 4, eps=0.0)
    with pytest.raises(ParameterTypeError, match="fw"):
        plan(puffer.models.correlated_pair(), 1, eps=1.0)


def test_plan_fields(fw, p3):
    assert isinstance(p3.guarantee, puffer.PP)
    assert p3.guarantee.eps == 1.0 and p3.guarantee.delta == 0.0
    assert p3.eps_certified <= 1.0
    assert p3.scales.shape == (2,) and (p3.scales > 0).all()
    with pytest.raises(ValueError):
        p3.scales[0] = 1.0
    assert p3.framework_digest == fw.digest()
    assert p3.framework == {"digest": fw.digest(), "name": fw.name, "T": 8}
    assert p3.horizon == 8
    assert p3.theorem and all(isinstance(r, puffer.Ref) for r in p3.theorem)
    assert p3.guarantee.provenance.refs == p3.theorem
    b = p3.binding_secret
    assert set(b) >= {"prior", "t", "pair", "quilt"} and 0 <= b["t"] < 8
    assert p3.candidates["mqm"] >= p3.scales[0]
    r = repr(p3)
    assert "\n" not in r and r.startswith("SeriesPlan(2 windows on T=8")
    with pytest.raises(AttributeError):
        p3._scales = None


def test_each_theorem_alone(fw):
    m = plan(fw, 4, eps=1.0, theorem="mqm")
    q = plan(fw, 4, eps=1.0, theorem="quilt")
    assert m.theorem_name == "mqm" and q.theorem_name == "quilt"
    # the MQM's scale equals puffer's MarkovQuilt for the same framework (L = 1)
    assert m.scales[0] == puffer.mechanisms.MarkovQuilt(fw, 1.0).noise.scale
    best = plan(fw, 4, eps=1.0)
    assert best.scales[0] == min(m.scales[0], q.scales[0])


def test_json_round_trip(p3):
    text = p3.to_json()
    back = SeriesPlan.from_json(text)
    assert back == p3 and back.to_json() == text and back.digest() == p3.digest()
    assert back.guarantee == p3.guarantee and back.guarantee.provenance == p3.guarantee.provenance
    assert np.array_equal(back.scales, p3.scales)
    assert p3.digest().startswith("sha256:") and len(p3.digest()) == 7 + 64


def test_json_strict(p3):
    d = json.loads(p3.to_json())
    for mutate, match in [
        (lambda d: d.update(extra=1), "plan.extra"),
        (lambda d: d.pop("scales"), "plan.scales"),
        (lambda d: d.update(scales="1"), "plan.scales"),
        (lambda d: d["scales"].__setitem__(0, "2"), r"plan.scales\[0\]"),
        (lambda d: d.update(eps=True), "plan.eps"),
        (lambda d: d["framework"].update(x=1), "plan.framework"),
        (lambda d: d.update(format="other"), "plan.format"),
        (lambda d: d["guarantee"].update(eps=0.5), "plan.guarantee"),
        (lambda d: d["theorem"].update(name="gdp"), "theorem"),
        (lambda d: d.update(eps_certified=2.0), "eps_certified"),
    ]:
        dd = json.loads(json.dumps(d))
        mutate(dd)
        with pytest.raises((ParameterError, ParameterTypeError), match=match):
            SeriesPlan.from_json(json.dumps(dd))
    with pytest.raises(ParameterError, match="JSON"):
        SeriesPlan.from_json("{not json")
    with pytest.raises(ParameterTypeError):
        SeriesPlan.from_json(3)


def test_mechanism_and_release(p3):
    m = p3.mechanism(1)
    assert isinstance(m, SeriesWindow) and isinstance(m, puffer.mechanisms.Mechanism)
    assert m.noise.scale == p3.scales[1]
    assert m.guarantee == p3.guarantee
    assert m.guarantee.provenance.framework == p3.framework_digest
    # the lattice padding quantity: (eps - eps_certified) b / m for a quilt plan (m >= 1 windows)
    assert m.lattice_sensitivity() == p3.lattice_sensitivity > 0
    assert p3.lattice_sensitivity <= (p3.guarantee.eps - p3.eps_certified) * p3.scales[1]
    assert p3.guarantee.eps - p3.eps_certified >= 0.99e-4 * p3.guarantee.eps
    a = p3.release(1, 3.0, rng=7)
    b = m.release(3.0, rng=7)
    assert float(a) == float(b) and float(a) != 3.0
    with pytest.raises(ParameterError, match="window"):
        p3.mechanism(2)
    with pytest.raises(ParameterTypeError):
        p3.release("1", 3.0)


def test_release_statistics(p3):
    # Laplace(b): mean 0, mean |noise| = b; 20000 draws: the mean's sd is b sqrt(2 / 20000), so
    # 6 sd bounds fail with probability < 2e-9 (false alarm), and a wrong scale by 10 % (0.1 b,
    # 14 sd) is caught with power > 1 - 1e-20
    m = p3.mechanism(0)
    x = m.release(np.zeros(20000), rng=1)
    b = p3.scales[0]
    sd = b * np.sqrt(2 / 20000)
    assert abs(x.mean()) < 6 * sd
    assert abs(np.abs(x).mean() - b) < 6 * b / np.sqrt(20000)


def test_lattice_release(p3):
    m = p3.mechanism(0)
    lp = m.lattice_plan(bound=100.0)
    assert lp.sensitivity == p3.lattice_sensitivity and lp.inflation >= 1.0
    mq = plan(markov_chain(P, T=8), 4, eps=1.0, theorem="mqm")
    assert mq.mechanism(0).lattice_sensitivity() == 1.0      # the MQM's: the state values' span


def test_progress_callback_and_tiny_horizons():
    seen = []
    fw = markov_chain(P, T=6)
    p = plan(fw, 3, eps=1.0, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] and p.guarantee.eps == 1.0
    for T in (1, 2):
        q = plan(markov_chain(P, T=T), 1, eps=1.0)
        assert q.scales.shape == (T,) and q.scales[0] <= q.candidates["mqm"]
    with pytest.raises(ParameterError, match="progress"):
        plan(fw, 3, eps=1.0, progress="yes")
