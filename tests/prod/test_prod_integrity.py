"""Issue 38: totals that a spelling cannot split, a report that shows what it checked, keys that
are keys, staging files that cannot be completed, and a ledger whose cost does not grow.

Oracles: the re-spelling grid of the issue (every spelling refused or one with the registered
unit, by construction), the bytes of the files themselves (what the report shows vs what was
verified), zlib and exact byte counts for the weak keys, pyarrow's reader for the staging file,
and the ledger's own text for what it must not hold."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer.errors import ParameterError, ParameterTypeError

PAIR = {"model": {"kind": "correlated_pair", "p": 0.5, "rho": 0.3}, "target": {"eps": 1.0}}


def answers(tmp_path, ids, name, *, ledger, **kw):
    """One per-unit release of ``ids`` (answers in [0, 2]) into ``ledger``."""
    x = np.linspace(0, 2, len(ids))
    src = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"hh": ids, "x": x}), src)
    return pio.noise_file(src, tmp_path / f"{name}_out.parquet", "x", PAIR, ledger=ledger, unit="hh",
                          per_unit=True, **kw)


# ---------------------------------------------------------------------------------- item 1
SPELLINGS = ["17.0", "17.00", "17e0", "1.7e1", "0x11", "\uff11\uff17", "\u0661\u0667", "17\u200b", "\u200b17",
             "0017", "+17", "-17", " 17", "17 ", "17\n", "1_7", "\u0967\u096d", "17\ufeff"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_respelled_unit_id_is_refused_naming_it(tmp_path, spelling):
    """Issue 38 §1: each spelling of household 17 was taken as a new unit (300 releases of the same
    50 households, each at eps = 1 in its own population). Every one is now refused, naming it."""
    led = tmp_path / "l.jsonl"
    answers(tmp_path, list(range(1, 51)), "a", ledger=led)
    ids = [str(i) for i in range(1, 51)]
    ids[16] = spelling
    with pytest.raises(ParameterError, match="parameter 'unit'.*canonical"):
        answers(tmp_path, ids, "b", ledger=led)
    # the canonical spellings are the registered units: a second Pufferfish release of them is
    # refused by the totals (the same 50 households), never taken as new units
    with pytest.raises(ParameterError, match="no total guarantee"):
        answers(tmp_path, [str(i) for i in range(1, 51)], "c", ledger=led)


def test_the_averaging_attack_ends_in_a_refusal(tmp_path):
    """300 releases of 50 households spelled 17.0, 17.00, ... were accepted and averaging gave back
    72 % of the exact sums. Now the second release is refused whatever the spelling: a float
    spelling is not a canonical id, and a new string spelling is not a registered unit."""
    led = tmp_path / "l.jsonl"
    answers(tmp_path, list(range(1, 51)), "r0", ledger=led)
    accepted = 0
    for k in range(1, 6):
        for ids in ([f"{i}." + "0" * k for i in range(1, 51)], [f"hh{i}" + "'" * k for i in range(1, 51)]):
            try:
                answers(tmp_path, ids, f"r{k}", ledger=led)
                accepted += 1
            except ParameterError as exc:
                assert exc.param in ("unit", "new_units")
    assert accepted == 0
    assert len(pio.read_ledger(led)) == 2  # the first release only (pending, completed)


def test_new_units_are_declared_recorded_and_warned_when_registered_ones_are_absent(tmp_path):
    """Units never released into the ledger need new_units=True (recorded); a release whose units
    are mostly new while registered ones are absent says so, in its entry and as a warning."""
    led = tmp_path / "l.jsonl"
    e = answers(tmp_path, list(range(1, 51)), "a", ledger=led)
    assert e["unit_registry"] == {"registered": 0, "new": 50, "learned": True, "declared_new": False, "absent": 0}
    with pytest.raises(ParameterError, match="new_units"):
        answers(tmp_path, list(range(51, 101)), "b", ledger=led)
    with pytest.warns(UserWarning, match="50 registered units are absent"):
        e = answers(tmp_path, list(range(51, 101)), "b", ledger=led, new_units=True)
    reg = e["unit_registry"]
    assert (reg["registered"], reg["new"], reg["absent"], reg["declared_new"]) == (50, 50, 50, True)
    assert "re-spellings" in reg["warning"]
    # registered now: a third release of 1..100 needs no declaration and warns nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = answers(tmp_path, list(range(1, 101)), "c", ledger=led, allow_uncomposed=True)
    assert e["unit_registry"]["new"] == 0
    with pytest.raises(ParameterError, match="new_units"):  # declared, but nothing is new: an ignored option
        answers(tmp_path, list(range(1, 101)), "d", ledger=led, allow_uncomposed=True, new_units=True)


def test_canonical_forms_map_one_unit_and_keep_others_apart():
    from puffer.publish.registry import canonical_id
    from puffer.publish.unitsets import UnitHasher

    h = UnitHasher(os.urandom(32), "test").hashes
    assert h([17]).tolist() == h(["17"]).tolist() == h(np.array([17], dtype=np.uint16)).tolist()
    assert len(set(h([17, "17a", "1 7", "hh-17", "HH-17", "caf\u00e9"]).tolist())) == 6
    assert canonical_id("caf\u00e9") == "caf\u00e9"
    with pytest.raises(ParameterError, match="NFC"):
        canonical_id("cafe\u0301")  # the same text decomposed
    with pytest.raises(ParameterError):
        h([-17])


def test_dask_string_conversion_does_not_merge_1_and_the_string_1(tmp_path):
    """Dask converts an object column to strings: ids 1 and "1" were published as one household."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import puffer.dask as pdk

    df = dd.from_pandas(pd.DataFrame({"hh": [1, "1", 2, "3"], "x": [0.1, 0.2, 0.3, 0.4]}), npartitions=1)
    with pytest.raises(ParameterTypeError, match="mixed types"):
        pdk.add_noise(df, "x", ("laplace", {"b": 1.0}), unit="hh", ledger=tmp_path / "l.jsonl")
    assert not (tmp_path / "l.jsonl").exists()


# ---------------------------------------------------------------------------------- item 2
def test_show_reports_only_the_bytes_it_verified(tmp_path, monkeypatch, capsys):
    """Issue 38 §2: `ledger show --pub P --checkpoint C` verified one read of the file and reported
    from another: swapping the file in between (inotify) printed "authentic" over a cut ledger.
    Here the file is swapped right after the first read: the report is the verified ledger's."""
    from puffer import cli
    from puffer.publish import ledger as L

    led = tmp_path / "l.jsonl"
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 20)}), src)
    for k in range(3):
        pio.noise_file(src, tmp_path / f"o{k}.parquet", "x", ("laplace", {"b": 1.0}), ledger=led)
    genuine = led.read_bytes()
    cut = b"".join(genuine.splitlines(keepends=True)[:4])  # 2 of the 3 releases
    ids = [e["release_id"] for e in pio.read_ledger(led) if e["event"] == "pending"]
    real = L.Ledger._data
    calls = []

    def swapped(self):
        data = real(self)
        calls.append(len(data))
        if self.path == str(led) and len(calls) == 1:
            led.write_bytes(cut)  # the attacker swaps the file after the first read
        return data

    monkeypatch.setattr(L.Ledger, "_data", swapped)
    assert cli.main(["ledger", "show", str(led), "--json"]) == 0
    import json

    rep = json.loads(capsys.readouterr().out)
    assert rep["verify"]["entries"] == 6
    assert [r["release_id"] for r in rep["releases"]] == ids  # all three: the bytes verified
    led.write_bytes(genuine)
    calls.clear()
    rep = __import__("puffer.publish.report", fromlist=["x"]).ledger_report(led)
    assert len(rep["releases"]) == 3 and len(calls) == 1  # the ledger file is read once
