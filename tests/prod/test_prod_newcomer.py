"""Issue 42: what a newcomer trips over. Each test failed on the code before its fix.

Oracles: which functions ran (the mechanism resolution, where a framework is built or fitted and
calibrated, replaced by a sentinel that records its calls: the work done before a check is bounded
by "never called", not by a clock), the files left in the output's folder, and the bytes written.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer.io as pio
from puffer import cli
from puffer.errors import ParameterError, PufferError

FW = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "household.toml")


@pytest.fixture
def no_calibration(monkeypatch):
    """puffer.publish.preamble.resolve (framework built or fitted, mechanism calibrated) replaced by a
    sentinel: a test using this fixture fails if any release reaches the calibration."""
    import puffer.publish.preamble as pre

    calls = []

    def sentinel(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the mechanism was resolved (calibrated) before the check")

    monkeypatch.setattr(pre, "resolve", sentinel)
    return calls


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "in.parquet"
    pq.write_table(pa.table({"unit": np.arange(12), "x": np.arange(12.0)}), p)
    k = tmp_path / "k.key"
    pio.keygen(str(k))
    return p, k


# -- 1. errors before work ----------------------------------------------------------------------

def test_a_misspelt_column_is_refused_before_any_calibration(tmp_path, data, no_calibration):
    src, key = data
    with pytest.raises(ParameterError, match=r"'y'.*it has \['unit', 'x'\]"):
        pio.noise_file(src, tmp_path / "out.parquet", ["y"], FW, key=str(key))
    with pytest.raises(ParameterError, match=r"unit.*'person'.*it has"):
        pio.noise_file(src, tmp_path / "out.parquet", ["x"], FW, key=str(key), unit="person")
    with pytest.raises(ParameterError, match=r"order.*'t'.*it has"):
        pio.noise_file(src, tmp_path / "out.parquet", ["x"], FW, key=str(key), unit="unit", order="t")
    assert no_calibration == [] and not os.path.exists(tmp_path / "out.parquet")


def test_a_bad_key_file_is_refused_before_any_calibration(tmp_path, data, no_calibration):
    src, _ = data
    with pytest.raises(ParameterError, match="key"):
        pio.noise_file(src, tmp_path / "out.parquet", ["x"], FW, key=str(tmp_path / "missing.key"))
    assert no_calibration == []


def test_the_cli_refuses_a_column_typo_before_calibrating(tmp_path, data, no_calibration, capsys):
    src, key = data
    rc = cli.main(["noise", str(src), str(tmp_path / "out.parquet"), "--column", "xx", "--mechanism", FW,
                   "--key", str(key)])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_INPUT and "'xx'" in err and "['unit', 'x']" in err
    assert no_calibration == []


# -- 2. clutter -----------------------------------------------------------------------------------

def test_no_lock_file_is_left_beside_the_output(tmp_path, data):
    src, key = data
    out = tmp_path / "out.parquet"
    pio.noise_file(src, out, ["x"], ("laplace", {"b": 1.0}), key=str(key))
    assert sorted(os.listdir(tmp_path)) == ["in.parquet", "k.key", "out.parquet", "puffer-ledger.jsonl",
                                             "puffer-ledger.jsonl.checkpoint"]
    # a refused release (the output's folder is there, the column is not numeric) leaves none either
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "s.parquet")
    with pytest.raises(Exception, match="column 's'"):
        pio.noise_file(tmp_path / "s.parquet", tmp_path / "o2.parquet", ["s"], ("laplace", {"b": 1.0}), key=str(key))
    assert not [f for f in os.listdir(tmp_path) if "puffer-lock" in f]


def test_the_output_lock_still_excludes_a_second_writer(tmp_path):
    from puffer.errors import PufferIOError
    from puffer.publish.engines.file import _lock_path, _output_lock

    dst = str(tmp_path / "o.parquet")
    with _output_lock(dst):
        assert os.path.exists(_lock_path(dst))
        with pytest.raises(PufferIOError, match="another puffer process"):
            with _output_lock(dst):
                pass
    assert not os.path.exists(_lock_path(dst))
    with _output_lock(dst):   # and the path can be locked again once the file is gone
        pass


def test_a_refused_release_leaves_no_unit_secret(tmp_path, data):
    src, key = data
    led = tmp_path / "L.jsonl"
    bad = tmp_path / "float_units.parquet"
    pq.write_table(pa.table({"unit": np.arange(12.0), "x": np.arange(12.0)}), bad)
    with pytest.raises(PufferError, match="unit"):
        pio.noise_file(bad, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key),
                       ledger=str(led), unit="unit", per_unit=True)
    assert not os.path.exists(str(led) + ".unit-secret") and not os.path.exists(led)
    # a recorded release keeps its secret; a refused one after it does not remove it
    pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key),
                   ledger=str(led), unit="unit", per_unit=True)
    secret = open(str(led) + ".unit-secret").read()
    with pytest.raises(PufferError):
        pio.noise_file(bad, tmp_path / "o3.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key),
                       ledger=str(led), unit="unit", per_unit=True)
    assert open(str(led) + ".unit-secret").read() == secret


def test_audit_progress_into_a_file_is_plain_lines(capsys):
    import puffer
    from puffer.audit import empirical

    fw = puffer.models.correlated_pair(0.5, 0.3)
    m = puffer.mechanisms.Wasserstein(fw, eps=1.0)
    empirical(m, n=2000, rng=1, pairs="all", progress=True)
    err = capsys.readouterr().err   # not a terminal
    assert "\r" not in err and err.endswith("\n") and "audit Wasserstein:" in err


# -- 3. framework files -----------------------------------------------------------------------------

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _readme_toml_blocks():
    text = open(README, encoding="utf-8").read()
    return [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith("toml\n")]


def test_the_readme_lists_every_model_kind_and_shows_fit_markov(tmp_path):
    import tomllib

    from puffer.config import build_framework, load_config
    from puffer.config.schema import _MODEL

    text = open(README, encoding="utf-8").read()
    section = text[text.index("## Framework files"):text.index("### Exit codes")]
    for kind in _MODEL:
        assert f"`{kind}`" in section, kind
    fit = [b for b in _readme_toml_blocks() if 'kind = "fit_markov"' in b]
    assert len(fit) == 1
    model = tomllib.loads(fit[0])["model"]
    for key in ("data", "columns", "groups", "period", "level", "method"):
        assert key in model, key     # each documented key appears in the example
    # the example is a valid description: records in its columns, one file beside it
    rng = np.random.default_rng(1)
    n, T = 12, model["T"]
    state = (rng.random((n, T)) < 0.7).astype(np.int64)
    pa_csv = pa.table({"household": np.repeat(np.arange(n), T), "slot": np.tile(np.arange(T), n),
                       "state": state.ravel(), "region": np.repeat(np.arange(n) % 2, T)})
    import pyarrow.csv as pcsv

    pcsv.write_csv(pa_csv, tmp_path / model["data"])
    fw_file = tmp_path / "fit.toml"
    fw_file.write_text(fit[0].replace("period = 48", "period = 2"))   # 48 phases of 12 traces: all thin
    cfg = load_config(str(fw_file))
    assert cfg["model"]["data"] == os.path.join(str(tmp_path), "traces.csv")
    with pytest.warns(Warning):   # thin rows (a dozen traces), reported
        fw = build_framework({**cfg["model"], "n_boot": 50, "seed": 3})
    assert fw.length == T and fw.fit is not None


def test_a_missing_data_file_names_the_folder_it_was_resolved_against(tmp_path, monkeypatch):
    from puffer.config import load_config

    d = tmp_path / "descriptions"
    d.mkdir()
    (d / "fw.toml").write_text('[model]\nkind = "fit_markov"\ndata = "traces.csv"\nT = 8\n[target]\neps = 1.0\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as e:
        load_config(os.path.join("descriptions", "fw.toml"))
    msg = str(e.value)
    assert "'traces.csv'" in msg and str(d) in msg and os.path.join(str(d), "traces.csv") in msg
    rc = cli.main(["run", os.path.join("descriptions", "fw.toml")])
    assert rc == cli.EXIT_INPUT


# -- 4. small API and CLI seams ----------------------------------------------------------------------

def test_a_selection_of_best_is_published_as_its_chosen_mechanism(tmp_path, data):
    import puffer

    src, key = data
    fw = puffer.models.correlated_pair(0.5, 0.3)
    sel = puffer.mechanisms.best(fw, eps=1.0)
    pq.write_table(pa.table({"x": np.array([0.0, 1.0, 2.0, 1.0])}), tmp_path / "a.parquet")
    e1 = pio.noise_file(tmp_path / "a.parquet", tmp_path / "o1.parquet", ["x"], sel, key=str(key), per_unit=True,
                        ledger=str(tmp_path / "l1.jsonl"))
    e2 = pio.noise_file(tmp_path / "a.parquet", tmp_path / "o2.parquet", ["x"], sel.mechanism, key=str(key),
                        per_unit=True, ledger=str(tmp_path / "l2.jsonl"))
    assert e1["label"] == sel.label and e1["guarantee"] == e2["guarantee"] and e1["scale"] == e2["scale"]
    with pytest.raises(ParameterError, match="select"):
        pio.noise_file(tmp_path / "a.parquet", tmp_path / "o3.parquet", ["x"], sel, key=str(key), per_unit=True,
                       select="Kantorovich")


def test_theta_profile_levels_are_never_rounded_to_100_percent_and_its_axis_reads_plain_numbers():
    pytest.importorskip("matplotlib")
    from puffer.models.theta import ThetaProfile

    prof = ThetaProfile(levels=(0.5, 0.95, 0.999), delta_g=(4.0, 5.0, 6.0), estimate=3.5, group=8.0, T=8)
    text = prof.summary()
    assert "level  99.9%" in text and "100%" not in text and "level    95%" in text
    fig = prof.plot()
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels() if t.get_text()]
    assert labels and not any("10^" in s or "times" in s for s in labels), labels
    assert "6" in labels


def test_every_exit_code_is_listed_in_the_help_the_readme_and_publishing_md(capsys):
    import re

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    codes = {cli.EXIT_OK, cli.EXIT_INTERNAL, cli.EXIT_USAGE, cli.EXIT_INPUT, cli.EXIT_NUMERIC, 5, cli.EXIT_IO,
             cli.EXIT_LEDGER, cli.EXIT_INTERRUPT, cli.EXIT_PIPE, cli.EXIT_TERM}
    from puffer.audit.cli import run  # noqa: F401  (exit code 5 is the audit's)

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    epilog = capsys.readouterr().out.split("exit codes:")[1]
    assert {int(c) for c in re.findall(r"\b(\d+) [A-Za-z]", epilog)} == codes
    for doc in ("README.md", os.path.join("docs", "publishing.md")):
        text = open(os.path.join(root, doc), encoding="utf-8").read()
        table = text[text.index("| code | meaning |"):]
        table = table[:table.index("\n\n")]
        assert {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)} == codes, doc


# -- 5. clamping a published file ----------------------------------------------------------------------

def test_puffer_clamp_post_processes_a_published_file_and_records_it(tmp_path, data, capsys):
    import json

    src, key = data
    pq.write_table(pa.table({"x": np.arange(12.0), "y": np.arange(12.0), "id": np.arange(12)}), tmp_path / "a.parquet")
    noisy = tmp_path / "noisy.parquet"
    rel = pio.noise_file(tmp_path / "a.parquet", noisy, ["x", "y"], ("laplace", {"b": 3.0}), key=str(key))
    before = pq.read_table(noisy)
    rc = cli.main(["clamp", str(noisy), str(tmp_path / "clamped.parquet"), "--range", "0,11", "--column", "x",
                   "--json"])
    entry = json.loads(capsys.readouterr().out)
    assert rc == 0
    out = pq.read_table(tmp_path / "clamped.parquet")
    # the oracle: numpy's clip of the published column; the other columns byte-for-byte as published
    assert np.array_equal(out["x"].to_numpy(), np.clip(before["x"].to_numpy(), 0.0, 11.0))
    assert out["y"].equals(before["y"]) and out["id"].equals(before["id"]) and out.schema == before.schema
    assert pq.read_table(noisy).equals(before)           # the published file is kept
    # recorded as post-processing of that release, in the form a release records post-processing
    led = pio.read_ledger(tmp_path / "puffer-ledger.jsonl")
    assert led[-1] == entry and entry["event"] == "post_processed" and entry["of_release"] == rel["release_id"]
    assert entry["post_processing"] == [{"step": "range", "clamp": [0.0, 11.0], "lattice": None, "source": "given"}]
    import hashlib

    assert entry["output_sha256"] == "sha256:" + hashlib.sha256((tmp_path / "clamped.parquet").read_bytes()).hexdigest()
    assert entry["input_sha256"] == rel["output_sha256"]
    assert pio.verify(tmp_path / "puffer-ledger.jsonl")["entries"] == len(led)
    # no new release: the units' totals are what they were
    from puffer.publish.ledger import release_states

    assert list(release_states(led)) == [rel["release_id"]]
    # refused: a file no release published, a column that was not noised, an empty or reversed range
    with pytest.raises(ParameterError, match="no completed release's output"):
        pio.clamp_file(tmp_path / "a.parquet", tmp_path / "c2.parquet", (0, 1))
    with pytest.raises(ParameterError, match="noisy column"):
        pio.clamp_file(noisy, tmp_path / "c2.parquet", (0, 1), columns=["id"])
    with pytest.raises(ParameterError, match="lo <= hi"):
        pio.clamp_file(noisy, tmp_path / "c2.parquet", (2, 1))
    assert cli.main(["clamp", str(noisy), str(tmp_path / "c2.parquet"), "--range", ","]) == cli.EXIT_INPUT
    assert not os.path.exists(tmp_path / "c2.parquet")


def test_the_docs_state_the_bias_of_clamping_and_its_unbiased_alternative():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    text = open(os.path.join(root, "docs", "publishing.md"), encoding="utf-8").read()
    assert "free in privacy" not in text
    sec = text[text.index("(publishing-clamp)="):]
    assert "bias" in sec and "puffer clamp" in sec and "unbiased" in sec
    import puffer.mechanisms.postprocess as pp

    assert "bias" in pp.__doc__


def test_a_signed_ledger_without_its_checkpoint_says_which_command_unblocks_it(tmp_path, data):
    from puffer.errors import LedgerError

    src, key = data
    sign = tmp_path / "s.sign"
    pio.signing_keygen(str(sign))
    led = tmp_path / "L.jsonl"
    pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key), signing_key=str(sign),
                   ledger=str(led))
    os.remove(str(led) + ".checkpoint")     # as if the run died before its first checkpoint was written
    with pytest.raises(LedgerError) as e:
        pio.noise_file(src, tmp_path / "o2.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key),
                       signing_key=str(sign), ledger=str(led))
    assert f"puffer ledger checkpoint {led} --sign {sign}" in str(e.value)
    # the command it names unblocks the ledger
    assert cli.main(["ledger", "checkpoint", str(led), "--sign", str(sign)]) == 0
    pio.noise_file(src, tmp_path / "o2.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key), signing_key=str(sign),
                   ledger=str(led))


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_after_the_command_completed_exits_with_its_code(tmp_path, sig):
    """The command line (main() with sys.argv) has done its work; a signal in the moment before
    the process exits used to kill it (-15 / -2, read as a failed release). It now exits with the
    command's own code. Deterministic: the signal is sent by the process itself after main()."""
    import subprocess
    import sys

    script = (f"import os, signal, sys, time\nfrom puffer import cli\nsys.argv = ['puffer', 'keygen', {str(tmp_path / 'k')!r}]\n"
              f"cli.main()\nos.kill(os.getpid(), signal.{sig})\ntime.sleep(5)\nsys.exit(99)\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and os.path.exists(tmp_path / "k")


def test_a_rerun_asked_to_clamp_points_to_puffer_clamp(tmp_path, data):
    src, key = data
    e = pio.noise_file(src, tmp_path / "o.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key))
    with pytest.raises(ParameterError, match=r"differs in clamp.*puffer clamp PUBLISHED OUT --range A,B"):
        pio.noise_file(src, tmp_path / "o2.parquet", ["x"], ("laplace", {"b": 1.0}), key=str(key),
                       rerun=e["release_id"], clamp=(0.0, 5.0))
