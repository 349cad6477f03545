"""Issue 39 §5: publishing a planned series from the command line and the API.

A series plan (``puffer series plan``, signed) is published window by window with ``puffer
noise --series PLAN --window K``; the ledger records the plan once and counts its windows once,
with the plan's guarantee. Refused: a window the plan does not have, a second release of a
window, a release outside the series on the same units, rows outside the window, a plan whose
framework differs from the one given, a tampered plan.

Oracles: the plan's guarantee and scales from :func:`puffer.series.plan` called here on the
framework built directly (:func:`puffer.models.markov_chain`), the households' window sums
computed with numpy, the published noise recomputed from the release's keyed stream and the
recorded lattice law (as tests/prod/test_prod_dask.py does), and the composition rules of
Pierquin et al. 2024 (Prop E.1, App. E.1) applied by hand."""
from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer
import puffer.io as pio
import puffer.series as pseries
from puffer import cli
from puffer.errors import ParameterError

T, L = 16, 4          # a horizon of 16 positions, windows of 4: windows 0 .. 3
TRANS = [[0.9, 0.1], [0.2, 0.8]]
MARKOV = {"model": {"kind": "markov_chain", "T": T, "trans": TRANS}, "target": {"eps": 1.0}}
EPS = 1.0


def records(path, k, units=range(6), *, seed=None, shift=0, drop=0):
    """The records of window k: one row per (unit, position of window k) with a 0/1 reading."""
    units = np.asarray(units, dtype=np.int64)
    rng = np.random.default_rng(k if seed is None else seed)
    hh = np.repeat(units, L)
    t = np.tile(np.arange(k * L, (k + 1) * L, dtype=np.int64), units.size) + shift
    x = rng.integers(0, 2, hh.size).astype(np.float64)
    tab = pa.table({"household": hh[drop:], "t": t[drop:], "kwh": x[drop:]})
    pq.write_table(tab, path)
    return path, tab


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """Keys and one signed plan for the module (planning is the slow part: done once)."""
    d = tmp_path_factory.mktemp("planned")
    fw = d / "fw.json"
    fw.write_text(json.dumps(MARKOV))
    assert cli.main(["keygen", "--signing", str(d / "sign.key")]) == 0
    assert cli.main(["series", "plan", str(fw), "--windows", str(L), "--eps", str(EPS), "--out", str(d / "plan.json"),
                     "--sign", str(d / "sign.key")]) == 0
    return d


@pytest.fixture
def s(tmp_path, planned):
    for name in ("fw.json", "plan.json", "sign.key", "sign.key.pub"):
        shutil.copy2(planned / name, tmp_path / name)
    assert cli.main(["keygen", str(tmp_path / "k.key")]) == 0
    return {"tmp": tmp_path, "fw": tmp_path / "fw.json", "key": tmp_path / "k.key", "sk": tmp_path / "sign.key",
            "pub": tmp_path / "sign.key.pub", "plan": tmp_path / "plan.json", "led": tmp_path / "ledger.jsonl"}


def resigned(s, path, sk=None, **changes):
    """A copy of the module's plan with ``changes`` (e.g. another plan id: another series of the same
    plan), digested and signed again with ``sk`` (default the ledger's key): a valid plan file."""
    plan = json.loads(s["plan"].read_text())
    body = {k: v for k, v in plan.items() if k not in ("digest", "sig", "signer")}
    body.update(changes)
    path.write_text(json.dumps(pio_sign(body, sk or s["sk"])))
    return path


def noise(s, src, out, k, *extra, plan=None, sign=True):
    argv = ["noise", str(src), str(s["tmp"] / out), "--column", "kwh", "--unit", "household", "--order", "t",
            "--key", str(s["key"]), "--ledger", str(s["led"]), "--series", str(plan or s["plan"]), "--window", str(k),
            *extra]
    return cli.main(argv + (["--sign", str(s["sk"])] if sign else []))


def same(g, h):
    """Two guarantees of the same type, eps and delta (a window's provenance is the window's)."""
    return all(g[f] == h[f] for f in ("type", "eps", "delta"))


def show(s, capsys):
    capsys.readouterr()
    assert cli.main(["ledger", "show", str(s["led"]), "--pub", str(s["pub"]), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def events(s):
    return [e["event"] for e in pio.read_ledger(s["led"])]


def test_three_windows_from_the_cli_total_is_the_plans_guarantee(s, capsys):
    plan = json.loads(s["plan"].read_text())
    # the plan's numbers are puffer.series.plan's on the framework built here directly
    ref = pseries.plan(puffer.models.markov_chain(np.array(TRANS), T=T), [(a, a + L) for a in range(0, T, L)],
                             EPS)
    assert plan["guarantee"] == ref.guarantee.to_dict() and plan["scales"] == [float(x) for x in ref.scales]
    assert plan["windows"] == [[0, 4], [4, 8], [8, 12], [12, 16]] and plan["guarantee"]["eps"] <= EPS
    published = {}
    for k in range(3):
        src, tab = records(s["tmp"] / f"w{k}.parquet", k)
        assert noise(s, src, f"o{k}.parquet", k) == 0
        published[k] = tab
    entries = pio.read_ledger(s["led"])
    # the plan once (before window 0), then pending + completed per window
    assert [e["event"] for e in entries] == ["series"] + ["pending", "completed"] * 3
    rec = entries[0]["series"]
    assert rec["digest"] == plan["digest"] and rec["guarantee"] == plan["guarantee"]
    assert rec["theorem"] == plan["theorem"] and rec["plan_id"] == plan["plan_id"] and rec["windows"] == 4
    for k, e in enumerate(x for x in entries if x["event"] == "pending"):
        assert e["series"]["window"] == k and e["series"]["positions"] == [k * L, (k + 1) * L]
        assert same(e["guarantee"], plan["guarantee"]) and e["noise"]["b"] == plan["scales"][k]
        # the published values: the households' window sums plus the noise of the release's keyed
        # stream on the recorded lattice law (position = household id)
        t = published[k].to_pandas()
        sums = t.groupby("household")["kwh"].sum().sort_index().to_numpy()
        lat = puffer.lattice.LatticePlan.from_description(e["noise_lattice"])
        assert lat.scale >= plan["scales"][k]   # the plan's scale, padded for the lattice
        st = pio.release_stream(pio.as_key(s["key"]), e["nonce"], "kwh")
        want = puffer.lattice.add_lattice_noise(sums, lat, rng=st)
        got = pq.read_table(s["tmp"] / f"o{k}.parquet").to_pandas()
        assert got["household"].tolist() == list(range(6))
        assert np.array_equal(got["kwh_sum_noisy"].to_numpy(), want)
    rep = show(s, capsys)   # signatures checked against the public key
    assert rep["verify"]["authenticated"]
    (pop,) = rep["populations"]
    assert same(pop["guarantee"], plan["guarantee"]) and pop["units"] == 6   # counted once for all windows
    assert f"series {plan['plan_id']}" in pop["theorem"] and "Prop E.1" in pop["theorem"]
    (ser,) = rep["series"]
    assert ser["published"].keys() == {"0", "1", "2"} and ser["pending"] == [3]
    assert ser["guarantee"] == plan["guarantee"] and same(ser["totals"][0]["guarantee"], plan["guarantee"])
    assert [r["series"]["window"] for r in rep["releases"]] == [0, 1, 2]
    assert cli.main(["ledger", "show", str(s["led"])]) == 0
    text = capsys.readouterr().out
    assert "published: 3 window(s) 0, 1, 2" in text and "pending: 1 window(s) 3" in text
    assert cli.main(["ledger", "verify", str(s["led"]), "--pub", str(s["pub"])]) == 0


def test_window_outside_the_plan_is_refused(s, capsys):
    src, _ = records(s["tmp"] / "w.parquet", 0)
    capsys.readouterr()
    for k in ("4", "-1"):
        assert noise(s, src, "o.parquet", k) == 3
        assert "window" in capsys.readouterr().err
    assert not (s["tmp"] / "o.parquet").exists() and events(s) == []
    with pytest.raises(ParameterError, match=r"0 \.\. 3 \(4 windows of 4 positions over T = 16\)"):
        pio.noise_file(src, s["tmp"] / "o.parquet", "kwh", None, series=s["plan"], window=4, unit="household",
                       order="t", key=s["key"], ledger=s["led"], signing_key=s["sk"])
    # series and window come together
    with pytest.raises(ParameterError, match="given together"):
        pio.PublishOptions(series=str(s["plan"]))
    with pytest.raises(ParameterError, match="given together"):
        pio.PublishOptions(window=1)


def test_release_outside_the_series_on_the_same_units_is_refused(s, capsys):
    src, _ = records(s["tmp"] / "w0.parquet", 0)
    assert noise(s, src, "o0.parquet", 0) == 0
    # the same households released under a one-window framework of their own: no theorem
    # composes it with the series (Pufferfish, App. E.1 of Pierquin et al. 2024)
    day = s["tmp"] / "day.json"
    day.write_text(json.dumps({"model": {"kind": "markov_chain", "T": L, "trans": TRANS}, "target": {"eps": 1.0}}))
    src1, _ = records(s["tmp"] / "w1.parquet", 1)
    before = events(s)
    capsys.readouterr()
    code = cli.main(["noise", str(src1), str(s["tmp"] / "x.parquet"), "--column", "kwh", "--mechanism", str(day),
                     "--unit", "household", "--order", "t", "--key", str(s["key"]), "--ledger", str(s["led"]),
                     "--sign", str(s["sk"])])
    err = capsys.readouterr().err
    assert code == 3 and "no known sequential composition" in err and "count as one release" in err
    assert events(s) == before and not (s["tmp"] / "x.parquet").exists()
    # a second series (another plan of the same framework) on the same households: refused too
    plan2 = resigned(s, s["tmp"] / "plan2.json", plan_id="0" * 32)
    capsys.readouterr()
    assert noise(s, src1, "y.parquet", 1, plan=plan2) == 3
    assert "no known sequential composition" in capsys.readouterr().err
    assert events(s) == before
    # on other households the same release composes in parallel (Prop E.1)
    other, _ = records(s["tmp"] / "other.parquet", 1, units=range(100, 104))
    with pytest.warns(UserWarning, match="new units"):   # (the registry's warning: other ids, declared new)
        assert cli.main(["noise", str(other), str(s["tmp"] / "z.parquet"), "--column", "kwh", "--mechanism",
                         str(day), "--unit", "household", "--order", "t", "--key", str(s["key"]), "--ledger",
                         str(s["led"]), "--sign", str(s["sk"]), "--new-units"]) == 0
    rep = show(s, capsys)
    assert sorted(p["units"] for p in rep["populations"]) == [4, 6]
    assert all(p["guarantee"]["eps"] <= 1.0 for p in rep["populations"])


def test_second_release_of_a_window_refused_rerun_reproduces(s, capsys):
    src, _ = records(s["tmp"] / "w0.parquet", 0)
    assert noise(s, src, "o0.parquet", 0) == 0
    rid = pio.read_ledger(s["led"])[1]["release_id"]
    capsys.readouterr()
    assert noise(s, src, "again.parquet", 0) == 3
    assert f"release {rid} published window 0 on units of this release" in capsys.readouterr().err
    again, _ = records(s["tmp"] / "w0b.parquet", 0, seed=9)  # other values of the same households
    assert noise(s, again, "again.parquet", 0) == 3
    assert not (s["tmp"] / "again.parquet").exists()
    # --rerun reproduces the recorded bytes; the total does not change
    assert noise(s, src, "rerun.parquet", 0, "--rerun", rid) == 0
    assert hashlib.sha256((s["tmp"] / "rerun.parquet").read_bytes()).digest() == \
        hashlib.sha256((s["tmp"] / "o0.parquet").read_bytes()).digest()
    # window 0 of other households is another part of the same series (disjoint units)
    other, _ = records(s["tmp"] / "w0c.parquet", 0, units=range(50, 53))
    with pytest.warns(UserWarning, match="new units"):
        assert noise(s, other, "other.parquet", 0, "--new-units") == 0
    rep = show(s, capsys)
    plan = json.loads(s["plan"].read_text())
    assert [same(p["guarantee"], plan["guarantee"]) for p in rep["populations"]] == [True, True]
    assert [e["event"] for e in pio.read_ledger(s["led"])].count("series") == 1   # recorded once


def test_rows_outside_the_window_are_refused(s, capsys):
    capsys.readouterr()
    src, _ = records(s["tmp"] / "shifted.parquet", 1, shift=1)   # positions 5 .. 8 for window 1 (4 .. 7)
    assert noise(s, src, "o.parquet", 1) == 3
    err = capsys.readouterr().err
    assert "position 8 at row 3 (unit 0)" in err and "[4, 8)" in err
    src, _ = records(s["tmp"] / "wrong.parquet", 2)               # window 2's records given as window 1
    assert noise(s, src, "o.parquet", 1) == 3
    assert "position 8 at row 0 (unit 0)" in capsys.readouterr().err
    src, _ = records(s["tmp"] / "short.parquet", 1, drop=1)      # a household without position 4
    assert noise(s, src, "o.parquet", 1) == 3
    assert "exactly T = 4 records per unit" in capsys.readouterr().err
    assert events(s) == [] and not (s["tmp"] / "o.parquet").exists()


def test_framework_must_be_the_plans(s, capsys):
    src, _ = records(s["tmp"] / "w0.parquet", 0)
    other = s["tmp"] / "other.json"
    other.write_text(json.dumps({"model": {"kind": "markov_chain", "T": T, "trans": [[0.8, 0.2], [0.2, 0.8]]},
                                 "target": {"eps": 1.0}}))
    capsys.readouterr()
    assert noise(s, src, "o.parquet", 0, "--mechanism", str(other)) == 3
    assert "the series plan's framework" in capsys.readouterr().err
    assert noise(s, src, "o.parquet", 0, "--mechanism", str(s["fw"])) == 0   # the plan's own: accepted
    capsys.readouterr()
    assert noise(s, src, "p.parquet", 1, "--noise", "laplace", "--scale", "1") == 3
    assert "no --noise with --series" in capsys.readouterr().err


def test_tampered_plans_are_refused(s, capsys):
    src, _ = records(s["tmp"] / "w0.parquet", 0)
    plan = json.loads(s["plan"].read_text())
    bad = s["tmp"] / "bad.json"

    def refused(data, match, k=0):
        if bad.exists():
            bad.unlink()
        bad.write_text(json.dumps(data))
        capsys.readouterr()
        assert noise(s, src, f"o{k}.parquet", k, plan=bad) == 3
        err = capsys.readouterr().err
        assert match in err, err

    # smaller scales: the digest no longer matches
    refused({**plan, "scales": [x / 2 for x in plan["scales"]]}, "its digest does not match its content")
    # ... with the digest recomputed: the signature fails
    body = {k: v for k, v in plan.items() if k not in ("digest", "sig")}
    body["scales"] = [x / 2 for x in plan["scales"]]
    d = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    refused({**body, "digest": d, "sig": plan["sig"]}, "its signature does not verify")
    # ... unsigned, digest recomputed: the scales it shows are not the plan's
    unsigned = {k: v for k, v in body.items() if k != "signer"}
    refused(pio_sign_unsigned(unsigned), "the windows, scales, guarantee or theorem it shows are not the plan's")
    # an intact but unsigned plan: a signed ledger takes plans signed by its own key only
    intact = {k: v for k, v in plan.items() if k not in ("digest", "sig", "signer")}
    refused(pio_sign_unsigned(intact), "a plan signed by the ledger's key")
    assert events(s) == []
    # a plan signed by another key
    assert cli.main(["keygen", "--signing", str(s["tmp"] / "other.key")]) == 0
    mine = resigned(s, s["tmp"] / "mine.json", sk=s["tmp"] / "other.key")
    capsys.readouterr()
    assert noise(s, src, "o.parquet", 0, plan=mine) == 3
    assert "a plan signed by the ledger's key" in capsys.readouterr().err
    # after window 0 of the real plan, a plan file under its plan id with another digest is refused
    assert noise(s, src, "o0.parquet", 0) == 0
    # (a valid plan file, signed by the ledger's key, of the same plan id with another content)
    forged = json.loads(resigned(s, s["tmp"] / "forged.json", created="2020-01-01T00:00:00+00:00").read_text())
    assert forged["plan_id"] == plan["plan_id"] and forged["digest"] != plan["digest"]
    src, _ = records(s["tmp"] / "w1.parquet", 1)
    refused(forged, "it was changed after the series' first release", k=1)


def pio_sign_unsigned(body):
    from puffer.publish.ledger import canonical

    return {**body, "digest": hashlib.sha256(canonical(body)).hexdigest()}


def pio_sign(body, sk_path):
    """``body`` digested and signed as `puffer series plan --sign` does (the format of puffer.publish.series)."""
    from puffer.publish.ledger import canonical
    from puffer.publish.series import SERIES_DOMAIN
    from puffer.publish.signing import load_signing_key

    sk = load_signing_key(sk_path)
    body = {**body, "signer": sk.public.describe()}
    d = hashlib.sha256(canonical(body)).hexdigest()
    return {**body, "digest": d, "sig": sk.sign(SERIES_DOMAIN, bytes.fromhex(d))}


def test_plan_file_show_and_never_overwritten(s, capsys):
    capsys.readouterr()
    assert cli.main(["series", "show", str(s["plan"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(s["plan"].read_text())
    assert cli.main(["series", "plan", str(s["fw"]), "--windows", str(L), "--eps", "1", "--out", str(s["plan"])]) == 3
    assert "never overwritten" in capsys.readouterr().err
    assert cli.main(["series", "plan", str(s["fw"]), "--windows", "5", "--eps", "1", "--out",
                     str(s["tmp"] / "p5.json")]) == 3
    assert "divides the framework's horizon T = 16" in capsys.readouterr().err


def test_dask_window_release(s, capsys):
    """The Dask engine takes the same options (PublishOptions.series/window)."""
    import dask
    import dask.dataframe as dd

    import puffer.dask as pdask

    _, tab = records(s["tmp"] / "w2.parquet", 2)
    pdf = tab.to_pandas().sample(frac=1.0, random_state=3)
    opts = pio.PublishOptions(series=str(s["plan"]), window=2, unit="household", order="t", key=str(s["key"]),
                              ledger=str(s["led"]), signing_key=str(s["sk"]))
    with dask.config.set(scheduler="synchronous"):
        got = pdask.add_noise(dd.from_pandas(pdf, npartitions=3, sort=False), "kwh", None, options=opts).compute()
        e = [x for x in pio.read_ledger(s["led"]) if x["event"] == "pending"][0]
        assert e["path"] == "dask" and e["series"]["window"] == 2
        sums = pdf.groupby("household")["kwh"].sum().sort_index().to_numpy()
        lat = puffer.lattice.LatticePlan.from_description(e["noise_lattice"])
        want = puffer.lattice.add_lattice_noise(sums, lat, rng=pio.release_stream(pio.as_key(s["key"]), e["nonce"],
                                                                                  "kwh"))
        assert np.array_equal(got["kwh_sum_noisy"].to_numpy(), want)
        with pytest.raises(ParameterError, match="position"):
            pdask.add_noise(dd.from_pandas(pdf, npartitions=2), "kwh", None, options=opts.replace(window=3))
    assert os.path.exists(s["led"])


def test_what_a_window_release_cannot_be_given(s):
    """Each option that would change a window's query or noise is refused, naming it, before any work."""
    src, _ = records(s["tmp"] / "w0.parquet", 0)
    kw = {"series": s["plan"], "window": 0, "key": s["key"], "ledger": s["led"], "signing_key": s["sk"]}
    cases = [({"unit": "household", "order": "t", "select": "MQM"}, "select"),
             ({"unit": "household", "order": "t", "float_noise": True}, "float_noise"),
             ({"unit": "household", "per_unit": True}, "per_unit"),
             ({"unit": "household"}, "order"),
             ({"order": "t"}, "unit")]
    for extra, name in cases:
        with pytest.raises(ParameterError, match=f"parameter '{name}'"):
            pio.noise_file(src, s["tmp"] / "o.parquet", "kwh", None, **kw, **extra)
    with pytest.raises(ParameterError, match="one column"):
        pio.noise_file(src, s["tmp"] / "o.parquet", ["kwh", "t"], None, **kw, unit="household")
    with pytest.raises(ParameterError, match="an integer >= 0"):
        pio.PublishOptions(series=str(s["plan"]), window=-1)
    assert events(s) == [] and not (s["tmp"] / "o.parquet").exists()
