"""Issue 31 §5: `puffer ledger show` says what a privacy officer signs off -- per release the
framework and Theta, the mechanism, Delta_G with its witness, noise and scale, files and
digests, signer; per population the total and its theorem (or why none) -- and its JSON has a
documented, stable shape (the show of before had no framework, witness, scale, files or
signer, and totals per column name).

Oracles: the mechanism calibrated directly (its sensitivity, witness, noise, guarantee), the
files' SHA-256 from hashlib, the key ids the keygen calls returned."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import puffer.io as pio
from puffer import cli

MARKOV = {"name": "smart meters", "model": {"kind": "markov_chain", "T": 4,
                                            "grid": {"stay_away": [0.7, 0.8], "stay_home": [0.6, 0.9]}},
          "target": {"eps": 1.0}}
RELEASE_KEYS = {"release_id", "status", "counted", "rerun_of", "time", "engine", "signer", "framework", "mechanism",
                "sensitivity", "noise", "scale", "guarantee", "theorem", "post_processing", "unit", "units",
                "columns", "rows", "files", "key", "nonce", "allow_uncomposed", "budget",
                "noise_lattice", "float_noise", "fit_on_release", "unit_registry"}


def sha(path):
    return "sha256:" + hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_show_for_a_privacy_officer(tmp_path, capsys):
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps(MARKOV))
    rng = np.random.default_rng(0)
    for name, ids in (("north", range(0, 30)), ("south", range(30, 60))):
        hh = np.repeat(np.asarray(ids), 4)
        pq.write_table(pa.table({"household": hh, "t": np.tile(np.arange(4), 30),
                                 "kwh": rng.integers(0, 2, hh.size).astype(float)}), tmp_path / f"{name}.parquet")
    key = pio.keygen(tmp_path / "k.key")
    signer = pio.signing_keygen(tmp_path / "s.key")
    led = tmp_path / "l.jsonl"
    for name in ("north", "south"):
        assert cli.main(["noise", str(tmp_path / f"{name}.parquet"), str(tmp_path / f"{name}_out.parquet"),
                         "--column", "kwh", "--mechanism", str(fw), "--unit", "household", "--order", "t",
                         "--key", str(tmp_path / "k.key"), "--sign", str(tmp_path / "s.key"), "--ledger",
                         str(led)] + (["--new-units"] if name == "south" else [])) == 0
    out = capsys.readouterr().out
    assert out.count("checkpoint (signed by key") == 2
    m = pio.resolve(str(fw), lattice=True).mechanism  # the least noise certified on a lattice
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(led), "--pub", str(tmp_path / "s.key.pub"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["puffer_ledger_report"] == 1 and set(rep) == {"puffer_ledger_report", "verify", "releases",
                                                             "populations", "units", "series"}
    assert rep["verify"]["authenticated"] and rep["verify"]["signer"] == signer.key_id
    assert len(rep["releases"]) == 2
    for r, name in zip(rep["releases"], ("north", "south")):
        assert set(r) == RELEASE_KEYS
        assert r["signer"] == signer.key_id and r["key"]["key_id"] == key.key_id and r["counted"]
        assert r["framework"]["priors"] == 4 and r["framework"]["class"] == "MarkovChainFramework"
        assert r["framework"]["digest"] == m.framework.digest() and r["framework"]["file"] == str(fw)
        assert r["mechanism"]["name"] == type(m).__name__ and r["mechanism"]["target"]["eps"] == 1.0
        s = m.sensitivity
        assert r["sensitivity"]["value"] == s.value and r["sensitivity"]["witness"] == s.to_dict()["witness"]
        assert r["scale"] == m.noise.scale and r["noise"]["family"] == "Laplace"
        assert r["guarantee"]["eps"] == 1.0 and r["theorem"] == m.guarantee.provenance.theorem
        assert r["files"]["input_sha256"] == sha(tmp_path / f"{name}.parquet")
        assert r["files"]["output_sha256"] == sha(tmp_path / f"{name}_out.parquet")
        assert r["units"] == {"kind": "ids", "count": 30} and r["unit"]["column"] == "household"
    pops = rep["populations"]
    assert [(p["label"], p["units"], p["releases"], p["guarantee"]["eps"]) for p in pops] == \
        [("household", 30, 1, 1.0), ("household #2", 30, 1, 1.0)]
    assert all("Prop E.1" in p["theorem"] for p in pops) and set(rep["units"]) == {p["label"] for p in pops}
    # the text says the same things in words
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(led)]) == 0
    text = capsys.readouterr().out
    for needle in ("authenticity NOT checked", "Theta: 4 prior(s)", f"Delta_G = {s.value:g}", "witness: prior",
                   "secret pair", f"scale {m.noise.scale:.6g}", sha(tmp_path / "north_out.parquet"),
                   f"signed by key {signer.key_id}", "PP(eps=1, delta=0) by one release per unit",
                   "30 unit(s) by keyed id", "populations of units (2)"):
        assert needle in text, needle
    # a population without a total says why
    pq.write_table(pa.table({"kwh": np.zeros(5)}), tmp_path / "rows.parquet")
    pio.noise_file(tmp_path / "rows.parquet", tmp_path / "rows_out.parquet", "kwh", ("laplace", {"b": 1.0}),
                   ledger=led, signing_key=tmp_path / "s.key", allow_uncomposed=True)
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(led)]) == 0
    text = capsys.readouterr().out
    assert "no total guarantee: a release with uncalibrated noise" in text and "allowed without a total" in text


def test_help_describes_every_argument():
    """#30 §5: the publishing commands' --help listed arguments without descriptions."""
    import argparse

    def walk(parser, path):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, [*path, name])
            elif not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS:
                yield path, a

    for cmd in ("noise", "keygen", "ledger"):
        for path, a in walk(cli._parser([cmd]), []):
            if path and path[0] == cmd:
                assert a.help, (path, a.option_strings or a.dest)
