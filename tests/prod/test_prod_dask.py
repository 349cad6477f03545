"""puffer.dask on a real distributed.LocalCluster with 2 worker processes: bitwise equality with
puffer.add_noise on the same rows for any chunking, row ids, bad inputs. One cluster per module."""
from __future__ import annotations

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import puffer
import puffer.dask as pdask
import puffer.io as pio
from puffer.errors import ParameterError, ParameterTypeError

SEED = 99
GAU = ("gaussian", {"sigma": 1.5})
N = 50_000


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit="2GiB")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def ref(x, name, dtype=np.float64):
    return puffer.add_noise(np.asarray(x, dtype=dtype), GAU, rng=pio.column_stream(SEED, name))


def test_array_any_chunking(client):
    x = np.random.default_rng(1).normal(size=N)
    expect = ref(x, "x")
    for chunks in (N, 4096, 7777):
        got = pdask.add_noise(da.from_array(x, chunks=chunks), "x", GAU, seed=SEED).compute()
        assert np.array_equal(got, expect), chunks
    m = np.random.default_rng(2).normal(size=(N, 3)).astype(np.float32)
    want = np.stack([ref(m[:, j], c, np.float32) for j, c in enumerate("abc")], axis=1)
    for chunks in ((N, 3), (5000, 1), (3333, 2)):
        got = pdask.add_noise(da.from_array(m, chunks=chunks), ["a", "b", "c"], GAU, seed=SEED).compute()
        assert got.dtype == np.float32 and np.array_equal(got, want), chunks


def test_dataframe_positional_and_row_id(client):
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"id": np.arange(N, dtype=np.int64), "x": rng.normal(size=N) * 10,
                        "k": rng.integers(0, 50, size=N), "s": ["a"] * N})
    wx, wk = ref(pdf["x"], "x"), ref(pdf["k"], "k")
    for parts in (1, 6):
        got = pdask.add_noise(dd.from_pandas(pdf, npartitions=parts), ["x", "k"], GAU, seed=SEED).compute()
        assert np.array_equal(got["x"].to_numpy(), wx) and np.array_equal(got["k"].to_numpy(), wk), parts
        assert got["s"].tolist() == pdf["s"].tolist()
    shuffled = pdf.sample(frac=1.0, random_state=0)
    got = pdask.add_noise(dd.from_pandas(shuffled, npartitions=5, sort=False), ["x"], GAU, seed=SEED,
                          row_id="id").compute().sort_values("id")
    assert np.array_equal(got["x"].to_numpy(), wx)


def test_nulls_and_bad_inputs(client):
    pdf = pd.DataFrame({"id": np.arange(100), "x": np.linspace(0, 1, 100), "s": ["a"] * 100})
    pdf.loc[7, "x"] = np.nan
    ddf = dd.from_pandas(pdf, npartitions=3)
    with pytest.raises(ParameterError, match="missing value at row 7"):
        pdask.add_noise(ddf, ["x"], GAU, seed=SEED).compute()
    kept = pdask.add_noise(ddf, ["x"], GAU, seed=SEED, nulls="keep").compute()
    full = ref(pdf["x"].fillna(0.0), "x")
    ok = ~pdf["x"].isna().to_numpy()
    assert np.isnan(kept["x"][7]) and np.array_equal(kept["x"].to_numpy()[ok], full[ok])
    with pytest.raises(ParameterError, match="'nope'"):
        pdask.add_noise(ddf, ["nope"], GAU, seed=SEED)
    with pytest.raises(ParameterTypeError, match="column 's'"):
        pdask.add_noise(ddf, ["s"], GAU, seed=SEED)
    dup = dd.from_pandas(pdf.assign(rid=pdf["id"] % 7), npartitions=2)
    with pytest.raises(ParameterError, match="duplicates"):
        pdask.add_noise(dup, ["x"], GAU, seed=SEED, row_id="rid", nulls="keep")
    with pytest.raises(ParameterError, match="2 column name"):
        pdask.add_noise(da.zeros((10, 2), chunks=5), ["a"], GAU, seed=SEED)
    with pytest.raises(ParameterTypeError, match="data"):
        pdask.add_noise(pdf, ["x"], GAU, seed=SEED)
    with pytest.raises(ParameterError):
        pdask.add_noise(da.from_array(np.array([1.0, np.inf])), "x", GAU, seed=SEED).compute()


def test_secure_mode_and_mechanism_dict(client):
    cfg = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}
    x = np.linspace(0, 1, 3000)
    m = pio.resolve(cfg).mechanism
    got = pdask.add_noise(da.from_array(x, chunks=700), "x", cfg, seed=SEED).compute()
    assert np.array_equal(got, m.release(x, rng=pio.column_stream(SEED, "x")))
    y = pdask.add_noise(da.from_array(x, chunks=700), "x", cfg, secure=True, granularity=2**-10).compute()
    assert np.all(y * 2**10 == np.round(y * 2**10))
    # Laplace noise of the mechanism's scale: E|Z| = b; 3000 draws put the mean within 10 % (> 5 sd)
    assert abs(np.mean(np.abs(y - x)) / m.noise.scale - 1) < 0.1
    with pytest.raises(ParameterError, match="seed"):
        pdask.add_noise(da.from_array(x), "x", cfg, secure=True, seed=1)
