"""Issue 31 §1: the red-team attacks on the ledger, each shown to be caught (each of these
tests fails on the unsigned ledger of before: it has no signing keys and no checkpoints).

Oracles: an attacker who holds everything but the signing key -- edits entries and recomputes
every hash and prev link with hashlib, cuts bytes, swaps fields, appends by hand, re-signs with
a key of their own -- and an independent Ed25519 verifier (the cryptography package, called
directly) for the signatures and checkpoints puffer writes."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import LedgerError, ParameterError
from puffer.publish import ledger as L

FW = {"model": {"kind": "correlated_pair", "p": 0.5, "rho": 0.3}, "target": {"eps": 1.0}}


def canon(e):
    return json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def rechain(lines, start=0, *, resign=None):
    """What a forger can do without the signing key: recompute hash and prev of every entry
    from ``start`` on (the old signature stays, or a signature of the forger's own key)."""
    out = [json.loads(x) for x in lines]
    prev = hashlib.sha256(canon(out[start - 1])).hexdigest() if start else "0" * 64
    for e in out[start:]:
        e["prev"] = prev
        if resign is not None:
            e["signer"] = resign.public.describe()
        body = {k: v for k, v in e.items() if k not in ("hash", "sig")}
        e["hash"] = hashlib.sha256(canon(body)).hexdigest()
        if resign is not None:
            e["sig"] = resign.sign(L.ENTRY_DOMAIN, bytes.fromhex(e["hash"]))
        prev = hashlib.sha256(canon(e)).hexdigest()
    return [canon(e).decode() + "\n" for e in out]


@pytest.fixture
def signed(tmp_path):
    """Two PP releases (disjoint rows files, allowed) in a ledger signed by a fresh key."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.arange(20) % 2 * 1.0}), src)
    sk = tmp_path / "ledger.sign"
    assert cli.main(["keygen", "--signing", str(sk)]) == 0
    led = tmp_path / "l.jsonl"
    cps = []
    for k in range(2):
        pio.noise_file(src, tmp_path / f"o{k}.parquet", "x", FW, ledger=led, per_unit=True, allow_uncomposed=True,
                       signing_key=sk)
        cps.append(pio.checkpoint(led))
    return {"src": src, "sk": sk, "pub": str(sk) + ".pub", "led": led, "cps": cps, "tmp": tmp_path}


def cli_verify(capsys, led, *args):
    capsys.readouterr()
    code = cli.main(["ledger", "verify", str(led), *args])
    return code, capsys.readouterr()


def test_keygen_signing_files_and_independent_signature_check(signed, capsys):
    from cryptography.hazmat.primitives import serialization

    sk, led = signed["sk"], signed["led"]
    assert oct(os.stat(sk).st_mode & 0o777) == "0o600"
    pub = serialization.load_pem_public_key(open(signed["pub"], "rb").read())
    entries = pio.read_ledger(led)
    assert len(entries) == 4 and all("sig" in e and e["signer"]["key_id"] == entries[0]["signer"]["key_id"]
                                     for e in entries)
    for e in entries:  # an independent Ed25519 check of every entry's signature over its hash
        body = {k: v for k, v in e.items() if k not in ("hash", "sig")}
        assert e["hash"] == hashlib.sha256(canon(body)).hexdigest()
        pub.verify(bytes.fromhex(e["sig"]), b"puffer/v1/ledger-entry\x00" + bytes.fromhex(e["hash"]))
    cp = signed["cps"][-1]
    assert cp["entries"] == 4 and cp["head"] == hashlib.sha256(open(led, "rb").read().splitlines()[-1]).hexdigest()
    pub.verify(bytes.fromhex(cp["sig"]), b"puffer/v1/ledger-checkpoint\x00" + canon(
        {k: v for k, v in cp.items() if k != "sig"}))
    code, out = cli_verify(capsys, led, "--pub", signed["pub"])
    assert code == 0 and "authentic: every entry is signed by key" in out.out
    code, out = cli_verify(capsys, led)
    assert code == 0 and "authenticity NOT checked" in out.out and "--pub" in out.out
    assert "not covered by a checkpoint kept elsewhere" in out.out
    capsys.readouterr()
    assert cli.main(["ledger", "checkpoint", str(led)]) == 0
    assert json.loads(capsys.readouterr().out) == cp
    # never overwritten; an unsigned ledger is not "authentic" under any key
    assert cli.main(["keygen", "--signing", str(sk)]) == 3
    unsigned = signed["tmp"] / "u.jsonl"
    pio.noise_file(signed["src"], signed["tmp"] / "u.parquet", "x", ("laplace", {"b": 1.0}), ledger=unsigned)
    code, out = cli_verify(capsys, unsigned, "--pub", signed["pub"])
    assert code == 7 and "entry 0" in out.err and "unsigned" in out.err
    code, out = cli_verify(capsys, unsigned)
    assert code == 0 and "the ledger is not signed" in out.out


def test_chain_recomputation_is_caught(signed, capsys):
    """Issue: eps 1.0 -> 0.05 and a hidden allow_uncomposed, every later hash recomputed: exit 0."""
    led = signed["led"]
    lines = open(led).read().splitlines(keepends=True)
    e = json.loads(lines[2])
    assert e["event"] == "pending" and e["guarantee"]["eps"] == 1.0
    e["guarantee"]["eps"] = 0.05
    e["allow_uncomposed"] = False
    forged = rechain(lines[:2] + [canon(e).decode() + "\n"] + lines[3:], 2)
    led.write_text("".join(forged))
    for args in ((), ("--pub", signed["pub"])):
        code, out = cli_verify(capsys, led, *args)
        assert code == 7 and "entry 2 (line 3)" in out.err and "signature does not verify" in out.err
    # the forger re-signs everything with a key of their own: self-consistent, so plain verify
    # passes but says authenticity was not checked; with the signer's public key it fails
    from puffer.publish import signing

    mine = signing.SigningKey(signing._crypto().Ed25519PrivateKey.generate())
    led.write_text("".join(rechain(forged, 0, resign=mine)))
    os.remove(str(led) + ".checkpoint")
    code, out = cli_verify(capsys, led)
    assert code == 0 and "authenticity NOT checked" in out.out
    code, out = cli_verify(capsys, led, "--pub", signed["pub"])
    assert code == 7 and "entry 0" in out.err and "not by the key given" in out.err
    # and the checkpoint the officer kept no longer matches either
    (signed["tmp"] / "cp.json").write_text(json.dumps(signed["cps"][-1]))
    code, out = cli_verify(capsys, led, "--checkpoint", str(signed["tmp"] / "cp.json"))
    assert code == 7


def test_tail_cut_against_a_checkpoint(signed, capsys):
    """Issue: deleting the last release's lines gave exit 0 and a release fewer; a head kept
    before a later genuine release then failed (no prefix check)."""
    led, tmp = signed["led"], signed["tmp"]
    early, late = tmp / "early.json", tmp / "late.json"
    early.write_text(json.dumps(signed["cps"][0]))  # taken after release 1
    late.write_text(json.dumps(signed["cps"][1]))   # after release 2
    for cp in (early, late):  # prefix semantics: the earlier checkpoint verifies after release 2
        code, out = cli_verify(capsys, led, "--pub", signed["pub"], "--checkpoint", str(cp))
        assert code == 0, out.err
    assert pio.verify(led, checkpoint=early)["unanchored"] == 2
    lines = open(led, "rb").read().splitlines(keepends=True)
    good = b"".join(lines)
    # cut the last release (two lines): the checkpoint beside the ledger catches it ...
    led.write_bytes(b"".join(lines[:2]))
    code, out = cli_verify(capsys, led, "--pub", signed["pub"])
    assert code == 7 and "entry 2" in out.err and "cut off" in out.err
    # ... and with that file rolled back to the earlier genuine one, the checkpoint kept elsewhere
    (tmp / "l.jsonl.checkpoint").write_text(json.dumps(signed["cps"][0]))
    code, out = cli_verify(capsys, led, "--pub", signed["pub"])
    assert code == 0  # nothing on disk can tell any more ...
    code, out = cli_verify(capsys, led, "--pub", signed["pub"], "--checkpoint", str(late))
    assert code == 7 and "entry 2 (line 3)" in out.err and "records 4 entries" in out.err  # ... this can
    # a rewritten prefix does not extend the checkpoint either
    led.write_bytes(good.replace(b'"rows":20', b'"rows":21'))
    code, out = cli_verify(capsys, led, "--checkpoint", str(early))
    assert code == 7


def test_removed_newlines_are_not_a_torn_tail(signed, capsys):
    """Issue: deleting two newline bytes turned the last release into a 'torn tail' that the next
    `puffer noise` removed itself."""
    led, tmp = signed["led"], signed["tmp"]
    data = open(led, "rb").read()
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[:2]) + lines[2].rstrip(b"\n") + lines[3].rstrip(b"\n")
    led.write_bytes(cut)
    code, out = cli_verify(capsys, led)
    assert code == 7 and "newline was removed" in out.err
    with pytest.raises(LedgerError, match="newline was removed"):
        pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True,
                       allow_uncomposed=True, signing_key=signed["sk"])
    assert led.read_bytes() == cut and not (tmp / "o9.parquet").exists()
    # a torn entry (an incomplete line) that cuts into checkpointed entries is not repaired
    led.write_bytes(b"".join(lines[:3]) + lines[3][:40])
    with pytest.raises(LedgerError, match="cut off"):
        pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True,
                       allow_uncomposed=True, signing_key=signed["sk"])
    # nor is anything appended once the checkpoint file is gone (deleting it would hide a cut)
    cpf = tmp / "l.jsonl.checkpoint"
    saved = cpf.read_bytes()
    led.write_bytes(b"".join(lines[:2]))
    cpf.unlink()
    with pytest.raises(LedgerError, match="without its checkpoint file"):
        pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True,
                       allow_uncomposed=True, signing_key=signed["sk"])
    capsys.readouterr()
    assert cli.main(["ledger", "checkpoint", str(led)]) == 3  # a new one needs the signing key ...
    assert "signing_key" in capsys.readouterr().err
    assert cli.main(["ledger", "checkpoint", str(led), "--sign", str(signed["sk"])]) == 0  # ... and is written
    assert json.loads(capsys.readouterr().out)["entries"] == 2
    cpf.write_bytes(saved)
    # a genuinely torn append (after everything the checkpoint covers) is repaired and recorded
    led.write_bytes(data + b'{"allow_uncomposed":true,"bud')
    e = pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True,
                       allow_uncomposed=True, signing_key=signed["sk"])
    assert e["repaired_tail"]["bytes"] == 29 and pio.verify(led, pub=signed["pub"])["entries"] == 6


def test_unsigned_appends_are_refused(signed, capsys):
    """Issue: append_ledger added a fake `resolved ... aborted` entry and the release vanished."""
    led, tmp = signed["led"], signed["tmp"]
    rid = pio.read_ledger(led)[0]["release_id"]
    fake = {"puffer_ledger": 2, "event": "resolved", "outcome": "aborted", "release_id": rid}
    with pytest.raises(ParameterError, match="signing_key.*every append must be"):
        pio.append_ledger(led, fake)
    with pytest.raises(ParameterError, match="signing_key"):  # nor through a release
        pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True, allow_uncomposed=True)
    other = tmp / "other.sign"
    pio.signing_keygen(other)
    with pytest.raises(ParameterError, match="the ledger's signing key"):
        pio.noise_file(signed["src"], tmp / "o9.parquet", "x", FW, ledger=led, per_unit=True, allow_uncomposed=True,
                       signing_key=other)
    assert not (tmp / "o9.parquet").exists()
    # with the key, append_ledger writes a note: it cannot change what the ledger says of releases
    n = pio.append_ledger(led, fake, signing_key=signed["sk"])
    assert n["event"] == "note" and n["note"] == fake
    assert pio.verify(led, pub=signed["pub"])["releases"] == 2
    # a line appended by hand, chained correctly but unsigned
    lines = open(led).read().splitlines(keepends=True)
    e = json.loads(lines[-1])
    e.pop("sig"), e.pop("signer")
    e["note"] = {"text": "by hand"}
    led.write_text("".join(rechain(lines[:-1] + [canon(e).decode() + "\n"], len(lines) - 1)))
    (tmp / "l.jsonl.checkpoint").unlink()
    code, out = cli_verify(capsys, led)
    assert code == 7 and f"entry {len(lines) - 1}" in out.err and "not signed" in out.err
    # an unsigned ledger cannot become signed half-way
    u = tmp / "u.jsonl"
    pio.noise_file(signed["src"], tmp / "u.parquet", "x", ("laplace", {"b": 1.0}), ledger=u)
    with pytest.raises(ParameterError, match="signed from its first entry or not at all"):
        pio.noise_file(signed["src"], tmp / "u2.parquet", "x", ("laplace", {"b": 1.0}), ledger=u,
                       signing_key=signed["sk"])


def test_key_and_nonce_swap_is_caught(signed, capsys):
    """Issue: swapping key ids / nonces between entries (chain recomputed) gave exit 0."""
    led = signed["led"]
    lines = open(led).read().splitlines(keepends=True)
    a, b = json.loads(lines[0]), json.loads(lines[2])
    assert a["event"] == b["event"] == "pending"
    a["nonce"], b["nonce"] = b["nonce"], a["nonce"]
    a["key"], b["key"] = b["key"], a["key"]
    led.write_text("".join(rechain([canon(a).decode() + "\n", lines[1], canon(b).decode() + "\n", lines[3]], 0)))
    for args in ((), ("--pub", signed["pub"])):
        code, out = cli_verify(capsys, led, *args)
        assert code == 7 and "entry 0 (line 1)" in out.err and "signature does not verify" in out.err


def test_checkpoint_files_are_checked(signed, capsys):
    led, tmp = signed["led"], signed["tmp"]
    cpf = tmp / "l.jsonl.checkpoint"
    cp = json.loads(cpf.read_text())
    cp["entries"] = 3  # an edited checkpoint
    (tmp / "bad.json").write_text(json.dumps(cp))
    code, out = cli_verify(capsys, led, "--checkpoint", str(tmp / "bad.json"))
    assert code == 7 and "signature does not verify" in out.err
    code, out = cli_verify(capsys, led, "--checkpoint", str(tmp / "nowhere.json"))
    assert code == 3 and "an existing checkpoint file" in out.err
    cp.pop("sig"), cp.pop("signer")  # an unsigned checkpoint beside a signed ledger: replaced by someone
    cpf.write_text(json.dumps(cp))
    code, out = cli_verify(capsys, led)
    assert code == 7 and "unsigned, but the ledger is signed" in out.err
