"""The figures render: files exist, are PNGs of sane size (matplotlib is the `plot` extra)."""
import os

import pytest

import puffer
from puffer import audit, mechanisms, models, plot
from puffer.config import load_config
from puffer.errors import ParameterError, ParameterTypeError
from puffer.noise import Gaussian

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _png_ok(path, lo=8_000, hi=2_000_000):
    assert os.path.isfile(path)
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert lo <= size <= hi and 300 <= w <= 3000 and 200 <= h <= 3000, (path, size, w, h)


def test_each_figure_renders(tmp_path):
    fw = models.correlated_pair()
    P, Q = fw.conditional("theta", "X1=0"), fw.conditional("theta", "X1=1")
    w = mechanisms.Wasserstein(fw, eps=1.0)
    g = mechanisms.GeneralWasserstein(fw, Gaussian, alpha=2.0, eps=1.0)
    figs = {
        "plan": plot.transport_plan(P, Q, labels=("X1=0", "X1=1")),
        "curves": plot.epsilon_curves({"GWM": g.guarantee, "Wasserstein": w.guarantee,
                                       "point": puffer.RPP(4.0, 2.0)}),
        "noise": plot.noise_vs_eps(fw, eps=[0.5, 1.0, 2.0]),
        "audit": plot.audit_chart([("W", audit.empirical(w, n=2_000, rng=1)),
                                   ("G", audit.empirical(g, n=2_000, rng=1))]),
    }
    for name, fig in figs.items():
        _png_ok(plot.save(fig, tmp_path / f"{name}.png"))


def test_demo_figures_for_a_framework_file(tmp_path):
    paths = plot.demo_figures(tmp_path / "figs", config=load_config(os.path.join(ROOT, "examples", "household.toml")),
                              n=4_000, eps=(0.5, 1.0, 2.0), progress=False)
    assert [os.path.basename(p) for p in paths] == ["transport_plan.png", "epsilon_curves.png",
                                                    "noise_vs_eps.png", "audit.png"]
    for p in paths:
        _png_ok(p)


def test_plot_errors():
    fw = models.correlated_pair()
    with pytest.raises(ParameterTypeError):
        plot.transport_plan(fw, fw)
    with pytest.raises(ParameterTypeError):
        plot.epsilon_curves({"x": 1.0})
    with pytest.raises(ParameterError):
        plot.audit_chart([])
    with pytest.raises(ParameterError):
        plot.save(plot.epsilon_curves({"p": puffer.PP(1.0)}), "/nonexistent-dir/x.png")
