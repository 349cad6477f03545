"""Range post-processing (issue 32 item 4): clamp to the query's range and round to its lattice,
from the framework (a Markov sum: [T min v, T max v]) or given; free in privacy (a function of the
release alone). Oracles: the ranges by hand, numpy's own clip/round on the same draw."""
from __future__ import annotations

import numpy as np
import pytest

import puffer
from puffer.mechanisms.postprocess import RangePost

FW = puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=24)


def test_ranges_and_lattices():
    assert FW.query_range == (0.0, 24.0) and FW.query_lattice() == (1.0, 0.0)
    two = puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=10, values=[3.0, 7.0])
    assert two.query_range == (30.0, 70.0) and two.query_lattice() == (4.0, 30.0)
    half = puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=10, values=[0.0, 0.5])
    assert half.query_lattice() is None
    assert puffer.models.correlated_pair().query_range == (0.0, 2.0)


def test_query_range_is_a_property_like_state_values():
    """Issue 42 item 4: fw.query_range was a method where fw.state_values is a property."""
    for cls in (puffer.Framework, type(FW)):
        assert isinstance(cls.__dict__.get("query_range"), property)
    assert isinstance(type(FW).state_values, property)


def test_release_clamps_and_rounds_the_same_draw():
    m = puffer.mechanisms.Wasserstein(FW, eps=1.0)
    x = np.array([0.0, 3.0, 12.0, 23.0, 24.0] * 40)
    raw = m.release(x, rng=5)
    clamped = m.release(x, rng=5, clamp=True)
    assert np.array_equal(clamped, np.clip(raw, 0.0, 24.0)) and (raw < 0).any() and (raw > 24).any()
    both = m.release(x, rng=5, clamp=True, lattice=True)
    assert np.array_equal(both, np.clip(np.round(raw), 0.0, 24.0))
    given = m.release(x.astype(np.float32), rng=5, clamp=(None, 10.0))
    assert given.dtype == np.float32 and given.max() <= 10.0 and given.min() < 0
    out = np.empty_like(x)
    assert m.release(x, rng=5, clamp=True, out=out) is out and np.array_equal(out, clamped)
    assert m.release(30.0, rng=1, clamp=True) <= 24.0


def test_post_processing_errors():
    m = puffer.mechanisms.Wasserstein(FW, eps=1.0)
    half = puffer.mechanisms.Wasserstein(
        puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=10, values=[0.0, 0.5]), eps=1.0)
    with pytest.raises(puffer.ParameterError, match="'lattice'"):
        half.release([1.0], rng=1, lattice=True)
    with pytest.raises(puffer.ParameterError, match="'clamp'"):
        m.release([1.0], rng=1, clamp=(5.0, 1.0))
    with pytest.raises(puffer.ParameterTypeError, match="'clamp'"):
        m.release([1.0], rng=1, clamp="0,24")
    with pytest.raises(puffer.ParameterTypeError, match="'lattice'"):
        m.release([1.0], rng=1, lattice=1)
    assert RangePost.resolve(FW) is None
    assert RangePost.resolve(None, (0, 1)).describe()["source"] == "given"


def test_publish_records_the_post_processing(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    fwf = tmp_path / "fw.toml"
    fwf.write_text('[model]\nkind = "markov_chain"\nT = 24\ntrans = [[[0.9, 0.1], [0.2, 0.8]]]\n[target]\neps = 1.0\n')
    pq.write_table(pa.table({"x": np.array([0.0, 1.0, 12.0, 23.0, 24.0] * 100)}), tmp_path / "in.parquet")
    key = tmp_path / "k.key"
    puffer.io.keygen(str(key))
    entry = puffer.io.noise_file(tmp_path / "in.parquet", tmp_path / "out.parquet", "x", str(fwf), key=str(key),
                                 per_unit=True, clamp=True, lattice=True)
    y = pq.read_table(tmp_path / "out.parquet").column("x").to_numpy()
    assert y.min() >= 0 and y.max() <= 24 and np.array_equal(y, np.round(y))
    assert entry["post_processing"] == [{"step": "range", "clamp": [0.0, 24.0], "lattice": {"step": 1.0, "offset": 0.0},
                                         "source": "framework"}]
    with pytest.raises(puffer.ParameterError, match="'clamp'"):
        puffer.publish.PublishOptions(clamp=(3, 1))
