"""Progress of long calibrations (issue 30 item 5): ``Wasserstein(fw, eps)`` at T = 17,520 wrote
nothing into a log file for 9 minutes. Every calibration that can run long reports through
``puffer._progress`` (a plain line every PLAIN_EVERY seconds when stderr is not a terminal) and
stays interruptible by Ctrl-C. Small chains with the heartbeat interval forced to 0 (a line at every
report), so no test waits for real seconds."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import puffer
from puffer import _progress
from puffer.mechanisms import DistributionAwareWasserstein, GeneralWasserstein, Kantorovich, MarkovQuilt, Wasserstein
from timing import Interrupter

P3 = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.3], [0.4, 0.6]], [[0.95, 0.05], [0.5, 0.5]]])
CALIBRATIONS = {
    "Wasserstein": (lambda fw: Wasserstein(fw, 1.0), "Markov Delta_G"),
    "GeneralWasserstein": (lambda fw: GeneralWasserstein(fw, puffer.noise.Gaussian(1.0)), "Markov Delta_G"),
    "Kantorovich thm1": (lambda fw: Kantorovich(fw, 1.0, method="thm1"), "Markov Delta_G"),
    "Kantorovich thm2": (lambda fw: Kantorovich(fw, 1.0, method="thm2"), "Kantorovich Thm 2"),
    "Kantorovich best": (lambda fw: Kantorovich(fw, 1.0), ("Markov Delta_G", "Kantorovich Thm 2")),
    "DAGWM": (lambda fw: DistributionAwareWasserstein(fw, puffer.noise.Gaussian(1.0)), "DAGWM plans"),
    "MarkovQuilt": (lambda fw: MarkovQuilt(fw, 1.0), "Markov quilts"),
}


class _LogFile(io.StringIO):
    """A stderr that is a file (not a terminal); ``on_line`` sees every line written."""

    def __init__(self, on_line=None):
        super().__init__()
        self._on_line = on_line

    def write(self, s: str) -> int:
        if self._on_line is not None:
            self._on_line(s)
        return super().write(s)


@pytest.mark.parametrize("name", list(CALIBRATIONS))
def test_calibration_reports_into_a_log_file(name, monkeypatch):
    make, label = CALIBRATIONS[name]
    fw = puffer.models.markov_chain(P3, T=60)
    log = _LogFile()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setattr(_progress, "PLAIN_EVERY", 0.0)
    make(fw)
    lines = log.getvalue().splitlines()
    labels = (label,) if isinstance(label, str) else label
    assert lines and all(line.startswith(tuple(f"{lab} (T=60): " for lab in labels)) for line in lines), lines
    for lab in labels:   # each kernel's end reported (once)
        assert sum(line.startswith(f"{lab} (T=60): ") and "(100.0%)" in line for line in lines) == 1, lines
    assert "\r" not in log.getvalue()
    log.truncate(0)
    with _progress.progress_default(False):     # and it can be turned off
        make(fw)
    assert log.getvalue() == ""


def test_quiet_by_default_for_a_short_calibration(monkeypatch):
    # the first line comes after PLAIN_EVERY (5 s) of running: a short job writes nothing
    log = _LogFile()
    monkeypatch.setattr(sys, "stderr", log)
    Wasserstein(puffer.models.markov_chain(P3, T=20), 1.0)
    assert log.getvalue() == ""


def test_long_calibration_heartbeat_then_ctrl_c(monkeypatch):
    """A long Wasserstein calibration (> 6 CPU-s) writes a heartbeat line into a log file while it
    runs; Ctrl-C, sent when that line appears, stops it after a fraction of a CPU-second."""
    big = puffer.models.markov_chain(np.tile([[0.9, 0.1], [0.2, 0.8]], (400, 1, 1)), T=1500)
    assert big.cost(threads=2).seconds > 3.0
    ctrl_c = Interrupter()
    seen = []

    def on_line(s: str) -> None:
        seen.append(s)
        ctrl_c.progress(1, 1)

    monkeypatch.setattr(sys, "stderr", _LogFile(on_line))
    monkeypatch.setattr(_progress, "PLAIN_EVERY", 0.0)
    with pytest.raises(KeyboardInterrupt):
        Wasserstein(big, 1.0)
    assert ctrl_c.cpu_after() < 1.5
    assert seen[0].startswith("Markov Delta_G (T=1500): ") and "(100.0%)" not in seen[0]
