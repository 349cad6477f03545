"""puffer.dask on a real distributed.LocalCluster with 2 worker processes: bitwise equality with
puffer.add_noise on the release's keyed streams for any chunking, row ids, the ledger entry,
secure noise drawn once per release, bad inputs. One cluster per module."""
from __future__ import annotations

import hashlib
import json

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import puffer
import puffer.dask as pdask
import puffer.io as pio
from puffer.errors import ParameterError, ParameterTypeError

KEY = hashlib.sha256(b"puffer test release key").digest()  # a 256-bit test key given as bytes
GAU = ("gaussian", {"sigma": 1.5})
N = 50_000
_n = iter(range(10**6))


def release(data, cols, mech, tmp_path, **kw):
    """(noisy collection computed, pending ledger entry, column -> the release's stream)."""
    led = tmp_path / f"ledger{next(_n)}.jsonl"
    kw.setdefault("key", KEY)
    out = pdask.add_noise(data, cols, mech, ledger=led, **kw)
    entries = pio.read_ledger(led)
    assert [e["event"] for e in entries] == ["pending", "completed"]
    e = entries[0]
    assert e["path"] == "dask"
    cols = [cols] if isinstance(cols, str) else cols
    # column c -> the documented definition: x at positions p, p + 1, ... gets (round(x/g) + Z) g, Z
    # the values of the recorded lattice law on release_stream(key, nonce, c) there
    plan = None if e["noise_lattice"] is None else puffer.lattice.LatticePlan.from_description(e["noise_lattice"])

    def ref(c):
        def noisy(x, position=0):
            s = pio.release_stream(pio.as_key(KEY), e["nonce"], c)
            s.position = int(position)
            return puffer.lattice.add_lattice_noise(np.asarray(x, dtype=np.float64), plan, rng=s)
        return noisy
    st = {} if e["nonce"] is None else {c: ref(c) for c in cols}
    return out.compute(), e, st


def test_array_any_chunking(client, tmp_path):
    x = np.random.default_rng(1).normal(size=N)
    for chunks in (N, 4096, 7777):
        got, e, st = release(da.from_array(x, chunks=chunks), "x", GAU, tmp_path)
        assert np.array_equal(got, st["x"](x)), chunks
        assert e["rows"] == N
    m = np.random.default_rng(2).normal(size=(N, 3)).astype(np.float32)
    for chunks in ((N, 3), (5000, 1), (3333, 2)):
        got, e, st = release(da.from_array(m, chunks=chunks), ["a", "b", "c"], GAU, tmp_path)
        want = np.stack([st[c](m[:, j]) for j, c in enumerate("abc")], axis=1)
        assert got.dtype == np.float64 and np.array_equal(got, want), chunks   # lattice points: float64


def test_dataframe_positional_and_row_id(client, tmp_path):
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"id": np.arange(N, dtype=np.int64), "x": rng.normal(size=N) * 10,
                        "k": rng.integers(0, 50, size=N), "s": ["a"] * N})
    digests = set()
    for parts in (1, 6):
        got, e, st = release(dd.from_pandas(pdf, npartitions=parts), ["x", "k"], GAU, tmp_path)
        assert np.array_equal(got["x"].to_numpy(), st["x"](pdf["x"].to_numpy()))
        assert np.array_equal(got["k"].to_numpy(), st["k"](pdf["k"].to_numpy(float)))
        assert got["s"].tolist() == pdf["s"].tolist()
        digests.add(e["input_sha256"])
    assert len(digests) == 2  # the content digest is per partition layout (see puffer.publish.digest)
    shuffled = pdf.sample(frac=1.0, random_state=0)
    got, _, st = release(dd.from_pandas(shuffled, npartitions=5, sort=False), ["x"], GAU, tmp_path, row_id="id")
    got = got.sort_values("id")
    assert np.array_equal(got["x"].to_numpy(), st["x"](pdf["x"].to_numpy()))


def test_nulls_and_bad_inputs(client, tmp_path):
    pdf = pd.DataFrame({"id": np.arange(100), "x": np.linspace(0, 1, 100), "s": ["a"] * 100})
    pdf.loc[7, "x"] = np.nan
    ddf = dd.from_pandas(pdf, npartitions=3)
    led = tmp_path / "l.jsonl"
    with pytest.raises(ParameterError, match="missing value at row 7"):
        pdask.add_noise(ddf, ["x"], GAU, key=KEY, ledger=led)
    kept, _, st = release(ddf, ["x"], GAU, tmp_path, nulls="keep")
    full = st["x"](pdf["x"].fillna(0.0).to_numpy())
    ok = ~pdf["x"].isna().to_numpy()
    assert np.isnan(kept["x"][7]) and np.array_equal(kept["x"].to_numpy()[ok], full[ok])
    with pytest.raises(ParameterError, match="puffer keygen"):
        pdask.add_noise(ddf, ["x"], GAU, seed=99, ledger=led)
    with pytest.raises(ParameterTypeError, match="puffer keygen"):
        pdask.add_noise(ddf, ["x"], GAU, key=99, ledger=led)
    with pytest.raises(ParameterError, match="'nope'"):
        pdask.add_noise(ddf, ["nope"], GAU, key=KEY, ledger=led)
    with pytest.raises(ParameterTypeError, match="column 's'"):
        pdask.add_noise(ddf, ["s"], GAU, key=KEY, ledger=led)
    dup = dd.from_pandas(pdf.assign(rid=pdf["id"] % 7), npartitions=2)
    with pytest.raises(ParameterError, match="duplicates"):
        pdask.add_noise(dup, ["x"], GAU, key=KEY, row_id="rid", nulls="keep", ledger=led)
    neg = dd.from_pandas(pdf.assign(rid=-pdf["id"] - 1), npartitions=2)
    with pytest.raises(ParameterError, match=r"row ids >= 0 \(minimum -100\)"):
        pdask.add_noise(neg, ["x"], GAU, key=KEY, row_id="rid", nulls="keep", ledger=led)
    holes = dd.from_pandas(pdf.assign(rid=pdf["id"].astype("Int64").mask(pdf["id"] % 50 == 3)), npartitions=2)
    with pytest.raises(ParameterError, match=r"a column without nulls \(2 null ids\)"):
        pdask.add_noise(holes, ["x"], GAU, key=KEY, row_id="rid", nulls="keep", ledger=led)
    with pytest.raises(ParameterError, match="2 column name"):
        pdask.add_noise(da.zeros((10, 2), chunks=5), ["a"], GAU, key=KEY, ledger=led)
    with pytest.raises(ParameterTypeError, match="data"):
        pdask.add_noise(pdf, ["x"], GAU, key=KEY, ledger=led)
    with pytest.raises(ParameterError):
        pdask.add_noise(da.from_array(np.array([1.0, np.inf])), "x", GAU, key=KEY, ledger=led)
    assert not led.exists() or pio.read_ledger(led) == []  # nothing released


def test_secure_mode_once_per_release_and_mechanism_dict(client, tmp_path):
    cfg = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}
    x = np.arange(3000) % 3 * 1.0  # answers of the pair query, in [0, 2]
    m = pio.resolve(cfg, lattice=True).mechanism  # lattice noise: the least noise certified on a lattice
    got, e, st = release(da.from_array(x, chunks=700), "x", cfg, tmp_path, per_unit=True)
    assert np.array_equal(got, st["x"](x))
    led = tmp_path / "sec.jsonl"
    out = pdask.add_noise(da.from_array(x, chunks=700), "x", cfg, secure=True, granularity=2**-10, per_unit=True,
                          ledger=led)
    y = out.compute()
    assert np.array_equal(y, out.compute())  # a second computation draws nothing new
    assert np.all(y * 2**10 == np.round(y * 2**10))
    # Laplace noise of the mechanism's scale: E|Z| = b; 3000 draws put the mean within 10 % (> 5 sd)
    assert abs(np.mean(np.abs(y - x)) / m.noise.scale - 1) < 0.1
    again = pdask.add_noise(da.from_array(x, chunks=300), "x", cfg, secure=True, granularity=2**-10,
                            per_unit=True, ledger=led, allow_uncomposed=True).compute()
    assert np.mean(again == y) < 0.05  # another release (a second PP release needs the allowance): fresh noise
    assert [e["event"] for e in pio.read_ledger(led)] == ["pending", "completed"] * 2
    with pytest.raises(ParameterError, match="key"):
        pdask.add_noise(da.from_array(x), "x", cfg, secure=True, key=KEY, per_unit=True, ledger=led)
    with pytest.raises(ParameterError, match="privacy unit"):
        pdask.add_noise(da.from_array(x), "x", cfg, key=KEY, ledger=led)


def test_units_records(client, tmp_path):
    """unit= / order=: one noisy answer per unit (the Markov sum), the unit's position as stream
    position; a unit with a wrong number of records or a value off the states is refused."""
    cfg = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}
    rng = np.random.default_rng(5)
    hh = np.repeat(np.arange(300), 4)
    pdf = pd.DataFrame({"hh": hh, "t": np.tile(np.arange(4), 300), "kwh": rng.integers(0, 2, hh.size) * 1.0})
    pdf = pdf.sample(frac=1.0, random_state=1)
    got, e, st = release(dd.from_pandas(pdf, npartitions=4, sort=False), "kwh", cfg, tmp_path, unit="hh", order="t")
    sums = pdf.groupby("hh")["kwh"].sum().sort_index()
    assert got["hh"].tolist() == list(range(300))  # sorted by unit, as the file engine writes it
    want = st["kwh"](sums.to_numpy())  # unit id = stream position
    assert list(got.columns) == ["hh", "kwh_sum_noisy"]  # the noisy sum, named for what it is
    assert np.array_equal(got["kwh_sum_noisy"].to_numpy(), want)
    assert e["rows"] == 300 and e["unit"]["column"] == "hh" and e["unit"]["records_per_unit"] == 4
    with pytest.raises(ParameterError, match="exactly T = 4"):
        pdask.add_noise(dd.from_pandas(pdf.iloc[1:], npartitions=3), "kwh", cfg, key=KEY, unit="hh", order="t",
                        ledger=tmp_path / "bad.jsonl")
    with pytest.raises(ParameterError, match="state values"):
        pdask.add_noise(dd.from_pandas(pdf.assign(kwh=pdf["kwh"] * 2), npartitions=3), "kwh", cfg, key=KEY,
                        unit="hh", order="t", ledger=tmp_path / "bad.jsonl")
    assert [x["event"] for x in pio.read_ledger(tmp_path / "bad.jsonl")] == []
    assert json.dumps(e)  # the entry is JSON


def test_ledger_on_by_default_and_zero_sensitivity_refused(client, tmp_path, monkeypatch):
    """No ledger= : the entry goes to puffer-ledger.jsonl in the working folder (never no record).
    A periodic chain has sensitivity 0: its release would be the raw data, refused unless allowed."""
    monkeypatch.chdir(tmp_path)
    x = np.arange(400) % 3 * 1.0
    pdask.add_noise(da.from_array(x, chunks=150), "x", GAU, key=KEY)
    assert [e["event"] for e in pio.read_ledger(tmp_path / "puffer-ledger.jsonl")] == ["pending", "completed"]
    periodic = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0, 1], [1, 0]]}, "target": {"eps": 1.0}}
    pdf = pd.DataFrame({"hh": np.repeat(np.arange(50), 4), "t": np.tile(np.arange(4), 50),
                        "kwh": np.tile([0.0, 1.0], 100)})
    with pytest.raises(ParameterError, match="allow_unnoised"):
        pdask.add_noise(dd.from_pandas(pdf, npartitions=2), "kwh", periodic, key=KEY, unit="hh", order="t",
                        ledger=tmp_path / "z.jsonl")
    out = pdask.add_noise(dd.from_pandas(pdf, npartitions=2), "kwh", periodic, key=KEY, unit="hh", order="t",
                          ledger=tmp_path / "z.jsonl", allow_unnoised=True).compute()
    assert out["kwh_sum_noisy"].tolist() == [2.0] * 50  # the raw sums, as allowed and recorded
    assert pio.read_ledger(tmp_path / "z.jsonl")[0]["config"]["allow_unnoised"] is True


def test_answers_keyed_by_string_units(client, tmp_path):
    """per_unit=True with unit=: each row is one unit's answer; its noise is the stream value at
    the unit's position (a hash of the id), whatever the row order; duplicate units are refused."""
    cfg = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}
    ids = np.array([f"household-{i}" for i in range(60)], dtype=object)
    pdf = pd.DataFrame({"hh": ids, "x": np.arange(60) % 3 * 1.0}).sample(frac=1.0, random_state=2)
    got, e, st = release(dd.from_pandas(pdf, npartitions=3, sort=False), "x", cfg, tmp_path, unit="hh",
                         per_unit=True)
    pos = pio.unit_positions(got["hh"].to_numpy())
    want = []
    for p, v in zip(pos, got["hh"].map(dict(zip(pdf["hh"], pdf["x"])))):
        want.append(st["x"](np.array([v]), p)[0])
    assert np.array_equal(got["x"].to_numpy(), np.array(want))
    assert e["unit"]["column"] == "hh" and e["unit"]["mode"] == "answers"
    dup = pd.concat([pdf, pdf.iloc[:1]])
    with pytest.raises(ParameterError, match="duplicates"):
        pdask.add_noise(dd.from_pandas(dup, npartitions=2), "x", cfg, key=KEY, unit="hh", per_unit=True,
                        ledger=tmp_path / "dup.jsonl")


def test_a_refused_release_leaves_no_unit_secret(client, tmp_path):
    """Issue 42 item 2 on Dask (the file engine had it): a refused release with a unit column left
    L.jsonl.unit-secret behind. Refused before the release began (duplicate unit ids) or in the
    workers (1.5, no value of the pair's query): no secret left; a recorded release keeps it."""
    cfg = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}
    led, secret = tmp_path / "L.jsonl", tmp_path / "L.jsonl.unit-secret"
    for hh, x, match in (([1, 1, 2], [0.0, 1.0, 2.0], "duplicates"), ([1, 2, 3], [0.0, 1.5, 2.0], "integer")):
        with pytest.raises(ParameterError, match=match):
            pdask.add_noise(dd.from_pandas(pd.DataFrame({"hh": hh, "x": x}), npartitions=2), "x", cfg, key=KEY,
                            unit="hh", per_unit=True, ledger=led)
        assert not secret.exists(), match
    assert not led.exists() or "completed" not in [e["event"] for e in pio.read_ledger(led)]
    pdask.add_noise(dd.from_pandas(pd.DataFrame({"hh": [1, 2, 3], "x": [0.0, 1.0, 2.0]}), npartitions=2), "x", cfg,
                    key=KEY, unit="hh", per_unit=True, ledger=led)
    assert secret.exists()


def test_records_output_has_a_unique_index_and_the_shuffle_chatter_stays_quiet(client, tmp_path):
    """Issue 42 item 4: the records output's index restarted at 0 in every partition (300 units in
    4 partitions: 0, 0, 0, 1, 1, ...), and the P2P shuffle's routine scheduler lines ("Shuffle ...
    initialized by task ...", "... deactivated due to stimulus ...") reached the user's log. Now
    the index is 0..n-1 in unit order, per-unit answers keep the input's own index, and a handler
    on distributed's shuffle logger sees none of those lines (other records of it still pass)."""
    import logging
    import warnings

    cfg = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}
    hh = np.repeat(np.arange(300), 4)
    pdf = pd.DataFrame({"hh": hh, "t": np.tile(np.arange(4), 300),
                        "kwh": np.random.default_rng(5).integers(0, 2, hh.size) * 1.0}).sample(frac=1.0, random_state=1)
    seen: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    log = logging.getLogger("distributed.shuffle._scheduler_plugin")
    grab = Grab(level=logging.DEBUG)
    log.addHandler(grab)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got, e, _ = release(dd.from_pandas(pdf, npartitions=4, sort=False), "kwh", cfg, tmp_path, unit="hh",
                                order="t")
        log.warning("Shuffle abc restarted due to stimulus 'x'")  # not routine: passes the filter
    finally:
        log.removeHandler(grab)
    assert got["hh"].tolist() == list(range(300))
    assert got.index.tolist() == list(range(300))
    assert not [m for m in seen if "initialized by task" in m or "deactivated due to stimulus" in m], seen
    assert seen == ["Shuffle abc restarted due to stimulus 'x'"]
    assert not [w for w in caught if "shuffle" in str(w.message).lower()]
    # answers: the input's own index, row for row
    cfg2 = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}
    ans = pd.DataFrame({"hh": np.arange(60), "x": np.arange(60) % 3 * 1.0}, index=np.arange(60) * 10 + 7)
    got2, _, _ = release(dd.from_pandas(ans.sample(frac=1.0, random_state=2), npartitions=3, sort=False), "x", cfg2,
                         tmp_path, unit="hh", per_unit=True)
    assert got2.index.is_unique and sorted(got2.index) == sorted(ans.index)
    assert (got2["hh"] == ans.loc[got2.index, "hh"]).all()
