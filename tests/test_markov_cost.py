"""Framework.cost() against the bench (issue 22 section 3 item 5): the estimates stay within 2x
of the CPU seconds measured by bench/markov_cost.py on the bench's chains (recorded in
bench/markov_cost_calibration.json with the machine; speed is measured there, never here), and
the automatic progress bar is decided by elapsed time, with no tqdm redraws into a pipe."""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from puffer import _progress
from puffer.models import markov_chain

CAL = Path(__file__).resolve().parents[1] / "bench" / "markov_cost_calibration.json"


def test_cost_estimates_within_2x_of_the_bench():
    doc = json.loads(CAL.read_text())
    sys.path.insert(0, str(CAL.parent))
    try:
        from markov_cost import chains
    finally:
        sys.path.pop(0)
    thr = doc["meta"]["threads"]
    assert len(doc["rows"]) >= 6
    for r in doc["rows"]:
        fw = markov_chain(chains(r["k"], r["n_theta"]), T=r["T"])
        est = fw.cost(threads=thr).seconds * thr
        ratio = est / r["cpu_s"]
        assert 0.5 <= ratio <= 2.0, f"(k, T, n) = ({r['k']}, {r['T']}, {r['n_theta']}): estimate {est:.3g} CPU s, " \
                                    f"measured {r['cpu_s']:.3g} (ratio {ratio:.2f})"


def test_automatic_bar_waits_for_elapsed_time(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with _progress.progress_default(True):
        cb = _progress.resolve(None, seconds=1e9, label="job")    # the estimate decides nothing
    assert isinstance(cb, _progress.DelayedBar)
    cb(1, 10)
    assert err.getvalue() == "" and not cb.shown                  # not yet a second
    cb._t0 -= 2.0                                                 # the job has run 2 s
    cb(2, 10)
    cb(10, 10)
    out = err.getvalue()
    assert cb.shown and "job: 2/10" in out and "job: 10/10" in out
    assert "\r" not in out                                        # a pipe gets plain lines


def test_no_bar_off_a_terminal_by_default(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress.resolve(None, seconds=1e9) is None


def test_explicit_bar_into_a_pipe_is_plain_lines(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = _progress.resolve(True, label="x")
    assert bar is not None and bar._tqdm_mod is None             # never tqdm off a terminal
    bar(5, 5)
    assert err.getvalue() == "x: 5/5 (100.0%) after " + err.getvalue().split("after ")[1]


@pytest.mark.parametrize("bad", ["yes", 3])
def test_bad_progress_is_refused(bad):
    from puffer.errors import ParameterError

    with pytest.raises(ParameterError, match="progress"):
        _progress.resolve(bad)
