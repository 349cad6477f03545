"""puffer.io / `puffer noise`: row-addressed noise, byte-identical output, the ledger, bad inputs.

Oracles: puffer.lattice.add_lattice_noise on the whole column with the lattice the ledger records
and puffer.io.release_stream(key, nonce, column) (the documented definition), the mechanism object calibrated independently from the same framework file, and
guarantee_from_dict on the ledger's record. Nothing here is statistical.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import puffer
import puffer.io as pio
from puffer import cli
from puffer.errors import LedgerError, ParameterError, ParameterTypeError

N = 1_000_000
KEY = hashlib.sha256(b"puffer test release key").digest()  # a 256-bit test key given as bytes


#: the least noise for FRAMEWORK's target among the mechanisms certified on a lattice
LATTICE_DEFAULT = "Kantorovich Thm 2 (Laplace)"


def stream(entry, column, key=KEY):
    return pio.release_stream(pio.as_key(key), entry["nonce"], column)


def lattice_ref(entry, column, x, key=KEY):
    """Row r of column c = (round(x_r / g) + Z_r) g, Z_r = value r of the recorded lattice law on
    release_stream(key, nonce, c)."""
    plan = puffer.lattice.LatticePlan.from_description(entry["noise_lattice"])
    return puffer.lattice.add_lattice_noise(np.asarray(x, dtype=np.float64), plan, rng=stream(entry, column, key))

FRAMEWORK = {"name": "test pair", "model": {"kind": "correlated_pair", "p": 0.5, "rho": 0.3},
             "target": {"eps": 1.0, "delta": 1e-5, "alpha": 2.0}}
FRAMEWORK_2D = {"model": {"kind": "conditionals", "pairs": [["a", "b"]], "conditionals": {"t": {
    "a": {"atoms": [[0.0, 0.0], [1.0, 0.0]], "probs": [0.5, 0.5]},
    "b": {"atoms": [[0.0, 1.0], [1.0, 1.0]], "probs": [0.5, 0.5]}}}},
    "target": {"eps": 1.0}}


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(0)
    t = pa.table({"id": np.arange(N, dtype=np.int64), "x": rng.normal(size=N) * 100,
                  "y": rng.integers(0, 1000, size=N, dtype=np.int32),
                  "z": rng.normal(size=N).astype(np.float32), "name": pa.array(["r"] * N)})
    p = d / "in.parquet"
    pq.write_table(t, p, row_group_size=300_000)
    return d, p, t


@pytest.fixture(scope="module")
def fw_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("fw") / "pair.json"
    p.write_text(json.dumps(FRAMEWORK))
    return p


def test_round_trip_identical_bytes_for_any_batch_size_and_threads(big):
    d, src, t = big
    noise = ("laplace", {"b": 3.0})
    outs = []
    led = d / "ledger1.jsonl"
    first = None
    for k, (bs, thr) in enumerate([(1 << 16, None), (997, 1), (N, 2), (250_001, 1)]):
        out = d / f"out{k}.parquet"
        e = pio.noise_file(src, out, ["x", "y", "z"], noise, key=KEY, batch_size=bs, threads=thr, ledger=led,
                           rerun=None if first is None else first["release_id"])
        first = first or e
        outs.append(out)
    assert len({sha(o) for o in outs}) == 1
    got = pq.read_table(outs[0])
    # lattice points are float64 (float32 would round them beyond 2^24 lattice steps)
    assert all(got.schema.field(c).type == pa.float64() for c in ("x", "y", "z"))
    assert got.column("name").equals(t.column("name")) and got.column("id").equals(t.column("id"))
    # the documented definition: row r of column c = value r of release_stream(key, nonce, c)
    g = first["noise_lattice"]["granularity"]
    for c in ("x", "y", "z"):
        ref = lattice_ref(first, c, t.column(c).to_numpy())
        assert np.array_equal(got.column(c).to_numpy(), ref)
        assert np.array_equal(ref / g, np.round(ref / g))   # on the recorded lattice
    # columns get different noise
    dx = got.column("x").to_numpy() - t.column("x").to_numpy()
    dy = got.column("y").to_numpy() - t.column("y").to_numpy()
    assert not np.allclose(dx[:100], dy[:100])


def test_ledger_matches_mechanism_guarantee(tmp_path, fw_file):
    t = pa.table({"x": np.linspace(0, 1, 1000)})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    led = tmp_path / "ledger.jsonl"
    got = []
    # (the Gaussian PP row's (eps, delta) comes from the continuous Gaussian's privacy profile, which
    # the discrete Gaussian of a lattice is not certified for: it needs float_noise)
    with pytest.raises(ParameterError, match="float_noise.*privacy profile"):
        pio.noise_file(src, tmp_path / "c.parquet", "x", fw_file, key=KEY, select="GWM Gaussian, PP delta=1e-05",
                       ledger=led, per_unit=True)
    for sel, out in ((None, "a.parquet"), ("GWM Gaussian, RPP alpha=2", "b.parquet")):
        got.append(pio.noise_file(src, tmp_path / out, "x", fw_file, key=KEY, select=sel, ledger=led,
                                  per_unit=True, allow_uncomposed=sel is not None))
    text = led.read_text()
    assert KEY.hex() not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines == pio.read_ledger(led) and len(lines) == 4
    entries = [e for e in lines if e["event"] == "pending"]
    assert entries == got and entries[1]["allow_uncomposed"] is True
    from puffer.config import build_framework, build_mechanisms

    todo = dict(build_mechanisms(build_framework(FRAMEWORK["model"]), FRAMEWORK["target"]))
    # no --select: the least noise for the file's target (1, 1e-5)-PP among the mechanisms certified
    # on a lattice (issue 32: it used to be the first row, Wasserstein's Laplace(2)): Kantorovich
    # Thm 2's Laplace(1.542), padded b + g / eps on the lattice, as for float noise
    assert pio.resolve(fw_file).label == pio.resolve(fw_file, lattice=True).label == LATTICE_DEFAULT
    for e, label in zip(entries, [LATTICE_DEFAULT, "GWM Gaussian, RPP alpha=2"]):
        m = todo[label]()
        assert e["label"] == label and e["mechanism"] == type(m).__name__
        assert puffer.guarantee_from_dict(e["guarantee"]) == m.guarantee
        assert e["guarantee"] == m.guarantee.to_dict()
        assert e["sensitivity"] == m.sensitivity.to_dict() and e["sensitivity"]["witness"] is not None
        assert e["framework"] == m.framework.digest()
        assert e["scale"] == m.noise.scale and e["noise"]["family"] == type(m.noise).__name__
        assert e["rows"] == 1000 and e["columns"] == ["x"] and e["puffer_version"] == puffer.__version__
        assert e["rng"]["mode"] == "keyed-chacha20" and e["unit"]["mode"] == "answers"
        assert e["framework_description"]["config"]["model"] == FRAMEWORK["model"]
        assert e["output_sha256"] == "sha256:" + sha(tmp_path / ("a.parquet" if e is entries[0] else "b.parquet"))
    # the noise is the mechanism's on its own lattice (padding its sensitivity per value), drawn
    # from the column's stream; the ledger records that lattice
    m = todo[LATTICE_DEFAULT]()
    plan = m.lattice_plan()
    assert entries[0]["noise_lattice"] == plan.describe() and entries[1]["noise_lattice"]["family"] == "gaussian"
    ref = puffer.lattice.add_lattice_noise(t.column("x").to_numpy(), plan, rng=stream(entries[0], "x"))
    assert np.array_equal(pq.read_table(tmp_path / "a.parquet").column("x").to_numpy(), ref)


def test_csv_input_and_cli(tmp_path, fw_file, capsys):
    t = pa.table({"a": np.arange(5000, dtype=np.int64), "b": np.linspace(-1, 1, 5000)})
    csv, pqf = tmp_path / "in.csv", tmp_path / "in.parquet"
    pcsv.write_csv(t, csv)
    pq.write_table(t, pqf)
    keyf = tmp_path / "k.key"
    assert cli.main(["keygen", str(keyf)]) == 0 and oct(keyf.stat().st_mode & 0o777) == "0o600"
    capsys.readouterr()
    t2 = pa.table({"a": np.arange(5000, dtype=np.int64) % 2, "b": np.linspace(0, 2, 5000)})
    pcsv.write_csv(t2, csv)
    pq.write_table(t2, pqf)
    rc = cli.main(["noise", str(csv), str(tmp_path / "c.parquet"), "--column", "a", "--column", "b",
                   "--mechanism", str(fw_file), "--key", str(keyf), "--per-unit", "--allow-uncomposed",
                   "--batch-size", "123", "--json"])
    assert rc == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry["rows"] == 5000 and entry["allow_uncomposed"] is True
    assert pio.read_ledger(tmp_path / "puffer-ledger.jsonl")[0]["output_sha256"] == entry["output_sha256"]
    rc = cli.main(["noise", str(pqf), str(tmp_path / "p.parquet"), "--column", "a", "--column", "b",
                   "--mechanism", str(fw_file), "--key", str(keyf), "--per-unit", "--allow-uncomposed"])
    out = capsys.readouterr().out
    assert rc == 0 and "5000 rows" in out
    a, b = pq.read_table(tmp_path / "c.parquet"), pq.read_table(tmp_path / "p.parquet")
    assert a.schema == b.schema and not a.equals(b)  # a second release: fresh noise
    t = t2
    # plain noise
    rc = cli.main(["noise", str(pqf), str(tmp_path / "n.parquet"), "--column", "b", "--noise", "gaussian",
                   "--scale", "0.5", "--key", str(keyf), "--ledger", str(tmp_path / "l2.jsonl")])
    assert rc == 0 and "scale 0.5;" in capsys.readouterr().out  # was "scale None" (issue 22)
    e = pio.read_ledger(tmp_path / "l2.jsonl")[0]
    assert e["guarantee"] is None and e["noise"] == {"family": "gaussian", "sigma": 0.5} and e["scale"] == 0.5
    ref = lattice_ref(e, "b", t.column("b").to_numpy(), keyf)
    assert np.array_equal(pq.read_table(tmp_path / "n.parquet").column("b").to_numpy(), ref)
    capsys.readouterr()
    # bad input -> exit 3 with a message, no output
    rc = cli.main(["noise", str(pqf), str(tmp_path / "bad.parquet"), "--column", "nope", "--noise", "laplace",
                   "--scale", "1"])
    err = capsys.readouterr().err
    assert rc == 3 and "nope" in err and not (tmp_path / "bad.parquet").exists()
    assert cli.main(["noise", str(pqf), str(tmp_path / "bad.parquet"), "--column", "b", "--noise", "laplace"
                     ]) == 3  # --noise without --scale
    rc = cli.main(["noise", str(pqf), str(tmp_path / "bad.parquet"), "--column", "b", "--noise", "laplace",
                   "--scale", "1", "--seed", "2026"])
    assert rc == 3 and "puffer keygen" in capsys.readouterr().err


def test_secure_mode(tmp_path, fw_file):
    t = pa.table({"x": np.linspace(0, 2, 4000)})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    e = pio.noise_file(src, tmp_path / "s.parquet", ["x"], fw_file, secure=True, granularity=2**-10,
                       ledger=tmp_path / "l.jsonl", per_unit=True)
    y = pq.read_table(tmp_path / "s.parquet").column("x").to_numpy()
    assert np.all(y * 2**10 == np.round(y * 2**10))  # on the lattice
    assert e["rng"]["mode"] == "secure" and e["nonce"] is None and e["config"]["granularity"] == 2**-10
    assert 0.5 < np.mean(np.abs(y - t.column("x").to_numpy())) / e["scale"] < 2.0
    with pytest.raises(ParameterError, match="key"):
        pio.noise_file(src, tmp_path / "s2.parquet", ["x"], fw_file, secure=True, key=KEY, per_unit=True)
    with pytest.raises(ParameterError, match="secure"):
        pio.noise_file(src, tmp_path / "s3.parquet", ["x"], ("laplace", {"b": 1.0}), secure=True, key=None)


def test_int64_beyond_2_53_is_refused_in_files(tmp_path):
    # float64 output: 2^62 + 1 would become 2^62 and the noise land on a rounded value; refused
    # for int64 and uint64 columns, with the first offending value and its row
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"n": pa.array([3, -(2**53), 2**62 + 1], pa.int64()),
                             "u": pa.array([0, 2**53 + 2, 1], pa.uint64())}), src)
    # (a scale of 4096 = 2048 float spacings at 2^53: above the data's resolution,
    # puffer.publish.values; a lattice of step 4, whose exact range 2^54 holds 2^53)
    wide = ("laplace", {"b": 4096.0})
    for col, want in (("n", "4611686018427387905 at row 2"), ("u", "9007199254740994 at row 1")):
        with pytest.raises(ParameterError, match=want):
            pio.noise_file(src, tmp_path / "o.parquet", [col], wide, key=KEY, batch_size=2)
        assert not (tmp_path / "o.parquet").exists()
    ok = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"n": pa.array([3, -(2**53), 2**53], pa.int64())}), ok)
    pio.noise_file(ok, tmp_path / "o.parquet", ["n"], wide, key=KEY)
    assert pq.read_table(tmp_path / "o.parquet").column("n").type == pa.float64()
    # values beyond the lattice's exact range (2^52 steps) are refused, not rounded (even with the
    # resolution check waived)
    with pytest.raises(ParameterError, match=r"2\^52 \* granularity"):
        pio.noise_file(ok, tmp_path / "o2.parquet", ["n"], ("laplace", {"b": 1.0}), key=KEY, allow_unnoised=True)
    assert not (tmp_path / "o2.parquet").exists()


def test_nulls_error_and_keep(tmp_path):
    x = pa.array([1.0, None, 3.0, 4.0, None, 6.0])
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": x}), src)
    with pytest.raises(ParameterError, match="null at row 1"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=KEY)
    assert not (tmp_path / "o.parquet").exists()
    e = pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=KEY, nulls="keep",
                       batch_size=4)
    y = pq.read_table(tmp_path / "o.parquet").column("x")
    assert y.null_count == 2 and not y[1].is_valid and not y[4].is_valid
    full = lattice_ref(e, "x", [1.0, 0, 3, 4, 0, 6])
    valid = np.array([1, 0, 1, 1, 0, 1], bool)
    assert np.array_equal(y.to_numpy(zero_copy_only=False)[valid], full[valid])  # other rows unaffected


def test_bad_inputs(tmp_path, fw_file, big):
    d, bigsrc, _ = big
    t = pa.table({"x": [1.0, 2.0], "s": ["a", "b"], "flag": [True, False]})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    lap = ("laplace", {"b": 1.0})
    with pytest.raises(ParameterError, match="'nope'.*a column of the input"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x", "nope"], lap, key=KEY)
    with pytest.raises(ParameterTypeError, match="column 's'"):
        pio.noise_file(src, tmp_path / "o.parquet", ["s"], lap, key=KEY)
    with pytest.raises(ParameterTypeError, match="column 'flag'"):
        pio.noise_file(src, tmp_path / "o.parquet", ["flag"], lap, key=KEY)
    with pytest.raises(ParameterError, match="different from the input"):
        pio.noise_file(src, src, ["x"], lap, key=KEY)
    with pytest.raises(ParameterError, match="different from the input"):
        pio.noise_file(src, tmp_path / "." / "in.parquet", ["x"], lap, key=KEY)
    with pytest.raises(ParameterError, match="distinct"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x", "x"], lap, key=KEY)
    for bad_seed in (-1, 0, 2026, 2**100):
        with pytest.raises(ParameterError, match="puffer keygen"):
            pio.noise_file(src, tmp_path / "o.parquet", ["x"], lap, seed=bad_seed)
    for bad_key, exc in ((2026, ParameterTypeError), (b"short", ParameterError), (1.5, ParameterTypeError)):
        with pytest.raises(exc, match="key"):
            pio.noise_file(src, tmp_path / "o.parquet", ["x"], lap, key=bad_key)
    with pytest.raises(ParameterError, match="nulls"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x"], lap, key=KEY, nulls="drop")
    with pytest.raises(ParameterError, match="kind"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplce", {"b": 1.0}), key=KEY)
    # a ledger that is not JSON lines: refused before any work, nothing written
    led = tmp_path / "bad.jsonl"
    led.write_text('{"ok": 1}\n[1, 2]\n')
    with pytest.raises(LedgerError, match="line 2.*not an object"):
        pio.noise_file(src, tmp_path / "o.parquet", ["x"], lap, key=KEY, ledger=led)
    assert led.read_text() == '{"ok": 1}\n[1, 2]\n' and not (tmp_path / "o.parquet").exists()
    # mechanism file vs column dimension: a 2-D query needs exactly 2 columns
    f2 = tmp_path / "fw2.json"
    f2.write_text(json.dumps(FRAMEWORK_2D))
    pq.write_table(pa.table({"u": [0.0, 1.0], "v": [1.0, 0.0], "w": [0.5, 0.5]}), tmp_path / "uvw.parquet")
    for cols in (["u"], ["u", "v", "w"]):
        with pytest.raises(ParameterError, match="exactly 2 columns"):
            pio.noise_file(tmp_path / "uvw.parquet", tmp_path / "o.parquet", cols, f2, key=KEY, per_unit=True)
    e = pio.noise_file(tmp_path / "uvw.parquet", tmp_path / "o.parquet", ["u", "v"], f2, key=KEY, per_unit=True,
                       ledger=tmp_path / "l2d.jsonl")
    assert e["dim"] == 2 and e["composition"]["releases"] == 1
    with pytest.raises(ParameterError, match="release"):  # a file with [release] values is not for columns
        pio.noise_file(src, tmp_path / "o2.parquet", ["x"], {**FRAMEWORK, "release": {"values": [1.0]}}, key=KEY,
                       per_unit=True)
    with pytest.raises(ParameterError, match="select"):
        pio.noise_file(src, tmp_path / "o2.parquet", ["x"], fw_file, key=KEY, select="no such mechanism",
                       per_unit=True)
    with pytest.raises(ParameterError, match="input"):
        pio.noise_file(tmp_path / "missing.parquet", tmp_path / "o2.parquet", ["x"], lap, key=KEY)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ParameterError, match="readable parquet"):
        pio.noise_file(tmp_path / "junk.parquet", tmp_path / "o2.parquet", ["x"], lap, key=KEY)
    # a failure deep in a large file leaves no partial output and no temporary file
    tbl = pq.read_table(bigsrc, columns=["x"])
    x = tbl.column("x").to_numpy().copy()
    x[900_000] = np.inf
    pq.write_table(pa.table({"x": x}), tmp_path / "inf.parquet")
    pio.noise_file(src, tmp_path / "warm.parquet", ["x"], lap, key=KEY)  # ledger and lock files exist now
    before = set(os.listdir(tmp_path))   # the output's lock file is removed when the release ends (issue 42)
    with pytest.raises(ParameterError, match="row 900000"):
        pio.noise_file(tmp_path / "inf.parquet", tmp_path / "partial.parquet", ["x"], lap, key=KEY)
    assert set(os.listdir(tmp_path)) == before


def test_progress_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.zeros(1000)}), src)
    pio.noise_file(src, tmp_path / "a.parquet", ["x"], ("laplace", {"b": 1.0}), key=KEY)
    assert capsys.readouterr().err == ""  # stderr is not a terminal under pytest
    pio.noise_file(src, tmp_path / "b.parquet", ["x"], ("laplace", {"b": 1.0}), key=KEY, progress=True, batch_size=100)
    assert "rows" in capsys.readouterr().err


def test_ledger_append_repairs_a_torn_last_line(tmp_path):
    p = tmp_path / "l.jsonl"
    a = pio.append_ledger(p, {"a": 1})
    with open(p, "ab") as fh:
        fh.write(b'{"b": 2, "se')  # a torn line (disk full during an append)
    v = pio.verify(p)
    assert v["entries"] == 1 and v["torn_tail"]["bytes"] == 12
    b = pio.append_ledger(p, {"c": 3})
    assert pio.read_ledger(p) == [a, b] and b["repaired_tail"]["bytes"] == 12 and pio.verify(p)["torn_tail"] is None
