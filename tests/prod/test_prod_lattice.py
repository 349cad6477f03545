"""Issue 31 item 3: the default publishing path publishes values on the recorded power-of-two
lattice with exact noise from the keyed stream -- reproducible by --rerun, refusing what it
cannot certify, and saying so in the ledger; float noise only when asked for, and recorded.

Oracles: the documented definition (the recorded lattice rebuilt by LatticePlan.from_description,
value p of release_stream(key, nonce, column)), the mechanism's own lattice plan."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import ParameterError
from puffer.lattice import LatticePlan, add_lattice_noise

KEY = hashlib.sha256(b"test_prod_lattice key").digest()


@pytest.fixture()
def src(tmp_path):
    p = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.random.default_rng(4).normal(size=5000) * 30,
                             "f": np.arange(5000, dtype=np.float32) / 7}), p)
    return p


def test_default_is_lattice_noise_reproduced_by_rerun(tmp_path, src, capsys):
    keyf = tmp_path / "k.key"
    pio.keygen(keyf)
    led = tmp_path / "l.jsonl"
    rc = cli.main(["noise", str(src), str(tmp_path / "a.parquet"), "--column", "x", "--column", "f", "--noise",
                   "laplace", "--scale", "2.5", "--key", str(keyf), "--ledger", str(led), "--json"])
    assert rc == 0
    e = json.loads(capsys.readouterr().out)
    lat = e["noise_lattice"]
    assert lat["family"] == "laplace" and lat["law"] == "rounded Laplace" and lat["granularity"] == 2.0**lat["g_exp"]
    assert e["config"]["noise"] == "lattice"
    out = pq.read_table(tmp_path / "a.parquet")
    t = pq.read_table(src)
    plan = LatticePlan.from_description(lat)
    for c in ("x", "f"):
        y = out.column(c).to_numpy()
        assert out.schema.field(c).type == pa.float64()
        assert np.array_equal(y / plan.granularity, np.round(y / plan.granularity))   # on the lattice
        ref = add_lattice_noise(t.column(c).to_numpy(), plan,
                                rng=pio.release_stream(pio.as_key(keyf), e["nonce"], c))
        assert np.array_equal(y, ref)
    # --rerun reproduces the bytes
    rc = cli.main(["noise", str(src), str(tmp_path / "b.parquet"), "--column", "x", "--column", "f", "--noise",
                   "laplace", "--scale", "2.5", "--key", str(keyf), "--ledger", str(led), "--rerun", e["release_id"]])
    assert rc == 0
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    capsys.readouterr()
    rc = cli.main(["ledger", "show", str(led)])
    assert rc == 0 and f"on the lattice 2^{lat['g_exp']} Z: rounded Laplace" in capsys.readouterr().out


def test_granularity_option_and_the_mechanism_plan(tmp_path, src):
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    xs = tmp_path / "answers.parquet"
    pq.write_table(pa.table({"x": np.arange(3000) % 3 * 1.0}), xs)
    e = pio.noise_file(xs, tmp_path / "o.parquet", "x", fw, key=KEY, per_unit=True, granularity=2**-6,
                       ledger=tmp_path / "l.jsonl")
    m = pio.resolve(fw, lattice=True).mechanism
    assert e["noise_lattice"] == m.lattice_plan(2**-6).describe()
    assert e["noise_lattice"]["padding"]["sensitivity"] == m.lattice_sensitivity() and e["config"]["granularity"] == 2**-6
    y = pq.read_table(tmp_path / "o.parquet").column("x").to_numpy()
    assert np.array_equal(y * 64, np.round(y * 64))
    with pytest.raises(ParameterError, match="power of two"):
        pio.noise_file(xs, tmp_path / "o2.parquet", "x", fw, key=KEY, per_unit=True, granularity=0.3,
                       ledger=tmp_path / "l.jsonl")


def test_what_has_no_certified_lattice_is_refused_and_float_noise_is_recorded(tmp_path, src, capsys):
    led = tmp_path / "l.jsonl"
    cauchy = ("cauchy", {"gamma": 1.0})
    with pytest.raises(ParameterError, match="float_noise"):
        pio.noise_file(src, tmp_path / "c.parquet", "x", cauchy, key=KEY, ledger=led)
    assert not (tmp_path / "c.parquet").exists() and not led.exists()
    fw = {"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0, "delta": 1e-5}}
    with pytest.raises(ParameterError, match="float_noise.*Kantorovich Thm 3"):
        pio.resolve(fw, select="Kantorovich Thm 3").lattice_plan()
    e = pio.noise_file(src, tmp_path / "c.parquet", "x", cauchy, key=KEY, ledger=led, float_noise=True)
    assert e["noise_lattice"] is None and e["config"]["noise"] == "float"
    with pytest.raises(ParameterError, match="granularity"):
        pio.noise_file(src, tmp_path / "d.parquet", "x", cauchy, key=KEY, ledger=led, float_noise=True,
                       granularity=2**-4)
    with pytest.raises(ParameterError, match="float_noise"):
        pio.noise_file(src, tmp_path / "d.parquet", "x", ("laplace", {"b": 1.0}), ledger=led, float_noise=True,
                       secure=True)
    assert cli.main(["ledger", "show", str(led)]) == 0
    assert "FLOAT noise (asked for with float_noise" in capsys.readouterr().out
    rc = cli.main(["noise", str(src), str(tmp_path / "e.parquet"), "--column", "x", "--noise", "cauchy", "--scale", "1",
                   "--key", str(tmp_path / "nokey"), "--ledger", str(led)])
    assert rc != 0


def test_secure_mode_is_the_same_lattice_from_os_entropy(tmp_path, src):
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    xs = tmp_path / "answers.parquet"
    pq.write_table(pa.table({"x": np.arange(4000) % 3 * 1.0}), xs)
    outs = []
    for k in range(2):
        e = pio.noise_file(xs, tmp_path / f"s{k}.parquet", "x", fw, secure=True, per_unit=True,
                           ledger=tmp_path / "l.jsonl", allow_uncomposed=k > 0)
        outs.append(pq.read_table(tmp_path / f"s{k}.parquet").column("x").to_numpy())
        assert e["noise_lattice"] == pio.resolve(fw, lattice=True).mechanism.lattice_plan().describe()
        assert e["nonce"] is None
    g = e["noise_lattice"]["granularity"]
    assert all(np.array_equal(y / g, np.round(y / g)) for y in outs) and not np.array_equal(*outs)
