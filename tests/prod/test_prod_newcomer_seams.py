"""Issue 42, the seams left after the first pass: each test failed on the code before its fix.

Oracles: the query's values by enumeration (the pair's answers are 0, 1, 2; a Markov sum of T
state values), the files left in the ledger's folder, the exit code and stderr of a subprocess,
the ledger's entries as written.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import ParameterError

PAIR = {"model": {"kind": "correlated_pair", "p": 0.5, "rho": 0.3}, "target": {"eps": 1.0}}


def _markov(values):
    return {"model": {"kind": "markov_chain", "T": 2, "trans": [[0.8, 0.2], [0.3, 0.7]], "values": values},
            "target": {"eps": 1.0}}


# -- per-unit answers of an integer-valued query ---------------------------------------------

def test_a_fractional_answer_of_an_integer_valued_query_is_refused(tmp_path, capsys):
    """`--per-unit` took 2.5 ... here 1.5, inside the range [0, 2] of the pair's query, whose values
    are 0, 1, 2 (enumerated): not an answer of it. Refused naming the column, value and unit."""
    led = tmp_path / "L.jsonl"
    src = tmp_path / "a.parquet"
    pq.write_table(pa.table({"hh": [3, 4, 5], "x": [0.0, 1.5, 2.0]}), src)
    with pytest.raises(ParameterError, match=r"column 'x'.*1\.5 at unit 4.*integer-valued: an integer in \[0, 2\]"):
        pio.noise_file(src, tmp_path / "o.parquet", "x", PAIR, ledger=led, unit="hh", per_unit=True)
    assert not os.path.exists(tmp_path / "o.parquet")
    assert "completed" not in [e["event"] for e in pio.read_ledger(led)]
    fw = tmp_path / "pair.json"
    import json

    fw.write_text(json.dumps(PAIR))
    rc = cli.main(["noise", str(src), str(tmp_path / "o.parquet"), "--column", "x", "--mechanism", str(fw),
                   "--ledger", str(led), "--per-unit", "--allow-uncomposed"])
    assert rc == cli.EXIT_INPUT and "1.5 at row 1" in capsys.readouterr().err
    # the integer answers are released
    pq.write_table(pa.table({"hh": [3, 4, 5], "x": [0.0, 1.0, 2.0]}), src)
    e = pio.noise_file(src, tmp_path / "o.parquet", "x", PAIR, ledger=led, unit="hh", per_unit=True)
    assert e["rows"] == 3


def test_an_answer_off_the_lattice_of_the_query_is_refused_and_a_real_valued_query_takes_fractions(tmp_path):
    """States 3 and 7, T = 2: the sums are 6, 10, 14 (enumerated), so 8 (an integer in the range)
    is no answer; states 0 and 0.5: the sums 0, 0.5, 1 are not integers and 0.25 is only range-checked."""
    src = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [6.0, 8.0, 14.0]}), src)
    with pytest.raises(ParameterError, match=r"8\.0 at row 1.*6 \+ 4 k for an integer k in \[6, 14\]"):
        pio.noise_file(src, tmp_path / "o.parquet", "x", _markov([3.0, 7.0]), ledger=tmp_path / "L.jsonl",
                       per_unit=True)
    pq.write_table(pa.table({"x": [6.0, 10.0, 14.0]}), src)
    assert pio.noise_file(src, tmp_path / "o.parquet", "x", _markov([3.0, 7.0]), ledger=tmp_path / "L.jsonl",
                          per_unit=True, allow_uncomposed=True)["rows"] == 3
    pq.write_table(pa.table({"x": [0.0, 0.25, 1.0]}), src)
    assert pio.noise_file(src, tmp_path / "o2.parquet", "x", _markov([0.0, 0.5]), ledger=tmp_path / "L2.jsonl",
                          per_unit=True)["rows"] == 3
