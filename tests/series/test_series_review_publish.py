"""Adversarial review of the series plan file (puffer.publish.series, issue 39 section 5): a plan
file whose scales were lowered and whose copies and digests were rewritten to match.

SeriesFile checks the digest against the content, a signature where there is one, the framework's
digest and that the plan's fields agree with one another. An unsigned plan (or one signed with
the editor's own key, used with an unsigned ledger) that was edited consistently loads, although
the exact loss at its scales is far above its claim (checked here with the reviewer's independent
oracle); it is refused by the re-check of the bound on the embedded framework
(``SeriesFile.verify``: ``series_epsilon(framework, windows, scale) <= eps``), which every
release runs the first time a plan is used with a ledger.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from review_oracle import Series

from puffer.errors import ParameterError

pub = pytest.importorskip("puffer.publish.series")

T, LEN = 8, 4
TRANS = [[0.9, 0.1], [0.2, 0.8]]
CFG = {"model": {"kind": "markov_chain", "T": T, "trans": TRANS}, "target": {"eps": 1.0}}


def _retamper(env: dict, factor: float) -> dict:
    """The plan file with every scale divided by ``factor`` and every copy and digest made to match."""
    from puffer.publish.ledger import canonical
    from puffer.series import SeriesPlan

    d = json.loads(json.dumps(env))
    p = json.loads(d["plan"])
    p["scales"] = [s / factor for s in p["scales"]]
    p["guarantee"]["provenance"]["noise"]["scales"] = p["scales"]
    p["lattice_sensitivity"] /= factor        # (else refused by SeriesPlan itself: Lemma 3's bound)
    p["guarantee"]["provenance"]["noise"]["lattice_sensitivity"] = p["lattice_sensitivity"]
    sp = SeriesPlan.from_dict(p)                      # the plan object accepts it
    d["plan"] = sp.to_json()
    d["plan_digest"] = str(sp.digest())
    d["scales"] = [float(s) for s in sp.scales]
    d["guarantee"] = sp.guarantee.to_dict()
    for k in ("digest", "sig", "signer"):
        d.pop(k, None)
    d["digest"] = hashlib.sha256(canonical(d)).hexdigest()
    return d


def test_an_intact_plan_file_loads_and_is_sound():
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    f = pub.SeriesFile(env)
    fw = f.framework
    s = Series([(fw.transitions[0], fw.initial_laws[0])], [0, 1], f.windows, T)
    assert s.loss(f.plan.scales)[0] <= f.plan.guarantee.eps


def test_a_consistently_edited_unsigned_plan_file_is_refused():
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    bad = _retamper(env, 4.0)
    f = pub.SeriesFile(bad)                           # every copy and digest agrees: it loads ...
    fw = f.framework
    s = Series([(fw.transitions[0], fw.initial_laws[0])], [0, 1], f.windows, T)
    assert s.loss(f.plan.scales)[0] > f.plan.guarantee.eps      # ... and its claim is false (exact: 3.63)
    with pytest.raises(ParameterError, match="its bound does not hold"):
        f.verify()                                    # the bound re-derived from the embedded framework
    with pytest.raises(ParameterError, match="its bound does not hold"):
        pub.verify_for_ledger([], f)                  # what a release runs the first time a plan meets a ledger
    # the intact plan passes the same re-check, with a certified eps at most its claim
    ok = pub.SeriesFile(env)
    v = ok.verify()
    assert v["eps"] <= ok.plan.guarantee.eps and v["plan_digest"] == env["plan_digest"]
    assert s.loss(ok.plan.scales)[0] <= v["eps"]


# ----------------------------------------------------------------------------- through the CLI

def _records(path, k, units=range(5)):
    import pyarrow as pa
    import pyarrow.parquet as pq

    units = np.asarray(units, dtype=np.int64)
    rng = np.random.default_rng(k)
    hh = np.repeat(units, LEN)
    t = np.tile(np.arange(k * LEN, (k + 1) * LEN, dtype=np.int64), units.size)
    pq.write_table(pa.table({"household": hh, "t": t, "kwh": rng.integers(0, 2, hh.size).astype(np.float64)}), path)
    return path


def _noise(tmp, plan, k, *extra):
    from puffer import cli

    return cli.main(["noise", str(_records(tmp / f"w{k}.parquet", k)), str(tmp / f"o{k}_{plan.stem}.parquet"),
                     "--column", "kwh", "--unit", "household", "--order", "t", "--key", str(tmp / "k.key"),
                     "--ledger", str(tmp / "ledger.jsonl"), "--series", str(plan), "--window", str(k), *extra])


def _signed(d, sk_path):
    """``d`` (a plan file's object) re-signed with the key file ``sk_path``: a valid signed plan."""
    from puffer.publish.ledger import canonical
    from puffer.publish.signing import load_signing_key

    sk = load_signing_key(sk_path)
    body = {k: v for k, v in d.items() if k not in ("digest", "sig", "signer")}
    body["signer"] = sk.public.describe()
    dg = hashlib.sha256(canonical(body)).hexdigest()
    return {**body, "digest": dg, "sig": sk.sign(pub.SERIES_DOMAIN, bytes.fromhex(dg))}


def test_publishing_rechecks_the_bound_once_per_ledger(tmp_path, capsys, monkeypatch):
    # An edited plan (scales / 4, everything rewritten) is refused before any work: unsigned, and
    # signed by the editor's own key while the ledger is unsigned (a signature shows who wrote the
    # file, not that its scales hold: it is re-checked the same way). The intact plan's first
    # window re-derives the bound and the ledger records it (plan digest); later windows of that
    # plan only need their digest to match the record (the re-check does not run again).
    import puffer.io as pio
    from puffer import cli
    from puffer.series import SeriesPlan

    assert cli.main(["keygen", str(tmp_path / "k.key")]) == 0
    assert cli.main(["keygen", "--signing", str(tmp_path / "editor.key")]) == 0
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    bad = _retamper(env, 4.0)
    files = {"intact": env, "edited": bad, "edited_signed": _signed(bad, tmp_path / "editor.key")}
    for name, d in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(d))
    for name in ("edited", "edited_signed"):
        capsys.readouterr()
        assert _noise(tmp_path, tmp_path / f"{name}.json", 0) == 3
        err = capsys.readouterr().err
        assert "its bound does not hold" in err, err
    assert not (tmp_path / "ledger.jsonl").exists() or pio.read_ledger(tmp_path / "ledger.jsonl") == []
    # `puffer series show` re-derives the bound too
    assert cli.main(["series", "show", str(tmp_path / "edited.json")]) == 3
    assert "its bound does not hold" in capsys.readouterr().err
    assert cli.main(["series", "show", str(tmp_path / "intact.json")]) == 0
    assert "bound re-derived on its framework: certified eps" in capsys.readouterr().out
    calls = []
    real = SeriesPlan.verify

    def counted(self, fw, **kw):
        calls.append(self.digest())
        return real(self, fw, **kw)

    monkeypatch.setattr(SeriesPlan, "verify", counted)
    assert _noise(tmp_path, tmp_path / "intact.json", 0) == 0
    assert calls == [env["plan_digest"]]
    rec = [e for e in pio.read_ledger(tmp_path / "ledger.jsonl") if e["event"] == "series"]
    assert len(rec) == 1
    v = rec[0]["series"]["verified"]
    assert v["plan_digest"] == env["plan_digest"] and v["eps"] <= 1.0 and v["theorem"] == "quilt"
    assert _noise(tmp_path, tmp_path / "intact.json", 1) == 0
    assert calls == [env["plan_digest"]]                 # the ledger's record: not re-derived again
    # the edited plan under the intact plan's id is refused by the digest rule once recorded
    capsys.readouterr()
    assert _noise(tmp_path, tmp_path / "edited.json", 1) == 3
    assert "changed after the series' first release" in capsys.readouterr().err


def test_the_recheck_reports_progress():
    # the re-check costs a part of the planning: it reports progress like the planning does
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    seen = []
    pub.SeriesFile(env).plan.verify(pub.SeriesFile(env).framework, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0


def test_the_edit_is_what_the_oracle_says():
    # the tampered scales really leak more than the claim (so accepting them would be a soundness gap)
    env = pub.make_plan(CFG, windows=LEN, eps=1.0)
    sc = np.array(json.loads(env["plan"])["scales"]) / 4
    fw_trans = np.array(TRANS)
    pi = np.array([2 / 3, 1 / 3])
    s = Series([(fw_trans, pi)], [0, 1], [(0, 4), (4, 8)], T)
    assert s.loss(sc)[0] > 3.0
