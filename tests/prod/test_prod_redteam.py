"""Issue 31, a second red-team pass on the signed, lattice-noised release path: attacks on what the
first pass built (each test failed on the code before its fix).

Oracles: the JSON grammar (RFC 8259 has no NaN or Infinity, and puffer writes canonical JSON
only), the exit codes the CLI documents (7: the ledger fails verification, naming the entry; 3:
bad input; never a traceback), the key files' own bytes (never in a message), and the rounded
Laplace law on a lattice of step g: with a lattice scale of beta lattice units a value comes out
unchanged (the rounded input) with probability 1 - exp(-1/(2 beta)).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import LedgerError, ParameterError


@pytest.fixture
def notes(tmp_path):
    """A signed ledger of two notes (cheap: no release), its signing key and public key."""
    sk = tmp_path / "l.sign"
    pio.signing_keygen(sk)
    led = tmp_path / "l.jsonl"
    for k in range(2):
        pio.append_ledger(led, {"text": f"note {k}", "rows": 20}, signing_key=sk)
    return {"tmp": tmp_path, "sk": sk, "pub": str(sk) + ".pub", "led": led, "good": led.read_bytes()}


def verify(capsys, *args):
    capsys.readouterr()
    code = cli.main(["ledger", "verify", *map(str, args)])
    return code, capsys.readouterr().err


# what canonical JSON never holds, and what Python's parser cannot hold (a ValueError that is not
# a JSONDecodeError, a RecursionError): each crashed `verify` (exit 1, a traceback) or was reported
# as a bad parameter (exit 3) instead of a ledger that fails verification at that entry
NOT_JSON = {"NaN": b"NaN", "Infinity": b"Infinity", "-Infinity": b"-Infinity", "1e400": b"1e400",
            "5000 digits": b"9" * 5000, "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000}


@pytest.mark.parametrize("what", sorted(NOT_JSON))
def test_entries_outside_json_fail_verification_at_their_entry(notes, capsys, what):
    led, good = notes["led"], notes["good"]
    first, rest = good.split(b"\n", 1)
    assert b'"rows":20' in first
    led.write_bytes(first.replace(b'"rows":20', b'"rows":' + NOT_JSON[what]) + b"\n" + rest)
    for args in ((), ("--pub", notes["pub"])):
        code, err = verify(capsys, led, *args)
        assert code == 7 and "entry 0 (line 1)" in err and "Traceback" not in err, (code, err[-300:])
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(led)]) == 7
    with pytest.raises(LedgerError, match="entry 0"):  # and no release is appended to it
        pio.append_ledger(led, {"text": "more"}, signing_key=notes["sk"])
    # as a torn last line (an interrupted append never writes these): an edit, not repaired
    led.write_bytes(good + b'{"rows":' + NOT_JSON[what] + b"}")
    code, err = verify(capsys, led)
    assert code == 7 and "entry 2 (line 3)" in err, (code, err[-300:])


@pytest.mark.parametrize("what", ["5000 digits", "nested 100000 deep"])
def test_checkpoints_outside_json_are_refused_clearly(notes, capsys, what):
    led, tmp = notes["led"], notes["tmp"]
    cp = (tmp / "l.jsonl.checkpoint").read_bytes()
    bad = cp.replace(b'"entries":2', b'"entries":' + NOT_JSON[what])
    assert bad != cp
    (tmp / "kept.json").write_bytes(bad)
    code, err = verify(capsys, led, "--checkpoint", tmp / "kept.json")
    assert code == 3 and "checkpoint" in err and "Traceback" not in err, (code, err[-300:])
    (tmp / "l.jsonl.checkpoint").write_bytes(bad)  # the one beside the ledger: tampering, exit 7
    code, err = verify(capsys, led)
    assert code == 7 and "checkpoint file beside the ledger is not" in err and "Traceback" not in err, err[-300:]


def test_a_signing_key_given_where_a_public_key_or_checkpoint_goes_is_never_echoed(notes, capsys):
    """`--pub "$(cat l.sign)"` (the private key's text instead of the .pub file's path) printed
    the private key in the error message."""
    pem = notes["sk"].read_text()
    secret = "".join(pem.splitlines()[1:-1])
    assert len(secret) > 40
    for args in (("--pub", pem), ("--checkpoint", pem), ("--pub", secret), ("--checkpoint", secret)):
        code, err = verify(capsys, notes["led"], *args)
        assert code == 3 and secret[12:40] not in err and "not shown" in err, err
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(notes["led"]), "--pub", pem]) == 3
    assert secret[12:40] not in capsys.readouterr().err
    # a real path is still shown
    code, err = verify(capsys, notes["led"], "--pub", "missing.pub")
    assert code == 3 and "'missing.pub'" in err


def test_begin_release_honours_puffer_ledger(tmp_path, monkeypatch):
    """The public begin_release (the API every engine opens a release with) recorded into any
    ledger while PUFFER_LEDGER named another: the guard held for the engines only."""
    one = tmp_path / "one.jsonl"
    monkeypatch.setenv("PUFFER_LEDGER", str(one))
    plan = pio.resolve(("laplace", {"b": 1.0}))
    with pytest.raises(ParameterError, match="PUFFER_LEDGER"):
        pio.begin_release(ledger=tmp_path / "other.jsonl", columns=["x"], plan=plan, key=os.urandom(32))
    with pytest.raises(ParameterError, match="PUFFER_LEDGER"):
        pio.begin_release(ledger=pio.Ledger(tmp_path / "other.jsonl"), columns=["x"], plan=plan, key=os.urandom(32))
    assert not (tmp_path / "other.jsonl").exists()
    rel = pio.begin_release(ledger=one, columns=["x"], plan=plan, key=os.urandom(32))
    rel.commit("sha256:" + "0" * 64, 3)
    assert len(pio.read_ledger(one)) == 2


def test_plain_noise_on_a_lattice_coarser_than_its_scale_needs_allow_unnoised(tmp_path):
    """`--noise laplace --scale 1 --granularity 1024`: the noise is 0.011 lattice units, so every
    value came out as the rounded input (1000 of 1000) with no --allow-unnoised, and the ledger
    recorded a Laplace noise of scale 1."""
    x = np.random.default_rng(1).uniform(0, 5000, 1000)
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": x}), src)
    led = tmp_path / "l.jsonl"
    lap = ("laplace", {"b": 1.0})
    for g in (2.0**10, 2.0**-8):  # beta = 2^-10 and 2^8 lattice units: 1 and 0.2 % unchanged
        with pytest.raises(ParameterError, match="allow_unnoised.*granularity"):
            pio.noise_file(src, tmp_path / "o.parquet", "x", lap, ledger=led, granularity=g)
    assert not (tmp_path / "o.parquet").exists() and not led.exists()
    e = pio.noise_file(src, tmp_path / "o.parquet", "x", lap, ledger=led, granularity=2.0**10, allow_unnoised=True)
    assert e["config"]["allow_unnoised"] and e["noise_lattice"]["granularity"] == 1024.0
    # the default lattice (g <= scale / 1024) and the finest explicit one at that bound pass
    for k, g in enumerate((None, 2.0**-10)):
        e = pio.noise_file(src, tmp_path / f"d{k}.parquet", "x", lap, ledger=led, granularity=g)
        y = pq.read_table(tmp_path / f"d{k}.parquet")["x"].to_numpy()
        g = e["noise_lattice"]["granularity"]
        assert g <= 2.0**-10 and np.mean(y == np.round(x / g) * g) < 0.01
    # a calibrated mechanism keeps its guarantee on any lattice (the padding pays): not refused
    fw = {"model": {"kind": "correlated_pair", "p": 0.5, "rho": 0.3}, "target": {"eps": 1.0}}
    pq.write_table(pa.table({"x": np.round(x / 2500)}), tmp_path / "answers.parquet")  # the query's values 0, 1, 2
    e = pio.noise_file(tmp_path / "answers.parquet", tmp_path / "m.parquet", "x", fw, ledger=tmp_path / "m.jsonl",
                       per_unit=True, granularity=2.0**4)
    assert e["noise_lattice"]["padding"]["inflation"] > 2 and e["guarantee"]["eps"] == 1.0


MARKOV = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}


def test_ids_with_leading_zeros_are_one_unit_whatever_typed_the_column(tmp_path):
    """Households 0017, 0042, 0100 published from a CSV (the reader types them as the integers 17,
    42, 100) and again from a Parquet file of string ids: two disjoint unit sets, so the second
    Pufferfish release of the same households was accepted with no flag and `show` kept eps = 1.
    (Issue 38: a string id with leading zeros is not a canonical id and is refused, naming it.)"""
    ids = ["0017", "0042", "0100"]
    hh, t = np.repeat(ids, 4), np.tile(np.arange(4), 3)
    x = np.random.default_rng(0).integers(0, 2, 12).astype(float)
    (tmp_path / "a.csv").write_text("household,t,kwh\n" + "".join(f"{h},{s},{v}\n" for h, s, v in zip(hh, t, x)))
    pq.write_table(pa.table({"household": pa.array(hh, pa.string()), "t": t, "kwh": x}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"household": pa.array([h.lstrip("0") for h in hh], pa.string()), "t": t, "kwh": x}),
                   tmp_path / "c.parquet")
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps(MARKOV))
    led = tmp_path / "l.jsonl"
    pio.noise_file(tmp_path / "a.csv", tmp_path / "a_out.parquet", "kwh", fw, ledger=led, unit="household", order="t")
    with pytest.raises(ParameterError, match="'0017'.*canonical integer id"):
        pio.noise_file(tmp_path / "b.parquet", tmp_path / "b_out.parquet", "kwh", fw, ledger=led, unit="household",
                       order="t")
    with pytest.raises(ParameterError, match="no total guarantee"):  # "17" (a string) is the integer 17
        pio.noise_file(tmp_path / "c.parquet", tmp_path / "c_out.parquet", "kwh", fw, ledger=led, unit="household",
                       order="t")
    from puffer.publish.unitsets import UnitHasher

    h = UnitHasher(bytes(range(32)), "test").hashes
    assert h([17]).tolist() == h(["17"]).tolist() and h([0]).tolist() == h(["0"]).tolist()
    for other in ("0017", "+17", "+0017", " 17", "17\n", "-0017", "-0", "+0", "000", "١٧", "-17", "0x11"):
        with pytest.raises(ParameterError, match="parameter 'unit'"):
            h([other])
    assert len(set(h([17, "17a", "1 7"]).tolist())) == 3  # other texts stay other units


def test_a_relative_puffer_ledger_is_refused(tmp_path, monkeypatch):
    """PUFFER_LEDGER=releases.jsonl named a different ledger in every working folder: releases run
    from two folders each passed the guard into a ledger of their own."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 20)}), src)
    monkeypatch.setenv("PUFFER_LEDGER", "releases.jsonl")
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        monkeypatch.chdir(tmp_path / sub)
        with pytest.raises(ParameterError, match="PUFFER_LEDGER.*absolute path"):
            pio.noise_file(src, tmp_path / sub / "o.parquet", "x", ("laplace", {"b": 1.0}))
        with pytest.raises(ParameterError, match="PUFFER_LEDGER.*absolute path"):
            pio.begin_release(ledger="releases.jsonl", columns=["x"], plan=pio.resolve(("laplace", {"b": 1.0})))
        assert os.listdir(tmp_path / sub) == []


def test_temporary_files_beside_the_ledger_never_follow_a_planted_link(tmp_path):
    """Whoever could write the ledger's folder planted `.l.jsonl.checkpoint.tmp-PID` (and
    `l.jsonl.unit-secret.tmp-PID`) as a link to a file of the publisher's: the next release
    truncated that file and wrote the checkpoint (the ledger's unit secret) into it."""
    from puffer.publish.unitsets import unit_hasher

    victim = tmp_path / "victim.txt"
    victim.write_text("the publisher's own file\n")
    led = tmp_path / "l.jsonl"
    pid = os.getpid()
    os.symlink(victim, tmp_path / f".l.jsonl.checkpoint.tmp-{pid}")
    os.symlink(victim, tmp_path / f"l.jsonl.unit-secret.tmp-{pid}")
    pio.append_ledger(led, {"text": "a"})
    unit_hasher(str(led), None)
    assert victim.read_text() == "the publisher's own file\n"
    for name in ("l.jsonl.checkpoint", "l.jsonl.unit-secret"):
        assert not os.path.islink(tmp_path / name) and os.path.isfile(tmp_path / name)
    assert pio.verify(led)["entries"] == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_standard_output_is_an_io_error_not_a_traceback(tmp_path):
    """`puffer noise ... --json > release.json` on a full disk: the release was published and
    recorded, then the command died with a traceback and exit 1 (an internal error)."""
    import subprocess
    import sys

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 20)}), src)
    led = tmp_path / "l.jsonl"
    for args in (["noise", str(src), str(tmp_path / "o.parquet"), "--column", "x", "--noise", "laplace", "--scale",
                  "1", "--ledger", str(led), "--json"], ["ledger", "verify", str(led)]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([sys.executable, "-m", "puffer", *args], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=300)
        assert r.returncode == 6, r.stderr[-500:]
        assert "writing the standard output" in r.stderr and "Traceback" not in r.stderr, r.stderr[-500:]
        assert "Exception ignored" not in r.stderr
    assert pio.verify(led)["releases"] == 1  # the release itself stands, recorded


def test_an_output_over_the_ledgers_own_files_or_a_key_is_refused(tmp_path):
    """`puffer noise in.parquet l.jsonl.checkpoint ...` published the output over the ledger's
    checkpoint (every later release and verify then failed), and an output path that is the
    release key or the signing key replaced the key with the output."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 20)}), src)
    pio.keygen(tmp_path / "r.key")
    pio.signing_keygen(tmp_path / "k.sign")
    led = tmp_path / "l.jsonl"
    kw = {"ledger": led, "key": tmp_path / "r.key", "signing_key": tmp_path / "k.sign", "input_format": "parquet"}
    lap = ("laplace", {"b": 1.0})
    pio.noise_file(src, tmp_path / "o.parquet", "x", lap, **kw)
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    for name in ("l.jsonl.checkpoint", "r.key", "k.sign", "k.sign.pub"):
        with pytest.raises(ParameterError, match="output.*ledger's own files"):
            pio.noise_file(src, tmp_path / name, "x", lap, **kw)
    with pytest.raises(ParameterError, match="input.*ledger's own files"):
        pio.noise_file(tmp_path / "r.key", tmp_path / "o2.parquet", "x", lap, **kw)
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert pio.verify(led, pub=tmp_path / "k.sign.pub")["releases"] == 1


def test_a_published_release_cannot_be_recorded_aborted(tmp_path):
    """Release.abort (public: an engine of one's own calls it when something fails) recorded a
    release as aborted -- counted for nothing in the totals -- while its output was at its path
    with the recorded digest."""
    import hashlib

    from puffer.publish.totals import counted_releases

    out = tmp_path / "o.bin"
    out.write_bytes(b"published bytes")
    digest = "sha256:" + hashlib.sha256(b"published bytes").hexdigest()
    led = tmp_path / "l.jsonl"
    rel = pio.begin_release(ledger=led, columns=["x"], plan=pio.resolve(("laplace", {"b": 1.0})), key=os.urandom(32))
    rel.pending(digest, 1, output=str(out))
    with pytest.raises(ParameterError, match="is there with the recorded digest"):
        rel.abort("something failed after the rename")
    assert len(counted_releases(pio.read_ledger(led))) == 1
    out.unlink()  # not there: an abort is what happened
    rel.abort("the rename failed")
    assert counted_releases(pio.read_ledger(led)) == []


def test_genuine_signed_lines_moved_between_or_within_ledgers_are_caught(notes, capsys):
    """Held before this pass (a regression test): every line below carries a valid signature of
    the right key; only its place is wrong. Checked: a line duplicated, two lines swapped, the
    checkpoint of another ledger of the same key, and a ledger replaced wholesale by another
    genuine one of that key (which only a checkpoint kept elsewhere can tell)."""
    led, tmp, good = notes["led"], notes["tmp"], notes["good"]
    kept = tmp / "kept.json"
    kept.write_bytes((tmp / "l.jsonl.checkpoint").read_bytes())
    lines = good.splitlines(keepends=True)
    for bad, why in ((good + lines[-1], "entry 2 (line 3): seq"), (lines[1] + lines[0], "entry 0 (line 1): seq")):
        led.write_bytes(bad)
        code, err = verify(capsys, led, "--pub", notes["pub"])
        assert code == 7 and why in err, err
    other = tmp / "other.jsonl"  # a second ledger of the same signing key, same length
    for k in range(2):
        pio.append_ledger(other, {"text": f"other {k}", "rows": 20}, signing_key=notes["sk"])
    led.write_bytes(good)
    code, err = verify(capsys, led, "--pub", notes["pub"], "--checkpoint", str(other) + ".checkpoint")
    assert code == 7 and "differs from the checkpoint given" in err, err
    # the whole ledger (and the checkpoint beside it) replaced by the other genuine one: the
    # signatures are the right key's, so only the checkpoint kept elsewhere tells
    led.write_bytes(other.read_bytes())
    (tmp / "l.jsonl.checkpoint").write_bytes((tmp / "other.jsonl.checkpoint").read_bytes())
    assert verify(capsys, led, "--pub", notes["pub"])[0] == 0
    code, err = verify(capsys, led, "--pub", notes["pub"], "--checkpoint", kept)
    assert code == 7 and "differs from the checkpoint given" in err, err
    # a .pub replaced by another key's: the kept checkpoint's signer is not that key
    pio.signing_keygen(tmp / "mallory.sign")
    led.write_bytes(good)
    (tmp / "l.jsonl.checkpoint").write_bytes(kept.read_bytes())
    code, err = verify(capsys, led, "--pub", tmp / "mallory.sign.pub", "--checkpoint", kept)
    assert code == 7 and "not by the key given" in err, err


def test_publish_options_never_show_key_material():
    """repr(PublishOptions(key="<64 hex digits>")) -- a key's text where its path goes, shown in a
    notebook or a log line -- printed the key."""
    from puffer.publish import PublishOptions

    secret = os.urandom(32).hex()
    pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINu+ib8qb/7ylh275os0kvsSw4DWJ\n-----END PRIVATE KEY-----\n"
    r = repr(PublishOptions(key=secret, signing_key=pem, unit="household"))
    assert secret[:16] not in r and "MC4CAQAw" not in r and "not shown" in r and "unit='household'" in r
    assert "keys/release.key" in repr(PublishOptions(key="keys/release.key"))  # a path stays shown


@pytest.mark.parametrize("where", ["kept checkpoint", "checkpoint beside", "ledger"])
def test_a_fifo_planted_as_a_ledger_file_is_refused_not_waited_on(notes, where):
    """Someone who can write the ledger's folder planted a FIFO as the checkpoint (or the ledger):
    `puffer ledger verify` and every later release hung for ever in open()/read(). Run in a
    subprocess with a deadline, so that the old behaviour fails this test instead of hanging it
    (20 s: verify takes ~1 s; the deadline only detects a hang)."""
    import subprocess
    import sys

    tmp, led = notes["tmp"], notes["led"]
    args = [sys.executable, "-m", "puffer", "ledger", "verify", str(led)]
    if where == "kept checkpoint":
        os.mkfifo(tmp / "kept.fifo")
        args += ["--checkpoint", str(tmp / "kept.fifo")]
        want = (3,)
    elif where == "checkpoint beside":
        (tmp / "l.jsonl.checkpoint").unlink()
        os.mkfifo(tmp / "l.jsonl.checkpoint")
        want = (3, 7)
    else:
        led.unlink()
        os.mkfifo(led)
        want = (3, 6, 7)
    r = subprocess.run(args, capture_output=True, text=True, timeout=20)
    assert r.returncode in want and "Traceback" not in r.stderr, (r.returncode, r.stderr[-400:])
    assert any(m in r.stderr for m in ("regular file", "not a puffer checkpoint", "existing ledger file")), r.stderr


def test_paths_with_a_nul_byte_are_refused_by_name(tmp_path):
    """An output or ledger path holding a NUL byte raised a bare ValueError ('embedded null
    byte') from the OS call instead of an error naming the parameter."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0]}), src)
    key = tmp_path / "k.key"
    pio.keygen(key)
    for kw, name in (({"output": str(tmp_path / "o\x00.parquet")}, "output"),
                     ({"ledger": str(tmp_path / "l\x00.jsonl")}, "ledger"),
                     ({"input": str(tmp_path / "in\x00.parquet")}, "input")):
        args = {"input": src, "output": tmp_path / "o.parquet", "ledger": tmp_path / "l.jsonl"} | kw
        with pytest.raises(ParameterError, match=f"parameter '{name}'"):
            pio.noise_file(args["input"], args["output"], "x", ("laplace", {"b": 1.0}), key=key,
                           ledger=args["ledger"])
