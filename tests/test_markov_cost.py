"""Framework.cost() against the bench (issue 22 section 3 item 5): the estimates stay within 2x
of the CPU seconds measured by bench/markov_cost.py on the bench's chains (recorded in
bench/markov_cost_calibration.json with the machine; speed is measured there, never here), and
the automatic progress bar is decided by elapsed time, with no tqdm redraws into a pipe."""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from puffer import _core, _progress
from puffer.errors import ParameterError
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
        # the calibration timed every position (it predates the skipping): the direct computation
        est = fw.cost(threads=thr, method="full").seconds * thr
        ratio = est / r["cpu_s"]
        assert 0.5 <= ratio <= 2.0, f"(k, T, n) = ({r['k']}, {r['T']}, {r['n_theta']}): estimate {est:.3g} CPU s, " \
                                    f"measured {r['cpu_s']:.3g} (ratio {ratio:.2f})"


def _plan_operations(fw, th=0):
    """Multiply-adds of w_inf(method="auto") for one prior from its skipping plan, written out from
    docs/long-chains.md ("What the code computes") independently of MarkovChainFramework: the
    windows (twice the last one, a doubling), two streams of k^2 T (T span + 1), the laws of the m
    positions at each end and of one representative per phase, and the W_inf walks of those
    positions (2 R level comparisons per pair)."""
    k, T = fw._k, fw._T
    span = int(fw._vals.max() - fw._vals.min())
    plan = _core.models.markov_skip_plan(fw._M[th:th + 1], fw._pi[th:th + 1], fw._vals, T)
    assert plan["usable"]
    m, p = int(plan["m"]), int(plan["period"])

    def law(t):
        return k * ((t + 1) * span + 1) * ((T - 1 - t) * span + 1)

    L1, L2 = m * span + 1, (m + p) * span + 1
    windows = 2 * p * (2 * k ** 3 * L1 * L2 + k ** 3 * L2 * (m + p))
    positions = 2 * m + p
    ops = windows + k * k * T * (T * span + 1) + sum(law(t) for t in range(m)) + \
        sum(law(t) for t in range(T - m, T)) + p * law((T - 1) // 2)
    return ops + positions * (k * (k - 1) // 2) * 2 * (T * span + 1), positions


def test_cost_knows_the_method():
    """cost() predicts the method w_inf will use (issue 41 item 4): "auto" (the default) from the
    skipping plan of the chain, "full" every position; a chain the plan declines costs the same
    either way; many priors are predicted from the plans of eight of them. The structure of the
    prediction is checked here, its speed in bench/RESULTS.md."""
    fw = markov_chain([[0.9, 0.1], [0.2, 0.8]], T=2000)
    auto, full = fw.cost(threads=1), fw.cost(threads=1, method="full")
    ops, positions = _plan_operations(fw)
    assert auto.operations == pytest.approx(ops, rel=1e-9)
    assert auto.operations < full.operations / 10 and auto.seconds < full.seconds / 10
    assert auto.peak_bytes == full.peak_bytes       # the peak covers both (markov_peak_bytes)
    assert fw.cost(threads=1, method="auto") == auto
    # the plan declines a short chain with many states: the direct computation, predicted as such
    rng = np.random.default_rng(5)
    M = rng.uniform(0.05, 1.0, (10, 10))
    short = markov_chain(M / M.sum(1, keepdims=True), T=96)
    assert not _core.models.markov_skip_plan(short._M, short._pi, short._vals, 96)["usable"]
    assert short.cost(threads=1) == short.cost(threads=1, method="full")
    # 20 priors alike: twenty times one (the plans of eight of them computed)
    many = markov_chain(np.stack([[[0.9, 0.1], [0.2, 0.8]]] * 20), T=2000)
    assert many.cost(threads=1).operations == pytest.approx(20 * ops, rel=1e-9)
    # a persistent chain: a longer window, still far below the direct computation
    year = markov_chain([[0.935, 0.065], [0.033, 0.967]], T=17_520)
    ops_year, _ = _plan_operations(year)
    assert year.cost(threads=1).operations == pytest.approx(ops_year, rel=1e-9)
    assert ops_year < year.cost(threads=1, method="full").operations / 100
    with pytest.raises(ParameterError, match="method"):
        fw.cost(method="fast")


class _Clock:
    """A fake time.monotonic for puffer._progress: elapsed time moves only when the test says so
    (a loaded machine cannot make a "not yet a second" step take a second)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(_progress, "time", c)
    return c


def test_automatic_bar_waits_for_elapsed_time(monkeypatch, clock):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with _progress.progress_default(True):
        cb = _progress.resolve(None, seconds=1e9, label="job")    # the estimate decides nothing
    assert isinstance(cb, _progress.DelayedBar)
    clock.now += 0.9
    cb(1, 10)
    assert err.getvalue() == "" and not cb.shown                  # not yet a second
    clock.now += 1.1                                              # the job has run 2 s
    cb(2, 10)
    cb(10, 10)
    out = err.getvalue()
    assert cb.shown and "job: 2/10" in out and "job: 10/10" in out
    assert "\r" not in out                                        # a pipe gets plain lines


def test_plain_heartbeat_off_a_terminal_by_default(monkeypatch, clock):
    # a log file gets one line every PLAIN_EVERY seconds, the first after PLAIN_EVERY seconds
    # (issue 30: a 9-minute calibration wrote nothing into a log file), and the end once
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    cb = _progress.resolve(None, seconds=1e9, label="job")
    assert isinstance(cb, _progress.DelayedBar)
    clock.now += _progress.PLAIN_EVERY - 1.0
    cb(1, 10)
    assert err.getvalue() == "" and not cb.shown                  # 1 s short of the first line
    clock.now += 1.5
    cb(2, 10)
    clock.now += _progress.PLAIN_EVERY - 1.0
    cb(3, 10)                                                     # within PLAIN_EVERY of the last line
    clock.now += 1.5
    cb(4, 10)
    cb(10, 10)                                                    # the end is always reported ...
    cb(10, 10)                                                    # ... once
    assert err.getvalue().splitlines() == ["job: 2/10 (20.0%) after 5.5 s", "job: 4/10 (40.0%) after 11.0 s",
                                           "job: 10/10 (100.0%) after 11.0 s"]
    with _progress.progress_default(False):
        assert _progress.resolve(None) is None
    monkeypatch.setattr(sys, "stderr", None)                      # pythonw: no stderr at all
    assert _progress.resolve(None) is None


def test_a_stderr_that_cannot_be_written_never_stops_the_job(monkeypatch):
    err = io.StringIO()
    err.close()
    monkeypatch.setattr(sys, "stderr", err)
    bar = _progress.resolve(True, label="x")
    assert bar is not None
    bar(1, 2)   # ValueError: I/O operation on closed file -- swallowed, the bar goes quiet
    bar(2, 2)


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
