"""Issue 31 §2: totals by the units themselves. Each red-team attack of the issue (each accepted
by the totals per column name of before) is refused; disjoint unit sets (refused before) compose
in parallel in one ledger.

Oracles: the households' ids themselves (which releases touch which households, counted with
numpy), an independent keyed BLAKE2b of the ids (hashlib) for the recorded unit sets, and the
composition rules of Pierquin et al. 2024 (Prop E.1, App. E.1) applied by hand."""
from __future__ import annotations

import base64
import hashlib
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import LedgerError, ParameterError, PufferIOError

MARKOV = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}
LAP = ("laplace", {"b": 1.0})


def readings(path, units, *, column="household", T=4, seed=0):
    units = np.asarray(units, dtype=np.int64)
    rng = np.random.default_rng(seed)
    hh = np.repeat(units, T)
    t = np.tile(np.arange(T, dtype=np.int64), units.size)
    x = rng.integers(0, 2, hh.size).astype(np.float64)
    pq.write_table(pa.table({column: hh, "t": t, "kwh": x}), path)
    return path


@pytest.fixture
def setup(tmp_path):
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps(MARKOV))
    key = tmp_path / "k.key"
    pio.keygen(key)
    return {"tmp": tmp_path, "fw": fw, "key": key, "led": tmp_path / "l.jsonl"}


def pp(s, src, out, column="household", **kw):
    return pio.noise_file(src, s["tmp"] / f"out_{out}", "kwh", s["fw"], ledger=s["led"], unit=column, order="t",
                          key=s["key"], **kw)


def totals(s):
    return pio.unit_totals(pio.read_ledger(s["led"]), ledger=str(s["led"]))


def test_renamed_unit_column_is_the_same_units(setup):
    """Issue: 300 releases as hh_0 ... hh_299 each reported eps = 1."""
    s = setup
    pp(s, readings(s["tmp"] / "a.parquet", range(300)), "a.parquet")
    renamed = readings(s["tmp"] / "b.parquet", range(300), column="hh_1", seed=1)
    with pytest.raises(ParameterError, match="no total guarantee: 2 releases on the same units"):
        pp(s, renamed, "b.parquet", column="hh_1")
    # one household in common is enough
    with pytest.raises(ParameterError, match="allow_uncomposed"):
        pp(s, readings(s["tmp"] / "c.parquet", [299, 300, 301], column="hh_2"), "c.parquet", column="hh_2")
    # string ids with the same text are the same units
    t = pq.read_table(renamed)
    pq.write_table(t.set_column(0, "hh_1", pa.array([str(v) for v in t.column(0).to_pylist()])),
                   s["tmp"] / "d.parquet")
    with pytest.raises(ParameterError, match="allow_uncomposed"):
        pp(s, s["tmp"] / "d.parquet", "d.parquet", column="hh_1")
    assert list(totals(s)) == ["household"] and totals(s)["household"]["guarantee"]["eps"] == 1.0


def test_per_unit_relabel_and_plain_noise_touch_every_unit(setup):
    """Issue: `--per-unit` without `--unit`, and plain `--noise laplace` on the raw readings next
    to a PP release, were accepted while `show` still reported eps = 1."""
    s = setup
    src = readings(s["tmp"] / "a.parquet", range(50))
    pp(s, src, "a.parquet")
    sums = pa.table({"kwh": np.bincount(np.repeat(np.arange(50), 4), weights=pq.read_table(src).column(2))})
    pq.write_table(sums, s["tmp"] / "sums.parquet")
    with pytest.raises(ParameterError, match="no total guarantee: 2 releases"):
        pio.noise_file(s["tmp"] / "sums.parquet", s["tmp"] / "b.parquet", "kwh", s["fw"], ledger=s["led"],
                       per_unit=True, key=s["key"])
    with pytest.raises(ParameterError, match="uncalibrated noise"):
        pio.noise_file(src, s["tmp"] / "c.parquet", "kwh", LAP, ledger=s["led"], key=s["key"])
    assert cli.main(["noise", str(src), str(s["tmp"] / "c.parquet"), "--column", "kwh", "--noise", "laplace",
                     "--scale", "1", "--ledger", str(s["led"])]) == 3
    # allowed, it is recorded, and the total is none from then on
    pio.noise_file(src, s["tmp"] / "c.parquet", "kwh", LAP, ledger=s["led"], key=s["key"], allow_uncomposed=True)
    tot = totals(s)
    assert list(tot) == ["(row) + household"] and tot["(row) + household"]["guarantee"] is None
    # plain-noise releases alone claim nothing, so they need no allowance
    led2 = s["tmp"] / "plain.jsonl"
    for k in range(3):
        pio.noise_file(src, s["tmp"] / f"p{k}.parquet", "kwh", LAP, ledger=led2)


def test_one_allowance_covers_one_release(setup):
    """Issue: one --allow-uncomposed let 50 of 50 later releases through without record."""
    s = setup
    src = readings(s["tmp"] / "a.parquet", range(40))
    pp(s, src, "r0.parquet")
    pp(s, src, "r1.parquet", allow_uncomposed=True)
    for k in range(2, 5):
        with pytest.raises(ParameterError, match="covers it alone"):
            pp(s, src, f"r{k}.parquet")
        pp(s, src, f"r{k}.parquet", allow_uncomposed=True)
    pending = [e for e in pio.read_ledger(s["led"]) if e.get("event") == "pending"]
    assert [e["allow_uncomposed"] for e in pending] == [False, True, True, True, True]
    assert totals(s)["household"]["releases"] == 5


def test_aborted_release_rerun_is_counted(setup, monkeypatch):
    """Issue: the rename failed (exit 6), --rerun ID published it, the totals counted neither and
    the next PP release was accepted with no flag while two independent copies were out."""
    from puffer.publish.engines import file as F

    s = setup
    src = readings(s["tmp"] / "a.parquet", range(30))
    real = os.replace

    def broken(a, b):
        if str(b).endswith("jan.parquet"):
            raise OSError(5, "Input/output error")
        return real(a, b)

    monkeypatch.setattr(F.os, "replace", broken)
    with pytest.raises(PufferIOError, match="publishing the output"):
        pp(s, src, "jan.parquet")
    monkeypatch.setattr(F.os, "replace", real)
    rid = next(e["release_id"] for e in pio.read_ledger(s["led"]) if e.get("event") == "pending")
    assert [e.get("outcome") for e in pio.read_ledger(s["led"]) if e.get("event") == "resolved"] == ["aborted"]
    assert totals(s) == {}  # not published: counts for nothing
    e = pp(s, src, "jan.parquet", rerun=rid)
    assert e["rerun_of"] == rid and e["composition"]["releases"] == 1
    assert totals(s)["household"]["releases"] == 1
    with pytest.raises(ParameterError, match="no total guarantee: 2 releases"):
        pp(s, src, "feb.parquet")
    # a second re-run of a release that counts adds nothing
    pp(s, src, "jan2.parquet", rerun=rid)
    assert totals(s)["household"]["releases"] == 1


def test_disjoint_unit_sets_compose_in_parallel(setup, capsys):
    """Issue: two releases on disjoint sets of households into one ledger were refused, so a
    monthly or per-region publication could not be kept in one ledger."""
    s = setup
    north = readings(s["tmp"] / "north.parquet", range(0, 150))
    south = readings(s["tmp"] / "south.parquet", range(150, 300), seed=1)
    pp(s, north, "n.parquet")
    e = pp(s, south, "s.parquet", new_units=True)  # new units to the ledger's registry (issue 38)
    assert e["composition"]["total"]["eps"] == 1.0 and "Prop E.1" in e["composition"]["theorem"]
    tot = totals(s)
    assert sorted(tot) == ["household", "household #2"]
    assert [t["units"] for t in tot.values()] == [150, 150] and all(t["releases"] == 1 for t in tot.values())
    # a third region overlapping one household of the north is refused ...
    with pytest.raises(ParameterError, match="2 releases on the same units"):
        pp(s, readings(s["tmp"] / "x.parquet", [149, 300, 301]), "x.parquet")
    # ... and DP-type guarantees compose where they overlap (sequential composition), in
    # parallel where they do not: units in both of two eps = 0.5 pure-DP releases have eps 1
    from puffer.guarantees import PureDP
    from puffer.publish.unitsets import UnitHasher, describe_units

    h = UnitHasher(bytes(32), "test")
    entries = [{"event": "pending", "release_id": f"r{k}", "columns": ["x"], "dim": 1,
                "guarantee": PureDP(0.5).to_dict(), "unit": {"column": "hh"},
                "units": describe_units(h.unit_set(np.asarray(ids)), h, "", f"r{k}")}
               for k, ids in enumerate((range(0, 20), range(10, 30)))]
    dp = pio.unit_totals(entries)
    assert [(t["units"], t["releases"], t["guarantee"]["type"]) for t in dp.values()] == [(10, 2, "PureDP")]
    assert 1.0 <= dp["hh"]["guarantee"]["eps"] <= 1.0 + 1e-12  # 0.5 + 0.5, rounded up by the accountant
    assert "sequential composition" in dp["hh"]["theorem"]


def test_unit_sets_reveal_nothing_and_large_sets_live_beside_the_ledger(setup, monkeypatch, capsys):
    s = setup
    ids = np.arange(1000, 1100)
    pp(s, readings(s["tmp"] / "a.parquet", ids), "a.parquet")
    e = next(x for x in pio.read_ledger(s["led"]) if x.get("event") == "pending")
    u = e["units"]
    assert u["kind"] == "ids" and u["count"] == 100
    text = s["led"].read_text()
    assert "1050" not in text.replace(e["release_id"], "")  # no id in clear
    # the hashes are keyed BLAKE2b of the ids' text under the ledger's secret (independent check)
    doc = json.loads((s["tmp"] / "l.jsonl.unit-secret").read_text())
    assert oct(os.stat(s["tmp"] / "l.jsonl.unit-secret").st_mode & 0o777) == "0o600"
    want = sorted(int.from_bytes(hashlib.blake2b(str(i).encode(), key=bytes.fromhex(doc["secret"]), digest_size=8,
                                                 person=b"puffer-unit-v1").digest(), "little") for i in ids)
    got = np.frombuffer(base64.b64decode(u["ids"]), dtype="<u8").tolist()
    assert got == want and u["secret"] == doc["id"]
    # a large set goes to a side file whose digest the entry records; removing or editing it fails
    from puffer.publish import unitsets

    monkeypatch.setattr(unitsets, "INLINE_MAX", 10)
    e2 = pp(s, readings(s["tmp"] / "b.parquet", np.arange(2000, 2050)), "b.parquet", new_units=True)
    side = s["tmp"] / e2["units"]["file"]
    assert side.stat().st_size == 8 * 50 and "ids" not in e2["units"]
    assert totals(s)["household #2"]["units"] == 50
    data = side.read_bytes()
    side.write_bytes(data[:-8] + bytes(8))
    with pytest.raises(LedgerError, match=f"entry {e2['seq']}.*altered"):
        pio.verify(s["led"])
    side.unlink()
    capsys.readouterr()
    assert cli.main(["ledger", "verify", str(s["led"])]) == 7
    assert "missing beside the ledger" in capsys.readouterr().err


def test_puffer_ledger_env_is_the_one_ledger(setup, monkeypatch):
    s = setup
    src = readings(s["tmp"] / "a.parquet", range(20))
    one = s["tmp"] / "one.jsonl"
    monkeypatch.setenv("PUFFER_LEDGER", str(one))
    with pytest.raises(ParameterError, match="PUFFER_LEDGER"):
        pio.noise_file(src, s["tmp"] / "a_out.parquet", "kwh", s["fw"], ledger=s["tmp"] / "other.jsonl",
                       unit="household", order="t")
    assert cli.main(["noise", str(src), str(s["tmp"] / "a_out.parquet"), "--column", "kwh", "--mechanism",
                     str(s["fw"]), "--unit", "household", "--order", "t"]) == 0
    assert len(pio.read_ledger(one)) == 2 and not (s["tmp"] / "puffer-ledger.jsonl").exists()
    with pytest.raises(ParameterError, match="no total guarantee"):  # a second folder: same ledger
        sub = s["tmp"] / "elsewhere"
        sub.mkdir()
        pio.noise_file(src, sub / "b.parquet", "kwh", s["fw"], unit="household", order="t")
